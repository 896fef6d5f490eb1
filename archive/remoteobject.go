// Objects and manifests in the bucket, safe with several writers on one
// prefix.
//
// Every upload writes its own object, at a key no other upload uses:
// rec/YYYY-MM/<nonce>/<id>, with 8 random bytes of nonce, written with
// put-if-absent. The manifest (put-if-absent too, the commit point) names
// that key, so two writers of the same recording never write over each
// other's bytes: whoever commits the manifest first owns the recording in
// the bucket, and the other keeps its local copy and deletes only the
// object it wrote itself. The key's last segment is still the recording's
// id, as in the older layout (rec/YYYY-MM/<id>), so listings group objects
// by recording either way, and manifests naming older keys read as before.
//
// Orphans (objects no manifest names) are deleted by a repairing check
// only once older than a grace age (DefaultOrphanGrace, at least
// MinOrphanGrace), and an upload commits its manifest at most uploadWindow
// after it wrote its object: so an object is never an orphan to a sweep
// while its upload can still commit it (checkRemote lists objects before
// manifests, which closes the rest of the window).

package archive

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/replayarchive/replay/archive/blob"
	"github.com/replayarchive/replay/internal/bounded"
	bolt "go.etcd.io/bbolt"
)

// ErrUploadConflict is the error of an upload refused because the bucket
// already holds the recording from another writer (its manifest names an
// object this node did not write). The recording stays local, whole and
// readable; Upload reports it in UploadReport.Conflicts and goes on.
var ErrUploadConflict = errors.New("the bucket holds this recording from another writer")

// Grace ages of the bucket's orphan sweep.
const (
	// DefaultOrphanGrace is CheckOptions.OrphanGrace's default: an object
	// no manifest names, or a manifest whose object is gone, is deleted by
	// a repairing check once this old.
	DefaultOrphanGrace = 24 * time.Hour
	// MinOrphanGrace is the shortest grace a check accepts: uploadWindow
	// plus hours of margin for the clocks of the writers, the sweeper and
	// the server to disagree.
	MinOrphanGrace = 12 * time.Hour
	// uploadWindow is the longest an upload may take from writing its
	// object to committing its manifest; past it, it deletes its object
	// and fails rather than commit an object a sweep may take for an
	// orphan.
	uploadWindow = 6 * time.Hour
)

// settingWriter is this archive's writer id in bucketSettings: a random
// uuid made at its first upload and written into each manifest it
// commits, so that an upload tells its own manifest (left by an upload
// killed after its commit point) from another writer's.
var settingWriter = []byte("writer")

// errBadManifest marks a manifest object that is not one (no JSON, wrong
// version, another recording's): what it names cannot be trusted.
var errBadManifest = errors.New("not a valid manifest")

// objectMonth is the YYYY-MM the recording's object is filed under: its
// start, else its ingest.
func objectMonth(m *Manifest) string {
	t := m.Meta.Start
	if t.IsZero() {
		t = m.Ingested
	}
	return t.UTC().Format("2006-01")
}

// legacyObjectKey is where older builds put recording m's
// object, one key per recording. Manifests naming it stay readable.
func legacyObjectKey(m *Manifest) string {
	return "rec/" + objectMonth(m) + "/" + m.ID.String()
}

// newObjectKey returns a key for one upload of recording m that no other
// upload uses: a random nonce before the id.
func newObjectKey(m *Manifest) string {
	var nonce [8]byte
	_, _ = rand.Read(nonce[:]) // never fails (crypto/rand)
	return "rec/" + objectMonth(m) + "/" + hex.EncodeToString(nonce[:]) + "/" + m.ID.String()
}

// manifestKey is the commit point of recording id in the bucket.
func manifestKey(id uuid.UUID) string { return "manifests/" + id.String() }

// writerID returns this archive's writer id, making it on first use.
// Node returns this archive's name among the nodes that share a bucket or
// a catalog: made at random on first use and kept, so a node given a new
// disk is a new node.
func (a *Archive) Node() (string, error) { return a.writerID() }

func (a *Archive) writerID() (string, error) {
	var id string
	err := a.catalog.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSettings)
		if v := b.Get(settingWriter); v != nil {
			id = string(v)
			return nil
		}
		id = uuid.NewString()
		return b.Put(settingWriter, []byte(id))
	})
	if err != nil {
		return "", fmt.Errorf("archive: writer id: %w", err)
	}
	return id, nil
}

// ownManifest reports whether the bucket's manifest rm is this writer's
// upload of m's bytes: its writer id, or (written by an older build, when
// one writer per bucket was the rule) the key that build used for m.
func ownManifest(rm *remoteManifest, m *Manifest, writer string) bool {
	if rm.Manifest.SHA256 != m.SHA256 {
		return false
	}
	if rm.Writer != "" {
		return rm.Writer == writer
	}
	return rm.Manifest.Remote == legacyObjectKey(m)
}

// chunkStream streams m's chunk blobs from its shard in order, one blob at
// a time (bounded memory). stop ends the producer if the reader gives up.
func (a *Archive) chunkStream(m *Manifest) (r io.Reader, stop func()) {
	pr, pw := io.Pipe()
	go func() {
		var buf []byte
		for _, c := range m.Chunks {
			b, err := a.readBlobInto(m.Shard, m.owner(), c.StartTick, buf)
			if err == nil && int64(len(b)) != c.Stored {
				err = fmt.Errorf("chunk at tick %d holds %d bytes, the manifest says %d", c.StartTick, len(b), c.Stored)
			}
			if err == nil {
				_, err = pw.Write(b)
			}
			if err != nil {
				pw.CloseWithError(fmt.Errorf("recording %s: %w", m.ID, err))
				return
			}
			buf = b
		}
		pw.Close()
	}()
	return pr, func() { pr.CloseWithError(io.ErrClosedPipe) }
}

// storedSize is the sum of the chunks' stored sizes: the object's size.
func storedSize(chunks []ChunkEntry) int64 {
	var n int64
	for _, c := range chunks {
		n += c.Stored
	}
	return n
}

// sameStored reports whether two chunk tables index the same object.
func sameStored(x, y []ChunkEntry) bool {
	if len(x) != len(y) {
		return false
	}
	for i := range x {
		if x[i].StartTick != y[i].StartTick || x[i].Stored != y[i].Stored || x[i].CRC != y[i].CRC {
			return false
		}
	}
	return true
}

// putObject writes m's chunks to key with put-if-absent and confirms the
// size. An object already there is not this upload's: an error.
func (a *Archive) putObject(ctx context.Context, store blob.Store, m *Manifest, key string, size int64) error {
	r, stop := a.chunkStream(m)
	created, err := store.PutIfAbsent(ctx, key, r, size)
	stop()
	if err != nil {
		return err
	}
	if !created {
		return fmt.Errorf("object %s exists already: another upload's, left alone", key)
	}
	return statSize(ctx, store, key, size)
}

// statSize checks that key holds size bytes.
func statSize(ctx context.Context, store blob.Store, key string, size int64) error {
	got, err := store.Stat(ctx, key)
	if err != nil {
		return fmt.Errorf("object %s: %w", key, err)
	}
	if got != size {
		return fmt.Errorf("object %s holds %d bytes, want %d", key, got, size)
	}
	return nil
}

// uploadOne moves recording id to store and returns its updated manifest.
// In order: (0) a manifest already in the bucket is this node's, left by
// an upload killed after its commit point (finished now), or another
// writer's (ErrUploadConflict: the recording stays local); (1) the object,
// at a key of this upload's own, put-if-absent; (2) the manifest,
// put-if-absent: losing that race to another writer deletes only this
// upload's object and is ErrUploadConflict; (3) the object the manifest
// names is checked (written again from the local chunks if it is gone);
// (4) the catalog; (5) the local chunks are dropped.
func (a *Archive) uploadOne(ctx context.Context, store blob.Store, id uuid.UUID, opts UploadOptions) (*Manifest, error) {
	var m *Manifest
	rm := remoteManifest{Version: remoteManifestVersion}
	err := a.catalog.View(func(tx *bolt.Tx) (err error) {
		if m, err = getManifest(tx, id); err != nil {
			return err
		}
		sum, err := hexSum(m.SHA256)
		if err != nil {
			return err
		}
		t, err := takedownRefusing(tx, sum, m.Meta.ID, m.Meta.Session)
		if err == nil && t == nil {
			t, err = takedownOfIdentity(tx, m.ID, "")
		}
		if err != nil {
			return err
		}
		if t != nil {
			return fmt.Errorf("archive: upload %s: %w", id, &TakenDownError{Takedown: *t})
		}
		rm.Heads = bytes.Clone(tx.Bucket(bucketHeads).Get(id[:]))
		return nil
	})
	if err == nil {
		// Another node may not have this archive's dictionaries.
		rm.Heads, err = a.portableHeads(rm.Heads, m.HeaderBytes, m.TrailerBytes)
	}
	if err == nil {
		rm.Events, err = a.eventsValue(id)
	}
	if err != nil {
		return nil, err
	}
	if m.Remote != "" {
		return m, nil
	}
	if rm.Writer, err = a.writerID(); err != nil {
		return nil, err
	}
	// 0. A manifest already there.
	switch old, err := readRemoteManifest(ctx, store, id); {
	case err == nil && ownManifest(old, m, rm.Writer):
		return a.finishUpload(ctx, store, m, old.Manifest)
	case err == nil:
		return nil, conflict(m, old)
	case errors.Is(err, errBadManifest):
		return nil, fmt.Errorf("archive: upload %s: %w: %w", id, ErrUploadConflict, err)
	case !errors.Is(err, blob.ErrNotFound):
		return nil, fmt.Errorf("archive: upload %s: %w", id, err)
	}
	// 1. The object.
	key, size := newObjectKey(m), storedSize(m.Chunks)
	wrote := time.Now()
	if err := a.putObject(ctx, store, m, key, size); err != nil {
		return nil, fmt.Errorf("archive: upload %s: %w", id, err)
	}
	if opts.afterObject != nil {
		opts.afterObject()
	}
	if took := time.Since(wrote); took > uploadWindow {
		return nil, errors.Join(fmt.Errorf("archive: upload %s: %s from object to manifest, past the %s a bucket sweep waits for: not committed", id, took.Round(time.Second), uploadWindow),
			store.Delete(ctx, key))
	}
	// 2. The manifest: the commit point, unless the bytes were taken
	// down on another node since this upload's sync.
	switch t, err := readBucketTakedown(ctx, store, m.SHA256); {
	case err == nil:
		return nil, errors.Join(fmt.Errorf("archive: upload %s: %w", id, &TakenDownError{Takedown: *t}), store.Delete(ctx, key))
	case !errors.Is(err, blob.ErrNotFound):
		return nil, errors.Join(fmt.Errorf("archive: upload %s: %w", id, err), store.Delete(ctx, key))
	}
	up := *m
	up.Remote, up.RemoteBytes = key, size
	rm.Manifest = &up
	body, err := json.Marshal(rm)
	if err != nil {
		return nil, err
	}
	created, err := store.PutIfAbsent(ctx, manifestKey(id), bytes.NewReader(body), int64(len(body)))
	if err != nil {
		// The manifest may have been written all the same (a retried
		// request): the object stays, and a sweep deletes it past the
		// grace age if no manifest names it.
		return nil, fmt.Errorf("archive: upload %s: manifest: %w", id, err)
	}
	if !created {
		old, err := readRemoteManifest(ctx, store, id)
		if err != nil {
			return nil, fmt.Errorf("archive: upload %s: %w", id, err)
		}
		if old.Manifest.Remote != key {
			// Another writer committed first: its object and manifest
			// stay, this upload's object goes (no manifest can name it).
			return nil, errors.Join(conflict(m, old), store.Delete(ctx, key))
		}
		// The client retried a manifest PUT the server had taken.
	}
	return a.finishUpload(ctx, store, m, &up)
}

// conflict is ErrUploadConflict for m, saying what the bucket holds.
func conflict(m *Manifest, old *remoteManifest) error {
	writer := old.Writer
	if writer == "" {
		writer = "an older build"
	}
	return fmt.Errorf("archive: upload %s: %w (writer %s, object %s, sha256 %.12s…): kept local",
		m.ID, ErrUploadConflict, writer, old.Manifest.Remote, old.Manifest.SHA256)
}

// finishUpload completes the upload of m once the bucket's manifest bm,
// this writer's, is committed: bm's object is checked (written again from
// the local chunks if it is gone and they are its bytes), the catalog
// records it, and the local chunks are dropped.
func (a *Archive) finishUpload(ctx context.Context, store blob.Store, m, bm *Manifest) (*Manifest, error) {
	id := m.ID
	// 3. The object the manifest names, before the local copy goes.
	err := statSize(ctx, store, bm.Remote, bm.RemoteBytes)
	if errors.Is(err, blob.ErrNotFound) && sameStored(m.Chunks, bm.Chunks) {
		err = a.putObject(ctx, store, m, bm.Remote, bm.RemoteBytes)
	}
	if err != nil {
		return nil, fmt.Errorf("archive: upload %s: the manifest is committed but its object is not right, local chunks kept: %w", id, err)
	}
	// 4. The catalog, then 5. the local chunks.
	a.commitMu.Lock()
	err = a.catalog.Update(func(tx *bolt.Tx) error {
		cur, err := getManifest(tx, id)
		if err != nil {
			return err
		}
		if cur.SHA256 != m.SHA256 {
			return fmt.Errorf("%s: replaced during the upload: %w", id, ErrNotFound)
		}
		if !sameStored(cur.Chunks, bm.Chunks) {
			// An upload killed after its manifest, then a recompress:
			// the bucket's chunk table indexes the object.
			cur.StoredBytes += storedSize(bm.Chunks) - storedSize(cur.Chunks)
			cur.Chunks, cur.Recompressed = bm.Chunks, bm.Recompressed
		}
		cur.Remote, cur.RemoteBytes = bm.Remote, bm.RemoteBytes
		m = cur
		return putManifest(tx, cur)
	})
	a.commitMu.Unlock()
	if errors.Is(err, ErrNotFound) {
		// Deleted while uploading: the bucket must not keep it.
		return nil, errors.Join(err, a.deleteRemote(ctx, store, id, bm.Remote))
	}
	if err != nil {
		return nil, fmt.Errorf("archive: upload %s: catalog: %w", id, err)
	}
	if err := a.deleteChunks(m.Shard, m.owner()); err != nil {
		return nil, fmt.Errorf("archive: upload %s: drop local chunks (left for a repairing Check to remove): %w", id, err)
	}
	return m, nil
}

// deleteRemote removes this node's object key of recording id from the
// bucket: first the manifest if it names key (the recording is gone from
// every node once it is; a manifest naming another writer's object stays),
// then the object, then the cached chunks.
func (a *Archive) deleteRemote(ctx context.Context, store blob.Store, id uuid.UUID, key string) error {
	rm, err := readRemoteManifest(ctx, store, id)
	switch {
	case errors.Is(err, blob.ErrNotFound):
	case errors.Is(err, errBadManifest) || (err == nil && rm.Manifest.Remote == key):
		if err := store.Delete(ctx, manifestKey(id)); err != nil {
			return fmt.Errorf("archive: delete %s: %w", manifestKey(id), err)
		}
	case err != nil:
		return fmt.Errorf("archive: delete %s: %w", id, err)
	}
	if err := store.Delete(ctx, key); err != nil {
		return fmt.Errorf("archive: delete %s: %w", key, err)
	}
	a.chunkCache().Drop(id)
	return nil
}

// readRemoteManifest reads and checks manifests/<id>. A missing one is
// blob.ErrNotFound; one that is not a valid manifest is errBadManifest.
func readRemoteManifest(ctx context.Context, store blob.Store, id uuid.UUID) (*remoteManifest, error) {
	rc, err := store.Get(ctx, manifestKey(id))
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	body, err := bounded.ReadAll(rc, maxRemoteManifest, manifestKey(id))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", manifestKey(id), err)
	}
	rm := new(remoteManifest)
	if err := json.Unmarshal(body, rm); err != nil {
		return nil, fmt.Errorf("%s: %w: %w", manifestKey(id), errBadManifest, err)
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%s: %w: %s", manifestKey(id), errBadManifest, fmt.Sprintf(format, args...))
	}
	switch {
	case rm.Version != remoteManifestVersion:
		return nil, fmt.Errorf("%s: version %d, this build reads %d", manifestKey(id), rm.Version, remoteManifestVersion)
	case rm.Manifest == nil || rm.Manifest.ID != id:
		return nil, bad("names another recording")
	case blob.ValidKey(rm.Manifest.Remote) != nil || !strings.HasPrefix(rm.Manifest.Remote, "rec/"):
		return nil, bad("object key %q is not under rec/", rm.Manifest.Remote)
	case len(rm.Heads) == 0:
		return nil, bad("no header and trailer")
	}
	if sum := storedSize(rm.Manifest.Chunks); sum != rm.Manifest.RemoteBytes {
		return nil, bad("chunks add up to %d bytes, the object to %d", sum, rm.Manifest.RemoteBytes)
	}
	return rm, nil
}
