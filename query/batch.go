// Bounded index batches.
//
// bleve turns each batch into one in-memory segment before it is written,
// so the memory an update takes grows with its batch. A batcher flushes
// whenever a batch reaches maxBatchDocs documents or maxBatchBytes of
// document data, so indexing one recording with 100,000 events, or 512
// recordings at once, takes the same bounded memory (one batch per change-log
// page took 580 MiB for one 1 GB recording).

package query

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/document"

	"github.com/replayarchive/replay/formats"
)

// Limits of one bleve batch, in documents (an event block counts as its
// events) and bytes. Each batch becomes a segment that bleve writes, syncs
// and merges again and again with the next ones, so fewer, larger batches
// cost less as long as memory stays bounded. At 2,000 events the 1 GB
// generated file's half a million events made 380 segments (merges
// included) and the 200 games 88; at 8,000, 102 and 29, the 1 GB file
// bound by the bytes limit, for the same peak RSS (docs/PERFORMANCE.md).
// The bytes limit also catches recordings whose documents are large (long
// chat, many players).
const (
	maxBatchDocs  = 8000
	maxBatchBytes = 4 << 20
)

// paceDocs is how many documents an update adds between two calls of
// Options.Pace (besides one before each batch): about a millisecond of
// building them, so that a live sync of a fleet's hundreds of grown
// recordings pauses a few times, not once for each.
const paceDocs = 16

// batcher accumulates index operations and flushes them in bounded
// batches. Intermediate flushes leave the stored seq alone; flush(seq)
// stores it with the last batch. The caller holds ix.mu.
type batcher struct {
	ix       *Index
	ctx      context.Context
	b        *bleve.Batch
	docs     int
	maxDocs  int
	maxBytes uint64
	// The longest duration of a recording with a start (see
	// longestKey), grown by put; kept when the index keeps it.
	longest     int64
	kept, grown bool
	// flushes counts batches written (for tests).
	flushes int
	// unpaced counts the documents added since Index.pace was last called.
	unpaced int
	// block is the event block being filled (reused between recordings).
	block block
}

func (ix *Index) newBatcher(ctx context.Context) (*batcher, error) {
	longest, kept, err := ix.longest()
	if err != nil {
		return nil, err
	}
	bt := &batcher{ix: ix, ctx: ctx, b: ix.bi.NewBatch(), maxDocs: maxBatchDocs, maxBytes: maxBatchBytes, longest: longest, kept: kept}
	if ix.batchDocs > 0 {
		bt.maxDocs = ix.batchDocs
	}
	return bt, nil
}

// add queues one document, flushing first when the batch is full. A block
// document counts as its events (n), so a batch holds at most maxDocs
// events' worth of text to analyse.
func (bt *batcher) add(d *document.Document, n int) error {
	if bt.unpaced++; bt.ix.pace != nil && bt.unpaced >= paceDocs {
		bt.ix.pace(bt.ctx)()
		bt.unpaced = 0
	}
	if bt.docs >= bt.maxDocs || bt.b.TotalDocsSize() >= bt.maxBytes {
		if err := bt.write(0, false); err != nil {
			return err
		}
	}
	if err := bt.b.IndexAdvanced(d); err != nil {
		return fmt.Errorf("query: document %s: %w", d.ID(), err)
	}
	bt.docs += n
	return nil
}

// deleteRecs queues the removal of every document of the given recordings.
func (bt *batcher) deleteRecs(ids []string) error {
	old, err := bt.ix.docIDsOf(bt.ctx, ids)
	if err != nil {
		return err
	}
	for _, id := range ids {
		lt, err := bt.ix.liveText(id)
		if err != nil {
			return err
		}
		if lt != nil {
			bt.dropParts(id, lt.Parts)
		}
		bt.b.DeleteInternal(liveTextKey(id))
	}
	for _, id := range old {
		if err := bt.del(id); err != nil {
			return err
		}
	}
	return nil
}

// del queues the removal of one document.
func (bt *batcher) del(id string) error {
	if bt.docs >= bt.maxDocs {
		if err := bt.write(0, false); err != nil {
			return err
		}
	}
	bt.b.Delete(id)
	bt.docs++
	return nil
}

// put queues the documents of recording r, its events given one at a time
// by events (so that they need not all be in memory). The recording's old
// documents must have been deleted already (deleteRecs), or never existed.
func (bt *batcher) put(r *RecordingDoc, events func(fn func(n int, e *formats.Event) error) error) error {
	return bt.putFrom(r, 0, nil, events)
}

// putFrom is put for a recording whose event blocks before event start are
// in the index already (a live recording that grew): events before start
// only feed the recording document.
func (bt *batcher) putFrom(r *RecordingDoc, start int, lt *liveText, events func(fn func(n int, e *formats.Event) error) error) error {
	if err := checkID(r.ID); err != nil {
		return err
	}
	bt.lengthen(r)
	var t eventText
	noted := 0 // events before it are noted already
	if lt != nil {
		// A live recording's grow notes its new events' text for a new
		// part; its seal gathers every part's text into its document.
		t, noted = lt.start(), lt.N
		if lt.sealed {
			var err error
			if t, err = bt.ix.sealedText(r.ID, lt); err != nil {
				return err
			}
		}
	}
	b := &bt.block
	b.reset(r.ID, 0)
	count := 0
	err := events(func(n int, e *formats.Event) error {
		if err := bt.ctx.Err(); err != nil {
			return err
		}
		// An account a login names is for moderators: they find it by
		// player-id:, which viewers may not use; text searches do not.
		ev := e.WithoutAccount()
		e = &ev
		if n >= noted {
			t.note(e)
		}
		count = n + 1
		if n < start {
			return nil
		}
		if b.n > 0 && (b.full(bt.ix.maxBlockEvents()) || n != b.first+b.n) {
			if err := bt.add(bt.ix.blockDoc(b), b.n); err != nil {
				return err
			}
			b.n = 0
		}
		if b.n == 0 {
			b.reset(r.ID, n)
		}
		b.add(e)
		return nil
	})
	if err == nil && b.n > 0 {
		err = bt.add(bt.ix.blockDoc(b), b.n)
	}
	if err == nil && lt != nil {
		first := b.first
		if b.n == 0 {
			first = lt.Block // no block written: the last is as it was
		}
		if lt.sealed {
			bt.dropParts(r.ID, lt.Parts)
		} else {
			err = bt.addPart(r.ID, lt, noted, &t)
		}
		lt.update(&t, max(count, noted), first)
		if err == nil {
			err = bt.setLiveText(r.ID, lt)
		}
		if !lt.sealed {
			// The recording document states kinds and bounds; the
			// text is in the parts.
			t.cmd, t.chat, t.etc = nil, nil, nil
		}
	}
	if err != nil {
		return fmt.Errorf("query: recording %s: %w", r.ID, err)
	}
	return bt.add(bt.ix.recDoc(r, &t), 1)
}

// lengthen notes r's duration in the longest one, for a recording with a
// start (the others never match at: or during:).
func (bt *batcher) lengthen(r *RecordingDoc) {
	if r.Start.IsZero() {
		return
	}
	if d := int64(max(r.Duration, time.Nanosecond)); bt.kept && d > bt.longest {
		bt.longest, bt.grown = d, true
	}
}

// flush writes what is queued and stores seq with it.
func (bt *batcher) flush(seq uint64) error { return bt.write(seq, true) }

// write executes the batch; with setSeq it also stores seq.
func (bt *batcher) write(seq uint64, setSeq bool) error {
	if bt.grown {
		var lb [8]byte
		binary.BigEndian.PutUint64(lb[:], uint64(bt.longest))
		bt.b.SetInternal(longestKey, lb[:])
		bt.grown = false
	}
	if setSeq {
		var sb [8]byte
		binary.BigEndian.PutUint64(sb[:], seq)
		bt.b.SetInternal(seqKey, sb[:])
	}
	if bt.b.Size() == 0 {
		return nil
	}
	if bt.ix.pace != nil {
		defer bt.ix.pace(bt.ctx)()
	}
	if err := bt.ix.bi.Batch(bt.b); err != nil {
		if setSeq {
			return fmt.Errorf("query: apply seq %d: %w", seq, err)
		}
		return fmt.Errorf("query: apply: %w", err)
	}
	bt.flushes++
	bt.b.Reset()
	bt.docs = 0
	return nil
}
