// Tests for OR, AND and groups in searches: the recordings found, the
// events listed under each hit, and recordings whose text overflowed their
// document.

package query

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/replayarchive/replay/formats"
)

// TestSearchOr runs queries with OR and groups over the fixture (A: Kitty
// and Bob, kicks and a ban at ticks 100 and 300, a gg at 200, a vote at
// 400; B: Kitkat and Alice, "ban 3 please" chat; C: KITTY, held; D: Zed,
// no start, no events). Each hit's events are listed as "tick text".
func TestSearchOr(t *testing.T) {
	ix, _ := openFixture(t)
	defer ix.Close()
	type evs = map[string][]string
	for _, tc := range []struct {
		q      string
		want   []string
		events evs
	}{
		// A player or a command: recordings matching either, and the
		// ticks of the command's events under those that have them.
		{"player:zed OR cmd:kick", []string{idA, idD}, evs{idA: {"100 kick 3"}}},
		{"cmd:kick OR player:zed", []string{idA, idD}, evs{idA: {"100 kick 3"}}},
		{"player:alice OR player:zed", []string{idB, idD}, nil},
		{"player:alice OR cmd:kick", []string{idB, idA}, evs{idA: {"100 kick 3"}}},
		{"cmd:kick OR chat:please", []string{idB, idA}, evs{idA: {"100 kick 3"}, idB: {"5 ban 3 please"}}},
		{"cmd:kick OR cmd:ban", []string{idA}, evs{idA: {"100 kick 3", "300 ban 3 spam"}}},
		{"kind:vote OR chat:hello", []string{idA, idC}, evs{idA: {"400 kick Bob"}, idC: {"2 hello kick"}}},
		{"kick OR player:zed", []string{idA, idC, idD}, evs{idA: {"100 kick 3", "400 kick Bob"}, idC: {"2 hello kick"}}},
		// Groups and precedence: AND binds tighter than OR.
		{"(player:kitty OR player:alice) cmd:kick", []string{idA}, evs{idA: {"100 kick 3"}}},
		{"(player:kitty OR player:alice) (cmd:status OR cmd:timeout)", []string{idB, idC}, evs{idB: {"6 status"}, idC: {"1 timeout 5"}}},
		{"player:kitty held:true OR format:butter", []string{idB, idC}, nil},
		{"player:kitty (held:true OR format:butter)", []string{idC}, nil},
		{"player:kitty AND held:true OR format:butter", []string{idB, idC}, nil},
		// Exclusions of groups and inside them; excluded terms list no events.
		{"-(player:kitty OR player:alice)", []string{idD}, nil},
		{"-(cmd:kick OR chat:gg) player:kitty", []string{idC}, nil},
		{"-(-(player:zed))", []string{idD}, nil},
		{"map:dust2 OR -flagged:true", []string{idB, idD}, nil},
		{"-(map:dust2 OR flagged:true)", []string{idD}, nil},
		{"-(player:kitty -cmd:kick)", []string{idB, idA, idD}, evs{idA: {"100 kick 3"}}}, // kick counts positively
		{"held:true OR -(cmd:kick OR player:zed)", []string{idB, idC}, nil},
		// Ids (whose term is on event blocks too) and recording-level terms.
		{"id:" + idA + " OR id:" + idC, []string{idA, idC}, nil},
		{"-(id:" + idA + " OR id:" + idC + ")", []string{idB, idD}, nil},
		{"after:2024-06-01 OR before:2024-01-01", []string{idB, idC}, nil},
		// Lower-case or is a word; quoted "OR" too.
		{"player:zed or", nil, nil},
	} {
		res, err := ix.Search(context.Background(), tc.q, 10)
		if err != nil {
			t.Errorf("%q: %v", tc.q, err)
			continue
		}
		var got []string
		gotEv := evs{}
		for _, h := range res.Hits {
			got = append(got, h.ID)
			for _, e := range h.Events {
				gotEv[h.ID] = append(gotEv[h.ID], fmt.Sprintf("%d %s", e.Tick, e.Text))
			}
			if h.EventTotal != len(h.Events) {
				t.Errorf("%q: %s: EventTotal %d, %d events", tc.q, h.ID, h.EventTotal, len(h.Events))
			}
		}
		if !reflect.DeepEqual(got, tc.want) || res.Total != len(tc.want) {
			t.Errorf("%q: hits %v (total %d), want %v", tc.q, got, res.Total, tc.want)
		}
		if tc.events == nil {
			tc.events = evs{}
		}
		if !reflect.DeepEqual(gotEv, tc.events) {
			t.Errorf("%q: events %v, want %v", tc.q, gotEv, tc.events)
		}
	}
}

// TestSearchOrOverflowed: a recording whose command text is more than its
// document holds (maxRecText) matches an OR through any of its operands,
// by its document or its events, and no other OR: the compiled query lets
// it through on its overflow mark, and the check of the hit decides.
func TestSearchOrOverflowed(t *testing.T) {
	ctx := context.Background()
	ix, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	a := RecordingDoc{ID: idA, Players: []formats.Player{{Name: "amy"}}}
	for i := 0; len(a.Events)*32 < 2*maxRecText; i++ {
		a.Events = append(a.Events, ev(int64(i), formats.EventCommand, "x", fmt.Sprintf("say filler number %d of many", i)))
	}
	n := int64(len(a.Events))
	a.Events = append(a.Events, ev(n, formats.EventCommand, "x", "late word here"))
	b := RecordingDoc{ID: idB, Players: []formats.Player{{Name: "ben"}}, Events: []formats.Event{ev(0, formats.EventCommand, "y", "kick 1")}}
	if err := ix.Apply(ctx, 1, []RecordingDoc{a, b}, nil); err != nil {
		t.Fatal(err)
	}
	for q, want := range map[string][]string{
		"player:nobody OR cmd:late":               {idA},
		"cmd:late OR cmd:kick":                    {idA, idB},
		"cmd:nothere OR player:ben":               {idB},
		"cmd:nothere OR player:nobody":            nil,
		"player:amy OR cmd:nothere":               {idA},
		"-(cmd:late OR player:ben)":               nil,
		"-(cmd:nothere OR player:ben)":            {idA},
		"(cmd:late OR cmd:x) -cmd:kick":           {idA},
		"player:amy (cmd:nothere OR cmd:filler)":  {idA},
		"player:amy (cmd:nothere OR cmd:nowhere)": nil,
	} {
		res, err := ix.Search(ctx, q, 10)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		var got []string
		for _, h := range res.Hits {
			got = append(got, h.ID)
		}
		slices.Sort(got)
		if !reflect.DeepEqual(got, want) || res.Total != len(want) {
			t.Errorf("%s: hits %v (total %d), want %v", q, got, res.Total, want)
		}
		if q == "player:nobody OR cmd:late" && len(res.Hits) == 1 {
			if h := res.Hits[0]; h.EventTotal != 1 || h.Events[0].Tick != n {
				t.Errorf("%s: events %d %+v", q, h.EventTotal, h.Events)
			}
		}
	}
}
