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
