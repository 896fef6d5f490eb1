package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/ingest"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
)

// A live teehistorian file grows in a followed directory while the
// archive's writes fail with ENOSPC (archive.Options.WriteFault, asked
// before a grow writes the shard or the catalog: every catalog write and
// every other shard write fail, so some grows fail after their chunks
// reached the shard). The status counts the file as failed while they
// fail, the grows are retried though the file no longer changes, the
// recording stays where the archive really is, and once space returns it
// catches up and seals byte-identical to the file by itself: nothing
// restarts.
func TestFollowDiskFull(t *testing.T) {
	var full atomic.Bool
	var shardWrites, refused atomic.Int64
	fault := func(file string) error {
		if !full.Load() || filepath.Base(file) != "catalog.db" && shardWrites.Add(1)%2 == 1 {
			return nil
		}
		refused.Add(1)
		return fmt.Errorf("write %s: %w", file, syscall.ENOSPC)
	}
	x, err := replay.Open(filepath.Join(t.TempDir(), "archive"), replay.Options{Create: true,
		Archive: archive.Options{NoSync: true, WriteFault: fault}})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()

	dir := t.TempDir()
	var mu sync.Mutex
	var statuses []followStatus
	var warnings []string
	var liveID uuid.UUID
	f := &follower{x: x, who: replay.Actor{Name: "test"}, dirs: []string{dir}, settle: time.Minute,
		rescan: 100 * time.Millisecond, retryMax: 400 * time.Millisecond,
		result: func(ingest.FileResult) {},
		live: func(g *ingest.Grown) {
			mu.Lock()
			liveID = g.ID
			mu.Unlock()
		},
		warn: func(path, msg string) {
			mu.Lock()
			warnings = append(warnings, path+": "+msg)
			mu.Unlock()
		},
		status: func(s followStatus) {
			mu.Lock()
			statuses = append(statuses, s)
			mu.Unlock()
		},
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- f.run(ctx) }()
	defer func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("follow: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("the follower did not stop within 10 s")
		}
	}()
	waitUntil := func(what string, d time.Duration, cond func() bool) bool {
		t.Helper()
		deadline := time.Now().Add(d)
		for !cond() {
			if time.Now().After(deadline) {
				t.Errorf("not within %v: %s", d, what)
				return false
			}
			time.Sleep(20 * time.Millisecond)
		}
		return true
	}
	lastStatus := func() followStatus {
		mu.Lock()
		defer mu.Unlock()
		if len(statuses) == 0 {
			return followStatus{}
		}
		return statuses[len(statuses)-1]
	}
	manifest := func() *archive.Manifest {
		mu.Lock()
		id := liveID
		mu.Unlock()
		if id == uuid.Nil {
			return nil
		}
		m, err := x.Manifest(id.String())
		if err != nil {
			t.Fatal(err)
		}
		return m
	}

	export := func() []byte {
		t.Helper()
		r, err := x.Recording(manifest().ID.String())
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := r.Export(t.Context(), &out, false); err != nil {
			t.Fatal(err)
		}
		return out.Bytes()
	}

	game := teehistoriangen.Must(t, teehistoriangen.Options{Duration: 30 * time.Second, Players: 4, Seed: 9, Messages: true})
	path := filepath.Join(dir, "game.teehistorian")
	file, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	written := 0
	write := func(end int) { // in pieces, as a server writes
		for written < end {
			n := min(end-written, 2000)
			if _, err := file.Write(game[written : written+n]); err != nil {
				t.Fatal(err)
			}
			written += n
			time.Sleep(30 * time.Millisecond)
		}
	}

	// A third of the game: the live recording starts.
	write(len(game) / 3)
	if !waitUntil("the live recording starts", 10*time.Second, func() bool { m := manifest(); return m != nil && m.Live }) {
		t.FailNow()
	}

	// Every grow of what was written is done: the recording stays the
	// same for longer than a grow's interval.
	archived, since := manifest().NativeBytes, time.Now()
	waitUntil("the grows of the first third end", 10*time.Second, func() bool {
		if n := manifest().NativeBytes; n != archived {
			archived, since = n, time.Now()
		}
		return time.Since(since) > 1500*time.Millisecond
	})

	// The disk is full: the grows fail, and are retried while the file
	// does not change.
	full.Store(true)
	write(2 * len(game) / 3)
	if !waitUntil("a grow fails", 10*time.Second, func() bool { return refused.Load() > 0 }) {
		t.FailNow()
	}
	waitUntil("the status counts the failing file", 10*time.Second, func() bool { s := lastStatus(); return s.Failed == 1 && s.Retrying == 1 })
	if l := lastStatus().line(); !strings.Contains(l, "1 failed (1 retrying)") {
		t.Errorf("status line while failing: %s", l)
	}
	before := refused.Load()
	waitUntil("the failed grow is retried though the file does not change", 10*time.Second, func() bool { return refused.Load() >= before+3 })
	if m := manifest(); m.NativeBytes != archived || !m.Live {
		t.Errorf("while the disk is full the recording holds %d bytes (live %v), want the %d archived before", m.NativeBytes, m.Live, archived)
	}
	live, err := x.Live(manifest().ID.String())
	if err != nil || live.End() != archived {
		t.Errorf("live state: %v, %v; want its end at %d", live, err, archived)
	}
	// Readable as it is: what it held before (a failed grow may have
	// rewritten the tail chunk's blob in the shard already).
	if got := export(); !bytes.Equal(got, game[:archived]) {
		t.Errorf("export while the disk is full: %d bytes, want the %d archived before, equal to the file's", len(got), archived)
	}

	// FINISH arrives while the disk is still full: the seal fails too.
	write(len(game))
	before = refused.Load()
	waitUntil("the seal is tried and fails", 10*time.Second, func() bool { return refused.Load() >= before+2 })
	if s := lastStatus(); s.Failed != 1 || s.Retrying != 1 {
		t.Errorf("status while the seal fails: %+v, want the file counted as failed", s)
	}

	// Space returns: the recording catches up and seals by itself.
	returned := time.Now()
	full.Store(false)
	if !waitUntil("the recording catches up and seals", 20*time.Second, func() bool {
		m := manifest()
		return !m.Live && m.NativeBytes == int64(len(game))
	}) {
		t.FailNow()
	}
	t.Logf("caught up %v after space returned; %d writes refused while full", time.Since(returned).Round(time.Millisecond), refused.Load())
	waitUntil("a status with nothing failed", 5*time.Second, func() bool { s := lastStatus(); return s.Failed == 0 && s.Retrying == 0 && s.Ingested == 1 })

	if got := export(); !bytes.Equal(got, game) {
		t.Errorf("the sealed recording (%d bytes) is not the file (%d bytes)", len(got), len(game))
	}
	n := 0
	x.List(t.Context(), func(*archive.Manifest) error { n++; return nil })
	if n != 1 {
		t.Errorf("%d recordings, want the one live recording", n)
	}
	rep, err := x.Check(t.Context(), archive.CheckOptions{ReadData: true})
	if err != nil || !rep.OK() {
		t.Errorf("check: %+v %v", rep, err)
	}
	mu.Lock()
	shardFull := 0
	for _, w := range warnings {
		if strings.Contains(w, "write chunks to shard") && strings.Contains(w, "no space left on device") {
			shardFull++
		}
	}
	if shardFull == 0 || shardFull == len(warnings) {
		t.Errorf("warnings: %q; want failed writes of the shard and of the catalog, each named", warnings)
	}
	mu.Unlock()
}
