// Sort keys kept in memory: a number per document of each index segment
// that orders as its sort key (ts, tsd, tsp) does, so that sorting the
// hits of a search reads no doc values.
//
// Reading a doc value decodes the snappy chunk of about a thousand
// documents that holds it; the hits of a search are spread over the whole
// index, so each hit decoded a chunk of its own (15–20 µs: at a million
// recordings a player of 5,000 recordings spent 80 ms on it). Segments
// are immutable, so a segment's numbers are read once, in document order
// (one decode per chunk), and kept while the segment is in use.

package query

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/search/query"
	index "github.com/blevesearch/bleve_index_api"
	segment "github.com/blevesearch/scorch_segment_api/v2"
)

// sortKeys caches the numbers of the segments searches have sorted, per
// segment and sort field.
type sortKeys struct {
	mu     sync.Mutex
	segs   map[segField]*segKeys
	closed bool
	// reading lets one segment's numbers be read at a time; readers
	// counts the reads under way, which close stops (stop) and waits for.
	reading chan struct{}
	readers sync.WaitGroup
	stop    chan struct{}
}

// segField names one segment's numbers of one field.
type segField struct {
	seg   segment.Segment
	field string
}

// segKeys are one segment's numbers of one field, read once in the
// background; ready is closed when keys (or err) is set.
type segKeys struct {
	ready chan struct{}
	keys  []uint64 // by local document number
	// order holds the segment's document numbers by keys, smallest
	// first (see bestOfTerm).
	order []uint32
	err   error
	used  time.Time // guarded by sortKeys.mu
}

// keyUnused is how long the numbers of a segment no snapshot in use holds
// (merged away) are kept: an older snapshot may still be searched.
const keyUnused = time.Minute

// keyView maps the documents of one index snapshot to their numbers.
type keyView struct {
	segs   segView
	keys   [][]uint64 // each segment's numbers
	orders [][]uint32 // each segment's documents in their order
	// pending are the segments whose numbers were not read yet.
	pending []pendingKeys
}

// pendingKeys is a segment of a keyView (its index) whose numbers are
// being read.
type pendingKeys struct {
	i int
	e *segKeys
}

// segView finds the segment of a document of one index snapshot.
type segView struct {
	segs    []*scorch.SegmentSnapshot
	offsets []uint64 // first global document number of each segment
}

// segViewOf returns r's segments, or ok false when r is not a scorch
// snapshot.
func segViewOf(r index.IndexReader) (v segView, ok bool) {
	snap, isSnap := r.(*scorch.IndexSnapshot)
	if !isSnap {
		return v, false
	}
	v.segs = snap.Segments()
	v.offsets = make([]uint64, len(v.segs))
	var running uint64
	for i, ss := range v.segs {
		v.offsets[i] = running
		running += ss.Segment().Count() // as scorch numbers them: deleted documents too
	}
	return v, true
}

// locate returns the segment and local number of the document with
// internal id id (segment -1 for none).
func (v *segView) locate(id index.IndexInternalID) (int, uint64) {
	if len(id) != 8 {
		return -1, 0
	}
	n := binary.BigEndian.Uint64(id)
	i := sort.Search(len(v.offsets), func(i int) bool { return v.offsets[i] > n }) - 1
	if i < 0 {
		return -1, 0
	}
	return i, n - v.offsets[i]
}

// stored returns the id and the stored data (fData) of the document with
// internal id id, read straight from its segment: IndexReader.Document
// looks the id up in the term dictionary again, and ExternalID reads the
// stored fields once more.
func (v *segView) stored(id index.IndexInternalID) (ext string, data []byte, err error) {
	i, local := v.locate(id)
	if i < 0 {
		return "", nil, fmt.Errorf("query: no document %x", []byte(id))
	}
	err = v.segs[i].VisitDocument(local, func(field string, _ byte, value []byte, _ []uint64) bool {
		switch field {
		case "_id":
			ext = string(value)
		case fData:
			data = slices.Clone(value)
		}
		return true
	})
	if err != nil {
		return "", nil, fmt.Errorf("query: stored fields: %w", err)
	}
	return ext, data, nil
}

// view returns the numbers of field for every document of r, reading
// those of segments not seen yet. ok is false when r is not a scorch
// snapshot (then the caller reads doc values).
func (sk *sortKeys) view(r index.IndexReader, field string) (v *keyView, ok bool, err error) {
	sv, ok := segViewOf(r)
	if !ok {
		return nil, false, nil
	}
	now := time.Now()
	v = &keyView{segs: sv, keys: make([][]uint64, len(sv.segs)), orders: make([][]uint32, len(sv.segs))}
	var start []*segKeys
	var startSegs []segment.Segment
	sk.mu.Lock()
	defer sk.mu.Unlock()
	if sk.segs == nil {
		sk.segs = map[segField]*segKeys{}
		sk.reading = make(chan struct{}, 1)
		sk.stop = make(chan struct{})
	}
	in := make(map[segment.Segment]bool, len(sv.segs))
	for i, ss := range sv.segs {
		k := segField{ss.Segment(), field}
		in[k.seg] = true
		e := sk.segs[k]
		if e == nil {
			e = &segKeys{ready: make(chan struct{})}
			sk.segs[k] = e
			start = append(start, e)
			startSegs = append(startSegs, k.seg)
		}
		e.used = now
		select {
		case <-e.ready:
			if e.err == nil {
				v.keys[i], v.orders[i] = e.keys, e.order
			}
		default:
			v.pending = append(v.pending, pendingKeys{i, e})
		}
	}
	for k, e := range sk.segs {
		if !in[k.seg] && now.Sub(e.used) > keyUnused {
			delete(sk.segs, k)
		}
	}
	if len(start) > 0 && !sk.closed {
		// The snapshot's reference keeps its segments open while they
		// are read, whatever merges and searches do meanwhile.
		snap := r.(*scorch.IndexSnapshot)
		snap.AddRef()
		sk.readers.Add(1)
		go func() {
			defer sk.readers.Done()
			defer snap.DecRef()
			for i, e := range start {
				sk.reading <- struct{}{}
				e.keys, e.err = readKeys(startSegs[i], field, sk.stop)
				if e.err == nil {
					e.order = keyOrder(e.keys)
				}
				<-sk.reading
				close(e.ready)
			}
		}()
	}
	return v, true, nil
}

// ready is view, waiting until the numbers of every segment are read
// (time terms are answered from them alone: timerange.go).
func (sk *sortKeys) ready(ctx context.Context, r index.IndexReader, field string) (*keyView, error) {
	v, ok, err := sk.view(r, field)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("query: time terms need a scorch index, not %T", r)
	}
	for _, p := range v.pending {
		select {
		case <-p.e.ready:
		case <-sk.stop:
			return nil, errKeysStopped
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if p.e.err != nil {
			return nil, p.e.err
		}
		v.keys[p.i], v.orders[p.i] = p.e.keys, p.e.order
	}
	v.pending = nil
	return v, nil
}

// close stops the reads under way, waits for them and starts no more.
func (sk *sortKeys) close() {
	sk.mu.Lock()
	if !sk.closed && sk.stop != nil {
		close(sk.stop)
	}
	sk.closed = true
	sk.mu.Unlock()
	sk.readers.Wait()
}

// errKeysStopped is the error of numbers whose read close stopped.
var errKeysStopped = errors.New("query: sort keys: index closed")

// key returns the number of the document with internal id id, and false
// when its segment's numbers are not read yet.
func (v *keyView) key(id index.IndexInternalID) (uint64, bool) {
	i, local := v.segs.locate(id)
	if i < 0 || v.keys[i] == nil || local >= uint64(len(v.keys[i])) {
		return 0, false
	}
	return v.keys[i][local], true
}

// readKeys reads the numbers of field for every document of seg, in
// document order.
func readKeys(seg segment.Segment, field string, stop <-chan struct{}) ([]uint64, error) {
	dv, ok := seg.(segment.DocValueVisitable)
	if !ok {
		return nil, fmt.Errorf("query: sort keys: segment %T has no doc values", seg)
	}
	keys := make([]uint64, seg.Count())
	fields := []string{field}
	var state segment.DocVisitState
	for n := range keys {
		if n%4096 == 0 {
			select {
			case <-stop:
				return nil, errKeysStopped
			default:
			}
		}
		var err error
		state, err = dv.VisitDocValues(uint64(n), fields, func(_ string, term []byte) {
			keys[n] = keyNumber(field, term)
		}, state)
		if err != nil {
			return nil, fmt.Errorf("query: sort keys: %w", err)
		}
	}
	return keys, nil
}

// keyNumber is a number that orders as the key does, up to ties: a < b
// between two numbers means the same between their keys, and equal
// numbers are decided by the keys themselves. The ts key ("1", 16 hex
// digits of start, id; or "0" and the id) gives its start, or 0 for "0";
// the others (16 or 8 hex digits, then the ts key) their first 16
// characters read as hex, stopping at the first that is not a hex digit
// (which sorts below every digit), so that the rest counts as zeros; the
// tsd key's plus one, so that 0 is a document without one (an event
// block) and the number is a recording's whole milliseconds plus one.
func keyNumber(field string, key []byte) uint64 {
	if field == fSort {
		if len(key) == 0 || key[0] != '1' {
			return 0
		}
		key = key[1:]
	}
	var n uint64
	stop := false
	for i := range 16 {
		var d byte
		if !stop && i < len(key) {
			switch c := key[i]; {
			case c >= '0' && c <= '9':
				d = c - '0'
			case c >= 'a' && c <= 'f':
				d = c - 'a' + 10
			default:
				stop = true
			}
		}
		n = n<<4 | uint64(d)
	}
	if field == fSortDur && len(key) > 0 {
		n++
	}
	return n
}

// walkTerm is walk for a query of one term (player:, map:, flag:, cmd:
// with one word, ...): it reads the term's postings in each segment
// itself (eachPosting), without bleve's searcher and its match per
// document, which was most of the cost of a term that most recordings
// hold (cmd:kick).
func walkTerm(ctx context.Context, view *keyView, field string, tq *query.TermQuery, top *tsHeap, need int) (int, error) {
	return eachPosting(ctx, &view.segs, tq, func(i int, local uint64, id index.IndexInternalID) error {
		e := tsEntry{id: id}
		if keys := view.keys[i]; keys != nil && local < uint64(len(keys)) {
			e.num = keys[local]
			// Most matches of a large answer cannot enter a full heap:
			// tell by the number alone, without building an entry.
			if len(top.e) == need && (top.asc && e.num > top.e[0].num || !top.asc && e.num < top.e[0].num) {
				return nil
			}
		} else {
			e.ts = top.full(id)
			e.num = keyNumber(field, []byte(e.ts))
		}
		top.offer(e, need)
		if top.err != nil {
			return fmt.Errorf("query: search: %w", top.err)
		}
		return nil
	})
}

// eachPosting calls fn with each document of the snapshot sv that holds
// tq's term (its segment, number there and internal id, which is reused:
// fn copies what it keeps) and returns how many there are. Deleted
// documents are left out as bleve's searchers leave them.
func eachPosting(ctx context.Context, sv *segView, tq *query.TermQuery, fn func(seg int, local uint64, id index.IndexInternalID) error) (int, error) {
	total := 0
	id := make(index.IndexInternalID, 8)
	for i, ss := range sv.segs {
		dict, err := ss.Segment().Dictionary(tq.FieldVal)
		if err != nil {
			return 0, fmt.Errorf("query: search: %w", err)
		}
		pl, err := dict.PostingsList([]byte(tq.Term), ss.Deleted(), nil)
		if err != nil {
			return 0, fmt.Errorf("query: search: %w", err)
		}
		it := pl.Iterator(false, false, false, nil)
		for {
			p, err := it.Next()
			if err != nil {
				return 0, fmt.Errorf("query: search: %w", err)
			}
			if p == nil {
				break
			}
			total++
			local := p.Number()
			binary.BigEndian.PutUint64(id, sv.offsets[i]+local)
			if err := fn(i, local, id); err != nil {
				return 0, err
			}
			if total%4096 == 0 {
				if err := ctx.Err(); err != nil {
					return 0, err
				}
			}
		}
	}
	return total, nil
}

// keyOrder returns the document numbers 0..len(keys)-1 ordered by keys,
// smallest first.
func keyOrder(keys []uint64) []uint32 {
	order := make([]uint32, len(keys))
	for i := range order {
		order[i] = uint32(i)
	}
	slices.SortFunc(order, func(a, b uint32) int { return cmp.Compare(keys[a], keys[b]) })
	return order
}

// orInto is what a zap postings list offers beyond segment.PostingsList:
// its documents as a bitmap.
type orInto interface {
	OrInto(receiver *roaring.Bitmap)
}

// bestOfTerm is walkTerm without the walk, for a term that many
// recordings hold: per segment, it takes the term's documents as a
// bitmap (the count is its cardinality), then picks the segment's first
// need of them in the order (and any that tie with the last) by the
// cheapest of three ways (segBest), and merges the segments' lists into
// top. cmd:kick at a million recordings matched 75,000 and walked them
// all for a page of 20.
// It returns false, having offered nothing, when some segment's numbers
// are not read yet or its postings offer no bitmap: walkTerm then does.
func bestOfTerm(ctx context.Context, view *keyView, tq *query.TermQuery, top *tsHeap, need int) (int, bool, error) {
	type seg struct {
		i  int
		bm *roaring.Bitmap
	}
	var segs []seg
	total := 0
	for i, ss := range view.segs.segs {
		if view.keys[i] == nil || view.orders[i] == nil {
			return 0, false, nil
		}
		dict, err := ss.Segment().Dictionary(tq.FieldVal)
		if err != nil {
			return 0, false, fmt.Errorf("query: search: %w", err)
		}
		pl, err := dict.PostingsList([]byte(tq.Term), ss.Deleted(), nil)
		if err != nil {
			return 0, false, fmt.Errorf("query: search: %w", err)
		}
		bo, ok := pl.(orInto)
		if !ok {
			return 0, false, nil
		}
		bm := roaring.New()
		bo.OrInto(bm)
		if del := ss.Deleted(); del != nil {
			bm.AndNot(del)
		}
		total += int(bm.GetCardinality())
		if !bm.IsEmpty() {
			segs = append(segs, seg{i, bm})
		}
	}
	// The segment with most of the term first: the others then stop at
	// the need-th best number so far (a small segment would otherwise
	// go far back in time for need of its own).
	slices.SortFunc(segs, func(a, b seg) int { return cmp.Compare(b.bm.GetCardinality(), a.bm.GetCardinality()) })
	lists := make([]segList, 0, len(segs))
	var dense []uint64
	b := bound{asc: top.asc}
	for _, sg := range segs {
		l, err := segBest(ctx, view.keys[sg.i], view.orders[sg.i], sg.bm, b, need, segBestAuto, &dense)
		if err != nil {
			return 0, false, err
		}
		lists = append(lists, segList{seg: sg.i, docs: l})
		b = boundOf(lists, need, top.asc)
	}
	if err := mergeBest(view, lists, top, need); err != nil {
		return 0, false, err
	}
	return total, true, nil
}

// segCand is a document of one segment with its number.
type segCand struct {
	num uint64
	d   uint32
}

// segList is one segment's candidates, best first.
type segList struct {
	seg  int
	docs []segCand
}

// How segBest picks a segment's first documents of a bitmap.
const (
	segBestAuto     = iota // the cheapest for the bitmap's size
	segBestWhole           // read every document of the bitmap, sort them
	segBestContains        // go through the order, asking the bitmap of each
	segBestDense           // the same, asking a plain bitset made from the bitmap
)

// segBest returns the first need documents of bm (by the segment's keys,
// largest first, or smallest with b.asc) not worse than b, and any after
// them that tie with the last, best first. how picks the way (segBestAuto: the
// cheapest by the sizes; the others for tests); dense is a buffer it
// may reuse. The ways cost (measured, 1.5M documents, a bitmap of
// 90,000): reading the bitmap whole about 50 ns a document (a random
// read of its number, then a sort); going through the order and asking
// the bitmap (roaring's Contains) 90 ns a step, need×len(order)/card
// steps; a plain bitset made from the bitmap 1.2 ns a document of the
// bitmap to make, then 2 ns a step.
func segBest(ctx context.Context, keys []uint64, order []uint32, bm *roaring.Bitmap, b bound, need, how int, dense *[]uint64) ([]segCand, error) {
	asc := b.asc
	card, n := bm.GetCardinality(), uint64(len(order))
	if card == 0 || need <= 0 {
		return nil, nil
	}
	if how == segBestAuto {
		steps := min(n, uint64(need)*n/card+1)
		whole, contains, bits := card*50, steps*90, card+card/4+n/128+steps*2
		switch {
		case whole <= contains && whole <= bits:
			how = segBestWhole
		case contains <= bits:
			how = segBestContains
		default:
			how = segBestDense
		}
	}
	if how == segBestWhole {
		out := make([]segCand, 0, card)
		it := bm.ManyIterator()
		buf := make([]uint32, 256)
		for {
			k := it.NextMany(buf)
			if k == 0 {
				break
			}
			for _, d := range buf[:k] {
				if num := keys[d]; !b.passed(num) {
					out = append(out, segCand{num, d})
				}
			}
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		slices.SortFunc(out, func(a, b segCand) int {
			if asc {
				return cmp.Compare(a.num, b.num)
			}
			return cmp.Compare(b.num, a.num)
		})
		cut := min(need, len(out))
		for cut > 0 && cut < len(out) && out[cut].num == out[cut-1].num {
			cut++
		}
		return out[:cut], nil
	}
	in := bm.Contains
	if how == segBestDense {
		words := int(bm.Maximum()/64) + 1
		if cap(*dense) < words {
			*dense = make([]uint64, words)
		}
		bits := (*dense)[:words]
		clear(bits)
		bm.WriteDenseTo(bits)
		in = func(d uint32) bool { return d/64 < uint32(len(bits)) && bits[d/64]&(1<<(d%64)) != 0 }
	}
	return walkOrder(ctx, keys, order, b, need, in)
}

// bound is the number past which no document can make a page: the
// need-th best of the segments gone through so far.
type bound struct {
	num uint64
	set bool
	asc bool
}

// passed reports whether num comes after the bound (a tie does not).
func (b bound) passed(num uint64) bool {
	return b.set && (b.asc && num > b.num || !b.asc && num < b.num)
}

// boundOf is the bound the lists (each best first) give: the need-th
// best of their numbers, unset when they hold fewer.
func boundOf(lists []segList, need int, asc bool) bound {
	pos := make([]int, len(lists))
	var last uint64
	for n := 0; n < need; n++ {
		best := -1
		for j := range lists {
			if pos[j] < len(lists[j].docs) {
				num := lists[j].docs[pos[j]].num
				if best < 0 || asc && num < last || !asc && num > last {
					best, last = j, num
				}
			}
		}
		if best < 0 {
			return bound{asc: asc}
		}
		pos[best]++
	}
	return bound{num: last, set: true, asc: asc}
}

// walkOrder goes through order (a segment's documents by their numbers,
// smallest first) from its best end (the largest, or the smallest with
// b.asc) and returns the documents in holds, need of them and any after
// them that tie with the last, best first, stopping at the first past
// the bound b.
func walkOrder(ctx context.Context, keys []uint64, order []uint32, b bound, need int, in func(d uint32) bool) ([]segCand, error) {
	asc := b.asc
	out := make([]segCand, 0, min(need, len(order)))
	for k := range order {
		if k%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		d := order[k]
		if !asc {
			d = order[len(order)-1-k]
		}
		if !in(d) {
			continue
		}
		num := keys[d]
		if len(out) >= need && num != out[len(out)-1].num || b.passed(num) {
			break // every later one is worse than need of this segment, or than the bound
		}
		out = append(out, segCand{num, d})
	}
	return out, nil
}

// mergeBest puts the first need documents of the segments' lists (each
// best first) into top, best first (top.e is then no longer a heap:
// the caller sorts it). Documents of equal numbers are ordered by their
// keys (top.cmp), within a list as across lists.
func mergeBest(view *keyView, lists []segList, top *tsHeap, need int) error {
	total := 0
	for _, l := range lists {
		total += len(l.docs)
	}
	ids := make([]byte, 8*min(total, need))
	entry := func(j int, c segCand) tsEntry {
		return tsEntry{num: c.num, id: binary.BigEndian.AppendUint64(nil, view.segs.offsets[lists[j].seg]+uint64(c.d))}
	}
	// better reports whether a (of list ja) comes before b (of list jb).
	better := func(ja int, a segCand, jb int, b segCand) bool {
		if a.num != b.num {
			return a.num < b.num == top.asc
		}
		c := top.cmp(entry(ja, a), entry(jb, b))
		return c < 0 == top.asc
	}
	// Ties within a list are in no order of keys: sort each run of equal
	// numbers by key first.
	for j := range lists {
		docs := lists[j].docs
		for a := 0; a < len(docs); {
			b := a + 1
			for b < len(docs) && docs[b].num == docs[a].num {
				b++
			}
			if b-a > 1 {
				slices.SortFunc(docs[a:b], func(x, y segCand) int {
					if better(j, x, j, y) {
						return -1
					}
					return 1
				})
			}
			a = b
		}
	}
	pos := make([]int, len(lists))
	top.e = top.e[:0]
	for len(top.e) < need {
		best := -1
		for j := range lists {
			if pos[j] < len(lists[j].docs) && (best < 0 || better(j, lists[j].docs[pos[j]], best, lists[best].docs[pos[best]])) {
				best = j
			}
		}
		if best < 0 {
			break
		}
		c := lists[best].docs[pos[best]]
		pos[best]++
		k := len(top.e)
		id := ids[8*k : 8*k+8 : 8*k+8]
		binary.BigEndian.PutUint64(id, view.segs.offsets[lists[best].seg]+uint64(c.d))
		top.e = append(top.e, tsEntry{num: c.num, id: id})
	}
	if top.err != nil {
		return fmt.Errorf("query: search: %w", top.err)
	}
	return nil
}

// bestOfStarts answers a query that is one range of start times (after:,
// before:, or both folded into one: a startQuery's numbers [lo, hi)) in
// the default order, from the numbers alone: the ts number is the start,
// so the range's recordings are one run of each segment's order, found by
// binary search, and the page is read from its newest (or oldest) end.
// It returns false, having offered nothing, when some segment's numbers
// are not read yet.
func bestOfStarts(ctx context.Context, view *keyView, lo, hi uint64, top *tsHeap, need int) (int, bool, error) {
	for i := range view.segs.segs {
		if view.keys[i] == nil || view.orders[i] == nil {
			return 0, false, nil
		}
	}
	total := 0
	var lists []segList
	for i, ss := range view.segs.segs {
		keys, order := view.keys[i], view.orders[i]
		from := sort.Search(len(order), func(k int) bool { return keys[order[k]] >= lo })
		to := sort.Search(len(order), func(k int) bool { return keys[order[k]] >= hi })
		if from >= to {
			continue
		}
		del := ss.Deleted()
		live := func(d uint32) bool { return del == nil || !del.Contains(d) }
		n := to - from
		if del != nil {
			n = 0
			for _, d := range order[from:to] {
				if live(d) {
					n++
				}
			}
		}
		total += n
		l, err := walkOrder(ctx, keys, order[from:to], bound{asc: top.asc}, need, live)
		if err != nil {
			return 0, false, err
		}
		lists = append(lists, segList{seg: i, docs: l})
	}
	if err := mergeBest(view, lists, top, need); err != nil {
		return 0, false, err
	}
	return total, true, nil
}

// bestOfRunning answers a query that is one at: or during: term (a
// runningQuery) in the default order from the numbers: the recordings of
// each segment's window (runningQuery.runs) are one run of its order, so
// the page is read from its newest (or oldest) end, as bestOfStarts does,
// asking of each that started before the window whether it ends in it
// (endsAfter). It returns false, having offered nothing, when some
// segment's numbers (of either order) are not read yet.
func bestOfRunning(ctx context.Context, view, durs *keyView, rq *runningQuery, top *tsHeap, need int) (int, bool, error) {
	for i := range view.segs.segs {
		if view.keys[i] == nil || view.orders[i] == nil || durs.keys[i] == nil {
			return 0, false, nil
		}
	}
	from := rq.from.UnixNano()
	total := 0
	var lists []segList
	for i, ss := range view.segs.segs {
		a, c, b := rq.runs(view, i)
		if a >= b {
			continue
		}
		keys, order := view.keys[i], view.orders[i]
		del := ss.Deleted()
		runs := make(map[uint32]bool, c-a) // of [a, c): running or not
		for _, d := range order[a:c] {
			if del == nil || !del.Contains(d) {
				in, err := endsAfter(view, durs, i, d, from)
				if err != nil {
					return 0, false, err
				}
				runs[d] = in
				if in {
					total++
				}
			}
		}
		for _, d := range order[c:b] {
			if del == nil || !del.Contains(d) {
				total++
			}
		}
		in := func(d uint32) bool {
			if r, ok := runs[d]; ok {
				return r
			}
			return del == nil || !del.Contains(d) // [c, b) runs; [a, c) is in runs but the deleted
		}
		l, err := walkOrder(ctx, keys, order[a:b], bound{asc: top.asc}, need, in)
		if err != nil {
			return 0, false, err
		}
		lists = append(lists, segList{seg: i, docs: l})
	}
	if err := mergeBest(view, lists, top, need); err != nil {
		return 0, false, err
	}
	return total, true, nil
}
