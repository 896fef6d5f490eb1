package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/internal/ownerauth"
)

// TestStaleServeFiles: a server that died left serve.json and serve.secret
// behind, and another local user's process now holds its port. The
// command line finds out that it is not the archive's server, sends it
// neither the secret nor the command, removes the stale files and runs
// the command itself. A port nobody holds is the same, silently.
func TestStaleServeFiles(t *testing.T) {
	c := newCLI(t)
	c.ok("init")
	var mu sync.Mutex
	var seen []string
	impostor := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, fmt.Sprint(r.Method, " ", r.URL, " ", r.Header, " ", string(b)))
		mu.Unlock()
		// It answers as the old server would to anything, without the
		// secret it cannot prove to hold.
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"proof":%q,"challenge":%q}`, strings.Repeat("a", 64), strings.Repeat("b", 64))
	}))
	defer impostor.Close()

	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nobody := "http://" + closed.Addr().String()
	closed.Close()

	for _, c2 := range []struct{ name, url, say string }{
		{"an impostor on the port", impostor.URL, "cannot prove it is this archive's server"},
		{"nobody on the port", nobody, ""},
	} {
		t.Run(c2.name, func(t *testing.T) {
			secret := replay.NewSecret()
			ep, _ := json.Marshal(ownerauth.Endpoint{URL: c2.url, PID: 999999})
			epPath, secretPath := filepath.Join(c.dir, ownerauth.EndpointFile), filepath.Join(c.dir, ownerauth.SecretFile)
			if err := os.WriteFile(epPath, ep, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(secretPath, []byte(secret+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			out, errs, code := c.run("ls", "--json")
			if code != 0 || strings.TrimSpace(out) != "[]" {
				t.Fatalf("ls with a stale serve.json: exit %d, %q, %s", code, out, errs)
			}
			if c2.say != "" && !strings.Contains(errs, c2.say) {
				t.Errorf("the command line does not say why it ignored serve.json: %s", errs)
			}
			for _, p := range []string{epPath, secretPath} {
				if _, err := os.Stat(p); !os.IsNotExist(err) {
					t.Errorf("%s is still there: %v", filepath.Base(p), err)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			for _, s := range seen {
				if strings.Contains(s, secret[len("rpa_"):]) || strings.Contains(s, `"args"`) || strings.Contains(s, "/api/v1/cli") {
					t.Errorf("the impostor got the secret or the command: %s", s)
				}
			}
		})
	}
}

// TestLoginLink: 'archivectl login' prints the running server's login
// link, the one serve printed; with no server it fails and says so.
func TestLoginLink(t *testing.T) {
	c := newCLI(t)
	c.ok("init")
	if _, errs, code := c.run("login"); code == 0 || !strings.Contains(errs, "no server is running") {
		t.Errorf("login without a server: exit %d, %s", code, errs)
	}
	printed, _ := serveArchive(t, c)
	if got := strings.TrimSpace(c.ok("login")); got != printed {
		t.Errorf("login printed %q; serve printed %q", got, printed)
	}
	var j map[string]string
	if err := json.Unmarshal([]byte(c.ok("login", "--json")), &j); err != nil || j["login_url"] != printed || !strings.HasPrefix(printed, j["url"]+"/#login=rpa_") {
		t.Errorf("login --json: %v %v", j, err)
	}
}
