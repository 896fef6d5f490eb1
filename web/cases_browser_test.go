package web_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
)

// TestCasesPage, at 1400 px: a moderator flags a moment of a recording
// through the flag dialog (the selected range), sees it as a marked span
// with its name on the timeline, and clicking the name seeks there; the
// search flag:NAME opens the recording at the flag; the flag opened a
// case, listed on the recording page and in the Cases view (status,
// recording, assignee, last note); on the case's page the moderator adds
// a note, assigns it and resolves it. A viewer sees the flag's name and
// span, no note, no Cases link, no cases on the recording page, nothing
// at /?cases, and the API answers the viewer's tab 403.
func TestCasesPage(t *testing.T) {
	game := filepath.Join(t.TempDir(), "game.teehistorian")
	if err := os.WriteFile(game, teehistoriangen.Must(t, teehistoriangen.Options{Duration: 2 * time.Minute, Players: 4, Seed: 61}), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, game)
	id := onlyID(t, s)
	mod := s.token(t, "mod-mia", replay.RoleModerator)
	s.token(t, "mod-kit", replay.RoleModerator)
	viewer := s.token(t, "val", replay.RoleViewer)
	const note, caseNote = "spawn-note-41", "thread-note-42"

	b := newBrowser(t, 1400, 900)
	b.do("open the recording", chromedp.Navigate(s.url+"/r/"+id+"#login="+mod))
	b.waitFor("the recording page", `document.body.dataset.ready === 'recording'`)
	b.waitFor("the Cases link", `!document.getElementById('cases-link').hidden`)
	b.waitFor("the recording's cases", `!document.getElementById('rec-cases-panel').hidden`)
	if got := eval[string](b, `document.getElementById('rec-cases').innerText`); !strings.Contains(got, "No cases") {
		t.Errorf("a new recording's cases: %q", got)
	}

	// Select ticks 2100-2500 (0:42-0:50 at 50 ticks a second) and flag them.
	b.do("select a range",
		chromedp.SetValue(chromedp.ID("r-from"), "2100"), chromedp.SetValue(chromedp.ID("r-to"), "2500"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById('r-from').dispatchEvent(new Event('input'))`),
		chromedp.Click(chromedp.ID("do-flag")))
	b.waitFor("the flag dialog", `document.getElementById('act-dlg').open && !document.getElementById('act-range-row').hidden`)
	if label := eval[string](b, `document.getElementById('act-range-label').textContent`); !strings.Contains(label, "0:42.00–0:50.00") {
		t.Errorf("the dialog's range: %q", label)
	}
	b.do("fill the flag",
		chromedp.SendKeys(chromedp.ID("act-name"), "griefing"),
		chromedp.SendKeys(chromedp.ID("act-note"), note),
		chromedp.Click(chromedp.ID("act-range")),
		chromedp.Click(chromedp.ID("act-ok")))
	b.waitFor("the flag with its range", `!document.getElementById('act-dlg').open && document.querySelector('#flags li[data-flag=griefing] .flag-go')`)
	if got := eval[string](b, `document.querySelector('#flags li[data-flag=griefing]').innerText`); !strings.Contains(got, "0:42.00–0:50.00") || !strings.Contains(got, note) {
		t.Errorf("the moderator's flag: %q", got)
	}
	b.waitFor("the flag's case on the recording page", `document.querySelectorAll('#rec-cases li[data-case]').length === 1`)

	// The span on the timeline; a click on its name seeks there.
	spans := eval[[]map[string]any](b, `JSON.parse(document.getElementById('timeline').dataset.flagSpans || '[]')`)
	if len(spans) != 1 || spans[0]["name"] != "griefing" || spans[0]["from"] != float64(2100) || spans[0]["to"] != float64(2500) {
		t.Fatalf("flag spans on the timeline: %v", spans)
	}
	red := eval[int](b, `(() => {
		const c = document.getElementById('timeline'), g = c.getContext('2d'), r = window.devicePixelRatio || 1;
		const s = JSON.parse(c.dataset.flagSpans)[0];
		const d = g.getImageData(Math.round((s.x + 4) * r), Math.round(20 * r), 1, 1).data;
		return d[0] - d[2];
	})()`)
	if red < 40 {
		t.Errorf("the span's bar is not red on the canvas (red minus blue %d)", red)
	}
	b.do("go to the start", chromedp.Click(chromedp.ID("p-start")))
	b.waitFor("at the start", `!location.search.includes('t=2100')`)
	pt := eval[[]float64](b, `(() => { document.getElementById('timeline').scrollIntoView({ block: 'center' }); const c = document.getElementById('timeline').getBoundingClientRect(), s = JSON.parse(document.getElementById('timeline').dataset.flagSpans)[0]; return [c.left + s.x + 2, c.top + s.y]; })()`)
	b.do("click the flag's name", chromedp.MouseClickXY(pt[0], pt[1]))
	b.waitFor("the flag's moment", `location.search.includes('t=2100') && document.getElementById('r-from').value === '2100' && document.getElementById('r-to').value === '2500'`)

	// flag:griefing: the hit opens the recording at the flag.
	b.do("search the flag", chromedp.Navigate(s.url+"/?q=flag%3Agriefing"))
	b.waitFor("the hit", fmt.Sprintf(`document.querySelector('.hit[data-id=%q] h2 a')`, id))
	b.do("open the hit", chromedp.Click(chromedp.CSS(fmt.Sprintf(`.hit[data-id=%q] h2 a`, id))))
	b.waitFor("the recording at the flag", `document.body.dataset.ready === 'recording'`)
	if pos := eval[string](b, `document.getElementById('pos').textContent`); !strings.HasPrefix(pos, "Tick 2100 ") {
		t.Errorf("the hit opened the recording at %q, want tick 2100", pos)
	}

	// The Cases view: the flag's case.
	b.do("open the cases", chromedp.Click(chromedp.ID("cases-link")))
	b.waitFor("the cases", `document.body.dataset.ready === 'cases' && document.querySelectorAll('#cases-table tbody tr').length === 1`)
	row := eval[string](b, `document.querySelector('#cases-table tbody tr').innerText`)
	for _, want := range []string{"open", id[:8], "griefing", "—", "mod-mia", note} {
		if !strings.Contains(row, want) {
			t.Errorf("the case's row lacks %q: %q", want, row)
		}
	}
	b.do("open the case", chromedp.Click(chromedp.CSS(`#cases-table tbody tr a[aria-label^="Open case"]`)))
	b.waitFor("the case", `document.body.dataset.ready === 'case' && document.querySelectorAll('#case-thread li[data-note]').length === 1`)
	caseID := eval[string](b, `new URLSearchParams(location.search).get('case')`)
	b.do("add a note", chromedp.SendKeys(chromedp.ID("case-note"), caseNote), chromedp.Click(chromedp.ID("case-add-note")))
	b.waitFor("the note", `document.querySelectorAll('#case-thread li[data-note]').length === 2`)
	// docs/screenshot-case.png: go test ./web -run TestCasesPage -args -screenshot
	b.docShot("#cases-view", "screenshot-case.png")
	b.do("assign and resolve",
		chromedp.SetValue(chromedp.ID("case-status"), "resolved"),
		chromedp.SetValue(chromedp.ID("case-assignee"), "mod-kit"),
		chromedp.Click(chromedp.ID("case-save")))
	b.waitFor("resolved", `document.getElementById('case-msg').textContent === 'Saved'`)
	meta := eval[string](b, `document.getElementById('case-meta').innerText`)
	if !strings.Contains(meta, "resolved") || !strings.Contains(meta, "mod-kit") {
		t.Errorf("the case after the save: %q", meta)
	}
	b.do("assign to nobody known", chromedp.SetValue(chromedp.ID("case-assignee"), "val"), chromedp.Click(chromedp.ID("case-save")))
	b.waitFor("the refusal", `document.getElementById('case-msg').textContent.includes('bad_request')`)
	b.do("the open cases again", chromedp.Navigate(s.url+"/?cases"))
	b.waitFor("no open case", `document.body.dataset.ready === 'cases' && document.getElementById('cases-empty').textContent === 'No cases here.'`)
	listReady := eval[float64](b, `window.replayReadyAt`)
	// SetValue sends a change event; four more, at once, are a filter
	// changed faster than the server answers: the list must show the
	// last answer's rows only, not each answer's.
	b.do("every case", chromedp.SetValue(chromedp.ID("cs-status"), ""), chromedp.Evaluate[chromedp.Void](
		`for (let i = 0; i < 4; i++) document.getElementById('cs-status').dispatchEvent(new Event('change'))`))
	b.waitFor("the resolved case", `document.body.dataset.ready === 'cases' && document.querySelectorAll('#cases-table tbody tr').length === 1`)
	b.do("the case's page", chromedp.Navigate(s.url+"/?case="+caseID))
	b.waitFor("the case's page", `document.body.dataset.ready === 'case' && document.querySelectorAll('#case-thread li[data-note]').length === 2`)
	t.Logf("ready after navigation: the cases list %.0f ms, a case's page %.0f ms", listReady, eval[float64](b, `window.replayReadyAt`))

	// A viewer, in a fresh browser.
	v := newBrowser(t, 1400, 900)
	v.do("open the recording as a viewer", chromedp.Navigate(s.url+"/r/"+id+"#login="+viewer))
	v.waitFor("the recording page", `document.body.dataset.ready === 'recording'`)
	time.Sleep(300 * time.Millisecond) // the cases would come once the page is idle
	if eval[bool](v, `!document.getElementById('cases-link').hidden || !document.getElementById('rec-cases-panel').hidden`) {
		t.Errorf("a viewer sees the Cases link or the recording's cases")
	}
	if got := eval[string](v, `document.querySelector('#flags li[data-flag=griefing]').innerText`); !strings.Contains(got, "0:42.00–0:50.00") || strings.Contains(got, note) {
		t.Errorf("the viewer's flag: %q", got)
	}
	if n := eval[int](v, `JSON.parse(document.getElementById('timeline').dataset.flagSpans || '[]').length`); n != 1 {
		t.Errorf("the viewer's timeline shows %d flag spans", n)
	}
	v.do("the cases as a viewer", chromedp.Navigate(s.url+"/?cases"))
	v.waitFor("the cases view", `document.body.dataset.ready === 'cases'`)
	if eval[int](v, `document.querySelectorAll('#cases-table tbody tr').length`) != 0 || !eval[bool](v, `document.getElementById('cases-list-box').hidden`) {
		t.Errorf("a viewer sees a list of cases")
	}
	status, err := chromedp.Run(v.ctx, chromedp.Evaluate[float64](`(async () => (await fetch('/api/v1/cases', { headers: { Authorization: 'Bearer ' + sessionStorage.getItem('replay.token') } })).status)()`, chromedp.EvalAwaitPromise))
	if err != nil || status != 403 {
		t.Errorf("the viewer's GET /api/v1/cases: %v %v, want 403", status, err)
	}
	body := eval[string](v, `document.body.innerText`)
	for _, secret := range []string{note, caseNote, "mod-mia", "mod-kit"} {
		if strings.Contains(body, secret) {
			t.Errorf("the viewer's page shows %q", secret)
		}
	}
}
