// Benchmarks: full decode of the corpus files (every chunk decompressed and
// every frame decoded), Split (the ingest path) and Frames (decode plus
// schema-named JSON values), reported in MB/s of file and frames/s.

package vtx

import (
	"bytes"
	"context"
	"testing"

	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/formatstest"
)

var benchFiles = []string{"arena_from_proto_ds.vtx", "arena_from_fbs_ds.vtx"}

func reportFrames(b *testing.B, frames int) {
	b.ReportMetric(float64(frames)*float64(b.N)/b.Elapsed().Seconds(), "frames/s")
}

func BenchmarkDecode(b *testing.B) {
	for _, name := range benchFiles {
		b.Run(name, func(b *testing.B) {
			data := readCorpus(b, name)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			frames := 0
			for b.Loop() {
				f, err := ReadFile(context.Background(), bytes.NewReader(data), 0)
				if err != nil {
					b.Fatal(err)
				}
				frames = f.Frames()
			}
			reportFrames(b, frames)
		})
	}
}

func BenchmarkSplit(b *testing.B) {
	for _, name := range benchFiles {
		b.Run(name, func(b *testing.B) {
			data := readCorpus(b, name)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			var m *formats.Metadata
			for b.Loop() {
				var err error
				if m, err = (Codec{}).Split(context.Background(), bytes.NewReader(data), &formatstest.Recording{}); err != nil {
					b.Fatal(err)
				}
			}
			reportFrames(b, int(m.Ticks))
		})
	}
}

func BenchmarkFrames(b *testing.B) {
	for _, name := range benchFiles {
		b.Run(name, func(b *testing.B) {
			data := readCorpus(b, name)
			rec := formatstest.Split(b, Codec{}, data)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				n = 0
				if err := (Codec{}).Frames(context.Background(), rec.Source(), formats.All(), func(formats.Frame) error { n++; return nil }); err != nil {
					b.Fatal(err)
				}
			}
			reportFrames(b, n)
		})
	}
}
