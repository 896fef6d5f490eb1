package archive

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/replayarchive/replay/archive/blob"
	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/formatstest"
	bolt "go.etcd.io/bbolt"
)

// wantTakenDown fails unless err is a *TakenDownError of recording id.
func wantTakenDown(t *testing.T, what string, err error, id uuid.UUID) {
	t.Helper()
	var td *TakenDownError
	if !errors.As(err, &td) || td.Takedown.ID != id {
		t.Errorf("%s: %v, want a *TakenDownError of %s", what, err, id)
	}
}

// wantClean fails unless check --read-data finds nothing amiss and counts
// n recordings.
func wantClean(t *testing.T, a *Archive, n int) {
	t.Helper()
	rep, err := a.Check(context.Background(), CheckOptions{ReadData: true})
	if err != nil || !rep.OK() || rep.Recordings != n {
		t.Fatalf("check: %+v, %v; want clean with %d recordings", rep, err, n)
	}
}

// A takedown with a grace period hides the recording from every read at
// once and refuses its bytes, but keeps them: undo restores it whole and
// searchable; check sees nothing amiss meanwhile.
func TestTakedownGraceUndo(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	a := openTest(t, "", Options{Now: func() time.Time { return now }})
	own := uuid.MustParse("29292929-0000-4000-8000-000000000001")
	native := formatstest.LinesFile("game", 60)
	res := ingest(t, a, native, func(m *formats.Metadata) { m.ID = own })
	other := ingest(t, a, formatstest.LinesFile("other", 30), nil)

	if _, err := a.TakeDown(t.Context(), own, DeleteOptions{By: "mod", Reason: "typo?", Grace: DefaultGrace}); err != nil {
		t.Fatal(err)
	}
	_, err := a.Resolve(own.String())
	wantTakenDown(t, "resolve while pending", err, own)
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("resolve while pending: %v, want it to wrap ErrNotFound too", err)
	}
	if _, err := a.Open(own); !errors.Is(err, ErrNotFound) {
		t.Errorf("open while pending: %v, want ErrNotFound", err)
	}
	if ids, _ := a.Session("game"); len(ids) != 0 {
		t.Errorf("session lookup while pending: %v, want none", ids)
	}
	var listed []uuid.UUID
	a.List(t.Context(), func(m *Manifest) error { listed = append(listed, m.ID); return nil })
	if len(listed) != 1 || listed[0] != other.ID {
		t.Errorf("list while pending: %v, want only %s", listed, other.ID)
	}
	if ch, _ := a.ChangesSince(0, 0); ch[len(ch)-1].Op != ChangeDelete || ch[len(ch)-1].ID != own {
		t.Errorf("change log while pending ends %+v, want a delete of %s for the index", ch[len(ch)-1], own)
	}
	again := ingest(t, a, native, func(m *formats.Metadata) { m.ID = own })
	if again.Outcome != TakenDown {
		t.Errorf("re-ingest while pending: %v, want taken down", again.Outcome)
	}
	ts, err := a.Takedowns()
	if err != nil || len(ts) != 1 || ts[0].State != TakedownPending || !ts[0].PurgeAt.Equal(now.Add(DefaultGrace)) {
		t.Fatalf("takedowns: %+v, %v; want one pending until %s", ts, err, now.Add(DefaultGrace))
	}
	if _, err := a.LiftTakedown(t.Context(), ts[0].SHA256); !errors.Is(err, ErrTakedownPending) {
		t.Errorf("lift while pending: %v, want ErrTakedownPending", err)
	}
	wantClean(t, a, 1)
	if _, err := a.Check(t.Context(), CheckOptions{Repair: true}); err != nil {
		t.Fatal(err)
	}

	m, undone, err := a.UndoTakedown(t.Context(), own)
	if err != nil || m.ID != own || undone.Reason != "typo?" {
		t.Fatalf("undo: %v, %+v, %v", m, undone, err)
	}
	if got := export(t, a, own); !bytes.Equal(got, native) {
		t.Error("export after undo differs from the ingested file")
	}
	if ids, _ := a.Session("game"); len(ids) != 1 || ids[0] != own {
		t.Errorf("session lookup after undo: %v", ids)
	}
	if ch, _ := a.ChangesSince(0, 0); ch[len(ch)-1].Op != ChangePut || ch[len(ch)-1].ID != own {
		t.Errorf("change log after undo ends %+v, want a put of %s", ch[len(ch)-1], own)
	}
	if ts, _ := a.Takedowns(); len(ts) != 0 {
		t.Errorf("takedowns after undo: %+v", ts)
	}
	if dup := ingest(t, a, native, nil); dup.Outcome != Duplicate || dup.ID != res.ID {
		t.Errorf("re-ingest after undo: %v %s, want a duplicate of %s", dup.Outcome, dup.ID, res.ID)
	}
	wantClean(t, a, 2)
	if _, _, err := a.UndoTakedown(t.Context(), own); !errors.Is(err, ErrNoTakedown) {
		t.Errorf("second undo: %v, want ErrNoTakedown", err)
	}
}

// The janitor's purge deletes only takedowns past their grace period;
// then undo is refused, the chunks are gone and the takedown is kept.
func TestTakedownPurgeAfterGrace(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	dir := t.TempDir()
	a := openTest(t, dir, Options{Now: func() time.Time { return now }})
	gone := ingest(t, a, formatstest.LinesFile("gone", 80), nil)
	later := ingest(t, a, formatstest.LinesFile("later", 80), nil)
	if _, err := a.TakeDown(t.Context(), gone.ID, DeleteOptions{Reason: "a", Grace: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.TakeDown(t.Context(), later.ID, DeleteOptions{Reason: "b", Grace: 3 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	if p, err := a.PurgeTakedowns(t.Context()); err != nil || len(p) != 0 {
		t.Fatalf("purge within grace: %+v, %v; want nothing", p, err)
	}
	now = now.Add(2 * time.Hour)
	p, err := a.PurgeTakedowns(t.Context())
	if err != nil || len(p) != 1 || p[0].ID != gone.ID || p[0].State != TakedownPurged {
		t.Fatalf("purge after an hour's grace: %+v, %v; want %s purged", p, err, gone.ID)
	}
	if _, _, err := a.UndoTakedown(t.Context(), gone.ID); !errors.Is(err, ErrTakedownPurged) {
		t.Errorf("undo after the purge: %v, want ErrTakedownPurged", err)
	}
	wantClean(t, a, 0)
	var chunks int
	if err := a.viewShard(gone.Manifest.Shard, func(tx *bolt.Tx) error {
		chunks = tx.Bucket(bucketChunks).Stats().KeyN
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := len(later.Manifest.Chunks); chunks != want {
		t.Errorf("shard holds %d chunks after the purge, want the %d of the recording still in grace", chunks, want)
	}
	// A legal order: purged at once by id, whatever its time.
	if p, err := a.PurgeTakedowns(t.Context(), later.ID); err != nil || len(p) != 1 {
		t.Fatalf("purge by id: %+v, %v", p, err)
	}
	if ts, _ := a.Takedowns(); len(ts) != 2 || ts[0].State != TakedownPurged || ts[1].State != TakedownPurged {
		t.Errorf("takedowns after the purges: %+v, want both purged", ts)
	}
	if _, err := a.LiftTakedown(t.Context(), gone.Manifest.SHA256); err != nil {
		t.Errorf("lift after the purge: %v", err)
	}
	if again := ingest(t, a, formatstest.LinesFile("gone", 80), nil); again.Outcome != Ingested {
		t.Errorf("ingest after the lift: %v", again.Outcome)
	}
}

// A takedown holds by identity: a clip of the game (same own id), a copy of
// other bytes of its session, and a live recording of its id are refused,
// and none takes over the id.
func TestTakedownHoldsByIdentity(t *testing.T) {
	for _, grace := range []time.Duration{0, time.Hour} {
		a := openTest(t, "", Options{})
		own := uuid.MustParse("29292929-0000-4000-8000-000000000003")
		game := ingest(t, a, formatstest.LinesFile("sess", 60), func(m *formats.Metadata) { m.ID = own })
		if _, err := a.TakeDown(t.Context(), own, DeleteOptions{Reason: "doxx", Grace: grace}); err != nil {
			t.Fatal(err)
		}
		clip := ingest(t, a, formatstest.LinesFile("sess", 20), func(m *formats.Metadata) { m.ID = own })
		if clip.Outcome != TakenDown || clip.ID != own {
			t.Errorf("grace %v: a clip naming the taken-down id: %v %s, want taken down", grace, clip.Outcome, clip.ID)
		}
		wantTakenDown(t, "clip", clip.Err, own)
		redacted := ingest(t, a, formatstest.LinesFile("sess", 61), nil)
		if redacted.Outcome != TakenDown {
			t.Errorf("grace %v: other bytes of the taken-down session: %v %s, want taken down", grace, redacted.Outcome, redacted.ID)
		}
		g, err := a.NewGrowth("lines", "live.lines", nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Header([]byte("H")); err != nil {
			t.Fatal(err)
		}
		if err := g.Chunk(formats.Chunk{StartTick: 0, Ticks: 1}, []byte("a")); err != nil {
			t.Fatal(err)
		}
		_, err = a.CommitGrow(t.Context(), g, &formats.TailResult{Meta: &formats.Metadata{ID: own}, End: 2}, false)
		wantTakenDown(t, "a live recording of the taken-down id", err, own)
		if _, err := a.Open(own); !errors.Is(err, ErrNotFound) {
			t.Errorf("grace %v: the taken-down id opens after the live grow: %v", grace, err)
		}
		wantClean(t, a, 0)
		if _, err := a.Resolve(game.ID.String()); !errors.Is(err, ErrNotFound) {
			t.Errorf("grace %v: the taken-down id resolves: %v", grace, err)
		}
	}
}

// A takedown recorded before identities were kept (no idents bucket, no
// meta_id, session or state) still refuses its recording's id once the
// catalog is opened again.
func TestOldTakedownRecordRefusesItsID(t *testing.T) {
	dir := t.TempDir()
	a, err := Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	own := uuid.MustParse("29292929-0000-4000-8000-000000000004")
	old := map[string]any{"sha256": "ab" + string(bytes.Repeat([]byte("0"), 62)), "id": own, "format": "lines", "at": time.Now()}
	v, _ := json.Marshal(old)
	err = a.catalog.Update(func(tx *bolt.Tx) error {
		if err := tx.DeleteBucket(bucketTakedownIdents); err != nil {
			return err
		}
		sum, _ := hexSum(old["sha256"].(string))
		return tx.Bucket(bucketTakedowns).Put(sum, v)
	})
	if err != nil {
		t.Fatal(err)
	}
	a.Close()
	a, err = Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	res := ingest(t, a, formatstest.LinesFile("x", 10), func(m *formats.Metadata) { m.ID = own })
	if res.Outcome != TakenDown {
		t.Errorf("a file naming the id of an old takedown: %v %s, want taken down", res.Outcome, res.ID)
	}
	if ts, err := a.Takedowns(); err != nil || len(ts) != 1 || ts[0].State != TakedownPurged {
		t.Errorf("old takedown listed as %+v, %v; want purged", ts, err)
	}
}

// A second node does not serve a manifest pulled from the bucket whose
// id or game identity it took down: not the taken-down recording itself,
// and not another copy of the same game; both answer as gone.
func TestCatchUpRefusesTakenDownIdentity(t *testing.T) {
	store, err := blob.NewDir(filepath.Join(t.TempDir(), "bucket"))
	if err != nil {
		t.Fatal(err)
	}
	one := openTest(t, "", Options{Remote: store, Now: tierClock})
	two := openTest(t, "", Options{Remote: store, Now: tierClock})
	own := uuid.MustParse("29292929-0000-4000-8000-000000000005")
	start := func(m *formats.Metadata) { m.ID, m.Start = own, time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC) }
	game := ingest(t, one, formatstest.LinesFile("sess", 400), start)
	if _, err := one.Upload(t.Context(), UploadOptions{OlderThan: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if rep, err := two.CatchUp(t.Context()); err != nil || rep.Added != 1 {
		t.Fatalf("catch up: %+v, %v", rep, err)
	}
	// Within its grace period: the second node keeps the bucket's objects.
	if _, err := two.TakeDown(t.Context(), own, DeleteOptions{Reason: "doxx", Grace: time.Hour}); err != nil {
		t.Fatal(err)
	}
	// The writer ingested a clip of the same game before it saw the
	// takedown: its upload records the bucket's takedown first and
	// refuses the clip.
	clip := ingest(t, one, formatstest.LinesFile("sess", 200), start)
	if clip.ID == own || clip.Outcome != Ingested {
		t.Fatalf("clip on the writer: %v %s", clip.Outcome, clip.ID)
	}
	if up, err := one.Upload(t.Context(), UploadOptions{OlderThan: time.Hour}); err != nil || up.Recordings != 0 || len(up.TakenDown) != 1 {
		t.Fatalf("the writer's upload of a clip of a taken-down game: %+v, %v; want it refused", up, err)
	}
	rep, err := two.CatchUp(t.Context())
	if err != nil || rep.Added != 0 || rep.Skipped != 1 {
		t.Fatalf("catch up after the takedown: %+v, %v; want the manifest skipped", rep, err)
	}
	for _, x := range []*Archive{one, two} {
		_, err := x.Resolve(game.ID.String())
		wantTakenDown(t, "resolve "+game.ID.String(), err, own)
	}
	if rep, err := two.CatchUp(t.Context()); err != nil || rep.Added != 0 {
		t.Errorf("next catch up: %+v, %v; want nothing added", rep, err)
	}
}
