package replay

import (
	"context"
	"sync"
	"time"
)

// Live grows bring the search index up to date together: with
// Options.LiveIndexEvery set, a grow commits its chunks and events and
// returns, and one index sync at most that often takes every grow since
// the last one in one batch. Hundreds of files growing once a second each
// then cost a few index batches a second, not one each (each batch is a
// new index segment that the index's merger must fold in again).

// liveSync schedules the index syncs of live grows.
type liveSync struct {
	mu      sync.Mutex
	timer   *time.Timer // a sync is scheduled
	closed  bool
	lastEnd time.Time
	running sync.WaitGroup
}

// syncSoon schedules an index sync no sooner than LiveIndexEvery after the
// last scheduled one ended, unless one is scheduled already.
func (x *Archive) syncSoon() {
	ls := &x.live
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.closed || ls.timer != nil {
		return
	}
	ls.running.Add(1)
	ls.timer = time.AfterFunc(max(0, time.Until(ls.lastEnd.Add(x.opts.LiveIndexEvery))), func() {
		defer ls.running.Done()
		ls.mu.Lock()
		ls.timer = nil
		closed := ls.closed
		ls.mu.Unlock()
		if closed {
			return
		}
		if err := x.sync(context.Background()); err != nil {
			x.log.Error("search index after live grows", "err", err)
		}
		ls.mu.Lock()
		ls.lastEnd = time.Now()
		ls.mu.Unlock()
	})
}

// stopLiveSync cancels a scheduled sync and waits for a running one.
func (x *Archive) stopLiveSync() {
	ls := &x.live
	ls.mu.Lock()
	ls.closed = true
	if ls.timer != nil && ls.timer.Stop() {
		ls.running.Done()
	}
	ls.mu.Unlock()
	ls.running.Wait()
}

// IndexedAt returns when the last index sync began: every change committed
// before it is searchable (the zero time before the first sync).
func (x *Archive) IndexedAt() time.Time {
	x.ixMu.RLock()
	defer x.ixMu.RUnlock()
	return x.indexedAt
}
