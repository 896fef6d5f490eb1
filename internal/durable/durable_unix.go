//go:build unix

package durable

import (
	"errors"
	"os"
	"syscall"
)

// SyncDir makes the renames, links and unlinks in dir durable. File
// systems that cannot fsync a directory say EINVAL; there is nothing more
// to do on them.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return err
	}
	return nil
}
