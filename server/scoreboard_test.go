package server_test

import (
	"net/http"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/formats/formatstest"
	"github.com/replayarchive/replay/server"
	"github.com/replayarchive/replay/wire"
)

// TestScoreboardOverHTTP: GET /api/v1/recordings/{id}/scoreboard on a
// real server: an SC2 2v2's results, races and APM, an Echo VR match's
// stats with the players' user ids as pseudonyms for a viewer (the ids
// for a moderator, and the pseudonyms of the recording's other
// answers), a DDNet finish; 404 for an unknown recording.
func TestScoreboardOverHTTP(t *testing.T) {
	ts := start(t, server.Config{})
	viewer := ts.token("vera", replay.RoleViewer)
	mod := ts.token("mia", replay.RoleModerator)
	upload := ts.uploadFile
	sc2 := upload(filepath.Join(formatstest.CorpusDir(t, "sc2replay"), "lotv-3.2.2.42253-magma-mines-2v2.SC2Replay"))
	echo := upload(filepath.Join(formatstest.CorpusDir(t, "butter"), "reference", "butter", "example_2021-11-20.zstd_3.k300.butter"))
	th := upload(filepath.Join(formatstest.CorpusDir(t, "teehistorian"), "Tutorial.teehistorian"))

	var sb wire.Scoreboard
	ts.want(http.StatusOK, "GET", "/api/v1/recordings/"+sc2+"/scoreboard", viewer, nil, &sb)
	if sb.Format != "sc2replay" || len(sb.Players) != 4 || len(sb.Teams) != 2 {
		t.Fatalf("sc2: %+v", sb)
	}
	for _, p := range sb.Players {
		want := map[string]string{"IMBarabba": "loss", "Nova": "loss", "BiC": "win", "DakotaFannin": "win"}[p.Name]
		if p.Text["result"] != want || p.Text["race"] == "" || p.Stats["apm"] <= 0 {
			t.Errorf("sc2 row %+v", p)
		}
	}

	pseudo := regexp.MustCompile(`^p[0-9a-f]{10}$`)
	var seen, real wire.Scoreboard
	ts.want(http.StatusOK, "GET", "/api/v1/recordings/"+echo+"/scoreboard", viewer, nil, &seen)
	ts.want(http.StatusOK, "GET", "/api/v1/recordings/"+echo+"/scoreboard", mod, nil, &real)
	if len(seen.Players) != 11 || len(real.Players) != 11 || len(seen.Teams) != 2 {
		t.Fatalf("echo: %d and %d rows, %d teams", len(seen.Players), len(real.Players), len(seen.Teams))
	}
	var rj wire.Recording
	ts.want(http.StatusOK, "GET", "/api/v1/recordings/"+echo, viewer, nil, &rj)
	for i, p := range seen.Players {
		if !pseudo.MatchString(p.ID) || p.ID == real.Players[i].ID || real.Players[i].ID == "" {
			t.Errorf("echo row %d: viewer sees id %q, moderator %q", i, p.ID, real.Players[i].ID)
		}
		if rj.Players[i].ID != p.ID {
			t.Errorf("echo row %d: pseudonym %q, the recording's answer says %q", i, p.ID, rj.Players[i].ID)
		}
		if _, ok := p.Stats["stuns"]; !ok {
			t.Errorf("echo row %d: no stuns: %+v", i, p)
		}
	}

	ts.want(http.StatusOK, "GET", "/api/v1/recordings/"+th+"/scoreboard", viewer, nil, &sb)
	if len(sb.Finishes) != 1 || sb.Finishes[0].Seconds != 295.68 || sb.Finishes[0].Player != "p'*mac" {
		t.Errorf("teehistorian finishes %+v", sb.Finishes)
	}
	if code, body, _ := ts.do("GET", "/api/v1/recordings/00000000-0000-0000-0000-000000000000/scoreboard", viewer, nil); code != http.StatusNotFound {
		t.Errorf("unknown recording: %d %s", code, body)
	}
}
