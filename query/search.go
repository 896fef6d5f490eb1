// This file answers queries: one bleve search over recording documents
// (event-level terms are matched there too, against the recording's
// command, chat and other event text), then one small search per hit for the
// events that matched under it.

package query

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
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
	Flags                            []string
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

// Search parses q and returns up to limit matching recordings, newest first.
// Parse errors are *ParseError values.
func (ix *Index) Search(ctx context.Context, q string, limit int) (*Results, error) {
	pq, err := Parse(q)
	if err != nil {
		return nil, err
	}
	return ix.SearchQuery(ctx, pq, 0, limit)
}

// SearchQuery runs a parsed query and returns the matching recordings from
// offset from on, at most limit of them (DefaultLimit when limit <= 0),
// newest first (recordings without a start time last).
func (ix *Index) SearchQuery(ctx context.Context, q *Query, from, limit int) (*Results, error) {
	began := time.Now()
	if limit <= 0 {
		limit = DefaultLimit
	}
	if from < 0 {
		from = 0
	}
	var must, not, events []query.Query
	needRecField := true // must the query be limited to recording documents?
	for i := range q.Terms {
		t := &q.Terms[i]
		rq := recQuery(t)
		if t.Neg {
			not = append(not, rq)
			continue
		}
		must = append(must, rq)
		if t.Op != "id" {
			needRecField = false
		}
		if t.Level() != RecordingLevel {
			events = append(events, eventQuery(t))
		}
	}
	if needRecField {
		must = append(must, termQ(fIsRec, "r"))
	}
	var top query.Query = query.NewConjunctionQuery(must)
	if len(must) == 1 {
		top = must[0]
	}
	if len(not) > 0 {
		top = query.NewBooleanQuery(must, nil, not)
	}
	hits, total, err := ix.newest(ctx, top, from, limit)
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
	for _, dm := range hits {
		var h Hit
		s, _ := dm.Fields[fData].(string)
		if err := decodeRec(dm.ID, []byte(s), &h); err != nil {
			return nil, fmt.Errorf("query: recording %s: %w", dm.ID, err)
		}
		out.Hits = append(out.Hits, h)
	}
	if evq != nil && len(out.Hits) > 0 {
		if err := ix.allEvents(ctx, out.Hits, evq); err != nil {
			return nil, err
		}
	}
	out.Took = time.Since(began)
	return out, nil
}

// windowMin is the default number of matching recordings above which
// newest looks at a recent time window first.
const windowMin = 2000

// newest returns the newest matching recordings [from, from+limit) of q and
// the number of all matching recordings.
//
// bleve sorts by visiting every hit, which costs about a microsecond per
// matching recording. For a query that matches many recordings, newest
// counts them (cheaply, without sorting), then sorts only those in a recent
// window of start times sized to hold a few pages, widening it when it holds
// too few; the last round has no window.
func (ix *Index) newest(ctx context.Context, q query.Query, from, limit int) (search.DocumentMatchCollection, int, error) {
	need := from + limit
	total := -1
	lo, hi, ok, err := ix.span()
	if err != nil {
		return nil, 0, err
	}
	var w time.Duration
	if ok && hi > lo {
		if total, err = ix.count(ctx, q); err != nil {
			return nil, 0, err
		}
		if total > ix.windowMin && total > 4*need {
			span := float64(hi - lo)
			w = time.Duration(span * float64(4*need) / float64(total))
			w = max(w, time.Hour)
		}
	}
	for {
		wq := q
		if w > 0 && hi-int64(w) > lo {
			yes := true
			rq := query.NewDateRangeInclusiveQuery(time.Unix(0, hi-int64(w)), time.Time{}, &yes, nil)
			rq.SetField(fStart)
			wq = query.NewConjunctionQuery([]query.Query{q, rq})
		} else {
			w = 0 // the whole index
		}
		req := bleve.NewSearchRequestOptions(wq, limit, from, false)
		req.SortBy([]string{"-" + fSort})
		req.Score = bleve.ScoreNone
		req.Fields = []string{fData}
		res, err := ix.bi.SearchInContext(ctx, req)
		if err != nil {
			return nil, 0, fmt.Errorf("query: search: %w", err)
		}
		if w == 0 {
			return res.Hits, int(res.Total), nil
		}
		if int(res.Total) >= need {
			return res.Hits, total, nil
		}
		w *= 8
	}
}

// count returns the number of documents q matches, iterating a searcher
// directly: no collector, no sorting, no scores.
func (ix *Index) count(ctx context.Context, q query.Query) (int, error) {
	adv, err := ix.bi.Advanced()
	if err != nil {
		return 0, fmt.Errorf("query: count: %w", err)
	}
	r, err := adv.Reader()
	if err != nil {
		return 0, fmt.Errorf("query: count: %w", err)
	}
	defer r.Close()
	s, err := q.Searcher(ctx, r, ix.bi.Mapping(), search.SearcherOptions{Score: "none"})
	if err != nil {
		return 0, fmt.Errorf("query: count: %w", err)
	}
	defer s.Close()
	sctx := &search.SearchContext{DocumentMatchPool: search.NewDocumentMatchPool(s.DocumentMatchPoolSize(), 0)}
	n := 0
	for {
		d, err := s.Next(sctx)
		if err != nil {
			return 0, fmt.Errorf("query: count: %w", err)
		}
		if d == nil {
			return n, nil
		}
		n++
		sctx.DocumentMatchPool.Put(d)
		if n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
		}
	}
}

// allEvents fills the Events of every hit. One search fetches the matching
// events of all hits when there are few enough; otherwise each hit gets its
// own search, capped at maxEvents.
func (ix *Index) allEvents(ctx context.Context, hits []Hit, evq query.Query) error {
	recs := make([]string, len(hits))
	at := make(map[string]int, len(hits))
	for i := range hits {
		recs[i] = hits[i].ID
		at[hits[i].ID] = i
	}
	size := 4 * ix.maxEvents
	q := query.NewConjunctionQuery([]query.Query{recsQuery(recs), evq})
	req := bleve.NewSearchRequestOptions(q, size, 0, false)
	req.SortBy([]string{"_id"})
	req.Score = bleve.ScoreNone
	req.Fields = []string{fData}
	res, err := ix.bi.SearchInContext(ctx, req)
	if err != nil {
		return fmt.Errorf("query: events: %w", err)
	}
	if int(res.Total) > len(res.Hits) {
		for i := range hits {
			if err := ix.events(ctx, &hits[i], evq); err != nil {
				return err
			}
		}
		return nil
	}
	for _, dm := range res.Hits {
		rec, _, _ := strings.Cut(dm.ID, "/")
		i, ok := at[rec]
		if !ok {
			return fmt.Errorf("query: event %s of no hit", dm.ID)
		}
		h := &hits[i]
		h.EventTotal++
		if len(h.Events) >= ix.maxEvents {
			continue
		}
		var e EventHit
		s, _ := dm.Fields[fData].(string)
		if err := decodeEvent([]byte(s), &e); err != nil {
			return fmt.Errorf("query: event %s: %w", dm.ID, err)
		}
		h.Events = append(h.Events, e)
	}
	return nil
}

// events fills h.Events with the recording's events that match evq.
func (ix *Index) events(ctx context.Context, h *Hit, evq query.Query) error {
	q := query.NewConjunctionQuery([]query.Query{termQ(fRec, h.ID), evq})
	req := bleve.NewSearchRequestOptions(q, ix.maxEvents, 0, false)
	req.SortBy([]string{"_id"})
	req.Score = bleve.ScoreNone
	req.Fields = []string{fData}
	res, err := ix.bi.SearchInContext(ctx, req)
	if err != nil {
		return fmt.Errorf("query: events of %s: %w", h.ID, err)
	}
	h.EventTotal = int(res.Total)
	h.Events = make([]EventHit, len(res.Hits))
	for i, dm := range res.Hits {
		s, _ := dm.Fields[fData].(string)
		if err := decodeEvent([]byte(s), &h.Events[i]); err != nil {
			return fmt.Errorf("query: event %s: %w", dm.ID, err)
		}
	}
	return nil
}

// recQuery matches the recording documents for which t holds (ignoring Neg).
func recQuery(t *Term) query.Query {
	switch t.Op {
	case "player":
		return kwQuery(fPlayer, t)
	case "player-id":
		return kwQuery(fPID, t)
	case "map":
		return kwQuery(fMap, t)
	case "server":
		return kwQuery(fServer, t)
	case "flag":
		return kwQuery(fFlag, t)
	case "format":
		return kwQuery(fFormat, t)
	case "session":
		return kwQuery(fSession, t)
	case "kind":
		return kwQuery(fKinds, t)
	case "id":
		return query.NewConjunctionQuery([]query.Query{termQ(fIsRec, "r"), kwQuery(fRec, t)})
	case "held":
		return termQ(fHeld, fmt.Sprint(t.Bool))
	case "after":
		yes := true
		q := query.NewDateRangeInclusiveQuery(t.Time, time.Time{}, &yes, nil)
		q.SetField(fStart)
		return q
	case "before":
		no := false
		q := query.NewDateRangeInclusiveQuery(time.Time{}, t.Time, nil, &no)
		q.SetField(fStart)
		return q
	case "longer":
		ms, no := float64(t.Dur/time.Millisecond), false
		q := query.NewNumericRangeInclusiveQuery(&ms, nil, &no, nil)
		q.SetField(fDur)
		return q
	case "shorter":
		ms, no := float64(t.Dur/time.Millisecond), false
		q := query.NewNumericRangeInclusiveQuery(nil, &ms, nil, &no)
		q.SetField(fDur)
		return q
	case "cmd":
		return textQuery(fRCmd, t)
	case "chat":
		return textQuery(fRChat, t)
	case "":
		return query.NewDisjunctionQuery([]query.Query{
			textQuery(fWords, t), textQuery(fRCmd, t), textQuery(fRChat, t), textQuery(fREtc, t),
		})
	}
	panic("query: no recording query for operator " + t.Op) // Parse admits only known operators
}

// eventQuery matches the event documents an event-level or free term brings.
func eventQuery(t *Term) query.Query {
	switch t.Op {
	case "cmd":
		return textQuery(fCmd, t)
	case "chat":
		return textQuery(fChat, t)
	case "kind":
		return kwQuery(fKind, t)
	}
	return query.NewDisjunctionQuery([]query.Query{textQuery(fCmd, t), textQuery(fChat, t), textQuery(fText, t)})
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

// String returns the query in a normalised form.
func (q *Query) String() string {
	parts := make([]string, len(q.Terms))
	for i, t := range q.Terms {
		parts[i] = t.Raw
	}
	return strings.Join(parts, " ")
}
