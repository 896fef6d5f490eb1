//go:build race

package memtest

// raceScale is how much more the race detector makes code allocate: it
// makes sync.Pool drop a quarter of what is put back, among other things
// (an MPQ bomb test allocated 75.9 MiB under it against 48 MiB allowed).
const raceScale = 2
