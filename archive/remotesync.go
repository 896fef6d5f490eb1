// The bucket seen as a whole: Check's look for orphans in it, and a second
// node catching up on what the writing node uploaded.

package archive

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"path"

	"github.com/google/uuid"
	"github.com/replayarchive/replay/archive/blob"
	bolt "go.etcd.io/bbolt"
)

// RemoteCheck is what Check found in the remote store.
type RemoteCheck struct {
	Objects   int `json:"objects"`
	Manifests int `json:"manifests"`
	// Orphans are objects without a manifest object (an upload killed
	// before its commit point, or a delete killed after it).
	Orphans     []string `json:"orphans"`
	OrphanBytes int64    `json:"orphan_bytes"`
	// Missing are manifest objects whose object is gone: the recording
	// cannot be read on any node.
	Missing []string `json:"missing"`
	// Stray are keys that are neither (not written by an archive).
	Stray    []string `json:"stray,omitempty"`
	Repaired bool     `json:"repaired"`
}

// ok reports whether the bucket holds nothing amiss (nil: no bucket).
func (c *RemoteCheck) ok() bool {
	return c == nil || (len(c.Orphans) == 0 && len(c.Missing) == 0)
}

// keyID returns the recording id a bucket key ends with.
func keyID(key string) (uuid.UUID, bool) {
	id, err := uuid.Parse(path.Base(key))
	return id, err == nil && path.Base(key) == id.String()
}

// listIDs lists the recording ids under prefix, with their keys and sizes;
// other keys go to stray.
func listIDs(ctx context.Context, store blob.Store, prefix string, stray *[]string) (map[uuid.UUID]string, map[uuid.UUID]int64, error) {
	keys, sizes := map[uuid.UUID]string{}, map[uuid.UUID]int64{}
	err := store.List(ctx, prefix, func(key string, size int64) error {
		if id, ok := keyID(key); ok {
			keys[id], sizes[id] = key, size
		} else if stray != nil {
			*stray = append(*stray, key)
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("archive: list %s in the remote store: %w", prefix, err)
	}
	return keys, sizes, nil
}

// checkRemote lists the bucket: objects without a manifest object are
// orphans, manifest objects without their object are missing, and every
// remote recording of this catalog must have an object of its size. With
// repair (on a node that may write to the bucket) orphans and manifests
// without objects are deleted. No remote store: nil.
func (a *Archive) checkRemote(ctx context.Context, manifests []*Manifest, repair bool) (*RemoteCheck, error) {
	store, cfg, err := a.remote(ctx)
	if errors.Is(err, ErrNoRemote) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	a.tier.uploadMu.Lock()
	defer a.tier.uploadMu.Unlock()
	rc := &RemoteCheck{Orphans: []string{}, Missing: []string{}}
	man, _, err := listIDs(ctx, store, "manifests/", &rc.Stray)
	if err != nil {
		return nil, err
	}
	objs, sizes, err := listIDs(ctx, store, "rec/", &rc.Stray)
	if err != nil {
		return nil, err
	}
	rc.Objects, rc.Manifests = len(objs), len(man)
	var orphans, missing []string
	for id, key := range objs {
		if _, ok := man[id]; !ok {
			orphans = append(orphans, key)
			rc.OrphanBytes += sizes[id]
		}
	}
	for id, key := range man {
		if _, ok := objs[id]; !ok {
			missing = append(missing, key)
		}
	}
	rc.Orphans = append(rc.Orphans, orphans...)
	rc.Missing = append(rc.Missing, missing...)
	if repair && !a.remoteReadOnly(store, cfg) {
		for _, key := range append(orphans, missing...) {
			if err := store.Delete(ctx, key); err != nil {
				return nil, fmt.Errorf("archive: repair: %w", err)
			}
			if id, ok := keyID(key); ok {
				a.chunkCache().Drop(id)
			}
		}
		rc.Repaired = true
	}
	return rc, nil
}

// checkRemoteObject checks that a remote recording's object is there,
// with the size its manifest says.
func (a *Archive) checkRemoteObject(ctx context.Context, m *Manifest) error {
	store, _, err := a.remote(ctx)
	if err != nil {
		return err
	}
	size, err := store.Stat(ctx, m.Remote)
	if err != nil {
		return fmt.Errorf("remote object: %w", err)
	}
	if size != m.RemoteBytes {
		return fmt.Errorf("remote object %s holds %d bytes, the manifest says %d", m.Remote, size, m.RemoteBytes)
	}
	return nil
}

// CatchUpReport says what CatchUp changed in the catalog.
type CatchUpReport struct {
	// Added recordings were uploaded by another node since the last catch-up.
	Added int `json:"added"`
	// Removed recordings are gone from the bucket (deleted, taken down or
	// pruned on the writing node).
	Removed int `json:"removed"`
	// Skipped manifests were taken down or deleted here, or hold bytes this
	// catalog has under another id.
	Skipped int `json:"skipped"`
}

// catchUpBatch is how many manifests CatchUp adds per catalog transaction.
const catchUpBatch = 64

// CatchUp brings the catalog in line with the bucket's manifests: a
// manifest it does not know is added (its chunks stay remote, read through
// the cache), and a remote recording whose manifest is gone is removed. It
// is how a second node lists, searches and exports what the writing node
// uploads. Recordings kept locally are not touched; a manifest whose bytes
// were taken down here, or that is still being deleted here, is skipped.
// Each change goes to the change log, so the search index follows.
func (a *Archive) CatchUp(ctx context.Context) (*CatchUpReport, error) {
	if a.opts.ReadOnly {
		return nil, errors.New("archive: catch up: opened read-only")
	}
	store, _, err := a.remote(ctx)
	if err != nil {
		return nil, err
	}
	man, _, err := listIDs(ctx, store, "manifests/", nil)
	if err != nil {
		return nil, err
	}
	known := map[uuid.UUID]bool{}
	var gone []uuid.UUID
	err = a.List(ctx, func(m *Manifest) error {
		known[m.ID] = true
		if _, ok := man[m.ID]; !ok && m.Remote != "" {
			gone = append(gone, m.ID)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	rep := &CatchUpReport{}
	var batch []*remoteManifest
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		a.commitMu.Lock()
		defer a.commitMu.Unlock()
		err := a.catalog.Update(func(tx *bolt.Tx) error {
			for _, rm := range batch {
				added, err := putRemoteRecording(tx, rm)
				if err != nil {
					return fmt.Errorf("recording %s: %w", rm.Manifest.ID, err)
				}
				if added {
					rep.Added++
				} else {
					rep.Skipped++
				}
			}
			return nil
		})
		batch = batch[:0]
		if err != nil {
			return fmt.Errorf("archive: catch up: %w", err)
		}
		return nil
	}
	for id := range man {
		if known[id] {
			continue
		}
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		rm, err := readRemoteManifest(ctx, store, id)
		if errors.Is(err, blob.ErrNotFound) {
			continue // deleted since the listing
		}
		if err != nil {
			return rep, fmt.Errorf("archive: catch up: %w", err)
		}
		if batch = append(batch, rm); len(batch) == catchUpBatch {
			if err := flush(); err != nil {
				return rep, err
			}
		}
	}
	if err := flush(); err != nil {
		return rep, err
	}
	if len(gone) > 0 {
		a.commitMu.Lock()
		err := a.catalog.Update(func(tx *bolt.Tx) error {
			for _, id := range gone {
				m, err := getManifest(tx, id)
				if errors.Is(err, ErrNotFound) {
					continue
				}
				if err != nil {
					return err
				}
				if err := removeCatalogEntries(tx, m); err != nil {
					return err
				}
				if err := appendChange(tx, ChangeDelete, id); err != nil {
					return err
				}
				rep.Removed++
			}
			return nil
		})
		a.commitMu.Unlock()
		if err != nil {
			return rep, fmt.Errorf("archive: catch up: %w", err)
		}
		for _, id := range gone {
			a.chunkCache().Drop(id)
		}
	}
	return rep, nil
}

// putRemoteRecording adds a recording from its bucket manifest inside tx,
// unless its bytes or identity (its id, the id its file names, its
// session) were taken down here, its id is being deleted here, or its
// bytes are archived under another id. It reports whether it added it.
func putRemoteRecording(tx *bolt.Tx, rm *remoteManifest) (bool, error) {
	m := rm.Manifest
	sum, err := hexSum(m.SHA256)
	if err != nil {
		return false, err
	}
	t, err := takedownRefusing(tx, sum, m.Meta.ID, m.Meta.Session)
	if err == nil && t == nil {
		t, err = takedownOfIdentity(tx, m.ID, "")
	}
	if err != nil {
		return false, err
	}
	if t != nil {
		return false, coverID(tx, t, m.ID)
	}
	owner := m.owner()
	if tx.Bucket(bucketTombstones).Get(owner[:]) != nil || tx.Bucket(bucketSources).Get(sum) != nil {
		return false, nil
	}
	if tx.Bucket(bucketRecordings).Get(m.ID[:]) != nil {
		return false, nil
	}
	puts := []struct{ bucket, key, value []byte }{
		{bucketHeads, m.ID[:], rm.Heads},
		{bucketSources, sum, m.ID[:]},
		{bucketSourceSizes, sourceSizeKey(m.NativeBytes, sum), nil},
	}
	if len(rm.Events) > 0 {
		puts = append(puts, struct{ bucket, key, value []byte }{bucketEvents, m.ID[:], rm.Events})
	}
	if m.Meta.Session != "" {
		puts = append(puts, struct{ bucket, key, value []byte }{bucketSessions, sessionKey(m.Meta.Session, m.ID), nil})
	}
	for _, p := range puts {
		if err := tx.Bucket(p.bucket).Put(p.key, p.value); err != nil {
			return false, err
		}
	}
	if err := putManifest(tx, m); err != nil {
		return false, err
	}
	return true, appendChange(tx, ChangePut, m.ID)
}

// hexSum decodes a manifest's hex sha256.
func hexSum(s string) ([]byte, error) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != 32 {
		return nil, fmt.Errorf("bad sha256 %q", s)
	}
	return b, nil
}
