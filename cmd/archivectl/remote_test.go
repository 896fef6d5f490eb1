package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/replayarchive/replay/formats/formatstest"
	"github.com/replayarchive/replay/internal/s3test"
)

// TestRemoteTwoNodes runs the tier from the command line against a real
// S3 server: node one uploads and exports from the bucket, node two (a
// read-only archive of the same bucket) catches up, searches and exports
// the same bytes, and loses the recording once node one deletes it.
func TestRemoteTwoNodes(t *testing.T) {
	corpus := formatstest.CorpusDir(t, "teehistorian")
	tut := filepath.Join(corpus, "Tutorial.teehistorian")
	want, err := os.ReadFile(tut)
	if err != nil {
		t.Fatal(err)
	}
	srv := s3test.Start(t)
	url := srv.URL()
	s3 := []string{"--endpoint", srv.Endpoint, "--region", "us-east-1", "--credentials-file", srv.CredentialsFile}
	exportIs := func(c cli, what string) {
		t.Helper()
		exportSame(t, c, want, what)
	}

	one := newCLI(t)
	one.ok("ingest", tut)
	if out := one.ok(append([]string{"remote", "set", url, "--upload-after", "1d"}, s3...)...); !strings.Contains(out, "older than 1d move there") {
		t.Errorf("remote set: %q", out)
	}
	// The catalog names the credentials file, never the secret in it.
	creds, _ := os.ReadFile(srv.CredentialsFile)
	_, secret, _ := strings.Cut(string(creds), "aws_secret_access_key = ")
	secret = strings.TrimSpace(secret)
	catalog, err := os.ReadFile(filepath.Join(one.dir, "catalog.db"))
	if err != nil || secret == "" || bytes.Contains(catalog, []byte(secret)) || !bytes.Contains(catalog, []byte(srv.CredentialsFile)) {
		t.Errorf("the catalog holds the secret, or not the credentials file's name (%v)", err)
	}
	if out := one.ok("remote", "upload"); !strings.Contains(out, "1 recording uploaded") || !strings.Contains(out, "rec/") {
		t.Fatalf("remote upload: %q", out)
	}
	exportIs(one, "node one")
	if out := one.ok("stats"); !strings.Contains(out, "remote: 1 recording,") {
		t.Errorf("stats: %q", out)
	}
	if out := one.ok("check", "--read-data"); !strings.Contains(out, "remote: 1 objects, 1 manifests") || !strings.Contains(out, "ok") {
		t.Errorf("check: %q", out)
	}

	two := newCLI(t)
	two.ok("init")
	two.ok(append([]string{"remote", "set", url, "--read-only"}, s3...)...)
	if out := two.ok("remote", "sync"); !strings.Contains(out, "1 added") {
		t.Fatalf("remote sync: %q", out)
	}
	if out := two.ok("search", "cmd:timeout"); !strings.Contains(out, "71995651") {
		t.Errorf("node two search: %q", out)
	}
	exportIs(two, "node two")
	if _, _, code := two.run("remote", "upload", "--older-than", "1s"); code != exitFailure {
		t.Errorf("a read-only node's upload: exit %d", code)
	}

	one.ok("delete", "7199", "--reason", "DMCA 118", "--now", "--yes")
	if out := two.ok("remote", "sync"); !strings.Contains(out, "1 removed") {
		t.Fatalf("remote sync after the takedown: %q", out)
	}
	if _, _, code := two.run("show", "7199"); code != exitNotFound {
		t.Errorf("node two shows a taken-down recording: exit %d", code)
	}
	if out := two.ok("search", "cmd:timeout"); strings.Contains(out, "71995651") {
		t.Errorf("node two still finds it: %q", out)
	}
	if out := one.ok("check"); !strings.Contains(out, "remote: 0 objects, 0 manifests") {
		t.Errorf("check after the takedown: %q", out)
	}
}

// exportSame exports the Tutorial recording through c and compares it
// with the file.
func exportSame(t *testing.T, c cli, want []byte, what string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out.teehistorian")
	c.ok("export", "7199", "-o", out)
	if got, err := os.ReadFile(out); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("%s: export differs from the file (%d bytes, %v)", what, len(got), err)
	}
}

// TestServeRemote runs a second node as a server: 'serve --remote' on an
// empty archive catches up on what node one uploaded, serves search and
// export of it through the forwarded command line, and drops it after
// node one deletes it.
func TestServeRemote(t *testing.T) {
	corpus := formatstest.CorpusDir(t, "teehistorian")
	tut := filepath.Join(corpus, "Tutorial.teehistorian")
	want, err := os.ReadFile(tut)
	if err != nil {
		t.Fatal(err)
	}
	srv := s3test.Start(t)
	url := srv.URL()
	s3 := []string{"--endpoint", srv.Endpoint, "--region", "us-east-1", "--credentials-file", srv.CredentialsFile}
	one := newCLI(t)
	one.ok("ingest", tut)
	one.ok(append([]string{"remote", "set", url}, s3...)...)
	one.ok("remote", "upload", "--older-than", "1d")

	two := newCLI(t)
	ctx, cancel := context.WithCancel(context.Background())
	var serveOut, serveErr syncBuffer
	done := make(chan int, 1)
	go func() {
		args := append([]string{"--archive", two.dir, "serve", "--listen", "127.0.0.1:0", "--remote", url, "--tier-every", "200ms"}, s3...)
		done <- run(ctx, args, strings.NewReader(""), &serveOut, &serveErr)
	}()
	defer func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("serve exited %d: %s", code, serveErr.String())
			}
		case <-time.After(10 * time.Second):
			t.Error("serve did not stop within 10 s")
		}
	}()
	waitLog := func(want string) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for !strings.Contains(serveErr.String(), want) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if !strings.Contains(serveErr.String(), want) {
			t.Fatalf("the server never logged %q:\n%s", want, serveErr.String())
		}
	}
	waitLog("added=1")
	if out := two.ok("search", "cmd:timeout"); !strings.Contains(out, "71995651") {
		t.Errorf("search through the second node's server: %q", out)
	}
	exportSame(t, two, want, "second node's server")
	one.ok("delete", "7199", "--reason", "DMCA 118", "--now", "--yes")
	waitLog("removed=1")
	if _, _, code := two.run("show", "7199"); code != exitNotFound {
		t.Errorf("the second node's server still shows a deleted recording: exit %d", code)
	}
}

// TestServeRemoteWriteUploadAfter: a writing node's --upload-after is its
// delay (0s: a recording goes to the bucket at the next tier pass), and
// the flag is refused on a node that only reads the bucket.
func TestServeRemoteWriteUploadAfter(t *testing.T) {
	corpus := formatstest.CorpusDir(t, "teehistorian")
	tut := filepath.Join(corpus, "Tutorial.teehistorian")
	srv := s3test.Start(t)
	s3 := []string{"--endpoint", srv.Endpoint, "--region", "us-east-1", "--credentials-file", srv.CredentialsFile}
	c := newCLI(t)
	c.ok("init")
	if _, errs, code := c.run(append([]string{"serve", "--listen", "127.0.0.1:0", "--remote", srv.URL(), "--upload-after", "0s"}, s3...)...); code != exitUsage || !strings.Contains(errs, "--remote-write") {
		t.Errorf("--upload-after on a reading node: exit %d, %s", code, errs)
	}
	serveArchive(t, c, append([]string{"--remote", srv.URL(), "--remote-write", "--upload-after", "0s", "--tier-every", "200ms"}, s3...)...)
	c.ok("ingest", tut)
	var loc string
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		var rec struct{ Location string }
		if err := json.Unmarshal([]byte(c.ok("show", "7199", "--json")), &rec); err != nil {
			t.Fatal(err)
		}
		if loc = rec.Location; loc != "local" {
			break
		}
	}
	if loc != "remote" && loc != "both" {
		t.Errorf("a recording on a node with --upload-after 0s is %q after 15 s, want it in the bucket", loc)
	}
}
