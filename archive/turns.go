// Turns on the cores between what a person waits on and the background: a
// server's searches and clips against an upload's receipt, parse,
// compression and index update.

package archive

import (
	"context"
	"runtime"
	"sync/atomic"
	"time"
)

// turns lets background work use every core while nobody waits. While a
// person does, each piece of background work first pauses for turnPause
// and then runs on one core fewer than the machine has.
//
// Why the pause: Go's scheduler looks for network events when a core has
// nothing to run, and otherwise only every 10 ms. An upload that keeps
// every core busy so held each request's arrival and its answer's for up
// to 10 ms each: search p50 20.5 ms beside a 1 GB upload and 32 clients,
// p99 46.9-61.2 ms (docs/PERFORMANCE.md, "The service under load").
type turns struct {
	waiting atomic.Int64  // interactive work under way
	slots   chan struct{} // background turns, one a core but one
	release func()        // gives a turn back
}

// turnPause is how long a piece of background work (about a millisecond
// of it) waits while a person waits too: long enough for an idle core to
// look for network events, short enough that an upload beside 32 busy
// clients still runs at 23-26 MB/s (33-39 MB/s without them).
const turnPause = 200 * time.Microsecond

func newTurns() *turns {
	t := &turns{slots: make(chan struct{}, max(1, runtime.GOMAXPROCS(0)-1))}
	t.release = func() { <-t.slots }
	return t
}

// noTurn ends a turn that was not taken.
func noTurn() {}

// background takes a turn for a piece of background work and returns the
// function that ends it. It waits only while interactive work is under
// way. A goroutine holding a turn must not wait for another that needs
// one.
func (t *turns) background() (end func()) {
	if t.waiting.Load() == 0 {
		return noTurn
	}
	time.Sleep(turnPause)
	t.slots <- struct{}{}
	return t.release
}

// yield lets other goroutines run between two pieces of background work
// while interactive work is under way: a waiting search runs now instead
// of after a 10 ms scheduler slice. With nobody waiting it does nothing:
// an ingest's codec and workers only gave each other their cores (the
// 200 five-minute games: 0.96x the wall time and 0.95x the CPU without).
func (t *turns) yield() {
	if t.waiting.Load() > 0 {
		runtime.Gosched()
	}
}

// interactiveKey marks a context as the one of interactive work.
type interactiveKey struct{}

// Interactive marks work a person is waiting on (a request to a server)
// until end is called: meanwhile the archive's background work pauses
// between its pieces and runs on one core fewer than the machine has
// (turns). Work done under the returned context takes no turns itself: a
// request that flags a long recording re-indexes its thousands of event
// blocks, and must not pause before each. end may be called more than
// once.
func (a *Archive) Interactive(ctx context.Context) (context.Context, func()) {
	ctx, begin, end := a.InteractiveLater(ctx)
	begin()
	return ctx, end
}

// InteractiveLater is Interactive for work a person will wait on once
// begin is called: a request whose body is still arriving. Work under the
// returned context takes no turns from the start; background work gives
// way only from begin to end, so a client that sends slowly does not
// hold it back. begin and end may be called more than once; begin after
// end does nothing.
func (a *Archive) InteractiveLater(ctx context.Context) (_ context.Context, begin, end func()) {
	const (
		waiting = iota
		begun
		ended
	)
	var st atomic.Int32
	begin = func() {
		if st.CompareAndSwap(waiting, begun) {
			a.turns.waiting.Add(1)
		}
	}
	end = func() {
		if st.Swap(ended) == begun {
			a.turns.waiting.Add(-1)
		}
	}
	return context.WithValue(ctx, interactiveKey{}, true), begin, end
}

// InteractiveNow returns how many marks of interactive work are under
// way (Interactive): while any is, background work runs on one core fewer
// and pauses between its pieces.
func (a *Archive) InteractiveNow() int64 { return a.turns.waiting.Load() }

// Background takes a turn for a piece of background work done under ctx
// outside the archive (an upload's receipt, the search index's update of
// what an ingest committed) and returns the function that ends it. Work
// under a context Interactive returned takes none.
func (a *Archive) Background(ctx context.Context) (end func()) {
	if ctx.Value(interactiveKey{}) != nil {
		return noTurn
	}
	return a.turns.background()
}
