// Package memtest measures the memory code under test takes, for tests
// that hold a parser, decoder or store to a bound whatever its input
// claims. There are two measures: Allocated, everything allocated, and
// Peak, the most held at once.
package memtest

import (
	"runtime"
	"runtime/metrics"
	"time"

	"github.com/replayarchive/replay/internal/racedetect"
)

// Allocated runs f and returns the bytes the process allocated meanwhile
// (the difference of runtime.MemStats.TotalAlloc): an upper bound on f's
// peak heap, which a bomb test holds below what the bomb claims. Other
// goroutines' allocations count too.
func Allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// heapObjects is the one metric Peak samples: the bytes of heap objects,
// live or dead but not yet swept (runtime.MemStats.HeapAlloc, read
// without stopping the world). It falls only when the collector sweeps,
// so a buffer dropped between two samples is still counted.
const heapObjects = "/memory/classes/heap/objects:bytes"

// sampleEvery is how often Peak samples heapObjects.
const sampleEvery = time.Millisecond

// Peak runs f and returns the most heap held at once while it ran, above
// what was live before: the bound a streaming decoder is held to, where
// Allocated would also count every buffer it freed on the way. It
// collects first, samples every millisecond and when f returns, and
// counts other goroutines' heap too. f may end with t.Fatal: the sampling
// stops either way.
func Peak(f func()) (peak uint64) {
	runtime.GC()
	base := readHeap(make([]metrics.Sample, 1))
	done := make(chan struct{})
	highest := make(chan uint64)
	go func() {
		s := make([]metrics.Sample, 1)
		hi := readHeap(s)
		tick := time.NewTicker(sampleEvery)
		defer tick.Stop()
		for {
			select {
			case <-done:
				highest <- max(hi, readHeap(s))
				return
			case <-tick.C:
				hi = max(hi, readHeap(s))
			}
		}
	}()
	defer func() {
		close(done)
		if hi := <-highest; hi > base {
			peak = hi - base
		}
	}()
	f()
	return 0 // the deferred stop sets peak
}

// readHeap reads heapObjects into s, a one-sample buffer that the
// sampler reuses so that sampling allocates nothing.
func readHeap(s []metrics.Sample) uint64 {
	s[0].Name = heapObjects
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// Bound returns a memory bound for a test to hold code to: n, or twice n
// under the race detector, which makes the same code allocate more (an
// MPQ bomb test allocated 75.9 MiB under it against 48 MiB allowed).
func Bound[N ~int | ~int64 | ~uint64](n N) N {
	if racedetect.Enabled {
		return 2 * n
	}
	return n
}
