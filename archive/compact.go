// Giving disk space back: unlinking shards left empty and compacting sparse
// shards and the catalog by copy-and-rename.
//
// bbolt never shrinks its file; deleted pages only go to its free list. A
// shard whose recordings are all gone is closed and unlinked. A shard whose
// live pages fell below compactLiveRatio of its file is copied with
// bolt.Compact into shards/NAME.db.compacting, synced, and renamed over the
// original, so a crash leaves either the old or the new file intact; a stale
// temporary file is removed by the next Open. The shard's gate (shard.go)
// keeps its writers out during the copy and everyone out during the swap.

package archive

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/replayarchive/replay/internal/durable"
	bolt "go.etcd.io/bbolt"
)

const (
	// compactLiveRatio: a shard whose live pages take less than this part of
	// its file is compacted.
	compactLiveRatio = 0.5
	// compactMinFree: nor is a shard compacted to win back less than this.
	compactMinFree = 64 << 10
	// compactTxSize bounds the copy's memory: bolt.Compact commits every
	// compactTxSize bytes of keys and values. Copying a 240 MB shard took
	// 1.4–1.9 s and 258–278 MB peak RSS (both files' maps included) with
	// 16 MiB, 2.5–3.0 s and 477–488 MB with 64 MiB.
	compactTxSize = 16 << 20
	// ingestCompactRatio: after a batch ingest the catalog is compacted
	// when its live pages take less than this part of its file. Commits of
	// many recordings leave about a fifth of it free (200 generated games:
	// a 2.78 MB catalog copied into 2.20 MB), pages freed while the index
	// read and never reused after the last commit.
	ingestCompactRatio = 0.85
	// tempSuffix names a shard copy being written by a compaction.
	tempSuffix = ".compacting"
)

// removeStaleTemps deletes compaction copies left by a process that died
// during a compaction. The original shard files are intact.
func removeStaleTemps(dir string) error {
	stale, err := filepath.Glob(filepath.Join(dir, "shards", "*"+tempSuffix))
	if err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	stale = append(stale, filepath.Join(dir, "catalog.db"+tempSuffix))
	for _, p := range stale {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("archive: remove stale %s: %w", p, err)
		}
	}
	return nil
}

// ShardSpace describes how much of a shard file holds live data.
type ShardSpace struct {
	Name string `json:"name"`
	// FileBytes is the file's size; DiskBytes what it occupies on disk.
	FileBytes int64 `json:"file_bytes"`
	DiskBytes int64 `json:"disk_bytes"`
	// LiveBytes is the size of the pages in use (the file minus bbolt's
	// free pages and its preallocated tail): about what a compacted copy
	// takes.
	LiveBytes int64 `json:"live_bytes"`
	// Empty is set when the shard holds no chunk.
	Empty bool `json:"empty"`
}

// sparse reports whether compacting the shard is worth it.
func (s ShardSpace) sparse() bool { return s.sparserThan(compactLiveRatio) }

// sparserThan reports whether the shard's live pages take less than ratio
// of its file, with at least compactMinFree to win back.
func (s ShardSpace) sparserThan(ratio float64) bool {
	return !s.Empty && float64(s.LiveBytes) < ratio*float64(s.FileBytes) &&
		s.FileBytes-s.LiveBytes >= compactMinFree
}

// shardSpace measures shard name; the caller holds its use lock.
func (a *Archive) shardSpace(name string, db *bolt.DB) (ShardSpace, error) {
	sp := ShardSpace{Name: name}
	info, err := os.Stat(a.shardPath(name))
	if err != nil {
		return sp, fmt.Errorf("archive: shard %s: %w", name, err)
	}
	sp.FileBytes, sp.DiskBytes = info.Size(), diskBytes(info)
	err = db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketChunks)
		if b == nil {
			sp.Empty = true
		} else {
			k, _ := b.Cursor().First()
			sp.Empty = k == nil
		}
		sp.LiveBytes = liveBytes(db, tx)
		return nil
	})
	if err != nil {
		return sp, fmt.Errorf("archive: shard %s: %w", name, err)
	}
	return sp, nil
}

// ShardSpace measures every shard on disk.
func (a *Archive) ShardSpace() ([]ShardSpace, error) {
	names, err := a.Shards()
	if err != nil {
		return nil, err
	}
	out := make([]ShardSpace, 0, len(names))
	for _, name := range names {
		var sp ShardSpace
		g := a.gate(name)
		g.use.RLock()
		db, err := a.openShard(name, false)
		if err == nil {
			sp, err = a.shardSpace(name, db)
		}
		g.use.RUnlock()
		if errors.Is(err, errNoShard) {
			continue // removed meanwhile
		}
		if err != nil {
			return nil, err
		}
		out = append(out, sp)
	}
	return out, nil
}

// tidyResult is what tidyShard did to a shard.
type tidyResult int

const (
	tidyNone      tidyResult = iota // left alone: neither empty nor sparse, or gone
	tidyRemoved                     // empty, unlinked
	tidyCompacted                   // sparse, rewritten by copy-and-rename
)

// String names the result, for logs and test failures.
func (r tidyResult) String() string {
	switch r {
	case tidyRemoved:
		return "removed"
	case tidyCompacted:
		return "compacted"
	}
	return "none"
}

// tidyShard unlinks shard name if it holds no chunk, or compacts it if its
// live pages take less than ratio of the file (compactLiveRatio, unless a
// pass freed pages on purpose), and reports which it did.
func (a *Archive) tidyShard(name string, ratio float64) (tidyResult, error) {
	g := a.gate(name)
	g.write.Lock()
	defer g.write.Unlock()

	g.use.RLock()
	db, err := a.openShard(name, false)
	var sp ShardSpace
	if err == nil {
		sp, err = a.shardSpace(name, db)
	}
	if err != nil {
		g.use.RUnlock()
		if errors.Is(err, errNoShard) {
			return tidyNone, nil
		}
		return tidyNone, err
	}
	if sp.Empty {
		g.use.RUnlock()
		g.use.Lock()
		defer g.use.Unlock()
		if err := a.closeShard(name); err != nil {
			return tidyNone, fmt.Errorf("archive: close shard %s: %w", name, err)
		}
		if err := os.Remove(a.shardPath(name)); err != nil {
			return tidyNone, fmt.Errorf("archive: remove empty shard %s: %w", name, err)
		}
		return tidyRemoved, a.syncShardDir()
	}
	if !sp.sparserThan(ratio) {
		g.use.RUnlock()
		return tidyNone, nil
	}

	// Copy while readers go on; writers wait on g.write.
	tmp := a.shardPath(name) + tempSuffix
	err = a.copyBolt(db, tmp)
	g.use.RUnlock()
	if err != nil {
		os.Remove(tmp)
		return tidyNone, fmt.Errorf("archive: compact shard %s: %w", name, err)
	}

	// Swap: no one uses the handle while it is closed and the file renamed.
	g.use.Lock()
	defer g.use.Unlock()
	if err := a.closeShard(name); err != nil {
		os.Remove(tmp)
		return tidyNone, fmt.Errorf("archive: close shard %s: %w", name, err)
	}
	if err := os.Rename(tmp, a.shardPath(name)); err != nil {
		os.Remove(tmp)
		return tidyNone, fmt.Errorf("archive: compact shard %s: %w", name, err)
	}
	return tidyCompacted, a.syncShardDir()
}

// copyBolt writes a compacted copy of src to path and syncs it.
func (a *Archive) copyBolt(src *bolt.DB, path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	dst, err := bolt.Open(path, a.opts.fileMode(), &bolt.Options{Timeout: a.opts.LockTimeout, NoSync: true, InitialMmapSize: initialMmapSize, PageSize: boltPageSize})
	if err != nil {
		return err
	}
	// Compact commits many transactions of its own: a step sized for the
	// source's data, so the copy does not end in a sparse tail larger
	// than the data (bbolt's default grows a small file to its mapping).
	if err := src.View(func(tx *bolt.Tx) error { dst.AllocSize = growStep(tx.Size()); return nil }); err != nil {
		dst.Close()
		return err
	}
	err = bolt.Compact(dst, src, compactTxSize)
	if err == nil && !a.opts.NoSync {
		err = dst.Sync()
	}
	return errors.Join(err, dst.Close())
}

// compactCatalog rewrites catalog.db when its live pages take less than
// ratio of the file (compactLiveRatio, unless a pass rewrote manifests): a mark of many recordings rewrites most of
// the catalog's pages, and bbolt keeps the old ones as free space. The copy
// is renamed over catalog.db while the old file's lock is still held, then
// opened (and locked) in its place; openBolt makes a process that was waiting
// for the old lock open the new file. Other goroutines' catalog transactions
// wait from the copy to the swap (the catalog is small: it holds manifests,
// not chunks). It returns the catalog's space before.
func (a *Archive) compactCatalog(ratio float64) (ShardSpace, bool, error) {
	path := filepath.Join(a.dir, "catalog.db")
	sp, err := a.catalogSpace()
	if err != nil || !sp.sparserThan(ratio) {
		return sp, false, err
	}
	c := a.catalog
	c.mu.Lock()
	defer c.mu.Unlock()
	tmp := path + tempSuffix
	if err := a.copyBolt(c.db, tmp); err != nil {
		os.Remove(tmp)
		return sp, false, fmt.Errorf("archive: compact catalog: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return sp, false, fmt.Errorf("archive: compact catalog: %w", err)
	}
	if err := a.syncDir(a.dir); err != nil {
		return sp, false, err
	}
	db, err := openBolt(path, a.opts)
	if err != nil {
		// The old handle still reads the same data; writes would be lost.
		return sp, false, fmt.Errorf("archive: reopen compacted catalog (reopen the archive): %w", err)
	}
	old := c.db
	c.db = db
	return sp, true, old.Close()
}

// TidyCatalog compacts the catalog after a run of commits (a batch
// ingest) when the pages they freed are worth a copy, and reports whether
// it did.
func (a *Archive) TidyCatalog() (bool, error) {
	_, done, err := a.compactCatalog(ingestCompactRatio)
	return done, err
}

// catalogSpace measures catalog.db as shardSpace measures a shard.
func (a *Archive) catalogSpace() (ShardSpace, error) {
	sp := ShardSpace{Name: "catalog"}
	info, err := os.Stat(filepath.Join(a.dir, "catalog.db"))
	if err != nil {
		return sp, fmt.Errorf("archive: %w", err)
	}
	sp.FileBytes, sp.DiskBytes = info.Size(), diskBytes(info)
	c := a.catalog
	c.mu.RLock()
	defer c.mu.RUnlock()
	err = c.db.View(func(tx *bolt.Tx) error {
		sp.LiveBytes = liveBytes(c.db, tx)
		return nil
	})
	return sp, err
}

// liveBytes is the size of the pages in use in db as tx sees it.
func liveBytes(db *bolt.DB, tx *bolt.Tx) int64 {
	st := db.Stats()
	return tx.Size() - int64(st.FreePageN+st.PendingPageN)*int64(db.Info().PageSize)
}

// syncShardDir makes renames and unlinks in shards/ durable.
func (a *Archive) syncShardDir() error { return a.syncDir(filepath.Join(a.dir, "shards")) }

// syncDir makes renames and unlinks in dir durable.
func (a *Archive) syncDir(dir string) error {
	if a.opts.NoSync {
		return nil
	}
	if err := durable.SyncDir(dir); err != nil {
		return fmt.Errorf("archive: sync %s: %w", dir, err)
	}
	return nil
}
