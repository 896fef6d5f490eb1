package server_test

import (
	"bytes"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
	"github.com/replayarchive/replay/server"
	"github.com/replayarchive/replay/wire"
)

// TestFlagRangeOverHTTP: PUT …/flags/{name} with from and to (an offset,
// m:ss, ticks) puts the flag on that moment, the recording lists it with
// its range for a viewer too (without the note); flag:NAME finds it; a
// range that runs backwards, starts past the end or has one end is 400
// bad_request; without from and to the flag is on the whole recording.
func TestFlagRangeOverHTTP(t *testing.T) {
	ts := start(t, server.Config{})
	id, _ := ts.ingestGame(teehistoriangen.Options{Duration: 2 * time.Minute, Seed: 33})
	mod := ts.token("mia", replay.RoleModerator)
	viewer := ts.token("val", replay.RoleViewer)
	var rec wire.Recording
	ts.want(http.StatusOK, "PUT", "/api/v1/recordings/"+id+"/flags/griefing", mod,
		strings.NewReader(`{"note":"spawn-note","from":"0:42","to":"0:50"}`), &rec)
	if len(rec.Flags) != 1 || rec.Flags[0].Range == nil || rec.Flags[0].Range.From >= rec.Flags[0].Range.To {
		t.Fatalf("flags: %+v", rec.Flags)
	}
	r := *rec.Flags[0].Range
	// teehistorian: 50 ticks a second.
	if r.To-r.From != 8*50 {
		t.Errorf("0:42-0:50 is ticks %d-%d, want 400 ticks apart", r.From, r.To)
	}
	var seen wire.Recording
	ts.want(http.StatusOK, "GET", "/api/v1/recordings/"+id, viewer, nil, &seen)
	if len(seen.Flags) != 1 || seen.Flags[0].Note != "" || seen.Flags[0].Range == nil || *seen.Flags[0].Range != r {
		t.Errorf("a viewer's flags: %+v", seen.Flags)
	}
	var res wire.Search
	ts.want(http.StatusOK, "GET", "/api/v1/recordings?q="+url.QueryEscape("flag:griefing"), viewer, nil, &res)
	if res.Total != 1 {
		t.Errorf("flag:griefing: %d hits", res.Total)
	}
	for _, body := range []string{`{"from":"0:50","to":"0:42"}`, `{"from":"10m","to":"11m"}`, `{"from":"0:42"}`, `{"to":"9"}`, `{"from":"x","to":"9"}`} {
		ts.want(http.StatusBadRequest, "PUT", "/api/v1/recordings/"+id+"/flags/other", mod, strings.NewReader(body), nil)
	}
	ts.want(http.StatusOK, "PUT", "/api/v1/recordings/"+id+"/flags/griefing", mod, strings.NewReader(`{"from":"100","to":"200"}`), &rec)
	if *rec.Flags[0].Range != (archive.TickRange{From: 100, To: 200}) {
		t.Errorf("ticks: %+v", rec.Flags[0].Range)
	}
	rec = wire.Recording{}
	ts.want(http.StatusOK, "PUT", "/api/v1/recordings/"+id+"/flags/griefing", mod, nil, &rec)
	if rec.Flags[0].Range != nil {
		t.Errorf("a flag without a range: %+v", rec.Flags[0].Range)
	}
}

// TestCasesOverHTTP: a flag opens a case; a moderator lists the open
// cases (and those assigned to "me"), opens one by hand, adds a note,
// assigns and resolves it; mistakes are 4xx with a code; every answer
// for a viewer is 403 and names nothing of the cases.
func TestCasesOverHTTP(t *testing.T) {
	ts := start(t, server.Config{})
	id, _ := ts.ingestGame(teehistoriangen.Options{Duration: time.Minute, Seed: 34})
	mod := ts.token("mod-mia", replay.RoleModerator)
	ts.token("mod-kit", replay.RoleModerator)
	viewer := ts.token("val", replay.RoleViewer)
	ts.want(http.StatusOK, "PUT", "/api/v1/recordings/"+id+"/flags/griefing", mod, strings.NewReader(`{"note":"flag-note-7"}`), nil)

	var list wire.Cases
	ts.want(http.StatusOK, "GET", "/api/v1/cases?status=open", mod, nil, &list)
	if len(list.Cases) != 1 || list.Cases[0].Recording != id || list.Cases[0].Flag != "griefing" || list.Cases[0].NoteCount != 1 ||
		list.Cases[0].LastNote == nil || !strings.Contains(list.Cases[0].LastNote.Text, "flag-note-7") {
		t.Fatalf("open cases: %+v", list.Cases)
	}
	var c wire.Case
	code, _, hdr := ts.do("POST", "/api/v1/cases", mod, strings.NewReader(`{"recording":"`+id[:8]+`","note":"hand-note-8"}`))
	if code != http.StatusCreated || !strings.HasPrefix(hdr.Get("Location"), "/api/v1/cases/") {
		t.Fatalf("open: %d %v", code, hdr)
	}
	ts.want(http.StatusOK, "GET", hdr.Get("Location"), mod, nil, &c)
	if c.Recording != id || c.Status != "open" || len(c.Notes) != 1 || c.Notes[0].Who != "mod-mia" || c.Notes[0].Text != "hand-note-8" {
		t.Fatalf("the case: %+v", c)
	}
	ts.want(http.StatusCreated, "POST", "/api/v1/cases/"+c.ID[:8]+"/notes", mod, strings.NewReader(`{"text":"thread-note-9"}`), &c)
	if len(c.Notes) != 2 || c.Notes[1].Text != "thread-note-9" {
		t.Errorf("after a note: %+v", c.Notes)
	}
	ts.want(http.StatusOK, "PATCH", "/api/v1/cases/"+c.ID, mod, strings.NewReader(`{"assignee":"me"}`), &c)
	if c.Assignee != "mod-mia" {
		t.Errorf("assigned to me: %q", c.Assignee)
	}
	ts.want(http.StatusOK, "GET", "/api/v1/cases?assignee=me", mod, nil, &list)
	if len(list.Cases) != 1 || list.Cases[0].ID != c.ID {
		t.Errorf("mine: %+v", list.Cases)
	}
	ts.want(http.StatusOK, "PATCH", "/api/v1/cases/"+c.ID, mod, strings.NewReader(`{"status":"resolved","assignee":"mod-kit"}`), &c)
	if c.Status != "resolved" || c.Assignee != "mod-kit" {
		t.Errorf("resolved: %+v", c)
	}
	ts.want(http.StatusOK, "GET", "/api/v1/cases?status=open", mod, nil, &list)
	if len(list.Cases) != 1 {
		t.Errorf("open after the resolve: %d", len(list.Cases))
	}
	ts.want(http.StatusOK, "GET", "/api/v1/cases?recording="+id, mod, nil, &list)
	if len(list.Cases) != 2 {
		t.Errorf("the recording's cases: %d", len(list.Cases))
	}

	for _, m := range []struct {
		method, path, body string
		status             int
	}{
		{"GET", "/api/v1/cases?status=later", "", 400},
		{"GET", "/api/v1/cases/zz", "", 400},
		{"GET", "/api/v1/cases/0123abcd", "", 404},
		{"POST", "/api/v1/cases", `{"note":"x"}`, 400},
		{"POST", "/api/v1/cases", `{"recording":"ffffffff"}`, 404},
		{"POST", "/api/v1/cases", `{"recording":"` + id + `","extra":1}`, 400},
		{"POST", "/api/v1/cases/" + c.ID + "/notes", `{"text":"  "}`, 400},
		{"POST", "/api/v1/cases/" + c.ID + "/notes", `{"text":"` + strings.Repeat("x", 5000) + `"}`, 400},
		{"PATCH", "/api/v1/cases/" + c.ID, `{"status":"closed"}`, 400},
		{"PATCH", "/api/v1/cases/" + c.ID, `{"assignee":"val"}`, 400},
		{"PATCH", "/api/v1/cases/" + c.ID, `{}`, 400},
	} {
		var body *strings.Reader
		if m.body != "" {
			body = strings.NewReader(m.body)
		}
		if body == nil {
			ts.want(m.status, m.method, m.path, mod, nil, nil)
		} else {
			ts.want(m.status, m.method, m.path, mod, body, nil)
		}
	}

	// A viewer: 403 everywhere, and nothing of the cases in any answer.
	secret := []string{"hand-note-8", "thread-note-9", "flag-note-7", "mod-mia", "mod-kit", c.ID}
	for _, m := range []struct{ method, path, body string }{
		{"GET", "/api/v1/cases", ""},
		{"GET", "/api/v1/cases?status=open&assignee=me", ""},
		{"GET", "/api/v1/cases/" + c.ID, ""},
		{"POST", "/api/v1/cases", `{"recording":"` + id + `"}`},
		{"POST", "/api/v1/cases/" + c.ID + "/notes", `{"text":"hi"}`},
		{"PATCH", "/api/v1/cases/" + c.ID, `{"status":"open"}`},
		{"GET", "/api/v1/recordings/" + id, ""},
		{"GET", "/api/v1/recordings/" + id + "/audit", ""},
	} {
		var body *strings.Reader
		if m.body != "" {
			body = strings.NewReader(m.body)
		}
		var code int
		var b []byte
		if body == nil {
			code, b, _ = ts.do(m.method, m.path, viewer, nil)
		} else {
			code, b, _ = ts.do(m.method, m.path, viewer, body)
		}
		if strings.HasPrefix(m.path, "/api/v1/cases") && code != http.StatusForbidden {
			t.Errorf("viewer %s %s: %d, want 403", m.method, m.path, code)
		}
		for _, s := range secret {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("viewer %s %s shows %q", m.method, m.path, s)
			}
		}
	}
	ts.want(http.StatusOK, "GET", "/api/v1/cases/"+c.ID, mod, nil, &c)
	if len(c.Notes) != 2 || c.Status != "resolved" {
		t.Errorf("the viewer changed the case: %+v", c)
	}
}

// TestPlayerCasesOverHTTP: GET /api/v1/cases?player=NAME lists the cases
// of the recordings NAME played in (its name in any case), and only
// those; with the other filters too; a viewer is refused (403) and sees
// no case; both player= and player_id= is 400.
func TestPlayerCasesOverHTTP(t *testing.T) {
	ts := start(t, server.Config{})
	a, _ := ts.ingestGame(teehistoriangen.Options{Duration: time.Minute, Seed: 35, Players: 4})
	b, _ := ts.ingestGame(teehistoriangen.Options{Duration: time.Minute, Seed: 36, Players: 4})
	mod := ts.token("mod-mia", replay.RoleModerator)
	viewer := ts.token("val", replay.RoleViewer)
	for _, id := range []string{a, b} {
		ts.want(http.StatusOK, "PUT", "/api/v1/recordings/"+id+"/flags/griefing", mod, strings.NewReader(`{"note":"case-note-35"}`), nil)
	}
	names := func(id string) map[string]bool {
		m, err := ts.x.Manifest(id)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, p := range m.Meta.Players {
			out[strings.ToLower(p.Name)] = true
		}
		return out
	}
	inA, inB := names(a), names(b)
	only := ""
	m, _ := ts.x.Manifest(a)
	for _, p := range m.Meta.Players {
		if p.Name != "" && !inB[strings.ToLower(p.Name)] {
			only = p.Name
			break
		}
	}
	if only == "" || len(inA) == 0 {
		t.Fatalf("no player of %s only: %v and %v", a, inA, inB)
	}
	var list wire.Cases
	ts.want(http.StatusOK, "GET", "/api/v1/cases?player="+url.QueryEscape(strings.ToUpper(only)), mod, nil, &list)
	if len(list.Cases) != 1 || list.Cases[0].Recording != a {
		t.Errorf("cases of %s: %+v, want the one of %s", only, list.Cases, a)
	}
	list = wire.Cases{}
	ts.want(http.StatusOK, "GET", "/api/v1/cases?status=resolved&player="+url.QueryEscape(only), mod, nil, &list)
	if len(list.Cases) != 0 {
		t.Errorf("resolved cases of %s: %+v", only, list.Cases)
	}
	list = wire.Cases{}
	ts.want(http.StatusOK, "GET", "/api/v1/cases?player=nobody-plays-as-this", mod, nil, &list)
	if list.Cases == nil || len(list.Cases) != 0 {
		t.Errorf("cases of nobody: %+v", list)
	}
	body := ts.want(http.StatusForbidden, "GET", "/api/v1/cases?player="+url.QueryEscape(only), viewer, nil, nil)
	if bytes.Contains(body, []byte(a)) || bytes.Contains(body, []byte("case-note-35")) || bytes.Contains(body, []byte("griefing")) {
		t.Errorf("a viewer's answer names a case: %s", body)
	}
	ts.want(http.StatusBadRequest, "GET", "/api/v1/cases?player=x&player_id=y", mod, nil, nil)
}
