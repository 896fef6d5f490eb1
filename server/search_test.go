package server_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
	"github.com/replayarchive/replay/server"
	"github.com/replayarchive/replay/wire"
)

// TestSearchOrOverHTTP: the API's search takes OR and groups (the
// command line's parser), pages them by cursor, answers a dangling OR or
// an unbalanced parenthesis 400 bad_query at its byte offset, and refuses
// a viewer player-id: inside a group as outside one.
func TestSearchOrOverHTTP(t *testing.T) {
	ts := start(t, server.Config{})
	early := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	a, _ := ts.ingestGame(teehistoriangen.Options{Duration: 30 * time.Second, Seed: 3, Start: early, CommandsPerHour: 600})
	b, _ := ts.ingestGame(teehistoriangen.Options{Duration: 30 * time.Second, Seed: 4, Start: early.Add(time.Hour), CommandsPerHour: 600})
	search := func(q, extra, token string, status int, out any) {
		t.Helper()
		ts.want(status, "GET", "/api/v1/recordings?q="+url.QueryEscape(q)+extra, token, nil, out)
	}
	var res wire.Search
	search("id:"+a[:8]+" OR id:"+b[:8], "", ts.owner, http.StatusOK, &res)
	if res.Total != 2 || len(res.Hits) != 2 || res.Hits[0].ID != b || res.Hits[1].ID != a {
		t.Fatalf("id:a OR id:b: %+v", res)
	}
	search("before:2024-05-01T12:30:00Z OR -(id:"+b[:8]+")", "", ts.owner, http.StatusOK, &res)
	if res.Total != 1 || res.Hits[0].ID != a {
		t.Errorf("an OR with an excluded group: %+v", res)
	}
	// Pages of an OR by cursor.
	q := "(before:2024-05-01T12:30:00Z OR cmd:rank) -cmd:nosuchword"
	var p1, p2 wire.Search
	search(q, "&limit=1", ts.owner, http.StatusOK, &p1)
	if p1.Total != 2 || len(p1.Hits) != 1 || p1.NextCursor == "" {
		t.Fatalf("%s, page 1: %+v", q, p1)
	}
	search(q, "&limit=1&cursor="+p1.NextCursor, ts.owner, http.StatusOK, &p2)
	if len(p2.Hits) != 1 || p2.Hits[0].ID == p1.Hits[0].ID || p2.NextCursor != "" {
		t.Fatalf("%s, page 2: %+v", q, p2)
	}
	for _, tc := range []struct {
		q    string
		pos  int
		term string
	}{
		{"player:x OR", 9, "OR"},
		{"map:a (player:x OR cmd:kick", 6, "(player:x"},
		{"map:a OR player:x)", 17, ")"},
	} {
		var perr wire.Error
		search(tc.q, "", ts.owner, http.StatusBadRequest, &perr)
		if perr.Code != "bad_query" || perr.Pos == nil || *perr.Pos != tc.pos || perr.Term != tc.term {
			t.Errorf("%q: %+v, want bad_query at %d %q", tc.q, perr, tc.pos, tc.term)
		}
	}
	viewer := ts.token("vera", replay.RoleViewer)
	var perr wire.Error
	search("map:x OR (player:y OR player-id:k1)", "", viewer, http.StatusBadRequest, &perr)
	if perr.Pos == nil || *perr.Pos != 22 || perr.Term != "player-id:k1" {
		t.Errorf("a viewer's player-id: in a group: %+v", perr)
	}
	search("map:x OR player:y", "", viewer, http.StatusOK, nil)
}
