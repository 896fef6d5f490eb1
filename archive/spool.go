// Upload spools: an upload (replay.Archive.IngestStream, the server's
// POST of a file) is written to a private directory of its own,
// <archive>/tmp/upload-*, before it is ingested, so that memory stays
// bounded whatever its size and the file keeps its name. The upload
// removes it when done; a process killed meanwhile leaves it behind, and
// nothing else would ever remove it. A writable Open removes such
// leftovers, Check reports them and Check with Repair removes them; the
// spools of uploads running in this process are left alone.

package archive

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// Where spools live: <archive>/<spoolDir>/<spoolPrefix>*.
const (
	spoolDir    = "tmp"
	spoolPrefix = "upload-"
)

// Spools counts upload spools and the bytes they occupy on disk.
type Spools struct {
	Count int   `json:"count"`
	Bytes int64 `json:"bytes"`
}

// spoolSet holds the spools of the uploads running in this process. The
// zero value is ready to use.
type spoolSet struct {
	mu   sync.Mutex
	busy map[string]bool
}

// NewSpool creates a private directory for one upload to be written to
// before it is ingested, under the archive's directory (the same file
// system, away from a small /tmp). done removes it; until then Check
// leaves it alone.
func (a *Archive) NewSpool() (dir string, done func() error, err error) {
	if a.opts.ReadOnly {
		return "", nil, errors.New("archive: spool an upload: the archive is open read-only")
	}
	root := filepath.Join(a.dir, spoolDir)
	if err := os.MkdirAll(root, a.opts.dirMode()); err != nil {
		return "", nil, fmt.Errorf("archive: spool an upload: %w", err)
	}
	a.spools.mu.Lock()
	defer a.spools.mu.Unlock()
	// Made while the set is held: Check lists spools under the same lock,
	// so it never meets this one before it is noted as busy.
	dir, err = os.MkdirTemp(root, spoolPrefix)
	if err != nil {
		return "", nil, fmt.Errorf("archive: spool an upload: %w", err)
	}
	if a.spools.busy == nil {
		a.spools.busy = map[string]bool{}
	}
	a.spools.busy[dir] = true
	return dir, func() error {
		err := os.RemoveAll(dir)
		a.spools.mu.Lock()
		delete(a.spools.busy, dir)
		a.spools.mu.Unlock()
		if err != nil {
			return fmt.Errorf("archive: remove upload spool: %w", err)
		}
		return nil
	}, nil
}

// leftoverSpools returns the spools under the archive's directory that no
// upload of this process is writing, and what they hold; with remove it
// removes them (stopping at the first that cannot be removed).
func (a *Archive) leftoverSpools(remove bool) (Spools, error) {
	a.spools.mu.Lock()
	defer a.spools.mu.Unlock()
	var found Spools
	dirs, err := filepath.Glob(filepath.Join(a.dir, spoolDir, spoolPrefix+"*"))
	if err != nil {
		return found, fmt.Errorf("archive: upload spools: %w", err)
	}
	for _, dir := range dirs {
		if a.spools.busy[dir] {
			continue
		}
		n, err := DiskUsage(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return found, fmt.Errorf("archive: upload spool %s: %w", dir, err)
		}
		if remove {
			if err := os.RemoveAll(dir); err != nil {
				return found, fmt.Errorf("archive: remove leftover upload spool: %w", err)
			}
		}
		found.Count++
		found.Bytes += n
	}
	return found, nil
}

// SpoolsRemovedAtOpen says which leftover upload spools Open removed (a
// writable Open, after a process was killed mid-upload), for the caller
// to report.
func (a *Archive) SpoolsRemovedAtOpen() Spools { return a.spoolsAtOpen }
