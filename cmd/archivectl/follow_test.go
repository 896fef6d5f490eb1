package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
)

// syncBuffer is a bytes.Buffer safe for a command writing while the test
// reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// ingest --follow --json: a game written in pieces into the followed
// directory is one ingest line once FINISH arrives, with status lines
// before; Ctrl-C (ctx) ends it with exit 0; ls then shows it.
func TestIngestFollowJSON(t *testing.T) {
	c := newCLI(t)
	dir := t.TempDir()
	game := teehistoriangen.Must(t, teehistoriangen.Options{Duration: 20 * time.Second, Players: 4, Seed: 3})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--archive", c.dir, "ingest", "--follow", "--json", "--settle", "1m", dir}, strings.NewReader(""), &out, &errb)
	}()
	time.Sleep(200 * time.Millisecond)
	path := filepath.Join(dir, "game.teehistorian")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	b := game
	for len(b) > 0 {
		n := min(len(b), 777)
		f.Write(b[:n])
		b = b[n:]
		time.Sleep(5 * time.Millisecond)
	}
	f.Close()
	deadline := time.Now().Add(15 * time.Second)
	for !strings.Contains(out.String(), `"message_type":"ingest"`) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d\n%s%s", code, out.String(), errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ingest --follow did not stop within 10 s of cancel")
	}
	var ingests, statuses int
	var id string
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not JSON: %q", line)
		}
		switch m["message_type"] {
		case "ingest":
			ingests++
			if m["outcome"] != "ingested" {
				t.Errorf("ingest line %q", line)
			}
			id, _ = m["id"].(string)
		case "status":
			statuses++
		}
	}
	if ingests != 1 || statuses < 1 {
		t.Fatalf("%d ingest and %d status lines:\n%s", ingests, statuses, out.String())
	}
	if ls := c.ok("ls"); !strings.Contains(ls, id[:8]) {
		t.Errorf("ls does not show %s:\n%s", id, ls)
	}
	if _, errs, code := c.run("ingest", "--follow", filepath.Join(dir, "game.teehistorian")); code != 2 || !strings.Contains(errs, "not a directory") {
		t.Errorf("--follow on a file: exit %d %q", code, errs)
	}
}

// serve --watch: a file of a server killed mid-game (no FINISH) dropped
// into the watched directory is ingested by the server after --settle and
// listed through it.
func TestServeWatch(t *testing.T) {
	c := newCLI(t)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	var serveOut, serveErr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--archive", c.dir, "serve", "--listen", "127.0.0.1:0", "--watch", dir, "--settle", "300ms"}, strings.NewReader(""), &serveOut, &serveErr)
	}()
	defer func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("serve exited %d: %s", code, serveErr.String())
			}
		case <-time.After(10 * time.Second):
			t.Error("serve did not stop within 10 s")
		}
	}()
	game := teehistoriangen.Must(t, teehistoriangen.Options{Duration: 10 * time.Second, Players: 2, Seed: 4, NoFinish: true})
	if err := os.WriteFile(filepath.Join(dir, "killed.teehistorian"), game, 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for !strings.Contains(serveErr.String(), "outcome=ingested") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(serveErr.String(), "outcome=ingested") {
		t.Fatalf("not ingested by the server:\n%s", serveErr.String())
	}
	if !strings.Contains(serveErr.String(), "without FINISH") {
		t.Errorf("no warning that the file was ingested without FINISH:\n%s", serveErr.String())
	}
	logged := serveErr.String()
	i := strings.Index(logged, " id=")
	if i < 0 {
		t.Fatalf("no id logged:\n%s", logged)
	}
	id := logged[i+4 : i+4+36]
	if ls := c.ok("ls"); !strings.Contains(ls, id) {
		t.Errorf("ls through the server:\n%s", ls)
	}
}
