package archive

import (
	"context"
	"io"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/replayarchive/replay/formats/all"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
	"github.com/replayarchive/replay/internal/s3test"
)

// BenchmarkTier compares reading a recording from the local shard with
// reading it from the remote store (versitygw on loopback when installed,
// else gofakes3): a seek (open + one chunk) with a cold and a warm chunk
// cache, reported as p50/p99, and a whole export's throughput.
//
//	go test -run '^$' -bench Tier -benchtime 200x ./archive/
func BenchmarkTier(b *testing.B) {
	native := teehistoriangen.Must(b, teehistoriangen.Options{Duration: time.Hour, Seed: 7})
	srv := s3test.Start(b)
	store := srv.NewStore(b)
	now := func() time.Time { return time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC) }
	open := func(remote bool) (*Archive, uuid.UUID) {
		o := Options{NoSync: true, Now: now}
		if remote {
			o.Remote = store
		}
		a, err := Open(b.TempDir(), o)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { a.Close() })
		id := ingestWith(b, a, all.ByName("teehistorian"), native, nil).ID
		if remote {
			if rep, err := a.Upload(context.Background(), UploadOptions{OlderThan: time.Hour}); err != nil || rep.Recordings != 1 {
				b.Fatalf("upload: %+v, %v", rep, err)
			}
		}
		return a, id
	}
	local, lid := open(false)
	remote, rid := open(true)
	chunks := func(a *Archive, id uuid.UUID) int {
		r, err := a.Open(id)
		if err != nil {
			b.Fatal(err)
		}
		return len(r.Chunks())
	}
	b.Logf("%d native bytes, %d chunks", len(native), chunks(local, lid))

	seek := func(b *testing.B, a *Archive, id uuid.UUID, cold bool) {
		rng := rand.New(rand.NewPCG(1, 2))
		n := chunks(a, id)
		lat := make([]time.Duration, 0, b.N)
		for b.Loop() {
			if cold {
				b.StopTimer()
				a.DropCache()
				b.StartTimer()
			}
			t0 := time.Now()
			r, err := a.Open(id)
			if err == nil {
				_, _, err = r.ReadChunk(context.Background(), rng.IntN(n))
			}
			if err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(t0))
		}
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	}
	b.Run("seek/local", func(b *testing.B) { seek(b, local, lid, false) })
	b.Run("seek/remote-cold", func(b *testing.B) { seek(b, remote, rid, true) })
	b.Run("seek/remote-warm", func(b *testing.B) {
		r, err := remote.Open(rid)
		if err != nil {
			b.Fatal(err)
		}
		for i := range r.Chunks() { // fill the cache
			if _, _, err := r.ReadChunk(context.Background(), i); err != nil {
				b.Fatal(err)
			}
		}
		seek(b, remote, rid, false)
	})
	export := func(b *testing.B, a *Archive, id uuid.UUID) {
		b.SetBytes(int64(len(native)))
		for b.Loop() {
			r, err := a.Open(id)
			if err == nil {
				_, err = r.WriteTo(context.Background(), io.Discard)
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("export/local", func(b *testing.B) { export(b, local, lid) })
	b.Run("export/remote", func(b *testing.B) { export(b, remote, rid) })
}
