package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/replayarchive/replay/formats/formatstest"
	"github.com/replayarchive/replay/wire"
)

// cli runs archivectl in-process against archive dir.
type cli struct {
	t   *testing.T
	dir string
}

func (c cli) run(args ...string) (stdout, stderr string, code int) {
	c.t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), append([]string{"--archive", c.dir}, args...), strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), code
}

func (c cli) ok(args ...string) string {
	c.t.Helper()
	out, errs, code := c.run(args...)
	if code != 0 {
		c.t.Fatalf("archivectl %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errs)
	}
	return out
}

func newCLI(t *testing.T) cli { return cli{t: t, dir: filepath.Join(t.TempDir(), "archive")} }

func TestUsageErrors(t *testing.T) {
	c := newCLI(t)
	// Read commands never create an archive.
	if _, errs, code := c.run("ls"); code != exitNoRepo || !strings.Contains(errs, c.dir) || !strings.Contains(errs, "no archive there") {
		t.Errorf("ls on a missing archive: exit %d, %q; want exit %d naming the path", code, errs, exitNoRepo)
	}
	if _, err := os.Stat(c.dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ls created %s: %v", c.dir, err)
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"--archive", "", "ls"}, strings.NewReader(""), &out, &errb); code != exitNoRepo || !strings.Contains(errb.String(), "empty path") {
		t.Errorf(`--archive "": exit %d, %q`, code, errb.String())
	}
	c.ok("init")
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"nosuchcommand"}, 2, "unknown command"},
		{[]string{"show"}, 2, "show takes one recording ID"},
		{[]string{"export", "abc"}, 2, "-o FILE is required"},
		{[]string{"export", "abc", "-o", "x", "--from", "10", "--to", "5"}, 2, "before --from"},
		{[]string{"ingest"}, 2, "no paths given"},
		{[]string{"search", "after:2024-13-99"}, 2, "not a date"},
		{[]string{"show", "--bogus"}, 2, "flag provided but not defined"},
		{[]string{"show", "deadbeef"}, exitNotFound, "not found"},
		{[]string{"ls", "--format", "nosuch"}, 2, "known: teehistorian"},
		{[]string{"prune", "--format", "nosuch", "--older-than", "1d"}, 2, "known: teehistorian"},
		{[]string{"retention", "set", "--format", "nosuch", "--max-age", "1d"}, 2, "known: teehistorian"},
		{[]string{"delete", "abc"}, 2, "--reason is required"},
		{[]string{"token", "create", "--name", "x", "--role", "god"}, 2, "unknown role"},
		{[]string{"hold", "abc"}, 2, "--reason is required"},
	}
	for _, tt := range tests {
		out, errs, code := c.run(tt.args...)
		if code != tt.code || !strings.Contains(out+errs, tt.want) {
			t.Errorf("archivectl %s: exit %d, output %q; want exit %d containing %q", strings.Join(tt.args, " "), code, out+errs, tt.code, tt.want)
		}
	}
	if out, _, code := c.run("version"); code != 0 || !strings.Contains(out, "archivectl") {
		t.Errorf("version: exit %d, %q", code, out)
	}
	if out, _, code := c.run("export", "--help"); code != 0 || !strings.Contains(out, "byte for byte") {
		t.Errorf("export --help: exit %d\n%s", code, out)
	}
	if out, _, code := c.run("help"); code != 0 || !strings.Contains(out, "Retention:") {
		t.Errorf("help: exit %d", code)
	}
}

func TestIngestShowExportCorpus(t *testing.T) {
	corpus := formatstest.CorpusDir(t, "teehistorian")
	c := newCLI(t)
	tmp := t.TempDir()
	bad := filepath.Join(tmp, "bad.teehistorian")
	orig, err := os.ReadFile(filepath.Join(corpus, "265107d7-cdcf-4876-bc00-159bca662955.teehistorian"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(bad, orig[:17], 0o644) // magic and a cut header

	out, errs, code := c.run("ingest", corpus, bad)
	if code != exitPartial {
		t.Fatalf("ingest with one bad file: exit %d, want %d\n%s%s", code, exitPartial, out, errs)
	}
	if n := strings.Count(out, "ingested "); n != 6 {
		t.Errorf("%d ingested lines, want 6\n%s", n, out)
	}
	if !strings.Contains(out, "failed "+bad+": teehistorian: byte offset") {
		t.Errorf("bad file not reported with path and offset:\n%s", out)
	}
	if out, _, _ := c.run("ingest", corpus); strings.Count(out, "already archived ") != 6 {
		t.Errorf("re-ingest:\n%s", out)
	}

	var rec map[string]any
	if err := json.Unmarshal([]byte(c.ok("show", "265107d7", "--json")), &rec); err != nil {
		t.Fatal(err)
	}
	// The API's fields (wire.Recording), chunks as a list.
	for _, k := range []string{"id", "session", "format", "start", "duration_ms", "ticks", "first_tick", "last_tick", "players", "map", "server",
		"flags", "file_flags", "hold", "native_bytes", "stored_bytes", "chunks", "sha256", "event_count", "can_clip", "convert_formats", "extension", "audit"} {
		if _, ok := rec[k]; !ok {
			t.Errorf("show --json lacks %q", k)
		}
	}
	if cs, ok := rec["chunks"].([]any); !ok || len(cs) == 0 {
		t.Errorf("show --json: chunks %v, want a list", rec["chunks"])
	}
	if rec["format"] != "teehistorian" || rec["map"] != "ctf5_spikes" || rec["native_bytes"].(float64) != float64(len(orig)) {
		t.Errorf("show --json: %v", rec)
	}

	whole := filepath.Join(tmp, "whole.teehistorian")
	c.ok("export", "265107d7", "-o", whole)
	if got, _ := os.ReadFile(whole); !bytes.Equal(got, orig) {
		t.Error("export differs from the ingested file")
	}
	stdout := c.ok("export", "265107d7", "-o", "-")
	if stdout != string(orig) {
		t.Error("export to stdout differs")
	}

	// A clip is a valid teehistorian file: it ingests, and its frames at
	// the clipped ticks hold the original's positions.
	clip := filepath.Join(tmp, "clip.teehistorian")
	c.ok("export", "265107d7", "--from", "3500", "--to", "3600", "-o", clip)
	out = c.ok("ingest", "--json", clip)
	var res struct{ Outcome, ID string }
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Outcome != "ingested" {
		t.Fatalf("clip ingest: %s", out)
	}
	positions := func(id string) map[string]bool {
		set := map[string]bool{}
		for _, line := range strings.Split(c.ok("frames", id, "--from", "3550", "--to", "3600"), "\n") {
			var f struct {
				Tick int64
				Data struct{ CID, X, Y *int64 }
			}
			if json.Unmarshal([]byte(line), &f) == nil && f.Data.X != nil {
				set[fmt.Sprint(f.Tick, *f.Data.CID, *f.Data.X, *f.Data.Y)] = true
			}
		}
		return set
	}
	orig3550, clip3550 := positions("265107d7"), positions(res.ID)
	if len(orig3550) == 0 {
		t.Fatal("no positions in the original at ticks 3550..3600")
	}
	for k := range orig3550 {
		if !clip3550[k] {
			t.Errorf("clip lacks position %s of the original", k)
			break
		}
	}
	if out := c.ok("check", "--read-data"); !strings.HasSuffix(out, "ok\n") {
		t.Errorf("check:\n%s", out)
	}
	if out := c.ok("search", "map:ctf5_spikes", "--json"); !strings.Contains(out, `"total": 6`) {
		t.Errorf("search map:ctf5_spikes:\n%.400s", out)
	}
}

// Recordings can be named by a short unique prefix of their id.
func TestShortPrefix(t *testing.T) {
	c := newCLI(t)
	dir := t.TempDir()
	for _, d := range demoRecordings() {
		b, err := d.generate()
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, d.name), b, 0o644)
	}
	c.ok("ingest", dir)
	if _, errs, code := c.run("show", ""); code == 0 {
		t.Errorf("empty id accepted: %s", errs)
	}
	var list []wire.Recording
	json.Unmarshal([]byte(c.ok("ls", "--json")), &list)
	if len(list) != len(demoRecordings()) {
		t.Fatalf("ls --json: %d recordings, want %d", len(list), len(demoRecordings()))
	}
	c.ok("show", list[0].ID[:6])
}
