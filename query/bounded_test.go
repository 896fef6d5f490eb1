package query

import (
	"context"
	"slices"
	"testing"
	"time"
)

// TestBoundedRanges: at: and during: over the window the longest
// duration allows, and after: with before: folded into one range, find
// exactly what the unbounded queries find, also after a recording longer
// than all before it is added, and in an index that keeps no longest
// duration (created by an earlier build).
func TestBoundedRanges(t *testing.T) {
	ix, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	ctx := context.Background()
	c := genConfig{Recordings: 400, Events: 2, Players: 50, Seed: 3}
	var puts []RecordingDoc
	for i := range c.Recordings {
		r := genRecording(c, i)
		if i%40 == 0 {
			r.Duration = 0 // runs at its start
		}
		puts = append(puts, r)
	}
	if err := ix.Apply(ctx, 1, puts, nil); err != nil {
		t.Fatal(err)
	}
	queries := []string{"at:2024-03-05", "at:2024-03-05T10", "at:2024-06-01T00:30", "during:2024-02-01..2024-02-03",
		"during:2024-11-30T22:00..", "during:..2024-01-02", "after:2024-03-01 before:2024-03-08", "before:2024-05-01 after:2024-04-01 after:2024-04-10",
		"after:2024-03-01 -before:2024-02-01", "(at:2024-03-05 OR at:2024-07-01T12) player:ka*", "-(after:2024-02-01 before:2024-12-01)"}
	check := func(stage string) {
		t.Helper()
		for _, q := range queries {
			pq, err := Parse(q)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ix.SearchQuery(ctx, pq, 0, 500)
			if err != nil {
				t.Fatal(err)
			}
			plain, err := (&compiler{q: pq}).root()
			if err != nil {
				t.Fatal(err)
			}
			hits, total, err := ix.newest(ctx, plain, fSort, false, 0, 500)
			if err != nil {
				t.Fatal(err)
			}
			var g, w []string
			for _, h := range got.Hits {
				g = append(g, h.ID)
			}
			for _, h := range hits {
				w = append(w, h.id)
			}
			if got.Total != total || !slices.Equal(g, w) {
				t.Errorf("%s: %q: %d hits %v, unbounded %d %v", stage, q, got.Total, g, total, w)
			}
		}
	}
	check("generated")
	long := genRecording(c, 1000)
	long.Start = time.Date(2024, 2, 20, 0, 0, 0, 0, time.UTC)
	long.Duration = 30 * 24 * time.Hour
	if err := ix.Apply(ctx, 2, []RecordingDoc{long}, nil); err != nil {
		t.Fatal(err)
	}
	if l, ok, err := ix.longest(); err != nil || !ok || l != int64(long.Duration) {
		t.Fatalf("longest %v %v %v", time.Duration(l), ok, err)
	}
	check("with a 30-day recording")
	if err := ix.bi.DeleteInternal(longestKey); err != nil {
		t.Fatal(err)
	}
	if err := ix.Apply(ctx, 3, []RecordingDoc{genRecording(c, 1001)}, nil); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := ix.longest(); err != nil || ok {
		t.Fatalf("an index without a longest duration got one: %v %v", ok, err)
	}
	check("without a longest duration")
}
