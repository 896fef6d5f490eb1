// Tests for the stored hit data encoding.

package query

import (
	"reflect"
	"testing"
	"time"

	"github.com/replayarchive/replay/formats"
)

func TestEncodeRoundTrip(t *testing.T) {
	r := fixture()[0]
	r.FlagMoments = 2
	var h Hit
	if err := decodeRec(r.ID, encodeRec(&r), &h); err != nil {
		t.Fatal(err)
	}
	want := Hit{ID: r.ID, Format: r.Format, Session: r.Session, Map: r.Map, Server: r.Server,
		Start: r.Start, Duration: r.Duration, Players: []string{"Kitty", "Bob"}, PlayerIDs: []string{"K1", "b2"}, Flags: r.Flags, FlagMoments: 2}
	if !reflect.DeepEqual(h, want) {
		t.Errorf("got %+v\nwant %+v", h, want)
	}
	e := formats.Event{Tick: -5, Time: time.Hour, Kind: "chat", Player: "ü", Text: "a\x00b"}
	var eh EventHit
	if err := decodeEvent(encodeEvent(&e), &eh); err != nil {
		t.Fatal(err)
	}
	if eh != (EventHit{Tick: -5, Time: time.Hour, Kind: "chat", Player: "ü", Text: "a\x00b"}) {
		t.Errorf("event %+v", eh)
	}
	// Every truncation of the encoding is an error, never a panic, but
	// for the record without its flag moments (one byte here), as builds
	// before them wrote it: that reads, with the count unknown.
	b := encodeRec(&r)
	for n := range len(b) - 1 {
		if err := decodeRec("x", b[:n], &h); err == nil {
			t.Errorf("truncated to %d bytes: no error", n)
		}
	}
	if err := decodeRec(r.ID, b[:len(b)-1], &h); err != nil || h.FlagMoments != -1 {
		t.Errorf("a record without flag moments: %d, %v", h.FlagMoments, err)
	}
}

func FuzzDecode(f *testing.F) {
	r := fixture()[0]
	f.Add(encodeRec(&r))
	f.Add(encodeEvent(&r.Events[0]))
	f.Add([]byte{1, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, b []byte) {
		var h Hit
		_ = decodeRec("x", b, &h)
		var e EventHit
		_ = decodeEvent(b, &e)
	})
}
