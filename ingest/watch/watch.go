// Package watch follows directories that game servers write recordings
// into and says when each file is ready to ingest.
//
// A DDNet server appends to teehistorian/<game_uuid>.teehistorian for as
// long as a game runs; a cron job that ingests the directory meanwhile
// archives half-written copies. The watcher instead tracks every file's
// size and modification time, from file-system events (fsnotify, each
// directory below the roots) and from a periodic rescan, because events
// are lost on some file systems (network mounts) and when the kernel's
// queue overflows. A file is ready when it is complete (Options.Complete:
// a teehistorian file that ends with FINISH, see CodecComplete) or when
// it has not changed for Options.Settle (a server killed mid-game, or a
// format that has no end marker). Ready files go to Options.Ready one at
// a time, in the watcher's goroutine.
//
// A file that was handed over and then changes again is watched anew: if
// it shrank or its prefix changed (a server reusing the name), a warning
// says so, as the archive will make it a new recording.
//
// A file that grows is also offered to Options.Grew, at most once per
// Options.GrowEvery: the archive extends a live recording in place as its
// file grows (docs/live.md), and seals it when the file is ready.
//
// A grow or a hand-over that fails (the archive cannot be written: a full
// disk) changes nothing the watcher knows of the file: it is offered
// again after a backoff that doubles from Options.GrowEvery up to
// Options.RetryMax, whether or not it changed, until the archive takes
// it, so that a recording catches up with its file by itself once the
// cause is gone.
package watch

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Defaults of Options.
const (
	// DefaultSettle is how long a file must stay unchanged to be ready
	// without being complete: DDNet's scripts wait 8 days; ten minutes
	// outlasts any pause of a live server's writes.
	DefaultSettle = 10 * time.Minute
	// DefaultRescan is how often every directory is listed again, for the
	// events that were lost.
	DefaultRescan = 30 * time.Second
	// DefaultCheck is how often files with events are looked at: writes
	// that come in bursts are taken together.
	DefaultCheck = 250 * time.Millisecond
	// DefaultGrowEvery is how often at most a growing file is offered to
	// Options.Grew: a command a server writes is archived within about a
	// second, and a server writing all the time costs one grow a second.
	DefaultGrowEvery = time.Second
	// DefaultRetryMax bounds the backoff before a file whose grow or
	// hand-over failed is offered again: a recording catches up at most
	// this long after the archive can be written again.
	DefaultRetryMax = 30 * time.Second
	// sampleBytes is how much of a handed-over file's start and of the
	// end of what was handed over is kept (as a sha256) to notice a
	// changed prefix.
	sampleBytes = 4096
)

// File is a file that is ready.
type File struct {
	Path    string
	Size    int64
	ModTime time.Time
	// Complete says the file was found complete; otherwise it has been
	// idle for Options.Settle (since its mtime, for a file met for the
	// first time: old files are ready at once, without asking the codec).
	Complete bool
}

// Options configure Run.
type Options struct {
	// Dirs are watched recursively. Entries whose names start with "."
	// are ignored (editors' and rsync's temporary files).
	Dirs []string
	// Settle, Rescan, Check, GrowEvery and RetryMax default to
	// DefaultSettle, DefaultRescan, DefaultCheck, DefaultGrowEvery and
	// DefaultRetryMax.
	Settle, Rescan, Check, GrowEvery, RetryMax time.Duration
	// Complete, if set, reports whether the file at path is a complete
	// recording (ready now). It is asked only when the file has changed
	// since it was last asked. An error is reported through Warn and
	// counts as not complete.
	Complete func(ctx context.Context, path string) (bool, error)
	// Ready is given each ready file, one at a time; the file is not
	// offered again unless it changes, or Ready fails: an error says the
	// file was not archived (the archive cannot be written), and it is
	// offered again after a backoff.
	Ready func(ctx context.Context, f File) error
	// Grew, if set, is given files that grew and are not ready yet, at
	// most once per GrowEvery each, in the watcher's goroutine. It says
	// whether the file is live (offer it again as it grows; Complete is
	// not asked for it, its grows see its end) and whether it is done
	// (sealed: it is not given to Ready). A file that is not live waits
	// to be ready as before; it is offered again only once it shrinks or
	// its prefix changes. An error says the grow failed (the archive
	// cannot be written) and nothing changed: the file is offered again
	// after a backoff, as live or not as it was before.
	Grew func(ctx context.Context, f File) (live, done bool, err error)
	// Warn, if set, is told what the watcher cannot do or finds odd (a
	// file that shrank, an unreadable directory, lost events).
	Warn func(path, msg string)
	// Status, if set, is called after every rescan with the files being
	// watched and how many are waiting.
	Status func(Status)
}

// Status is the watcher's state after a rescan.
type Status struct {
	Dirs, Files, Waiting, Handed int
	// Failing counts the files whose last grow or hand-over failed and
	// that are offered again after a backoff.
	Failing int
	Bytes   int64
}

// state is what the watcher knows of one file.
type state struct {
	size    int64
	mod     time.Time
	changed time.Time // when size or mtime last changed (watcher's clock)
	asked   int64     // size when Complete last answered; -1: not asked
	handed  bool      // given to Ready at size/mod
	// live is 1 for a file Grew keeps, -1 for one it refused, 0 before
	// it was asked; grewSize and grewAt are the size and time it was
	// last given to Grew.
	live     int8
	grewSize int64
	grewAt   time.Time
	// retry is the backoff after the last grow or hand-over failed (0:
	// it did not), retryAt when the file is offered again.
	retry   time.Duration
	retryAt time.Time
	// Samples of the handed-over bytes: the first sampleBytes and the
	// sampleBytes before the handed size.
	head, tail [sha256.Size]byte
}

type watcher struct {
	o     Options
	fsw   *fsnotify.Watcher
	files map[string]*state
	dirs  map[string]bool
	dirty map[string]bool
}

// Run watches until ctx is done; it returns nil then, or an error if
// the watch cannot start (no directory given, one cannot be read).
func Run(ctx context.Context, o Options) error {
	if len(o.Dirs) == 0 {
		return errors.New("watch: no directories given")
	}
	if o.Ready == nil {
		return errors.New("watch: Options.Ready is nil")
	}
	if o.Settle <= 0 {
		o.Settle = DefaultSettle
	}
	if o.Rescan <= 0 {
		o.Rescan = DefaultRescan
	}
	if o.Check <= 0 {
		o.Check = DefaultCheck
	}
	if o.GrowEvery <= 0 {
		o.GrowEvery = DefaultGrowEvery
	}
	if o.RetryMax <= 0 {
		o.RetryMax = DefaultRetryMax
	}
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	defer fsw.Close()
	w := &watcher{o: o, fsw: fsw, files: map[string]*state{}, dirs: map[string]bool{}, dirty: map[string]bool{}}
	for _, d := range o.Dirs {
		st, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("watch: %w", err)
		}
		if !st.IsDir() {
			return fmt.Errorf("watch: %s is not a directory", d)
		}
	}
	w.rescan(ctx)
	check := time.NewTicker(o.Check)
	defer check.Stop()
	rescan := time.NewTicker(o.Rescan)
	defer rescan.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-fsw.Events:
			if !ok {
				return nil
			}
			w.event(ev)
		case err, ok := <-fsw.Errors:
			if !ok {
				return nil
			}
			w.warn("", fmt.Sprintf("file-system events: %v; rescanning", err))
			w.rescan(ctx)
		case <-check.C:
			w.step(ctx)
		case <-rescan.C:
			w.rescan(ctx)
		}
	}
}

func (w *watcher) warn(path, msg string) {
	if w.o.Warn != nil {
		w.o.Warn(path, msg)
	}
}

// event notes what fsnotify saw; the file is looked at on the next check.
func (w *watcher) event(ev fsnotify.Event) {
	if strings.HasPrefix(filepath.Base(ev.Name), ".") {
		return
	}
	switch {
	case ev.Has(fsnotify.Remove), ev.Has(fsnotify.Rename):
		delete(w.files, ev.Name)
		delete(w.dirty, ev.Name)
		if w.dirs[ev.Name] {
			w.forgetDir(ev.Name)
		}
	case ev.Has(fsnotify.Create):
		if st, err := os.Stat(ev.Name); err == nil && st.IsDir() {
			// Files may have been written before the watch was added.
			w.addTree(ev.Name)
			return
		}
		w.dirty[ev.Name] = true
	case ev.Has(fsnotify.Write):
		w.dirty[ev.Name] = true
	}
}

// forgetDir drops a removed directory and everything known below it.
func (w *watcher) forgetDir(dir string) {
	prefix := dir + string(filepath.Separator)
	for d := range w.dirs {
		if d == dir || strings.HasPrefix(d, prefix) {
			delete(w.dirs, d)
		}
	}
	for f := range w.files {
		if strings.HasPrefix(f, prefix) {
			delete(w.files, f)
		}
	}
}

// addTree watches dir and every directory below it, and marks its files
// to be looked at.
func (w *watcher) addTree(root string) {
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			w.warn(path, fmt.Sprintf("cannot read: %v", err))
			return nil
		}
		if path != root && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		switch {
		case d.IsDir():
			if !w.dirs[path] {
				if err := w.fsw.Add(path); err != nil {
					// Out of inotify watches: the rescan still sees it.
					w.warn(path, fmt.Sprintf("no file-system events (%v); found by the rescan every %v", err, w.o.Rescan))
				}
				w.dirs[path] = true
			}
		case d.Type().IsRegular():
			w.dirty[path] = true
		}
		return nil
	})
}

// rescan lists every directory again and looks at every file.
func (w *watcher) rescan(ctx context.Context) {
	for _, d := range w.o.Dirs {
		w.addTree(d)
	}
	for path := range w.files {
		w.dirty[path] = true
	}
	w.step(ctx)
	if w.o.Status != nil {
		s := Status{Dirs: len(w.dirs), Files: len(w.files)}
		for _, f := range w.files {
			s.Bytes += f.size
			if f.handed {
				s.Handed++
			} else {
				s.Waiting++
			}
			if f.retry > 0 {
				s.Failing++
			}
		}
		w.o.Status(s)
	}
}

// step looks at the files with events, then hands over those ready.
func (w *watcher) step(ctx context.Context) {
	now := time.Now()
	for path := range w.dirty {
		w.look(path, now)
	}
	clear(w.dirty)
	paths := make([]string, 0, len(w.files))
	for path, f := range w.files {
		if !f.handed {
			paths = append(paths, path)
		}
	}
	sort.Strings(paths)
	for _, path := range paths {
		if ctx.Err() != nil {
			return
		}
		f := w.files[path]
		if f == nil || f.retry > 0 && now.Before(f.retryAt) {
			continue // gone, or failed and waiting for its retry
		}
		// An idle file is ready whatever it holds: the codec is not asked
		// (a history of a thousand finished games is not parsed twice).
		idle := now.Sub(f.changed) >= w.o.Settle
		if !idle && w.o.Grew != nil && f.live >= 0 {
			if w.grow(ctx, path, f, now) {
				continue
			}
		}
		complete := false
		if !idle && w.o.Complete != nil && f.asked != f.size {
			ok, err := w.o.Complete(ctx, path)
			if err != nil && ctx.Err() == nil {
				w.warn(path, err.Error())
			}
			f.asked, complete = f.size, ok && err == nil
		}
		if !complete && !idle {
			continue
		}
		w.hand(ctx, path, f, complete)
	}
}

// look stats one file and updates what is known of it.
func (w *watcher) look(path string, now time.Time) {
	st, err := os.Stat(path)
	if err != nil || !st.Mode().IsRegular() {
		delete(w.files, path)
		return
	}
	f := w.files[path]
	if f == nil {
		// A file met for the first time has been unchanged since its
		// mtime (unless that is in the future: a skewed clock).
		changed := now
		if st.ModTime().Before(now) {
			changed = st.ModTime()
		}
		w.files[path] = &state{size: st.Size(), mod: st.ModTime(), changed: changed, asked: -1}
		return
	}
	if st.Size() == f.size && st.ModTime().Equal(f.mod) {
		return
	}
	same := true
	if st.Size() < f.size {
		same = false
		w.warn(path, fmt.Sprintf("shrank from %d to %d bytes: watched as a new file (a new recording once ready)", f.size, st.Size()))
	} else if f.handed && !w.samePrefix(path, f) {
		same = false
		w.warn(path, fmt.Sprintf("the first %d bytes, already handed over, changed: watched as a new file (a new recording once ready)", f.size))
	}
	old := *f
	*f = state{size: st.Size(), mod: st.ModTime(), changed: now, asked: -1}
	if same {
		f.live, f.grewSize, f.grewAt = old.live, old.grewSize, old.grewAt
		f.retry, f.retryAt = old.retry, old.retryAt
	}
}

// grow offers a file that grew to Grew, at most once per GrowEvery. It
// reports whether the file is live or done, so that Complete is not asked.
// A grow that failed is tried again once its backoff is over (step waits
// for it), even if the file did not change.
func (w *watcher) grow(ctx context.Context, path string, f *state, now time.Time) bool {
	due := f.retry > 0 || f.size != f.grewSize && now.Sub(f.grewAt) >= w.o.GrowEvery
	if !due {
		return f.live > 0 // live: its next grow comes
	}
	live, done, err := w.o.Grew(ctx, File{Path: path, Size: f.size, ModTime: f.mod})
	if err != nil {
		// Nothing changed: the file keeps what it was (live or not yet
		// asked), and Complete is not asked before the retry.
		w.failed(f, now)
		return true
	}
	f.retry, f.grewSize, f.grewAt = 0, f.size, now
	f.live = -1
	if live {
		f.live = 1
	}
	if done {
		f.handed = true
		f.head, f.tail = sample(path, f.size)
		return true
	}
	return live
}

// hand gives a ready file to Ready and remembers samples of its bytes.
// A file Ready fails is handed over again after a backoff.
func (w *watcher) hand(ctx context.Context, path string, f *state, complete bool) {
	head, tail := sample(path, f.size)
	if err := w.o.Ready(ctx, File{Path: path, Size: f.size, ModTime: f.mod, Complete: complete}); err != nil {
		f.asked = -1 // the retry asks Complete again
		w.failed(f, time.Now())
		return
	}
	f.retry, f.handed, f.head, f.tail = 0, true, head, tail
}

// failed notes that f's grow or hand-over failed at now: it is offered
// again after a backoff that doubles from GrowEvery up to RetryMax.
func (w *watcher) failed(f *state, now time.Time) {
	f.retry = min(max(2*f.retry, w.o.GrowEvery), w.o.RetryMax)
	f.retryAt = now.Add(f.retry)
}

// samePrefix reports whether the handed-over bytes of path look unchanged
// (the samples match).
func (w *watcher) samePrefix(path string, f *state) bool {
	head, tail := sample(path, f.size)
	return bytes.Equal(head[:], f.head[:]) && bytes.Equal(tail[:], f.tail[:])
}

// sample hashes the first sampleBytes of path and the sampleBytes before
// size. A read error gives zero sums, which never match a real sample.
func sample(path string, size int64) (head, tail [sha256.Size]byte) {
	file, err := os.Open(path)
	if err != nil {
		return
	}
	defer file.Close()
	buf := make([]byte, sampleBytes)
	read := func(off int64) ([sha256.Size]byte, bool) {
		n := min(int64(sampleBytes), size-off)
		if _, err := file.ReadAt(buf[:n], off); err != nil && !errors.Is(err, io.EOF) {
			return [sha256.Size]byte{}, false
		}
		return sha256.Sum256(buf[:n]), true
	}
	var ok bool
	if head, ok = read(0); !ok {
		return
	}
	tail, _ = read(max(0, size-sampleBytes))
	return
}
