package query

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/formatstest"
	"github.com/replayarchive/replay/internal/crash"
)

// newTestArchive opens a new archive in a test's directory, closed when
// the test ends; the index goes beside it.
func newTestArchive(t testing.TB) (dir string, a *archive.Archive) {
	t.Helper()
	dir = t.TempDir()
	a, err := archive.Open(dir, archive.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return dir, a
}

func ingestLines(t testing.TB, a *archive.Archive, session string, n int) *archive.Manifest {
	t.Helper()
	p := a.NewPending("lines", session+".lines")
	meta, err := formatstest.Lines{}.Split(context.Background(), bytes.NewReader(formatstest.LinesFile(session, n)), p)
	if err != nil {
		t.Fatal(err)
	}
	p.Finish(meta)
	res, err := a.Commit(context.Background(), []*archive.Pending{p})
	if err != nil {
		t.Fatal(err)
	}
	return res[0].Manifest
}

func hits(t *testing.T, ix *Index, q string) int {
	t.Helper()
	res, err := ix.Search(context.Background(), q, 10)
	if err != nil {
		t.Fatalf("search %q: %v", q, err)
	}
	return res.Total
}

func TestSyncFollowsCatalog(t *testing.T) {
	dir, a := newTestArchive(t)
	ix, err := OpenWith(filepath.Join(dir, "index"), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	m1 := ingestLines(t, a, "alpha", 30)
	ingestLines(t, a, "beta", 30)
	if n, err := Sync(ctx, ix, a); err != nil || n != 2 {
		t.Fatalf("Sync = %d, %v", n, err)
	}
	if got := hits(t, ix, "session:alpha"); got != 1 {
		t.Errorf("session:alpha = %d hits", got)
	}
	if got := hits(t, ix, `cmd:"kick 20"`); got != 2 {
		t.Errorf(`cmd:"kick 20" = %d hits`, got)
	}
	// A moderator's flag is searchable after the next sync.
	if _, err := a.SetFlag(m1.ID, "griefing", ""); err != nil {
		t.Fatal(err)
	}
	Sync(ctx, ix, a)
	if got := hits(t, ix, "flag:griefing"); got != 1 {
		t.Errorf("flag:griefing = %d hits", got)
	}
	// Deleting removes the recording and its events.
	if _, err := a.Delete(ctx, m1.ID); err != nil {
		t.Fatal(err)
	}
	Sync(ctx, ix, a)
	if got := hits(t, ix, "session:alpha"); got != 0 {
		t.Errorf("deleted recording still found (%d hits)", got)
	}
	if got := hits(t, ix, `cmd:"kick 20"`); got != 1 {
		t.Errorf(`after delete cmd:"kick 20" = %d hits, want 1`, got)
	}
	// The applied entries were trimmed; a fresh index is stale and rebuilds.
	fresh, err := OpenWith(filepath.Join(t.TempDir(), "index"), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Sync(ctx, fresh, a); !errors.Is(err, ErrStale) {
		t.Errorf("sync of an empty index against a trimmed log: %v, want ErrStale", err)
	}
	fresh.Close()
	ix.Close()
	ix, n, err := Rebuild(ctx, filepath.Join(dir, "index"), a, Options{NoSync: true})
	if err != nil || n != 1 {
		t.Fatalf("Rebuild = %d, %v", n, err)
	}
	defer ix.Close()
	if got := hits(t, ix, "session:beta"); got != 1 {
		t.Errorf("after rebuild session:beta = %d hits", got)
	}
}

// crashEnv makes the test binary, run as a child, ingest one recording,
// commit the catalog, and kill itself before touching the index.
const crashEnv = "REPLAY_QUERY_CRASH_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashEnv); dir != "" {
		a, err := archive.Open(dir, archive.Options{})
		if err != nil {
			os.Exit(3)
		}
		p := a.NewPending("lines", "crash.lines")
		meta, _ := formatstest.Lines{}.Split(context.Background(), bytes.NewReader(formatstest.LinesFile("crashed", 40)), p)
		p.Finish(meta)
		if _, err := a.Commit(context.Background(), []*archive.Pending{p}); err != nil {
			os.Exit(4)
		}
		// The catalog commit is durable; die before the index hears of it.
		crash.Self()
		select {}
	}
	os.Exit(m.Run())
}

func TestCrashBetweenCatalogAndIndex(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	// An index that is up to date with one recording.
	a, err := archive.Open(dir, archive.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ingestLines(t, a, "before", 10)
	ix, err := Open(filepath.Join(dir, "index"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Sync(ctx, ix, a); err != nil {
		t.Fatal(err)
	}
	ix.Close()
	a.Close()

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashEnv+"="+dir)
	err = cmd.Run()
	if !crash.Killed(err) {
		t.Fatalf("child did not die by SIGKILL: %v", err)
	}

	a, err = archive.Open(dir, archive.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ix, err = Open(filepath.Join(dir, "index"))
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if got := hits(t, ix, "session:crashed"); got != 0 {
		t.Fatalf("index knew of the crashed ingest before catching up (%d hits)", got)
	}
	if n, err := Sync(ctx, ix, a); err != nil || n != 1 {
		t.Fatalf("catch-up Sync = %d, %v; want 1 entry", n, err)
	}
	if got := hits(t, ix, "session:crashed"); got != 1 {
		t.Errorf("after catch-up session:crashed = %d hits, want 1", got)
	}
	if got := hits(t, ix, "session:before"); got != 1 {
		t.Errorf("session:before = %d hits, want 1", got)
	}
}

// An index written with another document layout is refused on open, and
// Rebuild replaces it.
func TestOldLayoutIsRebuilt(t *testing.T) {
	dir, a := newTestArchive(t)
	ingestLines(t, a, "gamma", 20)
	ixDir := filepath.Join(dir, "index")
	ix, err := Open(ixDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.bi.SetInternal(layoutKey, []byte("an older layout")); err != nil {
		t.Fatal(err)
	}
	ix.Close()
	if _, err := Open(ixDir); !errors.Is(err, ErrOldLayout) {
		t.Fatalf("open of an old-layout index: %v, want ErrOldLayout", err)
	}
	ix, n, err := Rebuild(context.Background(), ixDir, a, Options{})
	if err != nil || n != 1 {
		t.Fatalf("Rebuild = %d, %v", n, err)
	}
	defer ix.Close()
	if got := hits(t, ix, "session:gamma"); got != 1 {
		t.Errorf("after rebuild session:gamma = %d hits", got)
	}
}

// TestSyncSmallBatches indexes recordings whose documents span many bounded
// batches (3 documents each) and checks every document and query is there,
// through Sync, a re-put, and a rebuild.
func TestSyncSmallBatches(t *testing.T) {
	dir, a := newTestArchive(t)
	ctx := context.Background()
	m1 := ingestLines(t, a, "alpha", 200)
	m2 := ingestLines(t, a, "beta", 70)
	want := uint64(2 + m1.EventCount + m2.EventCount)
	if m1.EventCount < 10 {
		t.Fatalf("only %d events: the test needs several batches", m1.EventCount)
	}

	open := func(name string) *Index {
		ix, err := OpenWith(filepath.Join(dir, name), Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ix.Close() })
		ix.batchDocs = 3
		return ix
	}
	check := func(ix *Index, queries ...string) {
		t.Helper()
		if n, err := ix.DocCount(); err != nil || n != want {
			t.Errorf("%d documents (%v), want %d", n, err, want)
		}
		for _, q := range queries {
			if got := hits(t, ix, q); got == 0 {
				t.Errorf("%s: no hits", q)
			}
		}
		seq, _ := ix.Seq()
		if last, _ := a.LastChange(); seq != last {
			t.Errorf("seq %d, want %d", seq, last)
		}
	}
	ix := open("small")
	if n, err := Sync(ctx, ix, a); err != nil || n != 2 {
		t.Fatalf("Sync = %d, %v", n, err)
	}
	check(ix, "session:alpha", "session:beta", `cmd:"kick 20"`)
	// Re-putting a recording (a flag) replaces its documents across batches.
	if _, err := a.SetFlag(m1.ID, "griefing", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := Sync(ctx, ix, a); err != nil {
		t.Fatal(err)
	}
	check(ix, "flag:griefing", `cmd:"kick 20"`)

	rb := open("rebuilt")
	if n, err := rebuildInto(ctx, rb, a); err != nil || n != 2 {
		t.Fatalf("rebuild = %d, %v", n, err)
	}
	check(rb, "flag:griefing", "session:beta", `cmd:"kick 20"`)
}

// TestEventTextOnce checks a recording document carries each distinct
// event text once per class, in first-seen order.
func TestEventTextOnce(t *testing.T) {
	var et eventText
	for _, e := range []formats.Event{
		{Kind: formats.EventCommand, Text: "kill"}, {Kind: formats.EventChat, Text: "kill"},
		{Kind: formats.EventCommand, Text: "kill"}, {Kind: formats.EventCommand, Text: "spec"},
		{Kind: "vote", Text: "kick x"}, {Kind: "vote", Text: "kick x"},
	} {
		et.note(&e)
	}
	sep := string(rune(valueSep))
	if string(et.cmd) != "kill"+sep+"spec" || string(et.chat) != "kill" || string(et.etc) != "kick x" {
		t.Errorf("cmd %q chat %q etc %q", et.cmd, et.chat, et.etc)
	}
}

// An update calls Pace with its own context before every paceDocs
// documents and each batch, and ends every turn it takes: the archive's Background
// tells a request's own update (which takes no turns) from an ingest's by
// that context.
func TestSyncPaces(t *testing.T) {
	dir, a := newTestArchive(t)
	ingestLines(t, a, "alpha", 3000)
	type key struct{}
	var taken, ended, foreign int
	pace := func(ctx context.Context) func() {
		if ctx.Value(key{}) == nil {
			foreign++
		}
		taken++
		return func() { ended++ }
	}
	ix, err := OpenWith(filepath.Join(dir, "index"), Options{NoSync: true, Pace: pace})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	ix.blockEvents = 1 // a document an event
	if _, err := Sync(context.WithValue(t.Context(), key{}, true), ix, a); err != nil {
		t.Fatal(err)
	}
	docs, err := ix.DocCount()
	if err != nil {
		t.Fatal(err)
	}
	if taken < int(docs)/paceDocs || ended != taken || foreign != 0 {
		t.Errorf("%d turns taken, %d ended, %d under another context, for %d documents", taken, ended, foreign, docs)
	}
}
