// Tests for archivectl search's OR and groups, and its counts.

package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/replayarchive/replay/wire"
)

// TestSearchOrCLI: archivectl search takes OR and parentheses (the API's
// parser), finding recordings that match either side with the events of
// the side that has them, counts "1 recording", and points at a dangling
// OR or an unbalanced parenthesis with a caret under its byte offset.
func TestSearchOrCLI(t *testing.T) {
	base := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	c := newCLI(t)
	c.ok("ingest", gameDir(t, gameSpec{base, 20 * time.Second, 2}, gameSpec{base.Add(time.Hour), 20 * time.Second, 3}))
	var recs []wire.Recording
	json.Unmarshal([]byte(c.ok("ls", "--json")), &recs)
	if len(recs) != 2 || len(recs[0].Players) == 0 {
		t.Fatalf("ls: %+v", recs)
	}
	// The older game by its start, OR a command both have: both games,
	// each listing its rank commands; OR one nothing has: the older one,
	// listing nothing.
	older := "before:2024-05-01T12:30:00Z"
	var res wire.Search
	q := "(" + older + " OR cmd:rank) -cmd:nosuchword"
	if err := json.Unmarshal([]byte(c.ok("search", "--json", q)), &res); err != nil || res.Total != 2 {
		t.Fatalf("%s: %+v %v", q, res, err)
	}
	var rank wire.Search
	json.Unmarshal([]byte(c.ok("search", "--json", "cmd:rank")), &rank)
	if rank.Total == 0 {
		t.Fatal("no rank commands in the generated games")
	}
	want := map[string]string{}
	for _, h := range rank.Hits {
		b, _ := json.Marshal(h.Events)
		want[h.ID] = string(b)
	}
	for _, h := range res.Hits {
		b, _ := json.Marshal(h.Events)
		if w, ok := want[h.ID]; ok && string(b) != w || !ok && len(h.Events) > 0 {
			t.Errorf("%s: hit %s lists %s; want those cmd:rank lists, %s", q, h.ID, b, w)
		}
	}
	q = older + " OR cmd:nosuchword"
	if err := json.Unmarshal([]byte(c.ok("search", "--json", q)), &res); err != nil || res.Total != 1 || res.Hits[0].ID != recs[1].ID || len(res.Hits[0].Events) != 0 {
		t.Fatalf("%s: %+v %v", q, res, err)
	}
	if _, errs, _ := c.run("search", q); !strings.Contains(errs, "1 recording matched") {
		t.Errorf("one hit counted as %q", errs)
	}
	for _, tc := range []struct{ q, msg, caret string }{
		{"player:x OR", `"OR": OR needs a term or group on each side`, "           ^"},
		{"(player:x OR cmd:kick", `"(player:x": unbalanced '('`, "  ^"},
	} {
		_, errs, code := c.run("search", tc.q)
		if code != exitUsage || !strings.Contains(errs, tc.msg) || !strings.Contains(errs, "\n  "+tc.q+"\n"+tc.caret+"\n") {
			t.Errorf("search %q: exit %d\n%s", tc.q, code, errs)
		}
	}
}
