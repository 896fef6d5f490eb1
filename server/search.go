// The search endpoint: a query with its bounds, in an order (sort, order),
// paged by cursor.

package server

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/replayarchive/replay/query"
	"github.com/replayarchive/replay/wire"
)

const maxLimit = 200

func (s *Server) search(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query().Get("q")
	limit, so, from, err := pageParams(r)
	if err != nil {
		s.fail(w, err)
		return
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
	res, next, err := s.searchPage(ctx, r, pq, so, from, limit)
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.SearchOf(s.x, q, res, next))
}

// searchPage runs one page of a search within ctx's budget and returns it
// with the cursor of the next page ("" for the last); its error says
// whether the client left (errClientGone) or the budget ran out
// (errSearchBudget).
func (s *Server) searchPage(ctx context.Context, r *http.Request, pq *query.Query, so query.Sort, from, limit int) (*query.Results, string, error) {
	res, err := s.x.SearchSorted(ctx, pq, so, from, limit)
	switch {
	case err != nil && r.Context().Err() != nil:
		return nil, "", fmt.Errorf("%w: %v", errClientGone, err)
	case errors.Is(err, context.DeadlineExceeded):
		return nil, "", fmt.Errorf("%w of %v: narrow it (fewer or longer prefixes, a player:, map: or after: term)", errSearchBudget, s.cfg.SearchTimeout)
	case err != nil:
		return nil, "", err
	}
	next := ""
	if n := from + len(res.Hits); n < res.Total && len(res.Hits) > 0 && n <= query.MaxOffset {
		next = encodeCursor(n, so)
	}
	return res, next, nil
}

// pageParams reads which page of a list a request asks for: limit= (1 to
// maxLimit), the order (sortParam) and cursor= (the offset of a page the
// server gave, in that order).
func pageParams(r *http.Request) (limit int, so query.Sort, from int, err error) {
	limit, err = intParam(r, "limit", query.DefaultLimit)
	if err != nil || limit < 1 || limit > maxLimit {
		return 0, so, 0, badRequest("limit: want 1 to %d", maxLimit)
	}
	if so, err = sortParam(r); err != nil {
		return 0, so, 0, err
	}
	if c := r.URL.Query().Get("cursor"); c != "" {
		if from, err = decodeCursor(c, so); err != nil {
			return 0, so, 0, err
		}
	}
	return limit, so, from, nil
}

// sortParam reads the order of a list: sort=start|duration|players and
// order=asc|desc (default newest first).
func sortParam(r *http.Request) (query.Sort, error) {
	so, err := query.ParseSort(r.URL.Query().Get("sort"), r.URL.Query().Get("order"))
	if err != nil {
		return query.Sort{}, badRequest("%s", strings.TrimPrefix(err.Error(), "query: "))
	}
	return so, nil
}

// encodeCursor is the cursor of the page at offset from of order so: the
// order is in it, so that a cursor is never read in another order (which
// would skip or repeat recordings). The default order's cursor is as it
// always was.
func encodeCursor(from int, so query.Sort) string {
	c := "o" + strconv.Itoa(from)
	if so != (query.Sort{}) {
		c += "." + strings.ReplaceAll(so.String(), " ", ".")
	}
	return base64.RawURLEncoding.EncodeToString([]byte(c))
}

// decodeCursor reads a cursor encodeCursor gave for order so.
func decodeCursor(c string, so query.Sort) (int, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(b) < 2 || b[0] != 'o' {
		return 0, badRequest("cursor %q: not a cursor this server gave", c)
	}
	num, order, sorted := strings.Cut(string(b[1:]), ".")
	n, err := strconv.Atoi(num)
	if err != nil || n < 0 || n > query.MaxOffset {
		return 0, badRequest("cursor %q: not a cursor this server gave", c)
	}
	got := query.Sort{}
	if sorted {
		by, dir, _ := strings.Cut(order, ".")
		if got, err = query.ParseSort(by, dir); err != nil {
			return 0, badRequest("cursor %q: not a cursor this server gave", c)
		}
	}
	if got != so {
		return 0, badRequest("cursor %q: a cursor of the order %s, not %s (keep sort and order while paging)", c, got, so)
	}
	return n, nil
}
