package archive

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/replayarchive/replay/formats/formatstest"
)

// A recording larger than SpillBytes has its chunks written before its id
// is known; it must still export, check clean, and delete without leftovers.
func TestSpilledRecording(t *testing.T) {
	a := openTest(t, "", Options{SpillBytes: 200})
	native := formatstest.LinesFile("big", 500)
	res := ingest(t, a, native, nil)
	if res.Manifest.ChunkOwner == res.ID || res.Manifest.ChunkOwner.String() == "00000000-0000-0000-0000-000000000000" {
		t.Fatalf("recording did not spill (chunk owner %s)", res.Manifest.ChunkOwner)
	}
	if got := export(t, a, res.ID); !bytes.Equal(got, native) {
		t.Fatal("export of a spilled recording differs")
	}
	if rep, err := a.Check(context.Background(), CheckOptions{ReadData: true}); err != nil || !rep.OK() {
		t.Fatalf("check: %+v %v", rep, err)
	}
	// A spilled recording that fails before commit leaves nothing behind.
	p := a.NewPending("lines", "broken")
	_, err := formatstest.Lines{}.Split(context.Background(), bytes.NewReader(append(formatstest.LinesFile("x", 300), "1 backwards\n"...)), p)
	if err == nil {
		t.Fatal("split of a broken file succeeded")
	}
	if err := p.Discard(); err != nil {
		t.Fatal(err)
	}
	if !p.spilled { // read after Discard, which waits for the compressor
		t.Fatal("broken file did not spill before failing")
	}
	if _, err := a.Delete(context.Background(), res.ID); err != nil {
		t.Fatal(err)
	}
	rep, err := a.Check(context.Background(), CheckOptions{})
	if err != nil || !rep.OK() || rep.Recordings != 0 {
		t.Fatalf("after discard and delete: %+v %v", rep, err)
	}
}

// Check with Repair runs beside ingests (the server's check endpoint): a
// recording whose chunks are spilled but whose manifest is not committed
// yet is being written, not orphaned, and must keep its chunks.
func TestRepairSparesRecordingsInFlight(t *testing.T) {
	a := openTest(t, "", Options{SpillBytes: 200})
	native := formatstest.LinesFile("growing", 500)
	p := finished(t, a, formatstest.Lines{}, native, nil)
	if !p.spilled {
		t.Fatal("the recording did not spill")
	}
	rep, err := a.Check(context.Background(), CheckOptions{Repair: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Orphans != 0 {
		t.Errorf("check counts %d chunks of a recording in flight as orphans", rep.Orphans)
	}
	res, err := a.Commit(context.Background(), []*Pending{p})
	if err != nil {
		t.Fatal(err)
	}
	if got := export(t, a, res[0].ID); !bytes.Equal(got, native) {
		t.Fatal("export differs after a repair ran during the ingest")
	}
	// Once committed or discarded, nothing is in flight: a crash's
	// leftovers (spilled chunks of a pending never finished) go.
	q := a.NewPending("lines", "left.lines")
	if _, err := (formatstest.Lines{}).Split(context.Background(), bytes.NewReader(formatstest.LinesFile("left", 300)), q); err != nil {
		t.Fatal(err)
	}
	q.wait()
	a.writing.done(q.id) // as if the process had died: nobody writes it now
	rep, err = a.Check(context.Background(), CheckOptions{Repair: true})
	if err != nil || rep.Orphans == 0 {
		t.Fatalf("leftovers of a dead ingest: %+v %v", rep, err)
	}
	if rep, err := a.Check(context.Background(), CheckOptions{ReadData: true}); err != nil || !rep.OK() || rep.Recordings != 1 {
		t.Fatalf("after the repair: %+v %v", rep, err)
	}
	if n := a.writing.count(); n != 0 {
		t.Errorf("%d owners still in flight", n)
	}
}

// Commits and live grows write their chunks before their manifests: a
// repair running beside them, again and again, must take none of those
// chunks (a stress run: without the in-flight notes it deleted chunks of
// committed recordings in most runs).
func TestRepairBesideCommits(t *testing.T) {
	a := openTest(t, "", Options{})
	ctx := context.Background()
	stop := make(chan struct{})
	repaired := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				repaired <- nil
				return
			default:
			}
			if _, err := a.Check(ctx, CheckOptions{Repair: true}); err != nil {
				repaired <- err
				return
			}
		}
	}()
	var ids []Result
	for i := range 60 {
		ids = append(ids, ingest(t, a, formatstest.LinesFile(fmt.Sprintf("rec%d", i), 40), nil))
	}
	close(stop)
	if err := <-repaired; err != nil {
		t.Fatal(err)
	}
	for i, r := range ids {
		if got := export(t, a, r.ID); !bytes.Equal(got, formatstest.LinesFile(fmt.Sprintf("rec%d", i), 40)) {
			t.Fatalf("recording %d differs after repairs ran beside its commit", i)
		}
	}
}

// A spill that fails (here: a shard that cannot be opened) fails the
// recording: Finish reports it, and the archive keeps nothing of it.
func TestSpillFails(t *testing.T) {
	dir := t.TempDir()
	a := openTest(t, dir, Options{SpillBytes: 200, ShardPeriod: func(time.Time) string { return "2001-01" }})
	// The shard's file is a directory: bbolt cannot open it.
	bad := filepath.Join(dir, "shards", "2001-01.db")
	if err := os.MkdirAll(bad, 0o700); err != nil {
		t.Fatal(err)
	}
	p := a.NewPending("lines", "test.lines")
	meta, err := formatstest.Lines{}.Split(t.Context(), bytes.NewReader(formatstest.LinesFile("big", 500)), p)
	if err == nil {
		_, err = p.Finish(meta)
	}
	if err == nil || !strings.Contains(err.Error(), "2001-01.db") {
		t.Fatalf("split and finish with failing spills: %v, want the shard's error", err)
	}
	if err := os.Remove(bad); err != nil {
		t.Fatal(err)
	}
	if err := p.Discard(); err != nil {
		t.Fatal(err)
	}
	rep, err := a.Check(t.Context(), CheckOptions{})
	if err != nil || !rep.OK() || rep.Recordings != 0 {
		t.Errorf("after the failed spills: %+v %v", rep, err)
	}
}
