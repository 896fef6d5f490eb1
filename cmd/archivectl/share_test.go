package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
	"github.com/replayarchive/replay/wire"
)

// TestShareCLI: share makes a link the archive accepts, ls lists it,
// revoke refuses it, config bounds the lifetime and turns links off,
// rotate revokes the rest, and the recording's history has each step;
// mistakes are usage errors or failures with a reason.
func TestShareCLI(t *testing.T) {
	c := newCLI(t)
	c.ok("init")
	game := filepath.Join(t.TempDir(), "g.teehistorian")
	if err := os.WriteFile(game, teehistoriangen.Must(t, teehistoriangen.Options{Duration: time.Minute, Players: 3, Seed: 33}), 0o644); err != nil {
		t.Fatal(err)
	}
	c.ok("ingest", game)
	id := recordingID(t, c)
	if out := c.ok("share", "--help"); !strings.Contains(out, "/s/TOKEN") || !strings.Contains(out, "--max-lifetime") {
		t.Errorf("share --help:\n%s", out)
	}

	open := func(token string) error {
		t.Helper()
		x, err := replay.Open(c.dir, replay.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer x.Close()
		_, err = x.OpenShare(token)
		return err
	}
	var s wire.Share
	if err := json.Unmarshal([]byte(c.ok("share", id[:8], "--from", "10s", "--to", "20s", "--expires", "24h", "--json")), &s); err != nil {
		t.Fatal(err)
	}
	if s.Recording != id || s.To-s.From != 500 || s.Path != "/s/"+s.Token || s.URL != "" {
		t.Errorf("share --json: %+v", s)
	}
	if err := open(s.Token); err != nil {
		t.Fatalf("the new link: %v", err)
	}
	out, errs, code := c.run("share", id, "--to", "100", "--base", "https://replays.example/")
	if code != 0 || !strings.HasPrefix(out, "https://replays.example/s/") || !strings.Contains(errs, "shown only now") {
		t.Errorf("share --base: exit %d %q %q", code, out, errs)
	}
	if out := c.ok("share", "ls"); !strings.Contains(out, s.ID) || strings.Count(out, "\n") != 3 {
		t.Errorf("share ls:\n%s", out)
	}

	c.ok("share", "revoke", s.ID[:6])
	if err := open(s.Token); !errors.Is(err, replay.ErrShareRevoked) {
		t.Errorf("a revoked link: %v", err)
	}
	if _, errs, code := c.run("share", "revoke", s.ID); code != exitFailure || !strings.Contains(errs, "no such shared link") {
		t.Errorf("revoke twice: exit %d %q", code, errs)
	}

	if out := c.ok("share", "config", "--max-lifetime", "2d", "--disable"); !strings.Contains(out, "disabled, at most 48h0m0s") {
		t.Errorf("share config: %q", out)
	}
	if _, errs, code := c.run("share", id, "--to", "100"); code != exitFailure || !strings.Contains(errs, "turned off") {
		t.Errorf("share while disabled: exit %d %q", code, errs)
	}
	c.ok("share", "config", "--enable")
	if _, errs, code := c.run("share", id, "--to", "100", "--expires", "3d"); code != exitFailure || !strings.Contains(errs, "lifetime") {
		t.Errorf("share past the maximum: exit %d %q", code, errs)
	}
	for _, args := range [][]string{{"share"}, {"share", "config", "--enable", "--disable"}, {"share", id, "--expires", "soon"}, {"share", "config", "--max-lifetime", "1s"}} {
		if _, errs, code := c.run(args...); code != exitUsage || errs == "" {
			t.Errorf("%v: exit %d %q, want a usage error", args, code, errs)
		}
	}

	var kept wire.Share
	if err := json.Unmarshal([]byte(c.ok("share", id, "--to", "100", "--json")), &kept); err != nil {
		t.Fatal(err)
	}
	if out := c.ok("share", "rotate"); !strings.Contains(out, "2 links revoked") {
		t.Errorf("share rotate: %q", out)
	}
	if err := open(kept.Token); !errors.Is(err, replay.ErrShareRevoked) {
		t.Errorf("a link after the rotation: %v", err)
	}
	audit := c.ok("audit", id)
	for _, a := range []string{replay.AuditShareCreate, replay.AuditShareRevoke} {
		if !strings.Contains(audit, a) {
			t.Errorf("audit %s has no %s:\n%s", id, a, audit)
		}
	}
}
