package blob_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/replayarchive/replay/archive/blob"
	"github.com/replayarchive/replay/archive/blob/blobtest"
)

func newDir(t *testing.T) blob.Store {
	d, err := blob.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestDirContract(t *testing.T) { blobtest.Run(t, newDir) }

// TestDirLeavesNoTemporaryFiles checks that failed and losing writes clean
// up after themselves, and that the listing never shows temporary files.
func TestDirLeavesNoTemporaryFiles(t *testing.T) {
	d, err := blob.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := d.Put(ctx, "a/b", strings.NewReader("abc"), 3); err != nil {
		t.Fatal(err)
	}
	_ = d.Put(ctx, "a/c", strings.NewReader("abc"), 9)                   // size mismatch
	_, _ = d.PutIfAbsent(ctx, "a/b", strings.NewReader("xyz"), 3)        // loses
	created, err := d.PutIfAbsent(ctx, "a/d", strings.NewReader("x"), 1) // wins
	if err != nil || !created {
		t.Fatalf("PutIfAbsent = %v, %v", created, err)
	}
	// A stray temporary file (a crash mid-write) is not listed.
	if err := os.WriteFile(filepath.Join(d.Root(), "a", ".tmp-crashed"), []byte("partial"), 0o644); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(filepath.Join(d.Root(), "a"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != ".tmp-crashed,b,d" {
		t.Fatalf("directory holds %v, want only the stray file, b and d", names)
	}
	var keys []string
	if err := d.List(ctx, "", func(k string, _ int64) error { keys = append(keys, k); return nil }); err != nil {
		t.Fatal(err)
	}
	if strings.Join(keys, ",") != "a/b,a/d" {
		t.Fatalf("List = %v, want a/b, a/d", keys)
	}
}

// TestDirObjectUnderObject shows the one layout Dir cannot hold: a key
// under another object's key is an error, not a silent overwrite.
func TestDirObjectUnderObject(t *testing.T) {
	d := newDir(t)
	ctx := t.Context()
	if err := d.Put(ctx, "a", strings.NewReader("x"), 1); err != nil {
		t.Fatal(err)
	}
	if err := d.Put(ctx, "a/b", strings.NewReader("y"), 1); err == nil {
		t.Fatal("Put(a/b) over object a succeeded")
	}
}
