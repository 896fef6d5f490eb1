// Live recordings in the index: a recording that grows in place
// (archive.ChangeGrow) gets its new event blocks (and the block its new
// events continue) and a new recording document, without removing and
// re-adding the blocks before.
//
// A live recording's document carries no event text: that text is in its
// part documents (id "<rec>/p<first event>", fields fPCmd, fPChat, fPEtc),
// each holding the distinct values of the grows it covers. A grow adds one
// part with the values its new events bring, so the analysis of a grow
// is bounded by its new events, not by the recording. The last two parts
// are merged while the earlier is at most twice the size of the later, so
// part sizes at least double from the last to the first: a recording with
// s bytes of text in parts has at most log2(s)+1 of them, and a value is
// merged again at most log1.5(s) times. A search finds live recordings through their parts
// (liveMatch). When the recording is sealed its text goes back into its
// recording document and the parts are removed: sealed recordings look as
// if they had been ingested whole.

package query

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/document"
	"github.com/blevesearch/bleve/v2/search/query"
	"github.com/google/uuid"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/formats"
)

// foldGrow returns the operation that stands for a recording's changes in
// one change-log page once c is added to what final holds: a grow after a
// put or a delete is a put (everything is indexed again), grows after
// grows keep the lowest From.
func foldGrow(final map[uuid.UUID]archive.ChangeOp, from map[uuid.UUID]int, c archive.Change) archive.ChangeOp {
	if c.Op != archive.ChangeGrow {
		return c.Op
	}
	prev, seen := final[c.ID]
	switch {
	case !seen:
		from[c.ID] = c.From
	case prev != archive.ChangeGrow:
		return archive.ChangePut
	default:
		from[c.ID] = min(from[c.ID], c.From)
	}
	return archive.ChangeGrow
}

// putGrown queues the documents of live recording id that a grow added:
// its events from from on (in blocks, see block.go), and its recording
// document. The index keeps what the recording document gathers from the
// events noted so far (liveText), so a grow reads the block its new events
// continue and the new events, not the ones before: its cost does not grow
// with the recording. An index without that state (built by an older
// build, or a change log entry from before it) takes the old way, which
// reads every event.
func putGrown(bt *batcher, a *archive.Archive, id uuid.UUID, from int) error {
	m, err := a.Manifest(id)
	if errors.Is(err, archive.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	doc := DocFromManifest(m, nil)
	if err := checkID(doc.ID); err != nil {
		return err
	}
	lt, err := bt.ix.liveText(doc.ID)
	if err != nil {
		return err
	}
	if lt != nil && lt.N == from && lt.Block <= from {
		// The last block is written again with the new events while it
		// is not full (so that a recording growing by a few events a
		// second does not become many small blocks). A block's id names
		// its last event: a grown block is a new document.
		start := from
		if n := from - lt.Block; n > 0 && n < bt.ix.maxBlockEvents() {
			if err := bt.del(blockDocID(doc.ID, lt.Block, n)); err != nil {
				return err
			}
			start = lt.Block
		}
		lt.sealed = !m.Live
		return bt.putFrom(&doc, start, lt, func(fn func(n int, e *formats.Event) error) error {
			return a.EachEventFrom(id, start, fn)
		})
	}
	// The blocks holding event from or any after it, and the last block
	// before from when it is not full, are written again from the first
	// event of the earliest of them; the parts are written again from the
	// first event.
	ids, err := bt.ix.docIDsOf(bt.ctx, []string{doc.ID})
	if err != nil {
		return err
	}
	if lt != nil {
		bt.dropParts(doc.ID, lt.Parts)
	}
	start, lt := from, &liveText{sealed: !m.Live}
	for _, did := range ids {
		if isPartID(did) {
			if err := bt.del(did); err != nil {
				return err
			}
			continue
		}
		first, last, ok := blockSpan(did)
		if !ok || last < from-1 || last == from-1 && last-first+1 >= bt.ix.maxBlockEvents() {
			continue
		}
		start = min(start, first)
		if err := bt.del(did); err != nil {
			return err
		}
	}
	return bt.putFrom(&doc, start, lt, func(fn func(n int, e *formats.Event) error) error {
		return a.EachEvent(id, fn)
	})
}

// liveText is what the index keeps of a live recording between grows
// (bleve internal key liveTextKey): how many of its events are indexed
// (N), the first event of its last block (Block), the event kinds and the
// text bounds its recording document states, and its parts. It stays small
// whatever the recording's length: the text itself is in the parts.
type liveText struct {
	N     int      `json:"n"`
	Block int      `json:"block"`
	Kinds []string `json:"kinds,omitempty"`
	// Sizes are the bytes of text of each class (cmd, chat, other) in the
	// parts, for maxRecText; Over says a class reached it.
	Sizes [3]int     `json:"sizes"`
	Over  [3]bool    `json:"over"`
	Parts []livePart `json:"parts,omitempty"`
	// sealed says the recording grows no more: the state is dropped.
	sealed bool
}

// livePart is one part document of a live recording: the number of its
// first event (its id, partDocID) and the bytes of its text (its weight
// when parts are merged).
type livePart struct {
	First int `json:"first"`
	Size  int `json:"size"`
}

// newLiveFor returns an empty liveText for a live recording, nil for
// another: putFrom keeps one for the recording's next grow.
func newLiveFor(m *archive.Manifest) *liveText {
	if !m.Live {
		return nil
	}
	return &liveText{}
}

// liveTextKey is the internal key of recording rec's liveText.
func liveTextKey(rec string) []byte { return []byte("live/" + rec) }

// partKey is the internal key of the text of recording rec's part from
// event first on (the part document does not store it).
func partKey(rec string, first int) []byte { return fmt.Appendf(nil, "livep/%s/%x", rec, first) }

// partDocID is the id of recording rec's part document from event first on.
func partDocID(rec string, first int) string { return fmt.Sprintf("%s/p%06x", rec, first) }

// isPartID reports whether a document id is a part document's.
func isPartID(id string) bool { return strings.Contains(id, "/p") }

// recOfPart returns the recording id of a part document id.
func recOfPart(id string) string { rec, _, _ := strings.Cut(id, "/p"); return rec }

// start returns the eventText a grow of the recording notes its new events
// in: the kinds and bounds so far, no text (a sealed recording's grow
// starts from every part's text instead, see putFrom).
func (lt *liveText) start() eventText {
	t := eventText{kinds: slices.Clone(lt.Kinds), over: lt.Over, base: lt.Sizes}
	for _, k := range lt.Kinds {
		if t.seen == nil {
			t.seen = map[string]bool{}
		}
		t.seen[k] = true
	}
	return t
}

// partText is the text of one part: cmd, chat and other values,
// valueSep-separated.
type partText [3]string

// text returns the text of recording rec's part from first on.
func (ix *Index) partText(rec string, first int) (partText, error) {
	var pt partText
	v, err := ix.bi.GetInternal(partKey(rec, first))
	if err != nil {
		return pt, fmt.Errorf("query: live text of %s: %w", rec, err)
	}
	if v != nil {
		if err := json.Unmarshal(v, &pt); err != nil {
			return pt, fmt.Errorf("query: live text of %s from event %d: %w", rec, first, err)
		}
	}
	return pt, nil
}

// size is the bytes of text in pt.
func (pt partText) size() int { return len(pt[0]) + len(pt[1]) + len(pt[2]) }

// union returns the distinct values of a and b, a's first.
func (a partText) union(b partText) partText {
	var out partText
	for i := range out {
		seen := map[string]bool{}
		var v []byte
		for _, s := range []string{a[i], b[i]} {
			if s == "" {
				continue
			}
			for _, x := range strings.Split(s, string(rune(valueSep))) {
				if !seen[x] {
					seen[x] = true
					v = appendValue(v, x)
				}
			}
		}
		out[i] = string(v)
	}
	return out
}

// addPart queues the part of recording rec that a grow's new text t makes
// (none when the grow brought no text), merging the last parts while the
// one before is at most twice the size of the last.
func (bt *batcher) addPart(rec string, lt *liveText, first int, t *eventText) error {
	pt := partText{string(t.cmd), string(t.chat), string(t.etc)}
	if pt == (partText{}) {
		return nil
	}
	p := livePart{First: first, Size: pt.size()}
	for len(lt.Parts) > 0 && lt.Parts[len(lt.Parts)-1].Size <= 2*p.Size {
		prev := lt.Parts[len(lt.Parts)-1]
		old, err := bt.ix.partText(rec, prev.First)
		if err != nil {
			return err
		}
		// The merged part takes the earlier part's id and key; the later
		// one goes, unless it is this grow's, not written yet.
		if p.First != first {
			if err := bt.del(partDocID(rec, p.First)); err != nil {
				return err
			}
			bt.b.DeleteInternal(partKey(rec, p.First))
		}
		pt = old.union(pt)
		p = livePart{First: prev.First, Size: pt.size()}
		lt.Parts = lt.Parts[:len(lt.Parts)-1]
	}
	lt.Parts = append(lt.Parts, p)
	v, err := json.Marshal(pt)
	if err != nil {
		return err
	}
	bt.b.SetInternal(partKey(rec, p.First), v)
	d := document.NewDocument(partDocID(rec, p.First))
	d.AddField(document.NewTextFieldCustom(fRec, nil, []byte(rec), keywordOpts, nil))
	for i, f := range partClassFields {
		bt.ix.addText(d, f, []byte(pt[i]))
	}
	return bt.add(d, 1)
}

// sealedText returns the eventText of a live recording being sealed: the
// text of all its parts, bounded as a recording document's.
func (ix *Index) sealedText(rec string, lt *liveText) (eventText, error) {
	t := lt.start()
	t.base = [3]int{}
	for _, p := range lt.Parts {
		pt, err := ix.partText(rec, p.First)
		if err != nil {
			return t, err
		}
		for i, v := range []*[]byte{&t.cmd, &t.chat, &t.etc} {
			if pt[i] == "" {
				continue
			}
			for _, x := range strings.Split(pt[i], string(rune(valueSep))) {
				t.add(i, v, x)
			}
		}
	}
	return t, nil
}

// dropParts queues the removal of a recording's parts: documents and text.
func (bt *batcher) dropParts(rec string, parts []livePart) {
	for _, p := range parts {
		bt.b.Delete(partDocID(rec, p.First))
		bt.b.DeleteInternal(partKey(rec, p.First))
	}
}

// update notes that n events are indexed, the last block starting at
// event block, and t's kinds and bounds; t's text went into a part.
func (lt *liveText) update(t *eventText, n, block int) {
	lt.N, lt.Block = n, block
	lt.Kinds = t.kinds
	lt.Over = t.over
	for i, v := range [][]byte{t.cmd, t.chat, t.etc} {
		lt.Sizes[i] = t.base[i] + len(v)
	}
}

// liveText returns recording rec's liveText, or nil.
func (ix *Index) liveText(rec string) (*liveText, error) {
	v, err := ix.bi.GetInternal(liveTextKey(rec))
	if err != nil {
		return nil, fmt.Errorf("query: live state of %s: %w", rec, err)
	}
	if v == nil {
		return nil, nil
	}
	lt := new(liveText)
	if err := json.Unmarshal(v, lt); err != nil {
		return nil, nil // rebuilt the old way
	}
	return lt, nil
}

// setLiveText queues lt as recording rec's liveText, or its removal when
// the recording is sealed.
func (bt *batcher) setLiveText(rec string, lt *liveText) error {
	if lt.sealed {
		bt.b.DeleteInternal(liveTextKey(rec))
		return nil
	}
	v, err := json.Marshal(lt)
	if err != nil {
		return err
	}
	bt.b.SetInternal(liveTextKey(rec), v)
	return nil
}

// liveMatch returns a query for the recording documents of live
// recordings whose parts match text term t (whatever its Neg), or nil when
// none does. The recordings found are live ones: as many as grow at once.
func (ix *Index) liveMatch(ctx context.Context, t *Term) (query.Query, error) {
	op, ok := lookup(t.Op)
	if !ok || op.kind != opText || op.event == nil {
		return nil, nil
	}
	qs := make([]query.Query, len(op.classes))
	var terms []*query.TermQuery // when every one is a term
	for i, c := range op.classes {
		qs[i] = recTextQuery(partClassFields[c], t)
		if tq, ok := qs[i].(*query.TermQuery); ok {
			terms = append(terms, tq)
		}
	}
	// Most indexes hold no live recording's part with the word: one look
	// at each segment's postings says so without a search.
	if len(terms) == len(qs) {
		if found, ok, err := ix.anyLive(terms...); err != nil || ok && !found {
			return nil, err
		}
	}
	var pq query.Query = query.NewDisjunctionQuery(qs)
	if len(qs) == 1 {
		pq = qs[0]
	}
	seen := map[string]bool{}
	var recs []query.Query
	const page = 1000
	var after []string
	for {
		req := bleve.NewSearchRequestOptions(pq, page, 0, false)
		req.SortBy([]string{"_id"})
		req.Score = bleve.ScoreNone
		req.SearchAfter = after
		res, err := ix.bi.SearchInContext(ctx, req)
		if err != nil {
			return nil, fmt.Errorf("query: live text: %w", err)
		}
		for _, h := range res.Hits {
			if rec := recOfPart(h.ID); !seen[rec] {
				seen[rec] = true
				recs = append(recs, termQ(fRec, rec))
			}
		}
		if len(res.Hits) < page {
			break
		}
		after = []string{res.Hits[len(res.Hits)-1].ID}
	}
	if len(recs) == 0 {
		return nil, nil
	}
	return query.NewConjunctionQuery([]query.Query{termQ(fIsRec, "r"), query.NewDisjunctionQuery(recs)}), nil
}
