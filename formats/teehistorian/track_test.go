package teehistorian_test

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/formatstest"
	"github.com/replayarchive/replay/formats/teehistorian"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
)

// TestTrack: characters become points named by start-info messages in
// the range, else by the join events around the tick (when the source
// has events), else "client N"; PLAYER_OLD breaks the track.
func TestTrack(t *testing.T) {
	corpus := formatstest.CorpusFiles(t, "teehistorian", "7cee836b-*.teehistorian")
	var samii []byte
	for _, b := range corpus {
		samii = b
	}
	var gen bytes.Buffer
	if err := teehistoriangen.Generate(&gen, teehistoriangen.Options{Duration: 20 * time.Second, Players: 4, Seed: 3, Messages: true}); err != nil {
		t.Fatal(err)
	}
	c := teehistorian.New()
	tests := []struct {
		name   string
		file   []byte
		r      formats.Range
		events bool
		want   []string // labels that must be among the points'
		not    []string // labels that must not
	}{
		{"corpus, the player's join in range", samii, formats.Ticks(0, 600), false, []string{"samii"}, nil},
		{"corpus mid-game, named by the events", samii, formats.Ticks(350, 400), true, []string{"samii"}, []string{"client 0"}},
		{"corpus mid-game without events", samii, formats.Ticks(350, 400), false, []string{"client 0"}, []string{"samii"}},
		{"generated", gen.Bytes(), formats.All(), false, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := formatstest.Split(t, c, tt.file)
			src := rec.Source()
			if tt.events {
				src = rec.EventSource()
			}
			pts := formatstest.Tracks(t, c, src, tt.r)
			if len(pts) == 0 {
				t.Fatal("no points")
			}
			labels := formatstest.Labels(pts)
			for _, w := range tt.want {
				if !slices.Contains(labels, w) {
					t.Errorf("labels %q lack %q", labels, w)
				}
			}
			for _, n := range tt.not {
				if slices.Contains(labels, n) {
					t.Errorf("labels %q hold %q", labels, n)
				}
			}
			gaps := 0
			for _, p := range pts {
				if p.Track[0] != 'c' {
					t.Fatalf("track %q is not a client's", p.Track)
				}
				if p.Gap {
					gaps++
				}
			}
			t.Logf("%d points, %d gaps, labels %q", len(pts), gaps, labels)
		})
	}
}

// TestTrackBadChunks: damaged chunks give errors, never a panic.
func TestTrackBadChunks(t *testing.T) {
	var gen bytes.Buffer
	if err := teehistoriangen.Generate(&gen, teehistoriangen.Options{Duration: 2 * time.Second, Players: 2, Seed: 4}); err != nil {
		t.Fatal(err)
	}
	c := &teehistorian.Codec{ChunkSize: 2048}
	formatstest.CheckTrackBadChunks(t, c, formatstest.Split(t, c, gen.Bytes()), 7)
}
