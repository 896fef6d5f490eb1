package web_test

import (
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/replayarchive/replay/web"
)

// get requests path from h and returns the response and its body.
func get(t *testing.T, h http.Handler, method, path string) (*http.Response, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	res := rec.Result()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

func TestHandlerRoutes(t *testing.T) {
	h := web.Handler()
	for _, p := range []string{"/", "/?q=player:kit*", "/r/7cee836b", "/r/7cee836b-aec8-44d9-9083-94d07d88bc05?t=400"} {
		res, body := get(t, h, "GET", p)
		if res.StatusCode != 200 {
			t.Fatalf("GET %s: %d", p, res.StatusCode)
		}
		if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
			t.Errorf("GET %s: Content-Type %q", p, ct)
		}
		if !strings.Contains(body, `id="search-form"`) || !strings.Contains(body, `id="trails"`) {
			t.Errorf("GET %s: not the page:\n%.300s", p, body)
		}
		csp := res.Header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "default-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("GET %s: CSP %q", p, csp)
		}
		// The one inline script (boot.js) is allowed by its hash, and
		// no other.
		inline := regexp.MustCompile(`(?s)<script>(.*?)</script>`).FindAllStringSubmatch(body, -1)
		if len(inline) != 1 || !strings.Contains(inline[0][1], "replayEarly") {
			t.Fatalf("GET %s: %d inline scripts, want boot.js", p, len(inline))
		}
		sum := sha256.Sum256([]byte(inline[0][1]))
		if want := "script-src 'self' 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"; !strings.Contains(csp, want) {
			t.Errorf("GET %s: CSP %q does not allow the inline script (%s)", p, csp, want)
		}
	}
	for _, p := range []string{"/r/", "/r/a/b", "/nope", "/static/", "/static/missing.js", "/static/../web.go", "/index.html"} {
		if res, _ := get(t, h, "GET", p); res.StatusCode != 404 {
			t.Errorf("GET %s: %d, want 404", p, res.StatusCode)
		}
	}
	if res, _ := get(t, h, "POST", "/"); res.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /: %d, want 405", res.StatusCode)
	}
	if res, body := get(t, h, "HEAD", "/"); res.StatusCode != 200 || body != "" {
		t.Errorf("HEAD /: %d with %d bytes", res.StatusCode, len(body))
	}
}

// The page names its assets with a content hash: those URLs may be cached
// for good, and every asset the page names exists.
func TestHandlerAssets(t *testing.T) {
	h := web.Handler()
	_, page := get(t, h, "GET", "/")
	refs := regexp.MustCompile(`(?:src|href)="(/static/[^"]+)"`).FindAllStringSubmatch(page, -1)
	if len(refs) < 2 {
		t.Fatalf("page names %d assets, want the script and the style sheet", len(refs))
	}
	want := map[string]string{".js": "text/javascript", ".css": "text/css"}
	for _, m := range refs {
		u := strings.ReplaceAll(m[1], "&amp;", "&")
		res, body := get(t, h, "GET", u)
		if res.StatusCode != 200 || body == "" {
			t.Fatalf("GET %s: %d, %d bytes", u, res.StatusCode, len(body))
		}
		ext := u[strings.LastIndex(u, "."):strings.Index(u, "?")]
		if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, want[ext]) {
			t.Errorf("GET %s: Content-Type %q", u, ct)
		}
		if cc := res.Header.Get("Cache-Control"); !strings.Contains(cc, "immutable") {
			t.Errorf("GET %s: Cache-Control %q, want immutable", u, cc)
		}
		etag := res.Header.Get("ETag")
		if etag == "" {
			t.Fatalf("GET %s: no ETag", u)
		}
		// Without the hash (an old page) the asset must be revalidated.
		bare := u[:strings.Index(u, "?")]
		if res, _ := get(t, h, "GET", bare); !strings.Contains(res.Header.Get("Cache-Control"), "no-cache") {
			t.Errorf("GET %s: Cache-Control %q, want no-cache", bare, res.Header.Get("Cache-Control"))
		}
		req := httptest.NewRequest("GET", u, nil)
		req.Header.Set("If-None-Match", etag)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusNotModified {
			t.Errorf("GET %s If-None-Match: %d, want 304", u, rec.Code)
		}
	}
}

// The page loads nothing from another origin: no CDN, no fonts, no
// analytics (the page downloads nothing at run time).
func TestNoExternalResources(t *testing.T) {
	h := web.Handler()
	_, page := get(t, h, "GET", "/")
	files := map[string]string{"index.html": page}
	for _, m := range regexp.MustCompile(`(?:src|href)="(/static/[^"?]+)`).FindAllStringSubmatch(page, -1) {
		_, files[m[1]] = get(t, h, "GET", m[1])
	}
	ext := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}/`)
	for name, s := range files {
		if m := ext.FindString(s); m != "" {
			t.Errorf("%s refers to another origin: %q", name, m)
		}
	}
}

// The page's script is ES modules, each preloaded by the page, and every
// import names a module the page preloads under the same versioned URL,
// so the browser fetches each once and caches it for good.
func TestModules(t *testing.T) {
	h := web.Handler()
	_, page := get(t, h, "GET", "/")
	main := regexp.MustCompile(`<script type="module" src="(/static/main\.js\?v=[0-9a-f]+)"></script>`).FindStringSubmatch(page)
	if main == nil {
		t.Fatal("the page loads no main.js module")
	}
	preloaded := map[string]bool{}
	for _, m := range regexp.MustCompile(`<link rel="modulepreload" href="([^"]+)">`).FindAllStringSubmatch(page, -1) {
		preloaded[m[1]] = true
	}
	if !preloaded[main[1]] || len(preloaded) < 5 {
		t.Fatalf("preloads %v: want main.js and the modules it imports", preloaded)
	}
	imp := regexp.MustCompile(`(?:from|import)\s+'(\.[^']*)'`)
	for u := range preloaded {
		_, js := get(t, h, "GET", u)
		for _, m := range imp.FindAllStringSubmatch(js, -1) {
			if !preloaded["/static/"+strings.TrimPrefix(m[1], "./")] {
				t.Errorf("%s imports %s, which the page does not preload", u, m[1])
			}
		}
	}
}

// FuzzHandler: any path and method gets the page, an asset, 404 or 405,
// never a panic or a server error.
func FuzzHandler(f *testing.F) {
	for _, s := range []string{"/", "/r/abc", "/r/", "/static/main.js", "/static/main.js?v=1", "/static/../../etc/passwd", "/%2e%2e/", "/r/a%2Fb", "//r//x", "/static//app.css"} {
		f.Add("GET", s)
	}
	f.Add("POST", "/")
	h := web.Handler()
	f.Fuzz(func(t *testing.T, method, target string) {
		if !strings.HasPrefix(target, "/") {
			target = "/" + target
		}
		req, err := http.NewRequest(method, "http://example.test"+target, nil)
		if err != nil {
			return
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch rec.Code {
		case 200, 304, 404, 405:
		default:
			t.Fatalf("%s %s: status %d", method, target, rec.Code)
		}
	})
}
