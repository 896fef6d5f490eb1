package archive

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/replayarchive/replay/archive/blob"
	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/formatstest"
	"github.com/replayarchive/replay/internal/s3test"
	bolt "go.etcd.io/bbolt"
)

// readingNode opens an archive that reads url read-only and catches up.
func readingNode(t *testing.T, srv *s3test.Server, url string) *Archive {
	t.Helper()
	ro := srv.Options()
	ro.ReadOnly = true
	s, err := blob.NewS3(t.Context(), url, ro)
	if err != nil {
		t.Fatal(err)
	}
	r := openTest(t, "", Options{Remote: s, Now: tierClock})
	if _, err := r.CatchUp(t.Context()); err != nil {
		t.Fatalf("reading node's catch-up: %v", err)
	}
	return r
}

// tryExport exports id, or says why it could not.
func tryExport(a *Archive, id uuid.UUID) ([]byte, error) {
	r, err := a.Open(id)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	_, err = r.WriteTo(context.Background(), &b)
	return b.Bytes(), err
}

// TestTwoWritersRepairDuringUpload: W1 uploads
// while W2, another writer on the same bucket prefix (its own catalog, the
// real clock), runs check --repair: between each of W1's objects and its
// manifest, and in a loop beside the whole upload. No recording is lost:
// every one exports byte for byte on W1 and on a reading node.
func TestTwoWritersRepairDuringUpload(t *testing.T) {
	srv := s3test.Start(t)
	url := srv.URL()
	open := func() blob.Store {
		s, err := blob.NewS3(t.Context(), url, srv.Options())
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	w1 := openTest(t, "", Options{Remote: open(), Now: tierClock})
	w2 := openTest(t, "", Options{Remote: open()})
	const n = 24
	ids, files := ingestOld(t, w1, "w", n)

	repair := func() error {
		_, err := w2.Check(context.Background(), CheckOptions{Repair: true})
		return err
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var loopErr error
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := repair(); err != nil {
				loopErr = err
				return
			}
		}
	})
	rep, err := w1.Upload(t.Context(), UploadOptions{OlderThan: time.Hour, afterObject: func() {
		if err := repair(); err != nil {
			t.Errorf("W2's check --repair between an object and its manifest: %v", err)
		}
	}})
	close(stop)
	wg.Wait()
	if err != nil || loopErr != nil {
		t.Fatalf("upload: %+v, %v; W2's repairs: %v", rep, err, loopErr)
	}
	if rep.Recordings != n {
		t.Errorf("uploaded %d of %d", rep.Recordings, n)
	}
	r := readingNode(t, srv, url)
	lost := 0
	for i, id := range ids {
		for _, node := range []*Archive{w1, r} {
			if got, err := tryExport(node, id); err != nil || !bytes.Equal(got, files[i]) {
				lost++
				t.Errorf("recording %d (%s) on %s: %v", i, id, node.dir, err)
			}
		}
	}
	if lost > 0 {
		t.Fatalf("%d of %d exports lost", lost, 2*n)
	}
	c, err := w2.Check(t.Context(), CheckOptions{Repair: true})
	if err != nil || !c.OK() || len(c.Remote.Young) != 0 || c.Remote.Manifests != n || c.Remote.Objects != n {
		t.Errorf("W2's check after the upload: %+v %+v, %v", c, c.Remote, err)
	}
}

// TestTwoWritersDifferentBytes: A and C hold
// the same game with different stored bytes (A recompressed it) and both
// upload it, one after the other and racing (A commits between C's object
// and C's manifest). Neither's object is replaced: A's upload wins, C
// keeps its copy local and says so, and every export, on A, on C and on a
// reading node, is byte for byte the game.
func TestTwoWritersDifferentBytes(t *testing.T) {
	srv := s3test.Start(t)
	url := srv.URL()
	store := func() blob.Store {
		s, err := blob.NewS3(t.Context(), url, srv.Options())
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	sa, sc := store(), store()
	a := openTest(t, "", Options{Remote: sa, Now: tierClock})
	c := openTest(t, "", Options{Remote: sc, Now: tierClock})
	games := [][]byte{formatstest.LinesFile("after", 4000), formatstest.LinesFile("racing", 4000)}
	starts := []time.Time{time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC), time.Date(2026, 2, 20, 0, 0, 0, 0, time.UTC)}
	var ids []uuid.UUID
	for i, g := range games {
		start := func(m *formats.Metadata) { m.Start = starts[i] }
		ra, rc := ingest(t, a, g, start), ingest(t, c, g, start)
		if ra.ID != rc.ID {
			t.Fatalf("game %d: ids %s and %s", i, ra.ID, rc.ID)
		}
		ids = append(ids, ra.ID)
	}
	if _, err := a.Recompress(t.Context(), RecompressOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		ma, _ := a.Manifest(id)
		mc, _ := c.Manifest(id)
		if ma.StoredBytes == mc.StoredBytes {
			t.Fatalf("%s: recompressing left the stored bytes at %d", id, ma.StoredBytes)
		}
	}
	upload := func(x *Archive, olderThan time.Duration, after func()) *UploadReport {
		t.Helper()
		rep, err := x.Upload(t.Context(), UploadOptions{OlderThan: olderThan, afterObject: after})
		if err != nil {
			t.Fatalf("upload: %v", err)
		}
		return rep
	}
	// Game 0 (January; game 1 is too young for this upload): A uploads,
	// then C tries.
	january := tierNow.Sub(time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC))
	if rep := upload(a, january, nil); rep.Recordings != 1 {
		t.Fatalf("A's upload of game 0: %+v", rep)
	}
	rep := upload(c, january, nil)
	if rep.Recordings != 0 || len(rep.Conflicts) != 1 || !strings.Contains(rep.Conflicts[0], ids[0].String()) {
		t.Fatalf("C's upload of game 0 after A's: %+v, want one conflict", rep)
	}
	// Game 1: C's object is written, then A's upload commits, then C's
	// manifest loses the race (and game 0 is refused again).
	rep = upload(c, time.Hour, func() {
		if rep, err := a.Upload(t.Context(), UploadOptions{OlderThan: time.Hour}); err != nil || rep.Recordings != 1 {
			t.Errorf("A's upload of game 1 during C's: %+v, %v", rep, err)
		}
	})
	if rep.Recordings != 0 || len(rep.Conflicts) != 2 || !strings.Contains(strings.Join(rep.Conflicts, " "), ids[1].String()) {
		t.Fatalf("C's upload of game 1 racing A's: %+v, want two conflicts", rep)
	}
	for _, id := range ids {
		ma, _ := a.Manifest(id)
		mc, _ := c.Manifest(id)
		if ma.Remote == "" || mc.Remote != "" {
			t.Errorf("%s: remote on A %q, on C %q; want A's only", id, ma.Remote, mc.Remote)
		}
		var objs []string
		for _, k := range bucketKeys(t, sa, "rec/") {
			if strings.HasSuffix(k, id.String()) {
				objs = append(objs, k)
			}
		}
		if !slices.Equal(objs, []string{ma.Remote}) {
			t.Errorf("%s: objects %v, want A's %s alone", id, objs, ma.Remote)
		}
	}
	r := readingNode(t, srv, url)
	for i, id := range ids {
		for _, node := range []*Archive{a, c, r} {
			if got, err := tryExport(node, id); err != nil || !bytes.Equal(got, games[i]) {
				t.Errorf("game %d on %s: %v", i, node.dir, err)
			}
		}
	}
	for _, x := range []*Archive{a, c} {
		if rep, err := x.Check(t.Context(), CheckOptions{ReadData: true}); err != nil || !rep.OK() || len(rep.Remote.Young) != 0 {
			t.Errorf("check on %s: %+v %+v, %v", x.dir, rep, rep.Remote, err)
		}
	}
}

// TestRepairOrphanGrace: check --repair deletes bucket objects no manifest
// names, and manifests without objects, only once they are older than the
// grace age by the archive's clock (their mtimes, on a blob.Dir), keeps
// younger ones and every object a manifest names however old, and refuses
// a grace too short to spare another writer's upload in flight.
func TestRepairOrphanGrace(t *testing.T) {
	now := time.Now()
	root := t.TempDir()
	store, err := blob.NewDir(root)
	if err != nil {
		t.Fatal(err)
	}
	a := openTest(t, "", Options{Remote: store, Now: func() time.Time { return now }})
	ids, files := ingestOld(t, a, "g", 2)
	if _, err := a.Upload(t.Context(), UploadOptions{OlderThan: time.Hour}); err != nil {
		t.Fatal(err)
	}
	m0, _ := a.Manifest(ids[0])
	other, lost := uuid.New(), uuid.New()
	old, young := now.Add(-DefaultOrphanGrace-time.Hour), now.Add(-DefaultOrphanGrace+time.Hour)
	objects := map[string]time.Time{
		"rec/2026-01/00aa/" + ids[0].String(): old,   // another upload of a named recording
		"rec/2026-01/00bb/" + ids[0].String(): young, // one in flight
		"rec/2026-01/" + other.String():       old,   // the older layout's key
		"rec/2026-01/00cc/" + other.String():  young,
	}
	manifests := map[string]time.Time{
		"manifests/" + lost.String():    old, // no object
		"manifests/" + uuid.NewString(): young,
	}
	keys := map[string]time.Time{m0.Remote: old} // named: stays however old
	for k, mt := range objects {
		keys[k] = mt
		if err := store.Put(t.Context(), k, strings.NewReader("orphan"), 6); err != nil {
			t.Fatal(err)
		}
	}
	for k, mt := range manifests {
		keys[k] = mt
		if err := store.Put(t.Context(), k, strings.NewReader("{}"), 2); err != nil {
			t.Fatal(err)
		}
	}
	for k, mt := range keys {
		if err := os.Chtimes(filepath.Join(root, filepath.FromSlash(k)), mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.Check(t.Context(), CheckOptions{Repair: true, OrphanGrace: time.Hour}); err == nil {
		t.Error("check --repair took a grace of 1h")
	}
	rep, err := a.Check(t.Context(), CheckOptions{Repair: true})
	if err != nil {
		t.Fatal(err)
	}
	wantGone := []string{"manifests/" + lost.String(), "rec/2026-01/00aa/" + ids[0].String(), "rec/2026-01/" + other.String()}
	slices.Sort(wantGone)
	gotGone := append(append([]string{}, rep.Remote.Orphans...), rep.Remote.Missing...)
	slices.Sort(gotGone)
	if !slices.Equal(gotGone, wantGone) || len(rep.Remote.Young) != 3 || rep.Remote.OrphanBytes != 12 {
		t.Errorf("repair: orphans %v, missing %v, young %v (%d bytes); want %v gone and 3 young",
			rep.Remote.Orphans, rep.Remote.Missing, rep.Remote.Young, rep.Remote.OrphanBytes, wantGone)
	}
	for k := range keys {
		_, err := store.Stat(t.Context(), k)
		if gone := slices.Contains(wantGone, k); gone != errors.Is(err, blob.ErrNotFound) {
			t.Errorf("%s: after repair %v, want gone %v", k, err, gone)
		}
	}
	for i, id := range ids {
		if got := export(t, a, id); !bytes.Equal(got, files[i]) {
			t.Errorf("export of %s after repair differs", id)
		}
	}
}

// sweptStore deletes every object of a recording right after its manifest
// is committed: a sweep that decided before the commit.
type sweptStore struct{ blob.Store }

func (s sweptStore) PutIfAbsent(ctx context.Context, key string, r io.Reader, size int64) (bool, error) {
	created, err := s.Store.PutIfAbsent(ctx, key, r, size)
	if id, ok := strings.CutPrefix(key, "manifests/"); ok && created && err == nil {
		err = s.ListInfo(ctx, "rec/", func(o blob.Info) error {
			if strings.HasSuffix(o.Key, id) {
				return s.Delete(ctx, o.Key)
			}
			return nil
		})
	}
	return created, err
}

// TestUploadChecksObjectAfterManifest: an upload whose object is gone once
// its manifest is committed writes it again from the local chunks before
// dropping them, so the recording stays readable.
func TestUploadChecksObjectAfterManifest(t *testing.T) {
	store, err := blob.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a := openTest(t, "", Options{Remote: sweptStore{store}, Now: tierClock})
	ids, files := ingestOld(t, a, "v", 2)
	if rep, err := a.Upload(t.Context(), UploadOptions{OlderThan: time.Hour}); err != nil || rep.Recordings != 2 {
		t.Fatalf("upload: %+v, %v", rep, err)
	}
	for i, id := range ids {
		if got, err := tryExport(a, id); err != nil || !bytes.Equal(got, files[i]) {
			t.Errorf("export of %s: %v", id, err)
		}
	}
}

// TestLegacyLayoutStaysReadable: a recording an older build uploaded
// (its object at rec/YYYY-MM/<id>, a manifest with no writer id) reads on
// a catching-up node, passes check, and an upload killed after such a
// manifest is finished by this build rather than refused.
func TestLegacyLayoutStaysReadable(t *testing.T) {
	store, err := blob.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a := openTest(t, "", Options{Remote: store, Now: tierClock})
	ids, files := ingestOld(t, a, "l", 1)
	m, _ := a.Manifest(ids[0])
	// What an older build's upload left when killed after its manifest.
	key, size := legacyObjectKey(m), storedSize(m.Chunks)
	r, stop := a.chunkStream(m)
	err = store.Put(t.Context(), key, r, size)
	stop()
	if err != nil {
		t.Fatal(err)
	}
	rm := remoteManifest{Version: 1}
	if err := a.catalog.View(func(tx *bolt.Tx) error { rm.Heads = bytes.Clone(tx.Bucket(bucketHeads).Get(m.ID[:])); return nil }); err != nil {
		t.Fatal(err)
	}
	if rm.Events, err = a.eventsValue(m.ID); err != nil {
		t.Fatal(err)
	}
	up := *m
	up.Remote, up.RemoteBytes = key, size
	rm.Manifest = &up
	body, _ := json.Marshal(rm)
	if _, err := store.PutIfAbsent(t.Context(), manifestKey(m.ID), bytes.NewReader(body), int64(len(body))); err != nil {
		t.Fatal(err)
	}

	reader := openTest(t, "", Options{Remote: store, Now: tierClock})
	if rep, err := reader.CatchUp(t.Context()); err != nil || rep.Added != 1 {
		t.Fatalf("catch-up of an older build's manifest: %+v, %v", rep, err)
	}
	if got, err := tryExport(reader, ids[0]); err != nil || !bytes.Equal(got, files[0]) {
		t.Errorf("reading node's export of the older layout: %v", err)
	}
	rep, err := a.Upload(t.Context(), UploadOptions{OlderThan: time.Hour})
	if err != nil || rep.Recordings != 1 || len(rep.Conflicts) != 0 {
		t.Fatalf("upload after an older build's killed upload: %+v, %v", rep, err)
	}
	if m, _ := a.Manifest(ids[0]); m.Remote != key {
		t.Errorf("remote key %q, want the older build's %q", m.Remote, key)
	}
	if got, err := tryExport(a, ids[0]); err != nil || !bytes.Equal(got, files[0]) {
		t.Errorf("export of the older layout: %v", err)
	}
	for _, x := range []*Archive{a, reader} {
		if c, err := x.Check(t.Context(), CheckOptions{ReadData: true}); err != nil || !c.OK() || len(c.Remote.Young) != 0 {
			t.Errorf("check on %s: %+v %+v, %v", x.dir, c, c.Remote, err)
		}
	}
}
