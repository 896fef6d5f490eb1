//go:build !race

package ingest

// raceSlowdown scales the time bounds of tests (see race_on_test.go).
const raceSlowdown = 1
