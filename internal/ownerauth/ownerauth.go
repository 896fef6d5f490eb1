// Package ownerauth is the command line's side of the owner's handshake
// with a running server, and what both sides share: the files `serve`
// leaves in the archive directory (where it listens, the local secret),
// the proofs each side computes, and the owner's login link. The server's
// side (answering challenges) is in package server; the command line
// imports this package, not the server.
//
// The command line and the server each prove that they hold the local
// secret (serve.secret, mode 0600) without sending it. The command line
// sends a fresh nonce; the server answers with an HMAC of it under the
// secret and a challenge of its own; the command line checks the answer
// before it sends anything else, then answers the challenge with an HMAC
// of its own. A process that binds the port of a server that died (its
// serve.json and serve.secret left behind) learns neither the secret nor
// the command, and cannot pass for the server.
package ownerauth

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
	"time"
)

// The files a running server keeps in the archive directory, so that the
// command line finds it and proves it is the owner.
const (
	// EndpointFile holds the Endpoint.
	EndpointFile = "serve.json"
	// SecretFile holds the local secret, readable by the owner only.
	SecretFile = "serve.secret"
)

// Endpoint is what `serve` writes into EndpointFile: where the server
// listens, and which process it is.
type Endpoint struct {
	URL   string    `json:"url"`
	PID   int       `json:"pid"`
	Since time.Time `json:"since"`
}

// LoginURL is the link that signs the owner's browser in to the server at
// baseURL: the page takes the local secret from the fragment, which the
// browser never sends to a server, and drops it from the address bar.
func LoginURL(baseURL, localSecret string) string {
	return baseURL + "/#login=" + localSecret
}

// Scheme is the Authorization scheme of an answered challenge:
// "Owner CHALLENGE.PROOF".
const Scheme = "Owner "

// The labels keep the server's proof and the owner's apart, so that one
// can never be replayed as the other.
const (
	serverProofLabel = "replay archive: server proof\x00"
	ownerProofLabel  = "replay archive: owner proof\x00"
)

// ErrNotTheServer is returned by Authorization when whatever answers at
// the endpoint cannot prove that it holds the archive's local secret: the
// serve.json it was found through is stale, and the process on its port is
// not the archive's server.
var ErrNotTheServer = errors.New("the process at that address cannot prove it is this archive's server")

// Challenge is the answer of GET /api/v1/owner/challenge.
type Challenge struct {
	// Proof is ServerProof of the caller's nonce.
	Proof string `json:"proof"`
	// Challenge is the server's nonce, for the caller to answer once,
	// within a minute.
	Challenge string `json:"challenge"`
}

// ServerProof is the server's proof that it holds secret: the hex
// HMAC-SHA256 of the caller's nonce under it.
func ServerProof(secret, nonce string) string { return proof(secret, serverProofLabel, nonce) }

// OwnerProof is the owner's answer to the server's challenge.
func OwnerProof(secret, challenge string) string { return proof(secret, ownerProofLabel, challenge) }

func proof(secret, label, nonce string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(label))
	m.Write([]byte(nonce))
	return hex.EncodeToString(m.Sum(nil))
}

// NewNonce returns 32 random bytes in hex: a nonce or a challenge.
func NewNonce() string {
	var b [32]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// IsNonce reports whether s looks like a nonce of NewNonce's.
func IsNonce(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// Authorization proves to the server at baseURL that the caller holds
// secret, after the server has proved the same: it returns the value of
// an Authorization header that makes one request the owner's. A server
// that cannot prove it is answered with ErrNotTheServer; a server that
// cannot be reached, with the dial's error.
func Authorization(ctx context.Context, client *http.Client, baseURL, secret string) (string, error) {
	nonce := NewNonce()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, baseURL+"/api/v1/owner/challenge?nonce="+url.QueryEscape(nonce), nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var ch Challenge
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&ch) != nil {
		return "", fmt.Errorf("%s answered the owner's challenge with %s: %w", baseURL, resp.Status, ErrNotTheServer)
	}
	if !hmac.Equal([]byte(ch.Proof), []byte(ServerProof(secret, nonce))) || !IsNonce(ch.Challenge) {
		return "", fmt.Errorf("%s: %w", baseURL, ErrNotTheServer)
	}
	return Scheme + ch.Challenge + "." + OwnerProof(secret, ch.Challenge), nil
}
