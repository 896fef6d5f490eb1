// Package web is the moderators' page: one HTML page, a style sheet and
// plain JavaScript modules, embedded in the binary, that search the archive,
// show a recording (metadata, players over time, an event timeline, the
// players' trails around a moment with playback controls) and act on it
// (clips, downloads, flags, holds, takedowns) through the JSON API that
// package server serves under /api/v1/. Nothing is fetched from anywhere
// else: no CDN, no build step.
package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"
)

//go:embed static
var staticFS embed.FS

//go:embed templates/index.html
var indexHTML string

// asset is one embedded static file with its validator and the version
// its URLs carry (a hash of every asset).
type asset struct {
	body    []byte
	ctype   string
	etag    string
	version string
}

// handler serves the page and its assets.
type handler struct {
	index  []byte
	assets map[string]asset
	// csp is the pages' Content-Security-Policy: the page's own origin,
	// and the one inline script (boot.js) by its hash.
	csp string
}

// Handler serves the moderators' page: the search at "/", a recording's
// page at "/r/{id}" (the same HTML; the script reads the path) and the
// assets under "/static/". Mount it at "/" next to the JSON API; paths it
// does not own answer 404, so a mistyped API path is not mistaken for the
// page. Asset URLs carry a hash of all the assets, so browsers may cache
// them for good and still see a new build at once.
func Handler() http.Handler {
	h := &handler{assets: map[string]asset{}}
	files := map[string][]byte{}
	all := sha256.New()
	err := fs.WalkDir(staticFS, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := staticFS.ReadFile(p)
		if err == nil {
			files["/"+p] = b
			fmt.Fprintf(all, "%s %d\n", p, len(b)) // WalkDir goes in lexical order
			all.Write(b)
		}
		return err
	})
	if err != nil {
		// The files are compiled in: failing to read them is a build defect.
		panic("web: embedded assets: " + err.Error())
	}
	version := hex.EncodeToString(all.Sum(nil)[:8])
	// boot.js is inlined into the page (so it runs as soon as it is
	// parsed, before the modules are compiled), not served on its own.
	boot := strings.TrimSpace(string(files[bootScript]))
	delete(files, bootScript)
	bootSum := sha256.Sum256([]byte(boot))
	h.csp = "default-src 'self'; script-src 'self' 'sha256-" + base64.StdEncoding.EncodeToString(bootSum[:]) + "'; " +
		"img-src 'self' data: blob:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
	var modules []string
	for p, b := range files {
		if path.Ext(p) == ".js" {
			// A module's imports name the same versioned URLs as the
			// page's preloads, so each module is fetched once and cached.
			b = moduleImport.ReplaceAll(b, []byte("${1}?v="+version+"'"))
			modules = append(modules, p+"?v="+version)
		}
		sum := sha256.Sum256(b)
		h.assets[p] = asset{body: b, ctype: contentType(p), etag: hex.EncodeToString(sum[:8]), version: version}
	}
	slices.Sort(modules)
	t := template.Must(template.New("index").Parse(indexHTML))
	var buf bytes.Buffer
	data := struct {
		CSS, JS string
		Boot    template.JS
		Modules []string
	}{"/static/app.css?v=" + version, "/static/main.js?v=" + version, template.JS(boot), modules}
	if err := t.Execute(&buf, data); err != nil {
		panic("web: index template: " + err.Error())
	}
	h.index = buf.Bytes()
	return h
}

// bootScript is the script the page runs inline while it is parsed
// (static/boot.js: it sends a recording page's first requests), not a
// module, and allowed by its hash in the page's Content-Security-Policy.
const bootScript = "/static/boot.js"

// moduleImport matches a module's import of another in static/ by its
// relative path, up to the closing quote: "from './api.js".
var moduleImport = regexp.MustCompile(`((?:from|import)\s+'\./[a-z]+\.js)'`)

// ServeHTTP routes a request to the page or an asset.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	securityHeaders(w.Header(), h.csp)
	p := r.URL.Path
	switch {
	case p == "/" || isRecordingPath(p):
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		http.ServeContent(w, r, "index.html", time.Time{}, bytes.NewReader(h.index))
	case strings.HasPrefix(p, "/static/"):
		a, ok := h.assets[path.Clean(p)]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", a.ctype)
		w.Header().Set("ETag", `"`+a.etag+`"`)
		if r.URL.Query().Get("v") == a.version {
			w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		} else {
			w.Header().Set("Cache-Control", "no-cache")
		}
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(a.body))
	default:
		http.NotFound(w, r)
	}
}

// isRecordingPath reports whether p is "/r/{id}": one non-empty segment.
func isRecordingPath(p string) bool {
	id, ok := strings.CutPrefix(p, "/r/")
	return ok && id != "" && !strings.Contains(id, "/")
}

// securityHeaders keeps the page to its own origin: scripts (but for the
// inline boot script its hash allows), styles and fetches go only to the
// server that served it, and no other site may frame it (a moderator's
// clicks cannot be hijacked).
func securityHeaders(h http.Header, csp string) {
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
}

// contentType names the media type of an asset by its extension.
func contentType(p string) string {
	switch path.Ext(p) {
	case ".css":
		return "text/css; charset=utf-8"
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".svg":
		return "image/svg+xml"
	case ".png":
		return "image/png"
	}
	return "application/octet-stream"
}
