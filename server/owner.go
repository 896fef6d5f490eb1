// The server's side of the owner's handshake (internal/ownerauth says how
// it goes): it proves that it holds the local secret by answering the
// command line's nonce, issues a challenge, and takes each answer once.

package server

import (
	"crypto/hmac"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/replayarchive/replay/internal/ownerauth"
)

// ownerChallenge answers GET /api/v1/owner/challenge?nonce=HEX: the proof
// that this server holds the local secret, and a challenge for the caller.
func (s *Server) ownerChallenge(w http.ResponseWriter, r *http.Request) {
	if s.cfg.LocalSecret == "" {
		writeError(w, http.StatusNotFound, "not_found", "this server has no local secret: nothing runs commands for the owner here")
		return
	}
	nonce := r.URL.Query().Get("nonce")
	if !ownerauth.IsNonce(nonce) {
		writeError(w, http.StatusBadRequest, "bad_request", "nonce: want 64 hex digits (32 random bytes)")
		return
	}
	ch, ok := s.challenges.issue(s.cfg.Now())
	if !ok {
		writeError(w, http.StatusServiceUnavailable, "busy", "too many unanswered owner challenges; try again in a minute")
		return
	}
	writeJSON(w, http.StatusOK, ownerauth.Challenge{Proof: ownerauth.ServerProof(s.cfg.LocalSecret, nonce), Challenge: ch})
}

// ownerAnswered reports whether an Authorization header answers one of
// this server's challenges with the local secret. Each challenge is good
// for one answer.
func (s *Server) ownerAnswered(h string) bool {
	rest, ok := strings.CutPrefix(h, ownerauth.Scheme)
	if !ok || s.cfg.LocalSecret == "" {
		return false
	}
	ch, mac, ok := strings.Cut(strings.TrimSpace(rest), ".")
	if !ok || !s.challenges.take(ch, s.cfg.Now()) {
		return false
	}
	return hmac.Equal([]byte(mac), []byte(ownerauth.OwnerProof(s.cfg.LocalSecret, ch)))
}

// challenges are the owner challenges issued and not yet answered.
type challenges struct {
	mu sync.Mutex
	m  map[string]time.Time // challenge → issued
}

const (
	challengeTTL = time.Minute
	// maxChallenges bounds the unanswered challenges that unauthenticated
	// callers can make the server remember.
	maxChallenges = 1024
)

func (c *challenges) issue(now time.Time) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]time.Time{}
	}
	if len(c.m) >= maxChallenges {
		for k, at := range c.m {
			if now.Sub(at) > challengeTTL {
				delete(c.m, k)
			}
		}
		if len(c.m) >= maxChallenges {
			return "", false
		}
	}
	ch := ownerauth.NewNonce()
	c.m[ch] = now
	return ch, true
}

func (c *challenges) take(ch string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, ok := c.m[ch]
	delete(c.m, ch)
	return ok && now.Sub(at) <= challengeTTL
}
