package archive

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/replayarchive/replay/archive/blob"
	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/formatstest"
	"github.com/replayarchive/replay/internal/crash"
	"github.com/replayarchive/replay/internal/s3test"
)

// countStore counts the reads that reach the bucket.
type countStore struct {
	blob.Store
	gets, ranges atomic.Int64
}

func (c *countStore) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	c.gets.Add(1)
	return c.Store.Get(ctx, key)
}

func (c *countStore) GetRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	c.ranges.Add(1)
	return c.Store.GetRange(ctx, key, off, n)
}

// tierNow is the clock of the tier tests: the recordings they ingest
// started in January 2026, two months before.
var tierNow = time.Date(2026, 3, 15, 12, 0, 0, 0, time.UTC)

// tierClock is the tier tests' Options.Now.
func tierClock() time.Time { return tierNow }

// ingestOld ingests n lines recordings (sessions named after session) of 400 ticks that started in
// January 2026 and returns their ids and bytes.
func ingestOld(t *testing.T, a *Archive, session string, n int) ([]uuid.UUID, [][]byte) {
	t.Helper()
	var ids []uuid.UUID
	var files [][]byte
	for i := range n {
		native := formatstest.LinesFile(session+string(rune('a'+i)), 400)
		res := ingest(t, a, native, func(m *formats.Metadata) {
			m.Start = time.Date(2026, 1, 1+i, 0, 0, 0, 0, time.UTC)
		})
		if res.Outcome != Ingested {
			t.Fatalf("ingest %d: %v", i, res.Outcome)
		}
		ids, files = append(ids, res.ID), append(files, native)
	}
	return ids, files
}

// bucketKeys lists the keys under prefix.
func bucketKeys(t *testing.T, s blob.Store, prefix string) []string {
	t.Helper()
	var keys []string
	if err := s.List(t.Context(), prefix, func(k string, _ int64) error {
		keys = append(keys, k)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return keys
}

// TestRemoteUploadAndRead uploads sealed recordings and reads them back
// from the bucket: a whole export is one GET and byte-identical, a seek is
// one ranged GET, then none once the chunk is cached; the shard is gone.
func TestRemoteUploadAndRead(t *testing.T) {
	srv := s3test.Start(t)
	store := &countStore{Store: srv.NewStore(t)}
	a := openTest(t, "", Options{Remote: store, Now: tierClock})
	ids, files := ingestOld(t, a, "s", 3)
	young := ingest(t, a, formatstest.LinesFile("young", 50), func(m *formats.Metadata) { m.Start = tierNow.Add(-time.Hour) })

	rep, err := a.Upload(t.Context(), UploadOptions{OlderThan: 7 * 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Recordings != 3 {
		t.Fatalf("uploaded %d recordings, want 3 (the young one stays)", rep.Recordings)
	}
	if keys := bucketKeys(t, store, "rec/2026-01/"); len(keys) != 3 {
		t.Fatalf("objects %v, want 3 under rec/2026-01/", keys)
	}
	if keys := bucketKeys(t, store, "manifests/"); len(keys) != 3 {
		t.Fatalf("manifests %v, want 3", keys)
	}
	if _, err := os.Stat(a.shardPath("2026-01")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("shard 2026-01 still there after its recordings moved out: %v", err)
	}
	if m, _ := a.Manifest(young.ID); m.Remote != "" {
		t.Errorf("young recording uploaded to %s", m.Remote)
	}
	for i, id := range ids {
		store.gets.Store(0)
		if got := export(t, a, id); !bytes.Equal(got, files[i]) {
			t.Fatalf("export of %s from the bucket differs", id)
		}
		if n, r := store.gets.Load(), store.ranges.Load(); n != 1 || r != 0 {
			t.Errorf("export read %d GETs and %d ranged GETs, want 1 and 0", n, r)
		}
	}

	seek := func() (ranges int64, reads int) {
		r, err := a.Open(ids[1])
		if err != nil {
			t.Fatal(err)
		}
		store.ranges.Store(0)
		var ticks []int64
		err = formatstest.Lines{}.Frames(t.Context(), r, formats.Ticks(201, 202), func(f formats.Frame) error {
			ticks = append(ticks, f.Tick)
			return nil
		})
		if err != nil || len(ticks) != 2 || ticks[0] != 201 {
			t.Fatalf("frames 201..202 = %v, %v", ticks, err)
		}
		return store.ranges.Load(), r.Reads()
	}
	if ranges, reads := seek(); ranges != 1 || reads != 1 {
		t.Errorf("cold seek: %d ranged GETs for %d chunk reads, want 1 and 1", ranges, reads)
	}
	if ranges, _ := seek(); ranges != 0 {
		t.Errorf("warm seek: %d ranged GETs, want 0 (cached)", ranges)
	}
	// A damaged cache file is fetched again, not believed.
	for _, e := range cacheFiles(t, a) {
		if err := os.WriteFile(e, bytes.Repeat([]byte{0xff}, 40), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if ranges, _ := seek(); ranges != 1 {
		t.Errorf("seek over a damaged cache: %d ranged GETs, want 1", ranges)
	}

	st, err := a.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if st.RemoteRecordings != 3 || st.RemoteBytes <= 0 || st.CacheBytes <= 0 {
		t.Errorf("stats: %d remote recordings, %d remote bytes, %d cached", st.RemoteRecordings, st.RemoteBytes, st.CacheBytes)
	}
	crep, err := a.Check(t.Context(), CheckOptions{ReadData: true})
	if err != nil || !crep.OK() || crep.Remote == nil || crep.Remote.Objects != 3 {
		t.Fatalf("check: %+v %+v, %v", crep, crep.Remote, err)
	}

	// A takedown deletes the objects and the cached chunks, and leaves
	// its record for the other nodes.
	if _, err := a.TakeDown(t.Context(), ids[1], DeleteOptions{By: "test"}); err != nil {
		t.Fatal(err)
	}
	if keys := bucketKeys(t, store, ""); len(keys) != 5 || strings.Contains(strings.Join(keys, " "), ids[1].String()) ||
		len(bucketKeys(t, store, "takedowns/")) != 1 {
		t.Errorf("after the takedown the bucket holds %v", keys)
	}
	if files := cacheFiles(t, a); len(files) != 0 {
		t.Errorf("cached chunks of a taken-down recording: %v", files)
	}
}

// cacheFiles lists the chunk cache's files.
func cacheFiles(t *testing.T, a *Archive) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(a.cacheDir(), "*"))
	return files
}

// TestRemoteCacheBound reads every chunk of an uploaded recording through
// a cache smaller than it: the cache stays within its bound.
func TestRemoteCacheBound(t *testing.T) {
	srv := s3test.Start(t)
	dir := t.TempDir()
	a := openTest(t, dir, Options{Remote: srv.NewStore(t), CacheBytes: 4 << 10, Now: tierClock})
	ids, _ := ingestOld(t, a, "s", 1)
	if _, err := a.Upload(t.Context(), UploadOptions{OlderThan: time.Hour}); err != nil {
		t.Fatal(err)
	}
	r, err := a.Open(ids[0])
	if err != nil {
		t.Fatal(err)
	}
	for i := range r.Chunks() {
		if _, _, err := r.ReadChunk(t.Context(), i); err != nil {
			t.Fatal(err)
		}
	}
	st := a.CacheStats()
	if st.Bytes > 4<<10 || st.Bytes == 0 || st.Misses != int64(len(r.Chunks())) {
		t.Errorf("cache: %+v after reading %d chunks through a 4 KiB cache", st, len(r.Chunks()))
	}
	var sum int64
	for _, f := range cacheFiles(t, a) {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		sum += fi.Size()
	}
	if sum != st.Bytes {
		t.Errorf("cache files hold %d bytes, the cache counts %d", sum, st.Bytes)
	}
}

const uploadHelperEnv = "ARCHIVE_UPLOAD_HELPER"

// TestUploadHelperProcess is not a test: TestRemoteUploadKilled runs the
// test binary again with it, and it kills itself with SIGKILL between the
// object upload and the manifest upload.
func TestUploadHelperProcess(t *testing.T) {
	env := os.Getenv(uploadHelperEnv)
	if env == "" {
		t.Skip("helper process for TestRemoteUploadKilled")
	}
	dir, url, _ := strings.Cut(env, "|")
	endpoint, creds, _ := strings.Cut(os.Getenv(uploadHelperEnv+"_S3"), "|")
	store, err := blob.NewS3(t.Context(), url, blob.S3Options{Endpoint: endpoint, Region: "us-east-1", CredentialsFile: creds})
	if err != nil {
		t.Fatal(err)
	}
	a, err := Open(dir, Options{Remote: store, Now: tierClock})
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.Upload(context.Background(), UploadOptions{OlderThan: time.Hour, afterObject: func() {
		crash.Self()
	}})
	t.Fatalf("upload survived its kill: %v", err)
}

// TestRemoteUploadKilled kills an upload between the object and its
// manifest: the recording stays local and readable, the bucket holds one
// orphan object that check reports as young (it may be an upload in
// flight) and check --repair keeps until it is past the grace age, then
// removes; the next upload completes.
func TestRemoteUploadKilled(t *testing.T) {
	srv := s3test.Start(t)
	url := srv.URL()
	store, err := blob.NewS3(t.Context(), url, srv.Options())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	a, err := Open(dir, Options{NoSync: true, Now: tierClock})
	if err != nil {
		t.Fatal(err)
	}
	ids, files := ingestOld(t, a, "s", 2)
	a.Close()

	cmd := exec.Command(os.Args[0], "-test.run=^TestUploadHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), uploadHelperEnv+"="+dir+"|"+url, uploadHelperEnv+"_S3="+srv.Endpoint+"|"+srv.CredentialsFile)
	out, err := cmd.CombinedOutput()
	if !crash.Killed(err) {
		t.Fatalf("helper: %v, want killed by SIGKILL; output:\n%s", err, out)
	}
	if keys := bucketKeys(t, store, "manifests/"); len(keys) != 0 {
		t.Fatalf("manifests after the kill: %v", keys)
	}
	if keys := bucketKeys(t, store, "rec/"); len(keys) != 1 {
		t.Fatalf("objects after the kill: %v, want the one orphan", keys)
	}

	var now atomic.Pointer[time.Time]
	now.Store(&tierNow)
	a = openTest(t, dir, Options{Remote: store, Now: func() time.Time { return *now.Load() }})
	for i, id := range ids {
		if m, _ := a.Manifest(id); m.Remote != "" {
			t.Errorf("%s is remote after a killed upload", id)
		}
		if got := export(t, a, id); !bytes.Equal(got, files[i]) {
			t.Fatalf("export of %s after the kill differs", id)
		}
	}
	rep, err := a.Check(t.Context(), CheckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || len(rep.Remote.Young) != 1 || len(rep.Remote.Orphans) != 0 || len(rep.Remote.Missing) != 0 || rep.Orphans != 0 || len(rep.Problems) != 0 {
		t.Fatalf("check after the kill: %+v, remote %+v; want one young object", rep, rep.Remote)
	}
	if rep, err = a.Check(t.Context(), CheckOptions{Repair: true}); err != nil || !rep.Remote.Repaired {
		t.Fatalf("check --repair: %+v, %v", rep, err)
	}
	if keys := bucketKeys(t, store, "rec/"); len(keys) != 1 {
		t.Fatalf("a young object was repaired away: %v", keys)
	}
	later := time.Now().Add(DefaultOrphanGrace + time.Hour)
	now.Store(&later)
	rep, err = a.Check(t.Context(), CheckOptions{})
	if err != nil || rep.OK() || len(rep.Remote.Orphans) != 1 {
		t.Fatalf("check a day later: %+v, remote %+v, %v; want one orphan object", rep, rep.Remote, err)
	}
	if rep, err = a.Check(t.Context(), CheckOptions{Repair: true}); err != nil || !rep.Remote.Repaired {
		t.Fatalf("check --repair: %+v, %v", rep, err)
	}
	if keys := bucketKeys(t, store, ""); len(keys) != 0 {
		t.Fatalf("bucket after repair: %v", keys)
	}
	if rep, err = a.Check(t.Context(), CheckOptions{}); err != nil || !rep.OK() {
		t.Fatalf("check after repair: %+v %+v, %v", rep, rep.Remote, err)
	}
	if up, err := a.Upload(t.Context(), UploadOptions{OlderThan: time.Hour}); err != nil || up.Recordings != 2 {
		t.Fatalf("upload after repair: %+v, %v", up, err)
	}
	// A manifest whose object is gone is reported, and repair removes it
	// past the grace age.
	now.Store(&tierNow)
	m, _ := a.Manifest(ids[0])
	if err := store.Delete(t.Context(), m.Remote); err != nil {
		t.Fatal(err)
	}
	rep, err = a.Check(t.Context(), CheckOptions{Repair: true})
	if err != nil || len(rep.Remote.Young) != 1 || len(rep.Problems) != 1 || len(bucketKeys(t, store, "manifests/")) != 2 {
		t.Fatalf("check of a young missing object: %+v %+v, %v", rep, rep.Remote, err)
	}
	later = time.Now().Add(DefaultOrphanGrace + time.Hour)
	now.Store(&later)
	rep, err = a.Check(t.Context(), CheckOptions{Repair: true})
	if err != nil || len(rep.Remote.Missing) != 1 || len(rep.Problems) != 1 {
		t.Fatalf("check of a missing object: %+v %+v, %v", rep, rep.Remote, err)
	}
	if keys := bucketKeys(t, store, "manifests/"); len(keys) != 1 {
		t.Fatalf("manifests after repair: %v", keys)
	}
}

// TestRemoteSecondNode: a second archive, read-only toward the bucket,
// builds its catalog from the manifests the first uploaded, exports them
// byte for byte, and loses a recording the first takes down once it
// catches up; new uploads appear at the next catch-up.
func TestRemoteSecondNode(t *testing.T) {
	srv := s3test.Start(t)
	url := srv.URL()
	w, err := blob.NewS3(t.Context(), url, srv.Options())
	if err != nil {
		t.Fatal(err)
	}
	ro := srv.Options()
	ro.ReadOnly = true
	r, err := blob.NewS3(t.Context(), url, ro)
	if err != nil {
		t.Fatal(err)
	}
	one := openTest(t, "", Options{Remote: w, Now: tierClock})
	two := openTest(t, "", Options{Remote: r, Now: tierClock})
	ids, files := ingestOld(t, one, "s", 2)
	if _, err := one.Upload(t.Context(), UploadOptions{OlderThan: time.Hour}); err != nil {
		t.Fatal(err)
	}
	rep, err := two.CatchUp(t.Context())
	if err != nil || rep.Added != 2 {
		t.Fatalf("catch up: %+v, %v", rep, err)
	}
	for i, id := range ids {
		if got := export(t, two, id); !bytes.Equal(got, files[i]) {
			t.Fatalf("second node's export of %s differs", id)
		}
		evs, err := two.Events(id)
		if err != nil || len(evs) == 0 {
			t.Errorf("second node's events of %s: %d, %v", id, len(evs), err)
		}
	}
	if ch, _ := two.ChangesSince(0, 0); len(ch) != 2 {
		t.Errorf("second node's change log: %v, want 2 puts for its index", ch)
	}
	if rep, err := two.CatchUp(t.Context()); err != nil || rep.Added+rep.Removed+rep.Skipped+rep.Takedowns != 0 {
		t.Errorf("second catch-up: %+v, %v; want nothing to do", rep, err)
	}
	// The second node may not change the bucket.
	if _, err := two.Upload(t.Context(), UploadOptions{OlderThan: time.Hour}); err == nil {
		t.Error("a read-only node uploaded")
	}

	if _, err := one.TakeDown(t.Context(), ids[0], DeleteOptions{By: "test", Reason: "gone"}); err != nil {
		t.Fatal(err)
	}
	more, moreFiles := ingestOld(t, one, "later", 1)
	if _, err := one.Upload(t.Context(), UploadOptions{OlderThan: time.Hour}); err != nil {
		t.Fatal(err)
	}
	rep, err = two.CatchUp(t.Context())
	if err != nil || rep.Removed != 1 || rep.Added != 1 {
		t.Fatalf("catch up after a takedown and an upload: %+v, %v", rep, err)
	}
	if _, err := two.Open(ids[0]); !errors.Is(err, ErrNotFound) {
		t.Errorf("taken-down recording on the second node: %v", err)
	}
	if got := export(t, two, more[0]); !bytes.Equal(got, moreFiles[0]) {
		t.Error("second node's export of a later upload differs")
	}
	if c, err := two.Check(t.Context(), CheckOptions{}); err != nil || !c.OK() {
		t.Errorf("second node check: %+v %+v, %v", c, c.Remote, err)
	}
}

// TestRemoteUploadSharedBlobs uploads recordings whose chunks a younger
// recording of the same shard shares: each object holds whole blobs, and
// the shared blobs stay in the shard for the recording that stays.
func TestRemoteUploadSharedBlobs(t *testing.T) {
	srv := s3test.Start(t)
	a := openTest(t, "", Options{Remote: srv.NewStore(t), Now: tierClock})
	files := [][]byte{sharedLines("old1", 40), sharedLines("old2", 40), sharedLines("young", 40)}
	// All three in the shard of March 2026; the upload takes the first two.
	starts := []time.Time{time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC), tierNow.Add(-time.Hour)}
	var ids []uuid.UUID
	for i, f := range files {
		res := ingest(t, a, f, func(m *formats.Metadata) { m.Start = starts[i] })
		ids = append(ids, res.ID)
	}
	if st, err := a.Stats(t.Context()); err != nil || st.SharedBytes <= 0 {
		t.Fatalf("stats before upload: %+v, %v", st, err)
	}
	rep, err := a.Upload(t.Context(), UploadOptions{OlderThan: 7 * 24 * time.Hour})
	if err != nil || rep.Recordings != 2 {
		t.Fatalf("upload: %+v, %v", rep, err)
	}
	for i, id := range ids {
		if got := export(t, a, id); !bytes.Equal(got, files[i]) {
			t.Errorf("export of recording %d differs after the upload", i)
		}
	}
	crep, err := a.Check(t.Context(), CheckOptions{ReadData: true})
	if err != nil || !crep.OK() || crep.Orphans != 0 {
		t.Fatalf("check: %+v, %v", crep, err)
	}
	if st, err := a.Stats(t.Context()); err != nil || st.SharedBytes != 0 {
		t.Errorf("stats after upload: %+v, %v (nothing local is shared now)", st, err)
	}
}
