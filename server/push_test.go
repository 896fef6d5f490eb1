package server_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
	"github.com/replayarchive/replay/server"
	"github.com/replayarchive/replay/wire"
)

// pushReply is a push endpoint's answer: the state (200) or an error.
type pushReply struct {
	Source, State, ID, SHA256, Note string
	Have                            int64
	Error, Code                     string
	Takedown                        *archive.Takedown
}

// push sends body as the bytes of source from offset and returns the
// status and the answer.
func (ts *testServer) push(token, source string, offset int64, body []byte, final bool) (int, pushReply) {
	ts.t.Helper()
	path := fmt.Sprintf("/api/v1/push/%s?offset=%d", source, offset)
	if final {
		path += "&final=1"
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	code, b, _ := ts.do("PUT", path, token, rd, "Content-Type", "application/octet-stream")
	var r pushReply
	if err := json.Unmarshal(b, &r); err != nil {
		ts.t.Fatalf("PUT %s: %d %v in %q", path, code, err, b)
	}
	return code, r
}

// pushOK is push that must answer 200.
func (ts *testServer) pushOK(token, source string, offset int64, body []byte, final bool) pushReply {
	ts.t.Helper()
	code, r := ts.push(token, source, offset, body, final)
	if code != http.StatusOK {
		ts.t.Fatalf("push %s at %d (%d bytes, final %v): %d %+v", source, offset, len(body), final, code, r)
	}
	return r
}

// pushState is GET /api/v1/push/source.
func (ts *testServer) pushState(token, source string) (int, pushReply) {
	ts.t.Helper()
	code, b, _ := ts.do("GET", "/api/v1/push/"+source, token, nil)
	var r pushReply
	if err := json.Unmarshal(b, &r); err != nil {
		ts.t.Fatalf("GET %s: %d %v in %q", source, code, err, b)
	}
	return code, r
}

// pushPieces pushes file[from:] in pieces of size n, the last one final
// when final is set, each answered 200 with the bytes held so far.
func (ts *testServer) pushPieces(token, source string, file []byte, from, n int, final bool) pushReply {
	ts.t.Helper()
	var r pushReply
	for off := from; off < len(file); off += n {
		end := min(off+n, len(file))
		r = ts.pushOK(token, source, int64(off), file[off:end], final && end == len(file))
		if r.Have != int64(end) {
			ts.t.Fatalf("push %s [%d,%d): have %d", source, off, end, r.Have)
		}
	}
	return r
}

// recording returns GET /api/v1/recordings/id.
func (ts *testServer) recording(token, id string) wire.Recording {
	ts.t.Helper()
	var rec wire.Recording
	ts.want(http.StatusOK, "GET", "/api/v1/recordings/"+id, token, nil, &rec)
	return rec
}

// fileOf returns the recording's original file.
func (ts *testServer) fileOf(token, id string) []byte {
	ts.t.Helper()
	return ts.want(http.StatusOK, "GET", "/api/v1/recordings/"+id+"/file", token, nil, nil)
}

// uploaded uploads file to a second, fresh server and returns what that
// archive made of it: the reference a pushed recording is compared with.
func uploaded(t *testing.T, file []byte) wire.Recording {
	t.Helper()
	other := start(t, server.Config{})
	var up wire.Upload
	other.want(http.StatusCreated, "POST", "/api/v1/recordings?name=whole.teehistorian", other.owner, bytes.NewReader(file), &up)
	return other.recording(other.owner, up.ID)
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func TestPushSourceValidation(t *testing.T) {
	ts := start(t, server.Config{})
	pusher := ts.token("gs1", replay.RolePusher)
	seg128 := strings.Repeat("a", 128)
	cases := []struct {
		source string // as it goes in the URL path
		ok     bool
	}{
		{"a", true},
		{"gs1/teehistorian/0e3f9a7c-1d2e-4f50-8a6b-7c8d9e0f1a2b.teehistorian", true},
		{"A-Z_a~z.0-9/x.y.z", true},
		{"1/2/3/4/5/6/7/8", true},
		{seg128 + "/" + seg128, true},
		{"x.", runtime.GOOS != "windows"}, // Windows drops a trailing dot
		{"CON.txt", runtime.GOOS != "windows"},

		{"", false},
		{"1/2/3/4/5/6/7/8/9", false},
		{seg128 + "a", false},
		{".hidden", false},
		{"gs1/.state", false},
		{"a/%2E%2E", false},   // ".." in one segment, escaped: the mux does not clean it
		{"a%2F..%2Fb", false}, // "a/../b" in one escaped segment
		{"a%20b", false},
		{"a%5Cb", false}, // backslash
		{"a%3Ab", false}, // colon
		{"caf%C3%A9", false},
		{"a%00b", false},
		{"a%2F%2Fb", false}, // an empty segment
		{"a%2F", false},     // a trailing empty segment
	}
	for _, c := range cases {
		t.Run(c.source, func(t *testing.T) {
			ts := ts.on(t)
			for _, method := range []string{"GET", "PUT"} {
				var code int
				var r pushReply
				if method == "GET" {
					code, r = ts.pushState(pusher, c.source)
				} else {
					code, r = ts.push(pusher, c.source, 0, []byte("x"), false)
				}
				switch {
				case c.ok && code != http.StatusOK:
					t.Errorf("%s %q: %d %+v, want 200", method, c.source, code, r)
				case !c.ok && (code != http.StatusBadRequest || r.Code != "bad_request"):
					t.Errorf("%s %q: %d %+v, want 400 bad_request", method, c.source, code, r)
				}
			}
		})
	}
	// Offsets and finals that are not numbers or flags.
	for _, q := range []string{"", "offset=", "offset=-1", "offset=x", "offset=0&final=yes"} {
		code, b, _ := ts.do("PUT", "/api/v1/push/a?"+q, pusher, strings.NewReader("x"), "Content-Type", "application/octet-stream")
		if code != http.StatusBadRequest || !strings.Contains(string(b), `"bad_request"`) {
			t.Errorf("PUT ?%s: %d %s, want 400 bad_request", q, code, b)
		}
	}
	// A directory of one source cannot be another's file.
	ts.pushOK(pusher, "d/f", 0, []byte("x"), false)
	if code, r := ts.push(pusher, "d", 0, []byte("x"), false); code != http.StatusConflict || r.Code != "source_conflict" {
		t.Errorf("a source that is another's directory: %d %+v", code, r)
	}
	if code, r := ts.push(pusher, "d/f/g", 0, []byte("x"), false); code != http.StatusConflict || r.Code != "source_conflict" {
		t.Errorf("a source below another's file: %d %+v", code, r)
	}
}

// TestPushLiveRecording pushes a growing teehistorian file in pieces: it
// is a live recording searchable before its end, sealed by the final
// push byte-identical with the events a whole upload of the same bytes
// has; retries change nothing, a gap, a rewrite and bytes past the seal
// are refused with the bytes held.
func TestPushLiveRecording(t *testing.T) {
	ts := start(t, server.Config{})
	pusher := ts.token("gs1", replay.RolePusher)
	file := teehistoriangen.Must(t, teehistoriangen.Options{Duration: time.Minute, Players: 8, Seed: 5, CommandsPerHour: 600, NoFinish: true})
	const src = "gs1/teehistorian/game.teehistorian"

	if code, r := ts.pushState(pusher, src); code != http.StatusOK || r.State != "new" || r.Have != 0 || r.ID != "" {
		t.Fatalf("unknown source: %d %+v", code, r)
	}
	if r := ts.pushOK(pusher, src, 0, nil, false); r.State != "new" || r.Have != 0 {
		t.Fatalf("an empty push to a new source: %+v", r)
	}
	// A header cut short is held, not yet live.
	if r := ts.pushOK(pusher, src, 0, file[:10], false); r.State != "waiting" || r.Have != 10 {
		t.Fatalf("10 bytes: %+v", r)
	}
	piece := len(file)/16 + 1
	half := len(file) / 2
	r := ts.pushPieces(pusher, src, file[:half], 10, piece, false)
	if r.State != "live" || r.ID == "" {
		t.Fatalf("half pushed: %+v", r)
	}
	id := r.ID

	// Live: found by a search, and its events are there.
	var res wire.Search
	ts.want(http.StatusOK, "GET", "/api/v1/recordings?q=id:"+id, ts.owner, nil, &res)
	if res.Total != 1 || res.Hits[0].ID != id {
		t.Fatalf("the live recording is not found: %+v", res)
	}
	if rec := ts.recording(ts.owner, id); rec.EventCount == 0 || rec.NativeBytes > int64(half) {
		t.Fatalf("live recording: %d events, %d bytes (pushed %d)", rec.EventCount, rec.NativeBytes, half)
	}
	if code, g := ts.pushState(pusher, src); code != http.StatusOK || g.Have != int64(half) || g.State != "live" || g.ID != id {
		t.Fatalf("GET while live: %d %+v", code, g)
	}

	// A retried piece changes nothing, nor does one that straddles the
	// end of what is held and adds nothing new.
	before := ts.recording(ts.owner, id)
	if r := ts.pushOK(pusher, src, int64(piece), file[piece:2*piece], false); r.Have != int64(half) || r.State != "live" {
		t.Fatalf("a retried piece: %+v", r)
	}
	if after := ts.recording(ts.owner, id); after.NativeBytes != before.NativeBytes || after.EventCount != before.EventCount {
		t.Fatalf("a retried piece changed the recording: %d bytes %d events, was %d %d", after.NativeBytes, after.EventCount, before.NativeBytes, before.EventCount)
	}
	// A gap.
	if code, r := ts.push(pusher, src, int64(half+1), file[half+1:half+100], false); code != http.StatusConflict || r.Code != "offset_gap" || r.Have != int64(half) {
		t.Fatalf("a gap: %d %+v", code, r)
	}
	// A rewrite: one byte differs from what is held (the piece also
	// reaches past the end: nothing of it is appended).
	bad := bytes.Clone(file[half-50 : half+50])
	bad[10] ^= 0xff
	if code, r := ts.push(pusher, src, int64(half-50), bad, false); code != http.StatusConflict || r.Code != "rewrite" || r.Have != int64(half) ||
		!strings.Contains(r.Error, fmt.Sprint(half-40)) {
		t.Fatalf("a rewrite: %d %+v", code, r)
	}
	if _, g := ts.pushState(pusher, src); g.Have != int64(half) {
		t.Fatalf("after the refused pushes: have %d, want %d", g.Have, half)
	}

	// The rest, a piece overlapping what is held first; then the final
	// push, empty.
	r = ts.pushOK(pusher, src, int64(half-100), file[half-100:half+piece], false)
	if r.Have != int64(half+piece) {
		t.Fatalf("an overlapping piece: %+v", r)
	}
	r = ts.pushPieces(pusher, src, file, half+piece, piece, false)
	if r.State != "live" || r.Have != int64(len(file)) {
		t.Fatalf("all pushed: %+v", r)
	}
	r = ts.pushOK(pusher, src, int64(len(file)), nil, true)
	if r.State != "sealed" || r.ID != id || r.Have != int64(len(file)) || r.SHA256 != sha(file) {
		t.Fatalf("final: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(ts.x.Dir(), "push", filepath.FromSlash(src))); !os.IsNotExist(err) {
		t.Errorf("the mirror is kept after the seal: %v", err)
	}

	// Sealed: byte-identical, the events of a whole upload.
	if got := ts.fileOf(ts.owner, id); !bytes.Equal(got, file) {
		t.Fatalf("the sealed recording's file is %d bytes, not the %d pushed", len(got), len(file))
	}
	rec, whole := ts.recording(ts.owner, id), uploaded(t, file)
	if rec.ID != whole.ID || rec.EventCount != whole.EventCount || rec.SHA256 != whole.SHA256 || rec.NativeBytes != whole.NativeBytes {
		t.Fatalf("pushed: %s %d events %s; uploaded whole: %s %d events %s", rec.ID, rec.EventCount, rec.SHA256, whole.ID, whole.EventCount, whole.SHA256)
	}

	// After the seal: bytes it held are answered (a retry), not past them.
	for _, c := range []struct{ off, end int }{{0, 100}, {half, len(file)}, {len(file), len(file)}} {
		if r := ts.pushOK(pusher, src, int64(c.off), file[c.off:c.end], c.end == len(file)); r.State != "sealed" || r.ID != id || r.Have != int64(len(file)) {
			t.Errorf("a retry [%d,%d) after the seal: %+v", c.off, c.end, r)
		}
	}
	for _, off := range []int{len(file) - 10, len(file), len(file) + 5} {
		if code, r := ts.push(pusher, src, int64(off), []byte(strings.Repeat("x", 20)), false); code != http.StatusConflict || r.Code != "sealed" || r.Have != int64(len(file)) {
			t.Errorf("20 bytes at %d after the seal: %d %+v", off, code, r)
		}
	}
	if code, g := ts.pushState(pusher, src); code != http.StatusOK || g.State != "sealed" || g.Have != int64(len(file)) || g.ID != id {
		t.Fatalf("GET after the seal: %d %+v", code, g)
	}
	body := string(ts.want(http.StatusOK, "GET", "/metrics", "", nil, nil))
	if !strings.Contains(body, fmt.Sprintf("replay_push_bytes_total %d", len(file))) || !strings.Contains(body, `replay_pushes_total{state="sealed"}`) {
		t.Errorf("push metrics:\n%s", grepLines(body, "replay_push"))
	}
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestPushRoles: only a pusher or an admin pushes; a pusher reads nothing.
func TestPushRoles(t *testing.T) {
	ts := start(t, server.Config{})
	id, _ := ts.ingestGame(teehistoriangen.Options{Duration: 5 * time.Second, Players: 2, Seed: 3})
	var created struct{ Name, Role, Token string }
	ts.want(http.StatusCreated, "POST", "/api/v1/tokens", ts.owner, strings.NewReader(`{"name":"gs1","role":"pusher"}`), &created)
	pusher := created.Token
	if created.Role != "pusher" {
		t.Fatalf("token created: %+v", created)
	}
	viewer, mod := ts.token("vera", replay.RoleViewer), ts.token("mia", replay.RoleModerator)
	admin := ts.token("ada", replay.RoleAdmin)

	for _, tok := range []string{viewer, mod} {
		if code, r := ts.pushState(tok, "a"); code != http.StatusForbidden || r.Code != "forbidden" || !strings.Contains(r.Error, "pusher") {
			t.Errorf("GET push as viewer or moderator: %d %+v", code, r)
		}
		if code, r := ts.push(tok, "a", 0, []byte("x"), false); code != http.StatusForbidden || r.Code != "forbidden" {
			t.Errorf("PUT push as viewer or moderator: %d %+v", code, r)
		}
	}
	if r := ts.pushOK(pusher, "a", 0, []byte("x"), false); r.Have != 1 {
		t.Errorf("a pusher's push: %+v", r)
	}
	if r := ts.pushOK(admin, "a", 1, []byte("y"), false); r.Have != 2 {
		t.Errorf("an admin's push: %+v", r)
	}
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/api/v1/recordings", ""},
		{"GET", "/api/v1/recordings?q=format:teehistorian", ""},
		{"GET", "/api/v1/recordings/" + id, ""},
		{"GET", "/api/v1/recordings/" + id + "/file", ""},
		{"GET", "/api/v1/recordings/" + id + "/events", ""},
		{"GET", "/api/v1/stats", ""},
		{"GET", "/api/v1/whoami", ""},
		{"PUT", "/api/v1/recordings/" + id + "/flags/grief", `{"note":"n"}`},
		{"DELETE", "/api/v1/recordings/" + id, `{"reason":"r"}`},
		{"POST", "/api/v1/recordings?name=x.teehistorian", "x"},
		{"GET", "/api/v1/tokens", ""},
	} {
		var body io.Reader
		if c.body != "" {
			body = strings.NewReader(c.body)
		}
		ts.want(http.StatusForbidden, c.method, c.path, pusher, body, nil)
	}
	if role, err := replay.ParseRole("pusher"); err != nil || role != replay.RolePusher || role >= replay.RoleViewer || role.String() != "pusher" {
		t.Errorf("ParseRole(pusher): %v %v", role, err)
	}
}

// TestPushTakenDown: a live recording taken down while it is pushed
// answers 410 at the next push and its bytes go; the same game pushed
// again under another name is refused too.
func TestPushTakenDown(t *testing.T) {
	ts := start(t, server.Config{})
	pusher := ts.token("gs1", replay.RolePusher)
	mod := ts.token("mia", replay.RoleModerator)
	file := teehistoriangen.Must(t, teehistoriangen.Options{Duration: 20 * time.Second, Players: 4, Seed: 9})
	const src = "gs1/taken.teehistorian"
	half := len(file) / 2
	r := ts.pushOK(pusher, src, 0, file[:half], false)
	if r.State != "live" {
		t.Fatalf("half pushed: %+v", r)
	}
	ts.want(http.StatusOK, "DELETE", "/api/v1/recordings/"+r.ID, mod, strings.NewReader(`{"reason":"cheating"}`), nil)

	code, g := ts.push(pusher, src, int64(half), file[half:], false)
	if code != http.StatusGone || g.Code != "taken_down" || g.Takedown == nil || g.Takedown.Reason != "cheating" {
		t.Fatalf("a push after the takedown: %d %+v", code, g)
	}
	if _, err := os.Stat(filepath.Join(ts.x.Dir(), "push", filepath.FromSlash(src))); !os.IsNotExist(err) {
		t.Errorf("a taken-down source's bytes are kept: %v", err)
	}
	if code, g := ts.pushState(pusher, src); code != http.StatusGone || g.Code != "taken_down" {
		t.Errorf("GET of a taken-down source: %d %+v", code, g)
	}
	if code, g := ts.push(pusher, src, 0, file[:100], false); code != http.StatusGone || g.Code != "taken_down" {
		t.Errorf("a retry to a taken-down source: %d %+v", code, g)
	}
	// The same game under another name, whole and final, and in pieces.
	if code, g := ts.push(pusher, "gs1/again.teehistorian", 0, file, true); code != http.StatusGone || g.Code != "taken_down" {
		t.Errorf("the taken-down game pushed again whole: %d %+v", code, g)
	}
	if code, g := ts.push(pusher, "gs1/again2.teehistorian", 0, file[:half], false); code != http.StatusGone || g.Code != "taken_down" {
		t.Errorf("the taken-down game pushed again: %d %+v", code, g)
	}
	if st, err := ts.x.Stats(t.Context()); err != nil || st.Recordings != 0 {
		t.Errorf("recordings after the takedown: %+v %v", st, err)
	}
}

// TestPushNotLive: a compressed teehistorian file is held until its final
// push, then ingested whole (the plain file is the recording); pushed
// again it is the same recording; a file of no format is 422.
func TestPushNotLive(t *testing.T) {
	ts := start(t, server.Config{})
	pusher := ts.token("gs1", replay.RolePusher)
	plain := teehistoriangen.Must(t, teehistoriangen.Options{Duration: 20 * time.Second, Players: 4, Seed: 11})
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(plain)
	zw.Close()
	file := gz.Bytes()

	const src = "gs1/old/game.teehistorian.gz"
	r := ts.pushPieces(ts.owner, src, file, 0, len(file)/3+1, false)
	if r.State != "waiting" || r.ID != "" || r.Have != int64(len(file)) {
		t.Fatalf("a compressed file before its final push: %+v", r)
	}
	r = ts.pushOK(pusher, src, int64(len(file)), nil, true)
	if r.State != "ingested" || r.ID == "" || r.SHA256 != sha(plain) {
		t.Fatalf("final: %+v", r)
	}
	if got := ts.fileOf(ts.owner, r.ID); !bytes.Equal(got, plain) {
		t.Fatalf("the ingested recording's file is not the plain file")
	}
	if r2 := ts.pushOK(pusher, src, 0, file[:50], false); r2.State != "ingested" || r2.ID != r.ID {
		t.Fatalf("a retry after ingest: %+v", r2)
	}
	// The same file under another name, in one final push: the recording
	// it is already.
	if r2 := ts.pushOK(pusher, "gs1/copy.teehistorian.gz", 0, file, true); r2.State != "ingested" || r2.ID != r.ID {
		t.Fatalf("the same file again: %+v", r2)
	}
	// Not a recording: 422, and the bytes stay held.
	junk := bytes.Repeat([]byte("not a replay "), 100)
	code, e := ts.push(pusher, "gs1/junk.bin", 0, junk, true)
	if code != http.StatusUnprocessableEntity || e.Code != "bad_input" || strings.Contains(e.Error, ts.x.Dir()) {
		t.Fatalf("junk: %d %+v", code, e)
	}
	if _, g := ts.pushState(pusher, "gs1/junk.bin"); g.State != "waiting" || g.Have != int64(len(junk)) {
		t.Fatalf("junk after its final push: %+v", g)
	}
	if code, e := ts.push(pusher, "gs1/empty", 0, nil, true); code != http.StatusUnprocessableEntity || e.Code != "bad_input" {
		t.Fatalf("an empty file's final push: %d %+v", code, e)
	}
}

// serveDir serves the archive in dir (created if need be) on a loopback
// port; stop closes the server and the archive (also at the test's end).
func serveDir(t *testing.T, dir string) (*testServer, func()) {
	t.Helper()
	x, err := replay.Open(dir, replay.Options{Create: true, Archive: archive.Options{NoSync: true}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan string, 1), make(chan error, 1)
	secret := replay.NewSecret()
	s := server.New(x, server.Config{LocalSecret: secret})
	go func() {
		done <- s.ListenAndServe(ctx, "127.0.0.1:0", "", "", 5*time.Second, func(u string) { ready <- u })
	}()
	var url string
	select {
	case url = <-ready:
	case err := <-done:
		t.Fatalf("serve: %v", err)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("serve: %v", err)
			}
			if err := x.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return &testServer{t: t, x: x, url: url, owner: secret}, stop
}

// TestPushRestart: the server stops in the middle of a pushed file, as a
// killed one would leave it: bytes past the last answered push in the
// mirror, and a push whose bytes and state were written but whose grow
// never ran. After the restart GET answers the bytes truly held and the
// pushes go on to a byte-identical seal.
func TestPushRestart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "archive")
	ts, stop := serveDir(t, dir)
	pusher := ts.token("gs1", replay.RolePusher)
	file := teehistoriangen.Must(t, teehistoriangen.Options{Duration: 40 * time.Second, Players: 6, Seed: 21, NoFinish: true})
	const src = "gs1/teehistorian/restart.teehistorian"
	piece := len(file)/8 + 1
	cut := 3 * piece
	r := ts.pushPieces(pusher, src, file[:cut], 0, piece, false)
	if r.State != "live" {
		t.Fatalf("before the restart: %+v", r)
	}
	id := r.ID
	held := ts.recording(ts.owner, id).NativeBytes
	stop()

	// A push that was written (mirror and state record) but not grown,
	// and the bytes of one that was cut short.
	mirror := filepath.Join(dir, "push", filepath.FromSlash(src))
	grown := cut + piece
	f, err := os.OpenFile(mirror, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(file[cut:grown])
	f.Write([]byte("bytes of a push that was never answered"))
	f.Close()
	sum := sha256.Sum256([]byte(src))
	statePath := filepath.Join(dir, "push", ".state", hex.EncodeToString(sum[:])+".json")
	var state map[string]any
	b, err := os.ReadFile(statePath)
	if err != nil {
		t.Fatalf("the state record: %v", err)
	}
	json.Unmarshal(b, &state)
	state["have"] = grown
	b, _ = json.Marshal(state)
	if err := os.WriteFile(statePath, b, 0o600); err != nil {
		t.Fatal(err)
	}

	ts, _ = serveDir(t, dir)
	if code, g := ts.pushState(pusher, src); code != http.StatusOK || g.Have != int64(grown) || g.State != "live" || g.ID != id {
		t.Fatalf("GET after the restart: %d %+v, want have %d", code, g, grown)
	}
	// The agent, which saw no answer for its last push, sends it again.
	r = ts.pushOK(pusher, src, int64(cut), file[cut:grown], false)
	if r.Have != int64(grown) || r.State != "live" {
		t.Fatalf("the retried push: %+v", r)
	}
	if rec := ts.recording(ts.owner, id); rec.NativeBytes <= held {
		t.Errorf("the retried push did not grow the recording: %d bytes, %d before the restart", rec.NativeBytes, held)
	}
	r = ts.pushPieces(pusher, src, file, grown, piece, true)
	if r.State != "sealed" || r.ID != id || r.SHA256 != sha(file) {
		t.Fatalf("final: %+v", r)
	}
	if got := ts.fileOf(ts.owner, id); !bytes.Equal(got, file) {
		t.Fatalf("sealed after a restart: %d bytes, not the file's %d", len(got), len(file))
	}
	if rec, whole := ts.recording(ts.owner, id), uploaded(t, file); rec.EventCount != whole.EventCount {
		t.Fatalf("sealed after a restart: %d events, a whole upload %d", rec.EventCount, whole.EventCount)
	}
}

// TestPushConcurrent pushes four files at once, each piece sent twice at
// the same time (a retry racing its original): every file seals
// byte-identical.
func TestPushConcurrent(t *testing.T) {
	ts := start(t, server.Config{})
	pusher := ts.token("gs1", replay.RolePusher)
	var wg sync.WaitGroup
	files := make([][]byte, 4)
	ids := make([]string, len(files))
	for i := range files {
		files[i] = teehistoriangen.Must(t, teehistoriangen.Options{Duration: 40 * time.Second, Players: 6, Seed: 40 + uint64(i), NoFinish: true})
		wg.Go(func() {
			file, src := files[i], fmt.Sprintf("gs%d/teehistorian/f.teehistorian", i)
			piece := len(file)/5 + 1
			for off := 0; off < len(file); off += piece {
				end := min(off+piece, len(file))
				var pair sync.WaitGroup
				var got [2]string
				for k := range 2 {
					pair.Go(func() {
						code, r := ts.push(pusher, src, int64(off), file[off:end], end == len(file))
						if code != http.StatusOK || r.Have != int64(end) || end == len(file) && r.State != "sealed" {
							t.Errorf("%s [%d,%d): %d %+v", src, off, end, code, r)
						}
						got[k] = r.ID
					})
				}
				pair.Wait()
				if got[0] != got[1] {
					t.Errorf("%s [%d,%d): the pair answered ids %q and %q", src, off, end, got[0], got[1])
				}
				ids[i] = got[0]
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	for i, file := range files {
		if got := ts.fileOf(ts.owner, ids[i]); !bytes.Equal(got, file) {
			t.Errorf("file %d: sealed %d bytes, pushed %d", i, len(got), len(file))
		}
	}
}

// TestPushLimits: a push of more than 16 MiB is 413, whether it says its
// length or not, and a client that drops mid-body is no server error;
// neither changes the bytes held.
func TestPushLimits(t *testing.T) {
	var errs errorLog
	ts := start(t, server.Config{Logger: slog.New(&errs)})
	pusher := ts.token("gs1", replay.RolePusher)
	ts.pushOK(pusher, "big", 0, []byte("abc"), false)
	big := make([]byte, replay.MaxPushBytes+1)
	copy(big, "abc")
	if code, r := ts.push(pusher, "big", 0, big, false); code != http.StatusRequestEntityTooLarge || r.Code != "too_large" {
		t.Errorf("16 MiB + 1 with its length: %d %+v", code, r)
	}
	// Chunked: no length said, the limit is met while the bytes stream.
	req, _ := http.NewRequest("PUT", ts.url+"/api/v1/push/big?offset=0", io.MultiReader(bytes.NewReader(big)))
	req.Header.Set("Authorization", "Bearer "+pusher)
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(b), `"too_large"`) {
		t.Errorf("16 MiB + 1 chunked: %d %s", resp.StatusCode, b)
	}
	if _, g := ts.pushState(pusher, "big"); g.Have != 3 {
		t.Errorf("after the refused pushes: have %d, want 3", g.Have)
	}
	if r := ts.pushOK(pusher, "big", 0, big[:replay.MaxPushBytes], false); r.Have != replay.MaxPushBytes {
		t.Errorf("16 MiB: %+v", r)
	}

	// Cut short: half the body, then the connection closes.
	body := teehistoriangen.Must(t, teehistoriangen.Options{Duration: 20 * time.Second, Players: 4, Seed: 7})
	const src = "gs1/cut.teehistorian"
	conn, err := net.Dial("tcp", strings.TrimPrefix(ts.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "PUT /api/v1/push/%s?offset=0 HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/octet-stream\r\nContent-Length: %d\r\n\r\n", src, strings.TrimPrefix(ts.url, "http://"), pusher, len(body))
	conn.Write(body[:len(body)/2])
	mirror := filepath.Join(ts.x.Dir(), "push", filepath.FromSlash(src))
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if st, err := os.Stat(mirror); err == nil && st.Size() > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the cut push's bytes never reached the mirror")
		}
	}
	conn.Close()
	// The next push of the source waits for the cut one to end.
	if r := ts.pushOK(pusher, src, 0, body[:100], false); r.Have != 100 || r.State != "waiting" && r.State != "live" {
		t.Errorf("after a cut push: %+v", r)
	}
	errs.mu.Lock()
	defer errs.mu.Unlock()
	if len(errs.msgs) > 0 {
		t.Errorf("logged as errors: %q", errs.msgs)
	}
}
