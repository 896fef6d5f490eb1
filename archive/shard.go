// Shards: opening, gating, reading, writing and closing the per-period
// bbolt files that hold chunk blobs.
//
// Each shard has a gate. Writers (commits, spills, deletes) hold its write
// lock for their transaction, and everyone who uses the open handle holds
// its use lock for reading. Compacting shard X (compact.go) holds X's write
// lock for the whole copy (commits into X wait; readers of X go on) and X's
// use lock only to close, rename and forget the handle. Other shards are not
// touched, so commits into the current shard go on while an old one is
// compacted.

package archive

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	bolt "go.etcd.io/bbolt"
)

// errNoShard is returned by updateShard and viewShard for a shard that has
// no file (and was not to be created).
var errNoShard = errors.New("no such shard")

// shardGate serialises the writers of one shard and lets a compaction swap
// its file under them.
type shardGate struct {
	write sync.Mutex   // held by each writer's transaction, and by a compaction
	use   sync.RWMutex // read-held while the open handle is used; held to swap it
}

// gate returns the gate of shard name.
func (a *Archive) gate(name string) *shardGate {
	a.mu.Lock()
	defer a.mu.Unlock()
	g := a.gates[name]
	if g == nil {
		g = &shardGate{}
		a.gates[name] = g
	}
	return g
}

// updateShard runs fn in a write transaction on shard name, creating the
// shard if create is set. Without create, a missing shard gives errNoShard.
func (a *Archive) updateShard(name string, create bool, fn func(*bolt.Tx) error) error {
	g := a.gate(name)
	g.write.Lock()
	defer g.write.Unlock()
	g.use.RLock()
	defer g.use.RUnlock()
	db, err := a.openShard(name, create)
	if err != nil {
		return err
	}
	return update(db, fn)
}

// viewShard runs fn in a read transaction on shard name; a missing shard
// gives errNoShard.
func (a *Archive) viewShard(name string, fn func(*bolt.Tx) error) error {
	g := a.gate(name)
	g.use.RLock()
	defer g.use.RUnlock()
	db, err := a.openShard(name, false)
	if err != nil {
		return err
	}
	return db.View(fn)
}

// openShard is shard, with errNoShard for a missing file.
func (a *Archive) openShard(name string, create bool) (*bolt.DB, error) {
	db, err := a.shard(name, create)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("archive: shard %s: %w", name, errNoShard)
	}
	return db, err
}

// shardPath is the file of shard name.
func (a *Archive) shardPath(name string) string {
	return filepath.Join(a.dir, "shards", name+".db")
}

// shard returns the open shard name, opening (and with create, creating) it.
func (a *Archive) shard(name string, create bool) (*bolt.DB, error) {
	if name == "" || strings.ContainsAny(name, `/\`) || strings.HasPrefix(name, ".") {
		return nil, fmt.Errorf("archive: bad shard name %q", name)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil, errors.New("archive: closed")
	}
	if db := a.shards[name]; db != nil {
		return db, nil
	}
	path := a.shardPath(name)
	if create && a.opts.ReadOnly {
		return nil, fmt.Errorf("archive: shard %s: opened read-only", name)
	}
	if !create {
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("archive: shard %s: %w", name, err)
		}
	}
	db, err := openBolt(path, a.opts)
	if err != nil {
		return nil, err
	}
	if create {
		if err := update(db, func(tx *bolt.Tx) error {
			_, err := tx.CreateBucketIfNotExists(bucketChunks)
			return err
		}); err != nil {
			db.Close()
			return nil, fmt.Errorf("archive: shard %s: %w", name, err)
		}
	}
	a.shards[name] = db
	return db, nil
}

// closeShard closes a shard if it is open, so its file can be removed or
// replaced.
func (a *Archive) closeShard(name string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	db := a.shards[name]
	if db == nil {
		return nil
	}
	delete(a.shards, name)
	return db.Close()
}

// Shards lists the shard names on disk, sorted.
func (a *Archive) Shards() ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(a.dir, "shards"))
	if err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	var names []string
	for _, e := range ents {
		if n, ok := strings.CutSuffix(e.Name(), ".db"); ok && !e.IsDir() {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names, nil
}
