// Package memtest measures what code under test allocates, for tests that
// hold a parser's or decoder's memory to a bound whatever its input claims.
package memtest

import (
	"runtime"

	"github.com/replayarchive/replay/internal/racedetect"
)

// Allocated runs f and returns the bytes the process allocated meanwhile
// (the difference of runtime.MemStats.TotalAlloc): an upper bound on f's
// peak heap, which a bomb test holds below what the bomb claims. It
// collects first, so earlier garbage does not count; other goroutines'
// allocations do.
func Allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
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
