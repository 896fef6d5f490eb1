// The bucket seen as a whole: Check's look for orphans in it, and a second
// node catching up on what the writing node uploaded.

package archive

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/replayarchive/replay/archive/blob"
	bolt "go.etcd.io/bbolt"
)

// RemoteCheck is what Check found in the remote store.
type RemoteCheck struct {
	Objects   int `json:"objects"`
	Manifests int `json:"manifests"`
	// Orphans are objects no manifest names (an upload killed before its
	// commit point, the loser of two writers' race, or a delete killed
	// after it) older than the grace age; Repair deletes them.
	Orphans     []string `json:"orphans"`
	OrphanBytes int64    `json:"orphan_bytes"`
	// Missing are manifest objects older than the grace age whose object
	// is gone: the recording cannot be read on any node. Repair deletes
	// them.
	Missing []string `json:"missing"`
	// Young are would-be orphans and missing manifests younger than the
	// grace age: most likely an upload or a delete in flight on another
	// writer. They are left alone.
	Young []string `json:"young,omitempty"`
	// Unreadable are manifest objects that could not be read or are not
	// manifests: their recording's objects are left alone.
	Unreadable []string `json:"unreadable,omitempty"`
	// Stray are keys that are neither (not written by an archive).
	Stray    []string `json:"stray,omitempty"`
	Repaired bool     `json:"repaired"`
}

// ok reports whether the bucket holds nothing amiss (nil: no bucket).
func (c *RemoteCheck) ok() bool {
	return c == nil || (len(c.Orphans) == 0 && len(c.Missing) == 0 && len(c.Unreadable) == 0)
}

// keyID returns the recording id a bucket key ends with (both layouts of
// rec/ end with it, as manifests/ does).
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

// listInfos lists the objects under prefix by recording id (several per
// id under rec/: the uploads of several writers); other keys go to stray.
func listInfos(ctx context.Context, store blob.Store, prefix string, stray *[]string) (map[uuid.UUID][]blob.Info, error) {
	out := map[uuid.UUID][]blob.Info{}
	err := store.ListInfo(ctx, prefix, func(o blob.Info) error {
		if id, ok := keyID(o.Key); ok {
			out[id] = append(out[id], o)
		} else {
			*stray = append(*stray, o.Key)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("archive: list %s in the remote store: %w", prefix, err)
	}
	return out, nil
}

// checkRemote lists the bucket: objects no manifest names are orphans,
// manifest objects whose object is gone are missing, and every remote
// recording of this catalog must have an object of its size. With repair
// (on a node that may write to the bucket) orphans and manifests without
// objects are deleted, but only those older than grace (0:
// DefaultOrphanGrace) by the archive's clock: an upload on another writer
// between its object and its manifest is never taken for an orphan, nor a
// manifest it committed after the listing of objects. Objects are listed
// before manifests for that; an upload commits its manifest within
// uploadWindow of its object, well inside the grace. No remote store: nil.
func (a *Archive) checkRemote(ctx context.Context, manifests []*Manifest, repair bool, grace time.Duration) (*RemoteCheck, error) {
	if grace == 0 {
		grace = DefaultOrphanGrace
	}
	if grace < MinOrphanGrace {
		return nil, fmt.Errorf("archive: check: orphan grace %s is shorter than %s: uploads in flight on other writers would be taken for orphans", grace, MinOrphanGrace)
	}
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
	cutoff := a.opts.Now().Add(-grace) // before the listings start
	objs, err := listInfos(ctx, store, "rec/", &rc.Stray)
	if err != nil {
		return nil, err
	}
	mans, err := listInfos(ctx, store, "manifests/", &rc.Stray)
	if err != nil {
		return nil, err
	}
	rc.Manifests = len(mans)
	for _, o := range objs {
		rc.Objects += len(o)
	}
	known := map[uuid.UUID]string{}
	for _, m := range manifests {
		if m.Remote != "" {
			known[m.ID] = m.Remote
		}
	}
	// The key each manifest names: this catalog's when it is the id's one
	// object, else the manifest's own word (one GET).
	named := map[uuid.UUID]string{}
	for id, ms := range mans {
		if len(objs[id]) == 0 {
			continue
		}
		if k, ok := known[id]; ok && len(objs[id]) == 1 && objs[id][0].Key == k {
			named[id] = k
			continue
		}
		rm, err := readRemoteManifest(ctx, store, id)
		switch {
		case errors.Is(err, blob.ErrNotFound): // deleted since the listing
		case err != nil:
			rc.Unreadable = append(rc.Unreadable, fmt.Sprintf("%s: %v", ms[0].Key, err))
			named[id] = "" // its objects are left alone
		default:
			named[id] = rm.Manifest.Remote
		}
	}
	var orphans, missing []string
	old := func(o blob.Info) bool {
		if o.Modified.Before(cutoff) {
			return true
		}
		rc.Young = append(rc.Young, o.Key)
		return false
	}
	for id, list := range objs {
		key, ok := named[id]
		if ok && key == "" {
			continue // unreadable manifest
		}
		for _, o := range list {
			if o.Key != key && old(o) {
				orphans = append(orphans, o.Key)
				rc.OrphanBytes += o.Size
			}
		}
		if ok && !slices.ContainsFunc(list, func(o blob.Info) bool { return o.Key == key }) && old(mans[id][0]) {
			missing = append(missing, mans[id][0].Key)
		}
	}
	for id, ms := range mans {
		if len(objs[id]) == 0 && old(ms[0]) {
			missing = append(missing, ms[0].Key)
		}
	}
	slices.Sort(orphans)
	slices.Sort(missing)
	slices.Sort(rc.Young)
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
	// AddedIDs are the recordings added, for the moderators' marks a
	// shared catalog holds for them.
	AddedIDs []uuid.UUID `json:"-"`
	// Removed recordings are gone from the bucket (deleted, taken down or
	// pruned on the writing node).
	Removed int `json:"removed"`
	// Skipped manifests were taken down or deleted here, or hold bytes this
	// catalog has under another id.
	Skipped int `json:"skipped"`
	// Takedowns are the bucket's takedowns (takedowns/<sha256>, made on
	// another node) recorded here; the recordings they name count as
	// Removed.
	Takedowns int `json:"takedowns,omitempty"`
}

// catchUpBatch is how many manifests CatchUp adds per catalog transaction.
const catchUpBatch = 64

// CatchUp brings the catalog in line with the bucket's manifests: a
// manifest it does not know is added (its chunks stay remote, read through
// the cache), and a remote recording whose manifest is gone is removed. It
// is how a second node lists, searches and exports what the writing node
// uploads. Recordings kept locally are not touched; a manifest whose bytes
// were taken down here, or that is still being deleted here, is skipped.
// Each change goes to the change log, so the search index follows. First
// the bucket's takedowns (takedowns/<sha256>) this catalog has not
// recorded are recorded, and the recordings they name dropped at once
// (syncTakedowns).
func (a *Archive) CatchUp(ctx context.Context) (*CatchUpReport, error) {
	if a.opts.ReadOnly {
		return nil, errors.New("archive: catch up: opened read-only")
	}
	store, cfg, err := a.remote(ctx)
	if err != nil {
		return nil, err
	}
	now := a.opts.Now()
	var expired []*remoteManifest // taken down, past their grace
	rep := &CatchUpReport{}
	recorded, dropped, err := a.syncTakedowns(ctx, store)
	rep.Takedowns, rep.Removed = recorded, len(dropped)
	if err != nil {
		return rep, err
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
	var batch []*remoteManifest
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		a.commitMu.Lock()
		defer a.commitMu.Unlock()
		err := a.catalog.Update(func(tx *bolt.Tx) error {
			for _, rm := range batch {
				added, t, err := putRemoteRecording(tx, rm)
				if err != nil {
					return fmt.Errorf("recording %s: %w", rm.Manifest.ID, err)
				}
				if t != nil && !t.PurgeAt.After(now) {
					expired = append(expired, rm)
				}
				if added {
					rep.Added++
					rep.AddedIDs = append(rep.AddedIDs, rm.Manifest.ID)
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
	// The bucket's copies of what was taken down, once past the grace
	// period, by a node that may write: the node that took them down may
	// only read the bucket, or be gone.
	if !a.remoteReadOnly(store, cfg) {
		for _, rm := range expired {
			if err := a.deleteRemote(ctx, store, rm.Manifest.ID, rm.Manifest.Remote); err != nil {
				return rep, fmt.Errorf("archive: catch up: taken down: %w", err)
			}
		}
	}
	return rep, nil
}

// putRemoteRecording adds a recording from its bucket manifest inside tx,
// unless its bytes or identity (its id, the id its file names, its
// session) were taken down here, its id is being deleted here, or its
// bytes are archived under another id. It reports whether it added it,
// and the takedown that refused it.
func putRemoteRecording(tx *bolt.Tx, rm *remoteManifest) (added bool, refused *Takedown, err error) {
	m := rm.Manifest
	sum, err := hexSum(m.SHA256)
	if err != nil {
		return false, nil, err
	}
	t, err := takedownRefusing(tx, sum, m.Meta.ID, m.Meta.Session)
	if err == nil && t == nil {
		t, err = takedownOfIdentity(tx, m.ID, "")
	}
	if err != nil {
		return false, nil, err
	}
	if t != nil {
		return false, t, coverID(tx, t, m.ID)
	}
	owner := m.owner()
	if tx.Bucket(bucketTombstones).Get(owner[:]) != nil || tx.Bucket(bucketSources).Get(sum) != nil {
		return false, nil, nil
	}
	if tx.Bucket(bucketRecordings).Get(m.ID[:]) != nil {
		return false, nil, nil
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
			return false, nil, err
		}
	}
	if err := putManifest(tx, m); err != nil {
		return false, nil, err
	}
	return true, nil, appendChange(tx, ChangePut, m.ID)
}

// hexSum decodes a manifest's hex sha256.
func hexSum(s string) ([]byte, error) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != 32 {
		return nil, fmt.Errorf("bad sha256 %q", s)
	}
	return b, nil
}
