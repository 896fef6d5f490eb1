// Package catalog keeps the state that several archive nodes share: the
// moderators' marks (flags, holds, takedowns), tokens, settings (retention
// policy, remote configuration), the audit log and which recordings the
// bucket holds. Each node keeps its own archive (catalog.db, shards, search
// index) as a cache of this state and of the bucket; a node started on an
// empty disk against the same catalog and bucket rebuilds everything.
//
// A Catalog is a set of entries, each named by a kind and a key, plus a
// change feed: every Put and Delete gets a sequence number larger than any
// before it, and Since returns the changes after a number in order, deletes
// included, so a node that remembers the last number it applied catches up
// exactly. Watch wakes a follower when a change may have committed (LISTEN/
// NOTIFY on PostgreSQL). Leases let one node at a time run the work that
// deletes (repair, retention sweeps, takedown purges).
//
// Two implementations pass the same contract (catalogtest): PostgreSQL
// (postgres:// URLs, through pgx), for several nodes; and bbolt (a file
// path), the embedded default for one machine.
package catalog

import (
	"context"
	"errors"
	"time"
)

// Kind names what an entry holds; a key is unique within its kind.
type Kind string

// The kinds of shared state, with the form of their keys.
const (
	// KindFlag: key "<recording id>/<flag name>", value the flag's JSON.
	KindFlag Kind = "flag"
	// KindHold: key "<recording id>", value the hold's JSON.
	KindHold Kind = "hold"
	// KindTakedown: key the file's hex sha256, value the takedown's JSON.
	KindTakedown Kind = "takedown"
	// KindToken: key the token's name, value the token's JSON (its hash,
	// never the token).
	KindToken Kind = "token"
	// KindSetting: key the setting's name ("policy", "remote").
	KindSetting Kind = "setting"
	// KindAudit: key "<node>/<node's sequence>", value one audit entry's
	// JSON; audit entries are never deleted.
	KindAudit Kind = "audit"
	// KindManifest: key "<recording id>", value the bucket object's key and
	// manifest key: a node learns of another's upload without listing the
	// bucket.
	KindManifest Kind = "manifest"
)

// Entry is one piece of shared state, or the change that deleted it.
type Entry struct {
	// Seq is the change's place in the feed, assigned by the catalog.
	Seq   int64
	Kind  Kind
	Key   string
	Value []byte
	// Deleted marks the change that removed the entry (Value is nil).
	Deleted bool
	// Node is the node that made the change; At when the catalog took it.
	Node string
	At   time.Time
}

// ErrExists is returned by Create when the entry exists (and is not deleted).
var ErrExists = errors.New("catalog: entry exists")

// ErrClosed is returned by a Catalog's methods after Close.
var ErrClosed = errors.New("catalog: closed")

// Catalog is the shared state. Implementations are safe for concurrent use
// by many goroutines, and by many processes where the store allows it
// (PostgreSQL: any number of nodes; bbolt: one process).
type Catalog interface {
	// Put stores value under kind and key, replacing what was there, and
	// returns the change with its sequence number.
	Put(ctx context.Context, kind Kind, key string, value []byte, node string) (Entry, error)
	// Create stores value only when no live entry has kind and key; when
	// one does it returns that entry and ErrExists. Two nodes that create
	// the same key at once: exactly one succeeds.
	Create(ctx context.Context, kind Kind, key string, value []byte, node string) (Entry, error)
	// Delete removes the entry and returns the change that records the
	// deletion (a follower sees it in Since). Deleting what does not
	// exist records nothing and returns ok=false.
	Delete(ctx context.Context, kind Kind, key string, node string) (e Entry, ok bool, err error)
	// Get returns the live entry under kind and key.
	Get(ctx context.Context, kind Kind, key string) (e Entry, ok bool, err error)
	// List returns the live entries of kind whose keys start with prefix,
	// in key order.
	List(ctx context.Context, kind Kind, prefix string) ([]Entry, error)
	// Since returns up to limit changes with sequence numbers above after,
	// in order. A follower that applies them and remembers the last
	// number sees every change exactly once. A batch may hold fewer than
	// limit (at least one change, and no more than a few MiB of values
	// beyond it); an empty one means the follower has caught up.
	Since(ctx context.Context, after int64, limit int) ([]Entry, error)
	// Watch returns a channel that receives (without blocking the
	// catalog; wake-ups may merge) after changes commit, until ctx ends.
	// A follower still polls now and then: a wake-up may be lost while a
	// connection is re-made. The channel is closed when ctx ends or the
	// catalog closes.
	Watch(ctx context.Context) (<-chan struct{}, error)
	// Lease takes or renews the lease name for holder until ttl from now,
	// and reports whether holder has it: a lease another holder renewed
	// less than its ttl ago is not taken.
	Lease(ctx context.Context, name, holder string, ttl time.Duration) (bool, error)
	// Unlease gives the lease up if holder has it.
	Unlease(ctx context.Context, name, holder string) error
	// Close releases the catalog's connections or file; calling it again
	// does nothing.
	Close() error
}
