package butter

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/formatstest"
)

// TestTrack: each codec of the family places every player by body (else
// head) and the disc, players named and in their teams.
func TestTrack(t *testing.T) {
	dir := corpusDir(t)
	read := func(p string) []byte {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	echo := readZst(t, filepath.Join(dir, "reference", "input", "milk_2020-09-07.echoreplay.zst"))
	tests := []struct {
		name  string
		codec interface {
			formats.Codec
			formats.Tracker
		}
		file []byte
		r    formats.Range
	}{
		{"butter", New(), read(filepath.Join(dir, "reference", "butter", "milk_2020-09-07.zstd_22.k300.butter")), formats.Ticks(100, 130)},
		{"echoreplay", NewEchoReplay(), echo, formats.Ticks(100, 130)},
		{"milk", NewMilk(), read(filepath.Join(dir, "example.milk")), formats.Ticks(100, 130)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := formatstest.Split(t, tt.codec, tt.file)
			pts := formatstest.Tracks(t, tt.codec, rec.Source(), tt.r)
			labels := formatstest.Labels(pts)
			if len(labels) < 2 || !slices.Contains(labels, "disc") {
				t.Fatalf("labels %q: want players and the disc", labels)
			}
			teams := map[string]bool{}
			for _, p := range pts {
				teams[p.Team] = true
				if !p.HasZ {
					t.Fatalf("%+v has no height", p)
				}
			}
			t.Logf("%d points, labels %q, teams %v", len(pts), labels, teams)
		})
	}
}

// TestTrackBadChunks: damaged chunks give errors, never a panic.
func TestTrackBadChunks(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(corpusDir(t), "reference", "butter", "milk_2020-09-07.none.k30.butter"))
	if err != nil {
		t.Fatal(err)
	}
	c := New()
	rec := formatstest.Split(t, c, b)
	rec.ChunkBytes, rec.ChunkIndex = rec.ChunkBytes[:2], rec.ChunkIndex[:2]
	formatstest.CheckTrackBadChunks(t, c, rec, 997)
}

// TestArenaField: a recording of the Echo Arena has the arena (its
// extent, half-way line and goals) and the real capture's positions
// agree with it: the disc never leaves the outline nor passes a goal's
// plane, players inside the arena's length are inside its width, the
// blue team starts the round at the blue goal's end and the orange team
// at the other; the tracks see the arena from above, its length across.
func TestArenaField(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(corpusDir(t), "example.milk"))
	if err != nil {
		t.Fatal(err)
	}
	c := NewMilk()
	rec := formatstest.Split(t, c, b)
	f, err := c.Field(context.Background(), rec.Source())
	if err != nil || f == nil {
		t.Fatalf("field %v, %v", f, err)
	}
	if f.MinX != -40 || f.MaxX != 40 || f.MinY != -15 || f.MaxY != 15 {
		t.Errorf("box %g..%g × %g..%g, want the arena's 80 m across and 30 m down", f.MinX, f.MaxX, f.MinY, f.MaxY)
	}
	goals := map[string]float64{}
	for _, s := range f.Shapes {
		if s.Kind == "goal" {
			goals[s.Label] = s.Points[0][0]
		}
	}
	if goals["blue goal"] != -36 || goals["orange goal"] != 36 {
		t.Errorf("goals %v", goals)
	}
	pts := formatstest.Tracks(t, c, rec.Source(), formats.Ticks(0, -1))
	first := map[string][]float64{} // team -> X of its players as the round starts
	discs, players := 0, 0
	for _, p := range pts {
		if p.Track == "disc" {
			discs++
			if p.X < f.MinX || p.X > f.MaxX || p.Y < f.MinY || p.Y > f.MaxY || p.X <= goals["blue goal"] || p.X >= goals["orange goal"] {
				t.Errorf("the disc at tick %d is at (%g, %g): outside the arena or past a goal", p.Tick, p.X, p.Y)
			}
			continue
		}
		if p.X > f.MinX && p.X < f.MaxX {
			players++
			if p.Y < f.MinY || p.Y > f.MaxY {
				t.Errorf("%s at tick %d is at (%g, %g): inside the arena's length, outside its width", p.Label, p.Tick, p.X, p.Y)
			}
		}
		if p.Tick == 150 { // round_start: the teams in their launch tubes
			first[p.Team] = append(first[p.Team], p.X)
		}
	}
	for team, xs := range first {
		side := goals[strings.ToLower(strings.TrimSuffix(team, " TEAM"))+" goal"]
		for _, x := range xs {
			if x*side <= 0 {
				t.Errorf("a %s player starts at X %g: not at the %s goal's end (%g)", team, x, team, side)
			}
		}
	}
	if len(first) != 2 || discs < 800 || players < 100 {
		t.Errorf("teams at the start %v, %d disc points, %d player points in the arena", first, discs, players)
	}
	// Another map has no arena drawn.
	rec.Metadata.Map = "mpl_combat_fission"
	if f, _ := c.Field(context.Background(), rec.Source()); f != nil {
		t.Errorf("a Combat map has the arena")
	}
}
