// Package blob is the archive's object-storage tier: a small key/value store
// of immutable byte objects with ranged reads, listing by prefix and an
// atomic create-only write. Sealed recordings move out of the local shards
// into it; a local directory (Dir) and an S3-compatible bucket
// (S3) implement it, and blobtest checks both against the same contract.
//
// Keys are '/'-separated relative paths ("rec/2026-01/<id>"): no empty
// segment, no "." or ".." segment, no leading '/', no segment starting with
// '.' (Dir keeps its temporary files there), no backslash or NUL byte. The
// same key names the same object in every implementation.
package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// ErrNotFound is the error (tested with errors.Is) for a key that names no
// object: callers tell "not there" from "could not ask" with it, which is
// what an orphan check or a catching-up node needs.
var ErrNotFound = errors.New("no such object")

// Store is an object store. Objects are written whole and read whole or by
// range; nothing is appended in place, so an object seen by a reader is
// always complete.
type Store interface {
	// Put writes the object at key, replacing any object there. size is the
	// length of r when known, or -1 to stream an unknown length; a known
	// size that r does not match is an error and leaves no object behind.
	// Readers see the old object or the new one, never a part.
	Put(ctx context.Context, key string, r io.Reader, size int64) error
	// PutIfAbsent writes the object only when key names none. Of several
	// writers racing on the same key, in one process or several, exactly
	// one gets created == true; the others get false and a nil error, and
	// the object holds the winner's bytes. It is the commit point of a
	// manifest: whoever wrote it first owns the recording.
	PutIfAbsent(ctx context.Context, key string, r io.Reader, size int64) (created bool, err error)
	// Get opens the whole object. A missing key is ErrNotFound, reported by
	// Get itself rather than by the first Read.
	Get(ctx context.Context, key string) (io.ReadCloser, error)
	// GetRange opens at most n bytes of the object from offset off: one
	// ranged read serves one chunk of a recording. A range reaching past the
	// end is cut at the end (zero bytes when off is at or past it); a
	// missing key is ErrNotFound; negative off or n is an error.
	GetRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error)
	// Stat returns the object's size, or ErrNotFound.
	Stat(ctx context.Context, key string) (size int64, err error)
	// Delete removes the object. Deleting a missing key is not an error, so
	// a retried takedown or prune converges.
	Delete(ctx context.Context, key string) error
	// List calls fn for every object whose key starts with prefix (a plain
	// string prefix, not only whole segments), in lexicographic byte order
	// of keys, with its size. An error from fn stops the listing and is
	// returned as is.
	List(ctx context.Context, prefix string, fn func(key string, size int64) error) error
	// ListInfo is List with each object's modification time: a bucket's
	// orphan sweep deletes an object no manifest names only once it is
	// older than a grace age, so that another writer's upload between its
	// object and its manifest is never taken for an orphan.
	ListInfo(ctx context.Context, prefix string, fn func(Info) error) error
}

// Info describes one object as ListInfo sees it.
type Info struct {
	Key  string
	Size int64
	// Modified is when the object was last written, by the store's clock
	// (the server's for S3, the file's mtime for Dir).
	Modified time.Time
}

// ValidKey reports why key cannot name an object, or nil. Every
// implementation checks it, so a key that works on one works on all, and
// none can escape a directory or a bucket prefix.
func ValidKey(key string) error {
	if key == "" {
		return fmt.Errorf("blob: empty key")
	}
	if strings.ContainsAny(key, "\\\x00") {
		return fmt.Errorf("blob: key %q: backslash and NUL are not allowed", key)
	}
	if len(key) > 1024 {
		return fmt.Errorf("blob: key %.40q...: %d bytes, at most 1024 allowed", key, len(key))
	}
	for i, seg := range strings.Split(key, "/") {
		switch {
		case seg == "":
			return fmt.Errorf("blob: key %q: segment %d is empty (leading, trailing or doubled '/')", key, i)
		case seg == "." || seg == "..":
			return fmt.Errorf("blob: key %q: segment %d is %q", key, i, seg)
		case seg[0] == '.':
			return fmt.Errorf("blob: key %q: segment %d starts with '.', reserved for temporary files", key, i)
		}
	}
	return nil
}

// validPrefix checks a List prefix: empty, or a key's leading part. Its
// last segment may be partial, so only the complete segments are checked.
func validPrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	if strings.ContainsAny(prefix, "\\\x00") || strings.HasPrefix(prefix, "/") {
		return fmt.Errorf("blob: list prefix %q: not the start of a valid key", prefix)
	}
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		if err := ValidKey(prefix[:i]); err != nil {
			return fmt.Errorf("blob: list prefix %q: %w", prefix, err)
		}
	}
	return nil
}

// checkRange rejects a range no store can serve.
func checkRange(key string, off, n int64) error {
	if off < 0 || n < 0 {
		return fmt.Errorf("blob: %s: range offset %d length %d: both must be >= 0", key, off, n)
	}
	return nil
}

// notFound wraps ErrNotFound with the key, so a log line says which.
func notFound(key string) error { return fmt.Errorf("blob: %s: %w", key, ErrNotFound) }

// emptyReader is what a range past the end reads.
func emptyReader() io.ReadCloser { return io.NopCloser(strings.NewReader("")) }
