package web_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
)

// tickJS reads the page's selected tick from its position line.
const tickJS = `+((document.getElementById('pos').textContent.match(/Tick (\d+)/) || [0, -1])[1])`

// TestWatchTogether, two browsers at 1400 px: moderator A opens a shared
// viewing, viewer B joins by its link; A jumps to a tick and plays, and
// B's page follows (its tick within a second of A's, playing); B takes
// the controls, pauses and jumps, and A follows B. B sees A only under
// a pseudonym.
func TestWatchTogether(t *testing.T) {
	game := filepath.Join(t.TempDir(), "game.teehistorian")
	if err := os.WriteFile(game, teehistoriangen.Must(t, teehistoriangen.Options{Duration: 2 * time.Minute, Players: 4, Seed: 33}), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, game)
	id := onlyID(t, s)
	mod := s.token(t, "mod-ann", replay.RoleModerator)
	viewer := s.token(t, "val-ben", replay.RoleViewer)

	a := newBrowser(t, 1400, 900)
	a.do("A opens the recording", chromedp.Navigate(s.url+"/r/"+id+"#login="+mod))
	a.waitFor("A's recording page", `document.body.dataset.ready === 'recording'`)
	a.waitFor("the Watch together button", `!document.getElementById('watch').hidden && !document.getElementById('watch-start').hidden`)
	a.do("open a room", chromedp.Click(chromedp.ID("watch-start")))
	a.waitFor("A has the controls", `document.body.dataset.watch === 'controls' && !document.getElementById('watch-link-row').hidden`)
	link := eval[string](a, `document.getElementById('watch-link').value`)
	if !strings.HasPrefix(link, s.url+"/r/"+id+"?watch=") {
		t.Fatalf("the link to join: %q", link)
	}

	b := newBrowser(t, 1400, 900)
	b.do("B opens the link", chromedp.Navigate(link+"#login="+viewer))
	b.waitFor("B's recording page", `document.body.dataset.ready === 'recording'`)
	b.waitFor("B follows", `document.body.dataset.watch === 'follows' && !document.getElementById('watch-take').hidden`)
	if !eval[bool](b, `document.getElementById('watch-start').hidden`) {
		t.Error("a viewer is offered to open a room")
	}
	a.waitFor("A sees two watching", `document.querySelectorAll('#watch-who li').length === 2`)
	if who := eval[string](a, `document.getElementById('watch-who').innerText`); !strings.Contains(who, "mod-ann") || !strings.Contains(who, "val-ben") {
		t.Errorf("A's list of who is watching: %q", who)
	}
	b.waitFor("B sees two watching", `document.querySelectorAll('#watch-who li').length === 2`)
	if who := eval[string](b, `document.getElementById('watch-who').innerText + document.getElementById('watch-status').innerText`); strings.Contains(who, "mod-ann") || !strings.Contains(who, "val-ben") {
		t.Errorf("B's list of who is watching names the moderator: %q", who)
	}

	// A jumps to tick 3000 and plays: B follows.
	a.do("A jumps", chromedp.SetValue(chromedp.ID("jump-to"), "3000"), chromedp.Click(chromedp.CSS(`#jump button[type=submit]`)))
	b.waitFor("B at tick 3000", tickJS+` === 3000`)
	a.do("A plays", chromedp.Click(chromedp.ID("p-play")))
	b.waitFor("B plays", `document.getElementById('p-play').getAttribute('aria-pressed') === 'true'`)
	time.Sleep(1500 * time.Millisecond)
	for i := range 3 {
		a1 := eval[int](a, tickJS)
		bt := eval[int](b, tickJS)
		a2 := eval[int](a, tickJS)
		t.Logf("playing: A at %d..%d, B at %d", a1, a2, bt)
		if a1 <= 3000 || bt < a1-50 || bt > a2+50 { // 50 ticks a second
			t.Errorf("check %d: B's tick %d is not within a second of A's %d..%d", i, bt, a1, a2)
		}
		time.Sleep(400 * time.Millisecond)
	}

	// B takes the controls, pauses and jumps: A follows B.
	b.do("B takes the controls", chromedp.Click(chromedp.ID("watch-take")))
	b.waitFor("B has the controls", `document.body.dataset.watch === 'controls'`)
	a.waitFor("A follows", `document.body.dataset.watch === 'follows' && !document.getElementById('watch-take').hidden`)
	b.do("B pauses", chromedp.Click(chromedp.ID("p-play")))
	a.waitFor("A paused", `document.getElementById('p-play').getAttribute('aria-pressed') === 'false'`)
	b.do("B jumps", chromedp.SetValue(chromedp.ID("jump-to"), "1000"), chromedp.Click(chromedp.CSS(`#jump button[type=submit]`)))
	a.waitFor("A at B's tick 1000", tickJS+` === 1000`)
	b.do("B sets the speed", chromedp.SetValue(chromedp.ID("p-speed"), "2"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById('p-speed').dispatchEvent(new Event('change'))`))
	a.waitFor("A at B's speed", `document.getElementById('p-speed').value === '2'`)
	if got := eval[string](a, `document.getElementById('watch-status').textContent`); !strings.Contains(got, "Following") || strings.Contains(got, "mod-ann") {
		t.Errorf("A's status: %q", got)
	}
}
