package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
)

// takedownGame writes a generated DDNet game into a new directory, ingests
// it into c and returns its path and id.
func takedownGame(t *testing.T, c cli) (path, id string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "game.teehistorian")
	game := teehistoriangen.Must(t, teehistoriangen.Options{Duration: 30 * time.Second, Players: 4, Seed: 2929})
	if err := os.WriteFile(path, game, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, ingestedID(t, c.ok("ingest", "--json", path))
}

// delete asks on a terminal and refuses elsewhere without --yes; a
// takedown hides the recording, which undo brings back whole.
func TestDeleteGraceAndUndo(t *testing.T) {
	c := newCLI(t)
	path, id := takedownGame(t, c)
	out, errs, code := c.run("delete", id[:8], "--reason", "typo")
	if code != exitUsage || !strings.Contains(errs, "--yes") {
		t.Fatalf("delete without --yes off a terminal: exit %d, want %d naming --yes\n%s%s", code, exitUsage, out, errs)
	}
	c.ok("show", id)

	out = c.ok("delete", id[:8], "--reason", "typo", "--yes")
	if !strings.Contains(out, "takedowns undo") {
		t.Errorf("delete does not say how to undo it:\n%s", out)
	}
	if _, _, code := c.run("show", id); code != exitNotFound {
		t.Errorf("show of a taken-down recording: exit %d, want %d", code, exitNotFound)
	}
	if out := c.ok("ls"); strings.Contains(out, id[:8]) {
		t.Errorf("ls lists a taken-down recording:\n%s", out)
	}
	if out, _, _ := c.run("ingest", path); !strings.Contains(out, "taken down") {
		t.Errorf("re-ingest within the grace period:\n%s", out)
	}
	if out := c.ok("takedowns"); !strings.Contains(out, "pending purge at") {
		t.Errorf("takedowns does not say the purge is pending:\n%s", out)
	}
	c.ok("check", "--read-data")
	c.ok("takedowns", "undo", id[:8], "--reason", "wrong id")
	c.ok("show", id)
	exported := filepath.Join(t.TempDir(), "back.teehistorian")
	c.ok("export", id, "-o", exported)
	if a, b := readFile(t, path), readFile(t, exported); !bytes.Equal(a, b) {
		t.Error("the restored recording exports other bytes")
	}
	if out := c.ok("audit", id); !strings.Contains(out, archive.AuditUndoTakedown) {
		t.Errorf("audit has no undo:\n%s", out)
	}

	c.ok("delete", id, "--reason", "legal order", "--yes")
	c.ok("takedowns", "purge", id[:8])
	if out := c.ok("takedowns"); !strings.Contains(out, "purged") {
		t.Errorf("takedowns after the purge:\n%s", out)
	}
	if _, _, code := c.run("takedowns", "undo", id[:8]); code == 0 {
		t.Error("undo after the purge succeeded")
	}
	c.ok("check", "--read-data")
}

// A clip and a redacted copy of a taken-down DDNet game are refused at
// ingest (its game_uuid is taken down), and neither takes over its id.
func TestTakedownRefusesClipAndRedactedCopy(t *testing.T) {
	c := newCLI(t)
	_, id := takedownGame(t, c)
	dir := t.TempDir()
	clip, redacted := filepath.Join(dir, "clip.teehistorian"), filepath.Join(dir, "redacted.teehistorian")
	c.ok("export", id, "--from", "100", "--to", "600", "-o", clip)
	c.ok("export", id, "--redact", "-o", redacted)
	c.ok("delete", id, "--reason", "doxxing", "--now", "--yes")
	for _, f := range []string{clip, redacted} {
		out, errs, code := c.run("ingest", f)
		if code != exitPartial || !strings.Contains(out, "taken down") {
			t.Errorf("ingest of %s after the takedown: exit %d\n%s%s", filepath.Base(f), code, out, errs)
		}
	}
	if _, _, code := c.run("show", id); code != exitNotFound {
		t.Errorf("the taken-down id is back: show exits %d", code)
	}
	if out := c.ok("ls"); strings.Contains(out, "teehistorian") {
		t.Errorf("ls after the refused ingests:\n%s", out)
	}
}

// confirmTakedown names the recording and takes only y or yes.
func TestConfirmTakedown(t *testing.T) {
	for answer, want := range map[string]bool{"y\n": true, "YES\n": true, "n\n": false, "\n": false, "": false, "yep\n": false} {
		var errb bytes.Buffer
		e := &env{stdin: strings.NewReader(answer), stderr: &errb}
		if got := confirmTakedown(e, "7cee836b", "teehistorian", []string{"nameless tee"}, "2026-05-01 12:00"); got != want {
			t.Errorf("answer %q: %v, want %v", answer, got, want)
		}
		if p := errb.String(); !strings.Contains(p, "take down") || !strings.Contains(p, "teehistorian") || !strings.Contains(p, "nameless tee") || !strings.Contains(p, "[y/N]") {
			t.Errorf("prompt %q does not name the recording", p)
		}
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
