// Live recordings in the index: a recording that grows in place
// (archive.ChangeGrow) gets its new event blocks (and the block its new
// events continue) and a new recording document, without removing and
// re-adding the blocks before.

package query

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

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
	// event of the earliest of them.
	ids, err := bt.ix.docIDsOf(bt.ctx, []string{doc.ID})
	if err != nil {
		return err
	}
	start, lt := from, &liveText{sealed: !m.Live}
	for _, did := range ids {
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
// (N), the first event of its last block (Block), and what its recording
// document gathered from them (eventText: bounded by maxRecText a class).
type liveText struct {
	N     int      `json:"n"`
	Block int      `json:"block"`
	Kinds []string `json:"kinds,omitempty"`
	// Texts are eventText's cmd, chat and etc values; Over its over.
	Texts [3]string `json:"texts"`
	Over  [3]bool   `json:"over"`
	// sealed says the recording grows no more: the state is dropped.
	sealed bool
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

// update notes that n events are indexed, the last block starting at
// event block, and t's texts.
func (lt *liveText) update(t *eventText, n, block int) {
	lt.N, lt.Block = n, block
	lt.Kinds = t.kinds
	lt.Texts = [3]string{string(t.cmd), string(t.chat), string(t.etc)}
	lt.Over = t.over
}

// text rebuilds the eventText lt was made from.
func (lt *liveText) text() eventText {
	t := eventText{kinds: lt.Kinds, over: lt.Over, cmd: []byte(lt.Texts[0]), chat: []byte(lt.Texts[1]), etc: []byte(lt.Texts[2])}
	for _, k := range lt.Kinds {
		if t.seen == nil {
			t.seen = map[string]bool{}
		}
		t.seen[k] = true
	}
	for i, v := range lt.Texts {
		if v == "" || lt.Over[i] {
			continue
		}
		t.texts[i] = map[string]bool{}
		for _, s := range strings.Split(v, string(rune(valueSep))) {
			t.texts[i][s] = true
		}
	}
	return t
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
