package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/replayarchive/replay/formats/formatstest"
	"github.com/replayarchive/replay/internal/s3test"
	"github.com/replayarchive/replay/wire"
)

// TestUploadDelayCLI runs the upload timing from the command line
// on a recording whose start lies in the future (its header says 2099):
// remote set without --upload-after stores no value and says the default
// (5m) applies, so a fresh recording waits; remote upload --older-than 0s
// and a stored --upload-after 0s upload at once; ls and show (text and
// --json) say where it lives; remote show notes a long stored delay.
func TestUploadDelayCLI(t *testing.T) {
	tut := filepath.Join(formatstest.CorpusDir(t, "teehistorian"), "Tutorial.teehistorian")
	b, err := os.ReadFile(tut)
	if err != nil {
		t.Fatal(err)
	}
	future := bytes.Replace(b, []byte(`"start_time":"2026-06-13T21:55:11+0200"`), []byte(`"start_time":"2099-06-13T21:55:11+0200"`), 1)
	if bytes.Equal(future, b) {
		t.Fatal("Tutorial.teehistorian's start_time is not the one this test replaces")
	}
	path := filepath.Join(t.TempDir(), "future.teehistorian")
	if err := os.WriteFile(path, future, 0o644); err != nil {
		t.Fatal(err)
	}
	srv := s3test.Start(t)
	s3 := []string{"--endpoint", srv.Endpoint, "--region", "us-east-1", "--credentials-file", srv.CredentialsFile}
	location := func(c cli) (ls, show string) {
		t.Helper()
		var list []wire.Recording
		if err := json.Unmarshal([]byte(c.ok("ls", "--json")), &list); err != nil || len(list) != 1 {
			t.Fatalf("ls --json: %d recordings, %v", len(list), err)
		}
		var one wire.Recording
		if err := json.Unmarshal([]byte(c.ok("show", "7199", "--json")), &one); err != nil {
			t.Fatal(err)
		}
		if list[0].Location != one.Location {
			t.Errorf("ls --json says %q, show --json %q", list[0].Location, one.Location)
		}
		return c.ok("ls"), one.Location
	}

	c := newCLI(t)
	c.ok("ingest", path)
	if out := c.ok(append([]string{"remote", "set", srv.URL()}, s3...)...); !strings.Contains(out, "older than 5m0s (the default) move there") {
		t.Errorf("remote set without --upload-after: %q", out)
	}
	if out := c.ok("remote", "show", "--json"); strings.Contains(out, "upload_after") {
		t.Errorf("remote set stored an upload age it was not given: %s", out)
	}
	if ls, where := location(c); where != "local" || !strings.Contains(ls, " local") {
		t.Errorf("before the upload: show --json says %q, ls:\n%s", where, ls)
	}
	if out := c.ok("show", "7199"); !strings.Contains(out, "where:     local (on this disk alone") {
		t.Errorf("show before the upload:\n%s", out)
	}
	if out := c.ok("remote", "upload"); !strings.Contains(out, "0 recordings uploaded") {
		t.Errorf("remote upload right after ingest (default 5m): %q", out)
	}
	if out := c.ok("remote", "upload", "--older-than", "0s"); !strings.Contains(out, "1 recording uploaded") {
		t.Fatalf("remote upload --older-than 0s: %q", out)
	}
	if ls, where := location(c); where != "remote" || !strings.Contains(ls, " remote") {
		t.Errorf("after the upload: show --json says %q, ls:\n%s", where, ls)
	}
	if out := c.ok("show", "7199"); !strings.Contains(out, "where:     remote (rec/") {
		t.Errorf("show after the upload:\n%s", out)
	}
	exportSame(t, c, future, "the uploaded future-start recording")

	// A stored --upload-after 0s: the plain upload takes it at once.
	d := newCLI(t)
	d.ok("ingest", path)
	if out := d.ok(append([]string{"remote", "set", srv.URL(), "--upload-after", "0s"}, s3...)...); !strings.Contains(out, "as soon as sealed") {
		t.Errorf("remote set --upload-after 0s: %q", out)
	}
	if out := d.ok("remote", "upload"); !strings.Contains(out, "1 recording uploaded") {
		t.Errorf("remote upload with --upload-after 0s stored: %q", out)
	}

	// An upload age of days (the old default, kept when stored) is named.
	e := newCLI(t)
	e.ok("init")
	e.ok(append([]string{"remote", "set", srv.URL(), "--upload-after", "30d"}, s3...)...)
	if out := e.ok("remote", "show"); !strings.Contains(out, "note: a sealed recording stays on this disk alone for up to 30d") {
		t.Errorf("remote show with a stored 30d: %q", out)
	}
}
