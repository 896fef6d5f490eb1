package sc2replay_test

import (
	"testing"

	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/formatstest"
	"github.com/replayarchive/replay/formats/sc2replay"
)

// TestTrack: the units of both players of a real LotV game are placed from
// its tracker events, inside the map, neutral ones left out; a range
// starting mid-game starts with every unit then alive, as the units the
// whole game's points leave alive at that loop; a unit that dies leaves a
// gap.
func TestTrack(t *testing.T) {
	files := formatstest.CorpusFiles(t, "sc2replay", "lotv-4.7.1.70326-iaguz-vs-luneth.SC2Replay")
	c := sc2replay.New()
	for name, b := range files {
		rec := formatstest.Split(t, c, b)
		last := rec.Source().Chunks()[0].EndTick()
		all := formatstest.Tracks(t, c, rec.Source(), formats.Ticks(0, last))
		teams := map[string]bool{}
		var minX, minY, maxX, maxY float64 = 1e9, 1e9, -1e9, -1e9
		gaps := 0
		for _, p := range all {
			teams[p.Team] = true
			if p.Gap {
				gaps++
			}
			minX, maxX = min(minX, p.X), max(maxX, p.X)
			minY, maxY = min(minY, p.Y), max(maxY, p.Y)
		}
		if !teams["p1"] || !teams["p2"] || len(teams) != 2 {
			t.Errorf("%s: teams %v, want p1 and p2 (no neutral units)", name, teams)
		}
		if gaps == 0 || len(all) < 500 {
			t.Errorf("%s: %d points, %d deaths", name, len(all), gaps)
		}
		if minX < 0 || minY < 0 || maxX > 256 || maxY > 256 {
			t.Errorf("%s: units over x %g..%g, y %g..%g: outside the map", name, minX, maxX, minY, maxY)
		}
		// The units alive at mid-game, from the whole game's points.
		mid := last / 2
		alive := map[string]formats.Point{}
		for _, p := range all {
			if p.Tick > mid {
				break
			}
			if p.Gap {
				delete(alive, p.Track)
			} else {
				alive[p.Track] = p
			}
		}
		from := formatstest.Tracks(t, c, rec.Source(), formats.Ticks(mid, mid+100))
		at := map[string]formats.Point{}
		for _, p := range from {
			if p.Tick == mid && !p.Gap {
				at[p.Track] = p
			}
		}
		if len(at) < 20 || len(at) != len(alive) {
			t.Errorf("%s: %d units placed at loop %d, %d alive by the whole game's points", name, len(at), mid, len(alive))
		}
		for k, p := range alive {
			q, ok := at[k]
			if !ok || q.X != p.X || q.Y != p.Y || q.Label != p.Label || q.Team != p.Team {
				t.Errorf("%s: unit %s at loop %d: %+v, want %+v", name, k, mid, q, p)
				break
			}
		}
		t.Logf("%s: %d points, %d units at loop %d, x %g..%g, y %g..%g", name, len(all), len(at), mid, minX, maxX, minY, maxY)
	}
}

// TestTrackBadChunks: damaged replays give errors, never a panic.
func TestTrackBadChunks(t *testing.T) {
	files := formatstest.CorpusFiles(t, "sc2replay", "lotv-5.0.0*.SC2Replay")
	c := sc2replay.New()
	for _, b := range files {
		formatstest.CheckTrackBadChunks(t, c, formatstest.Split(t, c, b), 4099)
	}
}
