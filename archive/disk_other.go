//go:build !unix

// What differs off unix (Windows, Plan 9, wasm): file sizes instead of
// block counts, no directory fsync, and no mapping larger than the file.

package archive

import (
	"io/fs"
)

// initialMmapSize is the mmap bbolt starts with. On Windows bbolt extends
// the file to the size of its mapping, so a large initial mapping would
// make every catalog and shard that large on disk: let it grow instead.
const initialMmapSize = 0

// diskBytes is what a file occupies on disk; without block counts, its size.
func diskBytes(info fs.FileInfo) int64 { return info.Size() }
