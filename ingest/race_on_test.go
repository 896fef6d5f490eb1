//go:build race

package ingest

// raceSlowdown scales the time bounds of tests: the race detector makes
// decompression some 30 times slower (TestCompressedBombs' xz bomb took
// 13.7 s under it, 0.4 s without).
const raceSlowdown = 10
