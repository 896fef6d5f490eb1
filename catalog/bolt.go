package catalog

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// The bbolt store's buckets.
const (
	// bucketEntries: kind NUL key -> the live entry (encodeEntry).
	bucketEntries = "entries"
	// bucketFeed: seq (8 bytes big-endian) -> the change (encodeEntry),
	// deletions included; its NextSequence numbers the changes.
	bucketFeed = "feed"
	// bucketLeases: name -> encodeLease.
	bucketLeases = "leases"
)

// openLockTimeout bounds the wait for another process's lock on the file:
// bbolt is for one process.
const openLockTimeout = 2 * time.Second

// boltCatalog is the Catalog of one process, in a bbolt file. bbolt runs one
// write transaction at a time, so sequence numbers are taken and committed
// in one order and Create needs nothing more to be race-free.
type boltCatalog struct {
	db     *bolt.DB
	path   string
	closed atomic.Bool

	mu sync.Mutex // guards watchers and, with closed, their closing
	// watchers maps each Watch's channel to what stops its context.AfterFunc.
	watchers map[chan struct{}]func() bool
}

// openBolt opens (creating, 0600) the bbolt file at path.
func openBolt(ctx context.Context, path string) (*boltCatalog, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("catalog: open %s: %w", path, err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: openLockTimeout})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("catalog: open %s: another process has it open (a bbolt catalog is for one process; several nodes share a postgres:// catalog)", path)
	}
	if err != nil {
		return nil, fmt.Errorf("catalog: open %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, name := range []string{bucketEntries, bucketFeed, bucketLeases} {
			if _, err := tx.CreateBucketIfNotExists([]byte(name)); err != nil {
				return fmt.Errorf("bucket %s: %w", name, err)
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("catalog: open %s: %w", path, err)
	}
	return &boltCatalog{db: db, path: path, watchers: map[chan struct{}]func() bool{}}, nil
}

// entryKey is the entries bucket's key of kind and key.
func entryKey(kind Kind, key string) []byte {
	b := make([]byte, 0, len(kind)+1+len(key))
	b = append(b, kind...)
	b = append(b, 0)
	return append(b, key...)
}

// seqKey is the feed bucket's key of seq.
func seqKey(seq int64) []byte {
	return binary.BigEndian.AppendUint64(nil, uint64(seq))
}

// begin refuses an operation on a closed catalog or with an ended context.
func (c *boltCatalog) begin(ctx context.Context) error {
	if c.closed.Load() {
		return ErrClosed
	}
	return ctx.Err()
}

// fail wraps err with the operation; bbolt's "not open" after a racing
// Close becomes ErrClosed.
func (c *boltCatalog) fail(op string, err error) error {
	if errors.Is(err, ErrClosed) || errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return fmt.Errorf("%w: %s", ErrClosed, op)
	}
	return fmt.Errorf("catalog: %s: %w", op, err)
}

// boltGetEntry reads the live entry of kind and key in tx.
func boltGetEntry(tx *bolt.Tx, kind Kind, key string) (Entry, bool, error) {
	v := tx.Bucket([]byte(bucketEntries)).Get(entryKey(kind, key))
	if v == nil {
		return Entry{}, false, nil
	}
	e, err := decodeEntry(v)
	if err != nil {
		return Entry{}, false, err
	}
	if e.Kind != kind || e.Key != key || e.Deleted {
		return Entry{}, false, fmt.Errorf("corrupt entry: %s/%s stored under %s/%s (deleted %v)", e.Kind, e.Key, kind, key, e.Deleted)
	}
	return e, true, nil
}

// record gives e the next sequence number and the time, adds it to the
// feed and stores or removes the live entry.
func record(tx *bolt.Tx, e *Entry) error {
	feed := tx.Bucket([]byte(bucketFeed))
	seq, err := feed.NextSequence()
	if err != nil {
		return err
	}
	e.Seq = int64(seq)
	e.At = time.UnixMicro(time.Now().UnixMicro()).UTC()
	v := encodeEntry(*e)
	if err := feed.Put(seqKey(e.Seq), v); err != nil {
		return err
	}
	if e.Deleted {
		return tx.Bucket([]byte(bucketEntries)).Delete(entryKey(e.Kind, e.Key))
	}
	return tx.Bucket([]byte(bucketEntries)).Put(entryKey(e.Kind, e.Key), v)
}

// write runs fn in a write transaction and wakes the watchers after it
// commits a change.
func (c *boltCatalog) write(ctx context.Context, fn func(tx *bolt.Tx) (changed bool, err error)) error {
	if err := c.begin(ctx); err != nil {
		return err
	}
	var changed bool
	err := c.db.Update(func(tx *bolt.Tx) error {
		var err error
		changed, err = fn(tx)
		return err
	})
	if err != nil {
		return err
	}
	if changed {
		c.wake()
	}
	return nil
}

// Put stores value under kind and key (see Catalog).
func (c *boltCatalog) Put(ctx context.Context, kind Kind, key string, value []byte, node string) (Entry, error) {
	op := "put " + string(kind) + "/" + key
	if err := checkWrite(kind, key, value, node); err != nil {
		return Entry{}, c.fail(op, err)
	}
	e := Entry{Kind: kind, Key: key, Value: append([]byte{}, value...), Node: node}
	err := c.write(ctx, func(tx *bolt.Tx) (bool, error) {
		return true, record(tx, &e)
	})
	if err != nil {
		return Entry{}, c.fail(op, err)
	}
	return e, nil
}

// Create stores value unless a live entry has kind and key (see Catalog).
func (c *boltCatalog) Create(ctx context.Context, kind Kind, key string, value []byte, node string) (Entry, error) {
	op := "create " + string(kind) + "/" + key
	if err := checkWrite(kind, key, value, node); err != nil {
		return Entry{}, c.fail(op, err)
	}
	e := Entry{Kind: kind, Key: key, Value: append([]byte{}, value...), Node: node}
	var exists bool
	err := c.write(ctx, func(tx *bolt.Tx) (bool, error) {
		old, ok, err := boltGetEntry(tx, kind, key)
		if err != nil || ok {
			e, exists = old, ok
			return false, err
		}
		return true, record(tx, &e)
	})
	if err != nil {
		return Entry{}, c.fail(op, err)
	}
	if exists {
		return e, fmt.Errorf("%w: %s/%s", ErrExists, kind, key)
	}
	return e, nil
}

// Delete removes the entry and records the deletion (see Catalog).
func (c *boltCatalog) Delete(ctx context.Context, kind Kind, key string, node string) (Entry, bool, error) {
	op := "delete " + string(kind) + "/" + key
	if err := checkWrite(kind, key, nil, node); err != nil {
		return Entry{}, false, c.fail(op, err)
	}
	e := Entry{Kind: kind, Key: key, Deleted: true, Node: node}
	var found bool
	err := c.write(ctx, func(tx *bolt.Tx) (bool, error) {
		_, ok, err := boltGetEntry(tx, kind, key)
		if err != nil || !ok {
			return false, err
		}
		found = true
		return true, record(tx, &e)
	})
	if err != nil || !found {
		return Entry{}, false, c.failIf(op, err)
	}
	return e, true, nil
}

// failIf is fail for a non-nil err.
func (c *boltCatalog) failIf(op string, err error) error {
	if err == nil {
		return nil
	}
	return c.fail(op, err)
}

// read runs fn in a read transaction.
func (c *boltCatalog) read(ctx context.Context, fn func(tx *bolt.Tx) error) error {
	if err := c.begin(ctx); err != nil {
		return err
	}
	return c.db.View(fn)
}

// Get returns the live entry under kind and key (see Catalog).
func (c *boltCatalog) Get(ctx context.Context, kind Kind, key string) (e Entry, ok bool, err error) {
	op := "get " + string(kind) + "/" + key
	if err := checkName(kind, key); err != nil {
		return Entry{}, false, c.fail(op, err)
	}
	err = c.read(ctx, func(tx *bolt.Tx) error {
		e, ok, err = boltGetEntry(tx, kind, key)
		return err
	})
	if err != nil {
		return Entry{}, false, c.fail(op, err)
	}
	return e, ok, nil
}

// List returns the live entries of kind under prefix, in key order (see
// Catalog).
func (c *boltCatalog) List(ctx context.Context, kind Kind, prefix string) ([]Entry, error) {
	op := "list " + string(kind) + "/" + prefix
	if err := checkText("kind", string(kind), maxKindLen, false); err != nil {
		return nil, c.fail(op, err)
	}
	if err := checkText("prefix", prefix, maxKeyLen, true); err != nil {
		return nil, c.fail(op, err)
	}
	var list []Entry
	err := c.read(ctx, func(tx *bolt.Tx) error {
		start := entryKey(kind, prefix)
		cur := tx.Bucket([]byte(bucketEntries)).Cursor()
		for k, v := cur.Seek(start); k != nil && bytes.HasPrefix(k, start); k, v = cur.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			e, err := decodeEntry(v)
			if err != nil {
				return fmt.Errorf("%q: %w", k, err)
			}
			list = append(list, e)
		}
		return nil
	})
	if err != nil {
		return nil, c.fail(op, err)
	}
	return list, nil
}

// Since returns the changes after the sequence number after (see Catalog).
func (c *boltCatalog) Since(ctx context.Context, after int64, limit int) ([]Entry, error) {
	op := fmt.Sprintf("since %d", after)
	after, limit, err := checkSince(after, limit)
	if err != nil {
		return nil, c.fail(op, err)
	}
	var list []Entry
	err = c.read(ctx, func(tx *bolt.Tx) error {
		cur := tx.Bucket([]byte(bucketFeed)).Cursor()
		size := 0
		for k, v := cur.Seek(seqKey(after + 1)); k != nil && len(list) < limit && size < maxBatchBytes; k, v = cur.Next() {
			e, err := decodeEntry(v)
			if err != nil {
				return fmt.Errorf("change %x: %w", k, err)
			}
			if !bytes.Equal(k, seqKey(e.Seq)) {
				return fmt.Errorf("change %x: corrupt: holds sequence %d", k, e.Seq)
			}
			list = append(list, e)
			size += len(e.Value)
		}
		return nil
	})
	if err != nil {
		return nil, c.fail(op, err)
	}
	return list, nil
}

// Watch returns a channel woken after each committed change until ctx ends,
// when it is closed (see Catalog).
func (c *boltCatalog) Watch(ctx context.Context) (<-chan struct{}, error) {
	if err := c.begin(ctx); err != nil {
		return nil, c.fail("watch", err)
	}
	ch := make(chan struct{}, 1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed.Load() {
		return nil, c.fail("watch", ErrClosed)
	}
	c.watchers[ch] = context.AfterFunc(ctx, func() { c.unwatch(ch) })
	return ch, nil
}

// unwatch closes and forgets ch, unless Close did.
func (c *boltCatalog) unwatch(ch chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.watchers[ch]; ok {
		delete(c.watchers, ch)
		close(ch)
	}
}

// wake sends to every watcher that has no wake-up pending, without
// waiting.
func (c *boltCatalog) wake() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for ch := range c.watchers {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// Lease takes or renews the lease name for holder (see Catalog). Times are
// this process's clock: it is the only one using the file.
func (c *boltCatalog) Lease(ctx context.Context, name, holder string, ttl time.Duration) (bool, error) {
	op := "lease " + name + " for " + holder
	if err := checkLease(name, holder, ttl); err != nil {
		return false, c.fail(op, err)
	}
	var got bool
	err := c.write(ctx, func(tx *bolt.Tx) (bool, error) {
		b := tx.Bucket([]byte(bucketLeases))
		now := time.Now()
		if v := b.Get([]byte(name)); v != nil {
			l, err := decodeLease(v)
			if err != nil {
				return false, err
			}
			if l.holder != holder && !l.until.Before(now) {
				return false, nil
			}
		}
		got = true
		return false, b.Put([]byte(name), encodeLease(lease{holder: holder, until: now.Add(ttl)}))
	})
	if err != nil {
		return false, c.fail(op, err)
	}
	return got, nil
}

// Unlease gives the lease up if holder has it (see Catalog).
func (c *boltCatalog) Unlease(ctx context.Context, name, holder string) error {
	op := "unlease " + name + " for " + holder
	if err := checkLease(name, holder, 1); err != nil {
		return c.fail(op, err)
	}
	err := c.write(ctx, func(tx *bolt.Tx) (bool, error) {
		b := tx.Bucket([]byte(bucketLeases))
		v := b.Get([]byte(name))
		if v == nil {
			return false, nil
		}
		l, err := decodeLease(v)
		if err != nil || l.holder != holder {
			return false, err
		}
		return false, b.Delete([]byte(name))
	})
	return c.failIf(op, err)
}

// Close closes the watchers' channels and the file; later calls do
// nothing.
func (c *boltCatalog) Close() error {
	c.mu.Lock()
	if c.closed.Swap(true) {
		c.mu.Unlock()
		return nil
	}
	for ch, stop := range c.watchers {
		stop()
		close(ch)
	}
	clear(c.watchers)
	c.mu.Unlock()
	if err := c.db.Close(); err != nil {
		return fmt.Errorf("catalog: close %s: %w", c.path, err)
	}
	return nil
}
