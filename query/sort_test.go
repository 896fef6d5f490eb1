package query

import (
	"cmp"
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/RoaringBitmap/roaring/v2"
)

// TestSortOrders: each Sort orders the hits by its key in both directions
// (ties by start, then id, the same way), and paging through every page of
// a query, with pages of 7, gives each matching recording exactly once, in
// the order of a sort of all of them in Go. Newest first is the zero Sort.
func TestSortOrders(t *testing.T) {
	ix, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	c := genConfig{Recordings: 300, Events: 2, Players: 40, Seed: 11}
	var puts []RecordingDoc
	for i := range c.Recordings {
		r := genRecording(c, i)
		switch i % 25 {
		case 0:
			r.Start = time.Time{} // no start
		case 1:
			r.Duration = 10 * time.Minute // ties of duration
		}
		puts = append(puts, r)
	}
	ctx := context.Background()
	if err := ix.Apply(ctx, 1, puts, nil); err != nil {
		t.Fatal(err)
	}
	byID := map[string]*RecordingDoc{}
	for i := range puts {
		byID[puts[i].ID] = &puts[i]
	}
	// tie is the start order (without a start: before every start),
	// then the id.
	tie := func(a, b *RecordingDoc) int {
		if a.Start.IsZero() != b.Start.IsZero() {
			if a.Start.IsZero() {
				return -1
			}
			return 1
		}
		if c := a.Start.Compare(b.Start); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	}
	keyOf := map[SortKey]func(r *RecordingDoc) int64{
		SortStart:    func(*RecordingDoc) int64 { return 0 },
		SortDuration: func(r *RecordingDoc) int64 { return r.Duration.Milliseconds() },
		SortPlayers:  func(r *RecordingDoc) int64 { return int64(len(r.Players)) },
	}
	for _, q := range []string{"", "format:vtx OR format:hcrp", "-player:ka*"} {
		pq, err := Parse(q)
		if err != nil {
			t.Fatal(err)
		}
		for _, key := range []SortKey{SortStart, SortDuration, SortPlayers} {
			for _, asc := range []bool{false, true} {
				so := Sort{Key: key, Asc: asc}
				var got []string
				total := -1
				for from := 0; ; from += 7 {
					res, err := ix.SearchQuery(ctx, pq, from, 7, so)
					if err != nil {
						t.Fatal(err)
					}
					if total >= 0 && res.Total != total {
						t.Fatalf("%q %v: total %d, then %d", q, so, total, res.Total)
					}
					total = res.Total
					for _, h := range res.Hits {
						got = append(got, h.ID)
					}
					if len(res.Hits) < 7 {
						break
					}
				}
				want := slices.Clone(got)
				slices.SortFunc(want, func(a, b string) int {
					ra, rb := byID[a], byID[b]
					c := cmp.Compare(keyOf[key](ra), keyOf[key](rb))
					if c == 0 {
						c = tie(ra, rb)
					}
					if !asc {
						c = -c
					}
					return c
				})
				if len(got) != total || len(slices.Compact(slices.Sorted(slices.Values(got)))) != total {
					t.Errorf("%q %v: %d hits over the pages, %d distinct, total %d", q, so, len(got), len(slices.Compact(slices.Sorted(slices.Values(got)))), total)
				}
				if !slices.Equal(got, want) {
					t.Errorf("%q %v: the pages are not in order", q, so)
				}
				if q == "" && total != c.Recordings {
					t.Errorf("%q: total %d", q, total)
				}
			}
		}
	}
	// The zero Sort is the default order.
	pq, _ := Parse("")
	a, err := ix.SearchQuery(ctx, pq, 0, 50)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ix.SearchQuery(ctx, pq, 0, 50, Sort{})
	if err != nil {
		t.Fatal(err)
	}
	ga, _ := ids(a)
	gb, _ := ids(b)
	if !slices.Equal(ga, gb) || len(ga) != 50 {
		t.Errorf("the zero Sort: %v, default %v", gb, ga)
	}
	if _, err := ix.SearchQuery(ctx, pq, 0, 5, Sort{Key: 9}); err == nil {
		t.Error("an unknown sort key was taken")
	}
}

// TestParseSort: the API's names of the orders, and a clear error for
// another.
func TestParseSort(t *testing.T) {
	for _, tc := range []struct {
		by, order string
		want      Sort
	}{
		{"", "", Sort{}},
		{"start", "asc", Sort{SortStart, true}},
		{"duration", "desc", Sort{SortDuration, false}},
		{"players", "asc", Sort{SortPlayers, true}},
	} {
		got, err := ParseSort(tc.by, tc.order)
		if err != nil || got != tc.want {
			t.Errorf("ParseSort(%q, %q) = %v, %v", tc.by, tc.order, got, err)
		}
		if tc.by != "" {
			by, order, _ := strings.Cut(got.String(), " ")
			if back, err := ParseSort(by, order); err != nil || back != got {
				t.Errorf("%v: String %q reads back as %v, %v", got, got.String(), back, err)
			}
		}
	}
	for _, bad := range [][2]string{{"size", ""}, {"start", "up"}, {"Start", ""}} {
		if _, err := ParseSort(bad[0], bad[1]); err == nil || !strings.Contains(err.Error(), bad[0]+bad[1]) && !strings.Contains(err.Error(), "want") {
			t.Errorf("ParseSort(%q, %q): %v", bad[0], bad[1], err)
		}
	}
}

// TestEachHit: every recording of a player-id: query, each with its
// players' names and ids paired as indexed, the total past max, and text
// terms refused.
func TestEachHit(t *testing.T) {
	ix, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	c := genConfig{Recordings: 200, Events: 2, Players: 30, Seed: 12}
	var puts []RecordingDoc
	want := map[string]bool{}
	for i := range c.Recordings {
		r := genRecording(c, i)
		for _, p := range r.Players {
			if p.ID == "u7" {
				want[r.ID] = true
			}
		}
		puts = append(puts, r)
	}
	ctx := context.Background()
	if err := ix.Apply(ctx, 1, puts, nil); err != nil {
		t.Fatal(err)
	}
	pq, err := Parse("player-id:u7")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	total, err := ix.EachHit(ctx, pq, 1000, func(h *Hit) error {
		got[h.ID] = true
		if len(h.PlayerIDs) != len(h.Players) || !slices.Contains(h.PlayerIDs, "u7") {
			t.Errorf("%s: names %v, ids %v", h.ID, h.Players, h.PlayerIDs)
		}
		for i, id := range h.PlayerIDs {
			if "u"+strings.TrimLeft(id, "u") != id || genName(atoi(id[1:])) != h.Players[i] {
				t.Errorf("%s: %q paired with %q", h.ID, h.Players[i], id)
			}
		}
		return nil
	})
	if err != nil || total != len(want) || len(got) != len(want) || len(want) < 5 {
		t.Fatalf("EachHit: %d (%d seen), %v; want %d", total, len(got), err, len(want))
	}
	n := 0
	total, err = ix.EachHit(ctx, pq, 3, func(*Hit) error { n++; return nil })
	if err != nil || n != 3 || total != len(want) {
		t.Errorf("max 3: %d seen, total %d, %v", n, total, err)
	}
	tq, _ := Parse("player-id:u7 cmd:kick")
	if _, err := ix.EachHit(ctx, tq, 10, func(*Hit) error { return nil }); err == nil {
		t.Error("a text term was taken")
	}
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}

// TestSegBestWaysAgree: the three ways segBest picks a segment's first
// documents of a bitmap (reading it whole, asking it along the order,
// asking a bitset made from it) give the same documents, in the same
// order by number, ties with the last included, for bitmaps from sparse
// to dense, in both directions and for pages from 1 to past the bitmap.
func TestSegBestWaysAgree(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const n = 20_000
	keys := make([]uint64, n)
	for i := range keys {
		keys[i] = uint64(r.IntN(n / 4)) // many ties
	}
	order := keyOrder(keys)
	ctx := context.Background()
	var dense []uint64
	for _, card := range []int{1, 30, 700, 5000, 19_000} {
		bm := roaring.New()
		for bm.GetCardinality() < uint64(card) {
			bm.Add(uint32(r.IntN(n)))
		}
		for _, asc := range []bool{false, true} {
			for _, need := range []int{1, 20, 1020, 25_000} {
				var lists [][]segCand
				for _, how := range []int{segBestWhole, segBestContains, segBestDense, segBestAuto} {
					l, err := segBest(ctx, keys, order, bm, bound{asc: asc}, need, how, &dense)
					if err != nil {
						t.Fatal(err)
					}
					lists = append(lists, l)
				}
				want := lists[0]
				// A bound (the number of a document a third of the way
				// down) cuts each way's list after the last document
				// that ties with it.
				if len(want) > 3 {
					b := bound{num: want[len(want)/3].num, set: true, asc: asc}
					cut := len(want) / 3
					for cut < len(want) && want[cut].num == b.num {
						cut++
					}
					for _, how := range []int{segBestWhole, segBestContains, segBestDense, segBestAuto} {
						l, err := segBest(ctx, keys, order, bm, b, need, how, &dense)
						if err != nil {
							t.Fatal(err)
						}
						if len(l) != cut || l[len(l)-1].num != want[cut-1].num {
							t.Fatalf("card %d need %d asc %v: way %d with a bound gives %d documents, want %d", card, need, asc, how, len(l), cut)
						}
					}
				}
				if len(want) < min(need, card) {
					t.Fatalf("card %d need %d: %d documents", card, need, len(want))
				}
				for k := 1; k < len(want); k++ {
					if a, b := want[k-1].num, want[k].num; asc && a > b || !asc && a < b {
						t.Fatalf("card %d need %d asc %v: out of order at %d", card, need, asc, k)
					}
				}
				if len(want) > need && want[len(want)-1].num != want[need-1].num {
					t.Fatalf("card %d need %d: %d documents, past the ties", card, need, len(want))
				}
				// The same documents: the same numbers in the same order,
				// and the same set (ties may come in another order).
				set := func(l []segCand) []uint32 {
					s := make([]uint32, len(l))
					for i, c := range l {
						s[i] = c.d
					}
					slices.Sort(s)
					return s
				}
				for how, l := range lists[1:] {
					if len(l) != len(want) || !slices.Equal(set(l), set(want)) {
						t.Fatalf("card %d need %d asc %v: way %d gives %d documents, reading whole %d", card, need, asc, how+1, len(l), len(want))
					}
					for k := range l {
						if l[k].num != want[k].num {
							t.Fatalf("card %d need %d asc %v: way %d: number %d at %d, want %d", card, need, asc, how+1, l[k].num, k, want[k].num)
						}
					}
				}
			}
		}
	}
}
