package blob_test

import (
	"io"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/replayarchive/replay/archive/blob"
	"github.com/replayarchive/replay/internal/s3test"
)

// benchObjectSize is the object the benchmarks read: a sealed recording's
// chunks concatenated are of this order.
const benchObjectSize = 64 << 20

// BenchmarkStores measures what the remote tier costs against the local
// one: ranged GET latency (one chunk of a seek, 4 KiB and 64 KiB) and
// whole-object GET throughput (an export), on Dir and on versitygw over
// loopback. Dir reads from the page cache after the first pass.
//
//	go test -run '^$' -bench Stores -benchtime 2s ./archive/blob/
func BenchmarkStores(b *testing.B) {
	b.Run("dir", func(b *testing.B) {
		d, err := blob.NewDir(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		benchStore(b, d)
	})
	b.Run("versitygw", func(b *testing.B) {
		srv := s3test.StartVersitygw(b)
		s, err := blob.NewS3(b.Context(), "s3://"+testBucket+"/bench", blob.S3Options{Endpoint: srv.Endpoint, Region: "us-east-1", CredentialsFile: srv.CredentialsFile})
		if err != nil {
			b.Fatal(err)
		}
		benchStore(b, s)
	})
}

// benchStore writes one object and runs the read benchmarks on it.
func benchStore(b *testing.B, s blob.Store) {
	if err := s.Put(b.Context(), "bench/obj", io.LimitReader(rand.NewChaCha8([32]byte{1}), benchObjectSize), -1); err != nil {
		b.Fatal(err)
	}
	b.Run("range4KiB", func(b *testing.B) { benchRange(b, s, 4<<10) })
	b.Run("range64KiB", func(b *testing.B) { benchRange(b, s, 64<<10) })
	b.Run("get", func(b *testing.B) {
		b.SetBytes(benchObjectSize)
		for b.Loop() {
			rc, err := s.Get(b.Context(), "bench/obj")
			if err != nil {
				b.Fatal(err)
			}
			n, err := io.Copy(io.Discard, rc)
			rc.Close()
			if err != nil || n != benchObjectSize {
				b.Fatalf("read %d bytes, %v", n, err)
			}
		}
	})
}

// benchRange times ranged GETs of n bytes at random offsets, from the
// request to the last byte read, and reports p50 and p99.
func benchRange(b *testing.B, s blob.Store, n int64) {
	rng := rand.New(rand.NewPCG(3, 4))
	var lat []time.Duration
	b.SetBytes(n)
	for b.Loop() {
		off := rng.Int64N(benchObjectSize - n)
		start := time.Now()
		rc, err := s.GetRange(b.Context(), "bench/obj", off, n)
		if err != nil {
			b.Fatal(err)
		}
		got, err := io.Copy(io.Discard, rc)
		rc.Close()
		if err != nil || got != n {
			b.Fatalf("range read %d bytes, %v", got, err)
		}
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Nanoseconds()) / 1e3 }
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
}
