package archive

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/replayarchive/replay/archive/blob"
	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/internal/s3test"
)

// bucketNodes opens a writing and a reading store on srv's bucket.
func bucketNodes(t *testing.T, srv *s3test.Server) (w, r blob.Store) {
	t.Helper()
	url := srv.URL() // a fresh prefix at each call
	w, err := blob.NewS3(t.Context(), url, srv.Options())
	if err != nil {
		t.Fatal(err)
	}
	ro := srv.Options()
	ro.ReadOnly = true
	if r, err = blob.NewS3(t.Context(), url, ro); err != nil {
		t.Fatal(err)
	}
	return w, r
}

// ingestJan1 ingests native as ingestOld's first recording.
func ingestJan1(t *testing.T, a *Archive, native []byte) Result {
	t.Helper()
	return ingest(t, a, native, func(m *formats.Metadata) {
		m.Start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	})
}

// listed reports whether a lists recording id.
func listed(t *testing.T, a *Archive, id uuid.UUID) bool {
	t.Helper()
	var ids []uuid.UUID
	if err := a.List(t.Context(), func(m *Manifest) error { ids = append(ids, m.ID); return nil }); err != nil {
		t.Fatal(err)
	}
	return slices.Contains(ids, id)
}

// TestTakedownTravels: node A takes down an uploaded recording; reading
// node B, after one sync, answers its id as taken down (410) and no longer
// lists it; node C, which ingested the same file before and never saw the
// takedown, is refused when it uploads it, and a fresh node D is refused
// when it ingests it after a sync. A's lift deletes the bucket's takedown.
func TestTakedownTravels(t *testing.T) {
	srv := s3test.Start(t)
	w, r := bucketNodes(t, srv)
	a := openTest(t, "", Options{Remote: w, Now: tierClock})
	b := openTest(t, "", Options{Remote: r, Now: tierClock})
	c := openTest(t, "", Options{Remote: w, Now: tierClock})
	d := openTest(t, "", Options{Remote: w, Now: tierClock})
	ids, files := ingestOld(t, a, "s", 1)
	id := ids[0]
	if up, err := a.Upload(t.Context(), UploadOptions{AtOnce: true}); err != nil || up.Recordings != 1 {
		t.Fatalf("A's upload: %+v, %v", up, err)
	}
	if rep, err := b.CatchUp(t.Context()); err != nil || rep.Added != 1 {
		t.Fatalf("B catch up: %+v, %v", rep, err)
	}
	onC := ingestJan1(t, c, files[0])
	if onC.Outcome != Ingested {
		t.Fatalf("C's ingest before the takedown: %v", onC.Outcome)
	}

	if _, err := a.TakeDown(t.Context(), id, DeleteOptions{By: "mod", Reason: "abuse"}); err != nil {
		t.Fatal(err)
	}
	if keys := bucketKeys(t, w, "takedowns/"); len(keys) != 1 {
		t.Fatalf("bucket takedowns: %v, want one", keys)
	}

	rep, err := b.CatchUp(t.Context())
	if err != nil || rep.Removed != 1 || rep.Takedowns != 1 {
		t.Fatalf("B catch up after the takedown: %+v, %v", rep, err)
	}
	var td *TakenDownError
	if _, err := b.Resolve(id.String()); !errors.As(err, &td) || td.Takedown.By != "mod" {
		t.Errorf("B's resolve of the taken-down id: %v, want a *TakenDownError by mod (410)", err)
	}
	if _, err := b.Open(id); !errors.Is(err, ErrNotFound) {
		t.Errorf("B's open of the taken-down id: %v", err)
	}
	if listed(t, b, id) {
		t.Error("B still lists the taken-down recording")
	}

	up, err := c.Upload(t.Context(), UploadOptions{AtOnce: true})
	if err != nil || up.Recordings != 0 || len(up.TakenDown) != 1 {
		t.Fatalf("C's upload of the taken-down file: %+v, %v; want it refused", up, err)
	}
	if keys := bucketKeys(t, w, "manifests/"); len(keys) != 0 {
		t.Errorf("bucket manifests after C's upload: %v, want none", keys)
	}
	if _, err := c.Resolve(onC.ID.String()); !errors.As(err, &td) {
		t.Errorf("C's resolve of its copy: %v, want a *TakenDownError", err)
	}

	if _, err := d.CatchUp(t.Context()); err != nil {
		t.Fatal(err)
	}
	if res := ingestJan1(t, d, files[0]); res.Outcome != TakenDown || !errors.As(res.Err, &td) {
		t.Errorf("D's ingest after a sync: %v, %v; want it taken down", res.Outcome, res.Err)
	}

	if _, err := a.LiftTakedown(t.Context(), td.Takedown.SHA256); err != nil {
		t.Fatal(err)
	}
	if keys := bucketKeys(t, w, "takedowns/"); len(keys) != 0 {
		t.Errorf("bucket takedowns after A's lift: %v, want none", keys)
	}
	if ts, _ := b.Takedowns(); len(ts) != 1 {
		t.Errorf("B's takedowns after A's lift: %d, want 1 (lifted on each node)", len(ts))
	}
}

// TestTakedownOnReadingNode: a node that only reads the bucket refuses a
// takedown, saying where to make it, and changes nothing.
func TestTakedownOnReadingNode(t *testing.T) {
	srv := s3test.Start(t)
	w, r := bucketNodes(t, srv)
	a := openTest(t, "", Options{Remote: w, Now: tierClock})
	b := openTest(t, "", Options{Remote: r, Now: tierClock})
	ids, _ := ingestOld(t, a, "s", 1)
	if _, err := a.Upload(t.Context(), UploadOptions{AtOnce: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.CatchUp(t.Context()); err != nil {
		t.Fatal(err)
	}
	_, err := b.TakeDown(t.Context(), ids[0], DeleteOptions{By: "mod", Reason: "abuse"})
	if !errors.Is(err, ErrReadingNode) || !strings.Contains(err.Error(), "take it down on a writing node") {
		t.Fatalf("takedown on a reading node: %v, want ErrReadingNode", err)
	}
	if !listed(t, b, ids[0]) || len(bucketKeys(t, w, "manifests/")) != 1 || len(bucketKeys(t, w, "takedowns/")) != 0 {
		t.Error("a refused takedown changed the catalog or the bucket")
	}
	if ts, _ := b.Takedowns(); len(ts) != 0 {
		t.Errorf("reading node's takedowns: %v, want none", ts)
	}
}
