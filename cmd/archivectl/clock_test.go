package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/formats/teehistorian"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
	"github.com/replayarchive/replay/internal/units"
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
	err = teehistoriangen.Generate(f, teehistoriangen.Options{Duration: d, Players: 4, Seed: 13, Start: clockStart, CommandsPerHour: 1200})
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

// TestSearchShowsWallClock checks that "hits show the wall-clock
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

// recordingID is the id of the one recording in c's archive.
func recordingID(t *testing.T, c cli) string {
	t.Helper()
	var res struct {
		Hits []struct {
			ID string `json:"id"`
		} `json:"hits"`
	}
	if err := json.Unmarshal([]byte(c.ok("search", "", "--json")), &res); err != nil || len(res.Hits) != 1 {
		t.Fatalf("search --json: %v, %d hits", err, len(res.Hits))
	}
	return res.Hits[0].ID
}

// fileTicks parses a teehistorian file with the codec's reader to its end
// and returns the ticks of its records (FINISH left out), in file order;
// the file must end with FINISH.
func fileTicks(t *testing.T, path string) []int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd, err := teehistorian.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var ticks []int64
	for {
		it, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s is not a valid teehistorian file: %v", path, err)
		}
		if it.Type != teehistorian.ItemFinish {
			ticks = append(ticks, it.Tick)
		}
	}
	if !rd.Finished() {
		t.Fatalf("%s ends without FINISH", path)
	}
	return ticks
}

// TestClipsByTime checks clips by time end to end through
// archivectl export on a generated recording: --from/--to as offsets and
// --at/--around as a wall-clock time give the ticks computed from the
// header's start time and the tick rate; the clip is a valid file whose
// records run from the first record at or after that tick (after the
// state synthesized the tick before) to the last one at or before the
// end tick, and it ingests; an --at outside the recording fails, naming
// its span, and writes nothing.
func TestClipsByTime(t *testing.T) {
	c := newCLI(t)
	game := generatedGame(t, 2*time.Minute)
	c.ok("ingest", game)
	id := recordingID(t, c)
	orig := fileTicks(t, game)
	last := slices.Max(orig)
	rate := int64(teehistorian.TickRate)
	out := t.TempDir()

	for _, tc := range []struct {
		name     string
		args     []string
		from, to int64 // the ticks the clip should run from and to
	}{
		{"offsets", []string{"--from", "1m04s", "--to", "1m30s"}, 64 * rate, 90 * rate},
		// 21:48:10 is 70 s after the start: 40 s to 100 s.
		{"at", []string{"--at", "2023-11-27T21:48:10Z", "--around", "30s"}, 40 * rate, 100 * rate},
		// 10 s before the end: the clip stops at the last tick.
		{"at near the end", []string{"--at", clockStart.Add(110 * time.Second).Format(time.RFC3339), "--around", "20s"}, 90 * rate, last},
		// 15 s after the start: the clip starts at the start.
		{"at the start", []string{"--at", "2023-11-27T21:47:15Z", "--around", "20s"}, 0, 35 * rate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(out, strings.ReplaceAll(tc.name, " ", "-")+".teehistorian")
			_, errs, code := c.run(append([]string{"export", id, "-o", path}, tc.args...)...)
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, errs)
			}
			if want := fmt.Sprintf("ticks %d..%d", tc.from, tc.to); !strings.Contains(errs, want) {
				t.Errorf("the summary %q does not say %s", errs, want)
			}
			var first, end int64 = -1, -1 // the original's first record at/after from, last at/before to
			for _, tick := range orig {
				if tick >= tc.from && first < 0 {
					first = tick
				}
				if tick <= tc.to {
					end = tick
				}
			}
			got := fileTicks(t, path)
			if first < 0 || len(got) == 0 {
				t.Fatalf("the range has no records (%d in the clip): pick another", len(got))
			}
			var clipFirst int64 = -1
			for _, tick := range got {
				if tick >= tc.from {
					clipFirst = tick
					break
				}
				if tick != tc.from-1 {
					t.Fatalf("a record at tick %d before the clip's start %d (only the state at %d belongs there)", tick, tc.from, tc.from-1)
				}
			}
			if clipFirst != first || slices.Max(got) != end {
				t.Errorf("the clip's records run from tick %d to %d, want %d to %d", clipFirst, slices.Max(got), first, end)
			}
			// The clip is a file of the format the archive takes.
			if _, errs, code := newCLI(t).run("ingest", path); code != exitOK {
				t.Errorf("ingest of the clip: exit %d: %s", code, errs)
			}
		})
	}

	for _, at := range []string{"2023-11-27T21:46:59Z", "2023-11-27T21:49:01Z", "2024-01-01T00:00:00Z"} {
		path := filepath.Join(out, "outside-"+at+".teehistorian")
		_, errs, code := c.run("export", id, "--at", at, "--around", "30s", "-o", path)
		if code == exitOK || !strings.Contains(errs, at+" is outside the recording (2023-11-27T21:47:00Z to 2023-11-27T21:49:00Z)") {
			t.Errorf("--at %s: exit %d, %q does not name the recording's span", at, code, errs)
		}
		if left, _ := filepath.Glob(filepath.Join(out, "*outside*")); len(left) > 0 {
			t.Errorf("--at %s outside the recording left %v", at, left)
		}
		if left, _ := filepath.Glob(filepath.Join(out, ".*")); len(left) > 0 {
			t.Errorf("--at %s outside the recording left %v", at, left)
		}
	}
}

// TestSearchOffersClipWithinEnd checks that the clip a search hit offers
// for the recording's last command, in its final seconds, has the
// format's extension and stops at the end (no "past the last tick"), and
// runs.
func TestSearchOffersClipWithinEnd(t *testing.T) {
	c := newCLI(t)
	c.ok("ingest", generatedGame(t, 2*time.Minute))
	var res struct {
		Hits []struct {
			DurationMS int64 `json:"duration_ms"`
			Events     []struct {
				Tick int64  `json:"tick"`
				Text string `json:"text"`
			} `json:"events"`
		} `json:"hits"`
	}
	if err := json.Unmarshal([]byte(c.ok("search", "cmd:rank", "--json", "--limit", "1")), &res); err != nil || len(res.Hits) != 1 {
		t.Fatalf("search --json: %v, %d hits", err, len(res.Hits))
	}
	h := res.Hits[0]
	lastEv := h.Events[len(h.Events)-1]
	for _, ev := range h.Events {
		if ev.Tick > lastEv.Tick {
			lastEv = ev
		}
	}
	dur := time.Duration(h.DurationMS) * time.Millisecond
	if end := teehistorian.TickTime(lastEv.Tick); dur-end >= replay.ClipMargin*time.Second {
		t.Fatalf("the last command (%q, tick %d) is %s before the end: the test wants one in the last %d s", lastEv.Text, lastEv.Tick, dur-end, replay.ClipMargin)
	}
	out := c.ok("search", `cmd:"`+lastEv.Text+`"`)
	m := regexp.MustCompile(`archivectl (export \S+ --from (\S+) --to (\S+)) -o (\S+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no clip offered:\n%s", out)
	}
	if ext := filepath.Ext(m[4]); ext != ".teehistorian" {
		t.Errorf("the offered clip's file %s has extension %q", m[4], ext)
	}
	to, err := units.ParseDuration(m[3])
	if err != nil || to > dur {
		t.Errorf("the offered --to %s runs past the end (%s): %v", m[3], dur, err)
	}
	path := filepath.Join(t.TempDir(), m[4])
	_, errs, code := c.run(append(strings.Fields(m[1]), "-o", path)...)
	if code != exitOK || strings.Contains(errs, "past") {
		t.Fatalf("the offered %q: exit %d, %s", m[1], code, errs)
	}
	if ticks := fileTicks(t, path); slices.Max(ticks) < lastEv.Tick {
		t.Errorf("the offered %s (duration %s) ends at tick %d, before its event at %d: %s\n%s", m[0], dur, slices.Max(ticks), lastEv.Tick, errs, out)
	}
}
