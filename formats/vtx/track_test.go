package vtx

import (
	"slices"
	"testing"

	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/formatstest"
)

// TestTrack: entities with a Position are placed and named, on both
// backends.
func TestTrack(t *testing.T) {
	for _, name := range []string{"arena_from_fbs_ds.vtx", "arena_from_proto_ds.vtx"} {
		t.Run(name, func(t *testing.T) {
			c := New()
			rec := formatstest.Split(t, c, readCorpus(t, name))
			pts := formatstest.Tracks(t, c, rec.Source(), formats.Ticks(10, 20))
			labels := formatstest.Labels(pts)
			if len(labels) < 2 {
				t.Fatalf("labels %q: want the arena's players", labels)
			}
			for _, p := range pts {
				if p.Track[0] != 'v' || !p.HasZ {
					t.Fatalf("point %+v", p)
				}
			}
			t.Logf("%d points, labels %q", len(pts), labels)
			if !slices.IsSortedFunc(pts, func(a, b formats.Point) int { return int(a.Tick - b.Tick) }) {
				t.Fatal("points out of tick order")
			}
		})
	}
}

// TestTrackBadChunks: damaged chunks give errors, never a panic.
func TestTrackBadChunks(t *testing.T) {
	c := New()
	rec := formatstest.Split(t, c, readCorpus(t, "arena_from_fbs_ds.vtx"))
	rec.ChunkBytes, rec.ChunkIndex = rec.ChunkBytes[:1], rec.ChunkIndex[:1]
	formatstest.CheckTrackBadChunks(t, c, rec, 1999)
}
