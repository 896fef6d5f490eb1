// Disk usage of an archive directory, measured from the file system.

package archive

import (
	"io/fs"
	"path/filepath"
)

// DiskUsage returns the bytes the files under dir occupy on disk (allocated
// blocks where the platform reports them, else file sizes).
func DiskUsage(dir string) (int64, error) {
	var total int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		total += diskBytes(info)
		return nil
	})
	return total, err
}
