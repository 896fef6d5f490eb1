// This file answers queries: one bleve search over recording documents
// (event-level terms are matched there too, against the recording's
// command, chat and other event text), then one small search per hit for the
// events that matched under it.

package query

import (
	"container/heap"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
	index "github.com/blevesearch/bleve_index_api"
)

// Results are the recordings that matched a query.
type Results struct {
	Total int           // recordings that matched, of which Hits is a page
	Took  time.Duration // time spent in Search
	Hits  []Hit
}

// Hit is one matching recording with the events that matched under it.
type Hit struct {
	ID, Format, Session, Map, Server string
	Start                            time.Time
	Duration                         time.Duration
	Players                          []string // player names
	// PlayerIDs are the players' ids, one per name of Players ("" where
	// the format has none): moderators' data (they include accounts), so
	// a search hit's JSON leaves them out.
	PlayerIDs []string
	Flags     []string
	// FlagMoments counts the recording's flags that are about a span of
	// ticks, -1 when the index does not say (a recording indexed by a
	// build before it did): only a hit with some (or unknown) needs its
	// manifest read to list them.
	FlagMoments int
	// Events are the events that matched the query's event-level terms
	// (cmd:, chat:, kind:) and free words, in event order, at most
	// Options.MaxEvents of them.
	Events []EventHit
	// EventTotal counts all matching events of the recording.
	EventTotal int
}

// EventHit is one matching event.
type EventHit struct {
	Tick   int64
	Time   time.Duration // offset from the recording's start
	Kind   string
	Player string
	Text   string
}

// DefaultLimit is the number of hits Search returns when limit <= 0.
const DefaultLimit = 20

// MaxOffset bounds how deep into the hits a page may start (and how many
// hits one page may hold): a page from offset from keeps from+limit
// candidates while it walks the matches. Narrow a query instead of paging
// past it.
const MaxOffset = 100_000

// ErrOffset is returned for a page that starts past MaxOffset.
var ErrOffset = fmt.Errorf("query: a page starts at most %d hits deep; narrow the query", MaxOffset)

// Search parses q and returns up to limit matching recordings, newest first.
// Parse errors are *ParseError values.
func (ix *Index) Search(ctx context.Context, q string, limit int) (*Results, error) {
	pq, err := Parse(q)
	if err != nil {
		return nil, err
	}
	return ix.SearchQuery(ctx, pq, 0, limit)
}

// SortKey names what search results can be ordered by.
type SortKey int

// The orders of search results. Each is total: ties go by start time, then
// by recording id, in the same direction.
const (
	// SortStart orders by start time (recordings without one come after
	// every start, newest first; before every start, oldest first).
	SortStart SortKey = iota
	// SortDuration orders by duration (in milliseconds).
	SortDuration
	// SortPlayers orders by the number of players the recording lists.
	SortPlayers
)

// Sort is an order of search results: by Key, largest (newest) first,
// or smallest first with Asc. The zero Sort, newest first, is the
// default, and the fastest: it alone looks at recent recordings first
// when many match (see newest).
type Sort struct {
	Key SortKey
	Asc bool
}

// ParseSort reads an order as the API and the command line name it: by
// "start", "duration" or "players" ("" is start), and order "desc" or
// "asc" ("" is desc).
func ParseSort(by, order string) (Sort, error) {
	var s Sort
	switch by {
	case "", "start":
	case "duration":
		s.Key = SortDuration
	case "players":
		s.Key = SortPlayers
	default:
		return Sort{}, fmt.Errorf("query: sort %q: want start, duration or players", by)
	}
	switch order {
	case "", "desc":
	case "asc":
		s.Asc = true
	default:
		return Sort{}, fmt.Errorf("query: order %q: want asc or desc", order)
	}
	return s, nil
}

// String names s as ParseSort reads it, e.g. "duration asc".
func (s Sort) String() string {
	by := [...]string{"start", "duration", "players"}[s.Key]
	if s.Asc {
		return by + " asc"
	}
	return by + " desc"
}

// field is the keyword field with doc values that s orders by.
func (s Sort) field() (string, error) {
	switch s.Key {
	case SortStart:
		return fSort, nil
	case SortDuration:
		return fSortDur, nil
	case SortPlayers:
		return fSortPl, nil
	}
	return "", fmt.Errorf("query: no sort key %d", s.Key)
}

// SearchQuery runs a parsed query and returns the matching recordings from
// offset from on, at most limit of them (DefaultLimit when limit <= 0,
// MaxOffset at most), newest first (recordings without a start time last),
// or in the order sort names (at most one; see Sort). Pages of one order
// over an unchanged index hold every match exactly once: each order is
// total. An offset past MaxOffset is ErrOffset. It stops with ctx's error
// when ctx is done.
func (ix *Index) SearchQuery(ctx context.Context, q *Query, from, limit int, sort ...Sort) (*Results, error) {
	began := time.Now()
	if limit <= 0 {
		limit = DefaultLimit
	}
	limit = min(limit, MaxOffset)
	if from > MaxOffset {
		return nil, fmt.Errorf("offset %d: %w", from, ErrOffset)
	}
	from = max(from, 0)
	var so Sort
	switch len(sort) {
	case 0:
	case 1:
		so = sort[0]
	default:
		return nil, fmt.Errorf("query: %d sorts given, want at most one", len(sort))
	}
	field, err := so.field()
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c, err := ix.compiler(ctx, q)
	if err != nil {
		return nil, err
	}
	top, err := c.root()
	if err != nil {
		return nil, err
	}
	events, evTerms, confirm := c.events, c.evTerms, c.confirm
	hits, total, err := ix.newest(ctx, top, field, so.Asc, from, limit)
	if err != nil {
		return nil, err
	}
	out := &Results{Total: total, Hits: make([]Hit, 0, len(hits))}
	var evq query.Query
	if len(events) == 1 {
		evq = events[0]
	} else if len(events) > 1 {
		evq = query.NewDisjunctionQuery(events)
	}
	for _, rh := range hits {
		var h Hit
		if err := decodeRec(rh.id, []byte(rh.data), &h); err != nil {
			return nil, fmt.Errorf("query: recording %s: %w", rh.id, err)
		}
		out.Hits = append(out.Hits, h)
	}
	if confirm {
		if err := ix.overflowed(ctx, out, q); err != nil {
			return nil, err
		}
	}
	if evq != nil && len(out.Hits) > 0 {
		if err := ix.allEvents(ctx, out.Hits, evq, ix.newEventMatcher(evTerms)); err != nil {
			return nil, err
		}
	}
	out.Took = time.Since(began)
	return out, nil
}

// compiler is the compiler of q over this index: with the live
// recordings' text and what is marked as partly in its document.
func (ix *Index) compiler(ctx context.Context, q *Query) (compiler, error) {
	longest, bounded, err := ix.longest()
	if err != nil {
		return compiler{}, err
	}
	return compiler{q: q, longest: time.Duration(longest), bounded: bounded, keys: &ix.keys,
		live: func(t *Term) (query.Query, error) { return ix.liveMatch(ctx, t) },
		marked: func(op string) (bool, error) {
			// The over keyword is on recording documents alone.
			o, _ := lookup(op)
			var terms []*query.TermQuery
			for _, c := range o.classes {
				terms = append(terms, termQ(fOver, recClassFields[c]))
			}
			if found, ok, err := ix.anyLive(terms...); err != nil || ok {
				return found, err
			}
			res, err := ix.bi.SearchInContext(ctx, bleve.NewSearchRequestOptions(query.NewConjunctionQuery([]query.Query{termQ(fIsRec, "r"), overQuery(op)}), 0, 0, false))
			if err != nil {
				return false, fmt.Errorf("query: marked: %w", err)
			}
			return res.Total > 0, nil
		}}, nil
}

// overQuery matches recording documents whose text of the classes op
// searches is only partly in them (fOver, see maxRecText).
func overQuery(op string) query.Query {
	o, _ := lookup(op)
	if len(o.classes) == 1 {
		return termQ(fOver, recClassFields[o.classes[0]])
	}
	qs := make([]query.Query, len(o.classes))
	for i, c := range o.classes {
		qs[i] = termQ(fOver, recClassFields[c])
	}
	return query.NewDisjunctionQuery(qs)
}

// overflowed drops the hits whose recording document holds only part of
// their text and that do not match q by it and their events: for such a
// hit each term is decided on its own (a text term by the recording
// document or, failing that, one of its events; any other term by the
// recording document) and the query's tree evaluated over those answers.
// Total then counts one less per dropped hit (a page may come out short).
func (ix *Index) overflowed(ctx context.Context, out *Results, q *Query) error {
	count := func(q query.Query) (uint64, error) {
		res, err := ix.bi.SearchInContext(ctx, bleve.NewSearchRequestOptions(q, 0, 0, false))
		if err != nil {
			return 0, fmt.Errorf("query: confirm: %w", err)
		}
		return res.Total, nil
	}
	tree := q.Tree()
	kept := out.Hits[:0]
	for _, h := range out.Hits {
		rec := termQ(fRec, h.ID)
		n, err := count(query.NewConjunctionQuery([]query.Query{rec, termQ(fIsRec, "r"), overQuery("")}))
		if err != nil {
			return err
		}
		ok := true
		if n > 0 {
			// holds reports whether term i matches the recording, whatever
			// its Neg.
			holds := func(i int) (bool, error) {
				t := &q.Terms[i]
				op, _ := lookup(t.Op)
				m, err := count(query.NewConjunctionQuery([]query.Query{rec, op.rec(t)}))
				if err != nil || m > 0 || op.kind != opText || op.event == nil {
					return m > 0, err
				}
				return ix.anyEvent(ctx, h.ID, op.event(t), ix.newEventMatcher([]*Term{t}))
			}
			if ok, err = eval(tree, q.Terms, holds); err != nil {
				return err
			}
		}
		if ok {
			kept = append(kept, h)
		} else if out.Total > 0 {
			out.Total--
		}
	}
	out.Hits = kept
	return nil
}

// eval decides whether n holds, given whether each term matches (holds,
// asked lazily: an AND stops at its first false operand, an OR at its
// first true one).
func eval(n *Node, terms []Term, holds func(term int) (bool, error)) (bool, error) {
	if n == nil {
		return true, nil
	}
	if n.Kind == TermNode {
		v, err := holds(n.Term)
		return v != terms[n.Term].Neg, err
	}
	v := n.Kind == AndNode
	for _, c := range n.Nodes {
		cv, err := eval(c, terms, holds)
		if err != nil {
			return false, err
		}
		if cv != v { // AND: a false operand; OR: a true one
			v = cv
			break
		}
	}
	return v != n.Neg, nil
}

// recHit is one recording found by newest: its id and stored data.
type recHit struct {
	id, data string
}

// tsEntry is a candidate of newest's top-N heap: its key's number (see
// keyNumber), the key itself once a tie needed it, and its document.
type tsEntry struct {
	num uint64
	ts  string
	id  index.IndexInternalID
}

// tsHeap keeps the first entries of an order: a min-heap (the root is
// the oldest of the newest so far), or with asc a max-heap. Entries of
// equal numbers are ordered by their keys, read by full on a tie.
// Entries go by value: a pointer to one would make every candidate of a
// walk an allocation.
type tsHeap struct {
	e   []tsEntry
	asc bool
	// full reads the key of the document id; err keeps its first error.
	full func(id index.IndexInternalID) string
	err  error
}

// cmp compares a and b by key, reading their keys when the numbers tie.
func (h *tsHeap) cmp(a, b tsEntry) int {
	if a.num != b.num {
		if a.num < b.num {
			return -1
		}
		return 1
	}
	if a.ts == "" {
		a.ts = h.full(a.id)
	}
	if b.ts == "" {
		b.ts = h.full(b.id)
	}
	return strings.Compare(a.ts, b.ts)
}

func (h *tsHeap) Len() int { return len(h.e) }
func (h *tsHeap) Less(i, j int) bool {
	if h.asc {
		return h.cmp(h.e[i], h.e[j]) > 0
	}
	return h.cmp(h.e[i], h.e[j]) < 0
}
func (h *tsHeap) Swap(i, j int) { h.e[i], h.e[j] = h.e[j], h.e[i] }
func (h *tsHeap) Push(x any)    { h.e = append(h.e, x.(tsEntry)) }
func (h *tsHeap) Pop() any {
	old := h.e
	x := old[len(old)-1]
	h.e = old[:len(old)-1]
	return x
}

// newest returns the matching recordings [from, from+limit) of q in the
// order of sort key field (newest first by default, oldest first with
// asc) and the number of all matching recordings.
//
// It walks q's searcher once, counting matches and keeping the first
// from+limit in a heap by the key's number, which the index keeps in
// memory per segment (sortKeys), so a match costs no doc value read; two
// matches of the same number are ordered by their keys (doc values),
// which happens for recordings that started at the same instant only.
func (ix *Index) newest(ctx context.Context, q query.Query, field string, asc bool, from, limit int) ([]recHit, int, error) {
	need := from + limit
	r, err := ix.reader()
	if err != nil {
		return nil, 0, fmt.Errorf("query: search: %w", err)
	}
	defer r.Close()
	view, cached, err := ix.keys.view(r, field)
	if err != nil {
		return nil, 0, err
	}
	dvr, err := r.DocValueReader([]string{field})
	if err != nil {
		return nil, 0, fmt.Errorf("query: search: %w", err)
	}
	var cur []byte
	visit := func(_ string, term []byte) { cur = append(cur[:0], term...) }
	top := &tsHeap{asc: asc}
	top.full = func(id index.IndexInternalID) string {
		cur = cur[:0]
		if err := dvr.VisitDocValues(id, visit); err != nil && top.err == nil {
			top.err = err
		}
		return string(cur)
	}
	var total int
	sorted := false // top.e is in order already (bestOfStarts, bestOfTerm)
	if sq, ok := q.(*startQuery); ok && cached && field == fSort {
		lo, hi := sq.nums()
		if total, sorted, err = bestOfStarts(ctx, view, lo, hi, top, need); err == nil && !sorted {
			total, err = ix.walk(ctx, r, q, field, view, top, need)
		}
	} else if rq, ok := q.(*runningQuery); ok && cached && field == fSort {
		var durs *keyView
		if durs, _, err = ix.keys.view(r, fSortDur); err == nil {
			total, sorted, err = bestOfRunning(ctx, view, durs, rq, top, need)
		}
		if err == nil && !sorted {
			total, err = ix.walk(ctx, r, q, field, view, top, need)
		}
	} else if tq, ok := q.(*query.TermQuery); ok && cached {
		if total, sorted, err = bestOfTerm(ctx, view, tq, top, need); err == nil && !sorted {
			total, err = walkTerm(ctx, view, field, tq, top, need)
		}
	} else {
		total, err = ix.walk(ctx, r, q, field, view, top, need)
	}
	if err != nil {
		return nil, 0, err
	}
	if !sorted {
		slices.SortFunc(top.e, func(a, b tsEntry) int {
			if asc {
				return top.cmp(a, b)
			}
			return top.cmp(b, a)
		})
	}
	if top.err != nil {
		return nil, 0, fmt.Errorf("query: search: %w", top.err)
	}
	if from >= len(top.e) {
		return nil, total, nil
	}
	out := make([]recHit, 0, len(top.e)-from)
	for _, e := range top.e[from:] {
		id, data, err := storedData(r, view, e.id)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, recHit{id: id, data: string(data)})
	}
	return out, total, nil
}

// offer puts e into the heap when it is among the first need so far; id
// is copied when it is kept.
func (h *tsHeap) offer(e tsEntry, need int) {
	switch {
	case len(h.e) < need:
		e.id = slices.Clone(e.id)
		heap.Push(h, e)
	case h.asc && h.cmp(e, h.e[0]) < 0, !h.asc && h.cmp(e, h.e[0]) > 0:
		e.id = slices.Clone(e.id)
		h.e[0] = e
		heap.Fix(h, 0)
	}
}

// walk offers every recording q matches to top (numbers from view, or
// read from doc values when view is nil) and returns how many match.
func (ix *Index) walk(ctx context.Context, r index.IndexReader, q query.Query, field string, view *keyView, top *tsHeap, need int) (int, error) {
	s, err := q.Searcher(ctx, r, ix.bi.Mapping(), search.SearcherOptions{Score: "none"})
	if err != nil {
		return 0, fmt.Errorf("query: search: %w", err)
	}
	defer s.Close()
	sctx := &search.SearchContext{DocumentMatchPool: search.NewDocumentMatchPool(s.DocumentMatchPoolSize(), 0)}
	total := 0
	for {
		d, err := s.Next(sctx)
		if err != nil {
			return 0, fmt.Errorf("query: search: %w", err)
		}
		if d == nil {
			return total, nil
		}
		total++
		e := tsEntry{id: d.IndexInternalID}
		var ok bool
		if view != nil {
			e.num, ok = view.key(d.IndexInternalID)
		}
		if !ok {
			e.ts = top.full(e.id)
			e.num = keyNumber(field, []byte(e.ts))
		}
		top.offer(e, need)
		if top.err != nil {
			return 0, fmt.Errorf("query: search: %w", top.err)
		}
		sctx.DocumentMatchPool.Put(d)
		if total%64 == 0 {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
		}
	}
}

// storedData returns the id and stored data of the document with internal
// id iid: from its segment when view has the snapshot's segments, else
// through r.
func storedData(r index.IndexReader, view *keyView, iid index.IndexInternalID) (string, []byte, error) {
	if view != nil {
		return view.segs.stored(iid)
	}
	id, err := r.ExternalID(iid)
	if err != nil {
		return "", nil, fmt.Errorf("query: search: %w", err)
	}
	doc, err := r.Document(id)
	if err != nil {
		return "", nil, fmt.Errorf("query: recording %s: %w", id, err)
	}
	var data []byte
	if doc != nil {
		doc.VisitFields(func(f index.Field) {
			if f.Name() == fData {
				data = f.Value()
			}
		})
	}
	return id, data, nil
}

// allEvents fills the Events of every hit from the event blocks that match
// evq (m picks the matching events of each). One search fetches the blocks
// of all hits when there are few enough; otherwise each hit gets its own.
func (ix *Index) allEvents(ctx context.Context, hits []Hit, evq query.Query, m *eventMatcher) error {
	recs := make([]string, len(hits))
	at := make(map[string]int, len(hits))
	for i := range hits {
		recs[i] = hits[i].ID
		at[hits[i].ID] = i
	}
	blocks, direct, err := ix.pageBlocks(ctx, recs, evq, 4*ix.maxEvents)
	if err != nil {
		return err
	}
	if direct && len(blocks) > 4*ix.maxEvents {
		for i := range hits {
			if err := ix.events(ctx, &hits[i], evq, m); err != nil {
				return err
			}
		}
		return nil
	}
	if direct {
		for _, b := range blocks {
			rec, _, _ := strings.Cut(b.id, "/")
			i, ok := at[rec]
			if !ok {
				return fmt.Errorf("query: event block %s of no hit", b.id)
			}
			if err := hitEvents(&hits[i], b.id, b.data, m, ix.maxEvents); err != nil {
				return err
			}
		}
		return nil
	}
	req := bleve.NewSearchRequestOptions(blockQuery(recs, evq), 4*ix.maxEvents, 0, false)
	req.SortBy([]string{"_id"})
	req.Score = bleve.ScoreNone
	req.Fields = []string{fData}
	res, err := ix.bi.SearchInContext(ctx, req)
	if err != nil {
		return fmt.Errorf("query: events: %w", err)
	}
	if int(res.Total) > len(res.Hits) {
		for i := range hits {
			if err := ix.events(ctx, &hits[i], evq, m); err != nil {
				return err
			}
		}
		return nil
	}
	for _, dm := range res.Hits {
		rec, _, _ := strings.Cut(dm.ID, "/")
		i, ok := at[rec]
		if !ok {
			return fmt.Errorf("query: event block %s of no hit", dm.ID)
		}
		s, _ := dm.Fields[fData].(string)
		if err := hitEvents(&hits[i], dm.ID, s, m, ix.maxEvents); err != nil {
			return err
		}
	}
	return nil
}

// anyEvent reports whether an event of recording rec in a block that
// matches evq matches m.
func (ix *Index) anyEvent(ctx context.Context, rec string, evq query.Query, m *eventMatcher) (bool, error) {
	var h Hit
	found := false
	err := ix.eachBlock(ctx, rec, evq, func(id, data string) (bool, error) {
		if err := hitEvents(&h, id, data, m, 0); err != nil {
			return false, err
		}
		found = h.EventTotal > 0
		return !found, nil
	})
	return found, err
}

// eventPage is the number of event blocks events reads per search.
const eventPage = 500

// events fills h.Events with the recording's events that match evq and m,
// reading every matching block to count them all.
func (ix *Index) events(ctx context.Context, h *Hit, evq query.Query, m *eventMatcher) error {
	h.Events, h.EventTotal = nil, 0
	return ix.eachBlock(ctx, h.ID, evq, func(id, data string) (bool, error) {
		return true, hitEvents(h, id, data, m, ix.maxEvents)
	})
}

// eachBlock calls fn with the id and stored data of each event block of
// recording rec that matches evq, in event order, while fn returns true.
func (ix *Index) eachBlock(ctx context.Context, rec string, evq query.Query, fn func(id, data string) (bool, error)) error {
	q := blockQuery([]string{rec}, evq)
	var after []string
	for {
		req := bleve.NewSearchRequestOptions(q, eventPage, 0, false)
		req.SortBy([]string{"_id"})
		req.Score = bleve.ScoreNone
		req.Fields = []string{fData}
		req.SearchAfter = after
		res, err := ix.bi.SearchInContext(ctx, req)
		if err != nil {
			return fmt.Errorf("query: events of %s: %w", rec, err)
		}
		for _, dm := range res.Hits {
			s, _ := dm.Fields[fData].(string)
			more, err := fn(dm.ID, s)
			if err != nil || !more {
				return err
			}
		}
		if len(res.Hits) < eventPage {
			return nil
		}
		after = []string{res.Hits[len(res.Hits)-1].ID}
	}
}

// kwQuery matches a keyword field exactly or by prefix.
func kwQuery(field string, t *Term) query.Query {
	if t.Prefix {
		q := query.NewPrefixQuery(t.Value)
		q.SetField(field)
		return q
	}
	return termQ(field, t.Value)
}

// recTextQuery is textQuery for a recording-level text field, which has a
// word-pair field beside it: a two-word phrase is one term there, a longer
// phrase must have all its pairs before positions are checked.
func recTextQuery(field string, t *Term) query.Query {
	if t.Prefix || len(t.Words) < 2 {
		return textQuery(field, t)
	}
	var qs []query.Query
	for i := 1; i < len(t.Words); i++ {
		qs = append(qs, termQ(field+pairs, t.Words[i-1]+" "+t.Words[i]))
	}
	if len(qs) == 1 {
		return qs[0]
	}
	return query.NewConjunctionQuery(append(qs, textQuery(field, t)))
}

// textQuery matches an analysed field: one word, a word prefix, or a phrase.
func textQuery(field string, t *Term) query.Query {
	switch {
	case t.Prefix:
		q := query.NewPrefixQuery(t.Words[0])
		q.SetField(field)
		return q
	case len(t.Words) == 1:
		return termQ(field, t.Words[0])
	}
	return query.NewPhraseQuery(t.Words, field)
}

// EachHit calls fn with each of the first max recordings q matches (in
// index order, not sorted; without events), for a caller that sums up
// all of a query's recordings rather than showing a page of them: the
// player page's aliases, first and last seen and flags. It returns how
// many recordings match in all, also past max. The query must be of
// recording-level terms only (player:, player-id:, map:, ...): text
// terms may need their recordings' events to be decided (see
// overflowed), which EachHit does not read. It stops with ctx's error
// when ctx is done.
func (ix *Index) EachHit(ctx context.Context, q *Query, max int, fn func(h *Hit) error) (int, error) {
	for i := range q.Terms {
		if q.Terms[i].Level() != RecordingLevel {
			return 0, fmt.Errorf("query: %q: EachHit takes recording-level terms only", q.Terms[i].Raw)
		}
	}
	c, err := ix.compiler(ctx, q)
	if err != nil {
		return 0, err
	}
	top, err := c.root()
	if err != nil {
		return 0, err
	}
	r, err := ix.reader()
	if err != nil {
		return 0, fmt.Errorf("query: each hit: %w", err)
	}
	defer r.Close()
	sv, direct := segViewOf(r)
	var view *keyView
	if direct {
		view = &keyView{segs: sv}
	}
	total := 0
	hit := func(iid index.IndexInternalID) error {
		total++
		if total%64 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if total > max {
			return nil
		}
		id, data, err := storedData(r, view, iid)
		if err != nil {
			return err
		}
		var h Hit
		if err := decodeRec(id, data, &h); err != nil {
			return fmt.Errorf("query: recording %s: %w", id, err)
		}
		return fn(&h)
	}
	if tq, ok := top.(*query.TermQuery); ok && direct {
		_, err := eachPosting(ctx, &sv, tq, func(_ int, _ uint64, id index.IndexInternalID) error { return hit(id) })
		return total, err
	}
	s, err := top.Searcher(ctx, r, ix.bi.Mapping(), search.SearcherOptions{Score: "none"})
	if err != nil {
		return 0, fmt.Errorf("query: each hit: %w", err)
	}
	defer s.Close()
	sctx := &search.SearchContext{DocumentMatchPool: search.NewDocumentMatchPool(s.DocumentMatchPoolSize(), 0)}
	for {
		d, err := s.Next(sctx)
		if err != nil {
			return 0, fmt.Errorf("query: each hit: %w", err)
		}
		if d == nil {
			return total, nil
		}
		err = hit(d.IndexInternalID)
		sctx.DocumentMatchPool.Put(d)
		if err != nil {
			return 0, err
		}
	}
}
