// The events of a page of hits read straight from the segments, for an
// event query of one term or a conjunction of terms (cmd:kick,
// cmd:"kick 12", kind:vote): bleve's search of the page's blocks built a
// disjunction of the page's recording ids and a conjunction with the
// term, collected and sorted its matches by id, then looked each id up
// again to load its stored fields (about half of a cmd: request's CPU
// at a million recordings, besides finding the page).

package query

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/blevesearch/bleve/v2/search/query"
	index "github.com/blevesearch/bleve_index_api"
	segment "github.com/blevesearch/scorch_segment_api/v2"
)

// evTerms returns the field and term of each term of evq when evq is a
// term query or a conjunction of term queries, else ok false.
func evTerms(evq query.Query) (terms []*query.TermQuery, ok bool) {
	switch q := evq.(type) {
	case *query.TermQuery:
		return []*query.TermQuery{q}, true
	case *query.ConjunctionQuery:
		for _, c := range q.Conjuncts {
			tq, ok := c.(*query.TermQuery)
			if !ok {
				return nil, false
			}
			terms = append(terms, tq)
		}
		return terms, len(terms) > 0
	}
	return nil, false
}

// blockRef is a matching block: its id and stored data.
type blockRef struct {
	id, data string
}

// pageBlocks returns the blocks of the recordings recs that hold every
// term of evq (evTerms), in id order, and false when evq is not such a
// query or the index is not one of scorch segments (the caller then
// searches). It stops after max+1 blocks (the caller takes another way
// past max).
func (ix *Index) pageBlocks(ctx context.Context, recs []string, evq query.Query, max int) ([]blockRef, bool, error) {
	terms, ok := evTerms(evq)
	if !ok {
		return nil, false, nil
	}
	r, err := ix.reader()
	if err != nil {
		return nil, false, fmt.Errorf("query: events: %w", err)
	}
	defer r.Close()
	sv, ok := segViewOf(r)
	if !ok {
		return nil, false, nil
	}
	var out []blockRef
	id := make(index.IndexInternalID, 8)
	for i, ss := range sv.segs {
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
		del := ss.Deleted()
		recDict, err := ss.Segment().Dictionary(fRec)
		if err != nil {
			return nil, false, fmt.Errorf("query: events: %w", err)
		}
		// The documents of the page's recordings in this segment, in
		// document order (the terms' postings are read forward).
		var docs []uint64
		for _, rec := range recs {
			pl, err := recDict.PostingsList([]byte(rec), del, nil)
			if err != nil {
				return nil, false, fmt.Errorf("query: events: %w", err)
			}
			it := pl.Iterator(false, false, false, nil)
			for {
				p, err := it.Next()
				if err != nil {
					return nil, false, fmt.Errorf("query: events: %w", err)
				}
				if p == nil {
					break
				}
				if del == nil || !del.Contains(uint32(p.Number())) {
					docs = append(docs, p.Number())
				}
			}
		}
		if len(docs) == 0 {
			continue
		}
		slices.Sort(docs)
		// Each term's postings, read forward; at[k] is the document the
		// last Advance gave (which it consumed), done[k] the end.
		its := make([]segment.PostingsIterator, len(terms))
		at := make([]uint64, len(terms))
		started, done := make([]bool, len(terms)), make([]bool, len(terms))
		for k, t := range terms {
			d, err := ss.Segment().Dictionary(t.FieldVal)
			if err != nil {
				return nil, false, fmt.Errorf("query: events: %w", err)
			}
			pl, err := d.PostingsList([]byte(t.Term), nil, nil)
			if err != nil {
				return nil, false, fmt.Errorf("query: events: %w", err)
			}
			its[k] = pl.Iterator(false, false, false, nil)
		}
		for _, d := range docs {
			all := true
			for k, it := range its {
				if !done[k] && (!started[k] || at[k] < d) {
					p, err := it.Advance(d)
					if err != nil {
						return nil, false, fmt.Errorf("query: events: %w", err)
					}
					started[k] = true
					if p == nil {
						done[k] = true
					} else {
						at[k] = p.Number()
					}
				}
				if done[k] || at[k] != d {
					all = false
					break
				}
			}
			if !all {
				continue
			}
			binary.BigEndian.PutUint64(id, sv.offsets[i]+d)
			ext, data, err := sv.stored(id)
			if err != nil {
				return nil, false, err
			}
			out = append(out, blockRef{ext, string(data)})
			if len(out) > max {
				return out, true, nil
			}
		}
	}
	slices.SortFunc(out, func(a, b blockRef) int { return strings.Compare(a.id, b.id) })
	return out, true, nil
}

// anyLive reports whether some live document of the index holds one of
// the terms (field, term pairs), from the segments' postings, and false
// for ok when the index is not one of scorch segments (the caller then
// searches). Asking it of every text term of every query (are recordings
// marked over in its class? does a live recording's part hold it?) was
// a bleve search each.
func (ix *Index) anyLive(terms ...*query.TermQuery) (found, ok bool, err error) {
	r, err := ix.reader()
	if err != nil {
		return false, false, fmt.Errorf("query: %w", err)
	}
	defer r.Close()
	sv, ok := segViewOf(r)
	if !ok {
		return false, false, nil
	}
	for _, ss := range sv.segs {
		for _, t := range terms {
			d, err := ss.Segment().Dictionary(t.FieldVal)
			if err != nil {
				return false, false, fmt.Errorf("query: %w", err)
			}
			pl, err := d.PostingsList([]byte(t.Term), ss.Deleted(), nil)
			if err != nil {
				return false, false, fmt.Errorf("query: %w", err)
			}
			if pl.Count() > 0 {
				return true, true, nil
			}
		}
	}
	return false, true, nil
}
