// The owner's handshake: the command line and the server each prove that
// they hold the local secret (serve.secret, mode 0600) without sending it.
// The command line sends a fresh nonce; the server answers with an HMAC of
// it under the secret and a challenge of its own; the command line checks
// the answer before it sends anything else, then answers the challenge
// with an HMAC of its own. A process that binds the port of a server that
// died (its serve.json and serve.secret left behind) learns neither the
// secret nor the command, and cannot pass for the server.

package server

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// ownerScheme is the Authorization scheme of an answered challenge:
// "Owner CHALLENGE.PROOF".
const ownerScheme = "Owner "

// The labels keep the server's proof and the owner's apart, so that one
// can never be replayed as the other.
const (
	serverProofLabel = "replay archive: server proof\x00"
	ownerProofLabel  = "replay archive: owner proof\x00"
)

// ErrNotTheServer is returned by OwnerAuthorization when whatever answers
// at the endpoint cannot prove that it holds the archive's local secret:
// the serve.json it was found through is stale, and the process on its
// port is not the archive's server.
var ErrNotTheServer = errors.New("the process at that address cannot prove it is this archive's server")

// OwnerChallenge is the answer of GET /api/v1/owner/challenge.
type OwnerChallenge struct {
	// Proof is the hex HMAC-SHA256, under the local secret, of the
	// caller's nonce.
	Proof string `json:"proof"`
	// Challenge is the server's nonce, for the caller to answer once,
	// within a minute.
	Challenge string `json:"challenge"`
}

func proof(secret, label, nonce string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(label))
	m.Write([]byte(nonce))
	return hex.EncodeToString(m.Sum(nil))
}

func newNonce() string {
	var b [32]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// OwnerAuthorization proves to the server at baseURL that the caller holds
// secret, after the server has proved the same: it returns the value of
// an Authorization header that makes one request the owner's. A server
// that cannot prove it is answered with ErrNotTheServer; a server that
// cannot be reached, with the dial's error.
func OwnerAuthorization(ctx context.Context, client *http.Client, baseURL, secret string) (string, error) {
	nonce := newNonce()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, baseURL+"/api/v1/owner/challenge?nonce="+url.QueryEscape(nonce), nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var ch OwnerChallenge
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&ch) != nil {
		return "", fmt.Errorf("%s answered the owner's challenge with %s: %w", baseURL, resp.Status, ErrNotTheServer)
	}
	if !hmac.Equal([]byte(ch.Proof), []byte(proof(secret, serverProofLabel, nonce))) || !isNonce(ch.Challenge) {
		return "", fmt.Errorf("%s: %w", baseURL, ErrNotTheServer)
	}
	return ownerScheme + ch.Challenge + "." + proof(secret, ownerProofLabel, ch.Challenge), nil
}

// isNonce reports whether s looks like a nonce of newNonce's.
func isNonce(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// ownerChallenge answers GET /api/v1/owner/challenge?nonce=HEX: the proof
// that this server holds the local secret, and a challenge for the caller.
func (s *Server) ownerChallenge(w http.ResponseWriter, r *http.Request) {
	if s.cfg.LocalSecret == "" {
		writeError(w, http.StatusNotFound, "not_found", "this server has no local secret: nothing runs commands for the owner here")
		return
	}
	nonce := r.URL.Query().Get("nonce")
	if !isNonce(nonce) {
		writeError(w, http.StatusBadRequest, "bad_request", "nonce: want 64 hex digits (32 random bytes)")
		return
	}
	ch, ok := s.challenges.issue(s.cfg.Now())
	if !ok {
		writeError(w, http.StatusServiceUnavailable, "busy", "too many unanswered owner challenges; try again in a minute")
		return
	}
	writeJSON(w, http.StatusOK, OwnerChallenge{Proof: proof(s.cfg.LocalSecret, serverProofLabel, nonce), Challenge: ch})
}

// ownerAnswered reports whether an Authorization header answers one of
// this server's challenges with the local secret. Each challenge is good
// for one answer.
func (s *Server) ownerAnswered(h string) bool {
	rest, ok := strings.CutPrefix(h, ownerScheme)
	if !ok || s.cfg.LocalSecret == "" {
		return false
	}
	ch, mac, ok := strings.Cut(strings.TrimSpace(rest), ".")
	if !ok || !s.challenges.take(ch, s.cfg.Now()) {
		return false
	}
	return hmac.Equal([]byte(mac), []byte(proof(s.cfg.LocalSecret, ownerProofLabel, ch)))
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
	ch := newNonce()
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
