package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
	"github.com/replayarchive/replay/wire"
)

// TestFlagAtAndCasesCLI: flag --from --to puts the flag on a moment (show
// --json lists its range), one end alone or a backwards range is a usage
// error; the flag opens a case; cases open, note, assign, resolve, ls and
// show work by id prefix, with --json the API's shapes; mistakes exit 2
// or 1 with a reason.
func TestFlagAtAndCasesCLI(t *testing.T) {
	c := newCLI(t)
	c.ok("init")
	game := filepath.Join(t.TempDir(), "g.teehistorian")
	if err := os.WriteFile(game, teehistoriangen.Must(t, teehistoriangen.Options{Duration: time.Minute, Players: 3, Seed: 21}), 0o644); err != nil {
		t.Fatal(err)
	}
	c.ok("ingest", game)
	id := recordingID(t, c)

	out := c.ok("flag", id[:8], "griefing", "--note", "spawn", "--from", "0:42", "--to", "0:50")
	if !strings.Contains(out, "griefing at ticks") {
		t.Errorf("flag: %s", out)
	}
	var rec wire.Recording
	if err := json.Unmarshal([]byte(c.ok("show", id, "--json")), &rec); err != nil || len(rec.Flags) != 1 || rec.Flags[0].Range == nil ||
		rec.Flags[0].Range.To-rec.Flags[0].Range.From != 400 {
		t.Fatalf("show --json: %v %+v", err, rec.Flags)
	}
	for _, args := range [][]string{{"--from", "0:42"}, {"--to", "0:50"}, {"--from", "0:50", "--to", "0:42"}, {"--from", "5m", "--to", "6m"}} {
		if _, errs, code := c.run(append([]string{"flag", id, "other"}, args...)...); code != exitUsage || errs == "" {
			t.Errorf("flag %v: exit %d %q, want a usage error", args, code, errs)
		}
	}

	var list wire.Cases
	if err := json.Unmarshal([]byte(c.ok("cases", "ls", "--json")), &list); err != nil || len(list.Cases) != 1 || list.Cases[0].Flag != "griefing" {
		t.Fatalf("cases ls --json: %v %+v", err, list)
	}
	if out := c.ok("cases"); !strings.Contains(out, list.Cases[0].ID[:8]) || !strings.Contains(out, "Flagged griefing") {
		t.Errorf("cases:\n%s", out)
	}
	var cs wire.Case
	if err := json.Unmarshal([]byte(c.ok("cases", "open", id[:8], "--note", "ticket 4711", "--json")), &cs); err != nil || cs.Status != "open" || len(cs.Notes) != 1 {
		t.Fatalf("cases open: %v %+v", err, cs)
	}
	short := cs.ID[:8]
	c.ok("cases", "note", short, "same player\nin three games")
	c.ok("token", "create", "--name", "kit", "--role", "moderator")
	c.ok("cases", "assign", short, "kit")
	if _, errs, code := c.run("cases", "assign", short, "nobody-known"); code == 0 || !strings.Contains(errs, "moderator") {
		t.Errorf("assign to an unknown name: exit %d %q", code, errs)
	}
	if out := c.ok("cases", "resolve", short); !strings.Contains(out, "resolved") {
		t.Errorf("resolve: %s", out)
	}
	show := c.ok("cases", "show", short)
	for _, want := range []string{"resolved", "kit", "ticket 4711", "    in three games", "by hand"} {
		if !strings.Contains(show, want) {
			t.Errorf("cases show lacks %q:\n%s", want, show)
		}
	}
	if err := json.Unmarshal([]byte(c.ok("cases", "ls", "--all", "--json")), &list); err != nil || len(list.Cases) != 2 {
		t.Errorf("cases ls --all: %v %d", err, len(list.Cases))
	}
	if err := json.Unmarshal([]byte(c.ok("cases", "ls", "--assignee", "kit", "--status", "resolved", "--json")), &list); err != nil || len(list.Cases) != 1 {
		t.Errorf("kit's resolved cases: %v %d", err, len(list.Cases))
	}
	for _, args := range [][]string{{"cases", "frobnicate"}, {"cases", "show"}, {"cases", "note", short}, {"cases", "show", short, "--note", "x"}, {"cases", "ls", "--all", "--status", "open"}} {
		if _, _, code := c.run(args...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
	}
	if _, errs, code := c.run("cases", "show", "0000000000"); code == 0 || !strings.Contains(errs, "no such case") {
		t.Errorf("show an unknown case: exit %d %q", code, errs)
	}
	if out := c.ok("audit"); !strings.Contains(out, "case-open") || !strings.Contains(out, "case-status") {
		t.Errorf("audit lacks the cases:\n%s", out)
	}
	if help := c.ok("cases", "--help"); !strings.Contains(help, "cases assign ID WHO") {
		t.Errorf("cases --help:\n%s", help)
	}
}
