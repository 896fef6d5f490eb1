package web_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/formats/formatstest"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
	"github.com/replayarchive/replay/server"
	"github.com/replayarchive/replay/web"
)

// dropFile is a file the test drops on the page: its name and bytes.
type dropFile struct {
	Name string `json:"name"`
	B64  string `json:"b64"`
}

// drop dispatches dragenter, dragover and drop events on the page's main
// element with a DataTransfer holding files (built in the page from the
// bytes the test gives), as a drag from the desktop does. It reports
// whether the drop zone was shown during the drag.
func (b *browser) drop(files ...dropFile) bool {
	b.t.Helper()
	js, err := json.Marshal(files)
	if err != nil {
		b.t.Fatal(err)
	}
	return eval[bool](b, fmt.Sprintf(`(() => {
		const dt = new DataTransfer();
		for (const f of %s) {
			const bin = atob(f.b64), u = new Uint8Array(bin.length);
			for (let i = 0; i < bin.length; i++) u[i] = bin.charCodeAt(i);
			dt.items.add(new File([u], f.name, { type: 'application/octet-stream' }));
		}
		const t = document.getElementById('main');
		const fire = (type) => t.dispatchEvent(new DragEvent(type, { dataTransfer: dt, bubbles: true, cancelable: true }));
		fire('dragenter');
		fire('dragover');
		const shown = !document.getElementById('drop-zone').hidden;
		fire('drop');
		return shown;
	})()`, js))
}

// evalAwait evaluates a JavaScript expression whose value is a promise,
// and returns what it resolves to.
func evalAwait[T any](b *browser, js string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

func fileOf(name string, data []byte) dropFile {
	return dropFile{Name: name, B64: base64.StdEncoding.EncodeToString(data)}
}

// uploadRow waits for the upload row of name to have an outcome, and
// returns the outcome and the row's text.
func (b *browser) uploadRow(name, outcome string) string {
	b.t.Helper()
	sel := fmt.Sprintf(`Array.from(document.querySelectorAll('#up-list li')).find(li => li.dataset.name === %q && li.dataset.outcome !== 'waiting')`, name)
	b.waitFor("the outcome of "+name, sel)
	got := eval[string](b, sel+`.dataset.outcome`)
	text := eval[string](b, sel+`.innerText`)
	if got != outcome {
		b.t.Errorf("upload of %s: outcome %q (%s), want %q", name, got, text, outcome)
	}
	return text
}

// TestUploadFromPage, at 1400 px, as the owner (admin): two generated
// teehistorian files dropped on the page at once are uploaded with a
// progress bar each and said to be archived as their ids, with links;
// the same file again is "already archived"; a taken-down file is
// "taken down"; a file that is no recording shows the server's message.
// A file name with markup in it is shown as text.
func TestUploadFromPage(t *testing.T) {
	a := teehistoriangen.Must(t, teehistoriangen.Options{Duration: 2 * time.Minute, Players: 4, Seed: 71})
	bb := teehistoriangen.Must(t, teehistoriangen.Options{Duration: 90 * time.Second, Players: 3, Seed: 72})
	const hostile = `<img src=x id=pwn onerror="document.title='pwned'">.teehistorian`
	s := startServer(t)
	b := newBrowser(t, 1400, 900)
	b.do("open the page", chromedp.Navigate(s.asOwner("/")))
	b.waitFor("the search", `document.body.dataset.ready === 'search'`)
	b.waitFor("the Upload button", `!document.getElementById('upload-pick').hidden`)

	if !b.drop(fileOf("game-a.teehistorian", a), fileOf(hostile, bb)) {
		t.Error("the drop zone was not shown while files were dragged over the page")
	}
	if eval[bool](b, `!document.getElementById('drop-zone').hidden`) {
		t.Error("the drop zone stays after the drop")
	}
	textA := b.uploadRow("game-a.teehistorian", "archived")
	textB := b.uploadRow(hostile, "archived")
	ids := map[string]string{}
	err := s.x.List(context.Background(), func(m *archive.Manifest) error { ids[m.SourceName] = m.ID.String(); return nil })
	if err != nil {
		t.Fatal(err)
	}
	idA, idB := ids["game-a.teehistorian"], ids[hostile]
	if idA == "" || idB == "" {
		t.Fatalf("the archive after the drop: %v", ids)
	}
	if !strings.Contains(textA, "Archived as "+idA) || !strings.Contains(textB, "Archived as "+idB) {
		t.Errorf("the rows say %q and %q, want archived as %s and %s", textA, textB, idA, idB)
	}
	for name, size := range map[string]int{"game-a.teehistorian": len(a), hostile: len(bb)} {
		row := fmt.Sprintf(`Array.from(document.querySelectorAll('#up-list li')).find(li => li.dataset.name === %q)`, name)
		got := eval[[]float64](b, `(() => { const li = `+row+`, p = li.querySelector('progress'); return [p.value, p.max, +li.dataset.progressEvents, +(li.dataset.loaded || 0)]; })()`)
		if got[0] != float64(size) || got[1] != float64(size) || got[2] < 1 || got[3] != float64(size) {
			t.Errorf("%s (%d bytes): progress value %v of %v, %v progress events, last loaded %v", name, size, got[0], got[1], got[2], got[3])
		}
		t.Logf("%s: %d bytes, %v upload progress events", name, size, got[2])
	}
	if eval[bool](b, `!!document.getElementById('pwn') || document.title === 'pwned'`) {
		t.Error("a file name's markup became an element")
	}
	if href := eval[string](b, fmt.Sprintf(`document.querySelector('#up-list li[data-id=%q] a').getAttribute('href')`, idA)); href != "/r/"+idA {
		t.Errorf("the archived link goes to %q", href)
	}

	// The same bytes again, sent at 40 KB/s: the bar moves while they go.
	throttle := func(bps float64) {
		ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
		defer cancel()
		_, err := chromedp.Call(ctx, network.EmulateNetworkConditionsByRule, network.EmulateNetworkConditionsByRuleParams{
			MatchedNetworkConditions: []*network.Conditions{{UploadThroughput: bps, DownloadThroughput: -1}},
		})
		if err != nil {
			t.Fatalf("throttle the uploads: %v", err)
		}
	}
	throttle(40000)
	b.drop(fileOf("game-a-again.teehistorian", a))
	b.waitFor("the bar part way", `Array.from(document.querySelectorAll('#up-list li')).some(li => li.dataset.name === 'game-a-again.teehistorian' && li.dataset.partial)`)
	mid := eval[[]float64](b, `(() => { const p = document.querySelector('#up-list li[data-name="game-a-again.teehistorian"] progress'); return [p.value, p.max]; })()`)
	if text := b.uploadRow("game-a-again.teehistorian", "duplicate"); !strings.Contains(text, "Already archived as "+idA) {
		t.Errorf("a second upload says %q", text)
	}
	events := eval[int](b, `+document.querySelector('#up-list li[data-name="game-a-again.teehistorian"]').dataset.progressEvents`)
	t.Logf("at 40 KB/s: the bar at %v of %v bytes on the way, %d progress events", mid[0], mid[1], events)
	throttle(-1)
	// A taken-down recording's bytes.
	if _, _, err := s.x.Takedown(context.Background(), replay.Actor{Name: "test", Role: replay.RoleModerator}, idB, "DMCA notice 7", time.Hour); err != nil {
		t.Fatal(err)
	}
	b.drop(fileOf("game-b-again.teehistorian", bb))
	if text := b.uploadRow("game-b-again.teehistorian", "taken_down"); !strings.Contains(text, "Taken down: this recording may not be archived again") || !strings.Contains(text, "DMCA notice 7") {
		t.Errorf("a taken-down file's upload says %q", text)
	}
	// The takedowns page shows the file's name as text too.
	b.do("open the takedowns", chromedp.Click(chromedp.ID("admin-link"))) // in the page: the uploads stay listed
	b.waitFor("the takedown", fmt.Sprintf(`document.body.dataset.ready === 'admin-takedowns' && document.querySelector('#td-table tr[data-id=%q]')`, idB))
	if row := eval[string](b, fmt.Sprintf(`document.querySelector('#td-table tr[data-id=%q]').innerText`, idB)); !strings.Contains(row, hostile) {
		t.Errorf("the takedown's row %q does not name %q", row, hostile)
	}
	if eval[bool](b, `!!document.getElementById('pwn') || document.title === 'pwned'`) {
		t.Error("a taken-down file name's markup became an element")
	}
	// Not a recording: the server's message (422 bad_input).
	b.drop(fileOf("notes.txt", []byte("these are not the bytes of a recording\n")))
	if text := b.uploadRow("notes.txt", "error"); !strings.Contains(text, "Refused (422") {
		t.Errorf("a text file's upload says %q", text)
	}

	// The link opens the recording's page.
	b.do("open the archived recording", chromedp.Click(chromedp.CSS(fmt.Sprintf(`#up-list li[data-id=%q] a`, idA))))
	b.waitFor("the recording page", `document.body.dataset.ready === 'recording'`)
	if p := eval[string](b, `location.pathname`); p != "/r/"+idA {
		t.Errorf("the link opened %q", p)
	}
}

// TestAdminPages, at 1400 px, as the owner (admin): create a token (shown
// once, it works), revoke it (it stops working); undo a takedown within
// its grace period and lift a purged one; set a retention policy through
// the form, run a prune dry run whose numbers are the API's, and prune.
// With -args -screenshot it writes docs/screenshot-admin.png (the
// retention page after the dry run).
func TestAdminPages(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for i, start := range []string{"2020-03-01T20:00:00Z", "2021-06-01T20:00:00Z", "2026-01-01T12:00:00Z", "2026-02-01T12:00:00Z"} {
		at, _ := time.Parse(time.RFC3339, start)
		p := filepath.Join(dir, fmt.Sprintf("game-%d.teehistorian", i))
		data := teehistoriangen.Must(t, teehistoriangen.Options{Duration: time.Minute, Players: 3, Seed: uint64(80 + i), Start: at})
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	s := startServer(t, paths...)
	ids := map[string]string{}
	if err := s.x.List(context.Background(), func(m *archive.Manifest) error { ids[m.SourceName] = m.ID.String(); return nil }); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, 1400, 900)
	b.do("open the page", chromedp.Navigate(s.asOwner("/")))
	b.waitFor("the Admin link", `!document.getElementById('admin-link').hidden`)
	b.do("open Admin", chromedp.Click(chromedp.ID("admin-link")))
	b.waitFor("the takedowns page", `document.body.dataset.ready === 'admin-takedowns'`)

	// Tokens: create one, shown once.
	b.do("open Tokens", chromedp.Click(chromedp.ID("adm-tab-tokens")))
	b.waitFor("the tokens page", `document.body.dataset.ready === 'admin-tokens' && !document.getElementById('adm-tokens').hidden`)
	b.do("create a token",
		chromedp.SendKeys(chromedp.ID("tok-name"), "ci-bot"),
		chromedp.SetValue(chromedp.ID("tok-role"), "moderator"),
		chromedp.Click(chromedp.ID("tok-create")))
	b.waitFor("the confirmation", `document.getElementById('adm-dlg').open`)
	b.do("confirm", chromedp.Click(chromedp.ID("adm-ok")))
	b.waitFor("the new token", `!document.getElementById('tok-new').hidden && document.getElementById('tok-secret').value !== '' && !document.getElementById('adm-dlg').open`)
	secret := eval[string](b, `document.getElementById('tok-secret').value`)
	if who := eval[string](b, `document.getElementById('tok-new-who').textContent`); who != "ci-bot (moderator)" {
		t.Errorf("the new token is said to be %q", who)
	}
	if warn := eval[string](b, `document.getElementById('tok-new').innerText`); !strings.Contains(warn, "shown only this once") {
		t.Errorf("no warning with the new token: %q", warn)
	}
	who := func(tok string) string {
		return evalAwait[string](b, fmt.Sprintf(`fetch('/api/v1/whoami', { headers: { Authorization: 'Bearer ' + %q } }).then(r => r.ok ? r.json().then(j => j.name + ' ' + j.role) : String(r.status))`, tok))
	}
	if got := who(secret); got != "ci-bot moderator" {
		t.Errorf("the shown token signs in as %q", got)
	}
	b.waitFor("the token listed", `document.querySelector('#tok-table tr[data-name="ci-bot"]')`)
	if row := eval[string](b, `document.querySelector('#tok-table tr[data-name="ci-bot"]').innerText`); !strings.Contains(row, "moderator") {
		t.Errorf("the token's row: %q", row)
	}
	b.do("copy", chromedp.Click(chromedp.ID("tok-copy")))
	b.waitFor("copied", `document.getElementById('tok-copy-msg').textContent !== ''`)
	t.Logf("copy button: %q", eval[string](b, `document.getElementById('tok-copy-msg').textContent`))
	// Once away from the page, the secret is nowhere in it.
	b.do("open Takedowns", chromedp.Click(chromedp.ID("adm-tab-takedowns")))
	b.waitFor("the takedowns page", `document.body.dataset.ready === 'admin-takedowns'`)
	b.do("back to Tokens", chromedp.Click(chromedp.ID("adm-tab-tokens")))
	b.waitFor("the tokens page", `document.body.dataset.ready === 'admin-tokens' && document.querySelector('#tok-table tr[data-name="ci-bot"]')`)
	if eval[bool](b, fmt.Sprintf(`document.documentElement.outerHTML.includes(%q) || document.getElementById('tok-secret').value !== '' || !document.getElementById('tok-new').hidden`, secret)) {
		t.Error("the token is shown again after leaving the page")
	}
	b.do("revoke", chromedp.Click(chromedp.CSS(`#tok-table tr[data-name="ci-bot"] .tok-revoke`)))
	b.waitFor("the confirmation", `document.getElementById('adm-dlg').open`)
	b.do("confirm", chromedp.Click(chromedp.ID("adm-ok")))
	b.waitFor("revoked", `!document.getElementById('adm-dlg').open && !document.querySelector('#tok-table tr[data-name="ci-bot"]')`)
	if got := who(secret); got != "401" {
		t.Errorf("the revoked token signs in as %q", got)
	}

	// Takedowns: undo one within its grace period.
	mod := replay.Actor{Name: "mod-mia", Role: replay.RoleModerator}
	pending := ids["game-3.teehistorian"]
	if _, _, err := s.x.Takedown(context.Background(), mod, pending, "report 12", 7*24*time.Hour); err != nil {
		t.Fatal(err)
	}
	b.do("open Takedowns", chromedp.Click(chromedp.ID("adm-tab-takedowns")))
	b.waitFor("the pending takedown", fmt.Sprintf(`document.body.dataset.ready === 'admin-takedowns' && document.querySelector('#td-table tr[data-id=%q]')`, pending))
	row := eval[string](b, fmt.Sprintf(`document.querySelector('#td-table tr[data-id=%q]').innerText`, pending))
	for _, want := range []string{"game-3.teehistorian", "mod-mia", "report 12", "6d 23h left"} {
		if !strings.Contains(row, want) {
			t.Errorf("the takedown's row %q lacks %q", row, want)
		}
	}
	b.do("undo", chromedp.Click(chromedp.CSS(fmt.Sprintf(`#td-table tr[data-id=%q] .td-undo`, pending))))
	b.waitFor("the confirmation", `document.getElementById('adm-dlg').open`)
	b.do("confirm", chromedp.SendKeys(chromedp.ID("adm-reason"), "reviewed: fine"), chromedp.Click(chromedp.ID("adm-ok")))
	b.waitFor("restored", fmt.Sprintf(`!document.getElementById('adm-dlg').open && !document.querySelector('#td-table tr[data-id=%q]') && document.getElementById('td-msg').textContent.startsWith('Restored')`, pending))
	if _, err := s.x.Manifest(pending); err != nil {
		t.Errorf("the undone takedown's recording: %v", err)
	}
	// Lift a purged one (grace 0: purged at once).
	purged := ids["game-2.teehistorian"]
	if _, _, err := s.x.Takedown(context.Background(), mod, purged, "spam", 0); err != nil {
		t.Fatal(err)
	}
	b.do("reload Takedowns", chromedp.Navigate(s.url+"/?admin=takedowns"))
	b.waitFor("the purged takedown", fmt.Sprintf(`document.body.dataset.ready === 'admin-takedowns' && document.querySelector('#td-table tr[data-id=%q][data-state=purged] .td-lift')`, purged))
	b.do("lift", chromedp.Click(chromedp.CSS(fmt.Sprintf(`#td-table tr[data-id=%q] .td-lift`, purged))))
	b.waitFor("the confirmation", `document.getElementById('adm-dlg').open`)
	b.do("confirm", chromedp.Click(chromedp.ID("adm-ok")))
	b.waitFor("lifted", fmt.Sprintf(`!document.getElementById('adm-dlg').open && !document.querySelector('#td-table tr[data-id=%q]')`, purged))
	if ts, err := s.x.Takedowns(); err != nil || len(ts) != 0 {
		t.Errorf("takedowns after the undo and the lift: %v, %v", ts, err)
	}

	// Retention: set a policy, dry run, prune.
	b.do("open Retention", chromedp.Click(chromedp.ID("adm-tab-retention")))
	b.waitFor("the retention page", `document.body.dataset.ready === 'admin-retention' && document.querySelector('#ret-formats input[value=teehistorian]')`)
	if got := eval[string](b, `document.getElementById('ret-text').textContent`); got != "no retention policy" {
		t.Errorf("the policy before: %q", got)
	}
	b.do("set a policy",
		chromedp.SendKeys(chromedp.ID("ret-age"), "2y"),
		chromedp.SendKeys(chromedp.ID("ret-size"), "10"),
		chromedp.SetValue(chromedp.ID("ret-unit"), "1073741824"),
		chromedp.Click(chromedp.CSS(`#ret-formats input[value=teehistorian]`)),
		chromedp.Click(chromedp.ID("ret-save")))
	b.waitFor("the confirmation", `document.getElementById('adm-dlg').open`)
	b.do("confirm", chromedp.Click(chromedp.ID("adm-ok")))
	b.waitFor("saved", `!document.getElementById('adm-dlg').open && document.getElementById('ret-msg').textContent === 'Saved.'`)
	pol, err := s.x.Policy()
	if err != nil || pol == nil || pol.MaxAge != 2*365*24*time.Hour || pol.MaxBytes != 10<<30 || !slices.Equal(pol.Formats, []string{"teehistorian"}) {
		t.Fatalf("the stored policy: %+v, %v", pol, err)
	}
	t.Logf("the policy in words: %q", eval[string](b, `document.getElementById('ret-text').textContent`))

	b.do("dry run", chromedp.Click(chromedp.ID("pr-dry")))
	b.waitFor("the dry run", `document.getElementById('pr-summary').dataset.dryRun === 'true'`)
	var api struct {
		Plan struct {
			Remove []struct {
				ID string `json:"id"`
			} `json:"remove"`
			StoredBytes     int64 `json:"stored_bytes"`
			EstimatedReturn int64 `json:"estimated_return_bytes"`
		} `json:"plan"`
	}
	s.postJSON(t, "/api/v1/prune", `{}`, &api)
	page := eval[map[string]string](b, `Object.assign({}, document.getElementById('pr-summary').dataset)`)
	rows := eval[[]string](b, `Array.from(document.querySelectorAll('#pr-table tbody tr'), r => r.dataset.id)`)
	var want []string
	for _, c := range api.Plan.Remove {
		want = append(want, c.ID)
	}
	if page["count"] != fmt.Sprint(len(want)) || page["storedBytes"] != fmt.Sprint(api.Plan.StoredBytes) || page["returnBytes"] != fmt.Sprint(api.Plan.EstimatedReturn) || !slices.Equal(rows, want) {
		t.Errorf("the page's dry run %v (rows %v) is not the API's: %d recordings %v, %d stored bytes, %d back", page, rows, len(want), want, api.Plan.StoredBytes, api.Plan.EstimatedReturn)
	}
	if len(want) != 2 || !slices.Contains(want, ids["game-0.teehistorian"]) || !slices.Contains(want, ids["game-1.teehistorian"]) {
		t.Errorf("the dry run would remove %v, want the 2020 and 2021 games", want)
	}
	summary := eval[string](b, `document.getElementById('pr-summary').textContent`)
	t.Logf("dry run: %s", summary)
	out := filepath.Join(t.TempDir(), "screenshot-admin.png")
	if *writeScreenshot {
		out = filepath.Join(formatstest.ModuleRoot(t), "docs", "screenshot-admin.png")
	}
	png := b.screenshot(out)
	t.Logf("wrote %s (%d bytes)", out, len(png))

	b.do("prune now", chromedp.Click(chromedp.ID("pr-now")))
	b.waitFor("the confirmation", `document.getElementById('adm-dlg').open`)
	b.do("confirm", chromedp.Click(chromedp.ID("adm-ok")))
	b.waitFor("pruned", `!document.getElementById('adm-dlg').open && document.getElementById('pr-summary').dataset.dryRun === 'false'`)
	if got := eval[string](b, `document.getElementById('pr-summary').textContent`); !strings.HasPrefix(got, "Pruned: 2 recordings removed") {
		t.Errorf("after the prune: %q", got)
	}
	left := 0
	s.x.List(context.Background(), func(m *archive.Manifest) error { left++; return nil })
	if left != 1 { // game-3: game-2 was taken down and purged
		t.Errorf("%d recordings left after the prune, want 1", left)
	}
}

// postJSON posts body to the server as the owner and decodes the answer.
func (s *testServer) postJSON(t *testing.T, path, body string, v any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.url+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+s.secret)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var buf bytes.Buffer
	buf.ReadFrom(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %s %s", path, res.Status, buf.String())
	}
	if err := json.Unmarshal(buf.Bytes(), v); err != nil {
		t.Fatal(err)
	}
}

// TestAdminPagesRefused: a viewer and a moderator see no Admin link,
// /?admin shows nothing and asks the API nothing of the admin pages, and
// the admin API answers their tab 403; a viewer also sees no Upload
// button, a file dropped on its page is not uploaded, and the upload
// answers it 403 (a moderator may upload: TestUploadFromPage).
func TestAdminPagesRefused(t *testing.T) {
	s := startServer(t)
	game := teehistoriangen.Must(t, teehistoriangen.Options{Duration: time.Minute, Players: 2, Seed: 90})
	b := newBrowser(t, 1400, 900)
	roles := []replay.Role{replay.RoleViewer, replay.RoleModerator}
	toks := map[replay.Role]string{}
	for _, role := range roles {
		toks[role] = s.token(t, "user-"+role.String(), role)
	}
	for _, role := range roles {
		name, tok := "user-"+role.String(), toks[role]
		t.Run(role.String(), func(t *testing.T) {
			b.t = t
			// Through another document: a change of the fragment alone
			// would not load the page again.
			b.do("open the blank page", chromedp.Navigate(s.url+"/blank"))
			b.do("open the page", chromedp.Navigate(s.url+"/?admin=tokens#login="+tok))
			b.waitFor("signed in", fmt.Sprintf(`document.getElementById('who').textContent === %q`, name+" ("+role.String()+")"))
			b.waitFor("the admin page refused", `document.body.dataset.ready === 'admin-tokens'`)
			if eval[bool](b, `!document.getElementById('admin-link').hidden`) {
				t.Error("an Admin link is shown")
			}
			if up := !eval[bool](b, `document.getElementById('upload-pick').hidden`); up != (role == replay.RoleModerator) {
				t.Errorf("the Upload button shown: %v", up)
			}
			if eval[bool](b, `['adm-tokens', 'adm-takedowns', 'adm-retention'].some(id => !document.getElementById(id).hidden)`) {
				t.Error("an admin panel is shown")
			}
			if n := eval[string](b, `document.getElementById('notice').textContent`); !strings.Contains(n, "for admins") {
				t.Errorf("the notice says %q", n)
			}
			asked := eval[[]string](b, `performance.getEntriesByType('resource').map(e => new URL(e.name).pathname).filter(p => /\/api\/v1\/(tokens|takedowns|retention|prune|formats)/.test(p))`)
			if len(asked) > 0 {
				t.Errorf("the page asked the API %v", asked)
			}
			if role == replay.RoleViewer {
				b.drop(fileOf("game.teehistorian", game))
				time.Sleep(300 * time.Millisecond)
				if eval[bool](b, `!document.getElementById('uploads').hidden || document.querySelectorAll('#up-list li').length > 0`) {
					t.Error("a dropped file was taken for upload")
				}
			}
			statuses := evalAwait[string](b, fmt.Sprintf(`(async () => {
				const h = { Authorization: 'Bearer ' + %q, 'Content-Type': 'application/json' };
				const calls = [
					['GET', '/api/v1/tokens'], ['POST', '/api/v1/tokens', '{"name":"x","role":"admin"}'],
					['PUT', '/api/v1/retention', '{"max_age":"1d"}'], ['POST', '/api/v1/prune', '{}'],
					['DELETE', '/api/v1/takedowns/00000000'],
				];
				const out = [];
				for (const [method, path, body] of calls) out.push(method + ' ' + path + ' ' + (await fetch(path, { method, headers: h, body })).status);
				const up = await fetch('/api/v1/recordings?name=g.teehistorian', { method: 'POST', headers: { Authorization: 'Bearer ' + %q, 'Content-Type': 'application/octet-stream' }, body: new Uint8Array([1, 2, 3]) });
				out.push('POST /api/v1/recordings ' + up.status);
				return out.join('\n');
			})()`, tok, tok))
			for _, line := range strings.Split(statuses, "\n") {
				want := " 403"
				if role == replay.RoleModerator && strings.HasPrefix(line, "POST /api/v1/recordings ") {
					want = " 422" // taken, and refused as no recording
				}
				if !strings.HasSuffix(line, want) {
					t.Errorf("as a %s: %s, want%s", role, line, want)
				}
			}
			if ts, _ := s.x.Tokens(); len(ts) != 2 {
				t.Errorf("%d tokens after the refused calls", len(ts))
			}
		})
	}
}

// TestUploadTooLarge: a server whose upload limit is 20,000 bytes
// answers a larger file 413 before reading it; the page says "too large"
// with the limit, for a file just over it and for one of 4 MiB (whose
// body the server leaves unread).
func TestUploadTooLarge(t *testing.T) {
	x, err := replay.Open(filepath.Join(t.TempDir(), "archive"), replay.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	secret := replay.NewSecret()
	srv := server.New(x, server.Config{Web: web.Handler(), LocalSecret: secret, MaxUpload: 20000})
	ctx, cancel := context.WithCancel(context.Background())
	urls, done := make(chan string, 1), make(chan error, 1)
	go func() {
		done <- srv.ListenAndServe(ctx, "127.0.0.1:0", "", "", 5*time.Second, func(u string) { urls <- u })
	}()
	var u string
	select {
	case u = <-urls:
	case err := <-done:
		t.Fatalf("serve: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not start in 10 s")
	}
	t.Cleanup(func() { cancel(); <-done; x.Close() })

	game := teehistoriangen.Must(t, teehistoriangen.Options{Duration: time.Minute, Players: 3, Seed: 95})
	big := bytes.Repeat(game, 4<<20/len(game)+1)
	b := newBrowser(t, 1400, 900)
	b.do("open the page", chromedp.Navigate(u+"/#login="+secret))
	b.waitFor("the Upload button", `document.body.dataset.ready === 'search' && !document.getElementById('upload-pick').hidden`)
	b.drop(fileOf("over.teehistorian", game), fileOf("big.teehistorian", big))
	for _, name := range []string{"over.teehistorian", "big.teehistorian"} {
		if text := b.uploadRow(name, "too_large"); !strings.Contains(text, "Too large (limit 19.5 KiB)") {
			t.Errorf("%s: %q", name, text)
		}
	}
}
