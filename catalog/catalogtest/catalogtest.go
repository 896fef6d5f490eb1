// Package catalogtest is the contract every catalog.Catalog passes, so the
// PostgreSQL and bbolt stores behave alike and a new store is checked by
// the same tests. A test package calls Run (one handle on a store) or
// RunNodes (two handles on one store, as two nodes have).
package catalogtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/replayarchive/replay/catalog"
)

// wakeWithin is how soon a watcher must wake after a change commits.
const wakeWithin = 2 * time.Second

// Run runs the contract on one handle per store: open returns a new handle
// on a fresh, empty store each time. Run closes it when the test ends.
func Run(t *testing.T, open func(t *testing.T) catalog.Catalog) {
	RunNodes(t, func(t *testing.T) (catalog.Catalog, catalog.Catalog) {
		c := open(t)
		return c, c
	})
}

// RunNodes runs the contract where two nodes share a store: open returns
// two handles on a fresh, empty store (the same handle twice where a store
// has one per process), and the tests write through both and read through
// either. RunNodes closes them when the test ends.
func RunNodes(t *testing.T, open func(t *testing.T) (a, b catalog.Catalog)) {
	for _, tc := range contract() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a, b := open(t)
			t.Cleanup(func() {
				for _, c := range []catalog.Catalog{a, b} {
					if err := c.Close(); err != nil {
						t.Errorf("close: %v", err)
					}
				}
			})
			tc.test(t, a, b)
		})
	}
}

// contract returns the table of tests; each gets a fresh store.
func contract() []struct {
	name string
	test func(t *testing.T, a, b catalog.Catalog)
} {
	return []struct {
		name string
		test func(t *testing.T, a, b catalog.Catalog)
	}{
		{"PutGet", testPutGet},
		{"List", testList},
		{"Delete", testDelete},
		{"Create", testCreate},
		{"CreateRace", testCreateRace},
		{"Since", testSince},
		{"FollowerSeesEveryChange", testFollower},
		{"Watch", testWatch},
		{"Lease", testLease},
		{"LeaseRace", testLeaseRace},
		{"Closed", testClosed},
		{"Refused", testRefused},
		{"Canceled", testCanceled},
		{"LargeValues", testLargeValues},
	}
}

// put stores value or fails t.
func put(t *testing.T, c catalog.Catalog, kind catalog.Kind, key, value, node string) catalog.Entry {
	t.Helper()
	e, err := c.Put(t.Context(), kind, key, []byte(value), node)
	if err != nil {
		t.Fatalf("put %s/%s: %v", kind, key, err)
	}
	return e
}

// since returns every change after after, or fails t.
func since(t *testing.T, c catalog.Catalog, after int64) []catalog.Entry {
	t.Helper()
	var all []catalog.Entry
	for {
		page, err := c.Since(t.Context(), after, 1000)
		if err != nil {
			t.Fatalf("since %d: %v", after, err)
		}
		if len(page) == 0 {
			return all
		}
		all = append(all, page...)
		after = page[len(page)-1].Seq
	}
}

// diff describes how got differs from want, or returns "".
func diff(got, want catalog.Entry) string {
	var d []string
	if got.Seq != want.Seq {
		d = append(d, fmt.Sprintf("seq %d, want %d", got.Seq, want.Seq))
	}
	if got.Kind != want.Kind || got.Key != want.Key {
		d = append(d, fmt.Sprintf("name %s/%s, want %s/%s", got.Kind, got.Key, want.Kind, want.Key))
	}
	if !bytes.Equal(got.Value, want.Value) {
		d = append(d, fmt.Sprintf("value %.40q (%d bytes), want %.40q (%d bytes)", got.Value, len(got.Value), want.Value, len(want.Value)))
	}
	if got.Deleted != want.Deleted {
		d = append(d, fmt.Sprintf("deleted %v, want %v", got.Deleted, want.Deleted))
	}
	if got.Node != want.Node {
		d = append(d, fmt.Sprintf("node %q, want %q", got.Node, want.Node))
	}
	if !got.At.Equal(want.At) {
		d = append(d, fmt.Sprintf("at %v, want %v", got.At, want.At))
	}
	return strings.Join(d, "; ")
}

// same fails t when got differs from want.
func same(t *testing.T, what string, got, want catalog.Entry) {
	t.Helper()
	if d := diff(got, want); d != "" {
		t.Errorf("%s: %s", what, d)
	}
}

// sameList fails t when got and want differ.
func sameList(t *testing.T, what string, got, want []catalog.Entry) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d entries %v, want %d %v", what, len(got), keys(got), len(want), keys(want))
		return
	}
	for i := range got {
		same(t, fmt.Sprintf("%s [%d]", what, i), got[i], want[i])
	}
}

// keys lists the entries as kind/key@seq, for messages.
func keys(list []catalog.Entry) []string {
	var s []string
	for _, e := range list {
		s = append(s, fmt.Sprintf("%s/%s@%d", e.Kind, e.Key, e.Seq))
	}
	return s
}

func testPutGet(t *testing.T, a, b catalog.Catalog) {
	ctx := t.Context()
	before := time.Now()
	e1 := put(t, a, catalog.KindFlag, "r1/spam", "v1", "n1")
	if e1.Seq <= 0 || e1.Kind != catalog.KindFlag || e1.Key != "r1/spam" || string(e1.Value) != "v1" || e1.Node != "n1" || e1.Deleted {
		t.Errorf("put returned %+v", e1)
	}
	if d := e1.At.Sub(before); d < -time.Minute || d > time.Minute {
		t.Errorf("put at %v, %v from now", e1.At, d)
	}
	got, ok, err := b.Get(ctx, catalog.KindFlag, "r1/spam")
	if err != nil || !ok {
		t.Fatalf("get: %v %v", ok, err)
	}
	same(t, "get after put", got, e1)
	for _, miss := range []struct {
		kind catalog.Kind
		key  string
	}{{catalog.KindFlag, "r1/spa"}, {catalog.KindFlag, "r1/spam/"}, {catalog.KindHold, "r1/spam"}} {
		if e, ok, err := a.Get(ctx, miss.kind, miss.key); err != nil || ok {
			t.Errorf("get %s/%s: %+v %v %v, want nothing", miss.kind, miss.key, e, ok, err)
		}
	}

	e2 := put(t, b, catalog.KindFlag, "r1/spam", "v2", "n2")
	if e2.Seq <= e1.Seq {
		t.Errorf("second put has seq %d, not above %d", e2.Seq, e1.Seq)
	}
	got, _, _ = a.Get(ctx, catalog.KindFlag, "r1/spam")
	same(t, "get after replacing put", got, e2)

	// An empty value is a value.
	e3, err := a.Put(ctx, catalog.KindSetting, "empty", nil, "")
	if err != nil {
		t.Fatalf("put an empty value: %v", err)
	}
	got, ok, err = b.Get(ctx, catalog.KindSetting, "empty")
	if err != nil || !ok || len(got.Value) != 0 || got.Deleted {
		t.Errorf("get an empty value: %+v %v %v", got, ok, err)
	}
	same(t, "get an empty value", got, e3)
}

func testList(t *testing.T, a, b catalog.Catalog) {
	ctx := t.Context()
	flagKeys := []string{"b", "a/2", "é", "a/1", "a/10", "ab", "é/x", "ê", "a", "a/", "\U0010FFFF", "\U0010FFFFz", "\uD7FF", "\uE000"}
	want := map[string]catalog.Entry{}
	for i, k := range flagKeys {
		c := a
		if i%2 == 1 {
			c = b
		}
		want[k] = put(t, c, catalog.KindFlag, k, "value of "+k, "n")
	}
	hold := put(t, a, catalog.KindHold, "a/3", "held", "n")
	// expect lists want's entries whose keys start with prefix, in byte
	// order.
	expect := func(prefix string) []catalog.Entry {
		var ks []string
		for k := range want {
			if strings.HasPrefix(k, prefix) {
				ks = append(ks, k)
			}
		}
		sort.Strings(ks)
		var list []catalog.Entry
		for _, k := range ks {
			list = append(list, want[k])
		}
		return list
	}
	for _, prefix := range []string{"", "a", "a/", "a/1", "é", "ê", "\U0010FFFF", "\uD7FF", "zz", "a/10/"} {
		got, err := b.List(ctx, catalog.KindFlag, prefix)
		if err != nil {
			t.Fatalf("list %q: %v", prefix, err)
		}
		sameList(t, fmt.Sprintf("list flag %q", prefix), got, expect(prefix))
	}
	got, err := a.List(ctx, catalog.KindHold, "")
	if err != nil {
		t.Fatal(err)
	}
	sameList(t, "list hold", got, []catalog.Entry{hold})
	if got, err := a.List(ctx, catalog.KindToken, ""); err != nil || len(got) != 0 {
		t.Errorf("list of an empty kind: %v %v", keys(got), err)
	}

	if _, ok, err := b.Delete(ctx, catalog.KindFlag, "a/10", "n"); !ok || err != nil {
		t.Fatalf("delete: %v %v", ok, err)
	}
	delete(want, "a/10")
	want["a/2"] = put(t, b, catalog.KindFlag, "a/2", "replaced", "n2")
	got, err = a.List(ctx, catalog.KindFlag, "a/")
	if err != nil {
		t.Fatal(err)
	}
	sameList(t, "list after a delete and a put", got, expect("a/"))
}

func testDelete(t *testing.T, a, b catalog.Catalog) {
	ctx := t.Context()
	e := put(t, a, catalog.KindHold, "r1", "held", "n1")
	d, ok, err := b.Delete(ctx, catalog.KindHold, "r1", "n2")
	if err != nil || !ok {
		t.Fatalf("delete: %v %v", ok, err)
	}
	if !d.Deleted || d.Value != nil || d.Seq <= e.Seq || d.Kind != catalog.KindHold || d.Key != "r1" || d.Node != "n2" || d.At.IsZero() {
		t.Errorf("delete returned %+v", d)
	}
	if got, ok, err := a.Get(ctx, catalog.KindHold, "r1"); ok || err != nil {
		t.Errorf("get after delete: %+v %v %v", got, ok, err)
	}
	// Deleting what is not there records nothing.
	for _, c := range []catalog.Catalog{a, b} {
		if got, ok, err := c.Delete(ctx, catalog.KindHold, "r1", "n1"); ok || err != nil || got.Seq != 0 {
			t.Errorf("second delete: %+v %v %v, want nothing", got, ok, err)
		}
	}
	if _, ok, err := a.Delete(ctx, catalog.KindHold, "never", "n1"); ok || err != nil {
		t.Errorf("delete of a key never put: %v %v", ok, err)
	}
	changes := since(t, b, 0)
	sameList(t, "feed", changes, []catalog.Entry{e, d})
}

func testCreate(t *testing.T, a, b catalog.Catalog) {
	ctx := t.Context()
	c1, err := a.Create(ctx, catalog.KindToken, "alice", []byte("v1"), "n1")
	if err != nil || c1.Seq <= 0 || string(c1.Value) != "v1" || c1.Node != "n1" {
		t.Fatalf("create: %+v %v", c1, err)
	}
	got, _, _ := b.Get(ctx, catalog.KindToken, "alice")
	same(t, "get after create", got, c1)

	for _, c := range []catalog.Catalog{a, b} {
		old, err := c.Create(ctx, catalog.KindToken, "alice", []byte("v2"), "n2")
		if !errors.Is(err, catalog.ErrExists) {
			t.Fatalf("create of an existing key: %v, want ErrExists", err)
		}
		same(t, "create's existing entry", old, c1)
	}
	got, _, _ = a.Get(ctx, catalog.KindToken, "alice")
	same(t, "get after refused creates", got, c1)
	if changes := since(t, a, c1.Seq); len(changes) != 0 {
		t.Errorf("refused creates recorded %v", keys(changes))
	}

	// Another kind, and the same key once deleted, are free.
	if _, err := b.Create(ctx, catalog.KindSetting, "alice", []byte("s"), "n2"); err != nil {
		t.Errorf("create of the key in another kind: %v", err)
	}
	if _, ok, err := b.Delete(ctx, catalog.KindToken, "alice", "n2"); !ok || err != nil {
		t.Fatalf("delete: %v %v", ok, err)
	}
	c3, err := b.Create(ctx, catalog.KindToken, "alice", []byte("v3"), "n2")
	if err != nil || string(c3.Value) != "v3" || c3.Seq <= c1.Seq {
		t.Errorf("create after delete: %+v %v", c3, err)
	}
}

func testCreateRace(t *testing.T, a, b catalog.Catalog) {
	ctx := t.Context()
	const racers, rounds = 8, 5
	for round := range rounds {
		key := fmt.Sprintf("r%d/dup", round)
		var (
			wg      sync.WaitGroup
			start   = make(chan struct{})
			entries [racers]catalog.Entry
			errs    [racers]error
		)
		for i := range racers {
			c := a
			if i%2 == 1 {
				c = b
			}
			wg.Go(func() {
				<-start
				entries[i], errs[i] = c.Create(ctx, catalog.KindFlag, key, fmt.Appendf(nil, "racer %d", i), fmt.Sprint("n", i))
			})
		}
		close(start)
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Fatalf("%s: racers %d and %d both created it", key, winner, i)
			case err == nil:
				winner = i
			case !errors.Is(err, catalog.ErrExists):
				t.Fatalf("%s: racer %d: %v", key, i, err)
			}
		}
		if winner < 0 {
			t.Fatalf("%s: no racer created it", key)
		}
		for i, err := range errs {
			if err != nil {
				same(t, fmt.Sprintf("%s: racer %d's existing entry", key, i), entries[i], entries[winner])
			}
		}
		got, _, _ := a.Get(ctx, catalog.KindFlag, key)
		same(t, key+": get", got, entries[winner])
	}
	if changes := since(t, b, 0); len(changes) != rounds {
		t.Errorf("feed holds %d changes %v, want %d (one create a round)", len(changes), keys(changes), rounds)
	}
}

func testSince(t *testing.T, a, b catalog.Catalog) {
	ctx := t.Context()
	var want []catalog.Entry
	want = append(want, put(t, a, catalog.KindFlag, "k1", "1", "n1"))
	want = append(want, put(t, b, catalog.KindFlag, "k2", "2", "n2"))
	want = append(want, put(t, a, catalog.KindFlag, "k1", "1b", "n1"))
	d, ok, err := b.Delete(ctx, catalog.KindFlag, "k2", "n2")
	if !ok || err != nil {
		t.Fatalf("delete: %v %v", ok, err)
	}
	want = append(want, d)
	c, err := a.Create(ctx, catalog.KindAudit, "n1/1", []byte(`{"what":"flag"}`), "n1")
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, c)
	want = append(want, put(t, b, catalog.KindHold, "k1", "", "n2"))

	for i := 1; i < len(want); i++ {
		if want[i].Seq <= want[i-1].Seq {
			t.Fatalf("seqs not increasing: %v", keys(want))
		}
	}
	for _, c := range []catalog.Catalog{a, b} {
		got, err := c.Since(ctx, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		sameList(t, "since 0", got, want)
	}
	// Pages of 2, from each point.
	for from := range want {
		after := want[from].Seq
		var got []catalog.Entry
		for {
			page, err := a.Since(ctx, after, 2)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) > 2 {
				t.Fatalf("since %d limit 2 returned %d", after, len(page))
			}
			if len(page) == 0 {
				break
			}
			got = append(got, page...)
			after = page[len(page)-1].Seq
		}
		sameList(t, fmt.Sprintf("pages after %d", want[from].Seq), got, want[from+1:])
	}
	if got, err := b.Since(ctx, -5, 100); err != nil || len(got) != len(want) {
		t.Errorf("since -5: %v %v, want all %d", keys(got), err, len(want))
	}
	if got, err := b.Since(ctx, want[len(want)-1].Seq+1000, 100); err != nil || len(got) != 0 {
		t.Errorf("since beyond the last: %v %v", keys(got), err)
	}
}

// testFollower writes from several goroutines on both handles while a
// follower pages through Since without pause, and checks the follower saw
// every change exactly once, in order, and that applying them gives the
// live entries. It catches a store whose sequence numbers can commit out of
// order (a follower that has read n then never sees a smaller one).
func testFollower(t *testing.T, a, b catalog.Catalog) {
	ctx := t.Context()
	const writers, writes = 8, 30
	var (
		mu      sync.Mutex
		written = map[int64]catalog.Entry{}
		wg      sync.WaitGroup
		done    atomic.Bool
	)
	record := func(e catalog.Entry) {
		mu.Lock()
		defer mu.Unlock()
		written[e.Seq] = e
	}
	for w := range writers {
		c := a
		if w%2 == 1 {
			c = b
		}
		wg.Go(func() {
			node := fmt.Sprint("n", w)
			for i := range writes {
				kind := []catalog.Kind{catalog.KindFlag, catalog.KindHold}[i%2]
				key := fmt.Sprintf("w%d/%d", w, i%7)
				if i%3 == 2 {
					e, ok, err := c.Delete(ctx, kind, key, node)
					if err != nil {
						t.Errorf("delete: %v", err)
						return
					}
					if ok {
						record(e)
					}
					continue
				}
				e, err := c.Put(ctx, kind, key, fmt.Appendf(nil, "%d", i), node)
				if err != nil {
					t.Errorf("put: %v", err)
					return
				}
				record(e)
			}
		})
	}
	var followed []catalog.Entry
	follower := make(chan error, 1)
	go func() {
		var after int64
		for {
			finished := done.Load()
			page, err := a.Since(ctx, after, 7)
			if err != nil {
				follower <- err
				return
			}
			for _, e := range page {
				if e.Seq <= after {
					follower <- fmt.Errorf("since %d returned seq %d", after, e.Seq)
					return
				}
				after = e.Seq
			}
			followed = append(followed, page...)
			if finished && len(page) == 0 {
				follower <- nil
				return
			}
		}
	}()
	wg.Wait()
	done.Store(true)
	if err := <-follower; err != nil {
		t.Fatalf("follower: %v", err)
	}

	seen := map[int64]bool{}
	for _, e := range followed {
		w, ok := written[e.Seq]
		if !ok {
			t.Errorf("follower saw %s/%s@%d, which no writer made", e.Kind, e.Key, e.Seq)
			continue
		}
		same(t, "followed change", e, w)
		seen[e.Seq] = true
	}
	var missed []int64
	for seq := range written {
		if !seen[seq] {
			missed = append(missed, seq)
		}
	}
	slices.Sort(missed)
	if len(missed) > 0 {
		t.Errorf("the follower missed %d of %d changes (seqs %v): a change committed after one with a higher seq", len(missed), len(written), missed)
	}

	// Applying the feed gives the live entries.
	state := map[string]catalog.Entry{}
	for _, e := range followed {
		name := string(e.Kind) + "/" + e.Key
		if e.Deleted {
			delete(state, name)
		} else {
			state[name] = e
		}
	}
	for _, kind := range []catalog.Kind{catalog.KindFlag, catalog.KindHold} {
		live, err := b.List(ctx, kind, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range live {
			name := string(e.Kind) + "/" + e.Key
			same(t, "live "+name+" against the applied feed", e, state[name])
			delete(state, name)
		}
	}
	for name := range state {
		t.Errorf("the applied feed holds %s, which is not live", name)
	}
}

// wait fails t unless ch receives within wakeWithin.
func wait(t *testing.T, what string, ch <-chan struct{}) {
	t.Helper()
	select {
	case _, ok := <-ch:
		if !ok {
			t.Fatalf("%s: watch channel closed", what)
		}
	case <-time.After(wakeWithin):
		t.Fatalf("%s: no wake-up within %v", what, wakeWithin)
	}
}

// waitClosed fails t unless ch is closed within wakeWithin (after any
// pending wake-up).
func waitClosed(t *testing.T, what string, ch <-chan struct{}) {
	t.Helper()
	timeout := time.After(wakeWithin)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-timeout:
			t.Fatalf("%s: watch channel still open after %v", what, wakeWithin)
		}
	}
}

func testWatch(t *testing.T, a, b catalog.Catalog) {
	ctx := t.Context()
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w1, err := a.Watch(wctx)
	if err != nil {
		t.Fatal(err)
	}
	w2, err := b.Watch(wctx)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-w1:
		t.Fatal("woken with no change")
	case <-time.After(100 * time.Millisecond):
	}
	put(t, b, catalog.KindFlag, "r/x", "1", "n2")
	wait(t, "watcher of the other handle, after a put", w1)
	wait(t, "watcher of the same handle, after a put", w2)

	// A watcher that does not read does not hold up writes.
	for i := range 20 {
		put(t, a, catalog.KindFlag, fmt.Sprint("r/", i), "1", "n1")
	}
	wait(t, "after 20 puts unread", w1)
	wait(t, "after 20 puts unread", w2)
	// Drain what merged wake-ups remain, then a delete wakes too.
	time.Sleep(100 * time.Millisecond)
	for len(w1) > 0 {
		<-w1
	}
	if _, ok, err := a.Delete(ctx, catalog.KindFlag, "r/x", "n1"); !ok || err != nil {
		t.Fatalf("delete: %v %v", ok, err)
	}
	wait(t, "after a delete", w1)

	cancel()
	waitClosed(t, "after its context ended", w1)
	waitClosed(t, "after its context ended", w2)
	// Writes go on without watchers.
	put(t, b, catalog.KindFlag, "r/y", "1", "n2")
}

func testLease(t *testing.T, a, b catalog.Catalog) {
	ctx := t.Context()
	// The sleeps below leave 100 ms where a lease must have expired and
	// 200 ms (less the calls' own time) where it must still hold.
	const ttl = 600 * time.Millisecond
	lease := func(c catalog.Catalog, name, holder string, want bool) {
		t.Helper()
		got, err := c.Lease(ctx, name, holder, ttl)
		if err != nil {
			t.Fatalf("lease %s for %s: %v", name, holder, err)
		}
		if got != want {
			t.Fatalf("lease %s for %s: %v, want %v", name, holder, got, want)
		}
	}
	unlease := func(c catalog.Catalog, name, holder string) {
		t.Helper()
		if err := c.Unlease(ctx, name, holder); err != nil {
			t.Fatalf("unlease %s for %s: %v", name, holder, err)
		}
	}
	lease(a, "repair", "n1", true)
	lease(b, "repair", "n2", false)
	lease(a, "repair", "n1", true) // renewed
	lease(b, "repair", "n2", false)
	lease(b, "sweep", "n2", true) // another lease is free
	unlease(b, "repair", "n2")    // not n2's: nothing happens
	lease(b, "repair", "n2", false)

	// A renewal extends the lease: past the first ttl it still holds.
	time.Sleep(ttl / 2)
	lease(a, "repair", "n1", true)
	time.Sleep(ttl/2 + 100*time.Millisecond)
	lease(b, "repair", "n2", false)

	// Not renewed for longer than its ttl, it is taken.
	time.Sleep(ttl/2 + 100*time.Millisecond)
	lease(b, "repair", "n2", true)
	lease(a, "repair", "n1", false)
	unlease(b, "repair", "n2")
	lease(a, "repair", "n1", true)
	unlease(a, "repair", "n1")
	unlease(a, "repair", "n1") // nothing to give up
	unlease(a, "never", "n1")
	lease(b, "repair", "n2", true)
}

func testLeaseRace(t *testing.T, a, b catalog.Catalog) {
	ctx := t.Context()
	const racers = 8
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		got   [racers]bool
		errs  [racers]error
	)
	for i := range racers {
		c := a
		if i%2 == 1 {
			c = b
		}
		wg.Go(func() {
			<-start
			got[i], errs[i] = c.Lease(ctx, "purge", fmt.Sprint("n", i), time.Minute)
		})
	}
	close(start)
	wg.Wait()
	var holders []int
	for i := range racers {
		if errs[i] != nil {
			t.Fatalf("racer %d: %v", i, errs[i])
		}
		if got[i] {
			holders = append(holders, i)
		}
	}
	if len(holders) != 1 {
		t.Fatalf("racers %v hold the lease, want exactly one", holders)
	}
}

func testClosed(t *testing.T, a, b catalog.Catalog) {
	ctx := t.Context()
	put(t, a, catalog.KindFlag, "k", "v", "n1")
	w, err := a.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := a.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
	waitClosed(t, "after close", w)
	calls := everyMethod(ctx, a)
	for name, call := range calls {
		if err := call(); !errors.Is(err, catalog.ErrClosed) {
			t.Errorf("%s after close: %v, want ErrClosed", name, err)
		}
	}
	if a != b {
		// The other node goes on.
		if got, ok, err := b.Get(ctx, catalog.KindFlag, "k"); !ok || err != nil || string(got.Value) != "v" {
			t.Errorf("other handle's get after the first closed: %+v %v %v", got, ok, err)
		}
		put(t, b, catalog.KindFlag, "k", "v2", "n2")
	}
}

func testRefused(t *testing.T, a, _ catalog.Catalog) {
	ctx := t.Context()
	bad := []struct {
		kind catalog.Kind
		key  string
	}{
		{"", "k"},
		{catalog.KindFlag, ""},
		{catalog.KindFlag, "a\x00b"},
		{"fl\x00ag", "k"},
		{catalog.KindFlag, "\xff\xfe"},
		{catalog.KindFlag, strings.Repeat("k", 5000)},
	}
	for _, n := range bad {
		what := fmt.Sprintf("%.20q/%.20q", n.kind, n.key)
		if _, err := a.Put(ctx, n.kind, n.key, []byte("v"), "n"); err == nil {
			t.Errorf("put %s: no error", what)
		}
		if _, err := a.Create(ctx, n.kind, n.key, []byte("v"), "n"); err == nil || errors.Is(err, catalog.ErrExists) {
			t.Errorf("create %s: %v, want a refusal", what, err)
		}
		if _, _, err := a.Delete(ctx, n.kind, n.key, "n"); err == nil {
			t.Errorf("delete %s: no error", what)
		}
		if _, _, err := a.Get(ctx, n.kind, n.key); err == nil {
			t.Errorf("get %s: no error", what)
		}
	}
	if _, err := a.Put(ctx, catalog.KindFlag, "k", []byte("v"), "bad\x00node"); err == nil {
		t.Errorf("put with a NUL in the node: no error")
	}
	if _, err := a.List(ctx, "", ""); err == nil {
		t.Errorf("list of the empty kind: no error")
	}
	if _, err := a.List(ctx, catalog.KindFlag, "a\x00"); err == nil {
		t.Errorf("list of a prefix with a NUL: no error")
	}
	for _, limit := range []int{0, -1} {
		if _, err := a.Since(ctx, 0, limit); err == nil {
			t.Errorf("since with limit %d: no error", limit)
		}
	}
	for _, l := range []struct {
		name, holder string
		ttl          time.Duration
	}{{"", "n", time.Minute}, {"l", "", time.Minute}, {"l", "n", 0}, {"l", "n", -time.Second}} {
		if _, err := a.Lease(ctx, l.name, l.holder, l.ttl); err == nil {
			t.Errorf("lease %q for %q ttl %v: no error", l.name, l.holder, l.ttl)
		}
	}
	if err := a.Unlease(ctx, "", "n"); err == nil {
		t.Errorf("unlease of the empty name: no error")
	}
	if got := since(t, a, 0); len(got) != 0 {
		t.Errorf("refused writes recorded %v", keys(got))
	}
}

func testCanceled(t *testing.T, a, _ catalog.Catalog) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	calls := everyMethod(ctx, a)
	for name, call := range calls {
		if err := call(); !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a canceled context: %v, want context.Canceled", name, err)
		}
	}
	if got := since(t, a, 0); len(got) != 0 {
		t.Errorf("canceled writes recorded %v", keys(got))
	}
}

// testLargeValues round-trips 1 MiB values, and checks Since pages through
// more of them than one batch holds.
func testLargeValues(t *testing.T, a, b catalog.Catalog) {
	ctx := t.Context()
	const n, size = 6, 1 << 20
	var want []catalog.Entry
	for i := range n {
		v := make([]byte, size)
		rand.Read(v)
		e, err := a.Put(ctx, catalog.KindManifest, fmt.Sprintf("big%02d", i), v, "n1")
		if err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
		if !bytes.Equal(e.Value, v) {
			t.Fatalf("put %d returned another value", i)
		}
		want = append(want, e)
	}
	got, ok, err := b.Get(ctx, catalog.KindManifest, "big00")
	if !ok || err != nil {
		t.Fatalf("get: %v %v", ok, err)
	}
	same(t, "get", got, want[0])
	list, err := b.List(ctx, catalog.KindManifest, "big")
	if err != nil {
		t.Fatal(err)
	}
	sameList(t, "list", list, want)
	first, err := b.Since(ctx, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(first) == 0 || len(first) >= n {
		t.Errorf("a batch of %d MiB values holds %d, want at least 1 and fewer than %d (4 MiB a batch)", size>>20, len(first), n)
	}
	sameList(t, "since, paged", since(t, b, 0), want)
}

// everyMethod calls each of a's methods (but Close) once, by name.
func everyMethod(ctx context.Context, a catalog.Catalog) map[string]func() error {
	return map[string]func() error{
		"put": func() error { _, err := a.Put(ctx, catalog.KindFlag, "k", nil, "n1"); return err },
		"create": func() error {
			_, err := a.Create(ctx, catalog.KindFlag, "k2", nil, "n1")
			return err
		},
		"delete":  func() error { _, _, err := a.Delete(ctx, catalog.KindFlag, "k", "n1"); return err },
		"get":     func() error { _, _, err := a.Get(ctx, catalog.KindFlag, "k"); return err },
		"list":    func() error { _, err := a.List(ctx, catalog.KindFlag, ""); return err },
		"since":   func() error { _, err := a.Since(ctx, 0, 10); return err },
		"watch":   func() error { _, err := a.Watch(ctx); return err },
		"lease":   func() error { _, err := a.Lease(ctx, "l", "n1", time.Minute); return err },
		"unlease": func() error { return a.Unlease(ctx, "l", "n1") },
	}
}
