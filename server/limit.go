// Guess limiting: failed credentials are counted per client and per
// credential prefix. A client or prefix past the limit gets 429 for its
// wrong guesses, and a blocked client's credential is checked at all only
// when its prefix is one this server has seen succeed, so guessing stops
// while the people whose tokens work (the owner, every token already in
// use) are never locked out by someone else's mistakes.

package server

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/replayarchive/replay"
)

const (
	// maxFailures wrong credentials within failureWindow block a client
	// (or a prefix) until the window has passed.
	maxFailures   = 10
	failureWindow = time.Minute
	// maxTracked bounds the clients and prefixes remembered.
	maxTracked = 10000
	// prefixLen is how much of a credential names it (a token's Prefix).
	prefixLen = replay.SecretPrefixLen
)

// credentialPrefix is the part of a credential that the limiter keys on.
func credentialPrefix(secret string) string {
	if len(secret) > prefixLen {
		return secret[:prefixLen]
	}
	return secret
}

// clientOf returns the address of the client that sent r: the connection's
// peer, or, when that peer is one of the trusted proxies, the last address
// in X-Forwarded-For that is not a trusted proxy. A header from anyone
// else is ignored: it is the sender's to forge.
func (s *Server) clientOf(r *http.Request) string {
	peer := peerAddr(r)
	if !s.trusted(peer) {
		return peer.String()
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			break // a hop that is not an address: stop at the last good one
		}
		a = a.Unmap()
		if !s.trusted(a) {
			return a.String()
		}
		peer = a
	}
	return peer.String()
}

// trusted reports whether a is one of the proxies named in
// Config.TrustedProxies.
func (s *Server) trusted(a netip.Addr) bool {
	for _, p := range s.cfg.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// peerAddr is the address at the other end of r's connection.
func peerAddr(r *http.Request) netip.Addr {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		a, _ := netip.ParseAddr(host)
		return a.Unmap()
	}
	return ap.Addr().Unmap()
}

// failLimiter counts failed authentications per key (a client, a
// credential prefix) within a window, and remembers the prefixes of
// credentials that succeeded.
type failLimiter struct {
	now   func() time.Time
	mu    sync.Mutex
	fails map[string]*failCount
	good  map[string]bool
}

type failCount struct {
	n     int
	first time.Time
}

func newFailLimiter(now func() time.Time) *failLimiter {
	return &failLimiter{now: now, fails: map[string]*failCount{}, good: map[string]bool{}}
}

// fail counts one failure against each key.
func (l *failLimiter) fail(keys ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	for _, k := range keys {
		c := l.fails[k]
		if c == nil || now.Sub(c.first) > failureWindow {
			if len(l.fails) >= maxTracked {
				l.expire(now)
			}
			c = &failCount{first: now}
			l.fails[k] = c
		}
		c.n++
	}
}

// blocked reports whether any of keys has failed too often lately.
func (l *failLimiter) blocked(keys ...string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	for _, k := range keys {
		if c := l.fails[k]; c != nil && c.n >= maxFailures && now.Sub(c.first) <= failureWindow {
			return true
		}
	}
	return false
}

// succeeded remembers the prefix of a credential that was accepted.
func (l *failLimiter) succeeded(prefix string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.good) < maxTracked {
		l.good[prefix] = true
	}
}

// known reports whether a credential with this prefix has been accepted.
func (l *failLimiter) known(prefix string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.good[prefix]
}

// expire forgets keys whose window has passed (called with mu held).
func (l *failLimiter) expire(now time.Time) {
	for k, c := range l.fails {
		if now.Sub(c.first) > failureWindow {
			delete(l.fails, k)
		}
	}
}
