package server_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
	"github.com/replayarchive/replay/server"
	"github.com/replayarchive/replay/wire"
)

// A takedown over the API hides the recording from every read (410 with
// the takedown) and refuses at upload its file, a moderator's clip and a
// viewer's redacted copy; a moderator undoes it within the grace period
// (a viewer may not), and only an admin lifts a purged one.
func TestTakedownGraceOverHTTP(t *testing.T) {
	ts := start(t, server.Config{})
	token := func(name string, role replay.Role) string {
		tok, err := ts.x.CreateToken(replay.LocalActor(), name, role)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	admin, mod, viewer := token("ada", replay.RoleAdmin), token("moritz", replay.RoleModerator), token("vera", replay.RoleViewer)
	game := teehistoriangen.Must(t, teehistoriangen.Options{Duration: 30 * time.Second, Players: 4, Seed: 2930})
	var up struct{ ID, SHA256 string }
	ts.want(http.StatusCreated, "POST", "/api/v1/recordings?name=game.teehistorian", admin, bytes.NewReader(game), &up)
	rec := "/api/v1/recordings/" + up.ID
	_, clip, _ := ts.do("GET", rec+"/clip?from=100&to=600", mod, nil)
	_, redacted, _ := ts.do("GET", rec+"/file?redact=1", viewer, nil)
	if len(clip) == 0 || len(redacted) == 0 || bytes.Equal(clip, game) {
		t.Fatalf("clip %d bytes, redacted copy %d bytes", len(clip), len(redacted))
	}

	var took struct {
		Takedown archive.Takedown `json:"takedown"`
	}
	ts.want(http.StatusOK, "DELETE", rec, mod, strings.NewReader(`{"reason":"ticket 29"}`), &took)
	if took.Takedown.State != archive.TakedownPending || took.Takedown.PurgeAt.Sub(took.Takedown.At) != archive.DefaultGrace {
		t.Errorf("takedown answer: %+v, want pending for the default grace", took.Takedown)
	}
	ts.want(http.StatusBadRequest, "DELETE", rec, mod, strings.NewReader(`{"reason":"x","grace":"soon"}`), nil)
	var pending wire.Error
	ts.want(http.StatusConflict, "DELETE", "/api/v1/takedowns/"+up.SHA256, admin, strings.NewReader(`{"reason":"early"}`), &pending)
	if pending.Code != "takedown_pending" {
		t.Errorf("lift within the grace period: %+v", pending)
	}
	for _, path := range []string{rec, rec + "/file?redact=1", rec + "/frames", rec + "/events"} {
		var gone wire.Error
		ts.want(http.StatusGone, "GET", path, viewer, nil, &gone)
		if gone.Code != "taken_down" || gone.Takedown == nil || gone.Takedown.Reason != "ticket 29" {
			t.Errorf("GET %s: %+v", path, gone)
		}
	}
	var found struct{ Total int }
	ts.want(http.StatusOK, "GET", "/api/v1/recordings?q=map:kobra*", viewer, nil, &found)
	if found.Total != 0 {
		t.Errorf("search finds %d recordings while the only one is taken down", found.Total)
	}
	for name, b := range map[string][]byte{"the file": game, "a moderator's clip": clip, "the redacted copy": redacted} {
		var gone wire.Error
		ts.want(http.StatusGone, "POST", "/api/v1/recordings?name=x.teehistorian", admin, bytes.NewReader(b), &gone)
		if gone.Takedown == nil || gone.Takedown.ID.String() != up.ID {
			t.Errorf("upload of %s: %+v, want refused by the takedown of %s", name, gone, up.ID)
		}
	}

	ts.want(http.StatusForbidden, "POST", "/api/v1/takedowns/"+up.ID[:8]+"/undo", viewer, nil, nil)
	ts.want(http.StatusOK, "POST", "/api/v1/takedowns/"+up.ID[:8]+"/undo", mod, strings.NewReader(`{"reason":"wrong game"}`), nil)
	_, file, _ := ts.do("GET", rec+"/file", admin, nil)
	if !bytes.Equal(file, game) {
		t.Error("the restored recording's file differs")
	}
	ts.want(http.StatusOK, "GET", "/api/v1/recordings?q=map:kobra*", viewer, nil, &found)
	if found.Total != 1 {
		t.Errorf("search finds %d recordings after the undo, want 1", found.Total)
	}
	var shown wire.Recording
	ts.want(http.StatusOK, "GET", rec, mod, nil, &shown)
	undone := false
	for _, a := range shown.Audit {
		undone = undone || a.Action == archive.AuditUndoTakedown && a.Who == "moritz"
	}
	if !undone {
		t.Errorf("the audit log has no undo by moritz: %+v", shown.Audit)
	}

	ts.want(http.StatusOK, "DELETE", rec, mod, strings.NewReader(`{"reason":"court order","now":true}`), &took)
	if took.Takedown.State != archive.TakedownPurged {
		t.Errorf("takedown now: %+v, want purged", took.Takedown)
	}
	ts.want(http.StatusGone, "POST", "/api/v1/takedowns/"+up.ID+"/undo", mod, nil, nil)
	ts.want(http.StatusNotFound, "POST", "/api/v1/takedowns/00000000-0000-4000-8000-000000000000/undo", mod, nil, nil)
	ts.want(http.StatusForbidden, "DELETE", "/api/v1/takedowns/"+up.SHA256, mod, strings.NewReader(`{"reason":"appeal"}`), nil)
	ts.want(http.StatusOK, "DELETE", "/api/v1/takedowns/"+up.SHA256, admin, strings.NewReader(`{"reason":"appeal"}`), nil)
	ts.want(http.StatusCreated, "POST", "/api/v1/recordings?name=game.teehistorian", admin, bytes.NewReader(game), nil)
}
