package ingest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/all"
	"github.com/replayarchive/replay/formats/hcrp"
	"github.com/replayarchive/replay/internal/gen/hcrpgen"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
)

// growTo writes b to path and grows its live recording.
func growTo(t *testing.T, p *Pipeline, path string, b []byte, final bool) *Grown {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := p.Grow(context.Background(), path, final)
	if err != nil {
		t.Fatalf("grow to %d bytes: %v", len(b), err)
	}
	return g
}

// A live recording grows with its file, is sealed byte-identical to it,
// and refuses what does not extend it: a held recording, a file whose
// bytes changed under it, a file that shrank.
func TestGrowLive(t *testing.T) {
	a := newArchive(t)
	p := &Pipeline{Archive: a, Codecs: all.Codecs()}
	game := teehistoriangen.Must(t, teehistoriangen.Options{Duration: 40 * time.Second, Players: 6, Seed: 5})
	file := game
	path := filepath.Join(t.TempDir(), "game.teehistorian")

	if g := growTo(t, p, path, file[:20], false); g.Action != GrowWaiting {
		t.Fatalf("inside the header: %s %s", g.Action, g.Why)
	}
	g := growTo(t, p, path, file[:len(file)/3+1], false)
	if g.Action != GrowStarted {
		t.Fatalf("first records: %s %s", g.Action, g.Why)
	}
	id := g.ID
	if g.NativeBytes >= int64(len(file)/3+1) || g.NativeBytes < int64(len(file)/4) {
		t.Errorf("started with %d of %d bytes (a half-written record must wait)", g.NativeBytes, len(file)/3+1)
	}
	if g := growTo(t, p, path, file[:len(file)/2], false); g.Action != GrowGrew || g.ID != id {
		t.Fatalf("second grow: %s %s", g.Action, g.Why)
	}
	m, _ := a.Manifest(id)
	if !m.Live || m.EventCount == 0 {
		t.Errorf("manifest: live %v, %d events", m.Live, m.EventCount)
	}

	// A file whose archived bytes changed is not live any more.
	changed := bytes.Clone(file[:len(file)*2/3])
	changed[len(file)/2-100] ^= 0xff
	if g := growTo(t, p, path, changed, false); g.Action != GrowNotLive || !g.Warn || !strings.Contains(g.Why, "does not extend") {
		t.Errorf("changed prefix: %s warn=%v %q", g.Action, g.Warn, g.Why)
	}
	// Nor is one that shrank.
	if g := growTo(t, p, path, file[:len(file)/4], false); g.Action != GrowNotLive || !strings.Contains(g.Why, "shrank") {
		t.Errorf("shrunk: %s %q", g.Action, g.Why)
	}
	// A held recording is not extended: ids are not hijacked.
	if _, err := a.SetHold(id, "case 7"); err != nil {
		t.Fatal(err)
	}
	if g := growTo(t, p, path, file[:len(file)*2/3], false); g.Action != GrowNotLive || !strings.Contains(g.Why, "held (case 7)") {
		t.Errorf("held: %s %q", g.Action, g.Why)
	}
	if _, err := a.Release(id); err != nil {
		t.Fatal(err)
	}
	if m2, _ := a.Manifest(id); m2.NativeBytes != m.NativeBytes || m2.SHA256 != m.SHA256 {
		t.Fatalf("a refused grow changed the recording: %d → %d bytes", m.NativeBytes, m2.NativeBytes)
	}

	if g := growTo(t, p, path, file, false); g.Action != GrowSealed {
		t.Fatalf("FINISH: %s %q", g.Action, g.Why)
	}
	m, _ = a.Manifest(id)
	sum := sha256.Sum256(file)
	if m.Live || m.SHA256 != hex.EncodeToString(sum[:]) || m.NativeBytes != int64(len(file)) {
		t.Errorf("sealed manifest: live %v, %d bytes, sha256 %s", m.Live, m.NativeBytes, m.SHA256)
	}
	rec, err := a.Open(id)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := rec.WriteTo(context.Background(), &out); err != nil || !bytes.Equal(out.Bytes(), file) {
		t.Fatalf("export: %v, %d bytes of %d", err, out.Len(), len(file))
	}
	// The whole file ingested again is the same recording.
	var res []FileResult
	if err := p.Run(context.Background(), []string{path}, func(r FileResult) { res = append(res, r) }); err != nil || len(res) != 1 || res[0].Outcome != OutcomeDup || res[0].ID != id {
		t.Errorf("ingest of the sealed file: %v %+v", err, res)
	}
	if g := growTo(t, p, path, file, false); g.Action != GrowNotLive || g.Warn {
		t.Errorf("grow of a sealed file: %s warn=%v %q", g.Action, g.Warn, g.Why)
	}
}

// setBytes is the compacted stream a recording directory stands for (what
// a whole-directory ingest archives).
func setBytes(t *testing.T, dir string) []byte {
	t.Helper()
	s, err := hcrp.OpenSegmentSet(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b, err := io.ReadAll(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// exportOf exports recording id whole.
func exportOf(t *testing.T, a *archive.Archive, id uuid.UUID) []byte {
	t.Helper()
	rec, err := a.Open(id)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := rec.WriteTo(context.Background(), &out); err != nil {
		t.Fatalf("export of %s: %v", id, err)
	}
	return out.Bytes()
}

// indexedBytes is the size of preamble.dat plus the segment bytes its
// index refers to in segments from..to-1 (what a grow should read).
func indexedBytes(t *testing.T, dir string, from, to int) int64 {
	t.Helper()
	st, err := os.Stat(filepath.Join(dir, hcrp.PreambleFile))
	if err != nil {
		t.Fatal(err)
	}
	n := st.Size()
	for seg := from; seg < to; seg++ {
		st, err := os.Stat(filepath.Join(dir, hcrp.SegmentName(seg)))
		if err != nil {
			t.Fatal(err)
		}
		n += st.Size()
	}
	return n
}

// segments counts the segment files of dir.
func segments(t *testing.T, dir string) int {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "segment-*.dat"))
	if err != nil {
		t.Fatal(err)
	}
	return len(m)
}

// A growing HCRP segment set is one live recording from its first commit:
// each commit appends its chunks (reading only the new segment and the
// preamble), the export works at every step and equals what a
// whole-directory ingest of the set then archives, and the finished set
// is sealed byte-identical to a whole-directory ingest, with the same
// events. A rewritten segment stops the recording growing, with a warning.
func TestGrowLiveDir(t *testing.T) {
	a := newArchive(t)
	p := &Pipeline{Archive: a, Codecs: all.Codecs()}
	ctx := context.Background()
	id := uuid.MustParse("5d0c8e2a-7f3b-4e91-b6a4-0c2d9e8f1a37")
	root := t.TempDir()

	// The first preamble is written with the first segment.
	dir, rec, sess := liveDir(t, root, id, hcrpgen.Config{Seed: 11, Ticks: 4000}, 1000)
	g, err := p.Grow(ctx, dir, false)
	if err != nil || g.Action != GrowStarted || g.ID != id {
		t.Fatalf("first commit: %+v %v", g, err)
	}
	if want := indexedBytes(t, dir, 0, segments(t, dir)); g.Read != want {
		t.Errorf("the first grow read %d bytes, want the preamble and the segments, %d", g.Read, want)
	}
	if got, want := exportOf(t, a, id), setBytes(t, dir); !bytes.Equal(got, want) {
		t.Fatalf("live export: %d bytes, the set's stream %d", len(got), len(want))
	}
	if g, err := p.Grow(ctx, dir, false); err != nil || g.Action != GrowWaiting {
		t.Fatalf("no new commit: %+v %v", g, err)
	}
	// An idle segment does not seal a set whose preamble changed later.
	seg0 := filepath.Join(dir, hcrp.SegmentName(0))
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(dir, hcrp.PreambleFile), later, later); err != nil {
		t.Fatal(err)
	}
	if g, err := p.Grow(ctx, seg0, true); err != nil || g.Action != GrowWaiting {
		t.Fatalf("final grow through an older file: %+v %v", g, err)
	}

	var reads []int64
	for range 3 {
		before := segments(t, dir)
		step(t, rec, sess, 700)
		// A file of the directory stands for it.
		g, err := p.Grow(ctx, filepath.Join(dir, hcrp.SegmentName(before)), false)
		if err != nil || g.Action != GrowGrew || g.ID != id || g.Path != dir {
			t.Fatalf("grow: %+v %v", g, err)
		}
		want := indexedBytes(t, dir, before, segments(t, dir))
		if g.Read != want {
			t.Errorf("grow read %d bytes, want the preamble and the new segments only, %d", g.Read, want)
		}
		reads = append(reads, g.Read)
		if got, want := exportOf(t, a, id), setBytes(t, dir); !bytes.Equal(got, want) {
			t.Fatalf("live export after a grow: %d bytes, the set's stream %d", len(got), len(want))
		}
	}
	t.Logf("bytes read by the three grows: %v (the set is %d bytes now)", reads, len(setBytes(t, dir)))
	// Ingested by hand meanwhile, the set extends its live recording: no
	// copy is archived.
	if r := runAll(t, p, dir)[id.String()]; r.Outcome != OutcomeDup || r.ID != id || !strings.Contains(r.Note, "holds every commit") {
		t.Errorf("whole ingest of the live set with nothing new: %+v", r)
	}
	step(t, rec, sess, 200)
	if r := runAll(t, p, dir)[id.String()]; r.Outcome != OutcomeIngested || r.ID != id || !strings.Contains(r.Note, "extended live recording") {
		t.Errorf("whole ingest of the grown live set: %+v", r)
	}
	if got, want := exportOf(t, a, id), setBytes(t, dir); !bytes.Equal(got, want) {
		t.Fatalf("live export after a whole ingest: %d bytes, the set's stream %d", len(got), len(want))
	}
	count := 0
	a.List(ctx, func(*archive.Manifest) error { count++; return nil })
	if count != 1 {
		t.Errorf("%d recordings, want the live one only", count)
	}
	m, err := a.Manifest(id)
	if err != nil || !m.Live || !m.ChunksSHA256 || m.EventCount == 0 {
		t.Fatalf("live manifest: %+v %v", m, err)
	}

	// The finished marker seals it.
	step(t, rec, sess, 300)
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	g, err = p.Grow(ctx, dir, false)
	if err != nil || g.Action != GrowSealed {
		t.Fatalf("finished: %+v %v", g, err)
	}
	whole := setBytes(t, dir)
	sum := sha256.Sum256(whole)
	m, _ = a.Manifest(id)
	if m.Live || m.ChunksSHA256 || m.SHA256 != hex.EncodeToString(sum[:]) || m.NativeBytes != int64(len(whole)) {
		t.Fatalf("sealed manifest: live %v, chunks sha %v, %d bytes, sha256 %s", m.Live, m.ChunksSHA256, m.NativeBytes, m.SHA256)
	}
	if got := exportOf(t, a, id); !bytes.Equal(got, whole) {
		t.Fatalf("sealed export differs from the whole set (%d and %d bytes)", len(got), len(whole))
	}
	if g, err := p.Grow(ctx, filepath.Join(dir, hcrp.PreambleFile), true); err != nil || g.Action != GrowDone {
		t.Fatalf("a file of the sealed set: %+v %v", g, err)
	}
	// A whole-directory ingest finds it archived, and makes the same
	// recording in another archive: same bytes, same events.
	if r := runAll(t, p, dir)[id.String()]; r.Outcome != OutcomeDup || r.ID != id {
		t.Errorf("whole ingest of the sealed set: %+v", r)
	}
	b := newArchive(t)
	if r := runAll(t, &Pipeline{Archive: b, Codecs: all.Codecs()}, dir)[id.String()]; r.Outcome != OutcomeIngested {
		t.Fatalf("whole ingest: %+v", r)
	}
	if got := exportOf(t, b, id); !bytes.Equal(got, whole) {
		t.Fatal("whole-set ingest exports other bytes")
	}
	ev1, _ := a.Events(id)
	ev2, _ := b.Events(id)
	if len(ev1) == 0 || !reflect.DeepEqual(ev1, ev2) {
		t.Errorf("events: live %d, whole %d, equal %v", len(ev1), len(ev2), reflect.DeepEqual(ev1, ev2))
	}
	rep, err := a.Check(ctx, archive.CheckOptions{ReadData: true})
	if err != nil || !rep.OK() {
		t.Fatalf("check: %+v %v", rep, err)
	}
}

// A live set whose archived segment is rewritten (a server reusing the
// directory) is not extended: a warning says so, nothing changes, and the
// rewritten set becomes a new recording when ingested whole.
func TestGrowLiveDirRewritten(t *testing.T) {
	a := newArchive(t)
	p := &Pipeline{Archive: a, Codecs: all.Codecs()}
	ctx := context.Background()
	id := uuid.MustParse("1e2f3a4b-5c6d-4e7f-8a9b-0c1d2e3f4a5b")
	dir, rec, sess := liveDir(t, t.TempDir(), id, hcrpgen.Config{Seed: 12, Ticks: 3000}, 1000)
	if g, err := p.Grow(ctx, dir, false); err != nil || g.Action != GrowStarted {
		t.Fatalf("start: %+v %v", g, err)
	}
	step(t, rec, sess, 500)
	seg := filepath.Join(dir, hcrp.SegmentName(0))
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x55
	later := time.Now().Add(2 * time.Second)
	if err := os.WriteFile(seg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(seg, later, later)
	state := archiveState(t, a)
	g, err := p.Grow(ctx, dir, false)
	if err != nil || g.Action != GrowNotLive || !g.Warn || !strings.Contains(g.Why, "rewritten") || !errors.Is(g.Cause, formats.ErrNotExtending) {
		t.Fatalf("rewritten segment: %+v %v", g, err)
	}
	if after := archiveState(t, a); after != state {
		t.Fatalf("the archive changed:\n%s\nbecame\n%s", state, after)
	}
	r := runAll(t, p, dir)[id.String()]
	if r.Outcome != OutcomeIngested || r.ID == id || !strings.Contains(r.Note, "does not extend") {
		t.Fatalf("whole ingest of the rewritten set: %+v", r)
	}
}
