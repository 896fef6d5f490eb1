package archive

import (
	"os"
	"path/filepath"
	"testing"
)

// A spool left as a killed upload leaves it is reported by Check (not
// ok) and removed by Check with Repair; the spool of an upload running in
// this process is neither reported nor removed; the next writable Open
// removes what is left and says so, a read-only one does not.
func TestLeftoverSpools(t *testing.T) {
	dir := t.TempDir()
	a, err := Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { a.Close() }()
	if sp := a.SpoolsRemovedAtOpen(); sp.Count != 0 {
		t.Errorf("a new archive's open removed %+v", sp)
	}
	// Left behind as an upload leaves it: a directory of its own holding
	// the file as far as it was received.
	leave := func() string {
		t.Helper()
		d, err := os.MkdirTemp(filepath.Join(dir, spoolDir), spoolPrefix)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "game.teehistorian"), make([]byte, 10000), 0o600); err != nil {
			t.Fatal(err)
		}
		return d
	}
	busy, done, err := a.NewSpool()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(busy, "upload.butter"), make([]byte, 5000), 0o600); err != nil {
		t.Fatal(err)
	}
	left := leave()
	// Not spools: other names in tmp are left alone.
	other := filepath.Join(dir, spoolDir, "keep")
	if err := os.WriteFile(other, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}

	rep, err := a.Check(t.Context(), CheckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK() || rep.Spools.Count != 1 || rep.Spools.Bytes < 10000 {
		t.Errorf("check: ok %v, spools %+v; want not ok, one spool of 10000 bytes or more", rep.OK(), rep.Spools)
	}
	if rep, err = a.Check(t.Context(), CheckOptions{Repair: true}); err != nil || rep.Spools.Count != 1 {
		t.Fatalf("repair: %+v %v", rep, err)
	}
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Errorf("the leftover spool survived the repair: %v", err)
	}
	if _, err := os.Stat(filepath.Join(busy, "upload.butter")); err != nil {
		t.Errorf("the repair removed a running upload's spool: %v", err)
	}
	if rep, err = a.Check(t.Context(), CheckOptions{}); err != nil || !rep.OK() {
		t.Errorf("check after the repair: %+v %v", rep, err)
	}
	if err := done(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(busy); !os.IsNotExist(err) {
		t.Errorf("done left the spool: %v", err)
	}

	// Open: a read-only one leaves the spool; a writable one removes it.
	left = leave()
	a.Close()
	if a, err = Open(dir, Options{ReadOnly: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(left); err != nil || a.SpoolsRemovedAtOpen().Count != 0 {
		t.Errorf("a read-only open removed the spool: %v", err)
	}
	if _, _, err := a.NewSpool(); err == nil {
		t.Error("a read-only archive made a spool")
	}
	a.Close()
	if a, err = Open(dir, Options{NoSync: true}); err != nil {
		t.Fatal(err)
	}
	if sp := a.SpoolsRemovedAtOpen(); sp.Count != 1 || sp.Bytes < 10000 {
		t.Errorf("the writable open removed %+v, want the one spool", sp)
	}
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Errorf("the spool survived a writable open: %v", err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("a file that is no spool was removed: %v", err)
	}
	if rep, err = a.Check(t.Context(), CheckOptions{}); err != nil || !rep.OK() {
		t.Errorf("check after the open: %+v %v", rep, err)
	}
}
