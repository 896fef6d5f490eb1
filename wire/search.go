package wire

import (
	"fmt"
	"strconv"
	"time"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/query"
)

// Event is one event in a search hit or a recording's event list.
type Event struct {
	Tick     int64  `json:"tick"`
	TimeMS   int64  `json:"time_ms"`
	At       string `json:"at,omitempty"`
	Kind     string `json:"kind"`
	Player   string `json:"player,omitempty"`
	PlayerID string `json:"player_id,omitempty"`
	Text     string `json:"text,omitempty"`
	ClipURL  string `json:"clip_url,omitempty"`
}

// Hit is one recording found by a search.
type Hit struct {
	ID         string   `json:"id"`
	Format     string   `json:"format"`
	Session    string   `json:"session,omitempty"`
	Start      string   `json:"start,omitempty"`
	DurationMS int64    `json:"duration_ms"`
	Map        string   `json:"map,omitempty"`
	Server     string   `json:"server,omitempty"`
	Players    []string `json:"players"`
	Flags      []string `json:"flags"`
	CanClip    bool     `json:"can_clip"`
	EventTotal int      `json:"event_total"`
	Events     []Event  `json:"events"`
}

// Search is the answer to a search (the API's, and `archivectl search
// --json`'s).
type Search struct {
	Query      string  `json:"query"`
	Total      int     `json:"total"`
	TookMS     float64 `json:"took_ms"`
	NextCursor string  `json:"next_cursor,omitempty"`
	Hits       []Hit   `json:"hits"`
}

// SearchOf is the JSON form of the results of query q; next is the cursor
// of the following page ("" for none).
func SearchOf(x *replay.Archive, q string, res *query.Results, next string) Search {
	out := Search{Query: q, Total: res.Total, TookMS: float64(res.Took.Microseconds()) / 1000, Hits: []Hit{}, NextCursor: next}
	for _, h := range res.Hits {
		out.Hits = append(out.Hits, HitOf(h, x.CanClip(h.Format)))
	}
	return out
}

// HitOf is the JSON form of one hit; canClip says whether its format can
// clip, so that only then a clip URL is offered.
func HitOf(h query.Hit, canClip bool) Hit {
	hj := Hit{ID: h.ID, Format: h.Format, Session: h.Session, DurationMS: h.Duration.Milliseconds(),
		Map: h.Map, Server: h.Server, Players: nonNil(h.Players), Flags: nonNil(h.Flags),
		CanClip: canClip, EventTotal: h.EventTotal, Events: []Event{}}
	if !h.Start.IsZero() {
		hj.Start = h.Start.UTC().Format(time.RFC3339)
	}
	for _, ev := range h.Events {
		ej := Event{Tick: ev.Tick, TimeMS: ev.Time.Milliseconds(), Kind: ev.Kind, Player: ev.Player, Text: ev.Text}
		if !h.Start.IsZero() {
			ej.At = h.Start.Add(ev.Time).UTC().Format(time.RFC3339)
		}
		if hj.CanClip {
			ej.ClipURL = ClipURL(h.ID, ev.Time)
		}
		hj.Events = append(hj.Events, ej)
	}
	return hj
}

// ClipURL is the clip endpoint for a few seconds around offset t of a
// recording; the server clamps the range to the recording.
func ClipURL(id string, t time.Duration) string {
	from := max(t-replay.ClipMargin*time.Second, 0)
	to := t + replay.ClipMargin*time.Second
	return fmt.Sprintf("/api/v1/recordings/%s/clip?from=%s&to=%s", id, offsetString(from), offsetString(to))
}

// offsetString prints an offset in the form from/to parameters take.
func offsetString(d time.Duration) string {
	return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
}

// EventOf is the JSON form of an event of recording m.
func EventOf(m *archive.Manifest, ev formats.Event) Event {
	ej := Event{Tick: ev.Tick, TimeMS: ev.Time.Milliseconds(), Kind: ev.Kind, Player: ev.Player, PlayerID: ev.PlayerID, Text: ev.Text}
	if !m.Meta.Start.IsZero() {
		ej.At = m.Meta.Start.Add(ev.Time).UTC().Format(time.RFC3339)
	}
	return ej
}

// Events is a recording's events in a tick range: the first of them, and
// how many there are in all.
type Events struct {
	Events []Event `json:"events"`
	Total  int     `json:"total"`
}

// EventsOf is the JSON form of the events of recording m in span, the
// first limit of them.
func EventsOf(m *archive.Manifest, evs []formats.Event, span formats.Range, limit int) Events {
	out := Events{Events: []Event{}}
	for _, ev := range evs {
		if !span.Contains(ev.Tick) {
			continue
		}
		out.Total++
		if len(out.Events) < limit {
			out.Events = append(out.Events, EventOf(m, ev))
		}
	}
	return out
}

// EventsCompact is a recording's events as columns (`?compact=1`), for
// the web page's timeline: a one-hour teehistorian file's 7,437 events are
// about a seventh of the bytes of the event objects, and quicker to write
// and parse. Event i is tick Tick[0]+…+Tick[i] (each entry is the
// difference from the event before, the first from 0; TimeMS likewise),
// and Kind, Player, PlayerID and Text index Strings, where 0 is "".
type EventsCompact struct {
	Total    int      `json:"total"`
	Strings  []string `json:"strings"`
	Tick     []int64  `json:"tick"`
	TimeMS   []int64  `json:"time_ms"`
	Kind     []int    `json:"kind"`
	Player   []int    `json:"player"`
	PlayerID []int    `json:"player_id"`
	Text     []int    `json:"text"`
}

// EventsCompactOf is the column form of the events of evs in span, the
// first limit of them.
func EventsCompactOf(evs []formats.Event, span formats.Range, limit int) EventsCompact {
	out := EventsCompact{Strings: []string{""}, Tick: []int64{}, TimeMS: []int64{}, Kind: []int{}, Player: []int{}, PlayerID: []int{}, Text: []int{}}
	index := map[string]int{"": 0}
	str := func(s string) int {
		i, ok := index[s]
		if !ok {
			i = len(out.Strings)
			index[s] = i
			out.Strings = append(out.Strings, s)
		}
		return i
	}
	var tick, ms int64
	for _, ev := range evs {
		if !span.Contains(ev.Tick) {
			continue
		}
		out.Total++
		if len(out.Tick) >= limit {
			continue
		}
		t := ev.Time.Milliseconds()
		out.Tick = append(out.Tick, ev.Tick-tick)
		out.TimeMS = append(out.TimeMS, t-ms)
		tick, ms = ev.Tick, t
		out.Kind = append(out.Kind, str(ev.Kind))
		out.Player = append(out.Player, str(ev.Player))
		out.PlayerID = append(out.PlayerID, str(ev.PlayerID))
		out.Text = append(out.Text, str(ev.Text))
	}
	return out
}
