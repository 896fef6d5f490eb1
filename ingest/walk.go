// The walk: input paths to inputs with a detected codec.
//
// Every directory met is identified (device and inode on unix, its real
// path elsewhere) and walked once per run. A symbolic link back to a
// directory on the path being walked is a loop, reported and not followed
// (two links to "." made ingest run forever, its memory growing); a link
// to a directory already walked elsewhere is reported too, so a tree of
// links cannot make the walk exponential. A link that leads out of the
// directory given is not followed unless Pipeline.FollowOutside is set.
// Paths named explicitly are taken as given, links and named pipes too.

package ingest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/replayarchive/replay/formats"
)

// walker collects the inputs of one run.
type walker struct {
	p      *Pipeline
	inputs []input
	bad    []FileResult
	walked map[dirKey]string // directories walked so far → the path they were walked as
}

// expand walks paths into inputs with a detected codec, reporting what
// cannot be read or recognised, and what the walk does not follow.
func (p *Pipeline) expand(paths []string) ([]input, []FileResult) {
	w := &walker{p: p, walked: map[dirKey]string{}}
	for _, path := range paths {
		if path == "-" {
			w.inputs = append(w.inputs, input{path: path, stream: true})
			continue
		}
		root, err := filepath.EvalSymlinks(path)
		if err == nil {
			root, err = filepath.Abs(root)
		}
		if err != nil {
			w.failed(path, err)
			continue
		}
		w.visit(path, root, true, nil)
	}
	return w.inputs, w.bad
}

func (w *walker) failed(path string, err error) {
	w.bad = append(w.bad, FileResult{Path: path, Outcome: OutcomeFailed, Err: fmt.Sprintf("%s: %v", path, err)})
}

func (w *walker) skipped(path, why string) {
	w.bad = append(w.bad, FileResult{Path: path, Outcome: OutcomeSkipped, Err: fmt.Sprintf("%s: %s", path, why)})
}

// visit handles path, met in the tree whose real absolute path is root
// (explicit: named by the caller), below the directories onPath.
func (w *walker) visit(path, root string, explicit bool, onPath []dirKey) {
	if !explicit {
		lst, err := os.Lstat(path)
		if err != nil {
			w.failed(path, err)
			return
		}
		if lst.Mode()&fs.ModeSymlink != 0 && !w.followable(path, root) {
			return
		}
	}
	st, err := os.Stat(path)
	if err != nil {
		w.failed(path, err)
		return
	}
	switch mode := st.Mode(); {
	case mode.IsDir():
		w.dir(path, root, st, onPath)
	case mode.IsRegular():
		w.file(path, explicit, st)
	case mode&fs.ModeNamedPipe != 0 && explicit:
		w.inputs = append(w.inputs, input{path: path, stream: true})
	case mode&fs.ModeNamedPipe != 0:
		// Nothing may ever write to it: reading would hang the walk.
		w.skipped(path, "a named pipe inside a directory is not read (name it to ingest it)")
	case explicit:
		w.failed(path, fmt.Errorf("not a file, directory or named pipe (%s)", mode.Type()))
	default:
		w.skipped(path, fmt.Sprintf("not a file, directory or named pipe (%s)", mode.Type()))
	}
}

// followable reports whether the symbolic link path may be followed,
// reporting it as skipped if not.
func (w *walker) followable(path, root string) bool {
	target, err := filepath.EvalSymlinks(path)
	if err == nil {
		target, err = filepath.Abs(target)
	}
	if err != nil {
		w.skipped(path, fmt.Sprintf("symbolic link not followed: %v", err))
		return false
	}
	if !w.p.FollowOutside && !within(root, target) {
		w.skipped(path, fmt.Sprintf("symbolic link to %s leads out of %s: not followed (Pipeline.FollowOutside)", target, root))
		return false
	}
	return true
}

// within reports whether path is root or below it (both clean, absolute).
func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// dir walks directory path, or takes it as one recording (formats.DirInput).
func (w *walker) dir(path, root string, st fs.FileInfo, onPath []dirKey) {
	key, err := dirKeyOf(path, st)
	if err != nil {
		w.failed(path, err)
		return
	}
	if slices.Contains(onPath, key) {
		w.skipped(path, fmt.Sprintf("symbolic link loop: leads back to %s, which is being walked", w.walked[key]))
		return
	}
	if prev, ok := w.walked[key]; ok {
		w.skipped(path, fmt.Sprintf("the same directory as %s, already walked", prev))
		return
	}
	w.walked[key] = path
	for _, c := range w.p.Codecs {
		if d, ok := c.(formats.DirInput); ok && d.IsDirInput(path) {
			w.inputs = append(w.inputs, input{path: path, dir: d, codec: c, size: dirSize(path)})
			return
		}
	}
	ents, err := os.ReadDir(path)
	if err != nil {
		w.failed(path, err)
		return
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	below := append(slices.Clip(onPath), key)
	for _, e := range ents {
		if e.Name()[0] == '.' {
			continue
		}
		w.visit(filepath.Join(path, e.Name()), root, false, below)
	}
}

// file detects the codec of regular file path.
func (w *walker) file(path string, explicit bool, st fs.FileInfo) {
	codec, err := w.p.Detect(path)
	if err != nil {
		if explicit || !errors.Is(err, ErrUnknownFormat) {
			w.failed(path, err)
		} else {
			// Inside a directory, files of no known format (notes,
			// SOURCES.md) are reported as skipped, not failed.
			w.bad = append(w.bad, FileResult{Path: path, Outcome: OutcomeSkipped, Err: err.Error()})
		}
		return
	}
	w.inputs = append(w.inputs, input{path: path, codec: codec, size: st.Size()})
}

// dirSize is the bytes of the files below dir, for progress. It counts
// what WalkDir sees, which does not follow links.
func dirSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}
