package blob_test

import (
	"errors"
	"io"
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
	if err := d.Put(ctx, "c/d", strings.NewReader("y"), 1); err != nil {
		t.Fatal(err)
	}
	if created, err := d.PutIfAbsent(ctx, "c", strings.NewReader("x"), 1); err == nil {
		t.Fatalf("PutIfAbsent(c) over the directory of c/d = %v, nil; want an error", created)
	}
	if err := d.Put(ctx, "c", strings.NewReader("x"), 1); err == nil {
		t.Fatal("Put(c) over the directory of c/d succeeded")
	}
}

// FuzzDirKeys writes whatever key ValidKey accepts into a Dir: it must
// land inside the root, read back, list under its own first segment and
// delete; a key it refuses must be refused by Put too.
func FuzzDirKeys(f *testing.F) {
	for _, s := range []string{"a", "a/b", "rec/2026-01/x", "../x", "a/./b", ".hidden", "a b/ü", "a..b", "x\\y"} {
		f.Add(s)
	}
	root := f.TempDir()
	d, err := blob.NewDir(root)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, key string) {
		ctx := t.Context()
		err := d.Put(ctx, key, strings.NewReader(key), int64(len(key)))
		if blob.ValidKey(key) != nil {
			if err == nil {
				t.Fatalf("Put(%q) accepted a key ValidKey refuses", key)
			}
			return
		}
		if err != nil {
			return // e.g. a name the file system refuses, or a key under an object
		}
		defer d.Delete(ctx, key)
		p := filepath.Join(root, filepath.FromSlash(key))
		if rel, err := filepath.Rel(root, p); err != nil || strings.HasPrefix(rel, "..") {
			t.Fatalf("key %q landed outside the root at %s", key, p)
		}
		rc, err := d.Get(ctx, key)
		if err != nil {
			t.Fatalf("Get(%q): %v", key, err)
		}
		b := make([]byte, len(key)+1)
		n, _ := io.ReadFull(rc, b)
		rc.Close()
		if string(b[:n]) != key {
			t.Fatalf("Get(%q) = %q", key, b[:n])
		}
		first, _, _ := strings.Cut(key, "/")
		found := false
		if err := d.List(ctx, first, func(k string, _ int64) error { found = found || k == key; return nil }); err != nil || !found {
			t.Fatalf("List(%q) did not find %q: %v", first, key, err)
		}
		if err := d.Delete(ctx, key); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Stat(ctx, key); !errors.Is(err, blob.ErrNotFound) {
			t.Fatalf("Stat after Delete(%q) = %v", key, err)
		}
	})
}
