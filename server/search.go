// The search endpoint: a query with its bounds, paged by cursor.

package server

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/replayarchive/replay/query"
	"github.com/replayarchive/replay/wire"
)

const maxLimit = 200

func (s *Server) search(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query().Get("q")
	limit, err := intParam(r, "limit", query.DefaultLimit)
	if err != nil || limit < 1 || limit > maxLimit {
		s.fail(w, badRequest("limit: want 1 to %d", maxLimit))
		return
	}
	from := 0
	if c := r.URL.Query().Get("cursor"); c != "" {
		if from, err = decodeCursor(c); err != nil {
			s.fail(w, err)
			return
		}
	}
	pq, err := query.Parse(q)
	if err == nil && !seesModeration(r) {
		err = viewerQuery(pq)
	}
	if err != nil {
		s.fail(w, err)
		return
	}
	// The search gets a time budget, and stops when the client leaves.
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.SearchTimeout)
	defer cancel()
	res, err := s.x.SearchQuery(ctx, pq, from, limit)
	switch {
	case err != nil && r.Context().Err() != nil:
		s.fail(w, fmt.Errorf("%w: %v", errClientGone, err))
		return
	case errors.Is(err, context.DeadlineExceeded):
		s.fail(w, fmt.Errorf("%w of %v: narrow it (fewer or longer prefixes, a player:, map: or after: term)", errSearchBudget, s.cfg.SearchTimeout))
		return
	case err != nil:
		s.fail(w, err)
		return
	}
	next := ""
	if n := from + len(res.Hits); n < res.Total && len(res.Hits) > 0 && n <= query.MaxOffset {
		next = encodeCursor(n)
	}
	writeJSON(w, http.StatusOK, wire.SearchOf(s.x, q, res, next))
}

func encodeCursor(from int) string {
	return base64.RawURLEncoding.EncodeToString([]byte("o" + strconv.Itoa(from)))
}

func decodeCursor(c string) (int, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(b) < 2 || b[0] != 'o' {
		return 0, badRequest("cursor %q: not a cursor this server gave", c)
	}
	n, err := strconv.Atoi(string(b[1:]))
	if err != nil || n < 0 || n > query.MaxOffset {
		return 0, badRequest("cursor %q: not a cursor this server gave", c)
	}
	return n, nil
}
