// Consistency checks: every manifest has its heads and chunks, every chunk
// in a shard belongs to a manifest, and the catalog's side buckets point at
// live recordings. With ReadData every chunk is decompressed and every
// recording's sha256 verified; with Repair, orphans are removed.

package archive

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/google/uuid"
	bolt "go.etcd.io/bbolt"
)

// CheckOptions choose how deep Check looks and whether it repairs.
type CheckOptions struct {
	// ReadData decompresses every chunk and verifies every recording's
	// sha256, not just that its chunks exist.
	ReadData bool
	// Repair deletes orphaned chunks and dangling catalog entries,
	// finishes interrupted deletes and rebuilds the reference counts of
	// shared blobs and the index of sizes.
	Repair bool
	// OrphanGrace is how old a bucket object no manifest names (or a
	// manifest whose object is gone) must be before Repair deletes it:
	// younger ones may be another writer's upload in flight. 0 means
	// DefaultOrphanGrace; less than MinOrphanGrace is refused.
	OrphanGrace time.Duration
	// Progress, if set, is called after each recording is checked.
	Progress func(done, total int)
}

// CheckReport says what Check found.
type CheckReport struct {
	Recordings int `json:"recordings"`
	Chunks     int `json:"chunks"`
	// Problems lists what is wrong with recordings that exist (missing or
	// corrupt chunks, checksum mismatches). Repair does not fix these.
	Problems []string `json:"problems"`
	// Orphans counts chunks no manifest references (leftovers of a crash
	// during ingest or delete); OrphanBytes their stored size.
	Orphans     int   `json:"orphan_chunks"`
	OrphanBytes int64 `json:"orphan_bytes"`
	// Miscounted counts reference entries of shared blobs that do not
	// match the references the chunks hold (shared.go); Repair rebuilds
	// them from the chunks.
	Miscounted int `json:"miscounted_references"`
	// MiscountedSizes counts the index of the sources' sizes
	// (Archive.MayHoldSize) gets wrong: sources it lacks, which an
	// ingest would parse before finding them duplicates, and sizes of
	// nothing, which cost a hashing pass. Repair rebuilds it.
	MiscountedSizes int `json:"miscounted_sizes"`
	// Dangling lists catalog entries that point at missing recordings.
	Dangling []string `json:"dangling"`
	// PendingDeletes counts tombstones not yet swept.
	PendingDeletes int `json:"pending_deletes"`
	// Spools counts the upload spools a killed upload left (spool.go):
	// Repair removes them, as a writable open does.
	Spools   Spools `json:"leftover_spools"`
	Repaired bool   `json:"repaired"`
	// Remote is what Check found in the remote store, nil without one.
	Remote *RemoteCheck `json:"remote,omitempty"`
}

// OK reports whether nothing is wrong.
func (r *CheckReport) OK() bool {
	return len(r.Problems) == 0 && r.Orphans == 0 && r.Miscounted == 0 && r.MiscountedSizes == 0 && len(r.Dangling) == 0 && r.PendingDeletes == 0 && r.Spools.Count == 0 && r.Remote.ok()
}

// Check verifies the archive.
func (a *Archive) Check(ctx context.Context, opts CheckOptions) (*CheckReport, error) {
	rep := &CheckReport{Problems: []string{}, Dangling: []string{}}
	if opts.Repair {
		if _, err := a.Sweep(ctx); err != nil {
			return nil, err
		}
	}
	var manifests []*Manifest
	if err := a.List(ctx, func(m *Manifest) error {
		manifests = append(manifests, m)
		return nil
	}); err != nil {
		return nil, err
	}
	kept, err := a.keptForPurge()
	if err != nil {
		return nil, err
	}
	owned := ownedKeys(append(kept, manifests...))
	rep.Recordings = len(manifests)
	a.dicts.mu.Lock()
	for _, d := range a.dicts.damaged {
		rep.Problems = append(rep.Problems, "header dictionary: "+d)
	}
	a.dicts.mu.Unlock()
	for i, m := range manifests {
		rep.Chunks += len(m.Chunks)
		if err := a.checkRecording(ctx, m, opts.ReadData); err != nil {
			rep.Problems = append(rep.Problems, fmt.Sprintf("%s: %v", m.ID, err))
		}
		if opts.Progress != nil {
			opts.Progress(i+1, len(manifests))
		}
	}

	// Orphans: chunk keys in shards that no manifest owns.
	shards, err := a.Shards()
	if err != nil {
		return nil, err
	}
	for _, name := range shards {
		keys := owned[name]
		var orphans [][]byte
		var orphanBytes []int64
		// Counted in a read transaction; only a shard that needs it is
		// written (and synced), and recounted there under the write lock.
		miscounted := 0
		err = a.viewShard(name, func(tx *bolt.Tx) (err error) {
			miscounted, err = recount(tx, false)
			return err
		})
		if err == nil && opts.Repair && miscounted > 0 {
			err = a.updateShard(name, false, func(tx *bolt.Tx) (err error) {
				miscounted, err = recount(tx, true)
				return err
			})
		}
		rep.Miscounted += miscounted
		if err != nil && !errors.Is(err, errNoShard) {
			return nil, fmt.Errorf("archive: check the shared blobs of shard %s: %w", name, err)
		}
		busy := a.writing.snapshot()
		err := a.viewShard(name, func(tx *bolt.Tx) error {
			b := tx.Bucket(bucketChunks)
			if b == nil {
				return nil
			}
			return b.ForEach(func(k, v []byte) error {
				if !isOrphan(tx, k, keys, busy) {
					return nil
				}
				orphans = append(orphans, bytes.Clone(k))
				orphanBytes = append(orphanBytes, int64(len(v)))
				return nil
			})
		})
		if err != nil {
			return nil, fmt.Errorf("archive: check shard %s: %w", name, err)
		}
		if opts.Repair && len(orphans) > 0 {
			orphans, orphanBytes, err = a.removeOrphans(ctx, name, orphans, orphanBytes)
			if err != nil {
				return nil, fmt.Errorf("archive: repair shard %s: %w", name, err)
			}
		}
		rep.Orphans += len(orphans)
		for _, n := range orphanBytes {
			rep.OrphanBytes += n
		}
	}

	// Dangling catalog entries and unswept tombstones, each time in one
	// transaction that reads the recordings too: a recording committed
	// since the list above has its entries and its manifest, and is no
	// dangling one. Only a repair that has something to delete writes.
	var dangling []catalogEntry
	err = a.catalog.View(func(tx *bolt.Tx) (err error) {
		dangling, err = danglingEntries(tx)
		rep.PendingDeletes = tx.Bucket(bucketTombstones).Stats().KeyN
		return err
	})
	if err == nil && opts.Repair && len(dangling) > 0 {
		err = a.catalog.Update(func(tx *bolt.Tx) (err error) {
			if dangling, err = danglingEntries(tx); err != nil {
				return err
			}
			for _, d := range dangling {
				if err := tx.Bucket(d.bucket).Delete(d.key); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err == nil {
		err = a.catalog.View(func(tx *bolt.Tx) (err error) {
			rep.MiscountedSizes, err = recountSizes(tx, false)
			return err
		})
	}
	if err == nil && opts.Repair && rep.MiscountedSizes > 0 {
		err = a.catalog.Update(func(tx *bolt.Tx) (err error) {
			rep.MiscountedSizes, err = recountSizes(tx, true)
			return err
		})
	}
	if err != nil {
		return nil, fmt.Errorf("archive: check catalog: %w", err)
	}
	for _, d := range dangling {
		rep.Dangling = append(rep.Dangling, fmt.Sprintf("%s/%x", d.bucket, d.key))
	}
	if rep.Remote, err = a.checkRemote(ctx, manifests, opts.Repair, opts.OrphanGrace); err != nil {
		return nil, err
	}
	if rep.Spools, err = a.leftoverSpools(opts.Repair); err != nil {
		return nil, err
	}
	rep.Repaired = opts.Repair
	return rep, nil
}

// catalogEntry names one key of a catalog bucket.
type catalogEntry struct{ bucket, key []byte }

// danglingEntries returns the heads, events, sources and sessions entries
// of tx that belong to no recording of tx (a recording taken down and kept
// for its grace period keeps its heads and events).
func danglingEntries(tx *bolt.Tx) ([]catalogEntry, error) {
	recs := tx.Bucket(bucketRecordings)
	kept := tx.Bucket(bucketTakenDown)
	var dangling []catalogEntry
	for _, bn := range [][]byte{bucketHeads, bucketEvents, bucketSources, bucketSessions} {
		err := tx.Bucket(bn).ForEach(func(k, v []byte) error {
			var id uuid.UUID
			switch {
			case bytes.Equal(bn, bucketSources) && len(v) == 16:
				id = uuid.UUID(v)
			case bytes.Equal(bn, bucketSessions) && len(k) >= 17:
				id = uuid.UUID(k[len(k)-16:])
			case bytes.Equal(bn, bucketEvents):
				id, _ = eventKeyID(k)
			case len(k) == 16:
				id = uuid.UUID(k)
			}
			if recs.Get(id[:]) == nil && (kept == nil || kept.Get(id[:]) == nil) {
				dangling = append(dangling, catalogEntry{bn, bytes.Clone(k)})
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return dangling, nil
}

// recountSizes compares the index of sizes with the sources and
// takedowns of tx and returns how many of its keys are missing or extra;
// with fix it also puts and deletes them.
func recountSizes(tx *bolt.Tx, fix bool) (int, error) {
	sizes := tx.Bucket(bucketSourceSizes)
	if sizes == nil {
		return 0, nil // read-only and older: the next writable Open builds it
	}
	want := map[string]bool{}
	if err := eachSourceSize(tx, func(key []byte) error { want[string(key)] = true; return nil }); err != nil {
		return 0, err
	}
	extra, err := keyDiff(sizes, want)
	n := len(want) + len(extra)
	if err != nil || !fix {
		return n, err
	}
	return n, applyKeyDiff(sizes, want, extra)
}

// keyDiff compares the keys of b, a bucket of keys without values, with
// want: it removes from want the keys b has, leaving those b lacks, and
// returns the keys b has beyond them. A nil b has none.
func keyDiff(b *bolt.Bucket, want map[string]bool) (extra [][]byte, err error) {
	if b == nil {
		return nil, nil
	}
	err = b.ForEach(func(k, _ []byte) error {
		if want[string(k)] {
			delete(want, string(k))
		} else {
			extra = append(extra, bytes.Clone(k))
		}
		return nil
	})
	return extra, err
}

// applyKeyDiff makes b's keys match after keyDiff: it puts the missing
// keys and deletes the extra ones.
func applyKeyDiff(b *bolt.Bucket, missing map[string]bool, extra [][]byte) error {
	for _, k := range extra {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	for k := range missing {
		if err := b.Put([]byte(k), nil); err != nil {
			return err
		}
	}
	return nil
}

// ownedKeys returns, per shard, the chunk keys the manifests own. A remote
// recording's chunks are in the bucket: any left in its shard are orphans.
func ownedKeys(manifests []*Manifest) map[string]map[string]bool {
	owned := map[string]map[string]bool{}
	for _, m := range manifests {
		if m.Remote != "" {
			continue
		}
		keys := owned[m.Shard]
		if keys == nil {
			keys = map[string]bool{}
			owned[m.Shard] = keys
		}
		for _, c := range m.Chunks {
			keys[string(chunkKey(m.owner(), c.StartTick))] = true
		}
	}
	return owned
}

// isOrphan reports whether chunk key k of the shard of tx is used by
// nothing: no manifest owns it (owned), no write in flight has it (busy),
// and, for a shared blob, no chunk refers to it.
func isOrphan(tx *bolt.Tx, k []byte, owned map[string]bool, busy map[uuid.UUID]bool) bool {
	if isSharedKey(k) {
		refs := tx.Bucket(bucketRefs)
		if refs == nil {
			return true
		}
		r, _ := refs.Cursor().Seek(k)
		return r == nil || !bytes.HasPrefix(r, k)
	}
	return len(k) >= 16 && !owned[string(k)] && !busy[uuid.UUID(k[:16])]
}

// removeOrphans deletes the orphans of shard name found by an earlier scan
// and returns those it deleted, with their sizes. An ingest may have
// committed since the scan: in the shard's write transaction, which no
// chunk write can interleave with, it takes the writes in flight first and
// then the manifests, so a write that finished between the two is in the
// manifests, and one that had not is in flight.
func (a *Archive) removeOrphans(ctx context.Context, name string, orphans [][]byte, sizes []int64) ([][]byte, []int64, error) {
	var gone [][]byte
	var goneBytes []int64
	err := a.updateShard(name, false, func(tx *bolt.Tx) error {
		busy := a.writing.snapshot()
		var manifests []*Manifest
		if err := a.List(ctx, func(m *Manifest) error {
			if m.Shard == name {
				manifests = append(manifests, m)
			}
			return nil
		}); err != nil {
			return err
		}
		kept, err := a.keptForPurge()
		if err != nil {
			return err
		}
		owned := ownedKeys(append(kept, manifests...))[name]
		chunks := chunksOf(tx)
		for i, k := range orphans {
			if !isOrphan(tx, k, owned, busy) {
				continue
			}
			if err := chunks.delete(k); err != nil {
				return err
			}
			gone, goneBytes = append(gone, k), append(goneBytes, sizes[i])
		}
		return nil
	})
	return gone, goneBytes, err
}

// checkRecording checks one manifest's heads and chunks.
func (a *Archive) checkRecording(ctx context.Context, m *Manifest, readData bool) error {
	if readData {
		r, err := a.Open(m.ID)
		if err != nil {
			return err
		}
		return r.Verify(ctx)
	}
	var missing []int64
	var resized []int64 // chunks whose blob is not the size the manifest says
	err := a.catalog.View(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketHeads).Get(m.ID[:]) == nil {
			return fmt.Errorf("heads record missing")
		}
		return nil
	})
	if err != nil {
		return err
	}
	if m.Remote != "" {
		return a.checkRemoteObject(ctx, m)
	}
	if len(m.Chunks) == 0 {
		return nil
	}
	if _, err := os.Stat(a.shardPath(m.Shard)); err != nil {
		return fmt.Errorf("shard %s missing", m.Shard)
	}
	owner := m.owner()
	err = a.viewShard(m.Shard, func(tx *bolt.Tx) error {
		chunks := chunksOf(tx)
		for _, c := range m.Chunks {
			v, err := chunks.get(chunkKey(owner, c.StartTick))
			switch {
			case err != nil:
				return fmt.Errorf("chunk at tick %d: %w", c.StartTick, err)
			case v == nil:
				missing = append(missing, c.StartTick)
			case int64(len(v)) != c.Stored:
				resized = append(resized, c.StartTick)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		return fmt.Errorf("%d of %d chunks missing (first at tick %d)", len(missing), len(m.Chunks), missing[0])
	}
	if len(resized) > 0 {
		return fmt.Errorf("%d of %d chunks are not the size the manifest records (first at tick %d; a recompress pass that was interrupted? run it again)",
			len(resized), len(m.Chunks), resized[0])
	}
	return nil
}

// Stats summarises the archive.
type Stats struct {
	Recordings  int                     `json:"recordings"`
	NativeBytes int64                   `json:"native_bytes"`
	StoredBytes int64                   `json:"stored_bytes"`
	DiskBytes   int64                   `json:"disk_bytes"`
	Held        int                     `json:"held"`
	Flagged     int                     `json:"flagged"`
	Shards      int                     `json:"shards"`
	Formats     map[string]*FormatStats `json:"formats"`
	// RemoteRecordings live in the remote store, RemoteBytes in its
	// objects; CacheBytes is the local chunk cache (part of DiskBytes).
	// Recompressed counts the recordings Recompress has re-encoded.
	// SharedBytes is what shards save by keeping a blob that several
	// chunks hold once (shared.go); StoredBytes and each format's are
	// already less by it.
	SharedBytes      int64 `json:"shared_bytes"`
	Recompressed     int   `json:"recompressed"`
	RemoteRecordings int   `json:"remote_recordings"`
	RemoteBytes      int64 `json:"remote_bytes"`
	CacheBytes       int64 `json:"cache_bytes"`
	// DictBytes is the heads dictionaries' content (dicts.go), counted in
	// StoredBytes and in their formats'; Dicts lists them.
	DictBytes int64      `json:"dict_bytes"`
	Dicts     []DictInfo `json:"dicts"`
}

// FormatStats are the per-format totals.
type FormatStats struct {
	Recordings  int   `json:"recordings"`
	NativeBytes int64 `json:"native_bytes"`
	StoredBytes int64 `json:"stored_bytes"`
}

// Stats totals the archive's recordings and the bytes its files take.
func (a *Archive) Stats(ctx context.Context) (*Stats, error) {
	st := &Stats{Formats: map[string]*FormatStats{}}
	formatOf := map[uuid.UUID]string{} // chunk owner → format
	err := a.List(ctx, func(m *Manifest) error {
		if m.Remote == "" {
			formatOf[m.owner()] = m.Format
		}
		st.Recordings++
		st.NativeBytes += m.NativeBytes
		st.StoredBytes += m.StoredBytes
		if m.Hold != nil {
			st.Held++
		}
		if m.Flagged() {
			st.Flagged++
		}
		if !m.Recompressed.IsZero() {
			st.Recompressed++
		}
		if m.Remote != "" {
			st.RemoteRecordings++
			st.RemoteBytes += m.RemoteBytes
		}
		f := st.Formats[m.Format]
		if f == nil {
			f = &FormatStats{}
			st.Formats[m.Format] = f
		}
		f.Recordings++
		f.NativeBytes += m.NativeBytes
		f.StoredBytes += m.StoredBytes
		return nil
	})
	if err != nil {
		return nil, err
	}
	st.Dicts = a.Dicts()
	for _, d := range st.Dicts {
		st.DictBytes += int64(d.Stored)
		st.StoredBytes += int64(d.Stored)
		if f := st.Formats[d.Format]; f != nil {
			f.StoredBytes += int64(d.Stored)
		}
	}
	st.DiskBytes, err = DiskUsage(a.dir)
	if err != nil {
		return nil, err
	}
	st.CacheBytes = a.CacheStats().Bytes
	shards, err := a.Shards()
	if err != nil {
		return nil, err
	}
	st.Shards = len(shards)
	for _, name := range shards {
		err := a.viewShard(name, func(tx *bolt.Tx) error {
			sharedSaving(tx, func(owner uuid.UUID, n int64) {
				f := st.Formats[formatOf[owner]]
				if f == nil {
					return // an orphan's: check reports it
				}
				f.StoredBytes -= n
				st.StoredBytes -= n
				st.SharedBytes += n
			})
			return nil
		})
		if err != nil && !errors.Is(err, errNoShard) {
			return nil, fmt.Errorf("archive: stats of shard %s: %w", name, err)
		}
	}
	return st, nil
}
