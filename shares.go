// Shared clip links: a moderator hands someone without a token a link to
// one redacted clip of one recording, good until it expires. The link
// carries what it grants (the recording, the tick range, when it was made
// and when it expires, its id) signed with an HMAC key the archive makes
// once and keeps in <archive>/shares/ (mode 0600, beside serve.secret:
// never in the catalog, the search index, exports or a bucket). Revoking
// one link records its id; rotating the key revokes every link at once.
// Every creation, first use and revocation is audited on the recording.
//
// With a shared catalog (several nodes), the key, the settings and the
// ids of keys rotated away are one setting of the catalog (settingShares)
// and each link an entry (kindShare), made there first and applied by
// every node as other shared state is: a link made on one node opens on
// every other, and a revocation or rotation holds on all. The key is then
// in the shared catalog too, which every node trusts already (it holds
// the tokens and the takedowns).

package replay

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/catalog"
	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/internal/durable"
)

// Audit actions of shared links.
const (
	// AuditShareCreate: a moderator made a shared link to a clip.
	AuditShareCreate = "share-create"
	// AuditShareUse: a shared link was first used.
	AuditShareUse = "share-use"
	// AuditShareRevoke: a shared link was revoked (one, or all by a key
	// rotation).
	AuditShareRevoke = "share-revoke"
	// AuditShareConfig: an admin changed the sharing settings or rotated
	// the key.
	AuditShareConfig = "share-config"
)

// DefaultShareMaxLifetime is how long a shared link may live unless an
// admin sets otherwise: long enough to send a clip to someone, short
// enough that a forgotten link dies on its own.
const DefaultShareMaxLifetime = 7 * 24 * time.Hour

// maxShareLinks bounds the live links kept, so the state file stays small.
const maxShareLinks = 10000

// Errors of shared links: a server answers each with its own code.
var (
	// ErrShareTampered: the link is not one this archive signed.
	ErrShareTampered = errors.New("this link is not valid: it was altered, mistyped, or made by another archive")
	// ErrShareExpired: the link's lifetime is over.
	ErrShareExpired = errors.New("this link has expired")
	// ErrShareRevoked: the link (or every link, by a key rotation) was
	// revoked.
	ErrShareRevoked = errors.New("this link was revoked")
	// ErrSharingDisabled: an admin turned shared links off.
	ErrSharingDisabled = errors.New("shared links are turned off on this archive")
	// ErrShareLifetime: the lifetime asked for is not allowed.
	ErrShareLifetime = errors.New("bad lifetime for a shared link")
	// ErrNoShare: no live link has this id.
	ErrNoShare = errors.New("no such shared link")
	// ErrShareForbidden: the actor may not make or revoke shared links.
	ErrShareForbidden = errors.New("only moderators and admins may share clips")
)

// ShareConfig is the admins' setting for shared links.
type ShareConfig struct {
	// Disabled refuses every link, old and new, while set.
	Disabled bool `json:"disabled"`
	// MaxLifetime is the longest a link may live (0: the default, 7 days).
	// Links older than it are refused even if made under a longer one.
	MaxLifetime time.Duration `json:"max_lifetime"`
}

// maxLifetime returns c's lifetime bound, the default when unset.
func (c ShareConfig) maxLifetime() time.Duration {
	if c.MaxLifetime <= 0 {
		return DefaultShareMaxLifetime
	}
	return c.MaxLifetime
}

// ShareLink is one shared link: what it grants and its history. Token is
// set only when the link is made: the archive keeps no copy of it.
type ShareLink struct {
	ID        string    `json:"id"`
	Recording uuid.UUID `json:"recording"`
	From      int64     `json:"from"`
	To        int64     `json:"to"`
	Created   time.Time `json:"created"`
	Expires   time.Time `json:"expires"`
	By        string    `json:"by,omitempty"`
	FirstUse  time.Time `json:"first_use,omitzero"`
	Revoked   time.Time `json:"revoked,omitzero"`
	Token     string    `json:"-"`
}

// shareState is <archive>/shares/state.json: the settings, the links not
// yet expired, and the ids of keys rotated away (so their links are
// answered "revoked", not "not valid").
type shareState struct {
	Config  ShareConfig `json:"config"`
	Links   []ShareLink `json:"links"`
	OldKeys []string    `json:"old_keys,omitempty"`
}

const (
	shareDir       = "shares"
	shareKeyFile   = "key"
	shareStateFile = "state.json"
	// shareVersion is the first byte of every link's payload.
	shareVersion = 1
	// sharePayloadLen: version, key id (4), link id (8), recording (16),
	// from, to, created and expires (8 each).
	sharePayloadLen = 1 + 4 + 8 + 16 + 4*8
	// shareLabel keeps the links' MACs apart from any other use of a key.
	shareLabel = "replay archive: shared clip link\x00"
)

// ShareConfig returns the sharing settings.
func (x *Archive) ShareConfig() (ShareConfig, error) {
	st, err := x.loadShares()
	return st.Config, err
}

// SetShareConfig stores the sharing settings (admins only: the caller
// checks the role), audited in the archive's log.
func (x *Archive) SetShareConfig(by Actor, c ShareConfig) error {
	if x.opts.ReadOnly {
		return ErrReadOnly
	}
	if by.Role < RoleAdmin {
		return fmt.Errorf("share config: %w", ErrShareForbidden)
	}
	if c.MaxLifetime < 0 {
		return fmt.Errorf("max lifetime %s: %w", c.MaxLifetime, ErrShareLifetime)
	}
	x.shareMu.Lock()
	defer x.shareMu.Unlock()
	key, err := x.signingKey()
	if err != nil {
		return err
	}
	st, err := x.loadShares()
	if err != nil {
		return err
	}
	st.Config = c
	done := x.change()
	err = x.publishShares(st, key)
	if err == nil {
		err = x.saveShares(st)
	}
	done()
	if err != nil {
		return err
	}
	x.audit(archive.AuditEntry{Who: by.Name, Action: AuditShareConfig, Detail: fmt.Sprintf("enabled=%t max-lifetime=%s", !c.Disabled, c.maxLifetime())})
	return nil
}

// ShareClip makes a link to the redacted clip [from, to] of recording ref
// that anyone holding it may download until lifetime has passed (0: the
// longest the settings allow). The range must be one the recording can be
// cut to. The link is audited on the recording; its token is returned
// this once.
func (x *Archive) ShareClip(by Actor, ref string, from, to int64, lifetime time.Duration) (ShareLink, error) {
	if x.opts.ReadOnly {
		return ShareLink{}, ErrReadOnly
	}
	if by.Role < RoleModerator {
		return ShareLink{}, ErrShareForbidden
	}
	rec, err := x.Recording(ref)
	if err != nil {
		return ShareLink{}, err
	}
	if !rec.CanClip() {
		return ShareLink{}, fmt.Errorf("share %s: %w", rec.Format(), formats.ErrClipUnsupported)
	}
	span, err := rec.checkRange(from, to)
	if err != nil {
		return ShareLink{}, err
	}
	x.shareMu.Lock()
	defer x.shareMu.Unlock()
	key, err := x.signingKey()
	if err != nil {
		return ShareLink{}, err
	}
	st, err := x.loadShares()
	if err != nil {
		return ShareLink{}, err
	}
	if st.Config.Disabled {
		return ShareLink{}, ErrSharingDisabled
	}
	limit := st.Config.maxLifetime()
	if lifetime == 0 {
		lifetime = limit
	}
	if lifetime < time.Minute || lifetime > limit {
		return ShareLink{}, fmt.Errorf("%s: %w: from 1m to %s (the archive's maximum)", lifetime, ErrShareLifetime, limit)
	}
	if len(st.Links) >= maxShareLinks {
		return ShareLink{}, fmt.Errorf("%d links are live: revoke some or rotate the key: %w", len(st.Links), ErrShareLifetime)
	}
	var idb [8]byte
	rand.Read(idb[:])
	now := x.now().Truncate(time.Second)
	l := ShareLink{ID: hex.EncodeToString(idb[:]), Recording: rec.Manifest().ID, From: span.From, To: span.To,
		Created: now, Expires: now.Add(lifetime), By: by.Name}
	l.Token = signShare(key, l)
	st.Links = append(st.Links, l)
	done := x.change()
	err = x.publishShareLink(l)
	if err == nil {
		err = x.saveShares(st)
	}
	done()
	if err != nil {
		return ShareLink{}, err
	}
	x.audit(archive.AuditEntry{Who: by.Name, Action: AuditShareCreate, Recording: l.Recording,
		Detail: fmt.Sprintf("link %s: ticks %d-%d until %s", l.ID, l.From, l.To, l.Expires.Format(time.RFC3339))})
	return l, nil
}

// OpenShare checks a link's token: it must be signed with the archive's
// current key, not revoked, not expired (by its own expiry and by the
// current maximum lifetime), and sharing must be enabled. It returns what
// the link grants; it opens no recording.
func (x *Archive) OpenShare(token string) (ShareLink, error) {
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || len(raw) != sharePayloadLen+sha256.Size || raw[0] != shareVersion {
		return ShareLink{}, ErrShareTampered
	}
	// The MAC is checked before the state is read: a made-up link costs
	// one small file read and a hash.
	key, err := x.shareKey(false)
	if err != nil {
		return ShareLink{}, err
	}
	payload, mac := raw[:sharePayloadLen], raw[sharePayloadLen:]
	kid := hex.EncodeToString(payload[1:5])
	if key == nil || kid != keyID(key) {
		st, err := x.loadShares()
		if err != nil {
			return ShareLink{}, err
		}
		if slices.Contains(st.OldKeys, kid) {
			return ShareLink{}, fmt.Errorf("%w (every link was revoked at once)", ErrShareRevoked)
		}
		return ShareLink{}, ErrShareTampered
	}
	if !hmac.Equal(mac, shareMAC(key, payload)) {
		return ShareLink{}, ErrShareTampered
	}
	st, err := x.loadShares()
	if err != nil {
		return ShareLink{}, err
	}
	l := decodeShare(payload)
	if st.Config.Disabled {
		return l, ErrSharingDisabled
	}
	now := x.now()
	for _, k := range st.Links {
		if k.ID == l.ID && !k.Revoked.IsZero() {
			return l, fmt.Errorf("%w on %s", ErrShareRevoked, k.Revoked.Format(time.RFC3339))
		}
	}
	until := l.Expires
	if capped := l.Created.Add(st.Config.maxLifetime()); capped.Before(until) {
		until = capped
	}
	if !now.Before(until) {
		return l, fmt.Errorf("%w (it was good until %s)", ErrShareExpired, until.Format(time.RFC3339))
	}
	return l, nil
}

// ShareUsed records that link l was used: its first use is audited on the
// recording (later uses are not, so a link opened often does not flood
// the history; servers rate-limit its uses).
func (x *Archive) ShareUsed(l ShareLink, client string) error {
	if x.opts.ReadOnly {
		return nil
	}
	x.shareMu.Lock()
	defer x.shareMu.Unlock()
	st, err := x.loadShares()
	if err != nil {
		return err
	}
	i := slices.IndexFunc(st.Links, func(k ShareLink) bool { return k.ID == l.ID })
	if i < 0 || !st.Links[i].FirstUse.IsZero() {
		return nil
	}
	st.Links[i].FirstUse = x.now()
	done := x.change()
	if err := x.publishShareLink(st.Links[i]); err != nil {
		// The use is audited here; another node may audit it again.
		x.log.Warn("shared links: the first use stays on this node", "link", l.ID, "err", err)
	}
	err = x.saveShares(st)
	done()
	if err != nil {
		return err
	}
	x.audit(archive.AuditEntry{Who: "shared link " + l.ID, Action: AuditShareUse, Recording: l.Recording,
		Detail: fmt.Sprintf("link %s first used: ticks %d-%d", l.ID, l.From, l.To), Reason: "client " + client})
	return nil
}

// Shares lists the links not yet expired, revoked ones included, newest
// first (no tokens).
func (x *Archive) Shares() ([]ShareLink, error) {
	st, err := x.loadShares()
	if err != nil {
		return nil, err
	}
	now := x.now()
	out := []ShareLink{}
	for _, l := range st.Links {
		if now.Before(l.Expires) {
			out = append(out, l)
		}
	}
	slices.Reverse(out)
	return out, nil
}

// RevokeShare revokes the link with id (or a unique prefix of at least 4
// characters): it is refused from now on. Audited on its recording.
func (x *Archive) RevokeShare(by Actor, id string) (ShareLink, error) {
	if x.opts.ReadOnly {
		return ShareLink{}, ErrReadOnly
	}
	if by.Role < RoleModerator {
		return ShareLink{}, ErrShareForbidden
	}
	id = strings.ToLower(strings.TrimSpace(id))
	if len(id) < 4 {
		return ShareLink{}, fmt.Errorf("link id %q: give at least 4 characters: %w", id, ErrNoShare)
	}
	x.shareMu.Lock()
	defer x.shareMu.Unlock()
	st, err := x.loadShares()
	if err != nil {
		return ShareLink{}, err
	}
	found := -1
	for i, l := range st.Links {
		if strings.HasPrefix(l.ID, id) && l.Revoked.IsZero() {
			if found >= 0 {
				return ShareLink{}, fmt.Errorf("link id %q names several links: %w", id, ErrNoShare)
			}
			found = i
		}
	}
	if found < 0 {
		return ShareLink{}, fmt.Errorf("link %q (live and not revoked): %w", id, ErrNoShare)
	}
	st.Links[found].Revoked = x.now()
	done := x.change()
	err = x.publishShareLink(st.Links[found])
	if err == nil {
		err = x.saveShares(st)
	}
	done()
	if err != nil {
		return ShareLink{}, err
	}
	l := st.Links[found]
	x.audit(archive.AuditEntry{Who: by.Name, Action: AuditShareRevoke, Recording: l.Recording, Detail: "link " + l.ID})
	return l, nil
}

// RotateShareKey makes a new signing key, which revokes every link made
// so far at once; it returns how many live links that revoked. Admins
// only (the caller checks the role); audited in the archive's log and on
// each revoked link's recording.
func (x *Archive) RotateShareKey(by Actor) (int, error) {
	if x.opts.ReadOnly {
		return 0, ErrReadOnly
	}
	if by.Role < RoleAdmin {
		return 0, fmt.Errorf("rotate: %w", ErrShareForbidden)
	}
	x.shareMu.Lock()
	defer x.shareMu.Unlock()
	if x.shared != nil {
		// The key rotated away is the catalog's.
		if _, err := x.signingKey(); err != nil {
			return 0, err
		}
	}
	st, err := x.loadShares()
	if err != nil {
		return 0, err
	}
	old, err := x.shareKey(false)
	if err != nil {
		return 0, err
	}
	if old != nil {
		st.OldKeys = append(st.OldKeys, keyID(old))
		if n := len(st.OldKeys); n > 100 {
			st.OldKeys = st.OldKeys[n-100:]
		}
	}
	key := newShareKey()
	now := x.now()
	var entries []archive.AuditEntry
	for _, l := range st.Links {
		if l.Revoked.IsZero() && now.Before(l.Expires) {
			entries = append(entries, archive.AuditEntry{Who: by.Name, Action: AuditShareRevoke, Recording: l.Recording, Detail: "link " + l.ID, Reason: "the signing key was rotated"})
		}
	}
	links := st.Links
	st.Links = nil // every link is refused by its key now
	done := x.change()
	err = x.publishShares(st, key)
	for _, l := range links {
		if err == nil && x.shared != nil {
			err = x.unpublish(context.Background(), kindShare, l.ID)
		}
	}
	if err == nil {
		err = x.putShareKey(key)
	}
	if err == nil {
		err = x.saveShares(st)
	}
	done()
	if err != nil {
		return 0, err
	}
	entries = append(entries, archive.AuditEntry{Who: by.Name, Action: AuditShareConfig, Detail: fmt.Sprintf("key rotated: %d live links revoked", len(entries))})
	x.audit(entries...)
	return len(entries) - 1, nil
}

// shareKey reads the signing key; with create, it makes one when there is
// none. Without one (and without create) it returns nil.
func (x *Archive) shareKey(create bool) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(x.dir, shareDir, shareKeyFile))
	if errors.Is(err, fs.ErrNotExist) {
		if !create {
			return nil, nil
		}
		if err := x.putShareKey(newShareKey()); err != nil {
			return nil, err
		}
		return x.shareKey(false)
	}
	if err != nil {
		return nil, fmt.Errorf("share key: %w", err)
	}
	key, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(key) != 32 {
		return nil, fmt.Errorf("share key %s: not 64 hex digits", filepath.Join(x.dir, shareDir, shareKeyFile))
	}
	return key, nil
}

// newShareKey returns a new random signing key.
func newShareKey() []byte {
	key := make([]byte, 32)
	rand.Read(key)
	return key
}

// putShareKey makes key the signing key (mode 0600), replacing the old one
// atomically.
func (x *Archive) putShareKey(key []byte) error {
	return x.writeShareFile(shareKeyFile, []byte(hex.EncodeToString(key)+"\n"))
}

// Shared links in the shared catalog: kindShare's key is a link's id, its
// value the link (no token); settingShares holds sharedShares.
const (
	kindShare     catalog.Kind = "share"
	settingShares string       = "shares"
)

// sharedShares is what every node shares of the links' state besides the
// links: the settings, the ids of keys rotated away, and the key (hex).
type sharedShares struct {
	Config  ShareConfig `json:"config"`
	OldKeys []string    `json:"old_keys,omitempty"`
	Key     string      `json:"key"`
}

// shareCatalogTimeout bounds a shared link's change in the shared catalog.
const shareCatalogTimeout = 10 * time.Second

// signingKey returns the key links are signed with, making one when there
// is none. With a shared catalog it is the catalog's: the first node to
// need one gives its own (put-if-absent), and the others take that one.
// x.shareMu is held.
func (x *Archive) signingKey() ([]byte, error) {
	if x.shared == nil {
		return x.shareKey(true)
	}
	ctx, cancel := context.WithTimeout(context.Background(), shareCatalogTimeout)
	defer cancel()
	cat, node := x.shared.cat, x.shared.node
	e, ok, err := cat.Get(ctx, catalog.KindSetting, settingShares)
	if err == nil && !ok {
		var key []byte
		if key, err = x.shareKey(true); err != nil {
			return nil, err
		}
		var st shareState
		if st, err = x.loadShares(); err != nil {
			return nil, err
		}
		b, _ := json.Marshal(sharedShares{Config: st.Config, OldKeys: st.OldKeys, Key: hex.EncodeToString(key)})
		if e, err = cat.Create(ctx, catalog.KindSetting, settingShares, b, node); errors.Is(err, catalog.ErrExists) {
			e, _, err = cat.Get(ctx, catalog.KindSetting, settingShares)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("shared links: the shared catalog: %w", err)
	}
	if err := x.applySharesLocked(e.Value); err != nil {
		return nil, err
	}
	return x.shareKey(false)
}

// publishShares puts st's settings and old key ids, and key, into the
// shared catalog (when there is one).
func (x *Archive) publishShares(st shareState, key []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), shareCatalogTimeout)
	defer cancel()
	return x.publish(ctx, catalog.KindSetting, settingShares, sharedShares{Config: st.Config, OldKeys: st.OldKeys, Key: hex.EncodeToString(key)})
}

// publishShareLink puts link l into the shared catalog (when there is one).
func (x *Archive) publishShareLink(l ShareLink) error {
	ctx, cancel := context.WithTimeout(context.Background(), shareCatalogTimeout)
	defer cancel()
	return x.publish(ctx, kindShare, l.ID, l)
}

// applyShareEntry makes this node's links agree with one of the shared
// catalog's changes: a link (kindShare) or the shared state
// (settingShares).
func (x *Archive) applyShareEntry(e catalog.Entry) error {
	x.shareMu.Lock()
	defer x.shareMu.Unlock()
	if e.Kind == catalog.KindSetting {
		if e.Deleted {
			return nil
		}
		return x.applySharesLocked(e.Value)
	}
	st, err := x.loadShares()
	if err != nil {
		return err
	}
	i := slices.IndexFunc(st.Links, func(l ShareLink) bool { return l.ID == e.Key })
	switch {
	case e.Deleted && i < 0:
		return nil
	case e.Deleted:
		st.Links = slices.Delete(st.Links, i, i+1)
	default:
		var l ShareLink
		if err := json.Unmarshal(e.Value, &l); err != nil {
			return err
		}
		if l.ID != e.Key {
			return fmt.Errorf("shared link %s holds link %s", e.Key, l.ID)
		}
		if i < 0 {
			st.Links = append(st.Links, l)
		} else {
			st.Links[i] = l
		}
	}
	return x.saveShares(st)
}

// applySharesLocked makes the shared state v (sharedShares' JSON) this
// node's: its key, settings and old key ids. x.shareMu is held.
func (x *Archive) applySharesLocked(v []byte) error {
	var ss sharedShares
	if err := json.Unmarshal(v, &ss); err != nil {
		return fmt.Errorf("shared links: the shared state: %w", err)
	}
	key, err := hex.DecodeString(ss.Key)
	if err != nil || len(key) != 32 {
		return fmt.Errorf("shared links: the shared state's key is not 64 hex digits")
	}
	if cur, err := x.shareKey(false); err != nil {
		return err
	} else if !hmac.Equal(cur, key) {
		if err := x.putShareKey(key); err != nil {
			return err
		}
	}
	st, err := x.loadShares()
	if err != nil {
		return err
	}
	st.Config, st.OldKeys = ss.Config, ss.OldKeys
	return x.saveShares(st)
}

// seedShares gives the shared catalog this archive's links and state
// (seedCatalog), where it has none.
func (x *Archive) seedShares(create func(kind catalog.Kind, key string, v any) error) error {
	key, err := x.shareKey(false)
	if err != nil || key == nil {
		return err
	}
	st, err := x.loadShares()
	if err != nil {
		return err
	}
	if err := create(catalog.KindSetting, settingShares, sharedShares{Config: st.Config, OldKeys: st.OldKeys, Key: hex.EncodeToString(key)}); err != nil {
		return err
	}
	for _, l := range st.Links {
		if err := create(kindShare, l.ID, l); err != nil {
			return err
		}
	}
	return nil
}

// loadShares reads the state (empty when there is none).
func (x *Archive) loadShares() (shareState, error) {
	var st shareState
	b, err := os.ReadFile(filepath.Join(x.dir, shareDir, shareStateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("shared links: %w", err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("shared links: %s: %w", shareStateFile, err)
	}
	return st, nil
}

// saveShares writes the state, dropping links that have expired.
func (x *Archive) saveShares(st shareState) error {
	now := x.now()
	st.Links = slices.DeleteFunc(st.Links, func(l ShareLink) bool { return !now.Before(l.Expires) })
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("shared links: %w", err)
	}
	return x.writeShareFile(shareStateFile, b)
}

// writeShareFile replaces <archive>/shares/name durably, mode 0600.
func (x *Archive) writeShareFile(name string, data []byte) error {
	dir := filepath.Join(x.dir, shareDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("shared links: %w", err)
	}
	if err := durable.WriteFile(filepath.Join(dir, name), data, 0o600, true); err != nil {
		return fmt.Errorf("shared links: write %s: %w", name, err)
	}
	return nil
}

// keyID names a key in the links it signs (not secret: a hash prefix).
func keyID(key []byte) string {
	sum := sha256.Sum256(append([]byte("replay share key id\x00"), key...))
	return hex.EncodeToString(sum[:4])
}

// signShare encodes l as a token: its payload and the payload's MAC.
func signShare(key []byte, l ShareLink) string {
	p := make([]byte, 0, sharePayloadLen+sha256.Size)
	p = append(p, shareVersion)
	kid, _ := hex.DecodeString(keyID(key))
	p = append(p, kid...)
	id, _ := hex.DecodeString(l.ID)
	p = append(p, id...)
	p = append(p, l.Recording[:]...)
	for _, v := range []int64{l.From, l.To, l.Created.Unix(), l.Expires.Unix()} {
		p = binary.BigEndian.AppendUint64(p, uint64(v))
	}
	p = append(p, shareMAC(key, p)...)
	return base64.RawURLEncoding.EncodeToString(p)
}

// shareMAC is the HMAC-SHA256 of a payload under key.
func shareMAC(key, payload []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(shareLabel))
	m.Write(payload)
	return m.Sum(nil)
}

// decodeShare reads a payload whose MAC was checked.
func decodeShare(p []byte) ShareLink {
	var l ShareLink
	l.ID = hex.EncodeToString(p[5:13])
	copy(l.Recording[:], p[13:29])
	v := func(i int) int64 { return int64(binary.BigEndian.Uint64(p[29+8*i:])) }
	l.From, l.To = v(0), v(1)
	l.Created, l.Expires = time.Unix(v(2), 0).UTC(), time.Unix(v(3), 0).UTC()
	return l
}
