package server_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/server"
)

// A client that sends a request's body slowly does not hold the archive's
// background work back while it sends: the request's interactive mark
// begins once its body is in (replay_interactive_requests stays 0), on a
// route a person waits on as on an upload.
func TestSlowBodyTakesNoMark(t *testing.T) {
	ts := start(t, server.Config{})
	mod := ts.token("mia", replay.RoleModerator)
	host := strings.TrimPrefix(ts.url, "http://")
	marks := func() string {
		m := regexp.MustCompile(`(?m)^replay_interactive_requests (\S+)$`).FindSubmatch(ts.want(http.StatusOK, "GET", "/metrics", "", nil, nil))
		if m == nil {
			t.Fatal("/metrics has no replay_interactive_requests")
		}
		return string(m[1])
	}
	for _, route := range []struct{ method, path, typ, body string }{
		{"POST", "/api/v1/cases", "application/json", `{"recording":"00000000-0000-0000-0000-000000000000","note":"slowly typed"}`},
		{"POST", "/api/v1/recordings?name=slow.teehistorian", "application/octet-stream", strings.Repeat("x", 4096)},
	} {
		conn, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s",
			route.method, route.path, host, mod, route.typ, len(route.body), route.body[:len(route.body)/2])
		time.Sleep(100 * time.Millisecond) // the server has read the headers and waits for the rest
		if n := marks(); n != "0" {
			t.Errorf("%s %s: %s interactive marks while half its body is sent, want 0", route.method, route.path, n)
		}
		conn.Write([]byte(route.body[len(route.body)/2:]))
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%s %s: %v", route.method, route.path, err)
		}
		resp.Body.Close()
		conn.Close()
		if resp.StatusCode < 400 || resp.StatusCode >= 500 {
			t.Errorf("%s %s: status %d, want the refusal of a bad request", route.method, route.path, resp.StatusCode)
		}
		if n := marks(); n != "0" {
			t.Errorf("%s %s: %s interactive marks after its answer, want 0", route.method, route.path, n)
		}
	}
}
