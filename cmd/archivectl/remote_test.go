package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/replayarchive/replay/archive/blob/s3test"
	"github.com/replayarchive/replay/formats/formatstest"
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
		out := filepath.Join(t.TempDir(), "out.teehistorian")
		c.ok("export", "7199", "-o", out)
		if got, err := os.ReadFile(out); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: export differs from the file (%d bytes, %v)", what, len(got), err)
		}
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
	if out := one.ok("remote", "upload"); !strings.Contains(out, "1 recordings uploaded") || !strings.Contains(out, "rec/") {
		t.Fatalf("remote upload: %q", out)
	}
	exportIs(one, "node one")
	if out := one.ok("stats"); !strings.Contains(out, "remote: 1 recordings") {
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

	one.ok("delete", "7199", "--reason", "DMCA 118")
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
