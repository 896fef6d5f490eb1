package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/replayarchive/replay/formats/teehistorian"
)

// clockStart is the header start_time of the generated recordings of the
// wall-clock tests: a second boundary, so tick t is at clockStart + t/50 s.
var clockStart = time.Date(2023, 11, 27, 21, 47, 0, 0, time.UTC)

// generatedGame writes a generated teehistorian game of length d starting
// at clockStart, with a console command ("rank N") every 3 s of game time,
// and returns its path.
func generatedGame(t *testing.T, d time.Duration) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "game.teehistorian")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	err = teehistorian.Generate(f, teehistorian.GenOptions{Duration: d, Players: 4, Seed: 13, Start: clockStart, CommandsPerHour: 1200})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// tickClock is the wall-clock time of tick t of a generated game, to the
// second as search prints it.
func tickClock(t int64) string {
	return clockStart.Add(teehistorian.TickTime(t)).Truncate(time.Second).Format(time.RFC3339)
}

// TestSearchShowsWallClock checks issue 13's "hits show the wall-clock
// time": every event line of archivectl search carries the time of day
// (UTC, to the second) at which its tick happened, computed here from the
// header's start time and the tick rate, next to its offset.
func TestSearchShowsWallClock(t *testing.T) {
	c := newCLI(t)
	c.ok("ingest", generatedGame(t, 2*time.Minute))
	out := c.ok("search", "cmd:rank")
	line := regexp.MustCompile(`(?m)^    tick (\d+)\s+(\d+:\d\d:\d\d)\s+(\S+)\s+command\s`)
	ms := line.FindAllStringSubmatch(out, -1)
	if len(ms) == 0 {
		t.Fatalf("no event lines in the search output:\n%s", out)
	}
	for _, m := range ms {
		tick, _ := strconv.ParseInt(m[1], 10, 64)
		if want := tickClock(tick); m[3] != want {
			t.Errorf("tick %d (offset %s) shows %q, want %s:\n%s", tick, m[2], m[3], want, out)
		}
		at, err := time.Parse(time.RFC3339, m[3])
		if err != nil {
			continue
		}
		if off := at.Sub(clockStart); fmtOffset(off.Milliseconds()) != m[2] {
			t.Errorf("tick %d: offset %s and wall-clock %s disagree", tick, m[2], m[3])
		}
	}
	if !strings.Contains(out, "2023-11-27T21:47:0") {
		t.Errorf("no hit in the first seconds of the game:\n%s", out)
	}
}
