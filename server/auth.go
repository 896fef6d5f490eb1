package server

import (
	"context"
	"crypto/subtle"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/replayarchive/replay"
)

type actorKey struct{}

// actorOf returns the caller authenticate found for r.
func actorOf(r *http.Request) replay.Actor {
	a, _ := r.Context().Value(actorKey{}).(replay.Actor)
	return a
}

// authenticate finds who the caller is: the bearer of a token, the owner
// (the local secret), or, while no token exists, any loopback caller as
// admin. It answers 401 for a missing or wrong token and 429 once a
// client has failed too often.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) (replay.Actor, bool) {
	client := clientIP(r)
	if s.limiter.blocked(client) {
		writeError(w, http.StatusTooManyRequests, "too_many_failures", "too many failed attempts from this address; wait a minute")
		return replay.Actor{}, false
	}
	secret, hasBearer := bearer(r)
	if hasBearer {
		if s.cfg.LocalSecret != "" && subtle.ConstantTimeCompare([]byte(secret), []byte(s.cfg.LocalSecret)) == 1 {
			return replay.LocalActor(), true
		}
		a, ok, err := s.x.Authenticate(secret)
		if err != nil {
			writeError(w, http.StatusInternalServerError, "internal", err.Error())
			return replay.Actor{}, false
		}
		if ok {
			return a, true
		}
		s.limiter.fail(client)
		s.metrics.authFailures.Inc()
		writeError(w, http.StatusUnauthorized, "bad_token", "the token is not valid (revoked, mistyped, or of another archive)")
		return replay.Actor{}, false
	}
	toks, err := s.x.Tokens()
	if err != nil {
		writeError(w, http.StatusInternalServerError, "internal", err.Error())
		return replay.Actor{}, false
	}
	if len(toks) == 0 && isLoopbackAddr(r.RemoteAddr) {
		return replay.Actor{Name: "loopback", Role: replay.RoleAdmin}, true
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="replay archive"`)
	writeError(w, http.StatusUnauthorized, "no_token", "this archive needs a token: send Authorization: Bearer TOKEN (create one with 'archivectl token create')")
	return replay.Actor{}, false
}

// bearer returns the request's bearer token.
func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	if tok, ok := strings.CutPrefix(h, "Bearer "); ok && tok != "" {
		return strings.TrimSpace(tok), true
	}
	return "", false
}

// with wraps h: the caller must be authenticated and hold at least role.
func (s *Server) with(role replay.Role, name string, h http.HandlerFunc) http.HandlerFunc {
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
		a, ok := s.authenticate(sw, r)
		if !ok {
			return
		}
		if a.Role < role {
			writeError(sw, http.StatusForbidden, "forbidden", a.Role.String()+" "+a.Name+" may not do this: it needs the "+role.String()+" role")
			return
		}
		h(sw, r.WithContext(context.WithValue(r.Context(), actorKey{}, a)))
	}
}

func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

func isLoopbackAddr(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// failLimiter blocks a client address for a while after repeated failed
// authentications, so tokens cannot be guessed at speed.
type failLimiter struct {
	now func() time.Time
	mu  sync.Mutex
	m   map[string]*failCount
}

type failCount struct {
	n     int
	first time.Time
}

const (
	maxFailures   = 10
	failureWindow = time.Minute
	maxTracked    = 10000
)

func newFailLimiter(now func() time.Time) *failLimiter {
	return &failLimiter{now: now, m: map[string]*failCount{}}
}

func (l *failLimiter) fail(client string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	c := l.m[client]
	if c == nil || now.Sub(c.first) > failureWindow {
		if len(l.m) >= maxTracked {
			l.expire(now)
		}
		c = &failCount{first: now}
		l.m[client] = c
	}
	c.n++
}

func (l *failLimiter) blocked(client string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.m[client]
	return c != nil && c.n >= maxFailures && l.now().Sub(c.first) <= failureWindow
}

// expire forgets clients whose window has passed (called with mu held).
func (l *failLimiter) expire(now time.Time) {
	for k, c := range l.m {
		if now.Sub(c.first) > failureWindow {
			delete(l.m, k)
		}
	}
}

// statusWriter remembers the status a handler wrote, for the metrics.
type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
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
