package replay_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/archive/blob"
	"github.com/replayarchive/replay/catalog"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
	"github.com/replayarchive/replay/internal/pgtest"
	"github.com/replayarchive/replay/internal/s3test"
)

// eventually polls cond every 20 ms until it holds or within passes,
// and says how long it took.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > within {
			t.Fatalf("%s: not within %s", what, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(start)
}

// openNode opens (creating it) the archive in dir as a node of the shared
// catalog pg, following it as serve does until the test ends.
func openNode(t *testing.T, pg, dir string) *replay.Archive {
	t.Helper()
	x, err := replay.Open(dir, replay.Options{Create: true, Catalog: pg})
	if err != nil {
		t.Fatalf("node %s: %v", dir, err)
	}
	fctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); x.FollowCatalog(fctx) }()
	t.Cleanup(func() { stop(); <-done; x.Close() })
	return x
}

// TestSharedCatalog runs two nodes of one bucket against one PostgreSQL
// catalog, each following it as serve does: an upload on one is on the
// other at once; a flag, hold, takedown, token and retention policy made
// on either is in force on the other within 2 s, the audit log says who
// and where; only the holder of the janitor's lease prunes; and a third
// node started on an empty disk rebuilds the recordings and their marks
// from the catalog and the bucket alone.
func TestSharedCatalog(t *testing.T) {
	ctx := t.Context()
	pg := pgtest.Start(t).NewDatabase(t)
	srv := s3test.Start(t)
	owner := replay.Actor{Name: "alice", Role: replay.RoleAdmin}
	open := func(name string) *replay.Archive { return openNode(t, pg, filepath.Join(t.TempDir(), name)) }
	a := open("a")
	now := time.Duration(0)
	bucket := srv.URL()
	if err := a.SetRemote(ctx, owner, archive.RemoteConfig{URL: bucket, S3: srv.Options(), UploadAfter: &now}); err != nil {
		t.Fatal(err)
	}
	b := open("b") // finds the bucket in the catalog
	if rc, err := b.RemoteConfig(); err != nil || rc == nil {
		t.Fatalf("node b's remote configuration: %v, %v; want a's, from the catalog", rc, err)
	}

	files := make([][]byte, 3)
	ids := make([]uuid.UUID, 3)
	for i := range files {
		files[i] = teehistoriangen.Must(t, teehistoriangen.Options{Seed: uint64(i + 1), Players: 4, Duration: 20 * time.Second})
		res, _, err := a.IngestStream(ctx, "game.teehistorian", bytes.NewReader(files[i]), 0, owner)
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = res.ID
	}
	if rep, err := a.Upload(ctx, owner, archive.UploadOptions{}); err != nil || rep.Recordings != 3 {
		t.Fatalf("upload: %+v, %v", rep, err)
	}
	has := func(x *replay.Archive, id uuid.UUID) bool { _, err := x.Manifest(id.String()); return err == nil }
	took := eventually(t, 5*time.Second, "node b has a's uploads", func() bool { return has(b, ids[0]) && has(b, ids[1]) && has(b, ids[2]) })
	t.Logf("an upload on a is on b after %s", took)

	// Marks travel both ways.
	if _, err := a.Flag(ctx, owner, ids[1].String(), "cheat", "aimbot at 0:12"); err != nil {
		t.Fatal(err)
	}
	took = eventually(t, 2*time.Second, "a's flag on b", func() bool {
		res, err := b.Search(ctx, "flag:cheat", 0, 10)
		return err == nil && res.Total == 1
	})
	t.Logf("a flag on a is searchable on b after %s", took)
	if _, err := b.Hold(ctx, owner, ids[1].String(), "case 17"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Second, "b's hold on a", func() bool {
		m, err := a.Manifest(ids[1].String())
		return err == nil && m.Hold != nil && m.Hold.Reason == "case 17"
	})
	if _, err := b.Unflag(ctx, owner, ids[1].String(), "cheat", "false alarm"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Second, "b's unflag on a", func() bool {
		m, err := a.Manifest(ids[1].String())
		return err == nil && len(m.Flags) == 0
	})
	if _, err := a.Flag(ctx, owner, ids[1].String(), "review", ""); err != nil {
		t.Fatal(err)
	}

	// A takedown on b: a refuses the id and the bytes.
	if _, _, err := b.Takedown(ctx, owner, ids[0].String(), "DMCA", 0); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Second, "b's takedown on a", func() bool { return !has(a, ids[0]) })
	res, _, _ := a.IngestStream(ctx, "again.teehistorian", bytes.NewReader(files[0]), 0, owner)
	if !errors.As(res.Cause, new(*archive.TakenDownError)) {
		t.Fatalf("a ingests the bytes b took down: %+v", res)
	}

	// A node that only reads the bucket takes down too: the writers
	// delete the bucket's copy.
	r := open("r")
	ro := srv.Options()
	ro.ReadOnly = true
	if err := r.SetRemote(ctx, owner, archive.RemoteConfig{URL: bucket, S3: ro}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.CatchUp(ctx); err != nil || !has(r, ids[2]) {
		t.Fatalf("reading node's catch-up: %v", err)
	}
	if _, _, err := r.Takedown(ctx, owner, ids[2].String(), "doxxing", 0); err != nil {
		t.Fatalf("takedown on the reading node: %v", err)
	}
	store, err := blob.NewS3(ctx, bucket, ro)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Second, "the reading node's takedown on a and b, and the bucket's copy gone", func() bool {
		_, err := store.Get(ctx, "manifests/"+ids[2].String())
		return !has(a, ids[2]) && !has(b, ids[2]) && errors.Is(err, blob.ErrNotFound)
	})

	// Tokens and the retention policy.
	secret, err := a.CreateToken(owner, "mod1", replay.RoleModerator)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Second, "a's token on b", func() bool {
		who, ok, err := b.Authenticate(secret)
		return err == nil && ok && who.Name == "mod1" && who.Role == replay.RoleModerator
	})
	if _, err := b.CreateToken(owner, "mod1", replay.RoleViewer); !errors.Is(err, archive.ErrTokenExists) {
		t.Fatalf("b creates a token a named first: %v", err)
	}
	pol := &archive.Policy{MaxAge: 90 * 24 * time.Hour}
	if err := b.SetPolicy(owner, pol); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Second, "b's policy on a", func() bool {
		p, err := a.Policy()
		return err == nil && p != nil && p.MaxAge == pol.MaxAge
	})
	if err := a.RevokeToken(owner, "mod1"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Second, "a's revocation on b", func() bool {
		_, ok, err := b.Authenticate(secret)
		return err == nil && !ok
	})

	// b's audit log has a's flag, saying where it was made.
	eventually(t, 2*time.Second, "a's audit entries on b", func() bool {
		es, err := b.Audit(ids[1].String(), 0, 100)
		return err == nil && slices.ContainsFunc(es, func(e archive.AuditEntry) bool {
			return e.Action == archive.AuditFlag && e.Detail == "cheat" && e.Who == "alice" && e.Node != ""
		})
	})

	// One janitor at a time.
	other, err := catalog.Open(ctx, pg)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if held, err := other.Lease(ctx, "janitor", "node-x", time.Minute); err != nil || !held {
		t.Fatalf("lease: %v, %v", held, err)
	}
	plan, err := a.Plan(ctx, *pol, archive.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Prune(ctx, owner, plan); !errors.Is(err, replay.ErrJanitorElsewhere) {
		t.Fatalf("a prunes while node-x is the janitor: %v", err)
	}
	if _, err := b.Check(ctx, archive.CheckOptions{Repair: true}); !errors.Is(err, replay.ErrJanitorElsewhere) {
		t.Fatalf("b repairs while node-x is the janitor: %v", err)
	}
	if err := other.Unlease(ctx, "janitor", "node-x"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Prune(ctx, owner, plan); err != nil {
		t.Fatalf("a prunes once the lease is free: %v", err)
	}

	// A node on an empty disk: the catalog and the bucket are enough.
	c := open("c")
	if _, err := c.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	m, err := c.Manifest(ids[1].String())
	if err != nil {
		t.Fatalf("rebuilt node: %v", err)
	}
	if m.Hold == nil || m.Hold.Reason != "case 17" || len(m.Flags) != 1 || m.Flags[0].Name != "review" {
		t.Fatalf("rebuilt node's marks: hold %+v flags %+v; want hold 'case 17', flag review", m.Hold, m.Flags)
	}
	if has(c, ids[0]) {
		t.Fatalf("rebuilt node serves the recording taken down")
	}
	rec, err := c.Recording(ids[1].String())
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := rec.Export(ctx, &out, false); err != nil || !bytes.Equal(out.Bytes(), files[1]) {
		t.Fatalf("rebuilt node's export: %d bytes, %v; want the file byte for byte", out.Len(), err)
	}
	if p, err := c.Policy(); err != nil || p == nil || p.MaxAge != pol.MaxAge {
		t.Fatalf("rebuilt node's policy: %+v, %v", p, err)
	}
}
