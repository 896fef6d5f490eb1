// Live recordings in the index: a recording that grows in place
// (archive.ChangeGrow) gets its new event blocks (and the block its new
// events continue) and a new recording document, without removing and
// re-adding the blocks before.

package query

import (
	"errors"

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

// putGrown queues the documents of live recording id that a grow added or
// changed: its events from from on (in blocks, see block.go), and its
// recording document, whose event texts are gathered from every event.
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
	// The blocks holding event from or any after it, and the last block
	// before from when it is not full (so that a recording growing by a
	// few events a second does not become many small blocks), are written
	// again from the first event of the earliest of them. A block's id
	// names its last event: a grown block is a new document.
	ids, err := bt.ix.docIDsOf(bt.ctx, []string{doc.ID})
	if err != nil {
		return err
	}
	start := from
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
	return bt.putFrom(&doc, start, func(fn func(n int, e *formats.Event) error) error {
		return a.EachEvent(id, fn)
	})
}
