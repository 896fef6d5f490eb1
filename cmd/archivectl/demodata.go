// The recordings the demo ships with, made by our own writers and embedded
// in the binary. TestDemoDataIsGenerated proves the embedded bytes are the
// generators' output and rewrites them with -update.

package main

import (
	"bytes"
	"embed"
	"time"

	"github.com/replayarchive/replay/internal/gen/hcrpgen"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
)

//go:embed demodata
var demoFS embed.FS

// demoRecording is one embedded recording and how it was made.
type demoRecording struct {
	name     string
	generate func() ([]byte, error)
}

func teeGen(opt teehistoriangen.Options) func() ([]byte, error) {
	return func() ([]byte, error) {
		var b bytes.Buffer
		err := teehistoriangen.Generate(&b, opt)
		return b.Bytes(), err
	}
}

func hcrpGen(cfg hcrpgen.Config) func() ([]byte, error) {
	return func() ([]byte, error) { return hcrpgen.Generate(cfg, nil) }
}

func demoRecordings() []demoRecording {
	day := time.Date(2026, 10, 3, 19, 0, 0, 0, time.UTC)
	return []demoRecording{
		{"ctf-evening.teehistorian", teeGen(teehistoriangen.Options{Duration: 5 * time.Minute, Players: 12, Seed: 1, Start: day, MapName: "ctf5_spikes", Messages: true})},
		{"race-short.teehistorian", teeGen(teehistoriangen.Options{Duration: time.Minute, Players: 4, Seed: 2, Start: day.Add(26 * time.Hour), MapName: "Kobra 3 Solo"})},
		{"crashed-server.teehistorian", teeGen(teehistoriangen.Options{Duration: time.Minute, Players: 6, Seed: 3, Start: day.AddDate(0, 1, 0), MapName: "Tutorial", NoFinish: true})},
		// Two parkour runs of the same world at different paces (HCRP).
		{"parkour-fast.hcrp", hcrpGen(hcrpgen.Config{Seed: 5, Ticks: 2400, Players: 3, Pace: 1})},
		{"parkour-slow.hcrp", hcrpGen(hcrpgen.Config{Seed: 6, Ticks: 2400, Players: 3, Pace: 0.85})},
	}
}
