package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
)

// A DDNet game taken down and then written again, growing, into a
// followed directory never becomes a live recording: its game_uuid is
// refused before its first bytes are committed.
func TestFollowRefusesTakenDownGame(t *testing.T) {
	c := newCLI(t)
	game := teehistoriangen.Must(t, teehistoriangen.Options{Duration: 20 * time.Second, Players: 4, Seed: 2931, NoFinish: true})
	whole := filepath.Join(t.TempDir(), "game.teehistorian")
	if err := os.WriteFile(whole, game, 0o644); err != nil {
		t.Fatal(err)
	}
	id := ingestedID(t, c.ok("ingest", "--json", whole))
	c.ok("delete", id, "--reason", "doxxing", "--now", "--yes")

	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--archive", c.dir, "ingest", "--follow", "--json", "--settle", "1m", dir}, strings.NewReader(""), &out, &errb)
	}()
	time.Sleep(200 * time.Millisecond)
	f, err := os.Create(filepath.Join(dir, "game.teehistorian"))
	if err != nil {
		t.Fatal(err)
	}
	half := game[:len(game)/2]
	for len(half) > 0 {
		n := min(len(half), 1024)
		f.Write(half[:n])
		half = half[n:]
		time.Sleep(5 * time.Millisecond)
	}
	f.Close()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String()+errb.String(), "taken down") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	<-done
	all := out.String() + errb.String()
	if !strings.Contains(all, "taken down") {
		t.Errorf("following a taken-down game says nothing of the takedown:\n%s", all)
	}
	if strings.Contains(all, `"started"`) || strings.Contains(all, "live recording "+id) {
		t.Errorf("a live recording started under the taken-down id:\n%s", all)
	}
	if ls := c.ok("ls"); strings.Contains(ls, id[:8]) || strings.Contains(ls, "teehistorian") {
		t.Errorf("ls after following the taken-down game:\n%s", ls)
	}
	if _, _, code := c.run("show", id); code != exitNotFound {
		t.Errorf("show of the taken-down id: exit %d", code)
	}
}
