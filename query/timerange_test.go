package query

import (
	"context"
	"encoding/binary"
	"slices"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
)

// holds reports whether the time term t holds for r, as the operators'
// docs define it, computed here from the recording itself.
func holds(t *Term, r RecordingDoc) bool {
	known := !r.Start.IsZero()
	end := r.Start.Add(max(r.Duration, time.Nanosecond))
	var in bool
	switch t.Op {
	case "after":
		in = known && !r.Start.Before(t.Time)
	case "before":
		in = known && r.Start.Before(t.Time)
	case "at", "during":
		in = known && (t.Until.IsZero() || r.Start.Before(t.Until)) && (t.Time.IsZero() || end.After(t.Time))
	case "longer":
		in = r.Duration/time.Millisecond > t.Dur/time.Millisecond
	case "shorter":
		in = r.Duration/time.Millisecond < t.Dur/time.Millisecond
	default:
		panic("holds: not a time term: " + t.Op)
	}
	return in != t.Neg
}

// TestTimeTermsMatchRecords: time terms, answered from the sort numbers
// (bitsSearcher under bleve's conjunctions and exclusions, and the walks
// of the start order, bestOfStarts and bestOfRunning), find exactly the
// recordings that the terms' definitions pick out of the recordings
// themselves: over several segments, with replaced and deleted ones,
// recordings without a start, of zero length, and ending a nanosecond or
// part of a millisecond either side of a window's start.
func TestTimeTermsMatchRecords(t *testing.T) {
	ix, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	ctx := context.Background()
	c := genConfig{Recordings: 500, Events: 2, Players: 30, Seed: 11}
	docs := map[string]RecordingDoc{}
	seq := uint64(0)
	for lo := 0; lo < c.Recordings; lo += 100 {
		var puts []RecordingDoc
		for i := lo; i < lo+100; i++ {
			r := nearWindow(c, i)
			puts = append(puts, r)
			docs[r.ID] = r
		}
		var dels []string
		if lo > 0 {
			for _, j := range []int{lo - 5, lo - 12} {
				id := genRecording(c, j).ID
				dels = append(dels, id)
				delete(docs, id)
			}
			again := docs[genRecording(c, lo-20).ID]
			again.Duration += 90 * time.Minute // put again, longer
			puts = append(puts, again)
			docs[again.ID] = again
		}
		seq++
		if err := ix.Apply(ctx, seq, puts, dels); err != nil {
			t.Fatal(err)
		}
	}
	queries := []string{
		"at:2024-03-05T10", "at:2024-03-05T10:00", "at:2024-03-05T10:00:00Z", "at:2024-03-05T09:59:59.9995Z", "at:2024-03-05",
		"during:2024-03-05T09:30..2024-03-05T10:00", "during:2024-03-05T10:00..", "during:..2024-03-05T10:00",
		"after:2024-03-05T10:00:00Z", "before:2024-03-05T10:00:00Z", "after:2024-03-01 before:2024-03-08", "after:2024-06-01",
		"before:2024-03-05T09:00:00Z after:2024-03-05T08:00:00Z after:2024-03-05T08:30:00Z",
		"longer:5m", "shorter:5m", "longer:1m shorter:1h", "shorter:1ms", "longer:0s",
		"-after:2024-03-05", "-at:2024-03-05T10:00", "-longer:30m", "at:2024-03-05T10:00 -shorter:1m",
		"after:2024-03-01 longer:10m -during:2024-03-05T09:00..2024-03-05T09:30",
		"after:2200-01-01", "before:1700-01-01", "-before:1700-01-01", "at:2199-12-31", "during:1700-01-01..2199-01-01", "during:..1700-01-01", "longer:10000w",
	}
	check := func(stage string) {
		t.Helper()
		for _, q := range queries {
			pq, err := Parse(q)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for id, r := range docs {
				all := true
				for i := range pq.Terms {
					all = all && holds(&pq.Terms[i], r)
				}
				if all {
					want = append(want, id)
				}
			}
			slices.Sort(want)
			got, err := ix.SearchQuery(ctx, pq, 0, len(docs))
			if err != nil {
				t.Fatal(err)
			}
			var g []string
			for _, h := range got.Hits {
				g = append(g, h.ID)
			}
			slices.Sort(g)
			if got.Total != len(want) || !slices.Equal(g, want) {
				t.Errorf("%s: %q: %d hits, want %d\n got %v\nwant %v", stage, q, got.Total, len(want), g, want)
			}
			// The same under a conjunction: bleve's walk of bitsSearcher.
			cq, err := ix.compiler(ctx, pq)
			if err != nil {
				t.Fatal(err)
			}
			root, err := cq.root()
			if err != nil {
				t.Fatal(err)
			}
			hits, total, err := ix.newest(ctx, query.NewConjunctionQuery([]query.Query{root, termQ(fIsRec, "r")}), fSortDur, true, 0, len(docs))
			if err != nil {
				t.Fatal(err)
			}
			g = g[:0]
			for _, h := range hits {
				g = append(g, h.id)
			}
			slices.Sort(g)
			if total != len(want) || !slices.Equal(g, want) {
				t.Errorf("%s: %q in a conjunction: %d hits, want %d", stage, q, total, len(want))
			}
		}
	}
	check("first searches")
	adv, _ := ix.bi.Advanced()
	r, err := adv.Reader()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, f := range []string{fSort, fSortDur} {
		if _, err := ix.keys.ready(ctx, r, f); err != nil {
			t.Fatal(err)
		}
	}
	check("numbers read")
}

// TestBitsSearcherAdvance: Advance goes to the first match at the id or
// after it, across segments, and never back.
func TestBitsSearcherAdvance(t *testing.T) {
	s := &bitsSearcher{offsets: []uint64{0, 100, 300}, bits: [][]uint64{newBitset(100), newBitset(200), newBitset(70)}}
	for _, n := range []uint64{3, 64, 99, 100 + 0, 100 + 130, 300 + 69} {
		i := 0
		for i+1 < len(s.offsets) && s.offsets[i+1] <= n {
			i++
		}
		local := n - s.offsets[i]
		s.bits[i][local/64] |= 1 << (local % 64)
	}
	ctx := &search.SearchContext{DocumentMatchPool: search.NewDocumentMatchPool(1, 0)}
	id := func(n uint64) []byte { return binary.BigEndian.AppendUint64(nil, n) }
	for _, step := range []struct {
		advance uint64 // 0: Next
		want    int64  // -1: none
	}{{0, 3}, {4, 64}, {65, 99}, {0, 100}, {101, 230}, {50, 369}, {0, -1}} {
		var dm *search.DocumentMatch
		var err error
		if step.advance == 0 {
			dm, err = s.Next(ctx)
		} else {
			dm, err = s.Advance(ctx, id(step.advance))
		}
		if err != nil {
			t.Fatal(err)
		}
		got := int64(-1)
		if dm != nil {
			got = int64(binary.BigEndian.Uint64(dm.IndexInternalID))
			ctx.DocumentMatchPool.Put(dm)
		}
		if got != step.want {
			t.Fatalf("after %+v: %d, want %d", step, got, step.want)
		}
	}
}
