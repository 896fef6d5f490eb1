package web_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/formats/formatstest"
)

// TestScoreboardPanel opens an Echo VR match (the reference writer's
// .butter of the frames derived from the real 2021 frame) and an SC2 2v2
// (Magma Mines) at 1400 px and reads the scoreboard's rows: Echo VR's 11
// players with their stats (NtsFranz's 41 stuns at the last frame, as in
// the frames; late_joiner ensures the 11 rows) and
// the teams' totals; SC2's results, races and APM, BiC and DakotaFannin
// winning (s2prot's README). With -args -screenshot it writes
// docs/screenshot-scoreboard-echovr.png and docs/screenshot-sc2.png.
func TestScoreboardPanel(t *testing.T) {
	corpus := filepath.Dir(formatstest.CorpusDir(t, "teehistorian"))
	files := map[string]string{
		"butter":    filepath.Join(corpus, "butter", "reference", "butter", "example_2021-11-20.none.k300.butter"),
		"sc2replay": filepath.Join(corpus, "sc2replay", "lotv-3.2.2.42253-magma-mines-2v2.SC2Replay"),
	}
	s := startServer(t, files["butter"], files["sc2replay"])
	ids := map[string]string{}
	if err := s.x.List(context.Background(), func(m *archive.Manifest) error { ids[m.Format] = m.ID.String(); return nil }); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, 1400, 900)
	rows := func(format string) []string {
		t.Helper()
		b.do("open "+format, chromedp.Navigate(s.asOwner(fmt.Sprintf("/r/%s", ids[format]))))
		b.waitFor("the recording page", `document.body.dataset.ready === 'recording'`)
		b.waitFor("the scoreboard", `(() => { const s = document.getElementById('scoreboard'); return s && s.dataset.ready && s.dataset.ready !== 'error' && !s.hidden; })()`)
		return eval[[]string](b, `[...document.querySelectorAll('#sb-table tbody tr, #sb-table tfoot tr')].map((r) => [...r.cells].map((c) => c.textContent).join('|'))`)
	}
	shot := func(name string) {
		t.Helper()
		b.do("scroll to the scoreboard", chromedp.ScrollIntoView(chromedp.ID("scoreboard")))
		ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
		defer cancel()
		png, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.ID("scoreboard")))
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(t.TempDir(), name)
		if *writeScreenshot {
			out = filepath.Join(formatstest.ModuleRoot(t), "docs", name)
		}
		if err := os.WriteFile(out, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s (%d bytes)", out, len(png))
	}
	heads := func() string {
		return eval[string](b, `[...document.querySelectorAll('#sb-table thead th')].map((c) => c.textContent).join('|')`)
	}

	echo := rows("butter")
	if h := heads(); h != "Player|Team|Result|Points|Goals|Assists|Saves|Stuns|Steals|Shots|Possession" {
		t.Errorf("Echo VR columns %q", h)
	}
	if len(echo) != 13 {
		t.Errorf("%d Echo VR rows, want 11 players and 2 teams: %q", len(echo), echo)
	}
	var franz string
	for _, r := range echo {
		if strings.HasPrefix(r, "NtsFranz|") {
			franz = r
		}
	}
	// points 6, goals 0, assists 2, saves 2, stuns 41 in the last frame
	// of the reference reader's decoding
	if !strings.HasPrefix(franz, "NtsFranz|orange||") || !strings.Contains(franz, "|41|") {
		t.Errorf("NtsFranz's row %q", franz)
	}
	if !strings.HasPrefix(echo[11], "blue|blue|") || !strings.HasPrefix(echo[12], "orange|orange|") {
		t.Errorf("team rows %q", echo[11:])
	}
	if w := eval[[]int](b, `(() => { const d = document.getElementById('sb-table').parentElement; return [d.scrollWidth, d.clientWidth]; })()`); w[0] > w[1] {
		t.Errorf("the scoreboard scrolls sideways at 1400 px: %d > %d", w[0], w[1])
	}
	shot("screenshot-scoreboard-echovr.png")

	sc2 := rows("sc2replay")
	if h := heads(); h != "Player|Team|Result|Race|APM|Actions" {
		t.Errorf("SC2 columns %q", h)
	}
	want := []string{"IMBarabba|1|loss|Protoss|", "Nova|1|loss|Terran|", "BiC|2|win|Terran|", "DakotaFannin|2|win|Protoss|", "team 1|1|loss|", "team 2|2|win|"}
	if len(sc2) != len(want) {
		t.Fatalf("SC2 rows %q", sc2)
	}
	for i, w := range want {
		if !strings.HasPrefix(sc2[i], w) {
			t.Errorf("SC2 row %d %q, want %q…", i, sc2[i], w)
		}
	}
	shot("screenshot-sc2.png")
}
