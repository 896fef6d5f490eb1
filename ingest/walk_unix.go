//go:build unix

package ingest

import (
	"fmt"
	"io/fs"
	"syscall"
)

// dirKey identifies a directory however it is reached: device and inode.
type dirKey struct {
	dev, ino uint64
}

func dirKeyOf(path string, st fs.FileInfo) (dirKey, error) {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return dirKey{}, fmt.Errorf("%s: no device and inode from stat", path)
	}
	return dirKey{dev: uint64(sys.Dev), ino: uint64(sys.Ino)}, nil // Dev and Ino widths differ by platform
}
