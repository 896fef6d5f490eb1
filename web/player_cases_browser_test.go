package web_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/replayarchive/replay"
)

// TestPlayerPageCases: a moderator's player page lists the cases of the
// player's recordings (by name: Kit's two recordings' cases, not Zed's;
// by id: uuid A's), each linking to its case; a viewer's page asks the
// cases API nothing and shows no case, no note and no moderator.
func TestPlayerPageCases(t *testing.T) {
	b := newBrowser(t, 1400, 900)
	s := startServer(t)
	recs := ingestRuns(t, s, 0) // Kit+Bob, Kitty(uuid A)+Zed, Kit (another uuid)
	mia := replay.Actor{Name: "mia", Role: replay.RoleModerator}
	ctx := context.Background()
	var cases []string
	for _, id := range []string{recs[0], recs[1], recs[2]} {
		if _, err := s.x.Flag(ctx, mia, id, "griefing", "note-by-mia on "+id[:8]); err != nil {
			t.Fatal(err)
		}
		cs, err := s.x.Cases(replay.CaseFilter{Recording: id})
		if err != nil || len(cs) != 1 {
			t.Fatalf("cases of %s: %v, %v", id, cs, err)
		}
		cases = append(cases, cs[0].ID.String())
	}
	mod := s.token(t, "mia", replay.RoleModerator)
	viewer := s.token(t, "vera", replay.RoleViewer)
	listed := func() []string {
		got := eval[[]string](b, `[...document.querySelectorAll('#pl-cases li[data-case]')].map((li) => li.dataset.case)`)
		slices.Sort(got)
		return got
	}
	want := func(ids ...string) []string { slices.Sort(ids); return ids }

	b.do("open the page", chromedp.Navigate(s.url+"/"))
	b.signIn(mod, "mia (moderator)")
	b.do("open Kit", chromedp.Navigate(s.url+"/?player=Kit"))
	b.waitFor("Kit's page", `document.body.dataset.ready === 'player' && document.getElementById('pl-name').textContent === 'Kit'`)
	if eval[bool](b, `document.getElementById('pl-cases-box').hidden`) {
		t.Fatal("a moderator's player page shows no cases")
	}
	if got := listed(); !slices.Equal(got, want(cases[0], cases[2])) {
		t.Errorf("Kit's cases: %v, want those of %s and %s: %v", got, recs[0][:8], recs[2][:8], want(cases[0], cases[2]))
	}
	if n := eval[int](b, `document.querySelectorAll('#pl-cases a[href="/?case=`+cases[0]+`"]').length`); n != 1 {
		t.Errorf("%d links to case %s", n, cases[0])
	}
	// docs/screenshot-player.png: go test ./web -run TestPlayerPageCases -args -screenshot
	b.docShot("#player-view", "screenshot-player.png")
	b.do("open uuid A", chromedp.Navigate(s.url+"/?pid="+kitUUID))
	b.waitFor("uuid A's page", `document.body.dataset.ready === 'player' && document.getElementById('player-view').dataset.by === 'id'`)
	if got := listed(); !slices.Equal(got, want(cases[0], cases[1])) {
		t.Errorf("uuid A's cases: %v, want %v", got, want(cases[0], cases[1]))
	}
	b.do("click a case", chromedp.Click(chromedp.CSS(`#pl-cases a[href="/?case=`+cases[1]+`"]`)))
	b.waitFor("the case's page", `document.body.dataset.ready === 'case' && document.getElementById('cases-h').textContent.startsWith('Case `+cases[1][:8]+`')`)

	b.do("sign out", chromedp.Click(chromedp.ID("signout")))
	b.signIn(viewer, "vera (viewer)")
	b.do("a viewer opens Kit", chromedp.Navigate(s.url+"/?player=Kit"))
	b.waitFor("Kit's page for a viewer", `document.body.dataset.ready === 'player' && document.querySelectorAll('#pl-recs tr').length === 2`)
	if !eval[bool](b, `document.getElementById('pl-cases-box').hidden && !document.querySelector('#pl-cases li')`) {
		t.Error("a viewer's player page shows cases")
	}
	if eval[bool](b, `performance.getEntriesByType('resource').some((e) => e.name.includes('/api/v1/cases'))`) {
		t.Error("a viewer's page asked the cases API")
	}
	html := eval[string](b, `document.documentElement.outerHTML`)
	for _, c := range cases {
		if strings.Contains(html, c) || strings.Contains(html, "note-by-mia") {
			t.Errorf("a viewer's page holds case %s or its note", c)
		}
	}
}
