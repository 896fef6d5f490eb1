package web_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/formats/formatstest"
)

// TestPageFixesAt1400 opens recordings of three formats in a 1400 px wide
// window: the Echo VR example's players over time list all 11 players
// (only the late joiner and the one who left have join or drop events),
// the players table and the history fit without sideways scrolling and
// the history's ids take one line, the SC2 replay shows its clan-tagged
// name as text ("<IDFI> Luneth", no markup, no element made of it), and
// its disabled clip button says why next to it.
func TestPageFixesAt1400(t *testing.T) {
	corpus := filepath.Dir(formatstest.CorpusDir(t, "teehistorian"))
	files := map[string]string{
		"butter":    filepath.Join(corpus, "butter", "reference", "butter", "example_2021-11-20.none.k300.butter"),
		"sc2replay": filepath.Join(corpus, "sc2replay", "lotv-4.7.1.70326-iaguz-vs-luneth.SC2Replay"),
	}
	s := startServer(t, files["butter"], files["sc2replay"])
	ids := map[string]string{}
	if err := s.x.List(context.Background(), func(m *archive.Manifest) error { ids[m.Format] = m.ID.String(); return nil }); err != nil {
		t.Fatal(err)
	}
	// A hold whose reason names another recording by its uuid: the
	// history shows the uuid on one line.
	other := "7cee836b-aec8-44d9-9083-94d07d88bc05"
	if _, err := s.x.Hold(context.Background(), replay.Actor{Name: "alice", Role: replay.RoleModerator}, ids["butter"], "appeal: the same match as "+other); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, 1400, 900)
	open := func(format string) {
		t.Helper()
		b.do("open "+format, chromedp.Navigate(s.asOwner(fmt.Sprintf("/r/%s", ids[format]))))
		b.waitFor("the recording page", `document.body.dataset.ready === 'recording'`)
		// the rest of the players table is filled when the browser is idle
		b.waitFor("the players table", `document.getElementById('players').tBodies[0].rows.length > 0`)
	}

	open("butter")
	players := eval[string](b, `document.getElementById('players').tBodies[0].innerText`)
	for _, name := range []string{"Loveridge-", "Hazzzah", "WhiteDragon7", "Palidore", "Cruisen", "NtsFranz", "speedy_v", "Dual-", "qlyoung", "SputnikKobra", "late_joiner"} {
		if !strings.Contains(players, name) {
			t.Errorf("players over time lack %s:\n%s", name, players)
		}
	}
	if n := eval[int](b, `document.getElementById('players').tBodies[0].rows.length`); n != 11 {
		t.Errorf("%d rows of players over time, want the 11 players:\n%s", n, players)
	}
	for _, box := range []string{"players", "audit"} {
		js := fmt.Sprintf(`(() => { const d = document.getElementById(%q).parentElement; return [d.scrollWidth, d.clientWidth]; })()`, box)
		if w := eval[[]int](b, js); w[0] > w[1] {
			t.Errorf("the %s table scrolls sideways at 1400 px: scrollWidth %d > clientWidth %d", box, w[0], w[1])
		}
	}
	// A uuid in the history is one line, shortened, whole in its title.
	ids8 := eval[[]string](b, `[...document.querySelectorAll('#audit .short-id')].map((c) => c.title + ' ' + c.textContent + ' ' + c.getClientRects().length + ' ' + Math.round(c.getBoundingClientRect().height) + ' ' + Math.round(parseFloat(getComputedStyle(c).lineHeight) || 20))`)
	if len(ids8) == 0 {
		t.Errorf("no shortened id in the history: %q", eval[string](b, `document.getElementById('audit').innerText`))
	}
	for _, c := range ids8 {
		var full, short string
		var rects, h, line int
		fmt.Sscan(c, &full, &short, &rects, &h, &line)
		if len(full) < 36 || !strings.HasPrefix(full, strings.TrimSuffix(short, "…")) || rects != 1 || h > line+4 {
			t.Errorf("history id %q: want one line (%d boxes, %d px high, line %d px) showing its start, the whole in its title", c, rects, h, line)
		}
	}

	open("sc2replay")
	meta := eval[string](b, `document.getElementById('meta').innerText`)
	if !strings.Contains(meta, "<IDFI> Luneth") || strings.Contains(meta, "&lt;") || strings.Contains(meta, "<sp/>") {
		t.Errorf("the recording's facts show the name as %q", meta)
	}
	if n := eval[int](b, `document.querySelectorAll('idfi, sp').length`); n != 0 {
		t.Errorf("the name's markup made %d elements", n)
	}
	if !eval[bool](b, `document.getElementById('dl-clip').disabled`) {
		t.Fatal("the SC2 replay's clip button is enabled")
	}
	why := eval[string](b, `(() => { const w = document.getElementById('clip-why'); return w.hidden || !w.offsetParent ? '' : w.textContent; })()`)
	if !strings.Contains(why, "cannot be cut into a clip") {
		t.Errorf("the disabled clip button says %q next to it, want why", why)
	}
}
