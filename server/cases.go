// Cases: moderators' work on recordings (opened by a flag or by hand,
// assigned, annotated, resolved or dismissed). Every endpoint takes a
// moderator: viewers get 403 and never see a case, a note or who
// wrote it.

package server

import (
	"errors"
	"net/http"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/wire"
)

// caseRoutes adds the cases' endpoints through h (routes' helper: a
// pattern, the role it needs, its metrics name and the handler).
func (s *Server) caseRoutes(h func(pattern string, role replay.Role, name string, fn http.HandlerFunc)) {
	m := replay.RoleModerator
	h("GET /api/v1/cases", m, "cases", s.listCases)
	h("POST /api/v1/cases", m, "case-open", s.openCase)
	h("GET /api/v1/cases/{id}", m, "case", s.getCase)
	h("PATCH /api/v1/cases/{id}", m, "case-update", s.updateCase)
	h("POST /api/v1/cases/{id}/notes", m, "case-note", s.addCaseNote)
}

// caseFail answers the cases' own errors (a caller's mistakes, 4xx) and
// leaves the rest to fail.
func (s *Server) caseFail(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, archive.ErrNoCase):
		writeError(w, http.StatusNotFound, "not_found", err.Error())
	case errors.Is(err, archive.ErrBadCaseStatus), errors.Is(err, archive.ErrBadCaseNote), errors.Is(err, archive.ErrBadAssignee),
		errors.Is(err, archive.ErrBadCaseID), errors.Is(err, replay.ErrNotModerator):
		writeError(w, http.StatusBadRequest, "bad_request", err.Error())
	case errors.Is(err, archive.ErrCaseFull):
		writeError(w, http.StatusConflict, "case_full", err.Error())
	default:
		s.fail(w, err)
	}
}

// listCases answers GET /api/v1/cases?status=&assignee=&recording=
// &player=NAME or &player_id=ID (the cases of a player's recordings, for
// the player page); assignee=me is the caller.
func (s *Server) listCases(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := replay.CaseFilter{Status: q.Get("status"), Assignee: q.Get("assignee"), Recording: q.Get("recording"),
		Player: replay.PlayerKey{Name: q.Get("player"), ID: q.Get("player_id")}}
	switch {
	case f.Player.Name != "" && f.Player.ID != "":
		s.fail(w, badRequest("give player=NAME or player_id=ID, not both"))
		return
	case len(f.Player.Name) > maxPlayerKey || len(f.Player.ID) > maxPlayerKey:
		s.fail(w, badRequest("a player's name or id is at most %d bytes", maxPlayerKey))
		return
	}
	if f.Assignee == "me" {
		f.Assignee = actorOf(r).Name
	}
	cs, err := s.x.Cases(f)
	if err != nil {
		s.caseFail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.CasesOf(cs))
}

// openCaseBody is POST /api/v1/cases's body.
type openCaseBody struct {
	Recording string `json:"recording"`
	Note      string `json:"note"`
}

func (s *Server) openCase(w http.ResponseWriter, r *http.Request) {
	var b openCaseBody
	if err := decodeBody(r, &b); err != nil {
		s.fail(w, err)
		return
	}
	if b.Recording == "" {
		s.fail(w, badRequest("a case needs a recording: {\"recording\": ID, \"note\": TEXT}"))
		return
	}
	c, err := s.x.OpenCase(r.Context(), actorOf(r), b.Recording, b.Note)
	if err != nil {
		s.caseFail(w, err)
		return
	}
	w.Header().Set("Location", "/api/v1/cases/"+c.ID.String())
	writeJSON(w, http.StatusCreated, wire.CaseOf(c))
}

func (s *Server) getCase(w http.ResponseWriter, r *http.Request) {
	c, err := s.x.Case(r.PathValue("id"))
	if err != nil {
		s.caseFail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.CaseOf(c))
}

// updateCaseBody is PATCH /api/v1/cases/{id}'s body: the fields given
// change.
type updateCaseBody struct {
	Status   *string `json:"status"`
	Assignee *string `json:"assignee"`
}

func (s *Server) updateCase(w http.ResponseWriter, r *http.Request) {
	var b updateCaseBody
	if err := decodeBody(r, &b); err != nil {
		s.fail(w, err)
		return
	}
	if b.Status == nil && b.Assignee == nil {
		s.fail(w, badRequest("nothing to change: give status, assignee or both"))
		return
	}
	if b.Assignee != nil && *b.Assignee == "me" {
		me := actorOf(r).Name
		b.Assignee = &me
	}
	c, err := s.x.UpdateCase(r.Context(), actorOf(r), r.PathValue("id"), replay.CaseChange{Status: b.Status, Assignee: b.Assignee})
	if err != nil {
		s.caseFail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.CaseOf(c))
}

// caseNoteBody is POST /api/v1/cases/{id}/notes's body.
type caseNoteBody struct {
	Text string `json:"text"`
}

func (s *Server) addCaseNote(w http.ResponseWriter, r *http.Request) {
	var b caseNoteBody
	if err := decodeBody(r, &b); err != nil {
		s.fail(w, err)
		return
	}
	c, err := s.x.AddCaseNote(r.Context(), actorOf(r), r.PathValue("id"), b.Text)
	if err != nil {
		s.caseFail(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, wire.CaseOf(c))
}
