// Time terms (after:, before:, at:, during:, longer:, shorter:) are
// answered from the sort numbers the index keeps in memory (sortkeys.go),
// not from terms: the ts number is a recording's start, the tsd number
// its duration. Bleve's date and numeric fields index 16 precision terms
// a value; at a million recordings the start, end and duration fields
// held 324 MB of the index's 540 MB of term dictionaries, and a merge
// holds the dictionary of the field it writes whole in memory, which set
// the peak of a rebuild.

package query

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"sort"
	"time"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search"
	index "github.com/blevesearch/bleve_index_api"
)

// keyed is what a time term's query needs of the index: its sort
// numbers. The compiler gives them (useKeys).
type keyed struct{ keys *sortKeys }

func (k *keyed) useKeys(sk *sortKeys) { k.keys = sk }

// ready returns the numbers of field for every segment of r, waiting for
// those not read yet.
func (k *keyed) ready(ctx context.Context, r index.IndexReader, field string) (*keyView, error) {
	if k.keys == nil {
		return nil, fmt.Errorf("query: a time term was compiled without the index's sort numbers")
	}
	return k.keys.ready(ctx, r, field)
}

// startNum is the ts number of a start (see the ts key in index.go). A
// query's times are within what nanoseconds since 1970 hold (Parse takes
// years 1700 to 2200).
func startNum(t time.Time) uint64 { return uint64(t.UnixNano()) ^ (1 << 63) }

// startQuery matches the recordings that started in [from, until); a zero
// bound is open. A recording without a start matches none.
type startQuery struct {
	keyed
	from, until time.Time
}

// nums returns the range as ts numbers, [lo, hi).
func (q *startQuery) nums() (lo, hi uint64) {
	lo, hi = 1, math.MaxUint64 // 0 is no start
	if !q.from.IsZero() {
		lo = max(startNum(q.from), 1)
	}
	if !q.until.IsZero() {
		hi = startNum(q.until)
	}
	return lo, hi
}

// Searcher implements query.Query.
func (q *startQuery) Searcher(ctx context.Context, r index.IndexReader, _ mapping.IndexMapping, _ search.SearcherOptions) (search.Searcher, error) {
	v, err := q.ready(ctx, r, fSort)
	if err != nil {
		return nil, err
	}
	lo, hi := q.nums()
	return runSearcher(v, lo, hi), nil
}

// durQuery matches the recordings whose duration's tsd number (its whole
// milliseconds, plus one) is in [lo, hi): longer: and shorter: compare
// whole milliseconds, as the keys hold them.
type durQuery struct {
	keyed
	lo, hi uint64
}

// longerThan returns the query of durations of more whole milliseconds
// than d has, shorterThan that of fewer.
func longerThan(d time.Duration) *durQuery {
	return &durQuery{lo: uint64(max(d, 0)/time.Millisecond) + 2, hi: math.MaxUint64}
}

func shorterThan(d time.Duration) *durQuery {
	return &durQuery{lo: 1, hi: uint64(max(d, 0)/time.Millisecond) + 1}
}

// Searcher implements query.Query.
func (q *durQuery) Searcher(ctx context.Context, r index.IndexReader, _ mapping.IndexMapping, _ search.SearcherOptions) (search.Searcher, error) {
	v, err := q.ready(ctx, r, fSortDur)
	if err != nil {
		return nil, err
	}
	return runSearcher(v, q.lo, q.hi), nil
}

// runningQuery matches the recordings that were running at some moment
// of [from, until) (at:, during:; a zero bound is open): start < until
// and end > from, where end is the start plus the duration, at least a
// nanosecond (a zero-length recording runs at its start). When startLo is
// set (from less the longest duration any indexed recording has, see
// longestKey), only those that started at startLo or later can run.
type runningQuery struct {
	keyed
	from, until, startLo time.Time
}

// window returns the query's runs of the start order, as ts numbers: the
// candidates started in [lo, hi); those that started at mid or later are
// running, each earlier one when it ends after from (endsAfter).
func (q *runningQuery) window() (lo, mid, hi uint64) {
	lo, mid, hi = 1, 1, math.MaxUint64
	if !q.startLo.IsZero() {
		lo = max(startNum(q.startLo), 1)
	}
	if !q.from.IsZero() {
		mid = max(startNum(q.from), lo)
	}
	if !q.until.IsZero() {
		hi = startNum(q.until)
	}
	return lo, mid, hi
}

// runs returns the bounds in segment i's start order of window's runs:
// [a, c) to check, [c, b) running.
func (q *runningQuery) runs(v *keyView, i int) (a, c, b int) {
	lo, mid, hi := q.window()
	keys, order := v.keys[i], v.orders[i]
	a = sort.Search(len(order), func(k int) bool { return keys[order[k]] >= lo })
	c = sort.Search(len(order), func(k int) bool { return keys[order[k]] >= mid })
	b = sort.Search(len(order), func(k int) bool { return keys[order[k]] >= hi })
	return a, min(max(c, a), b), b
}

// Searcher implements query.Query.
func (q *runningQuery) Searcher(ctx context.Context, r index.IndexReader, _ mapping.IndexMapping, _ search.SearcherOptions) (search.Searcher, error) {
	starts, err := q.ready(ctx, r, fSort)
	if err != nil {
		return nil, err
	}
	durs, err := q.ready(ctx, r, fSortDur)
	if err != nil {
		return nil, err
	}
	s := &bitsSearcher{offsets: starts.segs.offsets, bits: make([][]uint64, len(starts.segs.segs))}
	from := q.from.UnixNano()
	for i := range starts.segs.segs {
		a, c, b := q.runs(starts, i)
		set := newBitset(len(starts.keys[i]))
		for k, d := range starts.orders[i][a:b] {
			if a+k < c {
				if k%4096 == 0 {
					if err := ctx.Err(); err != nil {
						return nil, err
					}
				}
				in, err := endsAfter(starts, durs, i, d, from)
				if err != nil {
					return nil, err
				}
				if !in {
					continue
				}
			}
			set[d/64] |= 1 << (d % 64)
		}
		s.bits[i] = s.keep(set, starts.segs.segs[i].Deleted())
	}
	return s, nil
}

// endsAfter reports whether the document d of segment i, which started
// before from (nanoseconds), ends after it: end = start + max(duration,
// 1 ns). The duration's number holds whole milliseconds; where the
// millisecond decides, the stored duration is read.
func endsAfter(starts, durs *keyView, i int, d uint32, from int64) (bool, error) {
	start := int64(starts.keys[i][d] ^ (1 << 63))
	ms := int64(durs.keys[i][d]) - 1
	if ms > 0 && start+ms*int64(time.Millisecond) > from {
		return true, nil // the duration is at least ms milliseconds
	}
	if start+(ms+1)*int64(time.Millisecond) <= from {
		return false, nil // and less than ms+1
	}
	id := binary.BigEndian.AppendUint64(nil, starts.segs.offsets[i]+uint64(d))
	ext, data, err := starts.segs.stored(id)
	var h Hit
	if err == nil {
		err = decodeRec(ext, data, &h)
	}
	if err != nil {
		return false, err
	}
	return start+int64(max(h.Duration, time.Nanosecond)) > from, nil
}

// runSearcher matches the documents whose numbers in v are in [lo, hi):
// one run of each segment's order.
func runSearcher(v *keyView, lo, hi uint64) *bitsSearcher {
	s := &bitsSearcher{offsets: v.segs.offsets, bits: make([][]uint64, len(v.segs.segs))}
	for i, ss := range v.segs.segs {
		keys, order := v.keys[i], v.orders[i]
		a := sort.Search(len(order), func(k int) bool { return keys[order[k]] >= lo })
		b := sort.Search(len(order), func(k int) bool { return keys[order[k]] >= hi })
		set := newBitset(len(keys))
		for _, d := range order[a:max(a, b)] {
			set[d/64] |= 1 << (d % 64)
		}
		s.bits[i] = s.keep(set, ss.Deleted())
	}
	return s
}

func newBitset(n int) []uint64 { return make([]uint64, (n+63)/64) }

// bitsSearcher is a bleve searcher over a bitset of each segment's
// documents, in internal id order.
type bitsSearcher struct {
	offsets []uint64   // first internal number of each segment
	bits    [][]uint64 // each segment's matching live documents
	count   uint64
	seg     int    // where Next looks: segment,
	next    uint64 // and local number
}

// keep clears del's documents from set, counts what is left and
// returns set.
func (s *bitsSearcher) keep(set []uint64, del *roaring.Bitmap) []uint64 {
	if del != nil {
		for it := del.Iterator(); it.HasNext(); {
			if d := it.Next(); int(d/64) < len(set) {
				set[d/64] &^= 1 << (d % 64)
			}
		}
	}
	for _, w := range set {
		s.count += uint64(bits.OnesCount64(w))
	}
	return set
}

// Next implements search.Searcher.
func (s *bitsSearcher) Next(ctx *search.SearchContext) (*search.DocumentMatch, error) {
	for s.seg < len(s.bits) {
		set := s.bits[s.seg]
		for w := s.next / 64; w < uint64(len(set)); w++ {
			word := set[w]
			if w == s.next/64 {
				word &^= 1<<(s.next%64) - 1 // bits before next
			}
			if word != 0 {
				n := w*64 + uint64(bits.TrailingZeros64(word))
				s.next = n + 1
				dm := ctx.DocumentMatchPool.Get()
				dm.IndexInternalID = binary.BigEndian.AppendUint64(dm.IndexInternalID[:0], s.offsets[s.seg]+n)
				dm.Score = 1
				return dm, nil
			}
		}
		s.seg++
		s.next = 0
	}
	return nil, nil
}

// Advance implements search.Searcher: the first match at id or after it
// (and after the last one returned).
func (s *bitsSearcher) Advance(ctx *search.SearchContext, id index.IndexInternalID) (*search.DocumentMatch, error) {
	if len(id) == 8 {
		n := binary.BigEndian.Uint64(id)
		i := sort.Search(len(s.offsets), func(i int) bool { return s.offsets[i] > n }) - 1
		switch {
		case i > s.seg:
			s.seg, s.next = i, n-s.offsets[i]
		case i == s.seg && n-s.offsets[i] > s.next:
			s.next = n - s.offsets[i]
		}
	}
	return s.Next(ctx)
}

// Close implements search.Searcher.
func (s *bitsSearcher) Close() error { return nil }

// Weight implements search.Searcher: the matches are not scored.
func (s *bitsSearcher) Weight() float64 { return 1 }

// SetQueryNorm implements search.Searcher.
func (s *bitsSearcher) SetQueryNorm(float64) {}

// Count implements search.Searcher: the number of matches (a conjunction
// walks its smallest operand first).
func (s *bitsSearcher) Count() uint64 { return s.count }

// Min implements search.Searcher.
func (s *bitsSearcher) Min() int { return 0 }

// Size implements search.Searcher.
func (s *bitsSearcher) Size() int {
	n := 64 + 8*len(s.offsets)
	for _, set := range s.bits {
		n += 24 + 8*len(set)
	}
	return n
}

// DocumentMatchPoolSize implements search.Searcher.
func (s *bitsSearcher) DocumentMatchPoolSize() int { return 1 }
