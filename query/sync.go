// Keeping the search index in step with the archive's catalog.
//
// The catalog is the source of truth. Every catalog commit appends to its
// change log; the index stores the sequence number of the last entry it
// applied in the same bleve batch as the documents. Sync applies what is
// missing, so a process killed between a catalog commit and the index
// update leaves an index that the next Sync brings up to date.

package query

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/google/uuid"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/formats"
)

// syncPage is how many change log entries one index batch applies.
const syncPage = 512

// DocFromManifest builds the index document of an archived recording.
func DocFromManifest(m *archive.Manifest, events []formats.Event) RecordingDoc {
	return RecordingDoc{
		ID: m.ID.String(), Format: m.Format, Session: m.Meta.Session,
		Start: m.Meta.Start, Duration: m.Meta.Duration, Ticks: m.Meta.Ticks,
		Players: m.Meta.Players, Map: m.Meta.Map, Server: m.Meta.Server,
		Flags: m.AllFlags(), FlagMoments: flagMoments(m), Held: m.Hold != nil,
		NativeBytes: m.NativeBytes, StoredBytes: m.StoredBytes,
		Attrs: m.Meta.Attrs, Events: events,
	}
}

// flagMoments counts m's flags on a span of ticks.
func flagMoments(m *archive.Manifest) int {
	n := 0
	for _, f := range m.Flags {
		if f.Range != nil {
			n++
		}
	}
	return n
}

// ErrStale is returned by Sync when the change log no longer holds the
// entries the index needs (the index was removed, or restored from an old
// copy): the index must be rebuilt with Rebuild.
var ErrStale = errors.New("query: the search index is older than the catalog's change log; it must be rebuilt")

// Sync applies the archive's change log entries that the index has not
// seen yet, then trims the log. It returns how many entries it applied.
func Sync(ctx context.Context, ix *Index, a *archive.Archive) (int, error) {
	seq, err := ix.Seq()
	if err != nil {
		return 0, err
	}
	last, err := a.LastChange()
	if err != nil {
		return 0, err
	}
	if seq > last {
		return 0, fmt.Errorf("query: index has applied change %d but the catalog's log ends at %d: the index belongs to another archive and must be rebuilt", seq, last)
	}
	applied := 0
	for seq < last {
		changes, err := a.ChangesSince(seq, syncPage)
		if err != nil {
			return applied, err
		}
		if len(changes) == 0 || changes[0].Seq != seq+1 {
			return applied, ErrStale
		}
		// The last operation on a recording in this page wins.
		final := map[uuid.UUID]archive.ChangeOp{}
		from := map[uuid.UUID]int{} // of grows (live.go)
		var order []uuid.UUID
		for _, c := range changes {
			if _, ok := final[c.ID]; !ok {
				order = append(order, c.ID)
			}
			final[c.ID] = foldGrow(final, from, c)
		}
		top := changes[len(changes)-1].Seq
		if err := applyPage(ctx, ix, a, order, final, from, top); err != nil {
			return applied, err
		}
		applied += len(changes)
		seq = top
	}
	if seq > 0 {
		if err := a.TrimChanges(seq); err != nil {
			return applied, err
		}
	}
	return applied, nil
}

// applyPage applies the final operation of each recording of one change-log
// page, in bounded batches, and stores top with the last one. Each put reads
// its manifest and streams its events from the catalog, so one recording's
// documents at most are in memory besides the batch.
func applyPage(ctx context.Context, ix *Index, a *archive.Archive, order []uuid.UUID, final map[uuid.UUID]archive.ChangeOp, from map[uuid.UUID]int, top uint64) error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	bt, err := ix.newBatcher(ctx)
	if err != nil {
		return err
	}
	for _, id := range order {
		if final[id] == archive.ChangeGrow {
			if err := putGrown(bt, a, id, from[id]); err != nil {
				return err
			}
			continue
		}
		if err := bt.deleteRecs([]string{id.String()}); err != nil {
			return err
		}
		if final[id] == archive.ChangeDelete {
			continue
		}
		if err := putRecording(bt, a, id); err != nil {
			return err
		}
	}
	return bt.flush(top)
}

// putRecording queues the documents of archived recording id; a recording
// deleted by a later, untrimmed change is skipped (its documents are gone).
func putRecording(bt *batcher, a *archive.Archive, id uuid.UUID) error {
	m, err := a.Manifest(id)
	if errors.Is(err, archive.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	doc := DocFromManifest(m, nil)
	return bt.putFrom(&doc, 0, newLiveFor(m), func(fn func(n int, e *formats.Event) error) error {
		return a.EachEvent(id, fn)
	})
}

// Rebuild removes the index in dir and builds it again from the archive's
// manifests. It returns the number of recordings indexed.
func Rebuild(ctx context.Context, dir string, a *archive.Archive, opts Options) (*Index, int, error) {
	if err := os.RemoveAll(dir); err != nil {
		return nil, 0, fmt.Errorf("query: remove old index: %w", err)
	}
	ix, err := OpenWith(dir, opts)
	if err != nil {
		return nil, 0, err
	}
	defer trimWhile(trimPeriod)()
	n, err := rebuildInto(ctx, ix, a)
	if err == nil {
		// A bulk build leaves many small segments; merge them once.
		err = ix.Compact(ctx)
	}
	if err != nil {
		ix.Close()
		return nil, 0, err
	}
	return ix, n, nil
}

// trimPeriod is how often a rebuild drops the mapped file pages it has
// read from its resident set (trimMappings): bleve's merges read the
// segments they merge at up to a GB/s, and every 100 ms let 135 MB of
// them pile up at a million recordings.
const trimPeriod = 25 * time.Millisecond

// trimWhile calls trimMappings every period until the function it
// returns is called (which waits for the last call to end). A rebuild
// reads every page of the catalog and, merging, of the index once or
// more: without it they all stayed resident (2.5 GiB at a million
// recordings, of which the process's own memory was 192 MiB). A failed
// trim stops the trimming; it costs memory, not correctness.
func trimWhile(period time.Duration) (stop func()) {
	done, over := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(over)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if trimMappings() != nil {
					return
				}
			}
		}
	}()
	return func() {
		close(done)
		<-over
	}
}

// rebuildInto indexes every manifest into an empty index and records the
// catalog's last change as applied.
func rebuildInto(ctx context.Context, ix *Index, a *archive.Archive) (int, error) {
	last, err := a.LastChange()
	if err != nil {
		return 0, err
	}
	n := 0
	ix.mu.Lock()
	defer ix.mu.Unlock()
	// Intermediate batches keep the old seq: a crash mid-rebuild must not
	// claim the whole log was applied.
	bt, err := ix.newBatcher(ctx)
	if err != nil {
		return 0, err
	}
	err = a.List(ctx, func(m *archive.Manifest) error {
		doc := DocFromManifest(m, nil)
		n++
		return bt.putFrom(&doc, 0, newLiveFor(m), func(fn func(n int, e *formats.Event) error) error {
			return a.EachEvent(m.ID, fn)
		})
	})
	if err != nil {
		return n, err
	}
	if err := bt.flush(last); err != nil {
		return n, err
	}
	return n, a.TrimChanges(last)
}
