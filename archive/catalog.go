// Catalog access: the catalog's handle (catalogDB), manifests, id lookup
// by prefix, sessions, heads, events and the change log that keeps the
// derived search index in step.

package archive

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/google/uuid"
	"github.com/replayarchive/replay/formats"
	bolt "go.etcd.io/bbolt"
)

// catalogDB is the catalog's bbolt handle behind a lock, so that a catalog
// compaction can swap the handle while other goroutines use the archive
// (Archive is safe for concurrent use, and a server prunes online). Every
// transaction read-holds the lock; the compaction holds it exclusively from
// the copy to the swap, so no commit lands in the file being replaced.
// Transactions must not nest: a second read-hold behind a waiting
// compaction would deadlock.
type catalogDB struct {
	mu sync.RWMutex
	db *bolt.DB
}

// View runs fn in a read transaction, as bolt.DB.View.
func (c *catalogDB) View(fn func(*bolt.Tx) error) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.db.View(fn)
}

// Update runs fn in a write transaction, as bolt.DB.Update.
func (c *catalogDB) Update(fn func(*bolt.Tx) error) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return update(c.db, fn)
}

// close closes the handle.
func (c *catalogDB) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.db.Close()
}

// Change is one entry of the change log: a recording was put (ingested or
// its flags, hold or metadata changed) or deleted.
type Change struct {
	Seq uint64    `json:"-"`
	Op  ChangeOp  `json:"op"`
	ID  uuid.UUID `json:"id"`
	// From is, for ChangeGrow (live.go), the first event that is new or changed.
	From int `json:"from,omitempty"`
}

// ChangeOp is what happened to a recording: the search index adds or
// replaces its document on ChangePut and drops it on ChangeDelete. It is
// stored as its name, so the change log reads as JSON.
type ChangeOp string

// Change log operations.
const (
	ChangePut    ChangeOp = "put"
	ChangeDelete ChangeOp = "delete"
)

// String returns the operation's name, as stored.
func (o ChangeOp) String() string { return string(o) }

// appendChange adds an entry to the change log inside tx.
func appendChange(tx *bolt.Tx, op ChangeOp, id uuid.UUID) error {
	b := tx.Bucket(bucketChanges)
	seq, err := b.NextSequence()
	if err != nil {
		return err
	}
	v, err := json.Marshal(Change{Op: op, ID: id})
	if err != nil {
		return err
	}
	return b.Put(seqKey(seq), v)
}

// ChangesSince returns up to limit change log entries with a sequence number
// greater than seq, in order.
func (a *Archive) ChangesSince(seq uint64, limit int) ([]Change, error) {
	var out []Change
	err := a.catalog.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketChanges).Cursor()
		for k, v := c.Seek(seqKey(seq + 1)); k != nil && (limit <= 0 || len(out) < limit); k, v = c.Next() {
			var ch Change
			if err := json.Unmarshal(v, &ch); err != nil {
				return fmt.Errorf("change %x: %w", k, err)
			}
			ch.Seq = seqOf(k)
			out = append(out, ch)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("archive: change log: %w", err)
	}
	return out, nil
}

// LastChange returns the newest change log sequence number (0 if none).
func (a *Archive) LastChange() (uint64, error) {
	var seq uint64
	err := a.catalog.View(func(tx *bolt.Tx) error {
		seq = tx.Bucket(bucketChanges).Sequence()
		return nil
	})
	return seq, err
}

// trimBatch is how many change log entries one transaction of
// TrimChanges drops.
const trimBatch = 10_000

// TrimChanges drops change log entries up to and including seq, once the
// index has applied them. It drops them in transactions of trimBatch, each
// reading its keys before deleting them: deleting at the cursor and
// seeking the first entry again walked every leaf emptied so far, which
// made trimming the log of a million recordings (a rebuild after a bulk
// import) quadratic, hours instead of seconds. A crash between two
// transactions leaves entries that are applied already, which is
// harmless: applying a put twice puts it once.
func (a *Archive) TrimChanges(seq uint64) error {
	trimmed := 0
	for {
		n := 0
		err := a.catalog.Update(func(tx *bolt.Tx) error {
			b := tx.Bucket(bucketChanges)
			var keys [][]byte
			c := b.Cursor()
			for k, _ := c.First(); k != nil && seqOf(k) <= seq && len(keys) < trimBatch; k, _ = c.Next() {
				keys = append(keys, bytes.Clone(k))
			}
			for _, k := range keys {
				if err := b.Delete(k); err != nil {
					return err
				}
			}
			n = len(keys)
			return nil
		})
		if err != nil {
			return fmt.Errorf("archive: trim change log: %w", err)
		}
		trimmed += n
		if n < trimBatch {
			break
		}
	}
	// A large trim (the log of a bulk import, applied by a reindex)
	// leaves the catalog's pages of it free, and bbolt reads its whole
	// free list at every open: a million recordings' catalog had 188,210
	// free pages (of 1 KiB: 8% of the file, under TidyCatalog's ratio)
	// and bbolt took 14.5-22.6 ms to open it, 0.43-0.51 ms a compacted
	// copy. It is copied once, whatever the ratio.
	if trimmed >= trimCompactMin {
		if _, _, err := a.compactCatalog(1); err != nil {
			return fmt.Errorf("archive: after trimming the change log: %w", err)
		}
	}
	return nil
}

// trimCompactMin is how many change log entries one TrimChanges drops
// before it compacts the catalog: Sync trims at most a few pages of 512
// at a time in steady use.
const trimCompactMin = 100_000

func getManifest(tx *bolt.Tx, id uuid.UUID) (*Manifest, error) {
	v := tx.Bucket(bucketRecordings).Get(id[:])
	if v == nil {
		return nil, fmt.Errorf("%s: %w", id, ErrNotFound)
	}
	m, err := decodeManifest(v)
	if err != nil {
		return nil, fmt.Errorf("archive: manifest %s: %w", id, err)
	}
	return m, nil
}

func putManifest(tx *bolt.Tx, m *Manifest) error {
	v, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return tx.Bucket(bucketRecordings).Put(m.ID[:], v)
}

// Manifest returns the manifest of recording id.
func (a *Archive) Manifest(id uuid.UUID) (*Manifest, error) {
	var m *Manifest
	err := a.catalog.View(func(tx *bolt.Tx) (err error) {
		m, err = getManifest(tx, id)
		return err
	})
	return m, err
}

// ErrBadID is returned for a reference that is not a recording id or a
// prefix of one (not hex, or longer than an id).
var ErrBadID = errors.New("not a recording id or id prefix")

// AmbiguousError is returned for an id prefix that names more than one
// recording.
type AmbiguousError struct {
	Ref string
	// Matches are recordings the prefix names, at most MaxAmbiguous.
	Matches []uuid.UUID
	// More says there are further matches beyond Matches.
	More bool
}

// MaxAmbiguous bounds the matches an AmbiguousError lists.
const MaxAmbiguous = 10

// Error names the prefix and the recordings it matches.
func (e *AmbiguousError) Error() string {
	ids := make([]string, len(e.Matches))
	for i, id := range e.Matches {
		ids[i] = id.String()
	}
	more := ""
	if e.More {
		more = ", and more"
	}
	return fmt.Sprintf("%q: prefix is ambiguous: it matches %s%s; give more of the id", e.Ref, strings.Join(ids, ", "), more)
}

// Resolve turns a full id or a unique prefix of its hex form (dashes
// optional) into a recording id. A full id is only looked up, not
// decoded: the caller opens the recording next (the manifest of a long
// recording is most of the cost of opening it). A reference that names
// nothing wraps ErrNotFound, one that cannot be an id ErrBadID, and a
// prefix of several ids is an *AmbiguousError.
func (a *Archive) Resolve(ref string) (uuid.UUID, error) {
	if id, err := uuid.Parse(ref); err == nil {
		err := a.catalog.View(func(tx *bolt.Tx) error {
			if tx.Bucket(bucketRecordings).Get(id[:]) != nil {
				return nil
			}
			// A taken-down id is gone, not unknown (HTTP 410, not 404).
			t, err := takedownOfIdentity(tx, id, "")
			if err != nil {
				return err
			}
			if t != nil {
				return fmt.Errorf("%s: %w: %w", id, ErrNotFound, &TakenDownError{Takedown: *t})
			}
			return fmt.Errorf("%s: %w", id, ErrNotFound)
		})
		if err != nil {
			return uuid.Nil, err
		}
		return id, nil
	}
	hexRef := strings.ToLower(strings.ReplaceAll(ref, "-", ""))
	if hexRef == "" || len(hexRef) > 32 {
		return uuid.Nil, fmt.Errorf("%q: %w (want 1 to 32 hex digits)", ref, ErrBadID)
	}
	if _, err := hex.DecodeString(hexRef + strings.Repeat("0", len(hexRef)%2)); err != nil {
		return uuid.Nil, fmt.Errorf("%q: %w (want hex digits)", ref, ErrBadID)
	}
	prefix, _ := hex.DecodeString(hexRef[:len(hexRef)&^1])
	var found []uuid.UUID
	err := a.catalog.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketRecordings).Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			if strings.HasPrefix(hex.EncodeToString(k), hexRef) {
				found = append(found, uuid.UUID(k))
				if len(found) > MaxAmbiguous {
					break
				}
			}
		}
		return nil
	})
	if err != nil {
		return uuid.Nil, err
	}
	switch len(found) {
	case 0:
		return uuid.Nil, fmt.Errorf("%q: %w", ref, ErrNotFound)
	case 1:
		return found[0], nil
	default:
		return uuid.Nil, &AmbiguousError{Ref: ref, Matches: found[:min(len(found), MaxAmbiguous)], More: len(found) > MaxAmbiguous}
	}
}

// List calls fn with every manifest, in id order, stopping at the first
// error. Manifests are copied out in pages so no read transaction stays
// open while fn runs.
func (a *Archive) List(ctx context.Context, fn func(*Manifest) error) error {
	const page = 256
	var after []byte
	for {
		var batch []*Manifest
		err := a.catalog.View(func(tx *bolt.Tx) error {
			c := tx.Bucket(bucketRecordings).Cursor()
			var k, v []byte
			if after == nil {
				k, v = c.First()
			} else if k, v = c.Seek(after); k != nil && bytes.Equal(k, after) {
				k, v = c.Next()
			}
			for ; k != nil && len(batch) < page; k, v = c.Next() {
				m, err := decodeManifest(v)
				if err != nil {
					return fmt.Errorf("manifest %x: %w", k, err)
				}
				batch = append(batch, m)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("archive: list: %w", err)
		}
		for _, m := range batch {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := fn(m); err != nil {
				return err
			}
		}
		if len(batch) < page {
			return nil
		}
		id := batch[len(batch)-1].ID
		after = id[:]
	}
}

// SourceID returns the recording archived from bytes with sha256 sum, if any.
func (a *Archive) SourceID(sum []byte) (uuid.UUID, bool, error) {
	var id uuid.UUID
	var ok bool
	err := a.catalog.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketSources).Get(sum); len(v) == 16 {
			id, ok = uuid.UUID(v), true
		}
		return nil
	})
	return id, ok, err
}

// MayHoldSize reports whether a file of size bytes may be archived or
// taken down already: false when no archived source and no takedown has
// that size, so the file is new without being read (an ingest then
// hashes it as it splits it, and Commit checks the sum).
func (a *Archive) MayHoldSize(size int64) (bool, error) {
	may := true
	err := a.catalog.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSourceSizes)
		if b == nil {
			return nil // a read-only catalog written before the index
		}
		prefix := binary.BigEndian.AppendUint64(nil, uint64(size))
		k, _ := b.Cursor().Seek(prefix)
		may = bytes.HasPrefix(k, prefix)
		return nil
	})
	return may, err
}

// sourceSizeKey is the bucketSourceSizes key of a source.
func sourceSizeKey(size int64, sum []byte) []byte {
	return append(binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(sum)), uint64(size)), sum...)
}

// putSource records the source of recording id: its sha256 and size.
func putSource(tx *bolt.Tx, sum []byte, size int64, id uuid.UUID) error {
	if err := tx.Bucket(bucketSources).Put(sum, id[:]); err != nil {
		return err
	}
	return tx.Bucket(bucketSourceSizes).Put(sourceSizeKey(size, sum), nil)
}

// deleteSource removes the source entries putSource wrote.
func deleteSource(tx *bolt.Tx, sum []byte, size int64) error {
	if err := tx.Bucket(bucketSources).Delete(sum); err != nil {
		return err
	}
	return tx.Bucket(bucketSourceSizes).Delete(sourceSizeKey(size, sum))
}

// indexSourceSizes fills a new bucketSourceSizes: once, for a catalog
// written before it.
func indexSourceSizes(tx *bolt.Tx) error {
	sizes := tx.Bucket(bucketSourceSizes)
	return eachSourceSize(tx, func(key []byte) error { return sizes.Put(key, nil) })
}

// eachSourceSize calls fn with the bucketSourceSizes key that each source
// of a recording and each takedown that knows its size should have.
func eachSourceSize(tx *bolt.Tx, fn func(key []byte) error) error {
	recs := tx.Bucket(bucketRecordings)
	err := tx.Bucket(bucketSources).ForEach(func(sum, id []byte) error {
		v := recs.Get(id)
		if v == nil {
			return nil // dangling: check --repair removes it
		}
		size, err := manifestNativeBytes(v)
		if err != nil {
			return fmt.Errorf("manifest %x: %w", id, err)
		}
		return fn(sourceSizeKey(size, sum))
	})
	if err != nil {
		return err
	}
	return tx.Bucket(bucketTakedowns).ForEach(func(sum, v []byte) error {
		var t Takedown
		if json.Unmarshal(v, &t) != nil || t.Size <= 0 {
			return nil // recorded before sizes were kept (or unreadable: takedownOf says so)
		}
		return fn(sourceSizeKey(t.Size, sum))
	})
}

// manifestNativeBytes reads the native size from a stored manifest
// without decoding its chunk table.
func manifestNativeBytes(v []byte) (int64, error) {
	head, _, ok := splitTable(v)
	if !ok {
		head = v
	}
	var m struct {
		NativeBytes int64 `json:"native_bytes"`
	}
	err := json.Unmarshal(head, &m)
	return m.NativeBytes, err
}

// Session returns the ids of the recordings of a session.
func (a *Archive) Session(session string) ([]uuid.UUID, error) {
	var ids []uuid.UUID
	prefix := sessionPrefix(session)
	err := a.catalog.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketSessions).Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			if len(k) == len(prefix)+16 {
				ids = append(ids, uuid.UUID(k[len(prefix):]))
			}
		}
		return nil
	})
	return ids, err
}

// MaxChunkBytes bounds one chunk's native size: ingest refuses larger
// chunks, and a manifest claiming more is treated as corrupt rather than
// trusted with an allocation.
const MaxChunkBytes = formats.MaxChunkBytes
