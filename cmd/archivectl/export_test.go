// Tests for export's refusal to overwrite.

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestExportRefusesOverwrite: export, whole or a clip, refuses an output
// file that exists (a usage error naming it and --force, the file left as
// it was, no temporary file behind), and --force overwrites it.
func TestExportRefusesOverwrite(t *testing.T) {
	c := newCLI(t)
	game := generatedGame(t, 20*time.Second)
	c.ok("ingest", game)
	id := strings.Fields(c.ok("ls"))[8] // after the heading's eight words
	orig, _ := os.ReadFile(game)
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"whole", nil},
		{"clip", []string{"--from", "100", "--to", "300"}},
		{"redacted", []string{"--redact"}},
	} {
		path := filepath.Join(dir, tc.name+".teehistorian")
		old := []byte("someone's file")
		os.WriteFile(path, old, 0o644)
		args := append([]string{"export", id, "-o", path}, tc.args...)
		_, errs, code := c.run(args...)
		if code != exitUsage || !strings.Contains(errs, path+" exists; --force overwrites it") {
			t.Errorf("%s onto an existing file: exit %d, %q; want a usage error", tc.name, code, errs)
		}
		if got, _ := os.ReadFile(path); !bytes.Equal(got, old) {
			t.Errorf("%s: the existing file was changed", tc.name)
		}
		c.ok(append(args, "--force")...)
		got, _ := os.ReadFile(path)
		if tc.name == "whole" && !bytes.Equal(got, orig) || bytes.Equal(got, old) || len(got) == 0 {
			t.Errorf("%s --force: the file holds %d bytes", tc.name, len(got))
		}
		// A new file needs no --force.
		fresh := filepath.Join(dir, tc.name+"-new.teehistorian")
		c.ok(append([]string{"export", id, "-o", fresh}, tc.args...)...)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
	// Standard output is never refused.
	if out := c.ok("export", id, "-o", "-"); out != string(orig) {
		t.Error("export -o - differs")
	}
}
