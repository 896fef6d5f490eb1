package server

import (
	"context"
	"crypto/subtle"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/replayarchive/replay"
)

type actorKey struct{}

// actorOf returns the caller authenticate found for r.
func actorOf(r *http.Request) replay.Actor {
	a, _ := r.Context().Value(actorKey{}).(replay.Actor)
	return a
}

// ownerKey marks a request whose caller answered the owner's challenge
// (owner.go): the owner's command line, the only caller the server runs
// commands for.
type ownerKey struct{}

// isOwnerCLI reports whether r comes from the owner's command line.
func isOwnerCLI(r *http.Request) bool {
	v, _ := r.Context().Value(ownerKey{}).(bool)
	return v
}

// authenticate finds who the caller is: the bearer of a token, the owner
// (the local secret, as a bearer from the login link or as an answered
// challenge from the command line). Nobody is anybody for where they call
// from: a caller with no credential gets 401. A wrong credential counts
// against its client and its prefix (limit.go); past the limit it gets
// 429, and a blocked client's credential is only checked when its prefix
// belongs to a token or has worked before.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) (replay.Actor, bool, bool) {
	if s.ownerAnswered(r.Header.Get("Authorization")) {
		return replay.LocalActor(), true, true
	}
	secret, hasBearer := bearer(r)
	if !hasBearer {
		w.Header().Set("WWW-Authenticate", `Bearer realm="replay archive"`)
		writeError(w, http.StatusUnauthorized, "no_token", "this archive needs a token: send Authorization: Bearer TOKEN (create one with 'archivectl token create'; the archive's owner signs in with the login link 'archivectl serve' prints)")
		return replay.Actor{}, false, false
	}
	client, prefix := "client "+s.clientOf(r), "prefix "+credentialPrefix(secret)
	blocked := s.limiter.blocked(client, prefix)
	if blocked && !s.mayTry(credentialPrefix(secret)) {
		s.tooMany(w)
		return replay.Actor{}, false, false
	}
	if s.cfg.LocalSecret != "" && subtle.ConstantTimeCompare([]byte(secret), []byte(s.cfg.LocalSecret)) == 1 {
		return replay.Actor{Name: replay.LocalActor().Name + " (browser)", Role: replay.RoleAdmin}, true, false
	}
	a, ok, err := s.x.Authenticate(secret)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "internal", err.Error())
		return replay.Actor{}, false, false
	}
	if ok {
		s.limiter.succeeded(credentialPrefix(secret))
		return a, true, false
	}
	s.limiter.fail(client, prefix)
	s.metrics.authFailures.Inc()
	if blocked {
		s.tooMany(w)
		return replay.Actor{}, false, false
	}
	writeError(w, http.StatusUnauthorized, "bad_token", "the token is not valid (revoked, mistyped, or of another archive)")
	return replay.Actor{}, false, false
}

// mayTry reports whether a credential with prefix is checked although its
// client or prefix is blocked: it is the owner's, a token's, or has
// worked before.
func (s *Server) mayTry(prefix string) bool {
	if s.limiter.known(prefix) || (s.cfg.LocalSecret != "" && credentialPrefix(s.cfg.LocalSecret) == prefix) {
		return true
	}
	toks, err := s.x.Tokens()
	if err != nil {
		return false
	}
	for _, t := range toks {
		if t.Prefix != "" && t.Prefix == prefix {
			return true
		}
	}
	return false
}

func (s *Server) tooMany(w http.ResponseWriter) {
	w.Header().Set("Retry-After", strconv.Itoa(int(failureWindow.Seconds())))
	writeError(w, http.StatusTooManyRequests, "too_many_failures", "too many wrong tokens from this client or for this token prefix; wait a minute (working tokens are still accepted)")
}

// bearer returns the request's bearer token.
func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	if tok, ok := strings.CutPrefix(h, "Bearer "); ok && tok != "" {
		return strings.TrimSpace(tok), true
	}
	return "", false
}

// with wraps h: the caller must be authenticated and hold at least role,
// and a request that changes the archive must come from this server's
// page or from no page, with a body of a type no other origin can send.
func (s *Server) with(role replay.Role, name string, kind routeKind, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		defer func() {
			s.metrics.requests.WithLabelValues(name, statusClass(sw.status)).Inc()
			s.metrics.latency.WithLabelValues(name).Observe(time.Since(start).Seconds())
			if sw.status >= 500 {
				s.metrics.errors.WithLabelValues(name).Inc()
			}
		}()
		if changes(r.Method) {
			if why := crossOrigin(r); why != "" {
				writeError(sw, http.StatusForbidden, "cross_origin", why)
				return
			}
			if why := bodyTypeRefused(r); why != "" {
				writeError(sw, http.StatusUnsupportedMediaType, "unsupported_media_type", why)
				return
			}
		}
		a, ok, owner := s.authenticate(sw, r)
		if !ok {
			return
		}
		if a.Role < role {
			writeError(sw, http.StatusForbidden, "forbidden", a.Role.String()+" "+a.Name+" may not do this: it needs the "+role.String()+" role")
			return
		}
		ctx := r.Context()
		if kind == waitedOn {
			var begin func()
			ctx, begin, sw.answering = s.x.InteractiveLater(ctx)
			defer sw.answered()
			if r.ContentLength == 0 {
				begin()
			} else {
				r.Body = &bodyThenMark{ReadCloser: r.Body, left: r.ContentLength, begin: begin}
			}
		}
		ctx = context.WithValue(ctx, actorKey{}, a)
		if owner {
			ctx = context.WithValue(ctx, ownerKey{}, true)
		}
		h(sw, r.WithContext(ctx))
	}
}

// routeKind says whether a person waits on a route's answer.
type routeKind int

const (
	// waitedOn: the archive's background work leaves a core free from
	// the moment the request's body is in until its answer begins
	// (replay.Archive.InteractiveLater), not while the body arrives: a
	// client that sends slowly does not hold the background back.
	waitedOn routeKind = iota
	// background: the route's work is background work itself (uploads
	// of recordings and maps, pushes, the long administrative runs) and
	// takes its turns like an ingest's.
	background
)

// bodyThenMark begins a request's interactive mark once its body is in:
// when its declared length has been read, or at its end when no length
// was declared. A handler that never reads the body never begins it.
type bodyThenMark struct {
	io.ReadCloser
	left  int64 // bytes still to come; negative: unknown
	begin func()
}

func (b *bodyThenMark) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if b.left > 0 {
		if b.left -= int64(n); b.left <= 0 {
			b.begin()
		}
	}
	if err == io.EOF {
		b.begin()
	}
	return n, err
}

// statusWriter remembers the status a handler wrote, for the metrics, and
// ends the request's interactive mark (answering) at its first byte: a
// slow reader of a long answer does not hold the background back.
type statusWriter struct {
	http.ResponseWriter
	status    int
	wrote     bool
	answering func()
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.answered()
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wrote = true
	w.answered()
	return w.ResponseWriter.Write(b)
}

// answered ends the request's interactive mark, if it holds one.
func (w *statusWriter) answered() {
	if w.answering != nil {
		w.answering()
		w.answering = nil
	}
}

// Flush lets streamed responses (frames) reach the client as they go.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func statusClass(code int) string {
	return string(rune('0'+code/100)) + "xx"
}
