package archive

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/replayarchive/replay/archive/internal/chunkenc"
	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/formatstest"
	bolt "go.etcd.io/bbolt"
)

// openTest opens an archive in dir (a fresh temporary directory when
// dir is "") with opts and NoSync, and closes it when the test ends: the
// one opener of the package's tests.
func openTest(tb testing.TB, dir string, opts Options) *Archive {
	tb.Helper()
	if dir == "" {
		dir = tb.TempDir()
	}
	opts.NoSync = true
	a, err := Open(dir, opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { a.Close() })
	return a
}

// ingest splits native with the toy codec and commits it.
func ingest(t *testing.T, a *Archive, native []byte, mutate func(*formats.Metadata)) Result {
	t.Helper()
	return ingestWith(t, a, formatstest.Lines{}, native, mutate)
}

// finished splits native with codec c, lets mutate change the metadata
// when it is not nil, and finishes the pending recording, uncommitted.
func finished(tb testing.TB, a *Archive, c formats.Codec, native []byte, mutate func(*formats.Metadata)) *Pending {
	tb.Helper()
	p := a.NewPending(c.Name(), "test."+c.Name())
	meta, err := c.Split(context.Background(), bytes.NewReader(native), p)
	if err != nil {
		tb.Fatal(err)
	}
	if mutate != nil {
		mutate(meta)
	}
	if _, err := p.Finish(meta); err != nil {
		tb.Fatal(err)
	}
	return p
}

// ingestWith splits native with codec c, lets mutate change the metadata
// when it is not nil, and commits the recording.
func ingestWith(tb testing.TB, a *Archive, c formats.Codec, native []byte, mutate func(*formats.Metadata)) Result {
	tb.Helper()
	p := finished(tb, a, c, native, mutate)
	res, err := a.Commit(context.Background(), []*Pending{p})
	if err != nil {
		tb.Fatal(err)
	}
	return res[0]
}

func export(t *testing.T, a *Archive, id uuid.UUID) []byte {
	t.Helper()
	r, err := a.Open(id)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if _, err := r.WriteTo(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestIngestExportRoundTrip(t *testing.T) {
	a := openTest(t, "", Options{})
	native := formatstest.LinesFile("s1", 103)
	res := ingest(t, a, native, nil)
	if res.Outcome != Ingested {
		t.Fatalf("outcome %v", res.Outcome)
	}
	if got := export(t, a, res.ID); !bytes.Equal(got, native) {
		t.Fatalf("export differs from ingested bytes")
	}
	m := res.Manifest
	if len(m.Chunks) != 26 || m.NativeBytes != int64(len(native)) || m.Meta.Ticks != 103 {
		t.Errorf("manifest: %d chunks, %d bytes, %d ticks", len(m.Chunks), m.NativeBytes, m.Meta.Ticks)
	}
	if m.EventCount != 10 {
		t.Errorf("events stored = %d, want 10", m.EventCount)
	}
	evs, err := a.Events(res.ID)
	if err != nil || len(evs) != 10 || evs[0].Text != "kick 10" {
		t.Errorf("Events = %v, %v", evs, err)
	}
	// Same bytes again: duplicate, same id, nothing new.
	again := ingest(t, a, native, nil)
	if again.Outcome != Duplicate || again.ID != res.ID {
		t.Errorf("re-ingest: outcome %v id %s, want Duplicate %s", again.Outcome, again.ID, res.ID)
	}
	if ids, _ := a.Session("s1"); len(ids) != 1 || ids[0] != res.ID {
		t.Errorf("Session(s1) = %v", ids)
	}
}

func TestSeekReadsOneChunk(t *testing.T) {
	a := openTest(t, "", Options{})
	res := ingest(t, a, formatstest.LinesFile("s", 400), nil)
	r, err := a.Open(res.ID)
	if err != nil {
		t.Fatal(err)
	}
	var ticks []int64
	err = formatstest.Lines{}.Frames(context.Background(), r, formats.Ticks(201, 202), func(f formats.Frame) error {
		ticks = append(ticks, f.Tick)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(ticks) != 2 || ticks[0] != 201 || r.Reads() != 1 {
		t.Errorf("frames 201..202 gave ticks %v reading %d chunks, want [201 202] from 1", ticks, r.Reads())
	}
}

func TestOwnIDConflictGetsDerivedID(t *testing.T) {
	a := openTest(t, "", Options{})
	own := uuid.MustParse("11111111-2222-3333-4444-555555555555")
	first := ingest(t, a, formatstest.LinesFile("s", 20), func(m *formats.Metadata) { m.ID = own })
	if first.ID != own {
		t.Fatalf("id = %s, want the file's own %s", first.ID, own)
	}
	second := ingest(t, a, formatstest.LinesFile("s", 10), func(m *formats.Metadata) { m.ID = own })
	if second.ID == own || second.Outcome != Ingested || second.Note == "" {
		t.Errorf("conflicting id: got %s outcome %v note %q", second.ID, second.Outcome, second.Note)
	}
	// Both export intact.
	if !bytes.Equal(export(t, a, own), formatstest.LinesFile("s", 20)) || !bytes.Equal(export(t, a, second.ID), formatstest.LinesFile("s", 10)) {
		t.Error("exports differ after id conflict")
	}
}

// A growing recording replaces its archived copy when that copy's chunks
// are its first chunks, unchanged; never a held one.
func TestGrowingReplaces(t *testing.T) {
	a := openTest(t, "", Options{})
	own := uuid.MustParse("11111111-2222-3333-4444-555555555555")
	grow := func(m *formats.Metadata) { m.ID, m.Growing = own, true }
	ingestGrowing(t, a, formatstest.LinesFile("w", 28), grow)
	if _, err := a.SetFlag(own, "review", ""); err != nil {
		t.Fatal(err)
	}
	res := ingestGrowing(t, a, formatstest.LinesFile("w", 48), grow)
	if res.Outcome != Replaced || res.ID != own {
		t.Fatalf("outcome %v id %s", res.Outcome, res.ID)
	}
	if len(res.Manifest.Flags) != 1 {
		t.Error("flag lost on replace")
	}
	if got := export(t, a, own); !bytes.Equal(got, formatstest.LinesFile("w", 48)) {
		t.Error("export after replace differs")
	}
	if _, err := a.SetHold(own, "evidence"); err != nil {
		t.Fatal(err)
	}
	res = ingestGrowing(t, a, formatstest.LinesFile("w", 68), grow)
	var re *ReplaceError
	if res.Outcome != Refused || !errors.As(res.Err, &re) || !strings.Contains(re.Reason, "held") {
		t.Fatalf("held: outcome %v err %v", res.Outcome, res.Err)
	}
	if got := export(t, a, own); !bytes.Equal(got, formatstest.LinesFile("w", 48)) {
		t.Error("a held recording changed")
	}
	rep, err := a.Check(context.Background(), CheckOptions{ReadData: true})
	if err != nil || !rep.OK() {
		t.Fatalf("check after replace: %+v %v", rep, err)
	}
}

func TestDeleteAndCheck(t *testing.T) {
	a := openTest(t, "", Options{})
	keep := ingest(t, a, formatstest.LinesFile("a", 50), nil)
	gone := ingest(t, a, formatstest.LinesFile("b", 50), nil)
	if _, err := a.SetHold(gone.ID, "legal"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Delete(context.Background(), gone.ID); !errors.Is(err, ErrHeld) {
		t.Fatalf("delete of held recording: %v, want ErrHeld", err)
	}
	if _, err := a.Release(gone.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Delete(context.Background(), gone.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Open(gone.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("open deleted: %v", err)
	}
	rep, err := a.Check(context.Background(), CheckOptions{ReadData: true})
	if err != nil || !rep.OK() || rep.Recordings != 1 {
		t.Fatalf("check: %+v %v", rep, err)
	}
	if !bytes.Equal(export(t, a, keep.ID), formatstest.LinesFile("a", 50)) {
		t.Error("kept recording damaged")
	}
	ch, err := a.ChangesSince(0, 0)
	if err != nil || len(ch) != 5 || ch[4].Op != ChangeDelete || ch[4].ID != gone.ID {
		t.Errorf("change log = %+v, %v", ch, err)
	}
}

// A crash after the chunks were written but before the manifest commit
// leaves orphans that no reader sees and check --repair removes.
func TestCrashBeforeManifestLeavesOnlyOrphans(t *testing.T) {
	a := openTest(t, "", Options{})
	p := a.NewPending("lines", "x")
	meta, err := formatstest.Lines{}.Split(context.Background(), bytes.NewReader(formatstest.LinesFile("c", 40)), p)
	if err != nil {
		t.Fatal(err)
	}
	p.Finish(meta)
	p.shard = "2026-01"
	if err := a.writeBlobs(p.shard, uuid.New(), p.ticks, p.blobs); err != nil {
		t.Fatal(err)
	}
	n := 0
	a.List(context.Background(), func(*Manifest) error { n++; return nil })
	if n != 0 {
		t.Fatalf("%d recordings visible after a crash before the manifest", n)
	}
	rep, _ := a.Check(context.Background(), CheckOptions{})
	if rep.Orphans != 10 || rep.OK() {
		t.Fatalf("check found %d orphans, want 10", rep.Orphans)
	}
	if rep, _ = a.Check(context.Background(), CheckOptions{Repair: true}); rep.Orphans != 10 {
		t.Fatalf("repair pass saw %d orphans", rep.Orphans)
	}
	if rep, _ = a.Check(context.Background(), CheckOptions{}); !rep.OK() {
		t.Fatalf("after repair: %+v", rep)
	}
}

// An interrupted delete (mark committed, sweep not run) is finished by the
// next Sweep, and Check reports it meanwhile.
func TestInterruptedDeleteIsFinished(t *testing.T) {
	a := openTest(t, "", Options{})
	res := ingest(t, a, formatstest.LinesFile("d", 40), nil)
	if _, err := a.Mark(context.Background(), []uuid.UUID{res.ID}, false); err != nil {
		t.Fatal(err)
	}
	rep, _ := a.Check(context.Background(), CheckOptions{})
	if rep.PendingDeletes != 1 || rep.Orphans != 10 {
		t.Fatalf("check after mark: %+v", rep)
	}
	if _, err := a.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	if rep, _ = a.Check(context.Background(), CheckOptions{}); !rep.OK() {
		t.Fatalf("after sweep: %+v", rep)
	}
}

// TestCorruptChunkIsReported damages one stored chunk in several places:
// a whole export fails naming the chunk (whether zstd's checksum, its
// decoding or the CRC-32C catches it), having written only the bytes
// before it, and check --read-data reports it.
func TestCorruptChunkIsReported(t *testing.T) {
	tests := []struct {
		name string
		at   func(v []byte) int // index of the byte to change
		xor  byte
	}{
		{"zstd checksum", func(v []byte) int { return len(v) - 1 }, 0x55},
		{"payload", func(v []byte) int { return len(v) / 2 }, 0x55},
		{"frame header", func(v []byte) int { _, k, _ := chunkenc.Resume(v); return k + 4 }, 0x55},
		// The frame no longer says it has a checksum.
		{"checksum flag", func(v []byte) int { _, k, _ := chunkenc.Resume(v); return k + 4 }, 0x04},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := openTest(t, "", Options{})
			native := formatstest.LinesFile("e", 40)
			res := ingest(t, a, native, nil)
			m := res.Manifest
			db, _ := a.shard(m.Shard, false)
			key := chunkKey(m.ID, m.Chunks[3].StartTick)
			if err := db.Update(func(tx *bolt.Tx) error {
				b := tx.Bucket(bucketChunks)
				v := bytes.Clone(b.Get(key))
				v[tt.at(v)] ^= tt.xor
				return b.Put(key, v)
			}); err != nil {
				t.Fatal(err)
			}
			r, _ := a.Open(res.ID)
			var out bytes.Buffer
			_, err := r.WriteTo(context.Background(), &out)
			if err == nil {
				t.Fatal("export of a corrupt chunk succeeded")
			}
			if want := fmt.Sprintf("chunk 3 (tick %d)", m.Chunks[3].StartTick); !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not name %q", err, want)
			}
			// Chunks are decompressed in parallel but written in order: what
			// was written is the file up to the corrupt chunk, nothing after.
			if !bytes.HasPrefix(native, out.Bytes()) || int64(out.Len()) > m.Chunks[3].Offset {
				t.Errorf("wrote %d bytes before the error, not a prefix of the file ending before chunk 3 (byte %d)", out.Len(), m.Chunks[3].Offset)
			}
			rep, _ := a.Check(context.Background(), CheckOptions{ReadData: true})
			if len(rep.Problems) != 1 {
				t.Fatalf("problems = %v", rep.Problems)
			}
		})
	}
}

func TestResolvePrefix(t *testing.T) {
	a := openTest(t, "", Options{})
	res := ingest(t, a, formatstest.LinesFile("f", 5), nil)
	s := res.ID.String()
	for _, ref := range []string{s, s[:8], s[:5], s[:13]} {
		if id, err := a.Resolve(ref); err != nil || id != res.ID {
			t.Errorf("Resolve(%q) = %s, %v", ref, id, err)
		}
	}
	// Two ids sharing a prefix: the prefix is ambiguous, longer ones are not.
	for _, own := range []string{"abcdef01-0000-4000-8000-000000000001", "abcdef02-0000-4000-8000-000000000002"} {
		ingest(t, a, formatstest.LinesFile(own, 5), func(m *formats.Metadata) { m.ID = uuid.MustParse(own) })
	}
	if _, err := a.Resolve("abcdef0"); err == nil || !strings.Contains(err.Error(), "ambiguous") {
		t.Errorf("Resolve of a shared prefix: %v, want an ambiguity error", err)
	}
	if id, err := a.Resolve("abcdef02"); err != nil || id.String()[:8] != "abcdef02" {
		t.Errorf("Resolve(abcdef02) = %s, %v", id, err)
	}
	for _, ref := range []string{"zz", "", "0000000000"} {
		if _, err := a.Resolve(ref); err == nil {
			t.Errorf("Resolve(%q) succeeded", ref)
		}
	}
}

func TestShardByStartMonth(t *testing.T) {
	a := openTest(t, "", Options{})
	start := time.Date(2024, 3, 9, 12, 0, 0, 0, time.UTC)
	res := ingest(t, a, formatstest.LinesFile("g", 5), func(m *formats.Metadata) { m.Start = start })
	if res.Manifest.Shard != "2024-03" {
		t.Errorf("shard = %s", res.Manifest.Shard)
	}
	if _, err := os.Stat(filepath.Join(a.Dir(), "shards", "2024-03.db")); err != nil {
		t.Error(err)
	}
}

func TestFlags(t *testing.T) {
	a := openTest(t, "", Options{})
	res := ingest(t, a, formatstest.LinesFile("h", 5), func(m *formats.Metadata) { m.Flags = []string{"speedhack"} })
	m, err := a.SetFlag(res.ID, "griefing", "reported twice")
	if err != nil {
		t.Fatal(err)
	}
	if got := m.AllFlags(); len(got) != 2 || got[1] != "griefing" {
		t.Errorf("flags = %v", got)
	}
	if _, err := a.Unflag(res.ID, "speedhack"); err == nil {
		t.Error("removing a file's own flag succeeded")
	}
	if m, err = a.Unflag(res.ID, "griefing"); err != nil || len(m.AllFlags()) != 1 {
		t.Errorf("unflag: %v %v", m.AllFlags(), err)
	}
}

// TestExportStopsWhenCancelled checks that a whole export, whose chunks
// are read on several goroutines, returns the context's error when it is
// cancelled mid-way, and that no reader is left behind.
func TestExportStopsWhenCancelled(t *testing.T) {
	a := openTest(t, "", Options{})
	native := formatstest.LinesFile("c", 400)
	res := ingest(t, a, native, nil)
	before := runtime.NumGoroutine()
	r, err := a.Open(res.ID)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &cancelAfter{n: len(native) / 3, cancel: cancel}
	if _, err := r.WriteTo(ctx, w); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled export: %v, want context.Canceled", err)
	}
	if !bytes.HasPrefix(native, w.b.Bytes()) {
		t.Error("what was written before the cancel is not a prefix of the file")
	}
	for i := 0; runtime.NumGoroutine() > before && i < 100; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines after the export, %d before", n, before)
	}
}

// cancelAfter is a writer that cancels its context once it holds n bytes.
type cancelAfter struct {
	b      bytes.Buffer
	n      int
	cancel context.CancelFunc
}

func (w *cancelAfter) Write(p []byte) (int, error) {
	if w.b.Len() >= w.n {
		w.cancel()
	}
	return w.b.Write(p)
}

// The sizes of the archived sources and of the takedowns are indexed as
// they come and go, and built on open for a catalog written before the
// index: a size none has is known to be new.
func TestSourceSizes(t *testing.T) {
	dir := t.TempDir()
	a, err := Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	native, other := formatstest.LinesFile("s", 40), formatstest.LinesFile("t", 3)
	size, otherSize := int64(len(native)), int64(len(other))
	may := func(a *Archive, size int64) bool {
		t.Helper()
		ok, err := a.MayHoldSize(size)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if may(a, size) {
		t.Errorf("empty archive: may hold %d bytes", size)
	}
	res := ingest(t, a, native, nil)
	ingest(t, a, other, nil)
	for _, tc := range []struct {
		size int64
		want bool
	}{{size, true}, {otherSize, true}, {size - 1, false}, {size + 1, false}, {0, false}, {1 << 40, false}} {
		if got := may(a, tc.size); got != tc.want {
			t.Errorf("after the commits: may hold %d bytes %v, want %v", tc.size, got, tc.want)
		}
	}
	// A catalog written before the index: Open builds it.
	if err := a.catalog.Update(func(tx *bolt.Tx) error { return tx.DeleteBucket(bucketSourceSizes) }); err != nil {
		t.Fatal(err)
	}
	a.Close()
	if a, err = Open(dir, Options{NoSync: true}); err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if !may(a, size) || !may(a, otherSize) || may(a, size+1) {
		t.Errorf("rebuilt on open: may hold %d, %d, %d bytes: %v %v %v, want true true false", size, otherSize, size+1, may(a, size), may(a, otherSize), may(a, size+1))
	}
	// Check finds a key missing and a key of nothing; the repair puts
	// the one back and removes the other.
	err = a.catalog.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSourceSizes)
		if err := b.Delete(sourceSizeKey(otherSize, sha256Of(other))); err != nil {
			return err
		}
		return b.Put(sourceSizeKey(12345, make([]byte, 32)), nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	if may(a, otherSize) || !may(a, 12345) {
		t.Fatalf("index not changed by the test")
	}
	for _, repair := range []bool{false, true} {
		rep, err := a.Check(t.Context(), CheckOptions{Repair: repair})
		if err != nil {
			t.Fatal(err)
		}
		if rep.MiscountedSizes != 2 || rep.OK() {
			t.Errorf("check (repair %v): %d sizes miscounted, OK %v; want 2, false", repair, rep.MiscountedSizes, rep.OK())
		}
	}
	if rep, err := a.Check(t.Context(), CheckOptions{}); err != nil || rep.MiscountedSizes != 0 || !rep.OK() {
		t.Errorf("check after the repair: %+v, %v", rep, err)
	}
	if !may(a, otherSize) || may(a, 12345) {
		t.Errorf("after the repair: may hold %d bytes %v, 12345 bytes %v; want true, false", otherSize, may(a, otherSize), may(a, 12345))
	}
	// Taken-down bytes keep their size until the takedown is lifted.
	m, err := a.TakeDown(t.Context(), res.ID, DeleteOptions{Reason: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if !may(a, size) {
		t.Errorf("after the takedown: may not hold %d bytes", size)
	}
	if _, err := a.LiftTakedown(t.Context(), m.SHA256); err != nil {
		t.Fatal(err)
	}
	if may(a, size) || !may(a, otherSize) {
		t.Errorf("after the lift: may hold %d bytes %v, %d bytes %v; want false, true", size, may(a, size), otherSize, may(a, otherSize))
	}
	// A delete is a takedown; a prune is not.
	res = ingest(t, a, native, nil)
	if _, err := a.Delete(t.Context(), res.ID); err != nil {
		t.Fatal(err)
	}
	plan, err := a.Plan(t.Context(), Policy{MaxBytes: 1}, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Prune(t.Context(), plan, PruneOptions{}); err != nil {
		t.Fatal(err)
	}
	if !may(a, size) || may(a, otherSize) {
		t.Errorf("after the delete and the prune: may hold %d bytes %v, %d bytes %v; want true, false", size, may(a, size), otherSize, may(a, otherSize))
	}
}

func sha256Of(b []byte) []byte {
	sum := sha256.Sum256(b)
	return sum[:]
}
