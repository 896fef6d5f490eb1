package archive

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// goneEntry is a directory entry whose file was removed after its parent
// was listed, as the search index's segment merges do.
type goneEntry struct{ dir bool }

func (g goneEntry) Name() string               { return "gone" }
func (g goneEntry) IsDir() bool                { return g.dir }
func (g goneEntry) Type() fs.FileMode          { return 0 }
func (g goneEntry) Info() (fs.FileInfo, error) { return nil, fs.ErrNotExist }

func TestEntryBytesSkipsVanishedFiles(t *testing.T) {
	denied := errors.New("permission denied")
	for _, tc := range []struct {
		name    string
		d       fs.DirEntry
		err     error
		wantErr error
	}{
		{"file removed before its stat", goneEntry{}, nil, nil},
		{"directory removed before its listing", goneEntry{dir: true}, fs.ErrNotExist, nil},
		{"missing root", nil, fs.ErrNotExist, fs.ErrNotExist},
		{"other errors stay", goneEntry{dir: true}, denied, denied},
	} {
		n, err := entryBytes(tc.d, tc.err)
		if n != 0 || !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
			t.Errorf("%s: entryBytes = %d, %v; want 0, %v", tc.name, n, err, tc.wantErr)
		}
	}
}

func TestDiskUsage(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a", "b", "f"), make([]byte, 10000), 0o644); err != nil {
		t.Fatal(err)
	}
	n, err := DiskUsage(dir)
	if err != nil || n < 10000 {
		t.Errorf("DiskUsage = %d, %v; want at least the file's 10000 bytes", n, err)
	}
	if _, err := DiskUsage(filepath.Join(dir, "nosuch")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("DiskUsage of a missing directory: %v, want not-exist", err)
	}
}
