// The takedown endpoints: taking a recording down, the list of takedowns,
// and lifting one.

package server

import (
	"errors"
	"net/http"
	"strings"

	"github.com/replayarchive/replay/archive"
)

func (s *Server) takedown(w http.ResponseWriter, r *http.Request) {
	b, err := s.markBody(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	if strings.TrimSpace(b.Reason) == "" {
		s.fail(w, badRequest("a takedown needs a reason"))
		return
	}
	m, err := s.x.Takedown(r.Context(), actorOf(r), r.PathValue("id"), b.Reason)
	var sweep *archive.SweepError
	if err != nil && !errors.As(err, &sweep) {
		s.fail(w, err)
		return
	}
	out := map[string]any{"deleted": m.ID.String(), "stored_bytes": m.StoredBytes, "sha256": m.SHA256}
	if err != nil {
		out["warning"] = err.Error()
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) takedowns(w http.ResponseWriter, r *http.Request) {
	ts, err := s.x.Takedowns()
	if err != nil {
		s.fail(w, err)
		return
	}
	if ts == nil {
		ts = []archive.Takedown{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"takedowns": ts})
}

func (s *Server) liftTakedown(w http.ResponseWriter, r *http.Request) {
	b, err := s.markBody(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	t, err := s.x.LiftTakedown(r.Context(), actorOf(r), r.PathValue("sha256"), b.Reason)
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"lifted": t})
}
