// Benchmarks: recorder throughput (events/s), seek latency (p50/p99 over
// random ticks of a 30-minute recording) and Split throughput.

package hcrp_test

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/formatstest"
	"github.com/replayarchive/replay/formats/hcrp"
	"github.com/replayarchive/replay/internal/gen/hcrpgen"
)

// BenchmarkWriter records ticks of 16 moving players (a delta move each,
// plus a state change or swing every few ticks) into a ring recorder, so
// memory stays bounded; chunk compression is included.
func BenchmarkWriter(b *testing.B) {
	const players = 16
	r, err := hcrp.NewRing(hcrp.Options{WorldID: hcrpgen.World, Snapshot: func(r *hcrp.Recorder, tick int64) error {
		for i := range players {
			if err := r.Add(&hcrp.Event{Type: hcrp.SpawnEntity, Entity: int32(i), EntityType: 149, Pos: hcrp.Pos{X: float64(i), Y: 64}}); err != nil {
				return err
			}
		}
		return nil
	}}, time.Minute)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	var e hcrp.Event
	events := 0
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := r.StartTick(); err != nil {
			b.Fatal(err)
		}
		for p := range int32(players) {
			e = hcrp.Event{Type: hcrp.DeltaMove, Entity: p, Pos: hcrp.Pos{X: 0.2 + rng.Float64()*0.1, Y: rng.Float64() * 0.05, Z: rng.Float64()*0.2 - 0.1,
				Yaw: rng.Float32() * 360, Pitch: rng.Float32()*20 - 10}, Velocity: hcrp.Vec3{X: 0.2, Y: -0.08}}
			if err := r.Add(&e); err != nil {
				b.Fatal(err)
			}
			events++
			if rng.IntN(8) == 0 {
				e = hcrp.Event{Type: hcrp.EntityState, Entity: p, State: hcrp.StateSprinting}
				if err := r.Add(&e); err != nil {
					b.Fatal(err)
				}
				events++
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(events)/float64(b.N), "events/tick")
}

// seekFile is a 30-minute, 5-player generated recording, shared by the
// seek benchmarks.
func seekFile(b *testing.B) []byte {
	b.Helper()
	data, err := hcrpgen.Generate(hcrpgen.Config{Seed: 42, Ticks: 30 * 60 * hcrp.TickRate, Players: 5}, nil)
	if err != nil {
		b.Fatal(err)
	}
	return data
}

// BenchmarkSeek measures Reader.Seek to random ticks: read the snapshot
// chunk, decompress it and replay its events up to the tick.
func BenchmarkSeek(b *testing.B) {
	data := seekFile(b)
	rd, err := hcrp.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		b.Fatal(err)
	}
	defer rd.Close()
	rng := rand.New(rand.NewPCG(7, 7))
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tick := rng.Int64N(rd.Ticks())
		t0 := time.Now()
		if _, err := rd.Seek(ctx, tick); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	reportLatency(b, lat)
}

// BenchmarkSeekFromStart is the baseline for BenchmarkSeek: rebuild the
// state at a random tick by replaying from tick 0, as a format without
// snapshots (ReplayMod's .mcpr) must.
func BenchmarkSeekFromStart(b *testing.B) {
	data := seekFile(b)
	rd, err := hcrp.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		b.Fatal(err)
	}
	defer rd.Close()
	rng := rand.New(rand.NewPCG(7, 7))
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tick := rng.Int64N(rd.Ticks())
		t0 := time.Now()
		st := hcrp.NewState()
		if err := rd.Events(ctx, formats.Ticks(0, tick), func(_ int64, e *hcrp.Event) error { st.Apply(e); return nil }); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	reportLatency(b, lat)
}

// BenchmarkSeekFrames measures the archive path: Codec.Frames of one tick
// at a random position through a formats.Source (state frame included).
func BenchmarkSeekFrames(b *testing.B) {
	data := seekFile(b)
	rec := &formatstest.Recording{}
	if _, err := (hcrp.Codec{}).Split(ctx, bytes.NewReader(data), rec); err != nil {
		b.Fatal(err)
	}
	src := rec.Source()
	rng := rand.New(rand.NewPCG(8, 8))
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tick := rng.Int64N(int64(30 * 60 * hcrp.TickRate))
		t0 := time.Now()
		if err := (hcrp.Codec{}).Frames(ctx, src, formats.Ticks(tick, tick), func(formats.Frame) error { return nil }); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	reportLatency(b, lat)
}

func reportLatency(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	if len(lat) == 0 {
		return
	}
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkSplit measures ingest: Split of a 5-minute recording (preamble
// and chunk pieces, decompressing every chunk for metadata).
func BenchmarkSplit(b *testing.B) {
	data, err := hcrpgen.Generate(hcrpgen.Config{Seed: 43, Ticks: 5 * 60 * hcrp.TickRate, Players: 5}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := (hcrp.Codec{}).Split(ctx, bytes.NewReader(data), formatstest.Discard{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCompact recompresses a 5-minute recording at the best level and
// reports the size ratio to the recording level.
func BenchmarkCompact(b *testing.B) {
	data, err := hcrpgen.Generate(hcrpgen.Config{Seed: 44, Ticks: 5 * 60 * hcrp.TickRate, Players: 5}, nil)
	if err != nil {
		b.Fatal(err)
	}
	rd, err := hcrp.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		b.Fatal(err)
	}
	defer rd.Close()
	var out bytes.Buffer
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out.Reset()
		if err := hcrp.Compact(ctx, rd, &out, hcrp.CompactOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(out.Len())/float64(len(data)), "size-ratio")
}
