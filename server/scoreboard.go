package server

import (
	"net/http"

	"github.com/replayarchive/replay/wire"
)

// scoreboard answers a recording's scoreboard (wire.Scoreboard), its player
// ids pseudonyms for viewers as in every other answer about it.
func (s *Server) scoreboard(w http.ResponseWriter, r *http.Request) {
	rec, err := s.open(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	sb, err := s.x.Scoreboard(r.Context(), rec)
	if err != nil {
		s.fail(w, err)
		return
	}
	id := rec.Manifest().ID.String()
	out := wire.NewScoreboard(id, rec.Format(), sb)
	if !seesModeration(r) {
		out = out.MapIDs(func(pid string) string { return s.pseudonym(id, pid) })
	}
	writeJSON(w, http.StatusOK, out)
}
