// Package chunkcache is the local chunk cache of remote recordings: one
// file per chunk blob in a directory (the archive's <archive>/cache), named
// by recording id and offset in its object, bounded in bytes with
// least-recently-used eviction. It is a cache: a failed write or a file
// removed behind its back costs a GET, never a wrong byte (the archive
// checks every blob's native bytes against the manifest's CRC-32C, and
// drops a cached copy that fails and fetches it again).
package chunkcache

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

// A Cache is a bounded directory of chunk blobs, safe for concurrent use.
type Cache struct {
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

// Name names the blob at off in recording id's object, the name Drop
// finds it by.
func Name(id uuid.UUID, off int64) string {
	return id.String() + "-" + strconv.FormatInt(off, 10)
}

// Open indexes the blobs a previous process left in dir, oldest
// modification first, and trims them to limit bytes; blobs are written
// with fileMode, dir created with dirMode.
func Open(dir string, limit int64, fileMode, dirMode os.FileMode) *Cache {
	c := &Cache{dir: dir, limit: limit, fileMode: fileMode, dirMode: dirMode, lru: list.New(), items: map[string]*list.Element{}}
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

// Get reads blob name of size n into buf's storage, and reports whether
// the cache had it.
func (c *Cache) Get(name string, n int64, buf []byte) ([]byte, bool) {
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
		c.Remove(name)
		c.misses.Add(1)
		return nil, false
	}
	defer f.Close()
	if int64(cap(buf)) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if k, _ := f.ReadAt(buf, 0); int64(k) != n {
		c.Remove(name)
		c.misses.Add(1)
		return nil, false
	}
	c.hits.Add(1)
	return buf, true
}

// Put stores blob b as name, evicting the least recently used blobs past
// the limit. Errors are ignored: the blob is fetched again next time.
func (c *Cache) Put(name string, b []byte) {
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
func (c *Cache) evictLocked() {
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

// Remove drops blob name (a copy that did not decode).
func (c *Cache) Remove(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el := c.items[name]; el != nil {
		c.size -= el.Value.(*cacheEntry).size
		c.lru.Remove(el)
		delete(c.items, name)
	}
	os.Remove(filepath.Join(c.dir, name))
}

// Drop removes every cached blob of recording id (a deleted recording's
// bytes must not outlive it, in a cache or elsewhere).
func (c *Cache) Drop(id uuid.UUID) {
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
		c.Remove(n)
	}
	// Files another process cached that this one never indexed.
	_ = filepath.WalkDir(c.dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasPrefix(d.Name(), prefix) {
			os.Remove(p)
		}
		return nil
	})
}

// Stats says what the cache holds and how it served, for the archive's
// stats.
type Stats struct {
	Bytes  int64 `json:"bytes"`
	Limit  int64 `json:"limit"`
	Blobs  int   `json:"blobs"`
	Hits   int64 `json:"hits"`
	Misses int64 `json:"misses"`
}

// Stats reports the cache's size and this process's hits and misses.
func (c *Cache) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Stats{Bytes: c.size, Limit: c.limit, Blobs: len(c.items), Hits: c.hits.Load(), Misses: c.misses.Load()}
}

// Clear removes every blob the cache indexes (benchmarks measure a cold
// one).
func (c *Cache) Clear() {
	c.mu.Lock()
	names := make([]string, 0, len(c.items))
	for n := range c.items {
		names = append(names, n)
	}
	c.mu.Unlock()
	for _, n := range names {
		c.Remove(n)
	}
}
