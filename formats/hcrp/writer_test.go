// Tests of the recorder's chunk and segment limits, of a live directory
// that grows between ingests, of what a crash can leave behind, and of the
// generator's determinism.

package hcrp_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/uuid"
	"github.com/replayarchive/replay/formats/formatstest"
	"github.com/replayarchive/replay/formats/hcrp"
	"github.com/replayarchive/replay/internal/gen/hcrpgen"
)

func TestChunkAndSegmentLimits(t *testing.T) {
	for _, tc := range []struct {
		name     string
		opts     func(*hcrp.Options)
		chunks   int // expected chunk count for 600 ticks
		segments int
	}{
		{"defaults", func(o *hcrp.Options) {}, 6, 1},
		{"ticks", func(o *hcrp.Options) { o.ChunkTicks = 50 }, 12, 1},
		{"bytes", func(o *hcrp.Options) { o.ChunkBytes = 2000 }, -1, 1},
		{"segment chunks", func(o *hcrp.Options) { o.SegmentChunks = 4 }, 6, 2},
		{"segment bytes", func(o *hcrp.Options) { o.SegmentBytes = 1 }, 6, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := hcrpgen.NewSession(hcrpgen.Config{Seed: 21, Ticks: 600, Players: 2})
			o := s.Options()
			tc.opts(&o)
			root := t.TempDir()
			id := uuid.New()
			r, err := hcrp.Create(root, id, o)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Run(r); err != nil {
				t.Fatal(err)
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(root, id.String())
			rd, err := hcrp.OpenDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer rd.Close()
			segs, _ := filepath.Glob(filepath.Join(dir, "segment-*.dat"))
			if len(segs) != tc.segments {
				t.Errorf("%d segments, want %d", len(segs), tc.segments)
			}
			if tc.chunks > 0 && len(rd.Index) != tc.chunks {
				t.Errorf("%d chunks, want %d", len(rd.Index), tc.chunks)
			}
			for i, e := range rd.Index {
				if !e.Snapshot() {
					t.Errorf("chunk %d has no snapshot", i)
				}
				if tc.name == "bytes" && i < len(rd.Index)-1 && (e.Ticks >= 100 || e.UncompressedLen < 2000) {
					t.Errorf("chunk %d: %d ticks, %d bytes: not closed by size", i, e.Ticks, e.UncompressedLen)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, hcrp.FinishedFile)); err != nil {
				t.Error("no finished marker after Close")
			}
		})
	}
}

func TestSegmentSetGrows(t *testing.T) {
	root := t.TempDir()
	s := hcrpgen.NewSession(hcrpgen.Config{Seed: 22, Ticks: 700, Players: 2})
	id := uuid.New()
	r, err := hcrp.Create(root, id, s.Options())
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, id.String())
	ingest := func() (uuid.UUID, int64, []byte) {
		var rec formatstest.Recording
		md, err := hcrp.Codec{}.SplitSegmentSet(ctx, dir, &rec)
		if err != nil {
			t.Fatal(err)
		}
		if !md.Growing {
			t.Fatal("segment set not marked growing")
		}
		return md.ID, md.Ticks, rec.Bytes()
	}
	for range 300 {
		if _, err := s.Step(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	id1, ticks1, b1 := ingest()
	_, _, again := ingest()
	if !bytes.Equal(b1, again) {
		t.Fatal("the same segments gave different bytes")
	}
	if err := s.Run(r); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	id2, ticks2, _ := ingest()
	if id1 != id || id2 != id || ticks1 != 300 || ticks2 != 700 {
		t.Fatalf("ids %s %s (dir %s), ticks %d then %d", id1, id2, id, ticks1, ticks2)
	}

	// Not named by a UUID: the id comes from world and timestamp, and stays.
	other := filepath.Join(root, "run-of-tuesday")
	if err := os.Rename(dir, other); err != nil {
		t.Fatal(err)
	}
	set, err := hcrp.OpenSegmentSet(other)
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	if set.ID() == uuid.Nil || set.ID() == id || set.ID() != hcrp.HeaderID(set) || !set.Finished() {
		t.Fatalf("fallback id %s", set.ID())
	}
}

func TestCrashLeftovers(t *testing.T) {
	dir, _ := recordDir(t, t.TempDir(), hcrpgen.Config{Seed: 23, Ticks: 400, Players: 1}, false)
	set, err := hcrp.OpenSegmentSet(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := readAll(t, set)
	set.Close()
	// A segment written before the crash whose preamble never was, and
	// bytes appended to the last indexed segment: both are ignored.
	segs, _ := filepath.Glob(filepath.Join(dir, "segment-*.dat"))
	os.WriteFile(filepath.Join(dir, hcrp.SegmentName(len(segs))), []byte("partial segment"), 0o644)
	f, _ := os.OpenFile(segs[len(segs)-1], os.O_APPEND|os.O_WRONLY, 0)
	f.Write([]byte("junk"))
	f.Close()
	os.WriteFile(filepath.Join(dir, hcrp.PreambleFile+".tmp"), []byte("half a preamble"), 0o644)
	set, err = hcrp.OpenSegmentSet(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	if got := readAll(t, set); !bytes.Equal(got, want) {
		t.Fatal("leftovers changed the compacted stream")
	}
}

func TestGenerateDeterministic(t *testing.T) {
	a, err := hcrpgen.Generate(hcrpgen.Config{Seed: 99, Ticks: 300}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := hcrpgen.Generate(hcrpgen.Config{Seed: 99, Ticks: 300}, nil)
	c, _ := hcrpgen.Generate(hcrpgen.Config{Seed: 98, Ticks: 300}, nil)
	if !bytes.Equal(a, b) || bytes.Equal(a, c) {
		t.Fatal("Generate is not a function of its config")
	}
}
