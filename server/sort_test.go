package server_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/replayarchive/replay/server"
	"github.com/replayarchive/replay/wire"
)

// TestListSortedOverHTTP: GET /api/v1/recordings?sort=&order= on a real
// server orders the list by start, duration and players count, both
// ways (ties by start, then id, the same way), and paging through all
// pages by cursor gives every recording exactly once for each order, also
// with a query; a cursor of another order, an unknown sort or order are
// 400 bad_request.
func TestListSortedOverHTTP(t *testing.T) {
	ts := start(t, server.Config{})
	t0 := time.Date(2026, 4, 1, 8, 0, 0, 0, time.UTC)
	const n = 13
	for i := range n {
		var ps []runner
		for k := range 1 + i%4 {
			ps = append(ps, runner{fmt.Sprintf("P%d_%d", i, k), fmt.Sprintf("00000000-0000-4000-8000-%012d", i*10+k)})
		}
		ticks := 40 + (i*37)%160
		if i%5 == 0 {
			ticks = 100 // ties of duration
		}
		ts.ingestRun(uint64(100+i), t0.Add(time.Duration((i*7)%n)*time.Hour), ticks, ps...)
	}
	type row struct {
		id          string
		start       string
		dur, player int
	}
	for _, q := range []string{"", "-player:p3_0"} {
		for _, by := range []string{"", "start", "duration", "players"} {
			for _, order := range []string{"", "asc", "desc"} {
				var rows []row
				cursor, total, pages := "", -1, 0
				for {
					var res wire.Search
					path := fmt.Sprintf("/api/v1/recordings?q=%s&sort=%s&order=%s&limit=4&cursor=%s", q, by, order, cursor)
					ts.want(http.StatusOK, "GET", path, ts.owner, nil, &res)
					if total >= 0 && res.Total != total {
						t.Fatalf("%s: total %d, before %d", path, res.Total, total)
					}
					total = res.Total
					for _, h := range res.Hits {
						rows = append(rows, row{h.ID, h.Start, int(h.DurationMS), len(h.Players)})
					}
					pages++
					if res.NextCursor == "" {
						break
					}
					cursor = res.NextCursor
				}
				what := fmt.Sprintf("q=%q sort=%q order=%q", q, by, order)
				seen := map[string]bool{}
				for _, r := range rows {
					if seen[r.id] {
						t.Errorf("%s: %s twice", what, r.id)
					}
					seen[r.id] = true
				}
				want := n
				if q != "" {
					want = n - 1
				}
				if len(rows) != want || total != want || pages != (want+3)/4 {
					t.Errorf("%s: %d rows in %d pages, total %d; want %d", what, len(rows), pages, total, want)
				}
				key := func(r row) int {
					switch by {
					case "duration":
						return r.dur
					case "players":
						return r.player
					}
					return 0
				}
				sorted := slices.IsSortedFunc(rows, func(a, b row) int {
					c := key(a) - key(b)
					if c == 0 {
						c = strings.Compare(a.start, b.start)
					}
					if order != "asc" {
						c = -c
					}
					return c
				})
				if !sorted {
					t.Errorf("%s: not in order: %v", what, rows)
				}
			}
		}
	}
	var first wire.Search
	ts.want(http.StatusOK, "GET", "/api/v1/recordings?sort=duration&limit=2", ts.owner, nil, &first)
	for _, path := range []string{
		"/api/v1/recordings?sort=players&limit=2&cursor=" + first.NextCursor,
		"/api/v1/recordings?limit=2&cursor=" + first.NextCursor,
		"/api/v1/recordings?sort=size",
		"/api/v1/recordings?order=up",
	} {
		var e wire.Error
		ts.want(http.StatusBadRequest, "GET", path, ts.owner, nil, &e)
		if e.Code != "bad_request" {
			t.Errorf("%s: %+v", path, e)
		}
	}
}
