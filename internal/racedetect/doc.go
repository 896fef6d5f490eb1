// Package racedetect tells tests whether the race detector is on, so
// that their time and memory bounds can allow for what it costs: it makes
// decompression some 30 times slower and makes code allocate more (it
// drops a quarter of what is put back in a sync.Pool).
package racedetect
