//go:build !race

package memtest

// raceScale is 1 without the race detector (see race_on.go).
const raceScale = 1
