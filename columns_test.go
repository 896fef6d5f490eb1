package replay

import (
	"testing"

	"github.com/replayarchive/replay/formats/all"
)

// TestColumnTransforms checks that Open hands the archive the column
// transform of every codec that has one, and only those.
func TestColumnTransforms(t *testing.T) {
	cols := columnTransforms(all.Codecs())
	if cols["teehistorian"] == nil {
		t.Error("no column transform for teehistorian")
	}
	for name, c := range cols {
		if codec := all.ByName(name); codec == nil || c == nil {
			t.Errorf("transform %q: codec %v, transform %v", name, codec, c)
		}
	}
	if cols["vtx"] != nil {
		t.Error("vtx has a column transform: its chunks are precompressed")
	}
}
