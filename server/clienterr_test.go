package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
	"github.com/replayarchive/replay/server"
	"github.com/replayarchive/replay/wire"
)

// errorLog counts the records logged at ERROR.
type errorLog struct {
	mu   sync.Mutex
	msgs []string
}

func (l *errorLog) Enabled(_ context.Context, lv slog.Level) bool { return lv >= slog.LevelError }
func (l *errorLog) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	msg := r.Message
	r.Attrs(func(a slog.Attr) bool { msg += " " + a.String(); return true })
	l.msgs = append(l.msgs, msg)
	return nil
}
func (l *errorLog) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *errorLog) WithGroup(string) slog.Handler      { return l }

// TestClientMistakesAre4xx: every endpoint that takes a recording id
// answers odd ids with the 4xx that fits and its code (an ambiguous prefix
// names the ids it matches), and so do a bad flag name, removing what is
// not there, a conversion to the recording's own format, a range that ends
// before it starts and lifting an unknown takedown. None is logged as an
// error.
func TestClientMistakesAre4xx(t *testing.T) {
	var errs errorLog
	ts := start(t, server.Config{Logger: slog.New(&errs)})
	// 17 recordings: two of them share their first hex digit.
	byDigit := map[byte][]string{}
	var amb string
	for seed := uint64(1); seed <= 17; seed++ {
		id, _ := ts.ingestGame(teehistoriangen.Options{Duration: 5 * time.Second, Players: 2, Seed: 100 + seed})
		byDigit[id[0]] = append(byDigit[id[0]], id)
		if len(byDigit[id[0]]) == 2 {
			amb = id[:1]
		}
	}
	one := byDigit[amb[0]][0]
	mod := ts.token("mia", replay.RoleModerator)

	ids := []struct{ ref, status, code string }{
		{"zz", "400", "bad_request"},
		{"..%2Fx", "400", "bad_request"},
		{strings.Repeat("a", 300), "400", "bad_request"},
		{"0123456789abcdef0123456789abcdef", "404", "not_found"},
		{amb, "409", "ambiguous"},
	}
	endpoints := []struct{ method, path, body string }{
		{"GET", "/api/v1/recordings/ID", ""},
		{"GET", "/api/v1/recordings/ID/events", ""},
		{"GET", "/api/v1/recordings/ID/frames", ""},
		{"GET", "/api/v1/recordings/ID/file?redact=1", ""},
		{"GET", "/api/v1/recordings/ID/clip?from=0&to=50", ""},
		{"GET", "/api/v1/recordings/ID/export?format=butter", ""},
		{"GET", "/api/v1/recordings/ID/audit", ""},
		{"PUT", "/api/v1/recordings/ID/flags/grief", `{"note":"n"}`},
		{"DELETE", "/api/v1/recordings/ID/flags/grief", ""},
		{"PUT", "/api/v1/recordings/ID/hold", `{"reason":"r"}`},
		{"DELETE", "/api/v1/recordings/ID/hold", ""},
		{"DELETE", "/api/v1/recordings/ID", `{"reason":"r"}`},
	}
	check := func(method, path, body, status, code string) Error {
		t.Helper()
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		got, b, _ := ts.do(method, path, mod, rd)
		var e Error
		json.Unmarshal(b, &e)
		if strconv.Itoa(got) != status || e.Code != code {
			t.Errorf("%s %s: %d %.200s, want %s %s", method, path, got, b, status, code)
		}
		return e
	}
	for _, ep := range endpoints {
		for _, id := range ids {
			e := check(ep.method, strings.Replace(ep.path, "ID", id.ref, 1), ep.body, id.status, id.code)
			if id.code == "ambiguous" && !sameSet(e.IDs, byDigit[amb[0]]) {
				t.Errorf("%s %s: ambiguous prefix lists %v, want %v", ep.method, ep.path, e.IDs, byDigit[amb[0]])
			}
		}
	}

	check("PUT", "/api/v1/recordings/"+one+"/flags/two%20words", `{"note":"n"}`, "400", "bad_request")
	check("PUT", "/api/v1/recordings/"+one+"/flags/"+strings.Repeat("x", 65), `{"note":"n"}`, "400", "bad_request")
	check("DELETE", "/api/v1/recordings/"+one+"/flags/never-set", "", "404", "not_flagged")
	check("DELETE", "/api/v1/recordings/"+one+"/hold", "", "404", "not_held")
	check("GET", "/api/v1/recordings/"+one+"/export?format=teehistorian", "", "400", "bad_request")
	long, _ := ts.ingestGame(teehistoriangen.Options{Duration: time.Minute, Seed: 99})
	check("GET", "/api/v1/recordings/"+long+"/clip?from=200&to=100", "", "400", "bad_request")
	check("GET", "/api/v1/recordings/"+long+"/clip?from=-1", "", "400", "bad_request")
	check("GET", "/api/v1/recordings/"+long+"/frames?to=soon", "", "400", "bad_request")
	// A range that starts past the minute-long game's end.
	check("GET", "/api/v1/recordings/"+long+"/clip?from=2m", "", "400", "bad_request")
	check("GET", "/api/v1/recordings/"+long+"/events?from=1h", "", "400", "bad_request")
	code, b, _ := ts.do("DELETE", "/api/v1/takedowns/"+strings.Repeat("0", 64), ts.owner, nil)
	if code != http.StatusNotFound || !strings.Contains(string(b), `"not_found"`) {
		t.Errorf("lifting an unknown takedown: %d %s", code, b)
	}

	// A takedown prefix that names two taken-down recordings.
	for _, id := range byDigit[amb[0]] {
		check("DELETE", "/api/v1/recordings/"+id, `{"reason":"r","now":true}`, "200", "")
	}
	code, b, _ = ts.do("DELETE", "/api/v1/takedowns/"+amb, ts.owner, nil)
	var e Error
	json.Unmarshal(b, &e)
	if code != http.StatusConflict || e.Code != "ambiguous" || !sameSet(e.IDs, byDigit[amb[0]]) {
		t.Errorf("lifting an ambiguous takedown prefix: %d %s", code, b)
	}

	errs.mu.Lock()
	defer errs.mu.Unlock()
	if len(errs.msgs) > 0 {
		t.Errorf("client mistakes logged as errors: %q", errs.msgs)
	}
}

// Error is the API's error body as the tests read it.
type Error = wire.Error

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// TestReadOnlyNodeRefusesChanges: a server over an archive opened
// read-only answers a change with 409 read_only, not 500.
func TestReadOnlyNodeRefusesChanges(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "archive")
	w, err := replay.Open(dir, replay.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	x, err := replay.Open(dir, replay.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	secret := replay.NewSecret()
	srv := httptest.NewServer(server.New(x, server.Config{LocalSecret: secret}).Handler())
	defer srv.Close()
	req, _ := http.NewRequest("PUT", srv.URL+"/api/v1/retention", strings.NewReader(`{"max_age":"30d"}`))
	req.Header.Set("Authorization", "Bearer "+secret)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusConflict || !strings.Contains(string(b), `"read_only"`) {
		t.Errorf("a change on a read-only node: %d %s", resp.StatusCode, b)
	}
}

// TestUploadCutShortIsNotAnError: a client whose connection drops in the
// middle of an upload's body is the client's doing: nothing is logged as an
// error and nothing is archived.
func TestUploadCutShortIsNotAnError(t *testing.T) {
	var errs errorLog
	ts := start(t, server.Config{Logger: slog.New(&errs)})
	admin := ts.token("ada", replay.RoleAdmin)
	conn, err := net.Dial("tcp", strings.TrimPrefix(ts.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	body := teehistoriangen.Must(t, teehistoriangen.Options{Duration: 20 * time.Second, Players: 4, Seed: 7})
	fmt.Fprintf(conn, "POST /api/v1/recordings?name=cut.teehistorian HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/octet-stream\r\nContent-Length: %d\r\n\r\n", strings.TrimPrefix(ts.url, "http://"), admin, len(body))
	conn.Write(body[:len(body)/2])
	spools := func() int {
		m, _ := filepath.Glob(filepath.Join(ts.x.Dir(), "tmp", "upload-*"))
		return len(m)
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 5 s", what)
			}
		}
	}
	waitFor("the upload's spool", func() bool { return spools() == 1 })
	conn.Close()
	waitFor("the cut upload's end", func() bool { return spools() == 0 })
	if st, err := ts.x.Stats(t.Context()); err != nil || st.Recordings != 0 {
		t.Fatalf("after a cut upload: %v recordings, %v", st, err)
	}
	errs.mu.Lock()
	defer errs.mu.Unlock()
	if len(errs.msgs) > 0 {
		t.Errorf("a client's cut upload logged as an error: %q", errs.msgs)
	}
}
