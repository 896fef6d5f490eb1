package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An upload spool left by a killed upload (a directory as IngestStream
// makes it): check names it and fails, check --repair says it removed
// it, and check is ok again.
func TestCheckLeftoverSpool(t *testing.T) {
	c := newCLI(t)
	c.ok("init")
	spool := filepath.Join(c.dir, "tmp", "upload-1234")
	if err := os.MkdirAll(spool, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(spool, "game.teehistorian"), make([]byte, 100<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, code := c.run("check")
	if code != 1 || !strings.Contains(out, "upload spools: 1 left by a killed upload") || strings.Contains(out, "\nok\n") {
		t.Errorf("check with a leftover spool: exit %d\n%s", code, out)
	}
	if out = c.ok("check", "--repair"); !strings.Contains(out, "1 leftover upload spools (1") || !strings.HasSuffix(out, "ok\n") {
		t.Errorf("check --repair:\n%s", out)
	}
	if _, err := os.Stat(spool); !os.IsNotExist(err) {
		t.Errorf("the spool survived check --repair: %v", err)
	}
	if out = c.ok("check"); !strings.HasSuffix(out, "ok\n") {
		t.Errorf("check after the repair:\n%s", out)
	}
}
