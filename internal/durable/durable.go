// Package durable writes files so that they survive a power cut: a file
// replaced whole through a temporary file, fsync'd, renamed, and its
// directory synced, so that a reader finds the old contents or the new,
// never a mixture.
package durable

import (
	"fmt"
	"os"
	"path/filepath"
)

// WriteFile replaces path with data: a temporary file beside it, fsync'd
// when sync is set, renamed over path, and the directory synced. perm is
// the file's mode.
func WriteFile(path string, data []byte, perm os.FileMode, sync bool) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil && sync {
		err = SyncDir(filepath.Dir(path))
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
