// Takedowns in the bucket: a node that takes a recording down while it
// may write to the bucket puts takedowns/<sha256> there (put-if-absent,
// the JSON of its Takedown) before its own catalog changes, and every
// node's CatchUp (and every Upload, first) records each bucket takedown it
// has not seen in its own takedowns bucket and drops the recordings it
// names. So a takedown travels: other nodes refuse the bytes and identity
// at ingest, upload and live growth, and answer 410 for the id.
//
// A takedown on a node that only reads the bucket is refused
// (ErrReadingNode). Lifting (or undoing) a takedown on a writing node
// deletes takedowns/<sha256> first; other nodes keep their own record
// until an admin lifts it there too: a sync never lifts anything. A node
// that lifts a takedown the bucket still holds records it again at its
// next sync.

package archive

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"

	"github.com/google/uuid"
	"github.com/replayarchive/replay/archive/blob"
	"github.com/replayarchive/replay/internal/bounded"
	bolt "go.etcd.io/bbolt"
)

// ErrReadingNode is the error of a takedown on a node that only reads the
// bucket: it could not tell the other nodes.
var ErrReadingNode = errors.New("this node only reads the bucket: take it down on a writing node")

// maxBucketTakedown bounds what a node reads for one takedown object.
const maxBucketTakedown = 1 << 20

// takedownKey is the bucket key of the takedown of the bytes whose hex
// sha256 is sha.
func takedownKey(sha string) string { return "takedowns/" + sha }

// takedownStore returns the store a takedown made here is written to: nil
// without a remote store, ErrReadingNode on a node that only reads it.
func (a *Archive) takedownStore(ctx context.Context) (blob.Store, error) {
	store, cfg, err := a.remote(ctx)
	if errors.Is(err, ErrNoRemote) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if a.remoteReadOnly(store, cfg) {
		return nil, ErrReadingNode
	}
	return store, nil
}

// putBucketTakedown writes t to the bucket, unless a takedown of the same
// bytes is there already.
func putBucketTakedown(ctx context.Context, store blob.Store, t *Takedown) error {
	body, err := json.Marshal(t)
	if err != nil {
		return err
	}
	if _, err := store.PutIfAbsent(ctx, takedownKey(t.SHA256), bytes.NewReader(body), int64(len(body))); err != nil {
		return fmt.Errorf("write %s to the bucket: %w", takedownKey(t.SHA256), err)
	}
	return nil
}

// deleteBucketTakedown deletes the takedown of sha from the bucket when
// this node may write to it (lift and undo on a writing node).
func (a *Archive) deleteBucketTakedown(ctx context.Context, sha string) error {
	store, err := a.takedownStore(ctx)
	if store == nil || errors.Is(err, ErrReadingNode) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := store.Delete(ctx, takedownKey(sha)); err != nil {
		return fmt.Errorf("delete %s from the bucket: %w", takedownKey(sha), err)
	}
	return nil
}

// readBucketTakedown reads the takedown object of sum.
func readBucketTakedown(ctx context.Context, store blob.Store, sha string) (*Takedown, error) {
	key := takedownKey(sha)
	rc, err := store.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	body, err := bounded.ReadAll(rc, maxBucketTakedown, key)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", key, err)
	}
	t := new(Takedown)
	if err := json.Unmarshal(body, t); err != nil {
		return nil, fmt.Errorf("%s: not a takedown: %w", key, err)
	}
	if t.SHA256 != sha {
		return nil, fmt.Errorf("%s: names sha256 %q", key, t.SHA256)
	}
	return t, nil
}

// syncTakedowns records each takedown in the bucket that this catalog has
// not recorded (as purged: this node keeps no bytes of it for an undo) and
// drops the recordings it names, by bytes or id: a remote one from the
// catalog, a local one (and its chunks) as a takedown does. It returns
// how many takedowns it recorded and the recordings it dropped.
func (a *Archive) syncTakedowns(ctx context.Context, store blob.Store) (recorded int, dropped []*Manifest, err error) {
	var shas []string
	err = store.List(ctx, "takedowns/", func(key string, _ int64) error {
		sha := path.Base(key)
		if sum, err := hex.DecodeString(sha); err == nil && len(sum) == 32 && key == takedownKey(sha) {
			shas = append(shas, sha)
		}
		return nil
	})
	if err != nil {
		return 0, nil, fmt.Errorf("archive: list takedowns/ in the remote store: %w", err)
	}
	var unseen []string
	err = a.catalog.View(func(tx *bolt.Tx) error {
		for _, sha := range shas {
			sum, _ := hex.DecodeString(sha)
			if tx.Bucket(bucketTakedowns).Get(sum) == nil {
				unseen = append(unseen, sha)
			}
		}
		return nil
	})
	if err != nil || len(unseen) == 0 {
		return 0, nil, err
	}
	var ts []*Takedown
	for _, sha := range unseen {
		t, err := readBucketTakedown(ctx, store, sha)
		if errors.Is(err, blob.ErrNotFound) {
			continue // lifted since the listing
		}
		if err != nil {
			return 0, nil, fmt.Errorf("archive: takedowns: %w", err)
		}
		ts = append(ts, t)
	}
	return a.RecordTakedowns(ctx, ts)
}

// RecordTakedowns records each of ts (takedowns made on another node, as
// purged: this node keeps no bytes of them for an undo) that this catalog
// has not recorded, and drops the recordings each names, by bytes or id: a
// remote one from the catalog, a local one (and its chunks) as a takedown
// does. It returns how many it recorded and the recordings it dropped.
//
// A takedown past its grace period also takes the bucket's copy of what it
// names, on a node that may write to the bucket: the node that made it may
// have been one that only reads it (through a shared catalog).
func (a *Archive) RecordTakedowns(ctx context.Context, ts []*Takedown) (recorded int, dropped []*Manifest, err error) {
	now := a.opts.Now()
	purge := map[string]bool{}
	for _, t := range ts {
		purge[t.SHA256] = t.State == TakedownPurged || !t.PurgeAt.After(now)
		t.State = TakedownPurged
		if t.PurgeAt.IsZero() {
			t.PurgeAt = t.At
		}
	}
	local := false
	a.commitMu.Lock()
	err = a.catalog.Update(func(tx *bolt.Tx) error {
		for _, t := range ts {
			sum, err := hexSum(t.SHA256)
			if err != nil {
				return err
			}
			if tx.Bucket(bucketTakedowns).Get(sum) != nil {
				continue
			}
			recorded++
			var ids []uuid.UUID
			if v := tx.Bucket(bucketSources).Get(sum); len(v) == 16 {
				ids = append(ids, uuid.UUID(v))
			}
			if len(ids) == 0 || ids[0] != t.ID {
				ids = append(ids, t.ID)
			}
			for _, id := range ids {
				m, err := getManifest(tx, id)
				if errors.Is(err, ErrNotFound) {
					continue
				}
				if err != nil {
					return err
				}
				if err := coverID(tx, t, m.ID); err != nil {
					return err
				}
				switch {
				case m.Remote != "":
					// The writing node deletes the bucket's copy.
					if err = removeCatalogEntries(tx, m); err == nil {
						err = appendChange(tx, ChangeDelete, m.ID)
					}
				case m.Hold != nil:
					err = hideTakenDown(tx, m) // a hold keeps the bytes
				default:
					err = markRemoved(tx, m)
					local = true
				}
				if err != nil {
					return err
				}
				dropped = append(dropped, m)
			}
			// After the drops, which forget the sizes of their sources.
			if err := putTakedown(tx, *t); err != nil {
				return err
			}
		}
		return nil
	})
	a.commitMu.Unlock()
	if err != nil {
		return 0, nil, fmt.Errorf("archive: takedowns: %w", err)
	}
	var bucket []*Manifest
	for _, m := range dropped {
		if m.Remote != "" {
			a.chunkCache().Drop(m.ID)
			if purge[m.SHA256] {
				bucket = append(bucket, m)
			}
		}
	}
	if len(bucket) > 0 {
		store, cfg, err := a.remote(ctx)
		if err == nil && !a.remoteReadOnly(store, cfg) {
			for _, m := range bucket {
				if err := a.deleteRemote(ctx, store, m.ID, m.Remote); err != nil {
					return recorded, dropped, fmt.Errorf("archive: takedowns: %w", err)
				}
			}
		}
	}
	if local {
		if _, err := a.Sweep(ctx); err != nil {
			return recorded, dropped, fmt.Errorf("archive: takedowns: %w", err)
		}
	}
	return recorded, dropped, nil
}
