package query

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sync/atomic"
	"testing"
	"time"

	"github.com/replayarchive/replay/archive"
)

// BenchmarkRebuild rebuilds the index of the archive in
// REPLAY_BENCH_ARCHIVE (one made by server's BenchmarkSearchAtScale with
// REPLAY_BENCH_GENONLY=1, say) and reports the time and the peak of the
// heap in use, sampled every 50 ms. It replaces the archive's index.
//
//	REPLAY_BENCH_ARCHIVE=/tmp/scale/a100000 go test ./query -run '^$' -bench Rebuild -benchtime 1x
func BenchmarkRebuild(b *testing.B) {
	dir := os.Getenv("REPLAY_BENCH_ARCHIVE")
	if dir == "" {
		b.Skip("REPLAY_BENCH_ARCHIVE names no archive")
	}
	a, err := archive.Open(dir, archive.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	for b.Loop() {
		var peak atomic.Uint64
		done := make(chan struct{})
		go func() {
			var ms runtime.MemStats
			for {
				runtime.ReadMemStats(&ms)
				if ms.HeapInuse > peak.Load() {
					peak.Store(ms.HeapInuse)
					if p := os.Getenv("REPLAY_BENCH_PEAKPROF"); p != "" && ms.HeapInuse > 100<<20 {
						if f, err := os.Create(p); err == nil {
							pprof.WriteHeapProfile(f)
							f.Close()
						}
					}
				}
				select {
				case <-done:
					return
				case <-time.After(50 * time.Millisecond):
				}
			}
		}()
		// Rebuild's steps, to see each one's peak.
		ixDir := filepath.Join(dir, "index")
		if err := os.RemoveAll(ixDir); err != nil {
			b.Fatal(err)
		}
		ix, err := OpenWith(ixDir, Options{})
		if err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		n, err := rebuildInto(context.Background(), ix, a)
		if err != nil {
			b.Fatal(err)
		}
		build, buildPeak := time.Since(t0), peak.Swap(0)
		t1 := time.Now()
		if err := ix.Compact(context.Background()); err != nil {
			b.Fatal(err)
		}
		close(done)
		if err := ix.Close(); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(build.Seconds(), "build-s")
		b.ReportMetric(time.Since(t1).Seconds(), "compact-s")
		b.ReportMetric(float64(n), "recordings")
		b.ReportMetric(float64(buildPeak)/(1<<20), "build-peak-heap-MiB")
		b.ReportMetric(float64(peak.Load())/(1<<20), "compact-peak-heap-MiB")
	}
}

// BenchmarkCompact merges the segments of the index in
// REPLAY_BENCH_INDEX into one, as Rebuild ends (a rebuild stopped before
// its compaction leaves them), and reports the time.
func BenchmarkCompact(b *testing.B) {
	dir := os.Getenv("REPLAY_BENCH_INDEX")
	if dir == "" {
		b.Skip("REPLAY_BENCH_INDEX names no index")
	}
	for b.Loop() {
		ix, err := Open(dir)
		if err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		if err := ix.Compact(context.Background()); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(time.Since(t0).Seconds(), "compact-s")
		if err := ix.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
