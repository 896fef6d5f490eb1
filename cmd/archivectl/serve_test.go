package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/replayarchive/replay/formats/formatstest"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
	"github.com/replayarchive/replay/internal/ownerauth"
	"github.com/replayarchive/replay/wire"
)

// TestCommandsThroughServer runs archivectl commands while `serve` holds
// the archive: each is forwarded to the server and behaves as it would
// locally, and the changes land in the audit log under the owner's name.
func TestCommandsThroughServer(t *testing.T) {
	corpus := formatstest.CorpusDir(t, "teehistorian")
	c := newCLI(t)
	ctx, cancel := context.WithCancel(context.Background())
	var serveOut, serveErr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--archive", c.dir, "serve", "--listen", "127.0.0.1:0"}, strings.NewReader(""), &serveOut, &serveErr)
	}()
	defer func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("serve exited %d: %s", code, serveErr.String())
		}
	}()
	ep := filepath.Join(c.dir, ownerauth.EndpointFile)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(ep); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not write %s: %s", ep, serveErr.String())
		}
	}
	if st, err := os.Stat(filepath.Join(c.dir, ownerauth.SecretFile)); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("owner secret: %v, mode %v", err, st.Mode())
	}

	// Without the server these would fail: the server holds the lock.
	tut := filepath.Join(corpus, "Tutorial.teehistorian")
	if out := c.ok("ingest", tut); !strings.Contains(out, "ingested 71995651") {
		t.Fatalf("ingest through the server:\n%s", out)
	}
	if out := c.ok("search", "cmd:timeout"); !strings.Contains(out, "71995651") || strings.Contains(out, "tjfekX6ScC8A3NkN") {
		t.Errorf("search through the server:\n%s", out)
	}
	c.ok("flag", "7199", "griefing", "--note", "via server")
	var shown wire.Recording
	if err := json.Unmarshal([]byte(c.ok("show", "7199", "--json")), &shown); err != nil {
		t.Fatal(err)
	}
	if len(shown.Flags) != 1 || shown.Flags[0].Name != "griefing" || shown.Flags[0].Note != "via server" {
		t.Errorf("show after flag: %+v", shown.Flags)
	}
	// show --json and the API's answer agree field for field.
	var endpoint ownerauth.Endpoint
	b, _ := os.ReadFile(filepath.Join(c.dir, ownerauth.EndpointFile))
	secret, _ := os.ReadFile(filepath.Join(c.dir, ownerauth.SecretFile))
	if err := json.Unmarshal(b, &endpoint); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", endpoint.URL+"/api/v1/recordings/"+shown.ID, nil)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(secret)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	api, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var fromAPI, fromCLI map[string]any
	json.Unmarshal(api, &fromAPI)
	json.Unmarshal([]byte(c.ok("show", "7199", "--json")), &fromCLI)
	if resp.StatusCode != http.StatusOK || !reflect.DeepEqual(fromAPI, fromCLI) {
		t.Errorf("GET /api/v1/recordings/%s (%s) and show --json differ:\n%s\n%v", shown.ID, resp.Status, api, fromCLI)
	}
	// Relative paths are the caller's.
	dir := t.TempDir()
	wd, _ := os.Getwd()
	os.Chdir(dir)
	defer os.Chdir(wd)
	c.ok("export", "7199", "-o", "whole.teehistorian")
	got, err := os.ReadFile(filepath.Join(dir, "whole.teehistorian"))
	want, _ := os.ReadFile(tut)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("export through the server: %v, %d bytes, want %d", err, len(got), len(want))
	}
	if out := c.ok("audit", "7199"); !strings.Contains(out, "flag") || !strings.Contains(out, "local:") || !strings.Contains(out, "via server") {
		t.Errorf("audit through the server:\n%s", out)
	}
	if _, errs, code := c.run("show", "ffffffff"); code != exitNotFound || !strings.Contains(errs, "not found") {
		t.Errorf("show of a missing id through the server: exit %d, %s", code, errs)
	}
}

// TestTakedownsThroughCLI takes a recording down, sees its bytes refused
// with who and why, lifts the takedown and ingests them again.
func TestTakedownsThroughCLI(t *testing.T) {
	corpus := formatstest.CorpusDir(t, "teehistorian")
	c := newCLI(t)
	tut := filepath.Join(corpus, "Tutorial.teehistorian")
	c.ok("ingest", tut)
	c.ok("delete", "7199", "--reason", "DMCA 118", "--now", "--yes")
	out, errs, code := c.run("ingest", tut)
	if code != exitPartial || !strings.Contains(out, "taken down") || !strings.Contains(out, "DMCA 118") {
		t.Fatalf("re-ingest of taken-down bytes: exit %d\n%s%s", code, out, errs)
	}
	if out := c.ok("takedowns"); !strings.Contains(out, "DMCA 118") || !strings.Contains(out, "71995651") {
		t.Errorf("takedowns:\n%s", out)
	}
	c.ok("takedowns", "lift", "7199", "--reason", "appeal granted")
	if out := c.ok("ingest", tut); !strings.Contains(out, "ingested 71995651") {
		t.Errorf("ingest after lift:\n%s", out)
	}
	audit := c.ok("audit")
	for _, want := range []string{"takedown", "lift-takedown", "appeal granted", "ingest"} {
		if !strings.Contains(audit, want) {
			t.Errorf("audit lacks %q:\n%s", want, audit)
		}
	}
}

// TestTextOutputEscapesFileContent: a player name carrying terminal escape
// sequences is printed visibly, never raw.
func TestTextOutputEscapesFileContent(t *testing.T) {
	c := newCLI(t)
	dir := t.TempDir()
	p := filepath.Join(dir, "evil.teehistorian")
	buf := teehistoriangen.Must(t, teehistoriangen.Options{Players: 2, Seed: 3, MapName: "map\x1b]0;pwned\x07\x1b[2J"})
	os.WriteFile(p, buf, 0o600)
	c.ok("ingest", p)
	for _, args := range [][]string{{"ls"}, {"search", "format:teehistorian"}} {
		out := c.ok(args...)
		if strings.Contains(out, "\x1b") || strings.Contains(out, "\x07") {
			t.Errorf("%v prints raw escape sequences: %q", args, out)
		}
	}
	id := strings.Fields(c.ok("ls"))[8] // the first row's id, after the header
	if out := c.ok("show", id[:8]); strings.Contains(out, "\x1b") || !strings.Contains(out, `\x1b]0;pwned`) {
		t.Errorf("show: %q", out)
	}
}

// TestIngestStdin: "ingest -" reads one file from standard input, also
// through a running server.
func TestIngestStdin(t *testing.T) {
	corpus := formatstest.CorpusDir(t, "teehistorian")
	c := newCLI(t)
	b, err := os.ReadFile(filepath.Join(corpus, "Tutorial.teehistorian"))
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"--archive", c.dir, "ingest", "-"}, bytes.NewReader(b), &out, &errb)
	if code != 0 || !strings.Contains(out.String(), "ingested 71995651") {
		t.Fatalf("ingest -: exit %d\n%s%s", code, out.String(), errb.String())
	}
}
