package replay

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
)

// A search does not wait for an index sync under way: after an upload of
// a long recording the sync takes a second, and every moderator's search
// queued behind it (the service-under-load benchmark's slowest requests).
// The sync's lock is held here as a sync holds it; the search must answer
// meanwhile, from the index as it is.
func TestSearchDuringSync(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "game.teehistorian")
	if err := os.WriteFile(path, teehistoriangen.Must(t, teehistoriangen.Options{Players: 2, Seed: 5, Duration: 5e9}), 0o600); err != nil {
		t.Fatal(err)
	}
	x, err := Open(filepath.Join(dir, "archive"), Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if err := x.Ingest(t.Context(), []string{path}, IngestOptions{By: LocalActor()}, nil); err != nil {
		t.Fatal(err)
	}
	x.syncMu.Lock()
	done := make(chan error, 1)
	go func() {
		res, err := x.Search(t.Context(), "format:teehistorian", 0, 10)
		if err == nil && len(res.Hits) != 1 {
			t.Errorf("%d hits during the sync, want 1", len(res.Hits))
		}
		done <- err
	}()
	select {
	case err := <-done:
		x.syncMu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		x.syncMu.Unlock()
		<-done
		t.Fatal("a search waited for the index sync's lock")
	}
	if x.IndexedAt().IsZero() {
		t.Error("IndexedAt is zero after the ingest's sync")
	}
}
