// Where a recording's chunks are: on this disk only, in the bucket, or in
// the bucket with a whole copy in this node's chunk cache. ls, show and
// the API say it, so an operator sees what one disk alone still holds.

package archive

import (
	"os"
	"path/filepath"

	"github.com/replayarchive/replay/archive/internal/chunkcache"
)

// Locations Archive.Location reports.
const (
	// LocationLocal: the chunks are in a shard of this archive and
	// nowhere else (not uploaded yet, or no remote store): this disk
	// alone holds the recording.
	LocationLocal = "local"
	// LocationRemote: the chunks are in the bucket (reads go through
	// the chunk cache).
	LocationRemote = "remote"
	// LocationBoth: the chunks are in the bucket, and every one of them
	// is in this node's chunk cache too (a cache: evicted as others are
	// read).
	LocationBoth = "both"
)

// Location says where recording m's chunks are: LocationLocal,
// LocationRemote or LocationBoth. It reads no bucket, only the cache
// directory, and stops at the first chunk not cached.
func (a *Archive) Location(m *Manifest) string {
	if m.Remote == "" {
		return LocationLocal
	}
	if len(m.Chunks) == 0 {
		return LocationRemote
	}
	dir := a.cacheDir()
	var off int64
	for _, c := range m.Chunks {
		fi, err := os.Stat(filepath.Join(dir, chunkcache.Name(m.ID, off)))
		if err != nil || fi.Size() != c.Stored {
			return LocationRemote
		}
		off += c.Stored
	}
	return LocationBoth
}
