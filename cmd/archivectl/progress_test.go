package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
)

// gamesDir writes n short generated games into a new directory.
func gamesDir(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	for i := range n {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("game%02d.teehistorian", i)))
		if err != nil {
			t.Fatal(err)
		}
		err = teehistoriangen.Generate(f, teehistoriangen.Options{Duration: 20 * time.Second, Players: 4, Seed: uint64(i + 1)})
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestIngestStatusLines checks the progress of long work when the
// output is not a terminal: a plain ingest logs a status line every
// --status-every on stderr (no terminal redraws), and with --json puts
// restic-style "status" lines among its "ingest" lines on stdout.
func TestIngestStatusLines(t *testing.T) {
	const n = 12
	dir := gamesDir(t, n)

	out, errs, code := newCLI(t).run("ingest", "--status-every", "5ms", dir)
	if code != exitOK {
		t.Fatalf("ingest: exit %d\n%s", code, errs)
	}
	status := regexp.MustCompile(`(?m)^ingest: (\d+)/(\d+) inputs, \S+ \S*/\S+ \S*; (\d+) ingested, 0 already archived, 0 failed; \S+`)
	lines := status.FindAllStringSubmatch(errs, -1)
	if len(lines) == 0 || strings.Contains(errs, "\r") || strings.Contains(errs, "\033") {
		t.Fatalf("no status lines, or terminal redraws, on stderr:\n%q", errs)
	}
	for _, m := range lines {
		if m[2] != fmt.Sprint(n) {
			t.Errorf("status line says %s inputs, want %d: %q", m[2], n, m[0])
		}
	}
	if got := strings.Count(out, "ingested "); got != n {
		t.Errorf("%d ingested lines on stdout, want %d:\n%s", got, n, out)
	}

	out, errs, code = newCLI(t).run("ingest", "--json", "--status-every", "5ms", dir)
	if code != exitOK {
		t.Fatalf("ingest --json: exit %d\n%s", code, errs)
	}
	var ingests, statuses, lastDone int
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var m struct {
			MessageType  string   `json:"message_type"`
			Outcome      string   `json:"outcome"`
			TotalFiles   int      `json:"total_files"`
			FilesDone    int      `json:"files_done"`
			TotalBytes   int64    `json:"total_bytes"`
			BytesDone    int64    `json:"bytes_done"`
			Percent      *float64 `json:"percent_done"`
			Elapsed      *float64 `json:"seconds_elapsed"`
			CurrentFiles []string `json:"current_files"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not a JSON line: %q", line)
		}
		switch m.MessageType {
		case "ingest":
			ingests++
			if m.Outcome != "ingested" {
				t.Errorf("ingest line %s", line)
			}
		case "status":
			statuses++
			if m.Percent == nil || m.Elapsed == nil || m.FilesDone < lastDone || m.FilesDone > m.TotalFiles || m.BytesDone > m.TotalBytes {
				t.Errorf("status line %s", line)
			}
			if m.TotalFiles != 0 && m.TotalFiles != n {
				t.Errorf("status line %s: want total_files %d", line, n)
			}
			for _, f := range m.CurrentFiles {
				if !strings.HasPrefix(f, dir) {
					t.Errorf("status line %s: current file outside the input", line)
				}
			}
			lastDone = m.FilesDone
		default:
			t.Errorf("line of message type %q: %s", m.MessageType, line)
		}
	}
	if ingests != n || statuses == 0 {
		t.Errorf("%d ingest and %d status lines, want %d and some:\n%s", ingests, statuses, n, out)
	}
	if strings.Contains(errs, "ingest:") {
		t.Errorf("status lines on stderr with --json:\n%s", errs)
	}
	if _, errs, code := newCLI(t).run("ingest", "--status-every", "0s", dir); code != exitUsage || !strings.Contains(errs, "--status-every") {
		t.Errorf("--status-every 0s: exit %d %q", code, errs)
	}
}

// TestIngestFollowStatusLog checks that ingest --follow without --json
// logs its status line on stderr when stderr is not a terminal (the JSON
// form is in TestIngestFollowJSON), also while the first scan's files
// are being ingested (a server's history), naming the one being read.
func TestIngestFollowStatusLog(t *testing.T) {
	c := newCLI(t)
	dir := gamesDir(t, 6)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--archive", c.dir, "ingest", "--follow", "--settle", "1m", "--status-every", "5ms", dir}, strings.NewReader(""), &out, &errb)
	}()
	status := regexp.MustCompile(`(?m)^following 1 directory: 6 files \(.+\), \d+ waiting; \d+ ingested, \d+ already archived, 0 failed; up \S+$`)
	busy := regexp.MustCompile(`(?m)^following 1 directory: .*; \d+ ingested, \d+ already archived, 0 failed; up \S+; ingesting ` + regexp.QuoteMeta(dir) + `/game\d\d\.teehistorian$`)
	deadline := time.Now().Add(20 * time.Second)
	for !status.MatchString(errb.String()) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if code := <-done; code != exitOK {
		t.Errorf("exit %d", code)
	}
	if !status.MatchString(errb.String()) || strings.Contains(errb.String(), "\r") {
		t.Errorf("no status line on stderr:\n%q", errb.String())
	}
	if !busy.MatchString(errb.String()) {
		t.Errorf("no status line naming the file being ingested:\n%s", errb.String())
	}
	if got := strings.Count(out.String(), "ingested "); got != 6 {
		t.Errorf("%d files ingested, want 6:\n%s", got, out.String())
	}
}
