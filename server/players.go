// The player page's endpoint: every recording of one player, by name, by
// the format's stable id (moderators) or by the pseudonym a viewer saw in
// a recording, with what they say about it.

package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/query"
	"github.com/replayarchive/replay/wire"
)

// maxPlayerKey bounds a name or id asked for (a player's name is short in
// every format; a query term is at most query.MaxQueryBytes).
const maxPlayerKey = 256

// pseudonymRE is the form of the pseudonyms viewers see (pseudonym).
var pseudonymRE = regexp.MustCompile(`^p[0-9a-f]{10}$`)

// player answers GET /api/v1/players/{key} and GET /api/v1/players?name=
// or ?id=: the key is a name, or for a moderator an id when no recording
// has the name; with rec=ID, a pseudonym of that recording's players
// (what a viewer sees as an id), which stands for its id for a moderator
// and for the player's name in that recording for a viewer. A viewer never
// looks up by id and never gets ids or aliases: the answer says nothing a
// search by the name would not.
func (s *Server) player(w http.ResponseWriter, r *http.Request) {
	qv := r.URL.Query()
	mod := seesModeration(r)
	key, name, id, rec := r.PathValue("key"), qv.Get("name"), qv.Get("id"), qv.Get("rec")
	given := 0
	for _, v := range []string{key, name, id} {
		if v != "" {
			given++
		}
	}
	switch {
	case given != 1:
		s.fail(w, badRequest("give one player: /api/v1/players/NAME, ?name=NAME or ?id=ID"))
		return
	case len(key) > maxPlayerKey || len(name) > maxPlayerKey || len(id) > maxPlayerKey:
		s.fail(w, badRequest("a player's name or id is at most %d bytes", maxPlayerKey))
		return
	case id != "" && !mod:
		writeError(w, http.StatusForbidden, "forbidden", "only moderators may look players up by id (ids include accounts); look them up by name")
		return
	case rec != "" && key == "":
		s.fail(w, badRequest("rec= goes with a pseudonym: /api/v1/players/PSEUDONYM?rec=ID"))
		return
	}
	limit, so, from, err := pageParams(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.SearchTimeout)
	defer cancel()

	by := ""
	k := replay.PlayerKey{Name: name, ID: id}
	switch {
	case rec != "":
		if !pseudonymRE.MatchString(key) {
			s.fail(w, badRequest("%q is not a pseudonym (p and 10 hex digits)", key))
			return
		}
		if k, err = s.unmask(rec, key, mod); err != nil {
			s.fail(w, err)
			return
		}
		by = "pseudonym"
	case key != "":
		k.Name = key
	}
	sum, err := s.x.Player(ctx, k)
	if err == nil && sum.Total == 0 && key != "" && rec == "" && mod {
		// Not a name: an id?
		if byID, err2 := s.x.Player(ctx, replay.PlayerKey{ID: key}); err2 == nil && byID.Total > 0 {
			sum, k = byID, byID.Key
		}
	}
	var res *query.Results
	next := ""
	if err == nil {
		var pq *query.Query
		if pq, err = k.Query(); err == nil {
			res, next, err = s.searchPage(ctx, r, pq, so, from, limit)
		}
	}
	if err != nil {
		if r.Context().Err() != nil && !errors.Is(err, errClientGone) {
			err = fmt.Errorf("%w: %v", errClientGone, err)
		}
		s.fail(w, err)
		return
	}
	out := wire.PlayerOf(s.x, sum, res, mod, next)
	if by != "" {
		out.By = by
		if !mod {
			out.Name = k.Name
		}
	}
	out.TookMS = float64(res.Took.Microseconds()) / 1000
	writeJSON(w, http.StatusOK, out)
}

// unmask finds the player of recording rec whose id a viewer sees as
// pseudonym p: for a moderator by that id, for a viewer by the name the
// player had there (an id would link the player's recordings through an
// account, which viewers do not see).
func (s *Server) unmask(rec, p string, mod bool) (replay.PlayerKey, error) {
	m, err := s.x.Manifest(rec)
	if err != nil {
		return replay.PlayerKey{}, err
	}
	for _, pl := range m.Meta.Players {
		if pl.ID == "" || s.pseudonym(m.ID.String(), pl.ID) != p {
			continue
		}
		if mod {
			return replay.PlayerKey{ID: pl.ID}, nil
		}
		if pl.Name == "" {
			break
		}
		return replay.PlayerKey{Name: pl.Name}, nil
	}
	return replay.PlayerKey{}, fmt.Errorf("no player of recording %s is %s: %w", strings.ToLower(rec), p, archive.ErrNotFound)
}
