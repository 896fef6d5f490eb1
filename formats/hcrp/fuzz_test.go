// Fuzz targets for the two parsers: compacted files (Split, Reader, Frames,
// Clip) and live recording directories (preamble + segment). Seeds are small
// generated recordings, plus corpus files at run time if a corpus appears.

package hcrp_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/google/uuid"
	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/formatstest"
	"github.com/replayarchive/replay/formats/hcrp"
	"github.com/replayarchive/replay/internal/gen/hcrpgen"
)

func FuzzReader(f *testing.F) {
	for _, cfg := range []hcrpgen.Config{{Seed: 1, Ticks: 30, Players: 1}, {Seed: 2, Ticks: 150, Players: 2}} {
		b, err := hcrpgen.Generate(cfg, func(o *hcrp.Options) { o.ChunkTicks = 40 })
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	if b, err := os.ReadFile("testdata/tiny.hcrp"); err == nil {
		f.Add(b)
	}
	// lying lengths: a preamble longer than the file, a chunk claiming
	// more than its compressed bytes can hold
	if b, err := hcrp.AppendHeader(nil, &hcrp.Header{WorldID: hcrpgen.World, MetadataLen: hcrp.MaxMetadataLen, IndexLen: hcrp.MaxIndexLen, Chunks: 1}); err == nil {
		f.Add(append(b, make([]byte, 100)...))
	}
	var lying bytes.Buffer
	comp := []byte{0x28, 0xB5, 0x2F, 0xFD, 0x00, 0x00, 0x09, 0x00, 0x00, 0x00}
	if err := hcrp.WriteCompacted(&lying, hcrp.Header{WorldID: hcrpgen.World}, []byte{0x0a, 0},
		[]hcrp.IndexEntry{{Ticks: 1, CompressedLen: int32(len(comp)), UncompressedLen: hcrp.MaxChunkLen}},
		func(int) ([]byte, error) { return comp, nil }); err == nil {
		f.Add(lying.Bytes())
	}
	// Real files, should a corpus ever appear (none is public today).
	corpus := filepath.Join(formatstest.ModuleRoot(f), "..", "shared", "corpus", "hcrp")
	files, _ := filepath.Glob(filepath.Join(corpus, "*"))
	for _, name := range files {
		if b, err := os.ReadFile(name); err == nil && (hcrp.Codec{}).Detect(b[:min(len(b), formats.DetectSize)]) {
			f.Add(b)
		}
	}
	f.Fuzz(fuzzReaderOne)
}

// fuzzReaderOne is FuzzReader's body.
func fuzzReaderOne(t *testing.T, b []byte) {
	{
		rec, err := formatstest.TrySplit(hcrp.Codec{}, b)
		if err != nil {
			return
		}
		rd, err := hcrp.NewReader(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatalf("split accepted what NewReader refuses: %v", err)
		}
		defer rd.Close()
		rd.Events(ctx, formats.All(), func(int64, *hcrp.Event) error { return nil })
		if n := rd.Ticks(); n > 0 {
			rd.Seek(ctx, n/2)
			var clip bytes.Buffer
			if err := (hcrp.Codec{}).Clip(ctx, rec.Source(), formats.Ticks(n/2, -1), &clip); err == nil {
				if _, err := formatstest.TrySplit(hcrp.Codec{}, clip.Bytes()); err != nil {
					t.Fatalf("clip does not split: %v", err)
				}
			}
		}
		hcrp.Codec{}.Frames(ctx, rec.Source(), formats.All(), func(f formats.Frame) error {
			if _, err := json.Marshal(f); err != nil {
				t.Fatalf("frame does not marshal to JSON: %v", err)
			}
			return nil
		})
	}
}

func FuzzSegmentSet(f *testing.F) {
	root := f.TempDir()
	s := hcrpgen.NewSession(hcrpgen.Config{Seed: 3, Ticks: 90, Players: 1})
	o := s.Options()
	o.ChunkTicks = 30
	id := uuid.New()
	r, err := hcrp.Create(root, id, o)
	if err != nil {
		f.Fatal(err)
	}
	if err := s.Run(r); err != nil {
		f.Fatal(err)
	}
	if err := r.Close(); err != nil {
		f.Fatal(err)
	}
	dir := filepath.Join(root, id.String())
	pre, _ := os.ReadFile(filepath.Join(dir, hcrp.PreambleFile))
	seg, _ := os.ReadFile(filepath.Join(dir, hcrp.SegmentName(0)))
	f.Add(pre, seg)
	// The directory is in memory: file system calls cost more than a run.
	f.Fuzz(func(t *testing.T, pre, seg []byte) {
		fsys := fstest.MapFS{hcrp.PreambleFile: {Data: pre}, hcrp.SegmentName(0): {Data: seg}}
		set, err := hcrp.OpenSegmentSetFS(fsys, "x")
		if err != nil {
			return
		}
		var rec formatstest.Recording
		_, err = hcrp.SplitSet(ctx, set, &rec)
		set.Close()
		if err != nil {
			return
		}
		rd, err := hcrp.OpenDirFS(fsys)
		if err != nil {
			t.Fatalf("split accepted what OpenDir refuses: %v", err)
		}
		defer rd.Close()
		rd.Events(ctx, formats.All(), func(int64, *hcrp.Event) error { return nil })
	})
}

// FuzzSplitDirTail grows a live set whose first commit is archived by a
// second commit of fuzzed bytes (preamble and two segments): no panic,
// and a grow that succeeds accounts for every byte of the stream.
func FuzzSplitDirTail(f *testing.F) {
	root := f.TempDir()
	s := hcrpgen.NewSession(hcrpgen.Config{Seed: 4, Ticks: 120, Players: 2})
	o := s.Options()
	o.ChunkTicks, o.SegmentChunks = 30, 2
	id := uuid.New()
	r, err := hcrp.Create(root, id, o)
	if err != nil {
		f.Fatal(err)
	}
	dir := filepath.Join(root, id.String())
	for range 60 {
		if _, err := s.Step(r); err != nil {
			f.Fatal(err)
		}
	}
	if err := r.Flush(); err != nil {
		f.Fatal(err)
	}
	first, _ := os.ReadFile(filepath.Join(dir, hcrp.PreambleFile))
	seg0, _ := os.ReadFile(filepath.Join(dir, hcrp.SegmentName(0)))
	if err := s.Run(r); err != nil {
		f.Fatal(err)
	}
	if err := r.Close(); err != nil {
		f.Fatal(err)
	}
	pre, _ := os.ReadFile(filepath.Join(dir, hcrp.PreambleFile))
	seg1, _ := os.ReadFile(filepath.Join(dir, hcrp.SegmentName(1)))
	var archived formatstest.EventRecording
	in := formats.TailInput{}
	res, err := hcrp.SplitDirTailFS(ctx, fstest.MapFS{hcrp.PreambleFile: {Data: first}, hcrp.SegmentName(0): {Data: seg0}}, "x", in, &archived)
	if err != nil {
		f.Fatal(err)
	}
	in = formats.TailInput{Header: archived.HeaderData, State: res.State, Events: len(archived.Events), Chunks: len(archived.ChunkIndex)}
	f.Add(pre, seg0, seg1)
	f.Fuzz(func(t *testing.T, pre, seg0, seg1 []byte) {
		fsys := fstest.MapFS{hcrp.PreambleFile: {Data: pre}, hcrp.SegmentName(0): {Data: seg0}, hcrp.SegmentName(1): {Data: seg1}}
		var rec formatstest.EventRecording
		res, err := hcrp.SplitDirTailFS(ctx, fsys, "x", in, &rec)
		if err != nil {
			return
		}
		end := int64(len(rec.HeaderData))
		for _, c := range archived.ChunkBytes {
			end += int64(len(c))
		}
		for _, c := range rec.ChunkBytes {
			end += int64(len(c))
		}
		if res.End != end {
			t.Fatalf("End %d, the pieces hold %d bytes", res.End, end)
		}
	})
}
