//go:build unix

package archive

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/google/uuid"
	"github.com/replayarchive/replay/formats/formatstest"
)

// Archive files are the owner's alone under the usual umask 022 (they hold
// every secret of every recording); GroupAccess lets the group read. A
// compacted catalog keeps the mode.
func TestFileModes(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	for _, tt := range []struct {
		group     bool
		file, dir os.FileMode
	}{{false, 0o600, 0o700}, {true, 0o640, 0o750}} {
		dir := filepath.Join(t.TempDir(), "archive")
		a, err := Open(dir, Options{NoSync: true, GroupAccess: tt.group})
		if err != nil {
			t.Fatal(err)
		}
		var ids []uuid.UUID
		for i := range 60 {
			ids = append(ids, ingest(t, a, formatstest.LinesFile(string(rune('a'+i%26))+string(rune('a'+i/26)), 40), nil).ID)
		}
		rep, err := a.Prune(context.Background(), &Plan{Remove: candidates(ids[1:])}, PruneOptions{CompactCatalog: true})
		if err != nil {
			t.Fatal(err)
		}
		a.Close()
		want := map[string]os.FileMode{dir: tt.dir | os.ModeDir, filepath.Join(dir, "shards"): tt.dir | os.ModeDir, filepath.Join(dir, "catalog.db"): tt.file}
		shards, _ := filepath.Glob(filepath.Join(dir, "shards", "*.db"))
		for _, s := range shards {
			want[s] = tt.file
		}
		if len(shards) == 0 {
			t.Fatal("no shard")
		}
		for p, mode := range want {
			info, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if info.Mode() != mode {
				t.Errorf("GroupAccess %v: %s is %v, want %v", tt.group, p, info.Mode(), mode)
			}
		}
		t.Logf("GroupAccess %v: catalog compacted %v", tt.group, rep.CatalogCompacted)
	}
}

func candidates(ids []uuid.UUID) []Candidate {
	out := make([]Candidate, len(ids))
	for i, id := range ids {
		out[i] = Candidate{ID: id}
	}
	return out
}
