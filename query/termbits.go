// The documents of the terms many recordings hold, kept as plain bitsets
// per segment: copying a postings list out of its segment (roaring's Or,
// about 2 ns a document) and spreading it into a bitset cost cmd:kick at
// a million recordings (120,000 documents in three segments) about a
// fifth of each request, the same work for every request of the term.

package query

import (
	"sync"
	"time"

	"github.com/RoaringBitmap/roaring/v2"
	segment "github.com/blevesearch/scorch_segment_api/v2"
)

// termBitsBudget bounds the bytes of the bitsets kept (a segment of 1.5
// million documents takes 190 KB a term).
const termBitsBudget = 32 << 20

// termBitsMin: a term is kept when it holds at least one document in
// termBitsMin of its segment's (a bitset then takes at most 8 times its
// postings' bytes).
const termBitsMin = 64

// termBits keeps bitsets of the documents of terms, per segment, raw
// (deleted documents included: a snapshot's deletions are its own).
type termBits struct {
	mu    sync.Mutex
	m     map[termKey]*termSet
	bytes int
	// budget replaces termBitsBudget when set (tests).
	budget int
}

// termKey names one term of one field in one segment.
type termKey struct {
	seg         segment.Segment
	field, term string
}

// termSet is one term's documents in one segment.
type termSet struct {
	bits []uint64
	card uint64
	used time.Time
}

// lookup returns the kept bitset of the term in seg, or nil.
func (tb *termBits) lookup(seg segment.Segment, field, term string) *termSet {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	s := tb.m[termKey{seg, field, term}]
	if s != nil {
		s.used = time.Now()
	}
	return s
}

// keep makes the bitset of the term in seg from bm (its raw postings)
// and keeps it, or returns nil when the term is too rare in seg to be
// kept.
func (tb *termBits) keep(seg segment.Segment, field, term string, bm *roaring.Bitmap) *termSet {
	k := termKey{seg, field, term}
	now := time.Now()
	if bm == nil || bm.GetCardinality()*termBitsMin < seg.Count() {
		return nil
	}
	s := &termSet{bits: make([]uint64, (seg.Count()+63)/64), card: bm.GetCardinality(), used: now}
	bm.WriteDenseTo(s.bits)
	size, budget := 8*len(s.bits), tb.budget
	if budget == 0 {
		budget = termBitsBudget
	}
	if size > budget/4 {
		return s // used once, not kept
	}
	tb.mu.Lock()
	defer tb.mu.Unlock()
	if tb.m == nil {
		tb.m = map[termKey]*termSet{}
	}
	if old := tb.m[k]; old != nil {
		return old
	}
	// Make room: drop what was not used for a while (a segment merged
	// away), then the least recently used.
	for tb.bytes+size > budget {
		var oldest termKey
		var at time.Time
		for key, e := range tb.m {
			if at.IsZero() || e.used.Before(at) {
				oldest, at = key, e.used
			}
		}
		tb.bytes -= 8 * len(tb.m[oldest].bits)
		delete(tb.m, oldest)
	}
	tb.m[k] = s
	tb.bytes += size
	return s
}

// has reports whether document d is in the set.
func (s *termSet) has(d uint32) bool {
	return int(d/64) < len(s.bits) && s.bits[d/64]&(1<<(d%64)) != 0
}
