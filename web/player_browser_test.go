package web_test

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/formats/hcrp"
	"github.com/replayarchive/replay/internal/gen/hcrpgen"
	"github.com/replayarchive/replay/query"
)

const (
	kitUUID   = "0a0a0a0a-1111-4111-8111-aaaaaaaaaaaa"
	bobUUID   = "0b0b0b0b-2222-4222-8222-bbbbbbbbbbbb"
	otherUUID = "0d0d0d0d-4444-4444-8444-dddddddddddd"
)

// ingestRuns archives generated HCRP runs: three of Kit (uuid A; as
// Kitty in the second; a second Kit under another uuid in the third) and
// Bob, then n runs of others, of varied lengths and player counts, every
// third on the map lava-tower. It returns the ids of the first three.
func ingestRuns(t *testing.T, s *testServer, n int) []string {
	t.Helper()
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	type pl struct{ name, id string }
	run := func(seed uint64, start time.Time, ticks int, mapName string, ps ...pl) string {
		b, err := hcrpgen.Generate(hcrpgen.Config{Seed: seed, Ticks: ticks, Players: len(ps), Start: start}, func(o *hcrp.Options) {
			mp := slices.Clone(o.Meta.Players)
			for i, p := range ps {
				mp[i].Name, mp[i].UUID = p.name, p.id
			}
			o.Meta.Players = mp
			if mapName != "" {
				o.Meta.Map = mapName
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		res, _, err := s.x.IngestStream(context.Background(), fmt.Sprintf("run-%d.hcrp", seed), bytes.NewReader(b), 0, replay.LocalActor())
		if err != nil || res.Err != "" {
			t.Fatalf("ingest: %v %s", err, res.Err)
		}
		return res.ID.String()
	}
	ids := []string{
		run(1, t0, 300, "", pl{"Kit", kitUUID}, pl{"Bob", bobUUID}),
		run(2, t0.Add(time.Hour), 300, "", pl{"Kitty", kitUUID}, pl{"Zed", "0c0c0c0c-3333-4333-8333-cccccccccccc"}),
		run(3, t0.Add(2*time.Hour), 300, "", pl{"Kit", otherUUID}),
	}
	for i := range n {
		var ps []pl
		for k := range 1 + i%5 {
			ps = append(ps, pl{fmt.Sprintf("Runner%d", (i+k)%9), fmt.Sprintf("00000000-0000-4000-8000-%012d", (i+k)%9)})
		}
		m := ""
		if i%3 == 0 {
			m = "lava-tower"
		}
		run(uint64(10+i), t0.Add(time.Duration(3+(i*5)%n)*time.Hour+time.Duration(i)*time.Minute), 40+(i*53)%400, m, ps...)
	}
	return ids
}

// TestPlayerPageAndList (1400 px): the list sorts by the order picker and
// pages in that order (the pages are the API's SearchSorted pages); the
// map picker writes map: into the query and narrows the list; a player's
// name in a hit and in a recording's players table opens the player page,
// which shows a moderator its recordings, ids and aliases; a viewer sees
// the page by name and by a recording's pseudonym, and no raw id anywhere
// on it.
func TestPlayerPageAndList(t *testing.T) {
	b := newBrowser(t, 1400, 900)
	s := startServer(t)
	const fillers = 30
	recs := ingestRuns(t, s, fillers)
	mod := s.token(t, "mia", replay.RoleModerator)
	viewer := s.token(t, "vera", replay.RoleViewer)
	ctx := context.Background()

	b.do("open the page", chromedp.Navigate(s.url+"/"))
	b.signIn(mod, "mia (moderator)")
	b.waitFor("the list", `document.body.dataset.ready === 'search' && document.querySelectorAll('#hits > li').length === 20`)
	hitIDs := func() []string {
		return eval[[]string](b, `[...document.querySelectorAll('#hits > li')].map((li) => li.dataset.id)`)
	}
	wantPage := func(so query.Sort, q string, from int) []string {
		t.Helper()
		pq, err := query.Parse(q)
		if err != nil {
			t.Fatal(err)
		}
		res, err := s.x.SearchSorted(ctx, pq, so, from, 20)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, h := range res.Hits {
			out = append(out, h.ID)
		}
		return out
	}

	// The order picker: longest first, two pages and back.
	b.do("sort by duration", chromedp.SetValue(chromedp.ID("sort"), "duration.desc"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById('sort').dispatchEvent(new Event('change'))`))
	b.waitFor("the longest first", `location.search.includes('sort=duration') && document.body.dataset.ready === 'search'`)
	long := query.Sort{Key: query.SortDuration}
	if got, want := hitIDs(), wantPage(long, "", 0); !slices.Equal(got, want) {
		t.Fatalf("longest first, page 1:\n got %v\nwant %v", got, want)
	}
	b.do("next page", chromedp.Click(chromedp.ID("next")))
	b.waitFor("page 2", `location.search.includes('cursor=') && document.body.dataset.ready === 'search'`)
	if got, want := hitIDs(), wantPage(long, "", 20); !slices.Equal(got, want) || len(got) != fillers+3-20 {
		t.Errorf("longest first, page 2:\n got %v\nwant %v", got, want)
	}
	if v := eval[string](b, `document.getElementById('sort').value`); v != "duration.desc" {
		t.Errorf("the order picker on page 2 says %q", v)
	}
	b.do("previous page", chromedp.Click(chromedp.ID("prev")))
	b.waitFor("page 1 again", `!location.search.includes('cursor=') && document.body.dataset.ready === 'search'`)
	if got, want := hitIDs(), wantPage(long, "", 0); !slices.Equal(got, want) {
		t.Errorf("back on page 1: %v", got)
	}
	few := query.Sort{Key: query.SortPlayers, Asc: true}
	b.do("fewest players first", chromedp.SetValue(chromedp.ID("sort"), "players.asc"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById('sort').dispatchEvent(new Event('change'))`))
	b.waitFor("fewest players first", `location.search.includes('sort=players') && location.search.includes('order=asc') && document.body.dataset.ready === 'search'`)
	if got, want := hitIDs(), wantPage(few, "", 0); !slices.Equal(got, want) {
		t.Errorf("fewest players first:\n got %v\nwant %v", got, want)
	}

	// The map picker writes the term and narrows the list.
	b.do("pick a map", chromedp.SetValue(chromedp.ID("f-map"), "lava-tower"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById('f-map').dispatchEvent(new Event('change'))`))
	b.waitFor("the map's recordings", `new URLSearchParams(location.search).get('q') === 'map:lava-tower' && document.body.dataset.ready === 'search'`)
	if got, want := hitIDs(), wantPage(few, "map:lava-tower", 0); !slices.Equal(got, want) || len(got) != fillers/3 {
		t.Errorf("map:lava-tower: %d hits %v, want %v", len(got), got, want)
	}
	if q := eval[string](b, `document.getElementById('q').value`); q != "map:lava-tower" {
		t.Errorf("the query box says %q", q)
	}

	// A name in a hit opens the player page.
	b.do("search Kit", chromedp.Navigate(s.url+"/?q="+url.QueryEscape("player:kit")))
	b.waitFor("Kit's hits", `document.body.dataset.ready === 'search' && document.querySelectorAll('#hits a.player').length > 0`)
	b.do("click Kit", chromedp.Click(chromedp.CSS(`#hits li[data-id="`+recs[2]+`"] a.player`)))
	b.waitFor("Kit's page", `document.body.dataset.ready === 'player' && !document.getElementById('player-view').hidden`)
	// docs/screenshot-player.png: TestPlayerPageCases (with cases).
	rows := func() []string {
		return eval[[]string](b, `[...document.querySelectorAll('#pl-recs tr')].map((r) => r.dataset.id)`)
	}
	if got := rows(); !slices.Equal(got, []string{recs[2], recs[0]}) {
		t.Errorf("Kit's recordings: %v, want %v", got, []string{recs[2], recs[0]})
	}
	text := eval[string](b, `document.getElementById('player-view').innerText`)
	for _, want := range []string{kitUUID, otherUUID, "Kitty", "Last seen"} {
		if !strings.Contains(text, want) {
			t.Errorf("Kit's page lacks %q:\n%s", want, text)
		}
	}
	if w := eval[[]int](b, `(() => { const d = document.getElementById('pl-table').parentElement; return [d.scrollWidth, d.clientWidth]; })()`); w[0] > w[1] {
		t.Errorf("the player's table scrolls sideways at 1400 px: %v", w)
	}
	// An id opens the id's page: Kit and Kitty.
	b.do("open uuid A", chromedp.Click(chromedp.CSS(`#pl-ids a[href*="`+kitUUID+`"]`)))
	b.waitFor("uuid A's page", `document.body.dataset.ready === 'player' && document.getElementById('player-view').dataset.by === 'id'`)
	if got := rows(); !slices.Equal(got, []string{recs[1], recs[0]}) {
		t.Errorf("uuid A's recordings: %v", got)
	}
	// A name in a recording's players table opens its page.
	b.do("open Kitty's recording", chromedp.Navigate(s.url+"/r/"+recs[1]))
	b.waitFor("the recording", `document.body.dataset.ready === 'recording' && document.querySelectorAll('#players a.player').length > 0`)
	b.do("click Kitty", chromedp.Click(chromedp.CSS(`#players a.player[href="/?player=Kitty"]`)))
	b.waitFor("Kitty's page", `document.body.dataset.ready === 'player' && document.getElementById('pl-name').textContent === 'Kitty'`)
	if got := rows(); !slices.Equal(got, []string{recs[1]}) {
		t.Errorf("Kitty's recordings: %v", got)
	}

	// A viewer: the same page by name, and by a recording's pseudonym,
	// with no id in it.
	b.do("sign out", chromedp.Click(chromedp.ID("signout")))
	b.signIn(viewer, "vera (viewer)")
	noIDs := func(what string) {
		t.Helper()
		html := strings.ToLower(eval[string](b, `document.documentElement.outerHTML`))
		for _, id := range []string{kitUUID, bobUUID, otherUUID} {
			if strings.Contains(html, id) {
				t.Errorf("%s: a viewer's page holds id %s", what, id)
			}
		}
	}
	b.do("a viewer opens Kit", chromedp.Navigate(s.url+"/?player=Kit"))
	b.waitFor("Kit's page for a viewer", `document.body.dataset.ready === 'player' && document.querySelectorAll('#pl-recs tr').length === 2`)
	noIDs("Kit's page")
	if eval[bool](b, `!document.getElementById('pl-ids-box').hidden || !document.getElementById('pl-aliases-box').hidden`) {
		t.Error("a viewer sees ids or aliases")
	}
	b.do("a viewer opens Kitty's recording", chromedp.Navigate(s.url+"/r/"+recs[1]))
	b.waitFor("the recording", `document.body.dataset.ready === 'recording' && document.getElementById('players').tBodies[0].rows.length > 0`)
	noIDs("the recording")
	pseudo := eval[string](b, `[...document.getElementById('players').tBodies[0].rows].find((r) => r.cells[0].textContent === 'Kitty').cells[1].title`)
	if !strings.HasPrefix(pseudo, "p") || len(pseudo) != 11 {
		t.Fatalf("Kitty's id for a viewer: %q", pseudo)
	}
	b.do("a viewer opens the pseudonym", chromedp.Navigate(s.url+"/?pseudonym="+pseudo+"&rec="+recs[1]))
	b.waitFor("the pseudonym's page", `document.body.dataset.ready === 'player' && document.getElementById('pl-name').textContent === 'Kitty'`)
	if got := rows(); !slices.Equal(got, []string{recs[1]}) {
		t.Errorf("the pseudonym's recordings: %v", got)
	}
	noIDs("the pseudonym's page")
}
