package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/replayarchive/replay/internal/durable"
)

// notDirErr is what opening "a/b" gives when "a" is an object: no object
// "a/b" then, not a failure.
var notDirErr error = syscall.ENOTDIR

// Dir is a Store in a local directory: one file per object, the key's
// segments as subdirectories. It is the local tier and the reference the
// S3 store is tested against. Several processes may share one Dir: writes
// go through a temporary file in the object's own directory, renamed (Put)
// or hard-linked (PutIfAbsent) into place, so readers never see a partial
// object and exactly one racing PutIfAbsent wins.
//
// A key cannot be both an object and the directory of another ("a" and
// "a/b"): the second write fails. S3 allows it; the archive's key layout
// never needs it.
type Dir struct {
	root string
}

// tmpPrefix starts the name of a temporary file; ValidKey forbids keys
// with a segment starting with '.', so no key can name one.
const tmpPrefix = ".tmp-"

// NewDir opens (creating if needed) the directory root as a Store.
func NewDir(root string) (*Dir, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("blob: dir %s: %w", root, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("blob: dir %s: %w", root, err)
	}
	return &Dir{root: abs}, nil
}

// Root returns the directory's absolute path, so another process can open
// the same store.
func (d *Dir) Root() string { return d.root }

// path maps a valid key to its file.
func (d *Dir) path(key string) (string, error) {
	if err := ValidKey(key); err != nil {
		return "", err
	}
	return filepath.Join(d.root, filepath.FromSlash(key)), nil
}

// Put implements Store.
func (d *Dir) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	p, err := d.path(key)
	if err != nil {
		return err
	}
	tmp, err := d.writeTemp(ctx, p, key, r, size)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, p); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("blob: put %s: %w", key, err)
	}
	return syncDir(filepath.Dir(p))
}

// PutIfAbsent implements Store with a hard link: link(2) fails when the
// target exists, atomically across processes, and the linked file is
// already complete.
func (d *Dir) PutIfAbsent(ctx context.Context, key string, r io.Reader, size int64) (bool, error) {
	p, err := d.path(key)
	if err != nil {
		return false, err
	}
	if st, err := os.Lstat(p); err == nil {
		if st.IsDir() {
			return false, fmt.Errorf("blob: put-if-absent %s: the key is a directory of other keys", key)
		}
		return false, nil // cheap early answer; the link below decides races
	}
	tmp, err := d.writeTemp(ctx, p, key, r, size)
	if err != nil {
		return false, err
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, p); err != nil {
		if errors.Is(err, fs.ErrExist) {
			if st, serr := os.Lstat(p); serr == nil && st.IsDir() {
				return false, fmt.Errorf("blob: put-if-absent %s: the key is a directory of other keys", key)
			}
			return false, nil
		}
		return false, fmt.Errorf("blob: put-if-absent %s: %w", key, err)
	}
	return true, syncDir(filepath.Dir(p))
}

// writeTemp copies r into a synced temporary file beside p and returns its
// name; on error nothing is left behind.
func (d *Dir) writeTemp(ctx context.Context, p, key string, r io.Reader, size int64) (name string, err error) {
	dir := filepath.Dir(p)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("blob: put %s: %w", key, err)
	}
	f, err := os.CreateTemp(dir, tmpPrefix+"*")
	if err != nil {
		return "", fmt.Errorf("blob: put %s: %w", key, err)
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	n, err := io.Copy(f, ctxReader{ctx, r})
	if err != nil {
		return "", fmt.Errorf("blob: put %s: after %d bytes: %w", key, n, err)
	}
	if size >= 0 && n != size {
		return "", fmt.Errorf("blob: put %s: read %d bytes, size says %d", key, n, size)
	}
	if err := f.Sync(); err != nil {
		return "", fmt.Errorf("blob: put %s: %w", key, err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("blob: put %s: %w", key, err)
	}
	return f.Name(), nil
}

// open opens the object's file, mapping a missing file or a directory (a
// key that is only a prefix of others) to ErrNotFound.
func (d *Dir) open(key string) (*os.File, int64, error) {
	p, err := d.path(key)
	if err != nil {
		return nil, 0, err
	}
	f, err := os.Open(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, notDirErr) {
			return nil, 0, notFound(key)
		}
		return nil, 0, fmt.Errorf("blob: get %s: %w", key, err)
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, 0, fmt.Errorf("blob: get %s: %w", key, err)
	}
	if !st.Mode().IsRegular() {
		_ = f.Close()
		return nil, 0, notFound(key)
	}
	return f, st.Size(), nil
}

// Get implements Store.
func (d *Dir) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, _, err := d.open(key)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// GetRange implements Store.
func (d *Dir) GetRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	if err := checkRange(key, off, n); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, size, err := d.open(key)
	if err != nil {
		return nil, err
	}
	if off >= size {
		_ = f.Close()
		return emptyReader(), nil
	}
	n = min(n, size-off)
	return sectionCloser{io.NewSectionReader(f, off, n), f}, nil
}

// Stat implements Store.
func (d *Dir) Stat(ctx context.Context, key string) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	p, err := d.path(key)
	if err != nil {
		return 0, err
	}
	st, err := os.Stat(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, notDirErr) {
			return 0, notFound(key)
		}
		return 0, fmt.Errorf("blob: stat %s: %w", key, err)
	}
	if !st.Mode().IsRegular() {
		return 0, notFound(key)
	}
	return st.Size(), nil
}

// Delete implements Store. Emptied directories stay: removing them would
// race with a Put creating a file in them.
func (d *Dir) Delete(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p, err := d.path(key)
	if err != nil {
		return err
	}
	st, err := os.Lstat(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, notDirErr) {
			return nil
		}
		return fmt.Errorf("blob: delete %s: %w", key, err)
	}
	if st.IsDir() {
		return nil // a prefix of other keys, not an object
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("blob: delete %s: %w", key, err)
	}
	return nil
}

// List implements Store. It walks only the directory the prefix's
// complete segments name, and visits each directory's entries sorted as
// keys sort (a subdirectory "a" as "a/"), so keys come out in byte order
// without collecting them first.
func (d *Dir) List(ctx context.Context, prefix string, fn func(key string, size int64) error) error {
	return d.ListInfo(ctx, prefix, func(o Info) error { return fn(o.Key, o.Size) })
}

// ListInfo implements Store: List with each file's mtime.
func (d *Dir) ListInfo(ctx context.Context, prefix string, fn func(Info) error) error {
	if err := validPrefix(prefix); err != nil {
		return err
	}
	base := ""
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		base = prefix[:i+1]
	}
	return d.walk(ctx, base, prefix, fn)
}

// walk lists the directory holding keys that start with dirKey (empty or
// ending in '/'), calling fn for those that start with prefix.
func (d *Dir) walk(ctx context.Context, dirKey, prefix string, fn func(Info) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	entries, err := os.ReadDir(filepath.Join(d.root, filepath.FromSlash(dirKey)))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, notDirErr) {
			return nil
		}
		return fmt.Errorf("blob: list %q: %w", prefix, err)
	}
	type entry struct {
		key string
		dir bool
	}
	list := make([]entry, 0, len(entries))
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue // temporary files; never a key
		}
		k := dirKey + name
		if e.IsDir() {
			k += "/"
		}
		// Keep what can still match: k starts with prefix, or (for a
		// directory) prefix starts with k.
		if !strings.HasPrefix(k, prefix) && !(e.IsDir() && strings.HasPrefix(prefix, k)) {
			continue
		}
		list = append(list, entry{k, e.IsDir()})
	}
	sort.Slice(list, func(i, j int) bool { return list[i].key < list[j].key })
	for _, e := range list {
		if e.dir {
			if err := d.walk(ctx, e.key, prefix, fn); err != nil {
				return err
			}
			continue
		}
		st, err := os.Stat(filepath.Join(d.root, filepath.FromSlash(e.key)))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue // deleted while listing
			}
			return fmt.Errorf("blob: list %q: %w", prefix, err)
		}
		if !st.Mode().IsRegular() {
			continue
		}
		if err := fn(Info{Key: e.key, Size: st.Size(), Modified: st.ModTime()}); err != nil {
			return err
		}
	}
	return nil
}

// syncDir makes a rename or link in dir durable. Windows cannot sync a
// directory and does not need to.
func syncDir(dir string) error {
	if err := durable.SyncDir(dir); err != nil {
		return fmt.Errorf("blob: sync %s: %w", dir, err)
	}
	return nil
}

// sectionCloser reads a section of a file and closes the file.
type sectionCloser struct {
	*io.SectionReader
	f *os.File
}

// Close implements io.Closer.
func (s sectionCloser) Close() error { return s.f.Close() }

// ctxReader stops a long copy when its context is cancelled.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

// Read implements io.Reader.
func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
