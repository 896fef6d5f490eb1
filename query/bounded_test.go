package query

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2/search/query"
	index "github.com/blevesearch/bleve_index_api"
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
			plain, err := (&compiler{q: pq, keys: &ix.keys}).root()
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

// windowStart is the moment nearWindow's recordings are placed around.
var windowStart = time.Date(2024, 3, 5, 10, 0, 0, 0, time.UTC)

// nearWindow is genRecording(c, i) placed for the edges of time terms
// around windowStart: a third end at it, give or take a nanosecond or
// part of a millisecond; a sixth last no time, near it; some have no
// start; a sixth last whole minutes, or half a millisecond off.
func nearWindow(c genConfig, i int) RecordingDoc {
	edges := []time.Duration{0, -time.Nanosecond, time.Nanosecond, time.Millisecond / 2, -time.Millisecond / 2,
		time.Millisecond, -time.Millisecond, time.Millisecond + time.Nanosecond, -time.Millisecond - time.Nanosecond}
	r := genRecording(c, i)
	switch k := i % 6; {
	case k < 2:
		r.Start = windowStart.Add(-time.Duration(1+i%90) * time.Minute)
		r.Duration = windowStart.Sub(r.Start) + edges[i/6%len(edges)]
	case k == 2:
		r.Start = windowStart.Add(time.Duration(i%7-3) * time.Nanosecond)
		r.Duration = 0
	case k == 3 && i%4 == 1:
		r.Start = time.Time{}
	case k == 4:
		r.Duration = time.Duration(i%40)*time.Minute + time.Duration(i%3-1)*time.Millisecond/2
	}
	return r
}

// TestRunningFromNumbers: an at: or during: term alone, once the sort
// numbers of both the start and the duration orders are read, is
// answered from them (bestOfRunning), and finds, page by page, what the
// unbounded term finds through bleve's walk of its bitsSearcher:
// recordings that end exactly at the window's start, a nanosecond or
// part of a millisecond after or before it (where the millisecond does
// not decide and the stored duration is read), zero-length ones, and
// replaced and deleted ones over several segments. (TestTimeTermsMatchRecords
// checks both against the recordings themselves.)
func TestRunningFromNumbers(t *testing.T) {
	ix, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	ctx := context.Background()
	c := genConfig{Recordings: 600, Events: 1, Players: 40, Seed: 8}
	seq := uint64(0)
	for lo := 0; lo < c.Recordings; lo += 150 {
		var puts []RecordingDoc
		for i := lo; i < lo+150; i++ {
			puts = append(puts, nearWindow(c, i))
		}
		var dels []string
		if lo > 0 {
			dels = []string{genRecording(c, lo-5).ID, genRecording(c, lo-10).ID}
			puts = append(puts, genRecording(c, lo-20)) // put again
		}
		seq++
		if err := ix.Apply(ctx, seq, puts, dels); err != nil {
			t.Fatal(err)
		}
	}
	queries := []string{"at:2024-03-05T10", "at:2024-03-05T10:00", "at:2024-03-05T10:00:00Z", "at:2024-03-05T09:59:59.9995Z",
		"at:2024-03-05", "during:2024-03-05T09:30..2024-03-05T10:00", "during:2024-03-05T10:00..", "during:..2024-03-05T10:00"}
	// Both orders' numbers read: the searches below take bestOfRunning.
	adv, _ := ix.bi.Advanced()
	r, err := adv.Reader()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ix.keys.view(r, fSort)
	ix.keys.view(r, fSortDur)
	ix.keys.readers.Wait()
	view, _, _ := ix.keys.view(r, fSort)
	durs, _, _ := ix.keys.view(r, fSortDur)
	for _, q := range queries {
		pq, err := Parse(q)
		if err != nil {
			t.Fatal(err)
		}
		cq, err := ix.compiler(ctx, pq)
		if err != nil || !cq.bounded {
			t.Fatal(cq.bounded, err)
		}
		bq, err := cq.root()
		if err != nil {
			t.Fatal(err)
		}
		rq, ok := bq.(*runningQuery)
		if !ok {
			t.Fatalf("%q compiles to %T", q, bq)
		}
		top := &tsHeap{full: func(index.IndexInternalID) string { return "" }}
		if _, done, err := bestOfRunning(ctx, view, durs, rq, top, 10); err != nil || !done {
			t.Fatalf("%q: bestOfRunning: done %v, %v", q, done, err)
		}
		plain, err := (&compiler{q: pq, keys: &ix.keys}).root()
		if err != nil {
			t.Fatal(err)
		}
		for _, page := range [][2]int{{0, 20}, {0, 1}, {20, 20}, {0, 700}, {130, 25}} {
			for _, asc := range []bool{false, true} {
				so := Sort{Asc: asc}
				got, err := ix.SearchQuery(ctx, pq, page[0], page[1], so)
				if err != nil {
					t.Fatal(err)
				}
				want, total, err := ix.newest(ctx, query.NewConjunctionQuery([]query.Query{plain, termQ(fIsRec, "r")}), fSort, asc, page[0], page[1])
				if err != nil {
					t.Fatal(err)
				}
				var g, w []string
				for _, h := range got.Hits {
					g = append(g, h.ID)
				}
				for _, h := range want {
					w = append(w, h.id)
				}
				if got.Total != total || !slices.Equal(g, w) {
					t.Errorf("%q %v %v: %d hits %v\nwalked: %d %v", q, so, page, got.Total, g, total, w)
				}
			}
		}
	}
}
