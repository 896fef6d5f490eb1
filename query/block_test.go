package query

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/replayarchive/replay/formats"
)

// TestBlocksMatchLikeEventDocuments checks that the events shown under each
// hit, and their count, are the same whether each event is its own block
// (bleve alone decides which events match) or events share blocks and
// eventMatcher picks them: every event-level operator, prefixes, phrases,
// free words, and terms that do not bring events.
func TestBlocksMatchLikeEventDocuments(t *testing.T) {
	ctx := context.Background()
	c := genConfig{Recordings: 12, Events: 100, Players: 30, Seed: 7}
	var recs []RecordingDoc
	for i := range c.Recordings {
		recs = append(recs, genRecording(c, i))
	}
	// Odd cases: mixed case kinds, a kind without text, text without kind,
	// punctuation and a phrase repeated in one text.
	recs[0].Events = append(recs[0].Events,
		formats.Event{Tick: 9000, Kind: "Command", Player: "x", Text: "Kick 5; kick 5 again"},
		formats.Event{Tick: 9001, Kind: "CHAT", Player: "x", Text: "gg, kick-5!"},
		formats.Event{Tick: 9002, Kind: "pause"},
		formats.Event{Tick: 9003, Text: "kick 5 without kind"},
		// Non-ASCII text whose lower case is ASCII (the Kelvin sign).
		formats.Event{Tick: 9004, Kind: formats.EventCommand, Player: "x", Text: "\u212Aick 5"},
	)
	open := func(block int, all bool, max int) *Index {
		ix, err := OpenWith(t.TempDir(), Options{MaxEvents: max})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ix.Close() })
		ix.blockEvents, ix.matchAll, ix.batchDocs = block, all, 97
		if err := ix.Apply(ctx, 1, recs, nil); err != nil {
			t.Fatal(err)
		}
		return ix
	}
	for _, max := range []int{1000, 3} {
		checkBlocks(t, open(1, true, max), open(0, false, max), open(5, false, max), recs)
	}
}

// checkBlocks compares the results of queries of the reference index, one
// event per block, with those of indexes with larger blocks.
func checkBlocks(t *testing.T, ref, blocks, small *Index, recs []RecordingDoc) {
	ctx := context.Background()
	phrase := ""
	for _, e := range recs[2].Events {
		if w := strings.Fields(e.Text); e.Kind == formats.EventChat && len(w) > 2 {
			phrase = w[1] + " " + w[2]
			break
		}
	}
	queries := []string{
		"kind:vote", "kind:fin*", "kind:command", "kind:pause", "cmd:kick", `cmd:"kick 5"`, "cmd:ki*", "cmd:ban",
		"chat:" + strings.Fields(phrase + " x")[0], `chat:"` + phrase + `"`,
		"chat:ka*", "kick", `"kick 5"`, "gg", "ka*", genName(3), "player:" + genName(3) + " cmd:kick",
		"kind:join cmd:mute", "cmd:kick -chat:gg", "map:ctf5", `cmd:"kick 5 again"`, "without", "kind:command chat:ka*",
	}
	for _, q := range queries {
		want, err := ref.Search(ctx, q, 100)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		for name, ix := range map[string]*Index{"blocks": blocks, "blocks of 5": small} {
			got, err := ix.Search(ctx, q, 100)
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			got.Took, want.Took = 0, 0
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s, %s: results differ from one event per block:\n got %s\nwant %s", name, q, summary(got), summary(want))
			}
		}
		if want.Total == 0 {
			t.Errorf("%s: no hits: the query tests nothing", q)
		}
	}
	n, err := blocks.DocCount()
	if err != nil {
		t.Fatal(err)
	}
	m, _ := ref.DocCount()
	if n != m {
		t.Errorf("DocCount %d with blocks, %d with one event each", n, m)
	}
}

func summary(r *Results) string {
	s := fmt.Sprintf("total %d:", r.Total)
	for _, h := range r.Hits {
		s += fmt.Sprintf(" %s(%d/%d)", h.ID[len(h.ID)-4:], len(h.Events), h.EventTotal)
	}
	return s
}

// TestOverflowedText checks a recording whose command text is more than its
// recording document holds (maxRecText): a word or phrase only in the part
// left out is found from its event blocks, a phrase whose words are in one
// block but not in that order is not, and negated terms exclude exactly.
func TestOverflowedText(t *testing.T) {
	ctx := context.Background()
	ix, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	a := RecordingDoc{ID: idA}
	for i := 0; len(a.Events)*32 < 2*maxRecText; i++ {
		a.Events = append(a.Events, ev(int64(i), formats.EventCommand, "x", fmt.Sprintf("say filler number %d of many", i)))
	}
	n := int64(len(a.Events))
	a.Events = append(a.Events, ev(n, formats.EventCommand, "x", "late word here"), ev(n+1, formats.EventChat, "x", "late chat"))
	b := RecordingDoc{ID: idB, Events: []formats.Event{ev(0, formats.EventCommand, "y", "kick 1")}}
	if err := ix.Apply(ctx, 1, []RecordingDoc{a, b}, nil); err != nil {
		t.Fatal(err)
	}
	for q, want := range map[string][]string{
		"cmd:late":            {idA},
		`cmd:"late word"`:     {idA},
		`cmd:"word late"`:     nil,
		`"here word"`:         nil,
		"cmd:lat*":            {idA},
		"-cmd:late":           {idB},
		`-cmd:"word late"`:    {idA, idB},
		"cmd:kick -cmd:late":  {idB},
		"chat:late":           {idA},
		`cmd:"filler number"`: {idA},
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
		if q == "cmd:late" && len(res.Hits) == 1 {
			if h := res.Hits[0]; h.EventTotal != 1 || len(h.Events) != 1 || h.Events[0].Text != "late word here" || h.Events[0].Tick != n {
				t.Errorf("%s: events %d %+v", q, h.EventTotal, h.Events)
			}
		}
	}
}

// TestBlockRoundTrip encodes events with odd times (sub-millisecond,
// negative steps, extremes) and strings, and decodes them back.
func TestBlockRoundTrip(t *testing.T) {
	evs := []formats.Event{
		{Tick: 5, Time: 100 * time.Millisecond, Kind: "chat", Player: "a", Text: "hi"},
		{Tick: 6, Time: 100*time.Millisecond + 7, Kind: "chat", Player: "a", Text: "hi"},
		{Tick: 2, Time: -3, Kind: "Command", Player: "", Text: "kick 1"},
		{Tick: math.MaxInt64, Time: math.MaxInt64, Kind: "chat", Player: "b", Text: ""},
		{Tick: math.MinInt64, Time: math.MinInt64, Kind: "", Player: "a", Text: "hi"},
	}
	var b block
	b.reset("r", 0)
	for i := range evs {
		b.add(&evs[i])
	}
	var got []formats.Event
	err := decodeBlock(string(b.data), func(e *EventHit) {
		got = append(got, formats.Event{Tick: e.Tick, Time: e.Time, Kind: e.Kind, Player: e.Player, Text: e.Text})
	})
	if err != nil || !reflect.DeepEqual(got, evs) {
		t.Fatalf("decoded %+v, %v", got, err)
	}
	if err := decodeBlock("\x01", func(*EventHit) {}); err == nil {
		t.Error("a block of another version decoded")
	}
}

// FuzzDecodeBlock: stored block data that is broken is an error, never a
// panic or a loop.
func FuzzDecodeBlock(f *testing.F) {
	var b block
	b.reset("r", 0)
	for i := range 10 {
		b.add(&formats.Event{Tick: int64(i), Time: time.Duration(i) * 20 * time.Millisecond, Kind: "chat", Player: "p", Text: "gg"})
	}
	f.Add(string(b.data))
	f.Add("\x02\x01")
	f.Fuzz(func(t *testing.T, data string) {
		n := 0
		_ = decodeBlock(data, func(*EventHit) { n++ })
		if n > len(data) {
			t.Fatalf("%d events from %d bytes", n, len(data))
		}
	})
}

// TestPageBlocksMatchSearch: the blocks pageBlocks reads straight from
// the segments for a page of recordings are those bleve's search of the
// page's blocks finds (ids and stored data, in id order), for one term
// and a conjunction of terms, over several segments with replaced and
// deleted recordings; a disjunction is left to the search.
func TestPageBlocksMatchSearch(t *testing.T) {
	ix, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	ctx := context.Background()
	c := genConfig{Recordings: 120, Events: 150, Players: 20, Seed: 11}
	seq := uint64(0)
	for lo := 0; lo < c.Recordings; lo += 40 {
		var puts []RecordingDoc
		for i := lo; i < lo+40; i++ {
			puts = append(puts, genRecording(c, i))
		}
		var dels []string
		if lo > 0 {
			dels = []string{genRecording(c, lo-3).ID}
			puts = append(puts, genRecording(c, lo-10)) // put again
		}
		seq++
		if err := ix.Apply(ctx, seq, puts, dels); err != nil {
			t.Fatal(err)
		}
	}
	var recs []string
	for i := 0; i < c.Recordings; i += 6 {
		recs = append(recs, genRecording(c, i).ID)
	}
	recs = append(recs, genRecording(c, 37).ID) // deleted
	for _, q := range []string{"cmd:kick", "cmd:\"kick 3\"", "kind:chat", "chat:gg", "cmd:nothingatall"} {
		pq, err := Parse(q)
		if err != nil {
			t.Fatal(err)
		}
		cq := &compiler{q: pq}
		if _, err := cq.root(); err != nil {
			t.Fatal(err)
		}
		evq := cq.events[0]
		got, ok, err := ix.pageBlocks(ctx, recs, evq, 100_000)
		if err != nil || !ok {
			t.Fatalf("%q: ok %v, %v", q, ok, err)
		}
		req := bleve.NewSearchRequestOptions(blockQuery(recs, evq), 100_000, 0, false)
		req.SortBy([]string{"_id"})
		req.Fields = []string{fData}
		res, err := ix.bi.SearchInContext(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		var want []blockRef
		for _, h := range res.Hits {
			s, _ := h.Fields[fData].(string)
			want = append(want, blockRef{h.ID, s})
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%q: %d blocks, the search %d", q, len(got), len(want))
		}
		if q == "cmd:kick" && len(want) < 10 {
			t.Errorf("%q: only %d blocks: the test reads too little", q, len(want))
		}
		// Past max it stops at max+1.
		if len(want) > 3 {
			if got, _, _ := ix.pageBlocks(ctx, recs, evq, 3); len(got) != 4 {
				t.Errorf("%q: max 3: %d blocks", q, len(got))
			}
		}
	}
	if _, ok, _ := ix.pageBlocks(ctx, recs, query.NewDisjunctionQuery([]query.Query{termQ(fCmd, "kick"), termQ(fChat, "gg")}), 10); ok {
		t.Error("a disjunction was read directly")
	}
}
