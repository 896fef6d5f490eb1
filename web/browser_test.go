package web_test

// Browser tests: a real server (package server over a temporary archive)
// on 127.0.0.1:0 with this package's page, driven through Debian's
// Chromium by chromedp. Locally they skip when no Chromium is found; with
// CI set they fail instead.

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/formats/formatstest"
	"github.com/replayarchive/replay/formats/teehistorian"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
	"github.com/replayarchive/replay/internal/ownerauth"
	"github.com/replayarchive/replay/server"
	"github.com/replayarchive/replay/web"
)

// chromiumPath finds Chromium ($CHROMIUM, then chromium on PATH, then
// /usr/bin/chromium); without one the test skips, or fails under CI.
func chromiumPath(t testing.TB) string {
	t.Helper()
	cands := []string{os.Getenv("CHROMIUM"), "chromium", "chromium-browser", "/usr/bin/chromium"}
	for _, c := range cands {
		if c == "" {
			continue
		}
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no Chromium found (CI is set, so the browser tests fail instead of skipping; install the chromium package)")
	}
	t.Skip("no Chromium found (install Debian's chromium, or set $CHROMIUM)")
	return ""
}

// browser is one headless Chromium with a fresh profile and one tab.
type browser struct {
	t   testing.TB
	ctx context.Context
	// downloads is where the tab's downloads land, each under its GUID.
	downloads string
	// finished receives each download Chromium reports completed or
	// canceled; the file only holds all its bytes once it is reported.
	finished chan finishedDownload
}

// finishedDownload is one download Chromium has reported done.
type finishedDownload struct {
	name  string // the name the server suggested
	path  string // where Chromium wrote it
	state cdpbrowser.DownloadProgressState
}

// newBrowser starts Chromium with a window of w×h CSS pixels and any extra
// options. It is closed when the test ends.
func newBrowser(t testing.TB, w, h int, extra ...chromedp.ExecAllocatorOption) *browser {
	t.Helper()
	exe := chromiumPath(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(w, h),
	}
	opts = append(opts, extra...)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
	})
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start Chromium %s: %v", exe, err)
	}
	b := &browser{t: t, ctx: ctx, downloads: t.TempDir(), finished: make(chan finishedDownload, 16)}
	// A file appears under its final name before its bytes do, so the
	// tests wait for Chromium's own word that a download is complete.
	names := map[string]string{} // GUID → suggested name; used only by the listener
	err := chromedp.ListenBrowser(ctx, func(ev any) {
		switch ev := ev.(type) {
		case *cdpbrowser.EventDownloadWillBegin:
			names[ev.GUID] = ev.SuggestedFilename
		case *cdpbrowser.EventDownloadProgress:
			if ev.State == cdpbrowser.DownloadProgressStateInProgress {
				return
			}
			select {
			case b.finished <- finishedDownload{name: names[ev.GUID], path: filepath.Join(b.downloads, ev.GUID), state: ev.State}:
			default:
				t.Errorf("download %s (%s) finished with nobody waiting for it", names[ev.GUID], ev.State)
			}
		}
	})
	if err != nil {
		t.Fatalf("listen for downloads: %v", err)
	}
	_, err = chromedp.CallBrowser(ctx, cdpbrowser.SetDownloadBehavior, cdpbrowser.SetDownloadBehaviorParams{
		Behavior:      cdpbrowser.SetDownloadBehaviorBehaviorAllowAndName,
		DownloadPath:  b.downloads,
		EventsEnabled: new(true),
	})
	if err != nil {
		t.Fatalf("set the download directory: %v", err)
	}
	// Exceptions in the page fail the test: a script error is a defect
	// even when the DOM checks happen to pass.
	msgs := chromedp.Console(ctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			if m.IsException() {
				t.Errorf("page exception: %s:%d %s", m.URL, m.Line+1, m)
			}
		}
	}()
	return b
}

// do runs actions with a time limit, failing the test on error.
func (b *browser) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](b *browser, js string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// waitFor polls a JavaScript expression until it is truthy.
func (b *browser) waitFor(what, js string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	for {
		_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](js, chromedp.WithPollingInterval(20*time.Millisecond)))
		// A navigation can replace the page's JavaScript context under
		// the poll: poll again in the new one.
		if err != nil && strings.Contains(err.Error(), "Cannot find context") && ctx.Err() == nil {
			continue
		}
		if err != nil {
			b.t.Fatalf("waiting for %s (%s): %v", what, js, err)
		}
		return
	}
}

// docShot, with -screenshot, saves the element css selects as
// docs/name (a picture for docs/web.md); without it, nothing.
func (b *browser) docShot(css, name string) {
	b.t.Helper()
	if !*writeScreenshot {
		return
	}
	b.do("scroll to "+css, chromedp.ScrollIntoView(chromedp.CSS(css)))
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS(css)))
	if err != nil {
		b.t.Fatalf("screenshot of %s: %v", css, err)
	}
	if err := os.WriteFile(filepath.Join(formatstest.ModuleRoot(b.t), "docs", name), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// screenshot saves the whole page as a PNG at path.
func (b *browser) screenshot(path string) []byte {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot: %v", err)
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG")) {
		b.t.Fatalf("screenshot is not a PNG (%d bytes)", len(png))
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	return png
}

// download waits for a completed download whose suggested name ends with
// suffix, and returns that name and the file's bytes.
func (b *browser) download(suffix string) (string, []byte) {
	b.t.Helper()
	timeout := time.After(30 * time.Second)
	var others []string
	for {
		select {
		case d := <-b.finished:
			if !strings.HasSuffix(d.name, suffix) {
				others = append(others, fmt.Sprintf("%s (%s)", d.name, d.state))
				continue
			}
			if d.state != cdpbrowser.DownloadProgressStateCompleted {
				b.t.Fatalf("the download of %s ended %s", d.name, d.state)
			}
			data, err := os.ReadFile(d.path)
			if err != nil {
				b.t.Fatal(err)
			}
			os.Remove(d.path)
			return d.name, data
		case <-timeout:
			b.t.Fatalf("no completed download ending in %q after 30 s (others: %q)", suffix, others)
			return "", nil
		}
	}
}

// testServer is a real server over a temporary archive.
type testServer struct {
	url string
	x   *replay.Archive
	// secret is the owner's (Config.LocalSecret), which the login link
	// carries.
	secret string
}

// asOwner returns the address of the page at path that signs the tab in
// as the owner, as the link 'archivectl serve' prints does.
func (s *testServer) asOwner(path string) string {
	return s.url + path + "#login=" + s.secret
}

// startServer ingests paths into a new archive and serves it, with the
// page, on 127.0.0.1:0 until the test ends.
func startServer(t testing.TB, paths ...string) *testServer {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "archive")
	x, err := replay.Open(dir, replay.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) > 0 {
		if err := x.Ingest(context.Background(), paths, replay.IngestOptions{By: replay.Actor{Name: "test", Role: replay.RoleAdmin}}, nil); err != nil {
			x.Close()
			t.Fatalf("ingest %v: %v", paths, err)
		}
	}
	secret := replay.NewSecret()
	srv := server.New(x, server.Config{Web: withBlank(web.Handler()), LocalSecret: secret})
	ctx, cancel := context.WithCancel(context.Background())
	urls := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- srv.ListenAndServe(ctx, "127.0.0.1:0", "", "", 5*time.Second, func(u string) { urls <- u })
	}()
	var u string
	select {
	case u = <-urls:
	case err := <-done:
		cancel()
		x.Close()
		t.Fatalf("serve: %v", err)
	case <-time.After(10 * time.Second):
		cancel()
		t.Fatal("the server did not start in 10 s")
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("serve: %v", err)
		}
		x.Close()
	})
	return &testServer{url: u, x: x, secret: secret}
}

// blankPage is the baseline of TestRecordingPageTimeToInteractive: a page
// that is usable as soon as it is parsed. Its time from navigation to its
// script is what any page costs in this browser on this machine at this
// moment (the process, the request, a document), not the page's own work.
const blankPage = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>blank</title></head>
<body><p>blank</p><script>window.replayReadyAt = performance.now(); document.body.dataset.ready = 'blank';</script></body></html>`

// withBlank serves blankPage at /blank and the rest with next.
func withBlank(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/blank" {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		io.WriteString(w, blankPage)
	})
}

// token creates a token with role and returns its secret.
func (s *testServer) token(t testing.TB, name string, role replay.Role) string {
	t.Helper()
	secret, err := s.x.CreateToken(replay.Actor{Name: "test", Role: replay.RoleAdmin}, name, role)
	if err != nil {
		t.Fatal(err)
	}
	return secret
}

// signIn answers the page's token dialog, which it opens at the API's 401.
func (b *browser) signIn(token, wantWho string) {
	b.t.Helper()
	b.waitFor("the sign-in dialog", `document.getElementById('login-dlg').open`)
	b.do("sign in",
		chromedp.SendKeys(chromedp.ID("login-token"), token),
		chromedp.Click(chromedp.CSS(`#login-form button[type=submit]`)),
	)
	b.waitFor("signed in as "+wantWho, fmt.Sprintf(`document.getElementById('who').textContent === %q`, wantWho))
}

// timeoutCodes returns the secret arguments of the timeout commands in a
// teehistorian file: a string after "timeout\0" and an argument count of 1.
func timeoutCodes(native []byte) []string {
	var codes []string
	rest := native
	for {
		i := bytes.Index(rest, []byte("timeout\x00\x01"))
		if i < 0 {
			return codes
		}
		rest = rest[i+len("timeout\x00\x01"):]
		if j := bytes.IndexByte(rest, 0); j > 0 {
			codes = append(codes, string(rest[:j]))
		}
	}
}

// checkTeehistorian re-splits a downloaded clip with the teehistorian
// codec: it must be a valid file of its format.
func checkTeehistorian(t *testing.T, name string, data []byte) {
	t.Helper()
	rec, err := formatstest.TrySplit(teehistorian.New(), data)
	if err != nil {
		t.Fatalf("downloaded %s (%d bytes) is not a valid teehistorian file: %v", name, len(data), err)
	}
	if len(rec.ChunkIndex) == 0 || rec.Metadata.Ticks == 0 {
		t.Fatalf("downloaded %s holds no ticks (%d chunks)", name, len(rec.ChunkIndex))
	}
}

const samiiID = "7cee836b-aec8-44d9-9083-94d07d88bc05"

// TestModeratorAndViewer is the moderators' page end to end: search for a player
// of a corpus file, open the hit, see the timeline and the trails drawn,
// download a clip (a valid teehistorian file), flag the recording as a
// moderator and see the flag in the history; then, signed in as a viewer,
// see no moderation controls and get a redacted clip.
func TestModeratorAndViewer(t *testing.T) {
	corpus := formatstest.CorpusDir(t, "teehistorian")
	b := newBrowser(t, 1280, 800)
	s := startServer(t, corpus)
	original, err := os.ReadFile(filepath.Join(corpus, samiiID+".teehistorian"))
	if err != nil {
		t.Fatal(err)
	}
	codes := timeoutCodes(original)
	if len(codes) < 2 {
		t.Fatalf("the corpus file has %d timeout codes, want the 2 the test relies on", len(codes))
	}
	modToken := s.token(t, "alice", replay.RoleModerator)
	viewToken := s.token(t, "bob", replay.RoleViewer)

	// Tokens exist, so the API answers 401 and the page asks for one.
	b.do("open the page", chromedp.Navigate(s.url+"/"))
	b.signIn(modToken, "alice (moderator)")

	// Search for a player of the corpus file.
	b.do("search",
		chromedp.SendKeys(chromedp.ID("q"), "player:samii"),
		chromedp.Click(chromedp.CSS(`#search-form button[type=submit]`)),
	)
	b.waitFor("the hit", fmt.Sprintf(`document.querySelector('.hit[data-id=%q]')`, samiiID))
	if got := eval[string](b, `location.search`); got != "?q=player%3Asamii" {
		t.Errorf("the URL does not hold the query: %q", got)
	}
	if n := eval[int](b, `document.querySelectorAll('.hit').length`); n != 1 {
		t.Errorf("%d hits for player:samii, want 1", n)
	}

	// Open the hit: the recording page with its timeline and trails.
	b.do("open the hit", chromedp.Click(chromedp.CSS(fmt.Sprintf(`.hit[data-id=%q] h2 a`, samiiID))))
	b.waitFor("the recording page", `document.body.dataset.ready === 'recording'`)
	if got := eval[string](b, `location.pathname`); got != "/r/"+samiiID {
		t.Errorf("recording page at %q", got)
	}
	if n := eval[int](b, `+document.getElementById('timeline').dataset.events`); n != 10 {
		t.Errorf("the timeline shows %d events, want the file's 10", n)
	}
	players := eval[string](b, `document.getElementById('players').tBodies[0].innerText`)
	for _, want := range []string{"samii\t0", "*lukure*\t1", "teetan\t2", "p'*\t3"} {
		if !strings.Contains(players, want) {
			t.Errorf("players over time lack %q:\n%s", want, players)
		}
	}

	// Pick a moment: jump to tick 400, where samii runs around.
	b.do("jump", chromedp.SendKeys(chromedp.ID("jump-to"), "400"), chromedp.Click(chromedp.CSS(`#jump button`)))
	b.waitFor("trails at tick 400", `document.getElementById('trails').dataset.tick === '400' && +document.getElementById('trails').dataset.tracks > 0`)
	if labels := eval[string](b, `document.getElementById('trails').dataset.labels`); !strings.Contains(labels, "samii") {
		t.Errorf("the trails are not labelled with samii: %q", labels)
	}
	// The picture has pixels besides its background: trails were drawn.
	lit := eval[int](b, `(() => {
		const c = document.getElementById('trails'), d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
		let n = 0;
		for (let i = 0; i < d.length; i += 4) if (Math.abs(d[i] - 0x10) + Math.abs(d[i+1] - 0x16) + Math.abs(d[i+2] - 0x1f) > 60) n++;
		return n;
	})()`)
	if lit < 200 {
		t.Errorf("the trails picture has %d lit pixels, want a drawn trail", lit)
	}
	b.screenshot(filepath.Join(t.TempDir(), "recording.png"))

	// Clicking the timeline picks a moment too.
	before := eval[string](b, `document.getElementById('pos').textContent`)
	b.do("click the timeline", chromedp.Click(chromedp.ID("timeline")))
	b.waitFor("a new moment", fmt.Sprintf(`document.getElementById('pos').textContent !== %q`, before))
	b.do("jump back", chromedp.SetValue(chromedp.ID("jump-to"), "400"), chromedp.Click(chromedp.CSS(`#jump button`)))
	b.waitFor("tick 400", `document.getElementById('trails').dataset.tick === '400'`)

	// A moderator's clip of the selected range is a valid, unredacted file.
	if got := eval[string](b, `document.getElementById('r-from').value + '-' + document.getElementById('r-to').value`); got != "150-650" {
		t.Errorf("the selected range is %s, want 150-650 (5 s around tick 400)", got)
	}
	b.do("download a clip", chromedp.Click(chromedp.ID("dl-clip")))
	name, clip := b.download(".teehistorian")
	if !strings.Contains(name, "150-650") || strings.Contains(name, "redacted") {
		t.Errorf("the moderator's clip is named %q", name)
	}
	checkTeehistorian(t, name, clip)
	if !bytes.Contains(clip, []byte(codes[0])) {
		t.Errorf("the moderator's clip lacks the timeout code at tick 170: was it redacted?")
	}

	// Flag it, with a note, through the confirmation dialog.
	b.do("flag", chromedp.Click(chromedp.ID("do-flag")))
	b.waitFor("the flag dialog", `document.getElementById('act-dlg').open`)
	b.do("fill the flag",
		chromedp.SendKeys(chromedp.ID("act-name"), "griefing"),
		chromedp.SendKeys(chromedp.ID("act-note"), "spawn-killed everyone at 0:08"),
		chromedp.Click(chromedp.ID("act-ok")),
	)
	b.waitFor("the flag listed", `document.querySelector('#flags li[data-flag=griefing]')`)
	b.waitFor("the flag in the history", `[...document.querySelectorAll('#audit tr[data-action=flag]')].some(r => r.innerText.includes('spawn-killed everyone') && r.innerText.includes('alice'))`)
	if open := eval[bool](b, `document.getElementById('act-dlg').open`); open {
		t.Error("the flag dialog stayed open")
	}
	m, err := s.x.Manifest(samiiID)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Flags) != 1 || m.Flags[0].Name != "griefing" || m.Flags[0].Note != "spawn-killed everyone at 0:08" {
		t.Errorf("the archive's flags: %+v", m.Flags)
	}

	// Sign out, and in again as a viewer: no moderation controls.
	b.do("sign out", chromedp.Click(chromedp.ID("signout")))
	b.signIn(viewToken, "bob (viewer)")
	b.waitFor("the recording page again", `document.body.dataset.ready === 'recording'`)
	hidden := eval[map[string]bool](b, `({
		mod: document.getElementById('mod').hidden && document.getElementById('do-flag').offsetParent === null,
		original: document.getElementById('dl-original').hidden,
		unflag: document.querySelectorAll('#flags .unflag').length === 0,
	})`)
	for what, ok := range hidden {
		if !ok {
			t.Errorf("a viewer sees the %s control", what)
		}
	}
	if !eval[bool](b, `!!document.querySelector('#flags li[data-flag=griefing]')`) {
		t.Error("a viewer does not see the flag")
	}
	b.do("viewer jump", chromedp.SetValue(chromedp.ID("jump-to"), "400"), chromedp.Click(chromedp.CSS(`#jump button`)))
	b.waitFor("tick 400", `document.getElementById('trails').dataset.tick === '400'`)
	b.do("viewer clip", chromedp.Click(chromedp.ID("dl-clip")))
	name, clip = b.download(".teehistorian")
	if !strings.Contains(name, "redacted") {
		t.Errorf("the viewer's clip is named %q, want a redacted one", name)
	}
	checkTeehistorian(t, name, clip)
	for _, c := range codes {
		if bytes.Contains(clip, []byte(c)) {
			t.Errorf("the viewer's clip holds the timeout code %q", c)
		}
	}
}

// TestQueryErrorPointsAtTerm: a query that does not parse shows the
// server's error with the offending term marked.
func TestQueryErrorPointsAtTerm(t *testing.T) {
	corpus := formatstest.CorpusDir(t, "teehistorian")
	b := newBrowser(t, 1280, 800)
	s := startServer(t, corpus)
	b.do("bad query", chromedp.Navigate(s.asOwner("/?q="+strings.ReplaceAll("player:samii after:2023-13-45", " ", "+"))))
	b.waitFor("the error", `!document.getElementById('qerr').hidden`)
	if got := eval[string](b, `document.querySelector('#qerr mark').textContent`); got != "after:2023-13-45" {
		t.Errorf("the error marks %q, want the after: term", got)
	}
	if got := eval[string](b, `document.getElementById('q').getAttribute('aria-invalid')`); got != "true" {
		t.Errorf("the search box is not marked invalid (aria-invalid %q)", got)
	}
	// A quick filter edits the query in the URL and runs it.
	b.do("fix the query", chromedp.SetValue(chromedp.ID("q"), "player:samii"), chromedp.Click(chromedp.CSS(`#search-form button[type=submit]`)))
	b.waitFor("one hit", `document.querySelectorAll('.hit').length === 1`)
	b.waitFor("the format list", `document.querySelector('#f-format option[value=teehistorian]')`)
	// SetValue fires the change event a person's choice fires.
	b.do("filter by format", chromedp.SetValue(chromedp.ID("f-format"), "teehistorian"))
	b.waitFor("the filter in the URL", `new URLSearchParams(location.search).get('q') === 'player:samii format:teehistorian'`)
	b.waitFor("the filtered hit", `document.body.dataset.ready === 'search' && document.querySelectorAll('.hit').length === 1`)
}

// TestLayoutAndKeyboard: the recording page fits a laptop and a phone
// screen without sideways scrolling, and the timeline moves with the keys.
func TestLayoutAndKeyboard(t *testing.T) {
	corpus := formatstest.CorpusDir(t, "teehistorian")
	s := startServer(t, corpus)
	b := newBrowser(t, 1280, 800)
	for _, size := range [][2]int{{1280, 800}, {390, 844}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			b.t = t
			b.do("emulate", chromedp.EmulateViewport(int64(size[0]), int64(size[1])))
			b.do("open", chromedp.Navigate(s.asOwner("/r/"+samiiID+"?t=400")))
			b.waitFor("the recording page", `document.body.dataset.ready === 'recording'`)
			if w := eval[[]int](b, `[document.documentElement.scrollWidth, innerWidth]`); w[0] > w[1] {
				t.Errorf("the page is %d px wide in a %d px window", w[0], w[1])
			}
			if tw := eval[int](b, `Math.round(document.getElementById('trails').getBoundingClientRect().width)`); tw < size[0]/2 {
				t.Errorf("the trails picture is %d px wide", tw)
			}
			// Every control can be reached with the keyboard: real buttons
			// and labelled fields, none taken out of the tab order.
			unlabelled := eval[[]string](b, `[...document.querySelectorAll('#rec-view input, #rec-view select, #rec-view textarea')]
				.filter(e => !e.labels || e.labels.length === 0).map(e => e.id)`)
			if len(unlabelled) > 0 {
				t.Errorf("fields without a label: %q", unlabelled)
			}
			if n := eval[int](b, `document.querySelectorAll('[tabindex^="-"]:not(main), div[onclick], span[onclick]').length`); n != 0 {
				t.Errorf("%d controls out of the tab order or not buttons", n)
			}
			b.do("focus the timeline", chromedp.Focus(chromedp.ID("timeline")), chromedp.KeyEvent(kb.ArrowRight))
			b.waitFor("one second on", `document.getElementById('trails').dataset.tick === '450'`)
			b.do("play", chromedp.Focus(chromedp.ID("p-play")), chromedp.KeyEvent(" "))
			b.waitFor("playing", `+document.getElementById('trails').dataset.tick > 460`)
			b.do("pause", chromedp.Click(chromedp.ID("p-play")))
			if p := eval[string](b, `document.getElementById('p-play').getAttribute('aria-pressed')`); p != "false" {
				t.Errorf("the play button is pressed (%q) after a pause", p)
			}
			b.screenshot(filepath.Join(t.TempDir(), "recording.png"))
		})
	}
}

var writeScreenshot = flag.Bool("screenshot", false, "write ../docs/screenshot-recording.png from the demo's recordings")

// TestScreenshot takes the README's picture of the recording page from
// the demo's recordings (cmd/archivectl/demodata), flagged and held as the
// demo does. It saves it in the test's temporary directory; with
// -screenshot it writes docs/screenshot-recording.png:
//
//	go test ./web -run TestScreenshot -args -screenshot
func TestScreenshot(t *testing.T) {
	root := formatstest.ModuleRoot(t)
	demo := filepath.Join(root, "cmd", "archivectl", "demodata")
	b := newBrowser(t, 1280, 800)
	s := startServer(t, demo)
	const ctfEvening = "1dd452f5-f6de-4340-9df9-54aa30f182d0"
	mod := replay.Actor{Name: "alice", Role: replay.RoleModerator}
	ctx := context.Background()
	if _, err := s.x.Flag(ctx, mod, ctfEvening, "griefing", "blocks the spawn at 2:00, see the trails"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.x.Hold(ctx, mod, ctfEvening, "report #1182 under review"); err != nil {
		t.Fatal(err)
	}
	b.do("emulate", chromedp.EmulateViewport(1280, 800))
	b.do("open", chromedp.Navigate(s.asOwner("/r/"+ctfEvening+"?t=6000")))
	b.waitFor("the recording page", `document.body.dataset.ready === 'recording' && +document.getElementById('trails').dataset.tracks >= 4`)
	b.do("zoom", chromedp.Click(chromedp.ID("zoom-in")), chromedp.Click(chromedp.ID("zoom-in")))
	ctxT, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctxT, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG")) || len(png) < 20000 {
		t.Fatalf("the screenshot is not a PNG of a drawn page (%d bytes)", len(png))
	}
	out := filepath.Join(t.TempDir(), "screenshot-recording.png")
	if *writeScreenshot {
		out = filepath.Join(root, "docs", "screenshot-recording.png")
	}
	if err := os.WriteFile(out, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s (%d bytes)", out, len(png))
}

// hourRecording writes the one-hour teehistorian file (16 players) the
// recording page is measured on, and returns its path.
func hourRecording(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "hour.teehistorian")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	err = teehistoriangen.Generate(f, teehistoriangen.Options{Duration: time.Hour, Players: 16, Seed: 14, Messages: true})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// onlyID is the id of the one recording in s's archive.
func onlyID(t testing.TB, s *testServer) string {
	t.Helper()
	var id string
	err := s.x.List(context.Background(), func(m *archive.Manifest) error { id = m.ID.String(); return nil })
	if err != nil || id == "" {
		t.Fatalf("the generated recording is not in the archive: %v", err)
	}
	return id
}

// TestRecordingPageTimeToInteractive measures the recording page of a
// one-hour teehistorian file (16 players): from navigation to the page
// being usable (metadata, players, timeline and the trails picture of the
// selected moment drawn, window.replayReadyAt). Issue 14's goal is 300 ms
// on loopback. The machine running the test is often busy, so the page
// alternates with blankPage, whose time is what any navigation costs at
// that moment: the page's own time is the difference, and the test fails
// when its median is over 300 ms scaled by how much busier than its cores
// the machine is (the load average over the number of CPUs, at least 1,
// the higher of its values before and after the loads).
func TestRecordingPageTimeToInteractive(t *testing.T) {
	if testing.Short() {
		t.Skip("generates and ingests a one-hour recording")
	}
	path := hourRecording(t)
	st, _ := os.Stat(path)
	b := newBrowser(t, 1280, 800)
	s := startServer(t, path)
	id := onlyID(t, s)
	rec, err := s.x.Recording(id)
	if err != nil {
		t.Fatal(err)
	}
	mid := rec.LastTick() / 2
	b.do("emulate", chromedp.EmulateViewport(1280, 800))
	load := loadAverage()
	// The blank page and the page alternate, so both see the same load;
	// the first pair is the browser warming up (it compiles the script,
	// the server reads the events for the first time).
	const pairs = 11
	var pages, blanks, own []float64
	var last string
	for i := range pairs {
		b.do("open the blank page", chromedp.Navigate(fmt.Sprintf("%s/blank?%d", s.url, i)))
		b.waitFor("the blank page", `document.body.dataset.ready === 'blank'`)
		blank := eval[float64](b, `window.replayReadyAt`)
		tick := mid + int64(i)*1000
		b.do("open the recording", chromedp.Navigate(s.asOwner(fmt.Sprintf("/r/%s?t=%d", id, tick))))
		b.waitFor("the recording page", `document.body.dataset.ready === 'recording'`)
		page := eval[float64](b, `window.replayReadyAt`)
		if n := eval[int](b, `+document.getElementById('trails').dataset.tracks`); n == 0 {
			t.Errorf("load %d: no trails drawn at tick %d", i, tick)
		}
		// Where the time went: navigation, the HTML, the page's marks and
		// each request (start+duration ms, KiB over the wire).
		last = eval[string](b, `(() => {
			const r = Math.round, n = performance.getEntriesByType('navigation')[0];
			const marks = performance.getEntriesByType('mark').filter(e => e.name.startsWith('replay:')).map(e => e.name.slice(7) + ' ' + r(e.startTime));
			const res = performance.getEntriesByType('resource').map(e => new URL(e.name).pathname.replace(/^.*\//, '').replace(/^[0-9a-f-]{36}$/, 'recording') + ' ' + r(e.startTime) + '+' + r(e.duration) + (e.transferSize > 1024 ? ' ' + r(e.transferSize / 1024) + ' KiB' : ''));
			return 'HTML ' + r(n.responseStart) + '-' + r(n.responseEnd) + ', parsed ' + r(n.domInteractive) + '; marks: ' + marks.join(', ') + '; ' + res.join(', ');
		})()`)
		t.Logf("load %d: blank %.0f ms, page %.0f ms: %s", i, blank, page, last)
		if i > 0 {
			pages, blanks, own = append(pages, page), append(blanks, blank), append(own, page-blank)
		}
	}
	// Usable when marked: the clip button works and the timeline takes
	// the keyboard (one second on with the right arrow).
	if eval[bool](b, `document.getElementById('dl-clip').disabled`) {
		t.Error("the clip button is disabled on a teehistorian recording")
	}
	before := eval[int64](b, `+document.getElementById('trails').dataset.tick`)
	b.do("step on the timeline", chromedp.Focus(chromedp.ID("timeline")), chromedp.KeyEvent(kb.ArrowRight))
	b.waitFor("the selection one second on", fmt.Sprintf(`+document.getElementById('trails').dataset.tick === %d`, before+50))

	med := func(v []float64) float64 { v = slices.Clone(v); slices.Sort(v); return v[len(v)/2] }
	// The one-minute average lags: the higher of the load when the
	// loads began and when they ended.
	load = max(load, loadAverage())
	slow := max(1, load/float64(runtime.NumCPU()))
	t.Logf("one-hour teehistorian (%d bytes, %d ticks), %d reloads at load average %.1f on %d CPUs: page min %.0f / median %.0f / max %.0f ms; blank page min %.0f / median %.0f / max %.0f ms; page/blank %.1f; the page's own time (page minus blank) median %.0f ms",
		st.Size(), rec.LastTick()+1, len(pages), load, runtime.NumCPU(), slices.Min(pages), med(pages), slices.Max(pages),
		slices.Min(blanks), med(blanks), slices.Max(blanks), med(pages)/med(blanks), med(own))
	if limit := 300 * slow; med(own) > limit {
		t.Errorf("the recording page's own time to interactive is %.0f ms (median of page minus blank page), over the 300 ms goal scaled by the load (%.0f ms at load average %.1f)", med(own), limit, load)
	}
}

// loadAverage is the one-minute load average (0 where /proc/loadavg is
// not there).
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	var l float64
	fmt.Sscan(string(b), &l)
	return l
}

// TestTrailsEveryFormat opens a recording of each format that carries
// positions (teehistorian, HCRP, VTX, .butter, .milk) and checks that the
// picture draws named trails; an SC2 replay says it has none.
func TestTrailsEveryFormat(t *testing.T) {
	corpus := filepath.Dir(formatstest.CorpusDir(t, "teehistorian"))
	root := formatstest.ModuleRoot(t)
	files := map[string]string{
		"teehistorian": filepath.Join(corpus, "teehistorian", samiiID+".teehistorian"),
		"hcrp":         filepath.Join(root, "cmd", "archivectl", "demodata", "parkour-fast.hcrp"),
		"vtx":          filepath.Join(corpus, "vtx", "arena_from_fbs_ds.vtx"),
		"butter":       filepath.Join(corpus, "butter", "reference", "butter", "milk_2020-09-07.zstd_22.k300.butter"),
		"milk":         filepath.Join(corpus, "butter", "example.milk"),
		"sc2replay":    filepath.Join(corpus, "sc2replay", "lotv-4.7.1.70326-iaguz-vs-luneth.SC2Replay"),
	}
	var paths []string
	for _, p := range files {
		paths = append(paths, p)
	}
	s := startServer(t, paths...)
	ids := map[string]string{}
	err := s.x.List(context.Background(), func(m *archive.Manifest) error { ids[m.Format] = m.ID.String(); return nil })
	if err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, 1280, 800)
	for format := range files {
		t.Run(format, func(t *testing.T) {
			b.t = t
			id := ids[format]
			if id == "" {
				t.Fatalf("no %s recording in the archive (%v)", format, ids)
			}
			rec, err := s.x.Recording(id)
			if err != nil {
				t.Fatal(err)
			}
			mid := rec.LastTick() / 2
			b.do("open", chromedp.Navigate(s.asOwner(fmt.Sprintf("/r/%s?t=%d", id, mid))))
			b.waitFor("the recording page", `document.body.dataset.ready === 'recording'`)
			tracks := eval[int](b, `+document.getElementById('trails').dataset.tracks`)
			labels := eval[string](b, `document.getElementById('trails').dataset.labels`)
			if format == "sc2replay" {
				// Units from the tracker events, coloured by player, unnamed.
				if tracks < 20 || labels != "" {
					t.Errorf("%d units drawn from an SC2 replay at loop %d, names %q", tracks, mid, labels)
				}
				if note := eval[string](b, `document.getElementById('trail-note').textContent`); !strings.Contains(note, "units, coloured by player") {
					t.Errorf("the picture's note says %q", note)
				}
				// docs/screenshot-sc2-units.png: TestFieldDrawn, the units in their map.
				return
			}
			if tracks == 0 {
				t.Fatalf("no trails drawn at tick %d", mid)
			}
			for _, l := range strings.Split(labels, "\n") {
				if l == "" || strings.HasPrefix(l, "#") {
					t.Errorf("a trail without a name: %q in %q", l, labels)
				}
			}
			t.Logf("%s at tick %d: %d trails: %s", format, mid, tracks, strings.ReplaceAll(labels, "\n", ", "))
			// Every name inside the picture, none cut at its edge, at
			// moments through the recording (the players at the edges of
			// the picture change).
			w := eval[float64](b, `document.getElementById('trails').getBoundingClientRect().width`)
			h := eval[float64](b, `document.getElementById('trails').getBoundingClientRect().height`)
			checked := 0
			for k := int64(1); k <= 7; k += 2 {
				tick := rec.LastTick() * k / 8
				b.do("open", chromedp.Navigate(s.asOwner(fmt.Sprintf("/r/%s?t=%d", id, tick))))
				b.waitFor("the recording page", fmt.Sprintf(`document.body.dataset.ready === 'recording' && document.getElementById('trails').dataset.tick === '%d'`, tick))
				boxes := eval[string](b, `document.getElementById('trails').dataset.labelBoxes`)
				for _, bx := range strings.Split(boxes, ";") {
					if bx == "" {
						continue
					}
					var x, y, bw, bh float64
					if _, err := fmt.Sscanf(bx, "%g,%g,%g,%g", &x, &y, &bw, &bh); err != nil {
						t.Errorf("label box %q: %v", bx, err)
						continue
					}
					checked++
					if x < 0 || y < 0 || x+bw > w+1 || y+bh > h+1 {
						t.Errorf("tick %d: a name at %q (x, y, w, h) crosses the %gx%g picture's edge", tick, bx, w, h)
					}
				}
			}
			if checked == 0 {
				t.Errorf("no names drawn at four moments")
			}
		})
	}
}

// TestAdminActions: the owner's login link signs the tab in as admin. The
// original download is the ingested file byte for byte; hold and release
// and a takedown go through their dialogs into the archive and the
// history.
func TestAdminActions(t *testing.T) {
	corpus := formatstest.CorpusDir(t, "teehistorian")
	s := startServer(t, corpus)
	b := newBrowser(t, 1280, 800)
	b.do("open the login link", chromedp.Navigate(ownerauth.LoginURL(s.url, s.secret)))
	b.waitFor("signed in as the owner", `document.getElementById('who').textContent.endsWith('(browser) (admin)')`)
	if href := eval[string](b, `location.href`); strings.Contains(href, s.secret) || strings.Contains(href, "#") {
		t.Errorf("the login link's secret stays in the address bar: %s", href)
	}
	b.do("open", chromedp.Navigate(s.url+"/r/"+samiiID))
	b.waitFor("the recording page", `document.body.dataset.ready === 'recording'`)
	if who := eval[string](b, `document.getElementById('who').textContent`); !strings.HasSuffix(who, "(browser) (admin)") {
		t.Fatalf("signed in as %q, want the owner's browser, admin", who)
	}
	b.do("download the original", chromedp.Click(chromedp.ID("dl-original")))
	name, data := b.download(".teehistorian")
	original, err := os.ReadFile(filepath.Join(corpus, samiiID+".teehistorian"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, original) {
		t.Errorf("the original download %s (%d bytes) differs from the ingested file (%d bytes)", name, len(data), len(original))
	}

	// An empty reason is refused by the form: the hold needs one.
	b.do("hold", chromedp.Click(chromedp.ID("do-hold")))
	b.waitFor("the hold dialog", `document.getElementById('act-dlg').open`)
	b.do("confirm without a reason", chromedp.Click(chromedp.ID("act-ok")))
	if m, _ := s.x.Manifest(samiiID); m.Hold != nil {
		t.Fatal("held without a reason")
	}
	b.do("give a reason", chromedp.SendKeys(chromedp.ID("act-note"), "evidence for ticket 7"), chromedp.Click(chromedp.ID("act-ok")))
	// The page shows the hold before its dialog closes (the audit is
	// fetched first): a click meanwhile would land on the modal dialog.
	b.waitFor("held", `document.getElementById('hold').textContent.startsWith('Held: evidence for ticket 7') && !document.getElementById('do-release').hidden && !document.getElementById('act-dlg').open`)
	if m, _ := s.x.Manifest(samiiID); m.Hold == nil || m.Hold.Reason != "evidence for ticket 7" {
		t.Errorf("the archive's hold: %+v", m.Hold)
	}
	// A held recording cannot be taken down: the dialog shows the
	// server's refusal and stays open.
	b.do("take down", chromedp.Click(chromedp.ID("do-delete")))
	b.waitFor("the takedown dialog", `document.getElementById('act-dlg').open`)
	b.do("reason", chromedp.SendKeys(chromedp.ID("act-note"), "DMCA"), chromedp.Click(chromedp.ID("act-ok")))
	b.waitFor("the refusal", `!document.getElementById('act-err').hidden`)
	b.do("cancel", chromedp.Click(chromedp.ID("act-cancel")))
	b.do("release", chromedp.Click(chromedp.ID("do-release")))
	b.waitFor("the release dialog", `document.getElementById('act-dlg').open`)
	b.do("confirm", chromedp.SendKeys(chromedp.ID("act-note"), "ticket closed"), chromedp.Click(chromedp.ID("act-ok")))
	b.waitFor("released", `document.getElementById('hold').textContent === 'Not held' && !document.getElementById('act-dlg').open`)
	b.waitFor("hold and release in the history", `document.querySelector('#audit tr[data-action=hold]') && document.querySelector('#audit tr[data-action=release]')`)

	b.do("take down", chromedp.Click(chromedp.ID("do-delete")))
	b.waitFor("the takedown dialog", `document.getElementById('act-dlg').open`)
	b.do("reason", chromedp.SendKeys(chromedp.ID("act-note"), "DMCA notice 42"), chromedp.Click(chromedp.ID("act-ok")))
	b.waitFor("back at the search with a notice", `location.pathname === '/' && document.getElementById('notice').textContent.includes('DMCA notice 42')`)
	if _, err := s.x.Manifest(samiiID); !errors.Is(err, archive.ErrNotFound) {
		t.Errorf("the recording is still there after the takedown: %v", err)
	}
}
