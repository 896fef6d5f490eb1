package eventjson

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/replayarchive/replay/formats"
)

// storedEventSeeds are events as the archive writes them, the usual and
// the unusual.
var storedEventSeeds = []formats.Event{
	{Tick: 812, Time: 16 * time.Second, Kind: formats.EventCommand, Player: "nameless tee", PlayerID: "3", Text: "/kill"},
	{Tick: -1, Kind: formats.EventChat, Text: `say "hi" <b> & \ tab	end`},
	{Kind: formats.EventJoin, Player: "Ünïcødé 🐸", PlayerID: "0"},
	{Tick: 1 << 62, Time: -5, Kind: "x", Text: "line\nbreak\u2028sep"},
	{},
}

// Append writes every event byte for byte as json.Marshal does.
func TestAppendEventMatchesJSON(t *testing.T) {
	events := append([]formats.Event{
		{Kind: "k", Player: "DEL\x7f", PlayerID: "\xff\xfe", Text: "\b\f\x00"},
		{Tick: -1 << 63, Time: 1<<63 - 1, Kind: "", Text: "'quotes' `ticks` {}[]:,"},
	}, storedEventSeeds...)
	for _, e := range events {
		want, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if got := Append([]byte("prefix"), &e); string(got) != "prefix"+string(want) {
			t.Errorf("%+v:\n got %s\nwant prefix%s", e, got, want)
		}
	}
}

// FuzzAppendEvent holds Append to json.Marshal on any event.
func FuzzAppendEvent(f *testing.F) {
	for _, e := range storedEventSeeds {
		f.Add(e.Tick, int64(e.Time), e.Kind, e.Player, e.PlayerID, e.Text)
	}
	f.Fuzz(func(t *testing.T, tick, d int64, kind, player, playerID, text string) {
		e := formats.Event{Tick: tick, Time: time.Duration(d), Kind: kind, Player: player, PlayerID: playerID, Text: text}
		want, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if got := Append(nil, &e); !bytes.Equal(got, want) {
			t.Fatalf("%+v:\n got %s\nwant %s", e, got, want)
		}
	})
}

// The fast path decodes what encoding/json decodes, to the same event,
// and hands everything else to it.
func TestStoredEventMatchesJSON(t *testing.T) {
	for _, want := range storedEventSeeds {
		b, err := json.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		var got storedEvent
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if formats.Event(got) != want {
			t.Errorf("%s: decoded %+v, want %+v", b, got, want)
		}
	}
	for _, tc := range []struct {
		json string
		fast bool
	}{
		{`{"tick":5,"time":6,"kind":"chat","player":"a","player_id":"1","text":"t"}`, true},
		{`{"kind":"chat"}`, true},
		{`{"tick":-0}`, true},
		{`{"tick":1.5}`, false},
		{`{"tick":1e3}`, false},
		{`{"tick":99999999999999999999}`, false},
		{`{"text":"a\"b"}`, false},
		{`{"Text":"a"}`, false},
		{`{"other":1}`, false},
		{`{ "tick":1}`, false},
		{`{"player":null}`, false},
		{"{\"text\":\"\xff\"}", false},
		{`null`, false},
	} {
		var e storedEvent
		if got := e.fast([]byte(tc.json)); got != tc.fast {
			t.Errorf("%s: fast path %v, want %v", tc.json, got, tc.fast)
		}
	}
}

// FuzzStoredEvent holds the fast path to encoding/json on any valid JSON:
// where it decodes, encoding/json must decode the same event from the same
// starting one.
func FuzzStoredEvent(f *testing.F) {
	for _, e := range storedEventSeeds {
		b, _ := json.Marshal(e)
		f.Add(b)
	}
	f.Add([]byte(`{"tick":1,"tick":2,"text":"","kind":"k"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return
		}
		start := formats.Event{Tick: 7, Kind: "before", Text: "kept"}
		fast := storedEvent(start)
		if !fast.fast(b) {
			if fast != storedEvent(start) {
				t.Fatalf("%q: declined but changed the event to %+v", b, fast)
			}
			return
		}
		ref := start
		if err := json.Unmarshal(b, &ref); err != nil {
			t.Fatalf("%q: fast path decoded %+v, encoding/json refused: %v", b, fast, err)
		}
		if !reflect.DeepEqual(formats.Event(fast), ref) {
			t.Fatalf("%q: fast path %+v, encoding/json %+v", b, fast, ref)
		}
	})
}

// eventsOf runs Each over raw (the JSON of an events value) and
// returns the events given to fn, numbered from 0, from from on.
func eventsOf(raw []byte, from int) ([]formats.Event, error) {
	var got []formats.Event
	open := func() (io.Reader, error) { return bytes.NewReader(raw), nil }
	_, err := Each(bufio.NewReaderSize(nil, 64), open, 0, from, func(n int, e *formats.Event) error {
		if n != from+len(got) {
			return fmt.Errorf("event %d given as number %d", from+len(got), n)
		}
		got = append(got, *e)
		return nil
	})
	return got, err
}

// referenceEvents decodes raw with encoding/json alone.
func referenceEvents(raw []byte, from int) ([]formats.Event, error) {
	var got []formats.Event
	_, err := eventsJSON(bytes.NewReader(raw), 0, from, 0, func(_ int, e *formats.Event) error {
		got = append(got, *e)
		return nil
	})
	return got, err
}

// Events are read line by line where the value is laid out as the archive
// writes it, and by encoding/json where it is not, from where the layout
// stops: each event once, in order, the same as encoding/json alone.
func TestEventLines(t *testing.T) {
	var written bytes.Buffer
	for i := range storedEventSeeds {
		b, _ := json.Marshal(storedEventSeeds[i])
		if i == 0 {
			written.WriteByte('[')
		} else {
			written.WriteByte(',')
		}
		written.Write(b)
		written.WriteByte('\n')
	}
	written.WriteByte(']')
	compact, _ := json.Marshal(storedEventSeeds)
	mixed := append([]byte(nil), written.Bytes()[:bytes.IndexByte(written.Bytes(), '\n')+1]...)
	mixed = append(mixed, ',')
	mixed = append(mixed, compact[1:]...)
	long := []formats.Event{{Text: strings.Repeat("x", 100)}} // past the 64-byte buffer
	longRaw, _ := json.Marshal(long)
	longLines := append(append([]byte{'['}, longRaw[1:len(longRaw)-1]...), '\n', ']')
	for _, tc := range []struct {
		name string
		raw  []byte
		from int
		n    int
	}{
		{"lines", written.Bytes(), 0, len(storedEventSeeds)},
		{"lines from 2", written.Bytes(), 2, len(storedEventSeeds) - 2},
		{"compact", compact, 0, len(storedEventSeeds)},
		{"lines then compact", mixed, 1, len(storedEventSeeds)},
		{"a line longer than the buffer", longLines, 0, 1},
		{"empty", []byte("[]"), 0, 0},
		{"empty lines", []byte("[\n]"), 0, 0},
	} {
		got, err := eventsOf(tc.raw, tc.from)
		want, werr := referenceEvents(tc.raw, tc.from)
		if err != nil || werr != nil {
			t.Fatalf("%s: %v / %v", tc.name, err, werr)
		}
		if len(got) != tc.n || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %d events %+v, want %d: %+v", tc.name, len(got), got, tc.n, want)
		}
	}
	for _, bad := range []string{`[{"tick":1}` + "\n" + `,{"tick":`, `{"tick":1}`, `[1]`} {
		_, err := eventsOf([]byte(bad), 0)
		var de *Error
		if !errors.As(err, &de) {
			t.Errorf("%q: error %v, want an *Error", bad, err)
		}
	}
	stop := errors.New("stop")
	_, err := Each(bufio.NewReader(nil), func() (io.Reader, error) { return bytes.NewReader(written.Bytes()), nil }, 0, 0,
		func(int, *formats.Event) error { return stop })
	if err != stop {
		t.Errorf("fn's error came back as %v", err)
	}
}

// FuzzEventLines holds the line reader to encoding/json on any bytes: the
// same events, and an error exactly when encoding/json has one.
func FuzzEventLines(f *testing.F) {
	f.Add([]byte("[{\"tick\":1,\"kind\":\"chat\"}\n,{\"text\":\"a\\\"b\"}\n]"), 0)
	f.Add([]byte(`[{"tick":1},{"tick":2}]`), 1)
	f.Add([]byte("[\n]"), 0)
	f.Fuzz(func(t *testing.T, raw []byte, from int) {
		from = max(0, min(from, 8))
		got, err := eventsOf(raw, from)
		want, werr := referenceEvents(raw, from)
		if (err != nil) != (werr != nil) {
			t.Fatalf("%q: error %v, encoding/json %v", raw, err, werr)
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: %+v, encoding/json %+v", raw, got, want)
		}
	})
}
