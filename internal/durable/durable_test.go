package durable

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// WriteFile replaces a file whole and leaves no temporary file; a file in
// a directory that does not exist is an error naming it.
func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	for _, want := range []string{"first", "second, longer", "3"} {
		if err := WriteFile(path, []byte(want), 0o600, true); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != want {
			t.Fatalf("after writing %q: %q, %v", want, got, err)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("the directory holds %d entries, want the file alone", len(ents))
	}
	if err := WriteFile(filepath.Join(dir, "none", "x"), nil, 0o600, false); err == nil {
		t.Error("a file in a missing directory was written")
	}
	if err := SyncDir(filepath.Join(dir, "none")); err == nil && runtime.GOOS != "windows" {
		t.Error("syncing a missing directory succeeded")
	}
}
