// The local chunk cache of remote recordings: one file per chunk blob under
// <archive>/cache, named by recording id and offset in its object, bounded
// in bytes with least-recently-used eviction. It is a cache: a failed write
// or a file removed behind its back costs a GET, never a wrong byte (every
// blob's native bytes are checked against the manifest's CRC-32C, and a
// cached copy that fails is dropped and fetched again).

package archive

import (
	"container/list"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"
)

// cacheDir is where the chunk cache lives.
func (a *Archive) cacheDir() string { return filepath.Join(a.dir, "cache") }

// chunkCache is a bounded directory of chunk blobs.
type chunkCache struct {
	dir      string
	limit    int64
	fileMode os.FileMode
	dirMode  os.FileMode

	mu    sync.Mutex
	size  int64
	lru   *list.List               // front: most recently used; values *cacheEntry
	items map[string]*list.Element // name → element

	hits, misses atomic.Int64
}

// cacheEntry is one cached blob.
type cacheEntry struct {
	name string
	size int64
}

// cacheName names the blob at off in recording id's object.
func cacheName(id uuid.UUID, off int64) string {
	return id.String() + "-" + strconv.FormatInt(off, 10)
}

// openCache indexes the blobs a previous process left in dir, oldest
// modification first, and trims them to limit.
func openCache(dir string, limit int64, fileMode, dirMode os.FileMode) *chunkCache {
	c := &chunkCache{dir: dir, limit: limit, fileMode: fileMode, dirMode: dirMode, lru: list.New(), items: map[string]*list.Element{}}
	ents, _ := os.ReadDir(dir)
	type found struct {
		name string
		size int64
		mod  int64
	}
	var files []found
	for _, e := range ents {
		info, err := e.Info()
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		if strings.HasPrefix(e.Name(), ".") {
			os.Remove(filepath.Join(dir, e.Name())) // a write cut short
			continue
		}
		files = append(files, found{e.Name(), info.Size(), info.ModTime().UnixNano()})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].mod > files[j].mod })
	for _, f := range files {
		c.items[f.name] = c.lru.PushBack(&cacheEntry{f.name, f.size})
		c.size += f.size
	}
	c.mu.Lock()
	c.evictLocked()
	c.mu.Unlock()
	return c
}

// get reads blob name of size n into buf's storage.
func (c *chunkCache) get(name string, n int64, buf []byte) ([]byte, bool) {
	c.mu.Lock()
	el := c.items[name]
	if el != nil {
		c.lru.MoveToFront(el)
	}
	c.mu.Unlock()
	if el == nil {
		c.misses.Add(1)
		return nil, false
	}
	f, err := os.Open(filepath.Join(c.dir, name))
	if err != nil {
		c.remove(name)
		c.misses.Add(1)
		return nil, false
	}
	defer f.Close()
	if int64(cap(buf)) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if k, _ := f.ReadAt(buf, 0); int64(k) != n {
		c.remove(name)
		c.misses.Add(1)
		return nil, false
	}
	c.hits.Add(1)
	return buf, true
}

// put stores blob b as name, evicting the least recently used blobs past
// the limit. Errors are ignored: the blob is fetched again next time.
func (c *chunkCache) put(name string, b []byte) {
	if int64(len(b)) > c.limit {
		return
	}
	if err := os.MkdirAll(c.dir, c.dirMode); err != nil {
		return
	}
	tmp, err := os.CreateTemp(c.dir, ".put-*")
	if err != nil {
		return
	}
	_, err = tmp.Write(b)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), c.fileMode)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(c.dir, name))
	}
	if err != nil {
		os.Remove(tmp.Name())
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el := c.items[name]; el != nil {
		c.size -= el.Value.(*cacheEntry).size
		c.lru.Remove(el)
	}
	c.items[name] = c.lru.PushFront(&cacheEntry{name, int64(len(b))})
	c.size += int64(len(b))
	c.evictLocked()
}

// evictLocked removes least recently used blobs until the cache fits.
func (c *chunkCache) evictLocked() {
	for c.size > c.limit {
		el := c.lru.Back()
		if el == nil {
			return
		}
		e := el.Value.(*cacheEntry)
		c.lru.Remove(el)
		delete(c.items, e.name)
		c.size -= e.size
		os.Remove(filepath.Join(c.dir, e.name))
	}
}

// remove drops blob name.
func (c *chunkCache) remove(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el := c.items[name]; el != nil {
		c.size -= el.Value.(*cacheEntry).size
		c.lru.Remove(el)
		delete(c.items, name)
	}
	os.Remove(filepath.Join(c.dir, name))
}

// drop removes every cached blob of recording id (a deleted recording's
// bytes must not outlive it, in a cache or elsewhere).
func (c *chunkCache) drop(id uuid.UUID) {
	prefix := id.String() + "-"
	c.mu.Lock()
	var names []string
	for name := range c.items {
		if strings.HasPrefix(name, prefix) {
			names = append(names, name)
		}
	}
	c.mu.Unlock()
	for _, n := range names {
		c.remove(n)
	}
	// Files another process cached that this one never indexed.
	_ = filepath.WalkDir(c.dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasPrefix(d.Name(), prefix) {
			os.Remove(p)
		}
		return nil
	})
}

// CacheStats says what the chunk cache holds and how it served.
type CacheStats struct {
	Bytes  int64 `json:"bytes"`
	Limit  int64 `json:"limit"`
	Blobs  int   `json:"blobs"`
	Hits   int64 `json:"hits"`
	Misses int64 `json:"misses"`
}

// stats reports the cache's size and this process's hits and misses.
func (c *chunkCache) stats() CacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return CacheStats{Bytes: c.size, Limit: c.limit, Blobs: len(c.items), Hits: c.hits.Load(), Misses: c.misses.Load()}
}

// CacheStats reports the local chunk cache.
func (a *Archive) CacheStats() CacheStats { return a.chunkCache().stats() }

// DropCache empties the local chunk cache (benchmarks measure a cold one).
func (a *Archive) DropCache() {
	c := a.chunkCache()
	c.mu.Lock()
	names := make([]string, 0, len(c.items))
	for n := range c.items {
		names = append(names, n)
	}
	c.mu.Unlock()
	for _, n := range names {
		c.remove(n)
	}
}
