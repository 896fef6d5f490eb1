// This file compiles a parsed query's tree into the bleve query that
// finds its recordings, and gathers what the events under each hit are
// matched by.

package query

import (
	"fmt"
	"time"

	"github.com/blevesearch/bleve/v2/search/query"
)

// compiler turns a Query into one bleve query over recording documents.
type compiler struct {
	q *Query
	// events are the block queries of the event-level and free terms not
	// under an odd number of exclusions, evTerms those terms: the events
	// listed under a hit are theirs.
	events  []query.Query
	evTerms []*Term
	// confirm is set when the query has a text term that a recording
	// whose text overflowed its document (maxRecText) cannot decide:
	// overflowed then checks such hits.
	confirm bool
	// live, when set, returns a query for more recording documents a
	// text term matches (whatever its Neg), or nil: the live recordings
	// whose text is elsewhere than their document. It is ORed with the
	// term's own query, included or excluded.
	live func(t *Term) (query.Query, error)
	// marked, when set, reports whether any recording document is marked
	// as holding only part of the text op searches (fOver): when none is,
	// a text term is its own query, with no disjunction to walk, and no
	// hit needs confirming. Unset, every text term assumes some are.
	marked func(op string) (bool, error)
	// longest, when bounded, is the longest duration of an indexed
	// recording (Index.longest): at: and during: then look at the
	// recordings that started in a window before the term's only (see
	// runningQuery.startLo).
	longest time.Duration
	bounded bool
	// keys are the index's sort numbers, which time terms are answered
	// from (timerange.go).
	keys *sortKeys
}

// useKeys is what a query answered from the sort numbers offers.
type usesKeys interface{ useKeys(*sortKeys) }

// root compiles the whole query. A query of terms that AND together
// compiles as it always did: a conjunction, or a boolean query when some
// are excluded.
func (c *compiler) root() (query.Query, error) {
	tree := c.q.Tree()
	if tree == nil {
		return termQ(fIsRec, "r"), nil
	}
	bq, neg, err := c.node(tree, false)
	if err != nil {
		return nil, err
	}
	if neg {
		return excluded(bq), nil
	}
	return bq, nil
}

// node compiles n. It returns a query that matches the recording
// documents where n holds, ignoring n's own exclusion, and whether n is
// excluded (the caller puts it under must_not). excl says whether n stands
// under an odd number of exclusions.
//
// A text term that the recording document may hold only in part matches
// the recordings marked so (overQuery) too when it counts positively, and
// not when it is excluded: either way the bleve query matches a superset
// of the answer, which overflowed narrows.
func (c *compiler) node(n *Node, excl bool) (query.Query, bool, error) {
	if n.Kind == TermNode {
		t := &c.q.Terms[n.Term]
		op, ok := lookup(t.Op)
		if !ok {
			return nil, false, fmt.Errorf("query: term %q: unknown operator %q", t.Raw, t.Op)
		}
		excl = excl != t.Neg
		rq := op.rec(t)
		if w, ok := rq.(*runningQuery); ok && c.bounded && !t.Time.IsZero() {
			w.startLo = t.Time.Add(-c.longest)
		}
		if k, ok := rq.(usesKeys); ok {
			k.useKeys(c.keys)
		}
		if op.kind == opText && op.event != nil && c.live != nil {
			lq, err := c.live(t)
			if err != nil {
				return nil, false, err
			}
			if lq != nil {
				rq = query.NewDisjunctionQuery([]query.Query{rq, lq})
			}
		}
		if op.kind == opText && op.event != nil {
			marked := true
			if c.marked != nil {
				var err error
				if marked, err = c.marked(t.Op); err != nil {
					return nil, false, err
				}
			}
			if marked && !excl {
				rq = query.NewDisjunctionQuery([]query.Query{rq, overQuery(t.Op)})
			}
			c.confirm = c.confirm || marked
		}
		if !excl && op.event != nil {
			c.events = append(c.events, op.event(t))
			c.evTerms = append(c.evTerms, t)
		}
		return rq, t.Neg, nil
	}
	excl = excl != n.Neg
	var must, not []query.Query
	nodes := n.Nodes
	if n.Kind == AndNode {
		var rq query.Query
		if rq, nodes = c.startRange(nodes); rq != nil {
			must = append(must, rq)
		}
	}
	for _, k := range nodes {
		kq, kneg, err := c.node(k, excl)
		if err != nil {
			return nil, false, err
		}
		switch {
		case n.Kind == OrNode && kneg:
			must = append(must, excluded(kq))
		case kneg:
			not = append(not, kq)
		default:
			must = append(must, kq)
		}
	}
	if n.Kind == OrNode {
		return query.NewDisjunctionQuery(must), n.Neg, nil
	}
	if len(must) == 0 {
		must = append(must, termQ(fIsRec, "r"))
	}
	var q query.Query = query.NewConjunctionQuery(must)
	if len(must) == 1 {
		q = must[0]
	}
	if len(not) > 0 {
		q = query.NewBooleanQuery(must, nil, not)
	}
	return q, n.Neg, nil
}

// excluded matches the recording documents that q does not match.
func excluded(q query.Query) query.Query {
	return query.NewBooleanQuery([]query.Query{termQ(fIsRec, "r")}, nil, []query.Query{q})
}

// startRange folds the positive after: and before: terms among the
// operands of an AND into one range of start times, when there are
// several: each alone is a range over most of the index (after:D before:E
// was the conjunction of two), together a narrow one. It returns that
// range (nil for none) and the other operands.
func (c *compiler) startRange(nodes []*Node) (query.Query, []*Node) {
	var lo, hi time.Time
	var rest []*Node
	n := 0
	for _, k := range nodes {
		if k.Kind != TermNode || k.Neg || c.q.Terms[k.Term].Neg || (c.q.Terms[k.Term].Op != "after" && c.q.Terms[k.Term].Op != "before") {
			rest = append(rest, k)
			continue
		}
		t := &c.q.Terms[k.Term]
		n++
		if t.Op == "after" && (lo.IsZero() || t.Time.After(lo)) {
			lo = t.Time
		}
		if t.Op == "before" && (hi.IsZero() || t.Time.Before(hi)) {
			hi = t.Time
		}
	}
	if n < 2 {
		return nil, nodes
	}
	q := &startQuery{from: lo, until: hi}
	q.useKeys(c.keys)
	return q, rest
}
