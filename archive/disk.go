// Disk usage of an archive directory, measured from the file system.

package archive

import (
	"errors"
	"io/fs"
	"path/filepath"
)

// DiskUsage returns the bytes the files under dir occupy on disk (allocated
// blocks where the platform reports them, else file sizes).
func DiskUsage(dir string) (int64, error) {
	var total int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		n, err := entryBytes(d, err)
		total += n
		return err
	})
	return total, err
}

// storedUsage is DiskUsage of an archive directory without its search
// index (<archive>/index, derived) and the mirrors of pushed files being
// received (<archive>/push): what Prune gives back. The index's background
// merges, and pushes, change those files while prune runs and made the
// bytes returned by a small prune come out negative.
func storedUsage(dir string) (int64, error) {
	index, push := filepath.Join(dir, "index"), filepath.Join(dir, "push")
	var total int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if (path == index || path == push) && d != nil && d.IsDir() {
			return filepath.SkipDir
		}
		n, err := entryBytes(d, err)
		total += n
		return err
	})
	return total, err
}

// entryBytes is what one walked entry adds to DiskUsage. A file or directory
// removed between its parent's listing and this look adds nothing instead
// of failing the measurement: the search index merges and deletes segment
// files while a server measures. A missing root (d is nil) stays an error.
func entryBytes(d fs.DirEntry, err error) (int64, error) {
	if d != nil && errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil || d.IsDir() {
		return 0, err
	}
	info, err := d.Info()
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return diskBytes(info), nil
}
