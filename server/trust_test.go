package server_test

// The default mode against callers who are not the owner: no credential is
// nobody, other names and origins are refused, wrong tokens do not lock
// out the right ones, and the owner's handshake proves both ends.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/internal/ownerauth"
	"github.com/replayarchive/replay/server"
)

// TestNoCredentialIsNobody: with no token created, a loopback caller
// without a credential gets nothing, and the owner's secret is admin.
func TestNoCredentialIsNobody(t *testing.T) {
	ts := start(t, server.Config{})
	for _, c := range []struct{ method, path string }{
		{"GET", "/api/v1/whoami"},
		{"GET", "/api/v1/recordings"},
		{"POST", "/api/v1/prune"},
		{"POST", "/api/v1/tokens"},
		{"GET", "/api/v1/owner/challenge"},
	} {
		code, body, _ := ts.do(c.method, c.path, "", nil)
		want := http.StatusUnauthorized
		if c.path == "/api/v1/owner/challenge" {
			want = http.StatusBadRequest // no nonce; it says nothing without one
		}
		if code != want {
			t.Errorf("%s %s without a credential: %d %s, want %d", c.method, c.path, code, body, want)
		}
	}
	var who map[string]string
	ts.want(http.StatusOK, "GET", "/api/v1/whoami", ts.owner, nil, &who)
	if who["role"] != "admin" || !strings.HasSuffix(who["name"], "(browser)") {
		t.Errorf("the owner's secret as a bearer: %v", who)
	}
}

// TestHostMustNameTheServer: a page whose own name was rebound to this
// machine's address (DNS rebinding) reads nothing: only IP addresses,
// localhost and the configured names are served.
func TestHostMustNameTheServer(t *testing.T) {
	ts := start(t, server.Config{Hosts: []string{"replays.example.org"}})
	port := ts.url[strings.LastIndex(ts.url, ":"):]
	for _, c := range []struct {
		host string
		want int
	}{
		{"rebind.attacker.example" + port, http.StatusMisdirectedRequest},
		{"rebind.attacker.example", http.StatusMisdirectedRequest},
		{"localhost.attacker.example" + port, http.StatusMisdirectedRequest},
		{"127.0.0.1" + port, http.StatusOK},
		{"[::1]" + port, http.StatusOK},
		{"localhost" + port, http.StatusOK},
		{"LOCALHOST." + port, http.StatusOK},
		{"replays.example.org", http.StatusOK},
		{"Replays.Example.Org" + port, http.StatusOK},
	} {
		for _, path := range []string{"/api/v1/whoami", "/healthz", "/metrics"} {
			req, _ := http.NewRequest("GET", ts.url+path, nil)
			req.Host = c.host
			req.Header.Set("Authorization", "Bearer "+ts.owner)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.want {
				t.Errorf("Host: %s, %s: %d %s, want %d", c.host, path, resp.StatusCode, body, c.want)
			}
			if c.want != http.StatusOK && !strings.Contains(string(body), `"unknown_host"`) {
				t.Errorf("Host: %s: the refusal does not say why: %s", c.host, body)
			}
		}
	}
}

// TestChangesNeedSameOriginAndJSON: a request that changes the archive is
// refused when the browser says another origin's page sent it, or when its
// body is of a type a page of another origin could send without asking;
// even with a valid credential, and before it is looked at.
func TestChangesNeedSameOriginAndJSON(t *testing.T) {
	ts := start(t, server.Config{})
	same := "http://" + strings.TrimPrefix(ts.url, "http://")
	for _, c := range []struct {
		name        string
		hdr         []string
		body        string
		want        int
		code        string
		wantChanged bool
	}{
		{"another site's page", []string{"Sec-Fetch-Site", "cross-site"}, "", http.StatusForbidden, "cross_origin", false},
		{"a sibling port's page", []string{"Sec-Fetch-Site", "same-site"}, "", http.StatusForbidden, "cross_origin", false},
		{"another Origin", []string{"Origin", "http://evil.example"}, "", http.StatusForbidden, "cross_origin", false},
		{"null Origin", []string{"Origin", "null"}, "", http.StatusForbidden, "cross_origin", false},
		{"a text/plain form", []string{"Content-Type", "text/plain"}, `{"name":"x","role":"admin"}`, http.StatusUnsupportedMediaType, "unsupported_media_type", false},
		{"an urlencoded form", []string{"Content-Type", "application/x-www-form-urlencoded"}, `name=x&role=admin`, http.StatusUnsupportedMediaType, "unsupported_media_type", false},
		{"a multipart form", []string{"Content-Type", "multipart/form-data; boundary=x"}, "--x--", http.StatusUnsupportedMediaType, "unsupported_media_type", false},
		{"a body without a type", nil, `{"name":"x","role":"admin"}`, http.StatusUnsupportedMediaType, "unsupported_media_type", false},
		{"the server's own page", []string{"Sec-Fetch-Site", "same-origin", "Origin", same, "Content-Type", "application/json"}, `{"name":"x","role":"viewer"}`, http.StatusCreated, "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var body io.Reader
			if c.body != "" {
				body = strings.NewReader(c.body)
			}
			req, _ := http.NewRequest("POST", ts.url+"/api/v1/tokens", body)
			req.Header.Set("Authorization", "Bearer "+ts.owner)
			for i := 0; i+1 < len(c.hdr); i += 2 {
				req.Header.Set(c.hdr[i], c.hdr[i+1])
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.want || (c.code != "" && !strings.Contains(string(b), `"`+c.code+`"`)) {
				t.Errorf("%d %s, want %d %s", resp.StatusCode, b, c.want, c.code)
			}
			toks, err := ts.x.Tokens()
			if err != nil {
				t.Fatal(err)
			}
			if changed := len(toks) > 0; changed != c.wantChanged {
				t.Errorf("tokens after the request: %d", len(toks))
			}
			for _, tok := range toks {
				ts.x.RevokeToken(replay.LocalActor(), tok.Name)
			}
		})
	}
}

// TestWrongTokensDoNotLockOutTheRightOnes: guesses from one client get
// 429 once past the limit, but working tokens from that client, the owner
// and other clients behind a trusted proxy are still served.
func TestWrongTokensDoNotLockOutTheRightOnes(t *testing.T) {
	ts := start(t, server.Config{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
	viewer, err := ts.x.CreateToken(replay.LocalActor(), "v", replay.RoleViewer)
	if err != nil {
		t.Fatal(err)
	}
	guess := func(i int, hdr ...string) int {
		code, _, _ := ts.do("GET", "/api/v1/whoami", fmt.Sprintf("rpa_guess%04d_%s", i, strings.Repeat("x", 30)), nil, hdr...)
		return code
	}
	codes := map[int]int{}
	for i := range 15 {
		codes[guess(i, "X-Forwarded-For", "203.0.113.7")]++
	}
	if codes[http.StatusUnauthorized] != 10 || codes[http.StatusTooManyRequests] != 5 {
		t.Errorf("15 wrong tokens from one client: %v; want 10×401 then 5×429", codes)
	}
	// The same client's working token, and the owner, are still served.
	for name, tok := range map[string]string{"viewer": viewer, "owner": ts.owner} {
		if code, body, _ := ts.do("GET", "/api/v1/whoami", tok, nil, "X-Forwarded-For", "203.0.113.7"); code != http.StatusOK {
			t.Errorf("the %s's token from the blocked client: %d %s", name, code, body)
		}
	}
	// Another client behind the same proxy is not blocked.
	if code := guess(100, "X-Forwarded-For", "198.51.100.9"); code != http.StatusUnauthorized {
		t.Errorf("another client's first wrong token: %d, want 401", code)
	}
	// A token's prefix with a wrong rest counts against the prefix; past
	// the limit its guesses get 429 from every client, and the token
	// itself still works.
	for i := range 12 {
		code, _, _ := ts.do("GET", "/api/v1/whoami", viewer[:replay.SecretPrefixLen]+fmt.Sprintf("wrong%02d", i), nil, "X-Forwarded-For", fmt.Sprintf("192.0.2.%d", i+1))
		if want := http.StatusUnauthorized; i >= 10 {
			if code != http.StatusTooManyRequests {
				t.Errorf("guess %d at a token's prefix: %d, want 429", i, code)
			}
		} else if code != want {
			t.Errorf("guess %d at a token's prefix: %d, want 401", i, code)
		}
	}
	if code, _, _ := ts.do("GET", "/api/v1/whoami", viewer, nil, "X-Forwarded-For", "192.0.2.200"); code != http.StatusOK {
		t.Errorf("the token whose prefix is guessed at: %d, want 200", code)
	}
}

// TestForwardedForOnlyFromTrustedProxies: X-Forwarded-For from a caller
// that is not a trusted proxy is the caller's to forge; it is ignored, so
// varying it does not escape the limit.
func TestForwardedForOnlyFromTrustedProxies(t *testing.T) {
	ts := start(t, server.Config{})
	codes := map[int]int{}
	for i := range 12 {
		code, _, _ := ts.do("GET", "/api/v1/whoami", fmt.Sprintf("rpa_guess%04d", i), nil, "X-Forwarded-For", fmt.Sprintf("192.0.2.%d", i+1))
		codes[code]++
	}
	if codes[http.StatusTooManyRequests] != 2 {
		t.Errorf("12 wrong tokens, each with its own forged X-Forwarded-For: %v; want the last 2 refused with 429", codes)
	}
}

// TestOwnerHandshake: the command line's handshake works with the real
// server, each answer is good once, and only an answered challenge may run
// commands; the owner's secret as a bearer (the browser's) may not.
func TestOwnerHandshake(t *testing.T) {
	cli := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ran") })
	ts := start(t, server.Config{CLI: cli})
	auth, err := ownerauth.Authorization(context.Background(), http.DefaultClient, ts.url, ts.owner)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(auth, ts.owner) {
		t.Fatal("the handshake's answer carries the secret")
	}
	run := func(auth string) (int, string) {
		req, _ := http.NewRequest("POST", ts.url+"/api/v1/cli", strings.NewReader("{}\n"))
		req.Header.Set("Authorization", auth)
		req.Header.Set("Content-Type", "application/octet-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := run(auth); code != http.StatusOK || body != "ran" {
		t.Fatalf("an answered challenge: %d %s", code, body)
	}
	if code, _ := run(auth); code != http.StatusUnauthorized {
		t.Errorf("the same answer again: %d, want 401", code)
	}
	if code, _ := run("Bearer " + ts.owner); code != http.StatusForbidden {
		t.Errorf("the owner's secret as a bearer runs commands: %d, want 403", code)
	}
	if _, err := ownerauth.Authorization(context.Background(), http.DefaultClient, ts.url, replay.NewSecret()); !errors.Is(err, ownerauth.ErrNotTheServer) {
		t.Errorf("the handshake with another secret: %v, want ErrNotTheServer", err)
	}
}

// TestImpostorLearnsNothing: a process on the port of a server that died
// answers the handshake as best it can; the command line finds it out and
// sends it neither the secret nor anything of a command.
func TestImpostorLearnsNothing(t *testing.T) {
	secret := replay.NewSecret()
	var mu sync.Mutex
	var seen []string
	impostor := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.String()+" "+fmt.Sprint(r.Header)+" "+string(b))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"proof":%q,"challenge":%q}`, strings.Repeat("0", 64), strings.Repeat("1", 64))
	}))
	defer impostor.Close()
	_, err := ownerauth.Authorization(context.Background(), impostor.Client(), impostor.URL, secret)
	if !errors.Is(err, ownerauth.ErrNotTheServer) {
		t.Fatalf("the impostor passed: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 {
		t.Errorf("the impostor got %d requests, want the challenge alone: %q", len(seen), seen)
	}
	for _, s := range seen {
		if strings.Contains(s, secret) || strings.Contains(s, secret[len("rpa_"):]) {
			t.Errorf("the impostor saw the secret: %s", s)
		}
	}
}
