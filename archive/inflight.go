package archive

import (
	"sync"

	"github.com/google/uuid"
)

// inflight counts, per chunk owner, the writes whose chunks are in a shard
// before their manifest is in the catalog: a spilled recording until its
// commit, a commit or a live grow between its shard transaction and its
// catalog transaction. Their chunks look orphaned to Check, which must
// leave them alone: with Repair beside an ingest (the server's check
// endpoint) it would otherwise delete a recording as it is written. The
// zero value is ready to use.
type inflight struct {
	mu sync.Mutex
	n  map[uuid.UUID]int
}

// add notes one more write of owner's chunks; each add needs a done.
func (w *inflight) add(owner uuid.UUID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n == nil {
		w.n = map[uuid.UUID]int{}
	}
	w.n[owner]++
}

// done notes that a write of owner's chunks has its manifest committed,
// or has failed and left its chunks for Check to remove.
func (w *inflight) done(owner uuid.UUID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n[owner] <= 1 {
		delete(w.n, owner)
		return
	}
	w.n[owner]--
}

// snapshot returns the owners being written now.
func (w *inflight) snapshot() map[uuid.UUID]bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	busy := make(map[uuid.UUID]bool, len(w.n))
	for id := range w.n {
		busy[id] = true
	}
	return busy
}

// count returns how many owners are being written (for tests).
func (w *inflight) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.n)
}
