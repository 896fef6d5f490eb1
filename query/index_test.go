// Tests for indexing and searching a small fixed set of recordings.

package query

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"
	index "github.com/blevesearch/bleve_index_api"
	"github.com/replayarchive/replay/formats"
)

const (
	idA = "00000000-0000-0000-0000-00000000000a"
	idB = "00000000-0000-0000-0000-00000000000b"
	idC = "00000000-0000-0000-0000-00000000000c"
	idD = "00000000-0000-0000-0000-00000000000d"
)

func ev(tick int64, kind, player, text string) formats.Event {
	return formats.Event{Tick: tick, Time: time.Duration(tick) * 20 * time.Millisecond, Kind: kind, Player: player, Text: text}
}

func fixture() []RecordingDoc {
	return []RecordingDoc{
		{
			ID: idA, Format: "teehistorian", Session: "S1",
			Start:    time.Date(2024, 3, 1, 10, 0, 0, 0, time.UTC),
			Duration: 10 * time.Minute, Ticks: 30000,
			Players: []formats.Player{{Name: "Kitty", ID: "K1", Team: "red"}, {Name: "Bob", ID: "b2"}},
			Map:     "ctf5", Server: "DDNet GER", Flags: []string{"aimbot"},
			Attrs: map[string]string{"region": "NorthEU", "rcon_password": "hunter2xyz", "vote_timeout": "zq9timeout"},
			Events: []formats.Event{
				ev(100, formats.EventCommand, "Kitty", "kick 3"),
				ev(200, formats.EventChat, "Bob", "gg wp"),
				ev(300, formats.EventCommand, "Kitty", "ban 3 spam"),
				ev(400, formats.EventVote, "Bob", "kick Bob"),
			},
		},
		{
			ID: idB, Format: "butter", Session: "S2",
			Start:    time.Date(2024, 6, 15, 0, 0, 0, 0, time.UTC),
			Duration: 2 * time.Hour,
			Players:  []formats.Player{{Name: "Kitkat"}, {Name: "Alice"}},
			Map:      "Dust2", Server: "EU1",
			Events: []formats.Event{
				ev(5, formats.EventChat, "Alice", "ban 3 please"),
				ev(6, formats.EventCommand, "Alice", "status"),
			},
		},
		{
			ID: idC, Format: "sc2replay",
			Start:    time.Date(2023, 12, 31, 23, 0, 0, 0, time.UTC),
			Duration: 90 * time.Second,
			Players:  []formats.Player{{Name: "KITTY"}},
			Map:      "Lost Temple", Flags: []string{"speedhack"}, Held: true,
			Events: []formats.Event{
				ev(1, formats.EventCommand, "KITTY", "timeout 5"),
				ev(2, formats.EventChat, "KITTY", "hello kick"),
			},
		},
		{ID: idD, Format: "hcrp", Duration: 5 * time.Minute, Players: []formats.Player{{Name: "Zed"}}},
	}
}

func openFixture(t *testing.T) (*Index, string) {
	t.Helper()
	dir := t.TempDir() + "/ix"
	ix, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.Apply(context.Background(), 7, fixture(), nil); err != nil {
		t.Fatal(err)
	}
	return ix, dir
}

// ids returns the hit ids, and for each hit its event texts.
func ids(res *Results) ([]string, map[string][]string) {
	var out []string
	evs := map[string][]string{}
	for _, h := range res.Hits {
		out = append(out, h.ID)
		for _, e := range h.Events {
			evs[h.ID] = append(evs[h.ID], e.Text)
		}
	}
	return out, evs
}

func TestSearch(t *testing.T) {
	ix, _ := openFixture(t)
	defer ix.Close()
	type evs = map[string][]string
	tests := []struct {
		q      string
		want   []string
		events evs
	}{
		{"", []string{idB, idA, idC, idD}, nil},
		{"player:kitty", []string{idA, idC}, nil},
		{"player:KITTY", []string{idA, idC}, nil},
		{"player:kit*", []string{idB, idA, idC}, nil},
		{"player:Kit", nil, nil},
		{"player-id:k1", []string{idA}, nil},
		{"map:dust2", []string{idB}, nil},
		{`map:"lost temple"`, []string{idC}, nil},
		{`server:"DDNet GER"`, []string{idA}, nil},
		{"server:ddnet*", []string{idA}, nil},
		{"flag:AIMBOT", []string{idA}, nil},
		{"format:butter", []string{idB}, nil},
		{"session:s1", []string{idA}, nil},
		{"id:" + idC, []string{idC}, nil},
		{"held:true", []string{idC}, nil},
		{"held:false", []string{idB, idA, idD}, nil},
		{"flagged:true", []string{idA, idC}, nil},
		{"flagged:false", []string{idB, idD}, nil},
		{"-flagged:yes", []string{idB, idD}, nil},
		{"after:2024-01-01", []string{idB, idA}, nil},
		{"after:2024-03-01", []string{idB, idA}, nil}, // inclusive
		{"after:2024-03-01T10:00:01Z", []string{idB}, nil},
		{"before:2024-03-01T10:00:00Z", []string{idC}, nil}, // exclusive
		{"after:2023-01-01 before:2024-06-01", []string{idA, idC}, nil},
		{"longer:5m", []string{idB, idA}, nil}, // idD is exactly 5m
		{"shorter:5m", []string{idC}, nil},
		{"shorter:6m", []string{idC, idD}, nil},
		{"longer:1m shorter:1h", []string{idA, idC, idD}, nil},
		{"cmd:kick", []string{idA}, evs{idA: {"kick 3"}}},
		{"cmd:KICK", []string{idA}, evs{idA: {"kick 3"}}},
		{"cmd:ki*", []string{idA}, evs{idA: {"kick 3"}}},
		{`cmd:"ban 3"`, []string{idA}, evs{idA: {"ban 3 spam"}}},
		{`cmd:"3 ban"`, nil, nil}, // "kick 3" and "ban 3 spam" are separate commands
		{`cmd:"ban 3 spam"`, []string{idA}, evs{idA: {"ban 3 spam"}}},
		{`cmd:"ban spam 3"`, nil, nil}, // has both pairs' words, not in this order
		{`cmd:"kick 3 ban"`, nil, nil},
		{`"3 please"`, []string{idB}, evs{idB: {"ban 3 please"}}},
		{`cmd:3`, []string{idA}, evs{idA: {"kick 3", "ban 3 spam"}}},
		{`chat:"ban 3"`, []string{idB}, evs{idB: {"ban 3 please"}}},
		{"chat:gg", []string{idA}, evs{idA: {"gg wp"}}},
		{"kind:vote", []string{idA}, evs{idA: {"kick Bob"}}},
		{"kick", []string{idA, idC}, evs{idA: {"kick 3", "kick Bob"}, idC: {"hello kick"}}},
		{`"gg wp"`, []string{idA}, evs{idA: {"gg wp"}}},
		{"kitty", []string{idA, idC}, nil},            // player names, no events
		{"dust2", []string{idB}, nil},                 // map
		{"ger", []string{idA}, nil},                   // server words
		{"northeu", []string{idA}, nil},               // attribute value
		{"-player:bob", []string{idB, idC, idD}, nil}, // exclusion alone
		{"player:kitty -flag:aimbot", []string{idC}, nil},
		{"-cmd:kick", []string{idB, idC, idD}, nil},
		{"player:kitty cmd:kick", []string{idA}, evs{idA: {"kick 3"}}},
		{"player:alice cmd:kick", nil, nil},
		{"cmd:kick chat:gg", []string{idA}, evs{idA: {"kick 3", "gg wp"}}},
		{"cmd:kick chat:please", nil, nil},
		{"player:kitty kick", []string{idA, idC}, evs{idA: {"kick 3", "kick Bob"}, idC: {"hello kick"}}},
		{"flag:speedhack after:2023-12-01 before:2024-01-01", []string{idC}, nil},
		// at: and during: find recordings running then (start ≤ t < end):
		// A runs 2024-03-01 10:00-10:10, B 2024-06-15 00:00-02:00, C
		// 2023-12-31 23:00-23:01:30, D has no start.
		{"at:2024-03-01T10:05", []string{idA}, nil},     // started before the minute
		{"at:2024-03-01T10:00", []string{idA}, nil},     // started in it
		{"at:2024-03-01T09:59", nil, nil},               // the whole minute, but before the start
		{"at:2024-03-01T10:10", nil, nil},               // the end is exclusive
		{"at:2024-03-01T10:09:59Z", []string{idA}, nil}, // seconds
		{"at:2024-03-01T10:10:00Z", nil, nil},
		{"at:2024-03-01T10:09:59.999Z", []string{idA}, nil},
		{"at:2024-03-01T10:05:00+02:00", nil, nil}, // 08:05 UTC
		{"at:2024-06-15T03:30+02:00", []string{idB}, nil},
		{"at:2024-06-15T01", []string{idB}, nil}, // the whole hour
		{"at:2023-12-31", []string{idC}, nil},    // the whole day
		{"at:2024-01-01", nil, nil},
		{"-at:2024-03-01", []string{idB, idC, idD}, nil},
		{"after:2024-03-01T10:05:00Z", []string{idB}, nil}, // start semantics
		{"during:2024-03-01T10:05..", []string{idB, idA}, nil},
		{"during:..2024-01-01", []string{idC}, nil},
		{"during:..2024-03-01T10:00", []string{idC}, nil}, // TO is exclusive
		{"during:2023-12-31T23:01..2024-03-01T10:01", []string{idA, idC}, nil},
		{"during:2023-12-31T23:02..2024-03-01T10:00", nil, nil},
		{"during:2024-06-15T01", []string{idB}, nil},
		{"player:kitty during:2024-01-01..", []string{idA}, nil},
		// Secrets are never indexed, and neither are these attribute values.
		{"hunter2xyz", nil, nil},
		{"zq9timeout", nil, nil},
		{"hunter2*", nil, nil},
	}
	ctx := context.Background()
	for _, tc := range tests {
		res, err := ix.Search(ctx, tc.q, 10)
		if err != nil {
			t.Errorf("%q: %v", tc.q, err)
			continue
		}
		got, gotEv := ids(res)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: hits %v, want %v", tc.q, got, tc.want)
		}
		if res.Total != len(tc.want) {
			t.Errorf("%q: total %d, want %d", tc.q, res.Total, len(tc.want))
		}
		if tc.events == nil {
			tc.events = evs{}
		}
		if !reflect.DeepEqual(gotEv, tc.events) {
			t.Errorf("%q: events %v, want %v", tc.q, gotEv, tc.events)
		}
	}
}

func TestHitContent(t *testing.T) {
	ix, _ := openFixture(t)
	defer ix.Close()
	res, err := ix.Search(context.Background(), "cmd:ban", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Hits) != 1 {
		t.Fatalf("hits %d", len(res.Hits))
	}
	want := Hit{
		ID: idA, Format: "teehistorian", Session: "S1", Map: "ctf5", Server: "DDNet GER",
		Start: time.Date(2024, 3, 1, 10, 0, 0, 0, time.UTC), Duration: 10 * time.Minute,
		Players: []string{"Kitty", "Bob"}, PlayerIDs: []string{"K1", "b2"}, Flags: []string{"aimbot"},
		Events:     []EventHit{{Tick: 300, Time: 6 * time.Second, Kind: "command", Player: "Kitty", Text: "ban 3 spam"}},
		EventTotal: 1,
	}
	if !reflect.DeepEqual(res.Hits[0], want) {
		t.Errorf("hit\n got %+v\nwant %+v", res.Hits[0], want)
	}
}

func TestSearchLimitAndOffset(t *testing.T) {
	ix, _ := openFixture(t)
	defer ix.Close()
	res, err := ix.Search(context.Background(), "", 2)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := ids(res); res.Total != 4 || !reflect.DeepEqual(got, []string{idB, idA}) {
		t.Errorf("limit 2: total %d hits %v", res.Total, got)
	}
	q, _ := Parse("")
	res, err = ix.SearchQuery(context.Background(), q, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := ids(res); !reflect.DeepEqual(got, []string{idC, idD}) {
		t.Errorf("offset 2: hits %v", got)
	}
}

func TestMaxEvents(t *testing.T) {
	// 10 events fit the one combined event search (4×MaxEvents); 20 make
	// each hit search on its own. Both must cap at MaxEvents and count all.
	for _, n := range []int{10, 20} {
		ix, err := OpenWith(t.TempDir(), Options{MaxEvents: 3})
		if err != nil {
			t.Fatal(err)
		}
		r := RecordingDoc{ID: idA}
		for i := range n {
			r.Events = append(r.Events, ev(int64(i), formats.EventCommand, "x", "kick"))
		}
		r2 := RecordingDoc{ID: idB, Events: r.Events[:1]}
		if err := ix.Apply(context.Background(), 1, []RecordingDoc{r, r2}, nil); err != nil {
			t.Fatal(err)
		}
		res, err := ix.Search(context.Background(), "cmd:kick", 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Hits) != 2 {
			t.Fatalf("%d events: %d hits", n, len(res.Hits))
		}
		for _, h := range res.Hits {
			want := n
			if h.ID == idB {
				want = 1
			}
			if h.EventTotal != want || len(h.Events) != min(want, 3) || h.Events[0].Tick != 0 || h.Events[len(h.Events)-1].Tick != int64(len(h.Events)-1) {
				t.Errorf("%d events: %s: total %d, %+v", n, h.ID, h.EventTotal, h.Events)
			}
		}
		ix.Close()
	}
}

func TestApplyReplaceAndDelete(t *testing.T) {
	ix, _ := openFixture(t)
	defer ix.Close()
	ctx := context.Background()
	count := func() uint64 {
		n, err := ix.DocCount()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(); n != 4+4+2+2 { // recordings + events
		t.Fatalf("doc count %d", n)
	}
	// Replace A with a version that has one event: its old event docs go.
	a := fixture()[0]
	a.Events = a.Events[1:2] // "gg wp"
	a.Players = a.Players[1:]
	if err := ix.Apply(ctx, 8, []RecordingDoc{a}, nil); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 4+1+2+2 {
		t.Errorf("after replace: doc count %d", n)
	}
	for q, want := range map[string]int{"cmd:kick": 0, "kick": 1, "player:kitty": 1, "chat:gg": 1, "player:bob": 1} {
		res, err := ix.Search(ctx, q, 10)
		if err != nil {
			t.Fatal(err)
		}
		if res.Total != want {
			t.Errorf("after replace: %q: %d hits, want %d", q, res.Total, want)
		}
	}
	// Delete A and C: all their documents go.
	if err := ix.Apply(ctx, 9, nil, []string{idA, idC}); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 2+2 {
		t.Errorf("after delete: doc count %d", n)
	}
	res, err := ix.Search(ctx, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := ids(res); !reflect.DeepEqual(got, []string{idB, idD}) {
		t.Errorf("after delete: %v", got)
	}
	// Put and delete of the same id in one batch: the put wins.
	b := fixture()[1]
	if err := ix.Apply(ctx, 10, []RecordingDoc{b}, []string{idB, idD}); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 1+2 {
		t.Errorf("after put+delete: doc count %d", n)
	}
	// The same id put twice in one batch: the last put wins, whole.
	long, short := fixture()[0], fixture()[0]
	short.Events = short.Events[:1]
	if err := ix.Apply(ctx, 11, []RecordingDoc{long, short}, nil); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 1+2+1+1 {
		t.Errorf("after double put: doc count %d", n)
	}
	if err := ix.Apply(ctx, 12, []RecordingDoc{{ID: "a/b"}}, nil); err == nil {
		t.Error("id with '/' accepted")
	}
}

func TestSeqSurvivesReopen(t *testing.T) {
	ix, dir := openFixture(t)
	if s, err := ix.Seq(); err != nil || s != 7 {
		t.Fatalf("seq %d, %v", s, err)
	}
	if err := ix.Apply(context.Background(), 1<<40+3, nil, []string{idD}); err != nil {
		t.Fatal(err)
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	ix, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if s, err := ix.Seq(); err != nil || s != 1<<40+3 {
		t.Fatalf("after reopen: seq %d, %v", s, err)
	}
	res, err := ix.Search(context.Background(), "player:kitty", 10)
	if err != nil || res.Total != 2 {
		t.Fatalf("after reopen: %v %v", res, err)
	}
}

func TestOpenNew(t *testing.T) {
	dir := t.TempDir() // exists and is empty
	ix, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if s, err := ix.Seq(); err != nil || s != 0 {
		t.Errorf("new index: seq %d, %v", s, err)
	}
	ix.Close()
}

func TestSearchParseError(t *testing.T) {
	ix, _ := openFixture(t)
	defer ix.Close()
	_, err := ix.Search(context.Background(), "player:x after:2024-13-99", 10)
	pe, ok := err.(*ParseError)
	if !ok || pe.Pos != 9 || pe.Term != "after:2024-13-99" {
		t.Fatalf("err %v", err)
	}
}

// TestSortKeysMatchBleve checks the in-memory sort keys (sortkeys.go)
// against bleve's own sort on the doc values, over several segments,
// replaced and deleted recordings (documents of a segment that no longer
// count) and many recordings that started at the same second (ties of
// the keys' numbers, decided by the keys), in every order, page by page.
func TestSortKeysMatchBleve(t *testing.T) {
	ix, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	c := genConfig{Recordings: 1500, Events: 3, Players: 300, Seed: 9}
	ctx := context.Background()
	same := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	seq := uint64(0)
	for lo := 0; lo < c.Recordings; lo += 300 {
		var puts []RecordingDoc
		for i := lo; i < lo+300; i++ {
			r := genRecording(c, i)
			switch i % 10 {
			case 0:
				r.Start = time.Time{} // no start time
			case 1, 2:
				r.Start = same // the same instant: ties
			}
			puts = append(puts, r)
		}
		var dels []string
		if lo > 0 {
			dels = []string{genRecording(c, lo-7).ID, genRecording(c, lo-3).ID}
			puts = append(puts, genRecording(c, lo-100)) // put again
		}
		seq++
		if err := ix.Apply(ctx, seq, puts, dels); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []string{"", "cmd:kick", "-format:vtx", "player:ka*", "before:2024-06-01",
		// One range of starts (bestOfStarts), its bounds on the tied start.
		"after:2024-05-01T12:00:00Z", "before:2024-05-01T12:00:00Z", "after:2024-03-01 before:2024-05-01T12:00:00Z", "before:2024-05-01T12:00:01Z after:2024-05-01T12:00:00Z"} {
		pq, err := Parse(q)
		if err != nil {
			t.Fatal(err)
		}
		top, err := (&compiler{q: pq, keys: &ix.keys}).root()
		if err != nil {
			t.Fatal(err)
		}
		for _, so := range []Sort{{}, {Asc: true}, {Key: SortDuration}, {Key: SortPlayers, Asc: true}} {
			field, _ := so.field()
			req := bleve.NewSearchRequestOptions(top, 2000, 0, false)
			if so.Asc {
				req.SortBy([]string{field})
			} else {
				req.SortBy([]string{"-" + field})
			}
			want, err := ix.bi.SearchInContext(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			pages := [][2]int{{0, 20}, {40, 20}, {0, 200}, {1400, 30}, {1480, 30}, {0, 1}}
			for k, page := range append(pages, pages...) {
				if k == len(pages) {
					// The numbers read meanwhile in the background are
					// all there now (the pages before may have read doc
					// values for some or all segments).
					ix.keys.readers.Wait()
				}
				got, err := ix.SearchQuery(ctx, pq, page[0], page[1], so)
				if err != nil {
					t.Fatal(err)
				}
				g, _ := ids(got)
				var w []string
				for _, h := range want.Hits[min(page[0], len(want.Hits)):min(page[0]+page[1], len(want.Hits))] {
					w = append(w, h.ID)
				}
				if got.Total != int(want.Total) || !reflect.DeepEqual(g, w) {
					t.Errorf("%q %v %v: total %d %v\nbleve's sort: total %d %v", q, so, page, got.Total, g, want.Total, w)
				}
			}
		}
	}
}

// TestBestOfTermTaken: once the numbers are read, a one-term query is
// answered by bestOfTerm and a range of starts by bestOfStarts (which
// TestSortKeysMatchBleve then checks), not by walks.
func TestBestOfTermTaken(t *testing.T) {
	ix, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	c := genConfig{Recordings: 200, Events: 3, Players: 30, Seed: 4}
	var puts []RecordingDoc
	for i := range c.Recordings {
		puts = append(puts, genRecording(c, i))
	}
	ctx := context.Background()
	if err := ix.Apply(ctx, 1, puts, []string{puts[3].ID}); err != nil {
		t.Fatal(err)
	}
	adv, _ := ix.bi.Advanced()
	r, err := adv.Reader()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := ix.keys.view(r, fSort); err != nil || !ok {
		t.Fatal(ok, err)
	}
	ix.keys.readers.Wait()
	view, _, _ := ix.keys.view(r, fSort)
	top := &tsHeap{full: func(index.IndexInternalID) string { return "" }}
	total, done, err := bestOfTerm(ctx, view, termQ(fIsRec, "r"), top, 20)
	r.Close()
	if err != nil || !done || total != c.Recordings || len(top.e) != 20 {
		t.Fatalf("bestOfTerm: total %d, done %v, %d kept, %v", total, done, len(top.e), err)
	}
	lo, hi := startAfter(&Term{Time: time.Date(2024, 7, 1, 0, 0, 0, 0, time.UTC)}).(*startQuery).nums()
	top = &tsHeap{full: top.full}
	total, done, err = bestOfStarts(ctx, view, lo, hi, top, 20)
	if err != nil || !done || total < 50 || total > 150 || len(top.e) != 20 {
		t.Fatalf("bestOfStarts: total %d of %d, done %v, %d kept, %v", total, c.Recordings, done, len(top.e), err)
	}
}

// TestKeyNumberOrders: a key's number never orders two keys against their
// own order.
func TestKeyNumberOrders(t *testing.T) {
	keys := []string{"0", "0abc-", "0abd", "1", "1000000000000000a", "10000000000000001", "1ffffffffffffffffz", "1fffffffffffffff0"}
	for _, f := range []string{fSort, fSortDur} {
		for _, a := range keys {
			for _, b := range keys {
				if a < b && keyNumber(f, []byte(a)) > keyNumber(f, []byte(b)) {
					t.Errorf("%s: %q < %q but numbers %x > %x", f, a, b, keyNumber(f, []byte(a)), keyNumber(f, []byte(b)))
				}
			}
		}
	}
}

func TestOpenRefusesOtherDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if ix, err := Open(dir); err == nil {
		ix.Close()
		t.Fatal("opened a non-empty directory that holds no index")
	}
	// A missing directory under a missing parent is created.
	ix, err := Open(filepath.Join(dir, "a", "b"))
	if err != nil {
		t.Fatal(err)
	}
	ix.Close()
}

// TestGeneratedSecretsNotIndexed indexes generated recordings whose
// rcon_password attribute is set and checks that its value is not found.
func TestGeneratedSecretsNotIndexed(t *testing.T) {
	ix, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	c := genConfig{Recordings: 50, Events: 10, Players: 100, Seed: 3}
	var puts []RecordingDoc
	for i := range c.Recordings {
		puts = append(puts, genRecording(c, i))
	}
	ctx := context.Background()
	if err := ix.Apply(ctx, 1, puts, nil); err != nil {
		t.Fatal(err)
	}
	for q, want := range map[string]int{"s3cr3t": 0, "s3cr3t*": 0, "never": 0, `"never indexed"`: 0, "": 50} {
		res, err := ix.Search(ctx, q, 100)
		if err != nil {
			t.Fatal(err)
		}
		if res.Total != want {
			t.Errorf("%q: %d hits, want %d", q, res.Total, want)
		}
	}
}

// Close waits for the merges bleve has begun: a merge caught by the close
// leaves its output on disk until the next open removes it, so the next
// open must keep every file a closed index leaves.
func TestCloseLeavesNoMergeBehind(t *testing.T) {
	zaps := func(dir string) []string {
		t.Helper()
		names, err := filepath.Glob(filepath.Join(dir, "store", "*.zap"))
		if err != nil {
			t.Fatal(err)
		}
		return names
	}
	for round := range 3 {
		dir := t.TempDir()
		ix, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		// Many small batches, as an ingest of many short games makes:
		// each is a segment, and bleve merges them as they come.
		for i := range 60 {
			var docs []RecordingDoc
			for j, d := range fixture() {
				d.ID = fmt.Sprintf("00000000-0000-0000-%04x-%012x", round, i*4+j)
				for k := range 50 {
					d.Events = append(d.Events, ev(int64(1000+k), formats.EventChat, "P", fmt.Sprintf("message %d of %d", k, i)))
				}
				docs = append(docs, d)
			}
			if err := ix.Apply(t.Context(), uint64(i+1), docs, nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := ix.Close(); err != nil {
			t.Fatal(err)
		}
		closed := zaps(dir)
		ix, err = Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		kept := zaps(dir)
		if err := ix.Close(); err != nil {
			t.Fatal(err)
		}
		for _, f := range closed {
			if !slices.Contains(kept, f) {
				t.Fatalf("round %d: the close left %s, which the next open removed (%d files left, %d after the open)", round, filepath.Base(f), len(closed), len(kept))
			}
		}
	}
}
