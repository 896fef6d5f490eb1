package server_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/formats/formatstest"
	"github.com/replayarchive/replay/formats/teehistorian"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
	"github.com/replayarchive/replay/internal/memtest"
	"github.com/replayarchive/replay/internal/ownerauth"
	"github.com/replayarchive/replay/server"
	"github.com/replayarchive/replay/wire"
)

// testServer is a real server on a loopback port over a fresh archive.
type testServer struct {
	t   *testing.T
	x   *replay.Archive
	url string
	// owner is the local secret: the owner's credential.
	owner string
}

func start(t *testing.T, cfg server.Config) *testServer {
	t.Helper()
	return startWith(t, archive.Options{NoSync: true}, cfg)
}

// startWith is start over an archive opened with opts.
func startWith(t *testing.T, opts archive.Options, cfg server.Config) *testServer {
	t.Helper()
	x, err := replay.Open(filepath.Join(t.TempDir(), "archive"), replay.Options{Create: true, Archive: opts})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.LocalSecret == "" {
		cfg.LocalSecret = replay.NewSecret()
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	s := server.New(x, cfg)
	go func() {
		done <- s.ListenAndServe(ctx, "127.0.0.1:0", "", "", 5*time.Second, func(u string) { ready <- u })
	}()
	var url string
	select {
	case url = <-ready:
	case err := <-done:
		t.Fatalf("serve: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
		x.Close()
	})
	return &testServer{t: t, x: x, url: url, owner: cfg.LocalSecret}
}

// do sends a request with token (none when empty) and returns the status
// and body.
func (ts *testServer) do(method, path, token string, body io.Reader, hdr ...string) (int, []byte, http.Header) {
	ts.t.Helper()
	req, err := http.NewRequest(method, ts.url+path, body)
	if err != nil {
		ts.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	switch {
	case body == nil:
	case method == http.MethodPost && strings.HasPrefix(path, "/api/v1/recordings") && !strings.HasPrefix(path, "/api/v1/recordings/"):
		req.Header.Set("Content-Type", "application/octet-stream") // as a client uploading a file does
	default:
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		ts.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		ts.t.Fatal(err)
	}
	return resp.StatusCode, b, resp.Header
}

// on returns ts reporting to t, for a subtest.
func (ts *testServer) on(t *testing.T) *testServer {
	c := *ts
	c.t = t
	return &c
}

func (ts *testServer) want(status int, method, path, token string, body io.Reader, out any) []byte {
	ts.t.Helper()
	code, b, _ := ts.do(method, path, token, body)
	if code != status {
		ts.t.Fatalf("%s %s: %d %s, want %d", method, path, code, b, status)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			ts.t.Fatalf("%s %s: %v in %s", method, path, err, b)
		}
	}
	if status >= 400 && !bytes.Contains(b, []byte(`"code"`)) {
		ts.t.Errorf("%s %s: error body is not {error, code}: %s", method, path, b)
	}
	return b
}

// uploadFile uploads the file at path as the owner and returns the new
// recording's id.
func (ts *testServer) uploadFile(path string) string {
	ts.t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		ts.t.Fatal(err)
	}
	var up struct {
		ID string `json:"id"`
	}
	ts.want(http.StatusCreated, "POST", "/api/v1/recordings?name="+filepath.Base(path), ts.owner, bytes.NewReader(b), &up)
	return up.ID
}

func corpusFile(t *testing.T, name string) []byte {
	b, err := os.ReadFile(filepath.Join(formatstest.CorpusDir(t, "teehistorian"), name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestAPIContract walks the API as a client would, one step a subtest (a
// failure names its step, and the steps after it do not run): uploads,
// search, the file, tokens, what a viewer may, a moderator's marks and
// takedown, the refused bytes and the audit log, retention and prune, and
// errors.
func TestAPIContract(t *testing.T) {
	ts := start(t, server.Config{MaxUpload: 64 << 20})
	tutorial := corpusFile(t, "Tutorial.teehistorian")
	other := corpusFile(t, "265107d7-cdcf-4876-bc00-159bca662955.teehistorian")
	sum := sha256.Sum256(tutorial)
	// What the steps hand on to the steps after them.
	var (
		otherID, tutID, clipURL string
		viewer, mod, admin      string
	)
	step := func(name string, fn func(t *testing.T, ts *testServer)) {
		t.Helper()
		if !t.Run(name, func(t *testing.T) { fn(t, ts.on(t)) }) {
			t.FailNow()
		}
	}

	// No token exists yet: the owner (the local secret) is admin.
	step("upload", func(t *testing.T, ts *testServer) {
		var up wire.Upload
		ts.want(http.StatusCreated, "POST", "/api/v1/recordings?name=Tutorial.teehistorian", ts.owner, bytes.NewReader(tutorial), &up)
		if up.Format != "teehistorian" || up.ID == "" {
			t.Fatalf("upload: %+v", up)
		}
		if up.SHA256 != hex.EncodeToString(sum[:]) {
			t.Errorf("upload sha256 %s", up.SHA256)
		}
		var dup wire.Error
		ts.want(http.StatusConflict, "POST", "/api/v1/recordings", ts.owner, bytes.NewReader(tutorial), &dup)
		if dup.ID != up.ID || dup.Code != "duplicate" {
			t.Errorf("duplicate upload: %+v", dup)
		}
		var bad wire.Error
		ts.want(http.StatusUnprocessableEntity, "POST", "/api/v1/recordings?name=cut.teehistorian", ts.owner, bytes.NewReader(other[:17]), &bad)
		if !strings.Contains(bad.Error, "byte offset") || strings.Contains(bad.Error, "upload-") {
			t.Errorf("bad upload error does not give the offset, or leaks the spool path: %q", bad.Error)
		}
		ts.want(http.StatusCreated, "POST", "/api/v1/recordings?name=other.teehistorian", ts.owner, bytes.NewReader(other), &up)
		otherID = up.ID
	})

	// Search, paging, parse errors.
	step("search", func(t *testing.T, ts *testServer) {
		var res wire.Search
		ts.want(http.StatusOK, "GET", "/api/v1/recordings?q=format:teehistorian&limit=1", ts.owner, nil, &res)
		if res.Total != 2 || len(res.Hits) != 1 || res.NextCursor == "" {
			t.Fatalf("page 1: %+v", res)
		}
		first, cursor := res.Hits[0].ID, res.NextCursor
		res = wire.Search{}
		ts.want(http.StatusOK, "GET", "/api/v1/recordings?q=format:teehistorian&limit=1&cursor="+cursor, ts.owner, nil, &res)
		if len(res.Hits) != 1 || res.Hits[0].ID == first || res.NextCursor != "" {
			t.Fatalf("page 2: %+v", res)
		}
		var perr wire.Error
		ts.want(http.StatusBadRequest, "GET", "/api/v1/recordings?q=after:2024-13-99", ts.owner, nil, &perr)
		if perr.Code != "bad_query" || perr.Pos == nil || perr.Term == "" {
			t.Errorf("parse error: %+v", perr)
		}
		ts.want(http.StatusOK, "GET", "/api/v1/recordings?q=cmd:timeout", ts.owner, nil, &res)
		if len(res.Hits) == 0 || len(res.Hits[0].Events) == 0 || res.Hits[0].Events[0].ClipURL == "" {
			t.Fatalf("cmd:timeout finds no event with a clip URL: %+v", res)
		}
		clipURL = res.Hits[0].Events[0].ClipURL
		tutID = res.Hits[0].ID
	})

	// The whole file: ETag, Range.
	step("file", func(t *testing.T, ts *testServer) {
		code, whole, hdr := ts.do("GET", "/api/v1/recordings/"+tutID[:8]+"/file", ts.owner, nil)
		if code != http.StatusOK || !bytes.Equal(whole, tutorial) || hdr.Get("ETag") != `"`+hex.EncodeToString(sum[:])+`"` ||
			!strings.Contains(hdr.Get("Content-Disposition"), ".teehistorian") {
			t.Fatalf("file: %d, %d bytes, ETag %s, %s", code, len(whole), hdr.Get("ETag"), hdr.Get("Content-Disposition"))
		}
		code, part, _ := ts.do("GET", "/api/v1/recordings/"+tutID+"/file", ts.owner, nil, "Range", "bytes=1000-1999")
		if code != http.StatusPartialContent || !bytes.Equal(part, tutorial[1000:2000]) {
			t.Errorf("range: %d, %d bytes", code, len(part))
		}
		code, _, _ = ts.do("GET", "/api/v1/recordings/"+tutID+"/file", ts.owner, nil, "If-None-Match", hdr.Get("ETag"))
		if code != http.StatusNotModified {
			t.Errorf("If-None-Match: %d", code)
		}
	})

	// Tokens: from now on every request needs one.
	step("tokens", func(t *testing.T, ts *testServer) {
		var err error
		viewer, err = ts.x.CreateToken(replay.LocalActor(), "vera", replay.RoleViewer)
		if err != nil {
			t.Fatal(err)
		}
		mod, err = ts.x.CreateToken(replay.LocalActor(), "moritz", replay.RoleModerator)
		if err != nil {
			t.Fatal(err)
		}
		ts.want(http.StatusUnauthorized, "GET", "/api/v1/recordings", "", nil, nil)
		ts.want(http.StatusUnauthorized, "GET", "/api/v1/recordings", "rpa_wrong", nil, nil)
		var who map[string]string
		ts.want(http.StatusOK, "GET", "/api/v1/whoami", viewer, nil, &who)
		if who["role"] != "viewer" || who["name"] != "vera" {
			t.Errorf("whoami: %v", who)
		}
	})

	// A viewer reads, but cannot change, nor download originals; clips are redacted.
	step("viewer", func(t *testing.T, ts *testServer) {
		ts.want(http.StatusOK, "GET", "/api/v1/recordings/"+tutID, viewer, nil, nil)
		ts.want(http.StatusForbidden, "PUT", "/api/v1/recordings/"+tutID+"/flags/cheat", viewer, strings.NewReader(`{"note":"x"}`), nil)
		ts.want(http.StatusForbidden, "DELETE", "/api/v1/recordings/"+tutID, viewer, strings.NewReader(`{"reason":"x"}`), nil)
		ts.want(http.StatusForbidden, "GET", "/api/v1/recordings/"+tutID+"/file", viewer, nil, nil)
		ts.want(http.StatusForbidden, "PUT", "/api/v1/retention", mod, strings.NewReader(`{"max_age":"90d"}`), nil)
		code, clip, hdr := ts.do("GET", clipURL, viewer, nil)
		if code != http.StatusOK || !strings.Contains(hdr.Get("Content-Disposition"), "redacted") {
			t.Fatalf("viewer clip: %d %s", code, clip)
		}
		if bytes.Contains(clip, []byte("tjfekX6ScC8A3NkN")) {
			t.Error("a viewer's clip carries the timeout code")
		}
		rec := formatstest.Split(t, teehistorian.New(), clip)
		if rec.Meta().Ticks == 0 {
			t.Error("redacted clip has no ticks")
		}
		code, red, _ := ts.do("GET", "/api/v1/recordings/"+tutID+"/file?redact=1", viewer, nil)
		if code != http.StatusOK || bytes.Contains(red, []byte("tjfekX6ScC8A3NkN")) {
			t.Errorf("redacted file: %d, leaks the code: %v", code, bytes.Contains(red, []byte("tjfekX6ScC8A3NkN")))
		}
		formatstest.Split(t, teehistorian.New(), red)
		code, mclip, _ := ts.do("GET", clipURL, mod, nil)
		if code != http.StatusOK || len(mclip) == 0 {
			t.Errorf("moderator clip: %d", code)
		}
	})

	// A moderator flags (twice: the history keeps both notes), holds and takes down.
	step("moderator", func(t *testing.T, ts *testServer) {
		var shown wire.Recording
		ts.want(http.StatusOK, "PUT", "/api/v1/recordings/"+tutID+"/flags/griefing", mod, strings.NewReader(`{"note":"first"}`), &shown)
		ts.want(http.StatusOK, "PUT", "/api/v1/recordings/"+tutID+"/flags/griefing", mod, strings.NewReader(`{"note":"second"}`), &shown)
		if len(shown.Flags) != 1 || shown.Flags[0].Note != "second" {
			t.Errorf("flags: %+v", shown.Flags)
		}
		notes := map[string]bool{}
		for _, a := range shown.Audit {
			if a.Action == archive.AuditFlag && a.Who == "moritz" {
				notes[a.Reason] = true
			}
		}
		if !notes["first"] || !notes["second"] {
			t.Errorf("audit keeps both notes? %+v", shown.Audit)
		}
		var res wire.Search
		ts.want(http.StatusOK, "GET", "/api/v1/recordings?q=flag:griefing", viewer, nil, &res)
		if res.Total != 1 {
			t.Errorf("flag:griefing finds %d", res.Total)
		}
		ts.want(http.StatusOK, "PUT", "/api/v1/recordings/"+otherID+"/hold", mod, strings.NewReader(`{"reason":"appeal"}`), nil)
		ts.want(http.StatusConflict, "DELETE", "/api/v1/recordings/"+otherID, mod, strings.NewReader(`{"reason":"spam"}`), nil)
		ts.want(http.StatusBadRequest, "DELETE", "/api/v1/recordings/"+tutID, mod, nil, nil)
		ts.want(http.StatusOK, "DELETE", "/api/v1/recordings/"+tutID, mod, strings.NewReader(`{"reason":"ticket 4711"}`), nil)
		ts.want(http.StatusGone, "GET", "/api/v1/recordings/"+tutID, viewer, nil, nil) // taken down: gone, not unknown
	})

	// The taken-down bytes are refused with who, when and why.
	step("refused", func(t *testing.T, ts *testServer) {
		var err error
		admin, err = ts.x.CreateToken(replay.LocalActor(), "ada", replay.RoleAdmin)
		if err != nil {
			t.Fatal(err)
		}
		var gone wire.Error
		ts.want(http.StatusGone, "POST", "/api/v1/recordings", admin, bytes.NewReader(tutorial), &gone)
		if gone.Takedown == nil || gone.Takedown.By != "moritz" || gone.Takedown.Reason != "ticket 4711" {
			t.Errorf("410 body: %+v", gone)
		}
		var log struct {
			Entries []archive.AuditEntry `json:"entries"`
		}
		ts.want(http.StatusOK, "GET", "/api/v1/audit?limit=50", admin, nil, &log)
		seen := map[string]bool{}
		for _, e := range log.Entries {
			seen[e.Action] = true
		}
		for _, a := range []string{archive.AuditIngest, archive.AuditFlag, archive.AuditHold, archive.AuditTakedown, archive.AuditTokenCreate} {
			if !seen[a] {
				t.Errorf("audit log has no %q entry: %+v", a, log.Entries)
			}
		}
	})

	// Retention and prune: dry run first.
	step("retention", func(t *testing.T, ts *testServer) {
		ts.want(http.StatusOK, "PUT", "/api/v1/retention", admin, strings.NewReader(`{"max_age":"1d"}`), nil)
		var pr wire.Prune
		ts.want(http.StatusOK, "POST", "/api/v1/prune", admin, nil, &pr)
		if !pr.DryRun || pr.Plan == nil || pr.Report != nil {
			t.Errorf("prune without dry_run:false must be a dry run: %+v", pr)
		}
		ts.want(http.StatusBadRequest, "PUT", "/api/v1/retention", admin, strings.NewReader(`{"formats":["nosuch"],"max_age":"1d"}`), nil)
	})

	// Errors are JSON with the right status.
	step("errors", func(t *testing.T, ts *testServer) {
		ts.want(http.StatusNotFound, "GET", "/api/v1/nosuch", admin, nil, nil)
		ts.want(http.StatusNotFound, "GET", "/api/v1/recordings/ffffffff", admin, nil, nil)
		ts.want(http.StatusBadRequest, "GET", "/api/v1/recordings?limit=0", admin, nil, nil)

		code, metrics, _ := ts.do("GET", "/metrics", "", nil)
		if code != http.StatusOK || !bytes.Contains(metrics, []byte("replay_http_requests_total")) || !bytes.Contains(metrics, []byte(`replay_ingests_total{outcome="ingested"}`)) {
			t.Errorf("/metrics: %d\n%.500s", code, metrics)
		}
		if code, body, _ := ts.do("GET", "/healthz", "", nil); code != http.StatusOK {
			t.Errorf("/healthz: %d %s", code, body)
		}
	})
}

// endless is an upload body of n bytes that are never held in memory.
type endless struct{ n int64 }

func (e *endless) Read(p []byte) (int, error) {
	if e.n <= 0 {
		return 0, io.EOF
	}
	k := min(int64(len(p)), e.n)
	clear(p[:k])
	e.n -= k
	return int(k), nil
}

func TestUploadTooLargeIsStreamed(t *testing.T) {
	ts := start(t, server.Config{MaxUpload: 32 << 20})
	// 1 GiB without a Content-Length: the server must stream and stop at
	// its limit, not buffer the body.
	var status int
	var body []byte
	peak := memtest.Peak(func() {
		req, err := http.NewRequest("POST", ts.url+"/api/v1/recordings?name=big.teehistorian", io.MultiReader(&endless{n: 1 << 30}))
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength = -1
		req.Header.Set("Authorization", "Bearer "+ts.owner)
		req.Header.Set("Content-Type", "application/octet-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		status = resp.StatusCode
	})
	if status != http.StatusRequestEntityTooLarge || !bytes.Contains(body, []byte("too_large")) {
		t.Fatalf("1 GiB upload over a 32 MiB limit: %d %s", status, body)
	}
	if peak > 32<<20 {
		t.Errorf("the live heap grew by %d MiB during the upload", peak>>20)
	}
	if ents, _ := os.ReadDir(filepath.Join(ts.x.Dir(), "tmp")); len(ents) != 0 {
		t.Errorf("upload spool left behind: %v", ents)
	}
}

func TestNonLoopbackListenNeedsTokens(t *testing.T) {
	x, err := replay.Open(filepath.Join(t.TempDir(), "a"), replay.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	err = server.New(x, server.Config{}).ListenAndServe(context.Background(), "0.0.0.0:0", "", "", time.Second, nil)
	if err == nil || !strings.Contains(err.Error(), "no token exists") {
		t.Fatalf("listen on 0.0.0.0 without tokens: %v", err)
	}
}

func TestFailedTokensAreLimited(t *testing.T) {
	ts := start(t, server.Config{})
	if _, err := ts.x.CreateToken(replay.LocalActor(), "v", replay.RoleViewer); err != nil {
		t.Fatal(err)
	}
	codes := map[int]int{}
	for i := range 15 {
		code, _, _ := ts.do("GET", "/api/v1/whoami", fmt.Sprintf("rpa_guess%d", i), nil)
		codes[code]++
	}
	if codes[http.StatusUnauthorized] != 10 || codes[http.StatusTooManyRequests] != 5 {
		t.Errorf("15 bad tokens: %v; want 10×401 then 429", codes)
	}
}

// TestShutdownRollsBackAnUnfinishedUpload: an upload still streaming when
// the server is told to stop, past the grace period, leaves nothing behind:
// no recording, no spool file.
func TestShutdownRollsBackAnUnfinishedUpload(t *testing.T) {
	x, err := replay.Open(filepath.Join(t.TempDir(), "archive"), replay.Options{Create: true, Archive: archive.Options{NoSync: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	tutorial := corpusFile(t, "Tutorial.teehistorian")
	owner := replay.NewSecret()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- server.New(x, server.Config{LocalSecret: owner}).ListenAndServe(ctx, "127.0.0.1:0", "", "", 200*time.Millisecond, func(u string) { ready <- u })
	}()
	url := <-ready
	pr, pw := io.Pipe()
	go func() {
		pw.Write(tutorial[:len(tutorial)/2]) // half the file, then silence
	}()
	upload := make(chan error, 1)
	go func() {
		req, _ := http.NewRequest("POST", url+"/api/v1/recordings?name=half.teehistorian", pr)
		req.Header.Set("Authorization", "Bearer "+owner)
		req.Header.Set("Content-Type", "application/octet-stream")
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		upload <- err
	}()
	// Wait until the upload is being spooled, then stop the server.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if ents, _ := os.ReadDir(filepath.Join(x.Dir(), "tmp")); len(ents) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the upload never started spooling")
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
	pw.CloseWithError(errors.New("client gave up"))
	<-upload
	st, err := x.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Recordings != 0 {
		t.Errorf("%d recordings after an upload cut short by shutdown", st.Recordings)
	}
	if ents, _ := os.ReadDir(filepath.Join(x.Dir(), "tmp")); len(ents) != 0 {
		t.Errorf("spool left behind: %v", ents)
	}
	if _, err := os.Stat(filepath.Join(x.Dir(), ownerauth.EndpointFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("endpoint file left behind after shutdown: %v", err)
	}
}

// TestEventsCompactAndFrameTypes: the column form of the events (the web
// page's) holds the same events as the objects, both answer 304 to their
// ETag, and frames?types= keeps only the frames of those types.
func TestEventsCompactAndFrameTypes(t *testing.T) {
	ts := start(t, server.Config{})
	var up wire.Upload
	ts.want(http.StatusCreated, "POST", "/api/v1/recordings?name=Tutorial.teehistorian", ts.owner, bytes.NewReader(corpusFile(t, "Tutorial.teehistorian")), &up)
	base := "/api/v1/recordings/" + up.ID
	var full struct {
		Events []wire.Event `json:"events"`
		Total  int          `json:"total"`
	}
	ts.want(http.StatusOK, "GET", base+"/events?from=10", ts.owner, nil, &full)
	var c wire.EventsCompact
	ts.want(http.StatusOK, "GET", base+"/events?from=10&compact=1", ts.owner, nil, &c)
	if len(full.Events) < 2 || c.Total != full.Total || len(c.Tick) != len(full.Events) || c.Strings[0] != "" {
		t.Fatalf("compact: total %d, %d events; objects: total %d, %d events", c.Total, len(c.Tick), full.Total, len(full.Events))
	}
	var tick, ms int64
	for i, e := range full.Events {
		tick += c.Tick[i]
		ms += c.TimeMS[i]
		got := wire.Event{Tick: tick, TimeMS: ms, At: e.At, Kind: c.Strings[c.Kind[i]], Player: c.Strings[c.Player[i]],
			PlayerID: c.Strings[c.PlayerID[i]], Text: c.Strings[c.Text[i]]}
		if got != e {
			t.Errorf("event %d: compact %+v, objects %+v", i, got, e)
		}
	}
	var short wire.EventsCompact
	ts.want(http.StatusOK, "GET", base+"/events?compact=1&limit=1", ts.owner, nil, &short)
	if short.Total < 2 || len(short.Tick) != 1 {
		t.Errorf("limit=1: total %d, %d events", short.Total, len(short.Tick))
	}
	for _, q := range []string{"/events?from=10", "/events?from=10&compact=1"} {
		code, _, hdr := ts.do("GET", base+q, ts.owner, nil)
		tag := hdr.Get("ETag")
		if code != http.StatusOK || tag == "" {
			t.Fatalf("%s: %d, ETag %q", q, code, tag)
		}
		if code, body, _ := ts.do("GET", base+q, ts.owner, nil, "If-None-Match", tag); code != http.StatusNotModified || len(body) != 0 {
			t.Errorf("%s with its ETag: %d, %d bytes", q, code, len(body))
		}
	}
	if _, _, hdr := ts.do("GET", base+"/events?compact=1", ts.owner, nil); hdr.Get("ETag") == "" {
		t.Error("no ETag")
	} else if code, _, _ := ts.do("GET", base+"/events", ts.owner, nil, "If-None-Match", hdr.Get("ETag")); code != http.StatusOK {
		t.Errorf("the compact form's ETag answers the objects' request with %d", code)
	}

	types := map[string]int{}
	code, all, _ := ts.do("GET", base+"/frames?from=0&to=200", ts.owner, nil)
	if code != http.StatusOK {
		t.Fatalf("frames: %d %s", code, all)
	}
	count := func(body []byte, into map[string]int) {
		for _, line := range bytes.Split(bytes.TrimSpace(body), []byte("\n")) {
			var f struct{ Type string }
			if err := json.Unmarshal(line, &f); err != nil {
				t.Fatalf("frames line %q: %v", line, err)
			}
			into[f.Type]++
		}
	}
	count(all, types)
	if types["player_diff"] == 0 || len(types) < 3 {
		t.Fatalf("frames 0-200: %v", types)
	}
	code, some, _ := ts.do("GET", base+"/frames?from=0&to=200&types=player_diff,player_new", ts.owner, nil)
	got := map[string]int{}
	count(some, got)
	if code != http.StatusOK || len(got) == 0 || got["player_diff"] != types["player_diff"] || got["player_new"] != types["player_new"] || len(got) > 2 {
		t.Errorf("types=player_diff,player_new: %d, %v (all: %v)", code, got, types)
	}
}

// TestScheduledRecompress: a server with --recompress-every re-encodes an
// uploaded recording on its own, which then exports byte-identical.
func TestScheduledRecompress(t *testing.T) {
	ts := start(t, server.Config{RecompressEvery: 20 * time.Millisecond})
	game := teehistoriangen.Must(t, teehistoriangen.Options{Duration: time.Minute, Seed: 21})
	var up wire.Upload
	ts.want(http.StatusCreated, "POST", "/api/v1/recordings?name=g.teehistorian", ts.owner, bytes.NewReader(game), &up)
	before := up.StoredBytes
	deadline := time.Now().Add(10 * time.Second)
	for {
		m, err := ts.x.Manifest(up.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !m.Recompressed.IsZero() {
			if m.StoredBytes >= before {
				t.Errorf("stored %d bytes before the pass, %d after", before, m.StoredBytes)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("not recompressed within 10 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	body := ts.want(http.StatusOK, "GET", "/api/v1/recordings/"+up.ID+"/file", ts.owner, nil, nil)
	if !bytes.Equal(body, game) {
		t.Errorf("download after the pass: %d bytes, differs from the %d uploaded", len(body), len(game))
	}
}
