// Fuzz targets seeded with generated files and the DDNet vectors. They are
// external tests because the generator imports this package.

package teehistorian_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/formatstest"
	"github.com/replayarchive/replay/formats/teehistorian"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
)

// fuzzSeeds returns small generated files and the DDNet vector files.
func fuzzSeeds(t testing.TB) [][]byte {
	seeds := teehistorian.VectorFiles(t)
	for seed := uint64(1); seed <= 3; seed++ {
		seeds = append(seeds, teehistoriangen.Must(t, teehistoriangen.Options{Duration: 3 * time.Second, Players: 3, Seed: seed, Messages: true, NoFinish: seed == 2}))
	}
	return seeds
}

// FuzzReader splits arbitrary input and, when it splits, runs Frames, Clip
// and Redact over the result. Nothing may panic; a split must reassemble
// exactly; clips and redacted copies must split again.
func FuzzReader(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	for _, b := range teehistorian.CorpusFiles(f) {
		if len(b) < 16<<10 {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		codec := &teehistorian.Codec{ChunkSize: 64}
		rec, err := formatstest.TrySplit(codec, b)
		// Skimming the common records must not change what a split
		// gives, nor where it fails.
		if slow, serr := formatstest.TrySplit(teehistorian.WithoutSkim(codec), b); fmt.Sprint(serr) != fmt.Sprint(err) {
			t.Fatalf("split: %v; record by record: %v", err, serr)
		} else if err == nil && (!reflect.DeepEqual(rec.ChunkIndex, slow.ChunkIndex) || !reflect.DeepEqual(rec.Metadata, slow.Metadata)) {
			t.Fatalf("split and split record by record differ")
		}
		if err != nil {
			var fe *formats.Error
			if !errors.As(err, &fe) {
				t.Fatalf("error is not a *formats.Error: %v", err)
			}
			return
		}
		ctx := context.Background()
		if err := codec.Frames(ctx, rec.Source(), formats.All(), func(formats.Frame) error { return nil }); err != nil {
			t.Fatalf("frames of a file that split: %v", err)
		}
		last := rec.Metadata.Ticks - 1
		if last >= 0 {
			var out bytes.Buffer
			if err := codec.Clip(ctx, rec.Source(), formats.Ticks(last/2, -1), &out); err != nil {
				t.Fatalf("clip of a file that split: %v", err)
			}
			if _, err := formatstest.TrySplit(codec, out.Bytes()); err != nil {
				t.Fatalf("clip does not split: %v", err)
			}
			out.Reset()
			if err := codec.Redact(ctx, rec.Source(), formats.Ticks(last/2, -1), &out); err != nil {
				t.Fatalf("redacted clip of a file that split: %v", err)
			}
			if _, err := formatstest.TrySplit(codec, out.Bytes()); err != nil {
				t.Fatalf("redacted clip does not split: %v", err)
			}
		}
		// The whole file redacted splits again with the same ticks.
		var red bytes.Buffer
		if err := codec.Redact(ctx, rec.Source(), formats.All(), &red); err != nil {
			t.Fatalf("redact a file that split: %v", err)
		}
		rrec, err := formatstest.TrySplit(codec, red.Bytes())
		if err != nil {
			t.Fatalf("redacted file does not split: %v", err)
		}
		if rrec.Metadata.Ticks != rec.Metadata.Ticks {
			t.Fatalf("redacted file has %d ticks, original %d", rrec.Metadata.Ticks, rec.Metadata.Ticks)
		}
	})
}

// FuzzResume decodes arbitrary resume states: no panic, and whatever decodes
// re-encodes to a state that decodes the same.
func FuzzResume(f *testing.F) {
	rec := formatstest.Split(f, &teehistorian.Codec{ChunkSize: 256}, teehistoriangen.Must(f, teehistoriangen.Options{Duration: 5 * time.Second, Players: 4, Seed: 2}))
	for _, c := range rec.ChunkIndex {
		f.Add(c.Resume)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var st teehistorian.State
		if teehistorian.DecodeResume(&st, b) != nil {
			return
		}
		again := teehistorian.AppendResume(nil, &st)
		var st2 teehistorian.State
		if err := teehistorian.DecodeResume(&st2, again); err != nil {
			t.Fatalf("re-encoded state does not decode: %v", err)
		}
		if !bytes.Equal(teehistorian.AppendResume(nil, &st2), again) {
			t.Fatalf("resume state changed in a round trip")
		}
	})
}
