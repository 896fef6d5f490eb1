// Benchmarks: decode, Split, Frames of one chunk and Clip on a generated
// one-hour, 16-player file; and a check that decoding allocates nothing per
// record.

package teehistorian_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/formatstest"
	"github.com/replayarchive/replay/formats/teehistorian"
	"github.com/replayarchive/replay/internal/gen/ddnetsim"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
)

func hourFile(b *testing.B) []byte {
	b.Helper()
	file, err := oneHour()
	if err != nil {
		b.Fatal(err)
	}
	return file
}

// TestDecodeAllocsPerRecord decodes a generated file's records from a byte
// slice: the whole run may allocate a handful of times (the reader, names),
// never once per record.
func TestDecodeAllocsPerRecord(t *testing.T) {
	file := teehistoriangen.Must(t, teehistoriangen.Options{Duration: time.Minute, Players: 16, Seed: 9})
	rd, err := teehistorian.NewReader(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	hdr := rd.Header()
	body := file[len(hdr.Raw):]
	var items int
	allocs := testing.AllocsPerRun(5, func() {
		items = 0
		var st teehistorian.State
		st.Reset()
		r := teehistorian.NewChunkReader(body, int64(len(hdr.Raw)), hdr, &st)
		for {
			_, err := r.Next()
			if err != nil {
				if !errors.Is(err, io.EOF) {
					t.Fatal(err)
				}
				break
			}
			items++
		}
	})
	if items < 10000 || allocs > 50 {
		t.Errorf("%v allocations for %d records", allocs, items)
	}
}

func BenchmarkDecode(b *testing.B) {
	file := hourFile(b)
	b.SetBytes(int64(len(file)))
	b.ReportAllocs()
	var items int
	for b.Loop() {
		rd, err := teehistorian.NewReader(bytes.NewReader(file))
		if err != nil {
			b.Fatal(err)
		}
		items = 0
		for {
			_, err := rd.Next()
			if err != nil {
				if !errors.Is(err, io.EOF) {
					b.Fatal(err)
				}
				break
			}
			items++
		}
	}
	b.ReportMetric(float64(items)*float64(b.N)/b.Elapsed().Seconds(), "items/s")
	b.ReportMetric(float64(items), "items/op")
}

// BenchmarkSplit splits the generated hour and a quarter of an hour of
// ddnetsim's crowded server (data the codec was not shaped on), with the
// skim of common records and record by record.
func BenchmarkSplit(b *testing.B) {
	crowd, err := ddnetsim.Lookup("crowd")
	if err != nil {
		b.Fatal(err)
	}
	var sim bytes.Buffer
	s := ddnetsim.NewSession(crowd.Scaled(15/crowd.Minutes[1]), 1)
	if _, err := s.Write(&sim, s.Next()); err != nil {
		b.Fatal(err)
	}
	for _, data := range []struct {
		name string
		file []byte
	}{{"hour", hourFile(b)}, {"crowd", sim.Bytes()}} {
		for _, way := range []struct {
			name  string
			codec *teehistorian.Codec
		}{{"skim", teehistorian.New()}, {"records", teehistorian.WithoutSkim(teehistorian.New())}} {
			c := way.codec
			b.Run(data.name+"/"+way.name, func(b *testing.B) {
				b.SetBytes(int64(len(data.file)))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := c.Split(context.Background(), bytes.NewReader(data.file), formatstest.Discard{}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkFramesOneChunk decodes every tick of one chunk in the middle of
// the hour, and checks that it reads only that chunk.
func BenchmarkFramesOneChunk(b *testing.B) {
	rec := formatstest.Split(b, teehistorian.New(), hourFile(b))
	c := rec.ChunkIndex[len(rec.ChunkIndex)/2]
	b.ReportAllocs()
	frames := 0
	for b.Loop() {
		rec.Reads, frames = 0, 0
		err := teehistorian.New().Frames(context.Background(), rec.Source(), formats.Ticks(c.StartTick, c.EndTick()-1), func(formats.Frame) error { frames++; return nil })
		if err != nil {
			b.Fatal(err)
		}
		if rec.Reads != 1 {
			b.Fatalf("read %d chunks, want 1", rec.Reads)
		}
	}
	b.ReportMetric(float64(frames), "frames/op")
	b.ReportMetric(float64(c.Length), "chunk-bytes")
}

// BenchmarkClip clips one minute from the middle of the hour.
func BenchmarkClip(b *testing.B) {
	rec := formatstest.Split(b, teehistorian.New(), hourFile(b))
	from := rec.Metadata.Ticks / 2
	b.ReportAllocs()
	for b.Loop() {
		if err := teehistorian.New().Clip(context.Background(), rec.Source(), formats.Ticks(from, from+50*60), io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGenerateHour(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if err := teehistoriangen.Generate(io.Discard, teehistoriangen.Options{Duration: time.Hour, Players: 16, Seed: 1}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBaselineSHA256 hashes the same file: a fixed-cost reference
// measured in the same run, to read the other numbers on a busy machine.
func BenchmarkBaselineSHA256(b *testing.B) {
	file := hourFile(b)
	b.SetBytes(int64(len(file)))
	b.ReportAllocs()
	for b.Loop() {
		sha256.Sum256(file)
	}
}
