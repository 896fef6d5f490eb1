//go:build unix

// What differs on unix: block counts from stat, directory fsync, and a
// mapping that does not extend the file.

package archive

import (
	"io/fs"
	"syscall"
)

// initialMmapSize is the mmap bbolt starts with for every file. On unix a
// mapping past the end of the file costs address space only.
const initialMmapSize = 1 << 30

// diskBytes is what a file occupies on disk: its allocated blocks, which
// for bbolt's sparse tails is less than its size.
func diskBytes(info fs.FileInfo) int64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return info.Size()
}
