package server_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/formats/formatstest"
	"github.com/replayarchive/replay/formats/teehistorian"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
	"github.com/replayarchive/replay/server"
	"github.com/replayarchive/replay/wire"
)

// testClock is a clock a test moves forward.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// TestSharedClipLinks: a moderator's link downloads, with no token, the
// clip a viewer would get (redacted: none of the file's timeout codes or
// passwords); the link is no credential anywhere else; a tampered,
// expired, revoked or disabled link, or one whose key was rotated, is
// refused with its code (a page for a browser); a viewer may not make
// one, a moderator may not change the settings; the recording's history
// shows the creation, the first use and the revocation; guessing links
// is limited as guessing tokens is.
func TestSharedClipLinks(t *testing.T) {
	clock := &testClock{t: time.Now().UTC()}
	ts := startWith(t, archive.Options{NoSync: true, Now: clock.Now}, server.Config{})
	id, file := ts.ingestGame(teehistoriangen.Options{Duration: 4 * time.Minute, Seed: 75})
	mod := ts.token("moderator-mia", replay.RoleModerator)
	viewer := ts.token("vera", replay.RoleViewer)
	admin := ts.token("ada", replay.RoleAdmin)
	var secrets []string
	for _, re := range []string{`timeout\x00.([A-Za-z0-9]{16})\x00`, `(pw-[A-Za-z0-9]{10})`} {
		for _, m := range regexp.MustCompile(re).FindAllSubmatch(file, -1) {
			secrets = append(secrets, string(m[1]))
		}
	}
	if len(secrets) < 5 {
		t.Fatalf("the generated game holds %d secrets; want a game with some", len(secrets))
	}

	create := func(token, body string, status int) wire.Share {
		t.Helper()
		var sh wire.Share
		ts.want(status, "POST", "/api/v1/recordings/"+id+"/shares", token, strings.NewReader(body), map[int]any{201: &sh}[status])
		return sh
	}
	get := func(path string, hdr ...string) (int, []byte, http.Header) {
		t.Helper()
		return ts.do("GET", path, "", nil, hdr...)
	}
	wantRefused := func(path string, status int, code string) {
		t.Helper()
		got, body, _ := get(path)
		var e wire.Error
		json.Unmarshal(body, &e)
		if got != status || e.Code != code {
			t.Fatalf("GET %s: %d %s, want %d %s", path, got, body, status, code)
		}
	}

	t.Run("viewer may not share", func(t *testing.T) {
		create(viewer, `{"from":"0","to":"3000"}`, http.StatusForbidden)
	})
	sh := create(mod, `{"from":"1m","to":"2m","expires":"24h"}`, http.StatusCreated)
	if !strings.HasPrefix(sh.URL, ts.url+"/s/") || sh.Path != "/s/"+sh.Token || sh.ID == "" {
		t.Fatalf("made %+v: want a URL %s/s/TOKEN", sh, ts.url)
	}
	if want := clock.Now().Add(24 * time.Hour); sh.Expires.Sub(want).Abs() > 2*time.Second {
		t.Errorf("expires %s, want %s", sh.Expires, want)
	}

	t.Run("downloads the viewer's clip without a token", func(t *testing.T) {
		code, body, h := get(sh.Path)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d %.300s", sh.Path, code, body)
		}
		if cd := h.Get("Content-Disposition"); !strings.Contains(cd, "redacted") || h.Get("Cache-Control") != "no-store" {
			t.Errorf("headers %v: want a redacted attachment, not cached", h)
		}
		rec, err := formatstest.TrySplit(teehistorian.New(), body)
		if err != nil || rec.Metadata.Ticks == 0 {
			t.Fatalf("the shared clip (%d bytes) is not a teehistorian file with ticks: %v", len(body), err)
		}
		for _, s := range secrets {
			if bytes.Contains(body, []byte(s)) {
				t.Errorf("the shared clip holds the file's secret %q", s)
			}
		}
		vcode, vbody, _ := ts.do("GET", "/api/v1/recordings/"+id+"/clip?from="+h.Get("X-Clip-From")+"&to="+h.Get("X-Clip-To"), viewer, nil)
		if vcode != http.StatusOK || !bytes.Equal(vbody, body) {
			t.Errorf("the shared clip (%d bytes) differs from a viewer's clip of ticks %s-%s (%d: %d bytes)", len(body), h.Get("X-Clip-From"), h.Get("X-Clip-To"), vcode, len(vbody))
		}
	})

	t.Run("the link is no credential elsewhere", func(t *testing.T) {
		for _, p := range []string{"/api/v1/recordings/" + id, "/api/v1/recordings/" + id + "/file", "/api/v1/whoami"} {
			if code, body, _ := ts.do("GET", p, sh.Token, nil); code != http.StatusUnauthorized {
				t.Errorf("GET %s with the link's token as bearer: %d %.200s, want 401", p, code, body)
			}
		}
		if code, _, _ := get("/s/" + sh.Token + "/../../api/v1/recordings/" + id); code == http.StatusOK {
			t.Errorf("a path past the token answered 200")
		}
	})

	t.Run("tampered", func(t *testing.T) {
		b := []byte(sh.Token)
		b[len(b)/2] ^= 1 // another base64url character
		wantRefused("/s/"+string(b), http.StatusForbidden, "bad_link")
		wantRefused("/s/not-a-link", http.StatusForbidden, "bad_link")
		code, body, h := get("/s/"+string(b), "Accept", "text/html,*/*")
		if code != http.StatusForbidden || !strings.HasPrefix(h.Get("Content-Type"), "text/html") || !bytes.Contains(body, []byte("not valid")) {
			t.Errorf("a browser's tampered link: %d %s %.300s, want a 403 page", code, h.Get("Content-Type"), body)
		}
	})

	t.Run("expired", func(t *testing.T) {
		create(mod, `{"from":"0","to":"100","expires":"8d"}`, http.StatusBadRequest) // past the maximum
		short := create(mod, `{"from":"0","to":"100","expires":"1h"}`, http.StatusCreated)
		if code, _, _ := get(short.Path); code != http.StatusOK {
			t.Fatalf("a fresh link: %d", code)
		}
		clock.add(61 * time.Minute)
		wantRefused(short.Path, http.StatusGone, "link_expired")
		// A lower maximum ends older links too.
		ts.want(http.StatusOK, "PUT", "/api/v1/shares/config", admin, strings.NewReader(`{"max_lifetime":"30m"}`), nil)
		wantRefused(sh.Path, http.StatusGone, "link_expired")
		ts.want(http.StatusOK, "PUT", "/api/v1/shares/config", admin, strings.NewReader(`{"max_lifetime":"7d"}`), nil)
		if code, _, _ := get(sh.Path); code != http.StatusOK {
			t.Fatalf("the link within the restored maximum: %d", code)
		}
	})

	t.Run("disabled", func(t *testing.T) {
		ts.want(http.StatusForbidden, "PUT", "/api/v1/shares/config", mod, strings.NewReader(`{"enabled":false}`), nil)
		var c wire.ShareConfig
		ts.want(http.StatusOK, "PUT", "/api/v1/shares/config", admin, strings.NewReader(`{"enabled":false}`), &c)
		if c.Enabled || c.MaxLifetimeSeconds != 7*24*3600 {
			t.Errorf("config %+v: want disabled, 7 days", c)
		}
		wantRefused(sh.Path, http.StatusForbidden, "sharing_disabled")
		create(mod, `{"from":"0","to":"100"}`, http.StatusForbidden)
		ts.want(http.StatusOK, "PUT", "/api/v1/shares/config", admin, strings.NewReader(`{"enabled":true}`), nil)
		if code, _, _ := get(sh.Path); code != http.StatusOK {
			t.Fatalf("the link once sharing is on again: %d", code)
		}
	})

	t.Run("revoked", func(t *testing.T) {
		ts.want(http.StatusForbidden, "DELETE", "/api/v1/shares/"+sh.ID, viewer, nil, nil)
		ts.want(http.StatusOK, "DELETE", "/api/v1/shares/"+sh.ID, mod, nil, nil)
		wantRefused(sh.Path, http.StatusGone, "link_revoked")
		ts.want(http.StatusNotFound, "DELETE", "/api/v1/shares/"+sh.ID, mod, nil, nil)
	})

	t.Run("rotated key revokes all", func(t *testing.T) {
		a := create(mod, `{"from":"0","to":"100"}`, http.StatusCreated)
		b := create(mod, `{"from":"100","to":"200"}`, http.StatusCreated)
		ts.want(http.StatusForbidden, "POST", "/api/v1/shares/rotate", mod, nil, nil)
		var out struct{ Revoked int }
		ts.want(http.StatusOK, "POST", "/api/v1/shares/rotate", admin, nil, &out)
		if out.Revoked != 2 {
			t.Errorf("rotation revoked %d links, want 2", out.Revoked)
		}
		wantRefused(a.Path, http.StatusGone, "link_revoked")
		wantRefused(b.Path, http.StatusGone, "link_revoked")
		c := create(mod, `{"from":"0","to":"100"}`, http.StatusCreated)
		if code, _, _ := get(c.Path); code != http.StatusOK {
			t.Errorf("a link made after the rotation: %d", code)
		}
	})

	t.Run("audited on the recording", func(t *testing.T) {
		var out struct{ Entries []archive.AuditEntry }
		ts.want(http.StatusOK, "GET", "/api/v1/recordings/"+id+"/audit", mod, nil, &out)
		seen := map[string]bool{}
		for _, e := range out.Entries {
			if strings.Contains(e.Detail, sh.ID) {
				seen[e.Action] = true
				if e.Action == replay.AuditShareCreate && e.Who != "moderator-mia" {
					t.Errorf("creation audited as %q", e.Who)
				}
			}
		}
		for _, a := range []string{replay.AuditShareCreate, replay.AuditShareUse, replay.AuditShareRevoke} {
			if !seen[a] {
				t.Errorf("the recording's history has no %s of link %s: %+v", a, sh.ID, out.Entries)
			}
		}
	})

	t.Run("guessing is limited", func(t *testing.T) {
		var last int
		for range 12 {
			last, _, _ = get("/s/" + strings.Repeat("A", 124))
		}
		if last != http.StatusTooManyRequests {
			t.Errorf("the 12th wrong link in a minute: %d, want 429", last)
		}
	})
}
