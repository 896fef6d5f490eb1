//go:build !unix

package ingest

import (
	"io/fs"
	"path/filepath"
)

// dirKey identifies a directory however it is reached: without inodes
// from stat, by its real absolute path.
type dirKey struct {
	dev, ino uint64 // unused here
	path     string
}

func dirKeyOf(path string, _ fs.FileInfo) (dirKey, error) {
	real, err := filepath.EvalSymlinks(path)
	if err == nil {
		real, err = filepath.Abs(real)
	}
	return dirKey{path: real}, err
}
