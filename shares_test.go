package replay_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
	"github.com/replayarchive/replay/internal/pgtest"
)

// TestShareLinkKey: the signing key is made once, kept 0600 outside the
// catalog, and a link made by one archive is "not valid" in another; a
// link survives reopening the archive; viewers may not share.
func TestShareLinkKey(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a")
	x, err := replay.Open(dir, replay.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	b := teehistoriangen.Must(t, teehistoriangen.Options{Duration: time.Minute, Seed: 3})
	res, _, err := x.IngestStream(context.Background(), "g.teehistorian", bytes.NewReader(b), 0, replay.LocalActor())
	if err != nil || res.Err != "" {
		t.Fatalf("ingest: %v %s", err, res.Err)
	}
	mod := replay.Actor{Name: "mia", Role: replay.RoleModerator}
	if _, err := x.ShareClip(replay.Actor{Name: "v", Role: replay.RoleViewer}, res.ID.String(), 0, 100, time.Hour); !errors.Is(err, replay.ErrShareForbidden) {
		t.Errorf("a viewer's share: %v, want ErrShareForbidden", err)
	}
	l, err := x.ShareClip(mod, res.ID.String(), 0, 100, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, "shares", "key"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the key file: %v %v, want mode 0600", fi, err)
	}
	x.Close()
	if x, err = replay.Open(dir, replay.Options{}); err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	got, err := x.OpenShare(l.Token)
	if err != nil || got.ID != l.ID || got.Recording != res.ID || got.From != l.From || got.To != l.To {
		t.Fatalf("reopened: %+v %v, want %+v", got, err, l)
	}

	other, err := replay.Open(filepath.Join(t.TempDir(), "b"), replay.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.OpenShare(l.Token); !errors.Is(err, replay.ErrShareTampered) {
		t.Errorf("another archive's link: %v, want ErrShareTampered", err)
	}
	if _, err := x.OpenShare(strings.Repeat("A", len(l.Token))); !errors.Is(err, replay.ErrShareTampered) {
		t.Errorf("a made-up link: %v, want ErrShareTampered", err)
	}
}

// TestSharedShareLinks: with nodes on one PostgreSQL catalog, a link made
// on one node opens on the others (also on a node that joins later), a
// revocation on one is in force on the others, as are the settings, and a
// key rotation on one revokes every link on all; two nodes that both make
// links sign them with one key.
func TestSharedShareLinks(t *testing.T) {
	ctx := t.Context()
	pg := pgtest.Start(t).NewDatabase(t)
	open := func(name string) *replay.Archive { return openNode(t, pg, filepath.Join(t.TempDir(), name)) }
	file := teehistoriangen.Must(t, teehistoriangen.Options{Seed: 5, Players: 3, Duration: 20 * time.Second})
	ingest := func(x *replay.Archive) string {
		res, _, err := x.IngestStream(ctx, "g.teehistorian", bytes.NewReader(file), 0, replay.LocalActor())
		if err != nil || res.Err != "" {
			t.Fatalf("ingest: %v %s", err, res.Err)
		}
		return res.ID.String()
	}
	a, b := open("a"), open("b")
	id := ingest(a)
	ingest(b)
	mod := replay.Actor{Name: "mia", Role: replay.RoleModerator}
	admin := replay.Actor{Name: "ada", Role: replay.RoleAdmin}

	la, err := a.ShareClip(mod, id, 0, 100, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Second, "a's link opening on b", func() bool {
		_, err := b.OpenShare(la.Token)
		return err == nil
	})
	lb, err := b.ShareClip(mod, id, 50, 150, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := a.OpenShare(lb.Token); err != nil || got.ID != lb.ID {
		t.Errorf("b's link on a: %+v %v (one key for both nodes)", got, err)
	}
	eventually(t, 2*time.Second, "b's link listed on a", func() bool {
		ls, err := a.Shares()
		return err == nil && len(ls) == 2
	})

	c := open("c")
	ingest(c)
	if _, err := c.OpenShare(la.Token); err != nil {
		t.Errorf("a's link on c, which joined later: %v", err)
	}

	if _, err := b.RevokeShare(mod, la.ID); err != nil {
		t.Fatal(err)
	}
	for name, x := range map[string]*replay.Archive{"a": a, "c": c} {
		eventually(t, 2*time.Second, "the revocation on "+name, func() bool {
			_, err := x.OpenShare(la.Token)
			return errors.Is(err, replay.ErrShareRevoked)
		})
	}
	if err := a.SetShareConfig(admin, replay.ShareConfig{Disabled: true}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Second, "sharing turned off on b", func() bool {
		_, err := b.OpenShare(lb.Token)
		return errors.Is(err, replay.ErrSharingDisabled)
	})
	if err := b.SetShareConfig(admin, replay.ShareConfig{}); err != nil {
		t.Fatal(err)
	}
	if n, err := c.RotateShareKey(admin); err != nil || n != 1 {
		t.Fatalf("rotate on c: %d %v, want 1 live link revoked", n, err)
	}
	for name, x := range map[string]*replay.Archive{"a": a, "b": b} {
		eventually(t, 2*time.Second, "the rotation on "+name, func() bool {
			_, err := x.OpenShare(lb.Token)
			ls, lerr := x.Shares()
			return errors.Is(err, replay.ErrShareRevoked) && lerr == nil && len(ls) == 0
		})
	}
	l2, err := a.ShareClip(mod, id, 0, 10, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Second, "a link under the new key on b", func() bool {
		_, err := b.OpenShare(l2.Token)
		return err == nil
	})
}
