// Shared clip links (replay.ShareClip): moderators make and revoke them,
// admins set whether they work and how long they live, and anyone holding
// one downloads its clip at GET /s/{token} without a credential.
//
// The threat model of /s/: the token is the only credential it takes, and
// it is accepted nowhere else (every other route authenticates by token or
// the owner's secret in auth.go). It grants exactly one recording's tick
// range, always redacted as a viewer's clip is; nothing of the recording's
// moderation (who took it down, why) is in its answers. A wrong token
// counts against its client as a wrong credential does (limit.go), and each
// link and client may download at most maxFailures clips a minute, built
// in the heavy slots as every clip is (spool.go), so a leaked link costs
// the server no more than a viewer's clips do.

package server

import (
	"errors"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/internal/units"
	"github.com/replayarchive/replay/wire"
)

// shareRoutes adds the shared links' endpoints through h (routes' helper:
// authenticated, with a role) and the link itself, which takes none.
func (s *Server) shareRoutes(h func(pattern string, role replay.Role, name string, fn http.HandlerFunc)) {
	m, a := replay.RoleModerator, replay.RoleAdmin
	h("POST /api/v1/recordings/{id}/shares", m, "share-create", s.createShare)
	h("GET /api/v1/shares", m, "shares", s.listShares)
	h("DELETE /api/v1/shares/{id}", m, "share-revoke", s.revokeShare)
	h("GET /api/v1/shares/config", m, "share-config", s.getShareConfig)
	h("PUT /api/v1/shares/config", a, "share-config-set", s.putShareConfig)
	h("POST /api/v1/shares/rotate", a, "share-rotate", s.rotateShares)
	s.mux.HandleFunc("GET /s/{token}", s.sharedClip)
}

// shareFail answers the shared links' own errors, and the rest as fail.
func (s *Server) shareFail(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, replay.ErrShareLifetime):
		writeError(w, http.StatusBadRequest, "bad_request", err.Error())
	case errors.Is(err, replay.ErrSharingDisabled):
		writeError(w, http.StatusForbidden, "sharing_disabled", err.Error()+" (an admin turns them on: archivectl share config --enable)")
	case errors.Is(err, replay.ErrShareForbidden):
		writeError(w, http.StatusForbidden, "forbidden", err.Error())
	case errors.Is(err, replay.ErrNoShare):
		writeError(w, http.StatusNotFound, "not_found", err.Error())
	default:
		s.fail(w, err)
	}
}

// baseURL is the server's address as the caller reached it, for the
// links it makes (the Host was checked: it is one of the server's names).
func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

func (s *Server) createShare(w http.ResponseWriter, r *http.Request) {
	var req wire.ShareRequest
	if err := decodeBody(r, &req); err != nil {
		s.fail(w, err)
		return
	}
	rec, err := s.open(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	from, to := int64(0), int64(-1)
	if req.From != "" {
		if from, err = rec.ParseFrom(req.From); err != nil {
			s.fail(w, err)
			return
		}
	}
	if req.To != "" {
		if to, err = rec.ParseTick(req.To); err != nil {
			s.fail(w, err)
			return
		}
	}
	var life time.Duration
	if req.Expires != "" {
		if life, err = units.ParseDuration(req.Expires); err != nil {
			s.fail(w, badRequest("expires: %v", err))
			return
		}
	}
	l, err := s.x.ShareClip(actorOf(r), rec.Manifest().ID.String(), from, to, life)
	if err != nil {
		s.shareFail(w, err)
		return
	}
	out := wire.ShareOf(l, baseURL(r))
	w.Header().Set("Location", out.Path)
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, out)
}

func (s *Server) listShares(w http.ResponseWriter, r *http.Request) {
	ls, err := s.x.Shares()
	if err != nil {
		s.fail(w, err)
		return
	}
	var only string
	if ref := r.URL.Query().Get("recording"); ref != "" {
		id, err := s.x.Resolve(ref)
		if err != nil {
			s.fail(w, err)
			return
		}
		only = id.String()
	}
	out := []wire.Share{}
	for _, l := range ls {
		if only == "" || l.Recording.String() == only {
			out = append(out, wire.ShareOf(l, ""))
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"shares": out})
}

func (s *Server) revokeShare(w http.ResponseWriter, r *http.Request) {
	l, err := s.x.RevokeShare(actorOf(r), r.PathValue("id"))
	if err != nil {
		s.shareFail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.ShareOf(l, ""))
}

func (s *Server) getShareConfig(w http.ResponseWriter, r *http.Request) {
	c, err := s.x.ShareConfig()
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.ShareConfigOf(c))
}

func (s *Server) putShareConfig(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Enabled     *bool   `json:"enabled"`
		MaxLifetime *string `json:"max_lifetime"`
	}
	if err := decodeBody(r, &req); err != nil {
		s.fail(w, err)
		return
	}
	c, err := s.x.ShareConfig()
	if err != nil {
		s.fail(w, err)
		return
	}
	if req.Enabled != nil {
		c.Disabled = !*req.Enabled
	}
	if req.MaxLifetime != nil {
		d, err := units.ParseDuration(*req.MaxLifetime)
		if err != nil || d < time.Minute {
			s.fail(w, badRequest("max_lifetime %q: want a duration of at least 1m (e.g. 7d, 36h)", *req.MaxLifetime))
			return
		}
		c.MaxLifetime = d
	}
	if err := s.x.SetShareConfig(actorOf(r), c); err != nil {
		s.shareFail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.ShareConfigOf(c))
}

func (s *Server) rotateShares(w http.ResponseWriter, r *http.Request) {
	n, err := s.x.RotateShareKey(actorOf(r))
	if err != nil {
		s.shareFail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"revoked": n})
}

// sharedClip serves GET /s/{token}: the redacted clip the link grants,
// to anyone, or a refusal as a short page (for a browser) or JSON.
func (s *Server) sharedClip(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	defer func() {
		s.metrics.requests.WithLabelValues("shared-clip", statusClass(sw.status)).Inc()
		s.metrics.latency.WithLabelValues("shared-clip").Observe(time.Since(start).Seconds())
		if sw.status >= 500 {
			s.metrics.errors.WithLabelValues("shared-clip").Inc()
		}
	}()
	h := sw.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Robots-Tag", "noindex")
	client := s.clientOf(r)
	if s.limiter.blocked("client "+client, "share-client "+client) {
		h.Set("Retry-After", strconv.Itoa(int(failureWindow.Seconds())))
		shareRefusal(sw, r, http.StatusTooManyRequests, "too_many_requests", "Too many requests from your address: wait a minute and try again.")
		return
	}
	l, err := s.x.OpenShare(r.PathValue("token"))
	switch {
	case err == nil:
	case errors.Is(err, replay.ErrShareTampered):
		s.limiter.fail("client " + client)
		s.metrics.authFailures.Inc()
		shareRefusal(sw, r, http.StatusForbidden, "bad_link", capitalize(err.Error())+".")
		return
	case errors.Is(err, replay.ErrShareRevoked):
		shareRefusal(sw, r, http.StatusGone, "link_revoked", capitalize(err.Error())+": ask whoever sent it for a new one.")
		return
	case errors.Is(err, replay.ErrShareExpired):
		shareRefusal(sw, r, http.StatusGone, "link_expired", capitalize(err.Error())+": ask whoever sent it for a new one.")
		return
	case errors.Is(err, replay.ErrSharingDisabled):
		shareRefusal(sw, r, http.StatusForbidden, "sharing_disabled", capitalize(err.Error())+".")
		return
	default:
		s.log.Error("shared link", "err", err)
		shareRefusal(sw, r, http.StatusInternalServerError, "internal", "The archive could not check this link; try again later.")
		return
	}
	if s.limiter.blocked("share " + l.ID) {
		h.Set("Retry-After", strconv.Itoa(int(failureWindow.Seconds())))
		shareRefusal(sw, r, http.StatusTooManyRequests, "too_many_requests", "This link was opened too often in the last minute: wait a minute and try again.")
		return
	}
	// Each download counts against the link and the client: at most
	// maxFailures a minute for each.
	s.limiter.fail("share "+l.ID, "share-client "+client)
	rec, err := s.x.Recording(l.Recording.String())
	if err != nil {
		// Nothing of a takedown (who, why) goes to whoever holds a link.
		var td *archive.TakenDownError
		switch {
		case errors.As(err, &td):
			shareRefusal(sw, r, http.StatusGone, "taken_down", "This recording was taken down.")
		case errors.Is(err, archive.ErrNotFound):
			shareRefusal(sw, r, http.StatusGone, "not_found", "This recording is no longer in the archive.")
		default:
			s.log.Error("shared link", "link", l.ID, "err", err)
			shareRefusal(sw, r, http.StatusInternalServerError, "internal", "The archive could not open this recording; try again later.")
		}
		return
	}
	if err := s.x.ShareUsed(l, client); err != nil {
		s.log.Error("shared link: record its use", "link", l.ID, "err", err)
	}
	s.serveBuilt(sw, r, func(tmp io.Writer) (string, error) {
		f, t, err := rec.Clip(r.Context(), l.From, l.To, tmp, true)
		if err != nil {
			return "", err
		}
		h.Set("X-Clip-From", strconv.FormatInt(f, 10))
		h.Set("X-Clip-To", strconv.FormatInt(t, 10))
		return downloadName(rec.Manifest(), rec.Extension(), fmt.Sprintf("%d-%d-redacted", f, t)), nil
	})
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// sharePage is the refusal a browser opening a link gets.
var sharePage = template.Must(template.New("share").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="robots" content="noindex"><title>{{.Title}}</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:36em;margin:4em auto;padding:0 1em}code{color:#666}</style></head>
<body><h1>{{.Title}}</h1><p id="why">{{.Msg}}</p><p><code>{{.Code}}</code> ({{.Status}})</p></body></html>
`))

// shareRefusal answers a link that cannot be served: a short page when the
// client asks for HTML (a browser), else the API's JSON error.
func shareRefusal(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	if !strings.Contains(r.Header.Get("Accept"), "text/html") {
		writeError(w, status, code, msg)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	w.WriteHeader(status)
	sharePage.Execute(w, map[string]any{"Title": "This link cannot be opened", "Msg": msg, "Code": code, "Status": status})
}
