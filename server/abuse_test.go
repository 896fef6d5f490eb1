package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
	"github.com/replayarchive/replay/query"
	"github.com/replayarchive/replay/server"
	"github.com/replayarchive/replay/wire"
)

// ingestGame archives a generated teehistorian game and returns its id.
func (ts *testServer) ingestGame(opt teehistoriangen.Options) (string, []byte) {
	ts.t.Helper()
	b := teehistoriangen.Must(ts.t, opt)
	res, _, err := ts.x.IngestStream(context.Background(), fmt.Sprintf("game-%d.teehistorian", opt.Seed), bytes.NewReader(b), 0, replay.LocalActor())
	if err != nil || res.Err != "" {
		ts.t.Fatalf("ingest: %v %s", err, res.Err)
	}
	return res.ID.String(), b
}

// token creates a token with role and returns its secret.
func (ts *testServer) token(name string, role replay.Role) string {
	ts.t.Helper()
	tok, err := ts.x.CreateToken(replay.LocalActor(), name, role)
	if err != nil {
		ts.t.Fatal(err)
	}
	return tok
}

// dialSlowReader connects with a receive buffer of 4 KiB, set before the
// connection is made (setRecvBuffer), so that a client that stops reading
// stops the server's writes soon.
func dialSlowReader(t *testing.T, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = setRecvBuffer(fd, 4096) })
		return errors.Join(err, serr)
	}}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return conn
}

// TestSlowReaderBlocksNobody: a viewer asks for a redacted file and stops
// reading after the status line. The heavy slot its build took is free
// again, so other viewers' clips complete; the server closes the stalled
// connection once a write has waited WriteStall; the spool is gone.
func TestSlowReaderBlocksNobody(t *testing.T) {
	ts := start(t, server.Config{WriteStall: 300 * time.Millisecond})
	big, bigFile := ts.ingestGame(teehistoriangen.Options{Duration: 30 * time.Minute, Seed: 71})
	small, _ := ts.ingestGame(teehistoriangen.Options{Duration: 2 * time.Minute, Seed: 72})
	viewer := ts.token("vera", replay.RoleViewer)

	u, _ := url.Parse(ts.url)
	conn := dialSlowReader(t, u.Host)
	defer conn.Close()
	fmt.Fprintf(conn, "GET /api/v1/recordings/%s/file?redact=1 HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n", big, u.Host, viewer)
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	status, err := bufio.NewReaderSize(conn, 16).ReadString('\n') // the status line only: the build is done
	if err != nil || !strings.Contains(status, " 200 ") {
		t.Fatalf("stalled client's response: %q %v", status, err)
	}

	client := &http.Client{Timeout: 15 * time.Second}
	var slowest time.Duration
	for i := range 5 {
		req, _ := http.NewRequest("GET", fmt.Sprintf("%s/api/v1/recordings/%s/clip?from=%d&to=%d", ts.url, small, 100*i, 100*i+500), nil)
		req.Header.Set("Authorization", "Bearer "+viewer)
		began := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("clip %d while a reader is stalled: %v", i, err)
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		took := time.Since(began)
		if err != nil || resp.StatusCode != http.StatusOK || n == 0 {
			t.Fatalf("clip %d: %d, %d bytes, %v", i, resp.StatusCode, n, err)
		}
		slowest = max(slowest, took)
	}
	t.Logf("slowest of 5 clips while a reader is stalled: %v", slowest)
	if slowest > 5*time.Second {
		t.Errorf("a clip took %v while a reader is stalled", slowest)
	}

	// The stalled connection is closed by the server: reading it now ends
	// (EOF or reset) well before the whole file arrived.
	time.Sleep(time.Second)
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := io.Copy(io.Discard, conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the stalled connection is still open after %d more bytes", n)
	}
	if n >= int64(len(bigFile)) {
		t.Errorf("the stalled client got %d bytes of a %d-byte file: it was not cut off", n, len(bigFile))
	}
	left, _ := filepath.Glob(filepath.Join(ts.x.Dir(), "tmp", "download-*"))
	if len(left) > 0 {
		t.Errorf("spools left behind: %v", left)
	}
}

// TestManyRangesServedWhole: a Range header of 50,000 one-byte ranges,
// alternating between the start and the end of the file (each decoding a
// chunk of its own), is answered with the whole file at once; a few ranges
// still get a multipart answer.
func TestManyRangesServedWhole(t *testing.T) {
	ts := start(t, server.Config{})
	id, file := ts.ingestGame(teehistoriangen.Options{Duration: 2 * time.Minute, Seed: 73})
	var parts []string
	for i := range 50000 {
		off := i / 2
		if i%2 == 1 {
			off = len(file) - 1 - i/2
		}
		parts = append(parts, fmt.Sprintf("%d-%d", off, off))
	}
	began := time.Now()
	code, body, hdr := ts.do("GET", "/api/v1/recordings/"+id+"/file", ts.owner, nil, "Range", "bytes="+strings.Join(parts, ","))
	took := time.Since(began)
	t.Logf("50,000 ranges: %d, %d bytes in %v", code, len(body), took)
	if code != http.StatusOK || !bytes.Equal(body, file) {
		t.Errorf("50,000 ranges: %d %s, %d bytes; want 200 and the whole file", code, hdr.Get("Content-Type"), len(body))
	}
	if took > 3*time.Second {
		t.Errorf("50,000 ranges took %v", took)
	}
	code, body, hdr = ts.do("GET", "/api/v1/recordings/"+id+"/file", ts.owner, nil, "Range", "bytes=0-9,100-109")
	if code != http.StatusPartialContent || !strings.HasPrefix(hdr.Get("Content-Type"), "multipart/byteranges") || !bytes.Contains(body, file[100:110]) {
		t.Errorf("two ranges: %d %s", code, hdr.Get("Content-Type"))
	}
}

// TestSearchBounds: over HTTP, the 80 KB query bomb is a fast 400
// bad_query pointing at where the query went over; a cursor past any page
// is 400, not a panic; a search past its time budget is 400 bad_query.
func TestSearchBounds(t *testing.T) {
	ts := start(t, server.Config{})
	ts.ingestGame(teehistoriangen.Options{Duration: time.Minute, Seed: 74})
	viewer := ts.token("vera", replay.RoleViewer)

	bomb := url.QueryEscape(strings.Repeat("*e* ", 20000))
	best := time.Hour
	for range 3 {
		began := time.Now()
		code, body, _ := ts.do("GET", "/api/v1/recordings?q="+bomb, viewer, nil)
		best = min(best, time.Since(began))
		var e wire.Error
		json.Unmarshal(body, &e)
		if code != http.StatusBadRequest || e.Code != "bad_query" || e.Pos == nil || *e.Pos != query.MaxQueryBytes {
			t.Fatalf("query bomb: %d %.300s", code, body)
		}
	}
	t.Logf("80 KB query bomb refused in %v", best)
	if best > 100*time.Millisecond {
		t.Errorf("query bomb refused after %v, want under 100 ms", best)
	}

	for _, c := range []string{"o9223372036854775807", "o9223372036854775788", fmt.Sprintf("o%d", query.MaxOffset+1)} {
		cursor := base64.RawURLEncoding.EncodeToString([]byte(c))
		code, body, _ := ts.do("GET", "/api/v1/recordings?q=&cursor="+cursor, viewer, nil)
		if code != http.StatusBadRequest || !bytes.Contains(body, []byte(`"bad_request"`)) {
			t.Errorf("cursor %s: %d %s", c, code, body)
		}
	}

	slow := start(t, server.Config{SearchTimeout: time.Nanosecond})
	code, body, _ := slow.do("GET", "/api/v1/recordings?q=kill", slow.owner, nil)
	if code != http.StatusBadRequest || !bytes.Contains(body, []byte("time budget")) {
		t.Errorf("a search past its budget: %d %s", code, body)
	}
}
