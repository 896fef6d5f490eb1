package archive

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/google/uuid"
	"github.com/replayarchive/replay/archive/internal/chunkenc"
	"github.com/replayarchive/replay/formats"
	bolt "go.etcd.io/bbolt"
)

// liveGrow commits one grow of the live recording id as a codec would: its
// one chunk (tick 0) holds native, which extends what is archived, and
// events n events after those archived.
func liveGrow(t *testing.T, a *Archive, id uuid.UUID, native []byte, events int) *GrowResult {
	t.Helper()
	live, err := a.LiveOf(id)
	if err != nil && !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
	g, err := a.NewGrowth("lines", "live.lines", live)
	if err != nil {
		t.Fatal(err)
	}
	from := 0
	if live != nil {
		from = live.Manifest.EventCount
	} else if err := g.Header([]byte("H")); err != nil {
		t.Fatal(err)
	}
	if err := g.Chunk(formats.Chunk{StartTick: 0, Ticks: 1}, native); err != nil {
		t.Fatal(err)
	}
	for i := range events {
		if err := g.Event(testEvent(from + i)); err != nil {
			t.Fatal(err)
		}
	}
	res, err := a.CommitGrow(context.Background(), g, &formats.TailResult{Meta: &formats.Metadata{ID: id}, End: 1 + int64(len(native))}, false)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// testEvent is event n of a test recording: its text is long enough that
// a few hundred fill an event piece.
func testEvent(n int) formats.Event {
	return formats.Event{Tick: int64(n), Kind: formats.EventCommand, Text: fmt.Sprintf("say event %d %0100d", n, n)}
}

// TestLiveEventPieces checks the event pieces of a live recording
// (events.go): grows append events without the archived ones being
// decoded (the last piece is continued until full), every reader sees the
// events in order, EachEventFrom starts at any event, the manifest counts
// them and their bytes, check finds nothing dangling, and a delete leaves
// no piece behind.
func TestLiveEventPieces(t *testing.T) {
	a := openTest(t, "", Options{})
	id := uuid.MustParse("6f1c8a57-4c59-4d46-8d3c-1b4f9d3a0c11")
	native := []byte("a")
	total := 0
	for i, n := range []int{3, 0, 1, 700, 5, 1500, 2} {
		native = append(native, byte('a'+i))
		res := liveGrow(t, a, id, native, n)
		total += n
		if res.Manifest.EventCount != total {
			t.Fatalf("grow %d: %d events counted, want %d", i, res.Manifest.EventCount, total)
		}
	}
	want := make([]formats.Event, total)
	for i := range want {
		want[i] = testEvent(i)
	}
	got, err := a.Events(id)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Events: %d events, %v; want %d", len(got), err, len(want))
	}
	var pieces, evBytes int
	var firsts []int
	a.catalog.View(func(tx *bolt.Tx) error {
		for _, k := range eventKeys(tx, id) {
			pieces++
			evBytes += len(tx.Bucket(bucketEvents).Get(k))
			firsts = append(firsts, int(binary.BigEndian.Uint64(k[16:])))
		}
		return nil
	})
	if pieces < 4 || firsts[0] != 0 {
		t.Fatalf("%d pieces from events %v: want the first at 0 and several", pieces, firsts)
	}
	m, err := a.Manifest(id)
	if err != nil {
		t.Fatal(err)
	}
	heads := len(chunkenc.EncodeHeads(a.enc, []byte("H"), nil))
	if m.StoredBytes != int64(heads)+m.Chunks[0].Stored+int64(evBytes) {
		t.Errorf("stored bytes %d, want %d (heads) + %d (chunk) + %d (events)", m.StoredBytes, heads, m.Chunks[0].Stored, evBytes)
	}
	// From any event: piece starts, their neighbours, the last.
	for _, from := range append([]int{1, 2, total - 1, total}, firsts[1], firsts[1]-1, firsts[2]+1) {
		var ns []int
		err := a.EachEventFrom(id, from, func(n int, e *formats.Event) error {
			if *e != want[n] {
				return fmt.Errorf("event %d is %+v", n, *e)
			}
			ns = append(ns, n)
			return nil
		})
		if err != nil || len(ns) != total-from || len(ns) > 0 && ns[0] != from {
			t.Errorf("EachEventFrom(%d): %d events from %v, %v", from, len(ns), ns[:min(len(ns), 1)], err)
		}
	}
	rep, err := a.Check(context.Background(), CheckOptions{})
	if err != nil || !rep.OK() {
		t.Fatalf("check: %+v %v", rep, err)
	}
	if _, err := a.Delete(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	a.catalog.View(func(tx *bolt.Tx) error {
		if k := eventKeys(tx, id); len(k) > 0 {
			t.Errorf("%d event keys left after the delete", len(k))
		}
		return nil
	})
}

// TestLiveEventsOfOlderBuild checks that a live recording whose events an
// older build stored (one value under its id, rewritten by every grow)
// still reads, and grows: new events go to pieces after it, which the
// readers read after it.
func TestLiveEventsOfOlderBuild(t *testing.T) {
	a := openTest(t, "", Options{})
	id := uuid.MustParse("0b9e4f0e-51a4-4c3e-9a8e-2f0c4b1d7e22")
	liveGrow(t, a, id, []byte("ab"), 40)
	// As the older build left it: zstd(JSON array) under the bare id.
	old, err := a.Events(id)
	if err != nil || len(old) != 40 {
		t.Fatal(len(old), err)
	}
	raw, _ := json.Marshal(old)
	err = a.catalog.Update(func(tx *bolt.Tx) error {
		if err := deleteEvents(tx, id); err != nil {
			return err
		}
		return tx.Bucket(bucketEvents).Put(id[:], a.enc.EncodeAll(raw, nil))
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := a.Events(id); err != nil || !reflect.DeepEqual(got, old) {
		t.Fatalf("older build's events: %d, %v", len(got), err)
	}
	res := liveGrow(t, a, id, []byte("abc"), 900)
	if res.Manifest.EventCount != 940 {
		t.Fatalf("%d events counted, want 940", res.Manifest.EventCount)
	}
	got, err := a.Events(id)
	if err != nil || len(got) != 940 {
		t.Fatalf("%d events, %v", len(got), err)
	}
	for i, e := range got {
		if e != testEvent(i) {
			t.Fatalf("event %d: %+v", i, e)
		}
	}
	var ns []int
	err = a.EachEventFrom(id, 39, func(n int, e *formats.Event) error {
		ns = append(ns, n)
		return nil
	})
	if err != nil || len(ns) != 901 || ns[0] != 39 {
		t.Fatalf("EachEventFrom(39): %d events from %v, %v", len(ns), ns[:min(1, len(ns))], err)
	}
	// A remote manifest holds the events as one value.
	v, err := a.eventsValue(id)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := a.decoder().DecodeAll(v, nil)
	var joined []formats.Event
	if err == nil {
		err = json.Unmarshal(dec, &joined)
	}
	if err != nil || !reflect.DeepEqual(joined, got) {
		t.Fatalf("joined value: %d events, %v", len(joined), err)
	}
}
