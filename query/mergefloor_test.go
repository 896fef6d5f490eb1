package query

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMergeFloorFor: a new or small index opens with the small floor, one
// whose segment files hold more than smallIndexBytes with bleve's.
func TestMergeFloorFor(t *testing.T) {
	dir := t.TempDir()
	if got := mergeFloorFor(filepath.Join(dir, "none")); got != smallMergeFloor {
		t.Errorf("no index yet: floor %d, want %d", got, smallMergeFloor)
	}
	store := filepath.Join(dir, "ix", "store")
	if err := os.MkdirAll(store, 0o755); err != nil {
		t.Fatal(err)
	}
	seg := func(name string, size int64) {
		f, err := os.Create(filepath.Join(store, name))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := f.Truncate(size); err != nil { // sparse: no disk used
			t.Fatal(err)
		}
	}
	seg("000000000001.zap", smallIndexBytes/2)
	seg("root.bolt", 2*smallIndexBytes) // not a segment
	if got := mergeFloorFor(filepath.Join(dir, "ix")); got != smallMergeFloor {
		t.Errorf("half the bound in segments: floor %d, want %d", got, smallMergeFloor)
	}
	seg("000000000002.zap", smallIndexBytes/2+1)
	if got := mergeFloorFor(filepath.Join(dir, "ix")); got != largeMergeFloor {
		t.Errorf("past the bound: floor %d, want %d", got, largeMergeFloor)
	}
}
