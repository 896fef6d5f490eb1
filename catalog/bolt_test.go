package catalog_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/replayarchive/replay/catalog"
	"github.com/replayarchive/replay/catalog/catalogtest"
)

// openBolt opens a catalog in a new file of t's.
func openBolt(t *testing.T) catalog.Catalog {
	t.Helper()
	c, err := catalog.Open(t.Context(), filepath.Join(t.TempDir(), "catalog.db"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestBoltContract(t *testing.T) {
	t.Parallel()
	catalogtest.Run(t, openBolt)
}

// TestBoltFile: the file is made 0600, keeps its entries and feed across a
// reopen, and a second open of it is refused with a clear error.
func TestBoltFile(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "catalog.db")
	c, err := catalog.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || (runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600) {
		t.Errorf("file: %v %v, want mode 0600", fi.Mode(), err)
	}
	e, err := c.Put(ctx, catalog.KindSetting, "policy", []byte(`{}`), "n1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := catalog.Open(ctx, path); err == nil || !strings.Contains(err.Error(), "another process") {
		t.Errorf("second open: %v, want a refusal naming another process", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c, err = catalog.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got, ok, err := c.Get(ctx, catalog.KindSetting, "policy")
	if !ok || err != nil || got.Seq != e.Seq || string(got.Value) != "{}" {
		t.Errorf("get after reopen: %+v %v %v", got, ok, err)
	}
	e2, err := c.Put(ctx, catalog.KindSetting, "remote", nil, "n1")
	if err != nil || e2.Seq <= e.Seq {
		t.Errorf("put after reopen: seq %d after %d, %v", e2.Seq, e.Seq, err)
	}
}

// TestBoltCorrupt: a damaged stored value gives an error naming the
// damage, not a panic.
func TestBoltCorrupt(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "catalog.db")
	c, err := catalog.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Put(ctx, catalog.KindFlag, "r/x", []byte("v"), "n1"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Lease(ctx, "repair", "n1", 60e9); err != nil {
		t.Fatal(err)
	}
	c.Close()

	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		damage := func(bucket string) {
			b := tx.Bucket([]byte(bucket))
			k, v := b.Cursor().First()
			if err := b.Put(append([]byte{}, k...), append([]byte{}, v[:len(v)/2]...)); err != nil {
				t.Fatal(err)
			}
		}
		damage("entries")
		damage("feed")
		damage("leases")
		return nil
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}

	c, err = catalog.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	check := func(what string, err error) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), "corrupt") {
			t.Errorf("%s of a damaged value: %v, want an error saying corrupt", what, err)
		}
	}
	_, _, err = c.Get(ctx, catalog.KindFlag, "r/x")
	check("get", err)
	_, err = c.List(ctx, catalog.KindFlag, "")
	check("list", err)
	_, err = c.Since(ctx, 0, 10)
	check("since", err)
	_, err = c.Create(ctx, catalog.KindFlag, "r/x", nil, "n1")
	check("create", err)
	_, err = c.Lease(ctx, "repair", "n2", 60e9)
	check("lease", err)
}

// TestOpenRefuses: Open names what it cannot open.
func TestOpenRefuses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct{ url, want string }{
		{"", "empty"},
		{"mysql://u:hunter2@host/db", "unsupported scheme"},
		{filepath.Join(t.TempDir(), "no", "such", "dir", "catalog.db"), "no such file"},
	} {
		c, err := catalog.Open(ctx, tc.url)
		if err == nil {
			c.Close()
			t.Errorf("open %q: no error", tc.url)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("open %q: %v, want %q and no password", tc.url, err, tc.want)
		}
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := catalog.Open(canceled, filepath.Join(t.TempDir(), "c.db")); !errors.Is(err, context.Canceled) {
		t.Errorf("open with a canceled context: %v", err)
	}
}
