// The object-storage tier: sealed recordings move out of the
// local shards into a blob.Store (an S3 bucket), and are read back through
// a bounded local chunk cache.
//
// Bucket layout, under the store's prefix:
//
//	rec/YYYY-MM/<nonce>/<id>  the recording's chunk blobs concatenated, in
//	                   order, one object per upload (remoteobject.go);
//	                   chunk i starts at the sum of the stored sizes before
//	                   it (ChunkEntry.Stored), so the manifest holds every
//	                   chunk's offset and length. Older builds wrote
//	                   rec/YYYY-MM/<id>; manifests naming it read the same.
//	manifests/<id>     the manifest with the stored header, trailer and
//	                   events (remoteManifest), naming its object, written
//	                   with put-if-absent: the commit point
//	takedowns/<sha256> a takedown made on a writing node (the JSON of its
//	                   Takedown, put-if-absent), which every node's sync
//	                   records and applies (remotetakedown.go)
//
// Write order: the object (put-if-absent, at its upload's own key), then
// the manifest object, then the catalog records the key, then the local
// chunks are deleted. A crash leaves at worst an object without a manifest
// (Check reports it, Repair deletes it past a grace age), or local chunks
// no manifest owns (Check's local orphans). Delete order is the reverse:
// manifest object first, then the object. Several writers may share a
// bucket: none replaces or deletes what another wrote (remoteobject.go).

package archive

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/replayarchive/replay/archive/blob"
	"github.com/replayarchive/replay/archive/internal/chunkcache"
	bolt "go.etcd.io/bbolt"
)

// ErrNoRemote is returned by remote operations on an archive without a
// remote store configured.
var ErrNoRemote = errors.New("no remote store configured")

// RemoteConfig says where an archive's sealed recordings go and when. It
// is stored in the catalog and holds no secret: the S3 keys come from the
// environment or the credentials file it names.
type RemoteConfig struct {
	// URL is s3://BUCKET/PREFIX.
	URL string `json:"url"`
	// S3 is how to reach it (endpoint, region, credentials file, and
	// ReadOnly: a node that only reads what another one uploads).
	S3 blob.S3Options `json:"s3"`
	// UploadAfter is the age (Manifest.Age: from the recording's start, or
	// its ingest when that is earlier or the start unknown) past which a
	// sealed recording is uploaded, so at most this long after its ingest
	// or seal. nil means DefaultUploadAfter (stored configurations without
	// the field get the current default); a pointer to 0 means at once.
	UploadAfter *time.Duration `json:"upload_after,omitempty"`
	// CacheBytes bounds the local chunk cache; 0 means DefaultCacheBytes.
	CacheBytes int64 `json:"cache_bytes,omitempty"`
}

// Defaults of RemoteConfig. DefaultUploadAfter is minutes, not days: a
// recording not yet uploaded lives on one disk only, so it goes up at the
// first tier pass (a server's runs every minute) once it is sealed and
// this old.
const (
	DefaultUploadAfter = 5 * time.Minute
	DefaultCacheBytes  = 1 << 30
)

// UploadDelay is the upload age in effect: UploadAfter, else
// DefaultUploadAfter.
func (c *RemoteConfig) UploadDelay() time.Duration {
	if c == nil || c.UploadAfter == nil {
		return DefaultUploadAfter
	}
	return *c.UploadAfter
}

// tierState is the archive's handle on its remote store, opened on first
// use (opening an S3 store asks the server, which read-only commands that
// never touch a remote recording should not pay for).
type tierState struct {
	mu    sync.Mutex
	store blob.Store
	cfg   *RemoteConfig
	cache *chunkcache.Cache
	// uploadMu keeps uploads and the remote half of Check apart (an
	// object whose manifest is being written is not an orphan), and
	// uploads and Recompress (an upload checks each blob's size against
	// a manifest that a pass updates last).
	uploadMu sync.Mutex
}

// RemoteConfig returns the stored remote configuration, or nil.
func (a *Archive) RemoteConfig() (*RemoteConfig, error) {
	cfg := new(RemoteConfig)
	if ok, err := a.getSetting(settingRemote, cfg); !ok || err != nil {
		return nil, err
	}
	return cfg, nil
}

// getSetting decodes the JSON setting name into v, and reports whether
// the setting exists.
func (a *Archive) getSetting(name []byte, v any) (found bool, err error) {
	err = a.catalog.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSettings).Get(name)
		if found = b != nil; !found {
			return nil
		}
		return json.Unmarshal(b, v)
	})
	if err != nil {
		return false, fmt.Errorf("archive: setting %s: %w", name, err)
	}
	return found, nil
}

// SetRemote checks that cfg opens a store (for a writable one, that the
// server honours conditional writes) and stores it. The store is used from
// the next remote operation on.
func (a *Archive) SetRemote(ctx context.Context, cfg RemoteConfig) error {
	if a.opts.ReadOnly {
		return errors.New("archive: set remote: opened read-only")
	}
	if cfg.UploadDelay() < 0 || cfg.CacheBytes < 0 {
		return fmt.Errorf("archive: set remote: negative upload age %s or cache size %d", cfg.UploadDelay(), cfg.CacheBytes)
	}
	s, err := blob.NewS3(ctx, cfg.URL, cfg.S3)
	if err != nil {
		return fmt.Errorf("archive: set remote: %w", err)
	}
	v, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	err = a.catalog.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketSettings).Put(settingRemote, v) })
	if err != nil {
		return fmt.Errorf("archive: set remote: %w", err)
	}
	a.tier.mu.Lock()
	defer a.tier.mu.Unlock()
	if a.opts.Remote == nil {
		a.tier.store = s
	}
	a.tier.cfg = &cfg
	return nil
}

// remote returns the remote store (Options.Remote, else the stored
// configuration's, opened now) and its configuration.
func (a *Archive) remote(ctx context.Context) (blob.Store, *RemoteConfig, error) {
	a.tier.mu.Lock()
	defer a.tier.mu.Unlock()
	if a.tier.cfg == nil {
		cfg, err := a.RemoteConfig()
		if err != nil {
			return nil, nil, err
		}
		if cfg == nil {
			cfg = &RemoteConfig{}
			if a.opts.Remote == nil {
				return nil, nil, ErrNoRemote
			}
		}
		a.tier.cfg = cfg
	}
	if a.tier.store == nil {
		if a.opts.Remote != nil {
			a.tier.store = a.opts.Remote
		} else {
			o := a.tier.cfg.S3
			o.ReadOnly = o.ReadOnly || a.opts.ReadOnly
			s, err := blob.NewS3(ctx, a.tier.cfg.URL, o)
			if err != nil {
				return nil, nil, fmt.Errorf("archive: remote store: %w", err)
			}
			a.tier.store = s
		}
	}
	return a.tier.store, a.tier.cfg, nil
}

// cacheDir is where the chunk cache lives.
func (a *Archive) cacheDir() string { return filepath.Join(a.dir, "cache") }

// CacheStats says what the chunk cache holds and how it served.
type CacheStats = chunkcache.Stats

// CacheStats reports the local chunk cache.
func (a *Archive) CacheStats() CacheStats { return a.chunkCache().Stats() }

// DropCache empties the local chunk cache (benchmarks measure a cold one).
func (a *Archive) DropCache() { a.chunkCache().Clear() }

// chunkCache returns the local chunk cache, opening it on first use.
func (a *Archive) chunkCache() *chunkcache.Cache {
	a.tier.mu.Lock()
	defer a.tier.mu.Unlock()
	if a.tier.cache == nil {
		limit := a.opts.CacheBytes
		if limit == 0 && a.tier.cfg != nil {
			limit = a.tier.cfg.CacheBytes
		}
		if limit == 0 {
			limit = DefaultCacheBytes
		}
		a.tier.cache = chunkcache.Open(a.cacheDir(), limit, a.opts.fileMode(), a.opts.dirMode())
	}
	return a.tier.cache
}

// remoteReadOnly reports whether this archive may not change the bucket.
func (a *Archive) remoteReadOnly(store blob.Store, cfg *RemoteConfig) bool {
	if a.opts.ReadOnly || (cfg != nil && cfg.S3.ReadOnly) {
		return true
	}
	s, ok := store.(*blob.S3)
	return ok && s.Options().ReadOnly
}

// remoteManifest is the object at manifests/<id>: everything another node
// needs to list, search and read the recording without this catalog.
type remoteManifest struct {
	Version  int       `json:"v"`
	Manifest *Manifest `json:"manifest"`
	// Heads is the stored header and trailer (the heads bucket's value).
	Heads []byte `json:"heads"`
	// Events is the stored events (the events bucket's value), if any.
	Events []byte `json:"events,omitempty"`
	// Writer is the uploading archive's writer id (remoteobject.go): an
	// upload finishes its own manifest and refuses another writer's.
	// Manifests of older builds have none.
	Writer string `json:"writer,omitempty"`
}

// remoteManifestVersion is remoteManifest.Version as written now.
const remoteManifestVersion = 1

// maxRemoteManifest bounds what a node reads for one manifest object: the
// events of a long recording are the bulk of it.
const maxRemoteManifest = 256 << 20

// UploadOptions tune Upload.
type UploadOptions struct {
	// OlderThan, when > 0, replaces the configured UploadAfter for this
	// upload.
	OlderThan time.Duration
	// AtOnce uploads every sealed recording whatever its age (remote
	// upload --older-than 0s): the zero that OlderThan cannot say.
	AtOnce bool
	// Progress, if set, is called after each recording is uploaded.
	Progress func(m *Manifest)
	// afterObject runs between the object and the manifest upload (tests
	// kill the process there).
	afterObject func()
}

// UploadReport says what Upload did.
type UploadReport struct {
	Recordings int `json:"recordings"`
	// Uploaded are the recordings uploaded, for the nodes that share a
	// catalog with this one.
	Uploaded []uuid.UUID `json:"-"`
	Bytes    int64       `json:"bytes"`
	// Shards lists the shards that lost chunks (compacted or removed).
	Shards []string `json:"shards,omitempty"`
	// Conflicts says why recordings stayed local: the bucket holds them
	// from another writer (ErrUploadConflict), whose object is left alone.
	Conflicts []string `json:"conflicts,omitempty"`
	// TakenDown says which recordings were refused: their bytes or
	// identity are taken down in the bucket (a takedown made on another
	// node, recorded here first). Those the takedown names by bytes or id
	// are taken down here too; others stay local, refused.
	TakenDown []string `json:"taken_down,omitempty"`
}

// Upload moves every sealed recording older than the upload age
// (Manifest.Age, so at most that long after its ingest, whatever its start
// says) to the remote store, one at a time: the object, the manifest object
// (put-if-absent), the catalog, and only then the local chunks are dropped.
// Held recordings move too (a hold pins against deletion, not location);
// live and growing ones stay local until sealed.
func (a *Archive) Upload(ctx context.Context, opts UploadOptions) (*UploadReport, error) {
	store, cfg, err := a.remote(ctx)
	if err != nil {
		return nil, err
	}
	if a.remoteReadOnly(store, cfg) {
		return nil, fmt.Errorf("archive: upload: the remote store is read-only for this node")
	}
	age := cfg.UploadDelay()
	switch {
	case opts.AtOnce:
		age = 0
	case opts.OlderThan > 0:
		age = opts.OlderThan
	}
	a.tier.uploadMu.Lock()
	defer a.tier.uploadMu.Unlock()
	rep := &UploadReport{}
	// The bucket's takedowns first: nothing they refuse goes up.
	_, dropped, err := a.syncTakedowns(ctx, store)
	for _, m := range dropped {
		if m.Remote == "" {
			rep.TakenDown = append(rep.TakenDown, fmt.Sprintf("recording %s (sha256 %.12s…): taken down in the bucket, taken down here", m.ID, m.SHA256))
		}
	}
	if err != nil {
		return rep, fmt.Errorf("archive: upload: %w", err)
	}
	now := a.opts.Now()
	var ids []uuid.UUID
	err = a.List(ctx, func(m *Manifest) error {
		if m.Remote == "" && !m.Meta.Growing && !m.Live && m.Age(now) >= age {
			ids = append(ids, m.ID)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	touched := map[string]bool{}
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		m, err := a.uploadOne(ctx, store, id, opts)
		if errors.Is(err, ErrNotFound) {
			continue // deleted meanwhile
		}
		if errors.Is(err, ErrUploadConflict) {
			rep.Conflicts = append(rep.Conflicts, err.Error())
			continue
		}
		if errors.As(err, new(*TakenDownError)) {
			rep.TakenDown = append(rep.TakenDown, err.Error())
			continue
		}
		if err != nil {
			return rep, err
		}
		rep.Recordings++
		rep.Uploaded = append(rep.Uploaded, m.ID)
		rep.Bytes += m.RemoteBytes
		touched[m.Shard] = true
		if opts.Progress != nil {
			opts.Progress(m)
		}
	}
	for name := range touched {
		if did, err := a.tidyShard(name, compactLiveRatio); err != nil {
			return rep, err
		} else if did != tidyNone {
			rep.Shards = append(rep.Shards, name)
		}
	}
	return rep, nil
}

// sweepRemote deletes the bucket objects of tombstoned remote recordings,
// and returns the tombstones whose objects could not be deleted (kept for
// the next sweep) with the first error. A node that may not write to the
// bucket only drops its cache: the writing node deletes.
func (a *Archive) sweepRemote(ctx context.Context, stones []tombstone) (failed map[uuid.UUID]bool, err error) {
	var remote []tombstone
	for _, t := range stones {
		if t.Remote != "" {
			remote = append(remote, t)
		}
	}
	if len(remote) == 0 {
		return nil, nil
	}
	store, cfg, err := a.remote(ctx)
	if err != nil {
		failed = map[uuid.UUID]bool{}
		for _, t := range remote {
			failed[t.Owner] = true
		}
		return failed, err
	}
	var first error
	for _, t := range remote {
		if a.remoteReadOnly(store, cfg) {
			a.chunkCache().Drop(t.ID)
			continue
		}
		if err := a.deleteRemote(ctx, store, t.ID, t.Remote); err != nil {
			if failed == nil {
				failed = map[uuid.UUID]bool{}
			}
			failed[t.Owner] = true
			first = cmpOr(first, err)
		}
	}
	return failed, first
}

// cmpOr returns the first non-nil error.
func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// remoteBlob returns chunk i of remote recording r: from the cache, else
// one ranged GET (kept in the cache). fresh skips the cache, for a cached
// copy that did not decode.
func (r *Recording) remoteBlob(ctx context.Context, i int, buf []byte, fresh bool) (blob []byte, cached bool, err error) {
	store, _, err := r.a.remote(ctx)
	if err != nil {
		return nil, false, err
	}
	cache := r.a.chunkCache()
	off, n := r.offs[i], r.offs[i+1]-r.offs[i]
	name := chunkcache.Name(r.m.ID, off)
	if !fresh {
		if b, ok := cache.Get(name, n, buf); ok {
			return b, true, nil
		}
	}
	rc, err := store.GetRange(ctx, r.m.Remote, off, n)
	if err != nil {
		return nil, false, err
	}
	defer rc.Close()
	if int64(cap(buf)) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(rc, buf); err != nil {
		return nil, false, fmt.Errorf("%s bytes %d-%d: %w", r.m.Remote, off, off+n-1, err)
	}
	cache.Put(name, buf)
	return buf, false, nil
}

// remoteAhead is readAhead for a remote recording: one streamed GET of the
// whole object, cut into blobs by the manifest's stored sizes. It does not
// fill the chunk cache: a whole export would evict every seek's chunks.
func (r *Recording) remoteAhead(ctx context.Context, pieces chan<- exportPiece, free <-chan []byte) {
	defer close(pieces)
	send := func(p exportPiece) bool {
		select {
		case pieces <- p:
			return p.err == nil
		case <-ctx.Done():
			return false
		}
	}
	store, _, err := r.a.remote(ctx)
	var rc io.ReadCloser
	if err == nil {
		rc, err = store.Get(ctx, r.m.Remote)
	}
	if err != nil {
		send(exportPiece{err: fmt.Errorf("archive: recording %s: %w", r.m.ID, err)})
		return
	}
	defer rc.Close()
	br := bufio.NewReaderSize(rc, 256<<10)
	var blobBuf []byte
	for i := range r.chunks {
		dst := []byte{}
		select {
		case dst = <-free:
		default:
		}
		n := r.offs[i+1] - r.offs[i]
		if int64(cap(blobBuf)) < n {
			blobBuf = make([]byte, n)
		}
		blobBuf = blobBuf[:n]
		var native []byte
		err := ctx.Err()
		if err == nil {
			if _, err = io.ReadFull(br, blobBuf); err != nil {
				err = fmt.Errorf("%s at byte %d: %w", r.m.Remote, r.offs[i], err)
			}
		}
		if err == nil {
			r.reads.Add(1)
			c := r.chunks[i]
			native, _, err = r.a.decodeBlob(blobBuf, ChunkEntry{StartTick: c.StartTick, Length: c.Length, CRC: r.crcs[i]}, r.m.Format, dst, false)
		}
		if err != nil {
			err = fmt.Errorf("archive: recording %s chunk %d (tick %d): %w", r.m.ID, i, r.chunks[i].StartTick, err)
		}
		if !send(exportPiece{native, err}) {
			return
		}
	}
	if k, _ := br.Read(make([]byte, 1)); k > 0 {
		send(exportPiece{err: fmt.Errorf("archive: recording %s: object %s is longer than its %d chunks", r.m.ID, r.m.Remote, len(r.chunks))})
	}
}
