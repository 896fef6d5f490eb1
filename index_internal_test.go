package replay

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/replayarchive/replay/ingest"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
)

// A search does not wait for an index sync under way: after an upload of
// a long recording the sync takes a second, and every moderator's search
// queued behind it (the service-under-load benchmark's slowest requests).
// The sync's lock is held here as a sync holds it; the search must answer
// meanwhile, from the index as it is.
func TestSearchDuringSync(t *testing.T) {
	x, path := newArchiveAndGame(t, 5)
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

// An ingest indexes each commit group behind its commit (syncBehind): a
// recording committed and kicked is searchable once synced returns,
// without the ingest's closing sync, and a failing background sync stops
// the goroutine without blocking kick or synced.
func TestSyncBehind(t *testing.T) {
	x, path := newArchiveAndGame(t, 6)
	if _, err := x.index(t.Context()); err != nil { // open, so a search does not sync
		t.Fatal(err)
	}
	kick, synced := x.syncBehind(t.Context())
	p := &ingest.Pipeline{Archive: x.a, Codecs: x.codecs}
	if err := p.Run(t.Context(), []string{path}, func(r ingest.FileResult) {
		if r.Outcome != ingest.OutcomeIngested {
			t.Errorf("%s: %s", r.Outcome, r.Err)
		}
		kick()
	}); err != nil {
		t.Fatal(err)
	}
	synced()
	res, err := x.Search(t.Context(), "format:teehistorian", 0, 10)
	if err != nil || len(res.Hits) != 1 {
		t.Fatalf("after synced: %v, %v; want the committed recording", res, err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	kick, synced = x.syncBehind(ctx)
	kick()
	kick()
	kick()
	synced()
}

// newArchiveAndGame returns a new archive, closed when the test ends, and
// the path of a five-second generated game beside it (seed picks it).
func newArchiveAndGame(t *testing.T, seed uint64) (*Archive, string) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "game.teehistorian")
	if err := os.WriteFile(path, teehistoriangen.Must(t, teehistoriangen.Options{Players: 2, Seed: seed, Duration: 5e9}), 0o600); err != nil {
		t.Fatal(err)
	}
	x, err := Open(filepath.Join(dir, "archive"), Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	return x, path
}
