package replay

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os/user"
	"slices"
	"strings"

	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/catalog"
)

// Role is what a caller may do. Viewer, moderator and admin are ordered:
// each may do everything the ones before it may, so a handler checks
// "at least this role". RolePusher comes before them all and may do none
// of what they may: it may only push growing recordings (server/push.go),
// which an admin may do too and a viewer or moderator may not.
type Role int

// Roles, from least to most trusted.
const (
	// RolePusher may only push the growing files of a game server to the
	// archive (archivectl push): it reads, searches and deletes nothing,
	// so the token kept on a game server's host gives away no recording.
	RolePusher Role = iota + 1
	// RoleViewer may search, show, read frames and download redacted clips.
	RoleViewer
	// RoleModerator may also flag, hold and take recordings down.
	RoleModerator
	// RoleAdmin may also download whole original files, set retention,
	// prune, lift takedowns and manage tokens, and may push.
	RoleAdmin
)

var roleNames = [...]string{RolePusher: "pusher", RoleViewer: "viewer", RoleModerator: "moderator", RoleAdmin: "admin"}

// String returns the role's name as tokens store it.
func (r Role) String() string {
	if r >= RolePusher && r <= RoleAdmin {
		return roleNames[r]
	}
	return fmt.Sprintf("Role(%d)", int(r))
}

// ParseRole reads a role name.
func ParseRole(s string) (Role, error) {
	for r := RolePusher; r <= RoleAdmin; r++ {
		if roleNames[r] == s {
			return r, nil
		}
	}
	return 0, fmt.Errorf("unknown role %q (pusher, viewer, moderator or admin)", s)
}

// Actor is who makes a change: it goes to the audit log.
type Actor struct {
	Name string
	Role Role
}

// LocalActor is the archive's owner working on the command line.
func LocalActor() Actor {
	name := "owner"
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	return Actor{Name: "local:" + name, Role: RoleAdmin}
}

// tokenPrefix starts every token, so a leaked one is recognisable in logs
// and by secret scanners.
const tokenPrefix = "rpa_"

// SecretPrefixLen is how many leading characters of a secret (its
// "rpa_" and 48 random bits) a token keeps in the clear, as its Prefix.
const SecretPrefixLen = 12

// NewSecret returns a fresh random token secret.
func NewSecret() string {
	var b [32]byte
	rand.Read(b[:])
	return tokenPrefix + base64.RawURLEncoding.EncodeToString(b[:])
}

// HashSecret returns the hex sha256 of a token secret, which is all the
// archive stores of it.
func HashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// CreateToken stores a new token called name with role and returns its
// secret, which is shown this once and stored nowhere.
func (x *Archive) CreateToken(by Actor, name string, role Role) (string, error) {
	if x.opts.ReadOnly {
		return "", ErrReadOnly
	}
	name = strings.TrimSpace(name)
	if name == "" || strings.ContainsAny(name, " \t\n/") || strings.HasPrefix(name, "local:") {
		return "", fmt.Errorf("token name %q: one word, no '/', not starting with 'local:'", name)
	}
	if role < RolePusher || role > RoleAdmin {
		return "", fmt.Errorf("token %q: no role", name)
	}
	secret := NewSecret()
	tok := archive.Token{Name: name, Role: role.String(), Hash: HashSecret(secret), Prefix: secret[:SecretPrefixLen], CreatedBy: by.Name, Created: x.now()}
	defer x.change()()
	if err := x.shareToken(tok); err != nil {
		return "", err
	}
	if err := x.a.PutToken(tok); err != nil {
		return "", err
	}
	x.audit(archive.AuditEntry{Who: by.Name, Action: archive.AuditTokenCreate, Detail: name + " (" + role.String() + ")"})
	return secret, nil
}

// Tokens lists the stored tokens (names, roles and hashes; never secrets).
func (x *Archive) Tokens() ([]archive.Token, error) { return x.a.Tokens() }

// RevokeToken removes the token called name: requests carrying it are
// refused from now on.
func (x *Archive) RevokeToken(by Actor, name string) error {
	if x.opts.ReadOnly {
		return ErrReadOnly
	}
	defer x.change()()
	toks, err := x.a.Tokens()
	if err != nil {
		return err
	}
	if x.shared != nil && slices.ContainsFunc(toks, func(t archive.Token) bool { return t.Name == name }) {
		if err := x.unpublish(context.Background(), catalog.KindToken, name); err != nil {
			return err
		}
	}
	if err := x.a.DeleteToken(name); err != nil {
		return err
	}
	x.audit(archive.AuditEntry{Who: by.Name, Action: archive.AuditTokenRevoke, Detail: name})
	return nil
}

// Authenticate returns the actor a token secret belongs to. Every stored
// hash is compared in constant time, so the time taken does not say how
// close a guess was.
func (x *Archive) Authenticate(secret string) (Actor, bool, error) {
	toks, err := x.a.Tokens()
	if err != nil {
		return Actor{}, false, err
	}
	h := []byte(HashSecret(secret))
	var found *archive.Token
	for i := range toks {
		if subtle.ConstantTimeCompare(h, []byte(toks[i].Hash)) == 1 {
			found = &toks[i]
		}
	}
	if found == nil {
		return Actor{}, false, nil
	}
	role, err := ParseRole(found.Role)
	if err != nil {
		return Actor{}, false, fmt.Errorf("token %q: %w", found.Name, err)
	}
	return Actor{Name: found.Name, Role: role}, true, nil
}

// shareToken creates tok in the shared catalog, when there is one: a name
// another node took first is refused here too.
func (x *Archive) shareToken(tok archive.Token) error {
	if x.shared == nil {
		return nil
	}
	b, err := json.Marshal(tok)
	if err != nil {
		return err
	}
	_, err = x.shared.cat.Create(context.Background(), catalog.KindToken, tok.Name, b, x.shared.node)
	if errors.Is(err, catalog.ErrExists) {
		return fmt.Errorf("archive: token: %q: %w", tok.Name, archive.ErrTokenExists)
	}
	if err != nil {
		return fmt.Errorf("shared catalog: %w (nothing changed)", err)
	}
	return nil
}
