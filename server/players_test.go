package server_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/formats/hcrp"
	"github.com/replayarchive/replay/internal/gen/hcrpgen"
	"github.com/replayarchive/replay/server"
	"github.com/replayarchive/replay/wire"
)

// runner is a player of a generated HCRP run: its name and uuid.
type runner struct{ name, id string }

// ingestRun archives a generated HCRP run of ticks ticks (20 a second)
// starting at start with the given players, and returns its id.
func (ts *testServer) ingestRun(seed uint64, start time.Time, ticks int, players ...runner) string {
	ts.t.Helper()
	b, err := hcrpgen.Generate(hcrpgen.Config{Seed: seed, Ticks: ticks, Players: len(players), Start: start}, func(o *hcrp.Options) {
		ps := slices.Clone(o.Meta.Players)
		for i, p := range players {
			ps[i].Name, ps[i].UUID = p.name, p.id
		}
		o.Meta.Players = ps
	})
	if err != nil {
		ts.t.Fatal(err)
	}
	res, _, err := ts.x.IngestStream(context.Background(), fmt.Sprintf("run-%d.hcrp", seed), bytes.NewReader(b), 0, replay.LocalActor())
	if err != nil || res.Err != "" {
		ts.t.Fatalf("ingest: %v %s", err, res.Err)
	}
	return res.ID.String()
}

const (
	uuidA = "0a0a0a0a-1111-4111-8111-aaaaaaaaaaaa"
	uuidB = "0b0b0b0b-2222-4222-8222-bbbbbbbbbbbb"
	uuidC = "0c0c0c0c-3333-4333-8333-cccccccccccc"
	uuidD = "0d0d0d0d-4444-4444-8444-dddddddddddd"
)

// TestPlayerPage: GET /api/v1/players over HTTP on a real server. A
// moderator finds a name's recordings newest first with the ids it was
// used with and the other names of those ids (aliases), first and last
// seen and the flags; an id's recordings with its names; an id in the
// path when no name matches; pages by cursor. A viewer finds a name's
// recordings without any id or alias, is refused ids, and opens the page
// of a pseudonym a recording showed it as the page of that player's name
// there; no raw id is in any of its answers. Bad parameters are 400 with
// a code.
func TestPlayerPage(t *testing.T) {
	ts := start(t, server.Config{})
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	r1 := ts.ingestRun(1, t0, 400, runner{"Kit", uuidA}, runner{"Bob", uuidB})
	r2 := ts.ingestRun(2, t0.Add(time.Hour), 400, runner{"Kitty", uuidA}, runner{"Zed", uuidC})
	r3 := ts.ingestRun(3, t0.Add(2*time.Hour), 400, runner{"kit", uuidD})
	r4 := ts.ingestRun(4, t0.Add(3*time.Hour), 400, runner{"Bob", uuidB})
	mod := ts.token("mia", replay.RoleModerator)
	viewer := ts.token("vera", replay.RoleViewer)
	get := func(path, token string, status int) (wire.Player, string) {
		t.Helper()
		var p wire.Player
		var out any = &p
		if status != http.StatusOK {
			out = nil
		}
		b := ts.want(status, "GET", path, token, nil, out)
		return p, string(b)
	}
	recs := func(p wire.Player) []string {
		var out []string
		for _, h := range p.Recordings {
			out = append(out, h.ID)
		}
		return out
	}
	values := func(s []wire.Seen) []string {
		var out []string
		for _, v := range s {
			out = append(out, v.Value)
		}
		return out
	}

	// A moderator, by name (case-insensitive, as player: matches).
	p, _ := get("/api/v1/players/KIT", mod, http.StatusOK)
	if p.By != "name" || p.Total != 2 || !slices.Equal(recs(p), []string{r3, r1}) {
		t.Fatalf("Kit: by %s, total %d, %v; want %s, %s", p.By, p.Total, recs(p), r3, r1)
	}
	if ids := values(p.IDs); !slices.Equal(ids, []string{uuidA, uuidD}) {
		t.Errorf("Kit's ids: %v", ids)
	}
	if al := values(p.Aliases); !slices.Equal(al, []string{"Kitty"}) {
		t.Errorf("Kit's aliases: %v, want Kitty (uuid A's other name)", al)
	}
	if names := values(p.Names); !slices.Equal(names, []string{"Kit", "kit"}) {
		t.Errorf("Kit's spellings: %v", names)
	}
	if p.FirstSeen != t0.Format(time.RFC3339) || p.LastSeen != t0.Add(2*time.Hour).Format(time.RFC3339) {
		t.Errorf("Kit seen %s to %s", p.FirstSeen, p.LastSeen)
	}
	if len(p.Flags) == 0 || p.Flags[0].Recordings < 1 {
		t.Errorf("Kit's flags: %+v (the generated runs carry anticheat flags)", p.Flags)
	}
	if h := p.Recordings[0]; !slices.Equal(h.As, []string{"kit"}) || !slices.Equal(h.IDs, []string{uuidD}) {
		t.Errorf("Kit in %s: as %v, ids %v", h.ID, h.As, h.IDs)
	}

	// The summary is kept (Archive.Player's cache) while the index does
	// not change; a recording of Kit's since is counted.
	if again, _ := get("/api/v1/players/kit", mod, http.StatusOK); again.Total != 2 || again.Name != "kit" {
		t.Errorf("Kit again: total %d, name %q", again.Total, again.Name)
	}
	r5 := ts.ingestRun(5, t0.Add(4*time.Hour), 400, runner{"Kit", "00000000-0000-4000-8000-0000000000e5"})
	if p5, _ := get("/api/v1/players/KIT", mod, http.StatusOK); p5.Total != 3 || len(p5.Recordings) == 0 || p5.Recordings[0].ID != r5 {
		t.Fatalf("Kit after a new recording: total %d, %v", p5.Total, recs(p5))
	}

	// By id: its names, from the query string or the path.
	p, _ = get("/api/v1/players?id="+uuidA, mod, http.StatusOK)
	if p.By != "id" || p.Total != 2 || !slices.Equal(recs(p), []string{r2, r1}) || !slices.Equal(values(p.Names), []string{"Kit", "Kitty"}) {
		t.Errorf("uuid A: %+v", p)
	}
	p, _ = get("/api/v1/players/"+uuidB, mod, http.StatusOK)
	if p.By != "id" || !slices.Equal(recs(p), []string{r4, r1}) || !slices.Equal(values(p.Names), []string{"Bob"}) {
		t.Errorf("uuid B in the path: %+v", p)
	}
	// Paged.
	p, _ = get("/api/v1/players/Bob?limit=1", mod, http.StatusOK)
	if p.Total != 2 || !slices.Equal(recs(p), []string{r4}) || p.NextCursor == "" {
		t.Fatalf("Bob, page 1: %+v", p)
	}
	p, _ = get("/api/v1/players/Bob?limit=1&cursor="+p.NextCursor, mod, http.StatusOK)
	if !slices.Equal(recs(p), []string{r1}) || p.NextCursor != "" {
		t.Errorf("Bob, page 2: %+v", p)
	}
	p, _ = get("/api/v1/players/Nobody", mod, http.StatusOK)
	if p.Total != 0 || len(p.Recordings) != 0 {
		t.Errorf("Nobody: %+v", p)
	}

	// A viewer: by name, nothing that names or links an id.
	raw := []string{uuidA, uuidB, uuidC, uuidD}
	noIDs := func(what, body string) {
		t.Helper()
		for _, id := range raw {
			if strings.Contains(strings.ToLower(body), id) {
				t.Errorf("%s: a viewer sees id %s: %s", what, id, body)
			}
		}
	}
	p, body := get("/api/v1/players/Kit", viewer, http.StatusOK)
	noIDs("Kit", body)
	if p.Total != 3 || !slices.Equal(recs(p), []string{r5, r3, r1}) || len(p.IDs) != 0 || len(p.Aliases) != 0 {
		t.Errorf("a viewer's Kit: %+v", p)
	}
	_, body = get("/api/v1/players?id="+uuidA, viewer, http.StatusForbidden)
	noIDs("by id", body)
	// An id in the path is a name no one has for a viewer: found nothing.
	if p, _ = get("/api/v1/players/"+uuidB, viewer, http.StatusOK); p.By != "name" || p.Total != 0 {
		t.Errorf("a viewer's id in the path: %+v", p)
	}
	// The pseudonym a viewer sees for Kitty in r2 opens Kitty's page.
	rj := ts.recording(viewer, r2)
	pseudo := ""
	for _, pl := range rj.Players {
		if pl.Name == "Kitty" {
			pseudo = pl.ID
		}
	}
	if !strings.HasPrefix(pseudo, "p") || len(pseudo) != 11 {
		t.Fatalf("Kitty's pseudonym in %s: %q", r2, pseudo)
	}
	p, body = get("/api/v1/players/"+pseudo+"?rec="+r2, viewer, http.StatusOK)
	noIDs("by pseudonym", body)
	if p.By != "pseudonym" || p.Name != "Kitty" || !slices.Equal(recs(p), []string{r2}) {
		t.Errorf("a viewer's page of %s in %s: %+v", pseudo, r2, p)
	}
	// A moderator's page of the same pseudonym is the id's.
	p, _ = get("/api/v1/players/"+pseudo+"?rec="+r2, mod, http.StatusOK)
	if p.By != "pseudonym" || p.ID != uuidA || !slices.Equal(recs(p), []string{r2, r1}) {
		t.Errorf("a moderator's page of %s: %+v", pseudo, p)
	}

	// Mistakes.
	for _, path := range []string{
		"/api/v1/players",
		"/api/v1/players?name=Kit&id=" + uuidA,
		"/api/v1/players/Kit?name=Bob",
		"/api/v1/players/Kit?limit=0",
		"/api/v1/players/Kit?sort=size",
		"/api/v1/players/Kit?cursor=nope",
		"/api/v1/players?rec=" + r2 + "&name=Kit",
		"/api/v1/players/notapseudonym?rec=" + r2,
		"/api/v1/players/" + url.PathEscape(strings.Repeat("x", 300)),
	} {
		_, body := get(path, mod, http.StatusBadRequest)
		if !strings.Contains(body, `"bad_request"`) {
			t.Errorf("%s: %s", path, body)
		}
	}
	get("/api/v1/players/p0000000000?rec="+r2, viewer, http.StatusNotFound)
}
