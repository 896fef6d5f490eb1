package server_test

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
	"github.com/replayarchive/replay/server"
	"github.com/replayarchive/replay/wire"
)

// TestViewersSeeNoModeratorData: a viewer's answers (show, events, the
// compact events, frames, the recording's audit, search hits) carry none
// of the accounts players signed in with, the moderators' names, flag
// notes, hold reasons, or the file's timeout codes and passwords; a viewer
// cannot find an account by searching. A moderator sees the accounts, the
// note and the reason.
func TestViewersSeeNoModeratorData(t *testing.T) {
	ts := start(t, server.Config{})
	id, file := ts.ingestGame(teehistoriangen.Options{Duration: 8 * time.Minute, Seed: 75})
	mod := ts.token("moderator-mia", replay.RoleModerator)
	viewer := ts.token("vera", replay.RoleViewer)
	const note, reason = "ticket-4711-note", "appeal-pending-reason"
	ts.want(http.StatusOK, "PUT", "/api/v1/recordings/"+id+"/flags/griefing", mod, strings.NewReader(`{"note":"`+note+`"}`), nil)
	ts.want(http.StatusOK, "PUT", "/api/v1/recordings/"+id+"/hold", mod, strings.NewReader(`{"reason":"`+reason+`"}`), nil)

	var secrets []string // what the file holds that nobody sees
	for _, re := range []string{`timeout\x00.([A-Za-z0-9]{16})\x00`, `(pw-[A-Za-z0-9]{10})`} {
		for _, m := range regexp.MustCompile(re).FindAllSubmatch(file, -1) {
			secrets = append(secrets, string(m[1]))
		}
	}
	accounts := map[string]bool{}
	for _, m := range regexp.MustCompile(`mod_[A-Za-z0-9]{4}`).FindAll(file, -1) {
		accounts[string(m)] = true
	}
	if len(secrets) < 10 || len(accounts) < 2 {
		t.Fatalf("the generated game has %d secrets and %d accounts; want a game with both", len(secrets), len(accounts))
	}
	modOnly := []string{note, reason, "moderator-mia"}
	for a := range accounts {
		modOnly = append(modOnly, a)
	}

	paths := []string{
		"/api/v1/recordings/" + id,
		"/api/v1/recordings/" + id + "/events",
		"/api/v1/recordings/" + id + "/events?compact=1",
		"/api/v1/recordings/" + id + "/frames",
		"/api/v1/recordings/" + id + "/audit",
		"/api/v1/recordings?q=" + url.QueryEscape("rcon login"),
		"/api/v1/recordings?q=" + url.QueryEscape("kind:login"),
		"/api/v1/recordings?q=timeout",
	}
	for _, p := range paths {
		code, body, _ := ts.do("GET", p, viewer, nil)
		if code != http.StatusOK {
			t.Fatalf("viewer GET %s: %d %.200s", p, code, body)
		}
		for _, s := range append(modOnly, secrets...) {
			if bytes.Contains(body, []byte(s)) {
				t.Errorf("viewer GET %s shows %q", p, s)
			}
		}
		_, modBody, _ := ts.do("GET", p, mod, nil)
		for _, s := range secrets {
			if bytes.Contains(modBody, []byte(s)) {
				t.Errorf("moderator GET %s shows the file's secret %q", p, s)
			}
		}
	}
	// A moderator sees every login's account in the events, and the
	// note, the reason, who and the players' accounts in show (a player
	// who signed in under several accounts shows the last).
	_, modEvents, _ := ts.do("GET", "/api/v1/recordings/"+id+"/events", mod, nil)
	for a := range accounts {
		if !bytes.Contains(modEvents, []byte(a)) {
			t.Errorf("a moderator's events lack account %q", a)
		}
	}
	_, show, _ := ts.do("GET", "/api/v1/recordings/"+id, mod, nil)
	for _, s := range []string{note, reason, "moderator-mia"} {
		if !bytes.Contains(show, []byte(s)) {
			t.Errorf("a moderator's show lacks %q", s)
		}
	}
	var account string // one the show names, for the searches below
	for _, a := range slices.Sorted(maps.Keys(accounts)) {
		if bytes.Contains(show, []byte(a)) {
			account = a
			break
		}
	}
	if account == "" {
		t.Fatalf("a moderator's show names none of the accounts %v", slices.Sorted(maps.Keys(accounts)))
	}

	// Searching: an account's name finds nothing for a viewer, and
	// player-id: is refused, pointing at the term; a moderator finds it.
	var res wire.Search
	ts.want(http.StatusOK, "GET", "/api/v1/recordings?q="+url.QueryEscape(account), viewer, nil, &res)
	if res.Total != 0 {
		t.Errorf("a viewer's search for account %s found %d recordings", account, res.Total)
	}
	code, body, _ := ts.do("GET", "/api/v1/recordings?q="+url.QueryEscape("map:x player-id:"+account), viewer, nil)
	var e wire.Error
	json.Unmarshal(body, &e)
	if code != http.StatusBadRequest || e.Code != "bad_query" || e.Pos == nil || *e.Pos != 6 {
		t.Errorf("a viewer's player-id: search: %d %s", code, body)
	}
	ts.want(http.StatusOK, "GET", "/api/v1/recordings?q="+url.QueryEscape("player-id:"+account), mod, nil, &res)
	if res.Total != 1 {
		t.Errorf("a moderator's player-id:%s found %d recordings, want 1", account, res.Total)
	}
}

// TestViewersSeePseudonyms: a viewer's events name each player id by a
// pseudonym, the same in every answer and one per id, which is not the id;
// a moderator sees the ids.
func TestViewersSeePseudonyms(t *testing.T) {
	ts := start(t, server.Config{})
	id, _ := ts.ingestGame(teehistoriangen.Options{Duration: 8 * time.Minute, Seed: 75})
	viewer := ts.token("vera", replay.RoleViewer)
	mod := ts.token("mia", replay.RoleModerator)
	ids := func(tok string) []string {
		var evs wire.Events
		ts.want(http.StatusOK, "GET", "/api/v1/recordings/"+id+"/events", tok, nil, &evs)
		out := make([]string, len(evs.Events))
		for i, e := range evs.Events {
			out[i] = e.PlayerID
		}
		return out
	}
	real, seen, again := ids(mod), ids(viewer), ids(viewer)
	if !slices.Equal(seen, again) {
		t.Fatal("a viewer's pseudonyms differ between two answers")
	}
	pseudo := regexp.MustCompile(`^p[0-9a-f]{10}$`)
	of := map[string]string{}
	for i := range real {
		if real[i] == "" {
			if seen[i] != "" {
				t.Errorf("event %d: no id, but a pseudonym %q", i, seen[i])
			}
			continue
		}
		if !pseudo.MatchString(seen[i]) || seen[i] == real[i] {
			t.Fatalf("event %d: a viewer sees id %q as %q", i, real[i], seen[i])
		}
		if p, ok := of[real[i]]; ok && p != seen[i] {
			t.Errorf("id %q has two pseudonyms, %q and %q", real[i], p, seen[i])
		}
		of[real[i]] = seen[i]
	}
	names := map[string]bool{}
	for _, p := range of {
		names[p] = true
	}
	if len(of) < 2 || len(names) != len(of) {
		t.Errorf("%d ids with %d pseudonyms; want one each, at least two", len(of), len(names))
	}
}
