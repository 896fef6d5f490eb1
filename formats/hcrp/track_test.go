package hcrp_test

import (
	"testing"

	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/formatstest"
	"github.com/replayarchive/replay/formats/hcrp"
	"github.com/replayarchive/replay/internal/gen/hcrpgen"
)

// TestTrack: entities are placed from snapshots and moves, named by the
// recording's players; a range starting between snapshots starts with
// every entity's position at its first tick.
func TestTrack(t *testing.T) {
	b, err := hcrpgen.Generate(hcrpgen.Config{Seed: 5, Ticks: 400, Players: 3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := hcrp.New()
	rec := formatstest.Split(t, c, b)
	tests := []struct {
		name string
		r    formats.Range
	}{
		{"from the start", formats.Ticks(0, 40)},
		{"mid-chunk", formats.Ticks(213, 260)},
		{"last tick", formats.Ticks(399, 399)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pts := formatstest.Tracks(t, c, rec.Source(), tt.r)
			labels := formatstest.Labels(pts)
			if len(labels) < 3 || pts[0].Tick != tt.r.From {
				t.Fatalf("labels %q, first point at tick %d: want the 3 players from tick %d", labels, pts[0].Tick, tt.r.From)
			}
			if labels[0] != rec.Metadata.Players[0].Name {
				t.Errorf("entity 0 is %q, the recorded player %q", labels[0], rec.Metadata.Players[0].Name)
			}
			t.Logf("%d points, labels %q", len(pts), labels)
		})
	}
}

// TestTrackBadChunks: damaged chunks give errors, never a panic.
func TestTrackBadChunks(t *testing.T) {
	b, err := hcrpgen.Generate(hcrpgen.Config{Seed: 6, Ticks: 60}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := hcrp.New()
	formatstest.CheckTrackBadChunks(t, c, formatstest.Split(t, c, b), 13)
}
