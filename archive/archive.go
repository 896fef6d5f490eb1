// Package archive is the storage engine: a bbolt catalog that is the source
// of truth, and time-partitioned bbolt shards that hold chunk blobs.
//
// Layout of an archive directory:
//
//	catalog.db         manifests, by-session, sources (sha256 → id), heads
//	                   (native header and trailer), events, change log, policy,
//	                   takedowns (sha256 → who, when, why), audit log, tokens
//	shards/YYYY-MM.db  chunk blobs keyed by recording id ‖ start tick (big-endian)
//	index/             the search index, derived from the catalog (package query)
//
// layout.go has every bucket and the encoding of its keys and values.
//
// Chunks are written before the manifest and deleted after it, so a crash
// leaves at worst chunks without a manifest: invisible to readers and removed
// by Check with repair. Shards partition chunks by recording start month, so
// retention by age unlinks whole files and gives the disk space back; bbolt
// itself never shrinks a file.
//
// No read transaction is held across slow work: readers copy what they need
// and close the transaction before decoding or writing to the caller.
package archive

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/replayarchive/replay/archive/blob"
	"github.com/replayarchive/replay/archive/internal/chunkenc"
	"github.com/replayarchive/replay/formats"
	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// ErrNotFound is returned for a recording id or prefix that names nothing.
var ErrNotFound = errors.New("recording not found")

// ErrInUse is returned when another process holds the archive open.
var ErrInUse = errors.New("archive is in use by another process (bbolt file lock)")

// Options tune an archive. The zero value is a good default.
type Options struct {
	// NoSync skips fsync on commit. Only for tests and benchmarks.
	NoSync bool
	// ReadOnly opens the catalog and shards for reading only, under a
	// shared lock: any number of read-only opens may run at once, and only
	// a writer excludes them. Every change then fails.
	ReadOnly bool
	// LockTimeout is how long Open waits for another process to let go of
	// the archive's files (default 2s).
	LockTimeout time.Duration
	// ShardPeriod names the shard a recording goes to, from its start time.
	// Default: one shard per month ("2006-01").
	ShardPeriod func(time.Time) string
	// SpillBytes is how many compressed bytes a recording being ingested
	// buffers before its chunks are written to the shard ahead of the
	// commit, bounding memory for very large files (default 4 MiB).
	// Chunks written early stay invisible until the manifest commits, and
	// are removed by Check with Repair after a crash.
	SpillBytes int64
	// CompressWorkers is how many goroutines split and compress the
	// chunks of a recording being ingested, beside the codec's parse
	// (default 1). More make a large file's ingest faster on more cores,
	// and take those cores from whatever else runs: archivectl ingest
	// uses one a core (at most four), serve the default, so that
	// searches keep theirs while files are uploaded.
	CompressWorkers int
	// Now is the clock (default time.Now); tests set it.
	Now func() time.Time
	// GroupAccess lets the owner's group read the archive: files are
	// created 0640 and directories 0750 instead of 0600 and 0700. The
	// catalog and shards hold every secret of every recording, so the
	// default is the owner alone.
	GroupAccess bool
	// Remote is the object store sealed recordings move to, instead of
	// the one the catalog's remote configuration names (tests, tools).
	Remote blob.Store
	// CacheBytes bounds the local cache of remote chunks, instead of the
	// remote configuration's (default DefaultCacheBytes).
	CacheBytes int64
	// Columns holds, by format name, the column transforms of the codecs
	// that have one: the chunks of those formats are stored as streams
	// blobs (see chunkenc.EncodeStreams), which compress smaller, and reading
	// such a chunk needs its format's transform. Without one a format's
	// chunks are stored whole. replay.Open sets it from the codecs.
	Columns map[string]formats.Columnar
	// WriteFault, if set, is asked before each write of a live grow
	// (CommitGrow) with the file it is about to write (a shard, the
	// catalog); an error it returns fails that write as the file system
	// would. Tests use it for a full disk (syscall.ENOSPC) without
	// filling one.
	WriteFault func(file string) error
}

// fileMode is the mode archive files are created with.
func (o Options) fileMode() os.FileMode {
	if o.GroupAccess {
		return 0o640
	}
	return 0o600
}

// dirMode is the mode archive directories are created with.
func (o Options) dirMode() os.FileMode {
	if o.GroupAccess {
		return 0o750
	}
	return 0o700
}

// Archive is an open archive directory. It is safe for concurrent use by
// several goroutines of one process; bbolt's file lock keeps out other
// processes.
type Archive struct {
	dir     string
	opts    Options
	catalog *catalogDB // swapped by a catalog compaction (compact.go)

	enc   *zstd.Encoder
	dicts dictionaries // the heads dictionaries, and the decoder that knows them (dicts.go)

	// commitMu serialises commits and deletes within this process.
	commitMu sync.Mutex

	mu     sync.Mutex
	shards map[string]*bolt.DB
	gates  map[string]*shardGate // per-shard locks against compaction (shard.go)
	closed bool

	// pruneMu lets one Prune run at a time (retention.go).
	pruneMu sync.Mutex
	// recompressMu lets one Recompress pass run at a time (recompress.go).
	recompressMu sync.Mutex

	tier tierState // the remote store and chunk cache (remote.go)

	encoders *encoders // idle encoders of chunks, streams and events
	// idleWorkers keeps finished recordings' compressor workers for the
	// next ones: as many as one recording uses (keeping a second set
	// raised an ingest's peak RSS by 4 MiB).
	idleWorkers *idleWorkers
	turns       *turns // background work's share of the cores (turns.go)

	// writing holds the chunk owners written ahead of their manifests
	// (inflight.go), which Check leaves alone.
	writing inflight

	// spools holds this process's upload spools; spoolsAtOpen is what
	// Open removed (spool.go).
	spools       spoolSet
	spoolsAtOpen Spools
}

// Open opens the archive in dir, creating it if needed.
func Open(dir string, opts Options) (*Archive, error) {
	if opts.LockTimeout == 0 {
		opts.LockTimeout = 2 * time.Second
	}
	if opts.ShardPeriod == nil {
		opts.ShardPeriod = func(t time.Time) string { return t.UTC().Format("2006-01") }
	}
	if opts.SpillBytes <= 0 {
		opts.SpillBytes = defaultSpillBytes
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.ReadOnly {
		db, err := openBolt(filepath.Join(dir, "catalog.db"), opts)
		if err != nil {
			return nil, err
		}
		return newArchive(dir, opts, db)
	}
	// MkdirAll applies the mode to the directories it creates only: an
	// existing directory keeps the mode its owner gave it.
	if err := os.MkdirAll(filepath.Join(dir, "shards"), opts.dirMode()); err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	db, err := openBolt(filepath.Join(dir, "catalog.db"), opts)
	if err != nil {
		return nil, err
	}
	// The catalog's lock is held: no other process can be compacting.
	if err := removeStaleTemps(dir); err != nil {
		db.Close()
		return nil, err
	}
	err = update(db, func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketRecordings, bucketSessions, bucketSources, bucketHeads, bucketEvents, bucketChanges, bucketSettings, bucketTombstones, bucketTakedowns} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		if err := indexTakedownIdents(tx); err != nil {
			return err
		}
		if tx.Bucket(bucketSourceSizes) != nil {
			return nil
		}
		if _, err := tx.CreateBucket(bucketSourceSizes); err != nil {
			return err
		}
		return indexSourceSizes(tx)
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("archive: init catalog: %w", err)
	}
	a, err := newArchive(dir, opts, db)
	if err != nil {
		return nil, err
	}
	// The catalog's exclusive lock is held: no other process is uploading,
	// and this one has not begun, so every upload spool is a leftover of a
	// killed process. One that cannot be removed stays for Check to report
	// (its Repair names the error): it is no reason to refuse the archive.
	a.spoolsAtOpen, _ = a.leftoverSpools(true)
	return a, nil
}

// newArchive wraps an open catalog.
func newArchive(dir string, opts Options, db *bolt.DB) (*Archive, error) {
	// The archive-wide encoder compresses headers, trailers and the chunks
	// of live recordings, each on its own (EncodeAll): the chunk encoders'
	// options, whose window (chunkenc.Window) replaces the default 8 MiB
	// whose 16 MiB history every commit paid for.
	enc, err := zstd.NewWriter(nil, chunkenc.EncoderOptions()...)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("archive: %w", err)
	}
	a := &Archive{dir: dir, opts: opts, catalog: &catalogDB{db: db}, enc: enc, encoders: newEncoders(opts.CompressWorkers), idleWorkers: &idleWorkers{keep: max(opts.CompressWorkers, 1)}, turns: newTurns(), shards: map[string]*bolt.DB{}, gates: map[string]*shardGate{}}
	if err := a.loadDicts(); err != nil {
		db.Close()
		return nil, err
	}
	return a, nil
}

// openBolt opens a bbolt file. A compaction replaces a file by renaming a
// copy over it while holding the old file's lock (compact.go); whoever was
// waiting for that lock then holds an unlinked file, so once the lock is
// had, the path must still name the file that was opened, else try again.
func openBolt(path string, opts Options) (*bolt.DB, error) {
	for try := 0; ; try++ {
		before, statErr := os.Stat(path)
		// A large initial mmap (address space, not memory) spares bbolt the
		// remaps that copy every dirty node of a write transaction each
		// time the file grows: measured, they were most of ingest's heap.
		// (Where mapping extends the file, disk_other.go maps less.)
		// update keeps the file's sparse tail small (growStep).
		db, err := bolt.Open(path, opts.fileMode(), &bolt.Options{Timeout: opts.LockTimeout, NoSync: opts.NoSync, ReadOnly: opts.ReadOnly,
			InitialMmapSize: initialMmapSize, PageSize: boltPageSize})
		if errors.Is(err, bolterrors.ErrTimeout) {
			return nil, fmt.Errorf("archive: %s: %w", path, ErrInUse)
		}
		if err != nil {
			return nil, fmt.Errorf("archive: open %s: %w", path, err)
		}
		after, err := os.Stat(path)
		if statErr != nil || (err == nil && os.SameFile(before, after)) {
			db.AllocSize = growStep(0) // update sets it per transaction
			return db, nil             // a new file, or the file the path still names
		}
		db.Close()
		if try == 10 {
			return nil, fmt.Errorf("archive: %s: %w", path, ErrInUse)
		}
	}
}

// boltPageSize is the page size of the bbolt files the archive creates
// (a file keeps the size it was created with; a compaction's copy takes
// this one). bbolt stores a large value in whole pages, two to a node:
// at the system's 4 KiB a 200-game archive's shard spent 6.5% of its
// chunk bytes and the catalog 34% of its values on the rounding; at
// 1 KiB, 2% and 9% (docs/PERFORMANCE.md). Values are read from the map
// in place, so reads do not see the size.
const boltPageSize = 1024

// Bounds of growStep. With a mapping larger than bbolt's allocation step
// (initialMmapSize), bbolt grows a file by that step past what a commit
// needs, and the file system keeps the step as a sparse tail: the default
// 16 MiB made every small catalog and shard a 16 MiB file, which a cp or
// tar copies in full. A fixed 1 MiB still made a three-game
// archive 2.3× its allocated size. A step of a sixteenth of the data keeps
// the apparent size within 1.07× of the data for files of 1 MiB and more,
// and a growing file still pays one truncate and fsync per sixteenth.
const (
	minGrowStep = 32 << 10
	maxGrowStep = 16 << 20
)

// growStep is how far past its size bbolt grows a file that holds size
// bytes of data: a sixteenth of it, within [minGrowStep, maxGrowStep],
// in whole pages.
func growStep(size int64) int {
	step := min(max(size/16, minGrowStep), maxGrowStep)
	return int(step &^ (4096 - 1))
}

// update runs fn in a write transaction on db, with bbolt's allocation
// step sized for the file as it is (see growStep). Only the writer reads
// AllocSize (when its commit grows the file), and fn runs as the writer.
func update(db *bolt.DB, fn func(*bolt.Tx) error) error {
	return db.Update(func(tx *bolt.Tx) error {
		tx.DB().AllocSize = growStep(tx.Size())
		return fn(tx)
	})
}

// Dir returns the archive's directory.
func (a *Archive) Dir() string { return a.dir }

// Close closes the catalog and every open shard.
func (a *Archive) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil
	}
	a.closed = true
	var errs []error
	for name, db := range a.shards {
		errs = append(errs, db.Close())
		delete(a.shards, name)
	}
	errs = append(errs, a.catalog.close())
	a.enc.Close()
	a.dicts.close()
	return errors.Join(errs...)
}
