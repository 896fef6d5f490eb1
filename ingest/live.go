// Live recordings: Grow extends the recording of a file that a game server
// is still writing with the bytes that arrived since the last call
// (docs/live.md). Only the file's new bytes and its open tail chunk are
// read; the archive resumes the sha256 and the codec its state.

package ingest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/google/uuid"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/formats"
)

// GrowAction says what Grow did.
type GrowAction string

// Grow's actions.
const (
	// GrowStarted: a new live recording holds the file's first records.
	GrowStarted GrowAction = "started"
	// GrowGrew: the live recording was extended.
	GrowGrew GrowAction = "grew"
	// GrowSealed: the recording was extended to the whole file and
	// sealed (FINISH, or the file is idle).
	GrowSealed GrowAction = "sealed"
	// GrowWaiting: nothing to add yet (no new complete record).
	GrowWaiting GrowAction = "waiting"
	// GrowNotLive: the file is not followed as a live recording
	// (Grown.Why says why); it is ingested whole once ready.
	GrowNotLive GrowAction = "not live"
	// GrowDone: the live recording directory is sealed already and its
	// recording holds all of it: nothing to do (a directory's files are
	// offered one by one, each after the seal).
	GrowDone GrowAction = "done"
)

// Grown is what Grow did with one file.
type Grown struct {
	Path   string
	Action GrowAction
	ID     uuid.UUID
	// Added is how many bytes the recording grew by; NativeBytes its size.
	Added, NativeBytes int64
	// Why says why the file is not live (GrowNotLive); Cause is the
	// error behind it where it has a type (*archive.ReplaceError).
	Why   string
	Cause error
	// Warn says Why deserves a warning (a refused extension, a changed
	// prefix), not only a note (a format that does not grow).
	Warn     bool
	Warnings []string
	Manifest *archive.Manifest
	// Read is how many bytes of input the grow read, where the codec
	// counts them (HCRP directories): the new commit, not what was
	// archived before.
	Read int64
}

// liveHead is how much of a growing file is read to find its id.
const liveHead = 64 << 10

// Grow extends the live recording of the growing file at path by the
// complete records that arrived, starting one from the file's first bytes
// when there is none. With final (the file is idle) it takes every byte
// and seals the recording; FINISH seals it as well. A file that cannot be
// live (its format does not grow, it is compressed, its bytes do not
// extend what is archived, the recording is held or sealed) is reported
// as GrowNotLive and nothing changes; a final file with no live recording
// is GrowNotLive too, to be ingested as a whole file. The error is for
// what stops the grow itself (the file cannot be read, the archive
// cannot be written).
//
// A live recording directory (formats.AppendableDir: an HCRP segment set)
// grows the same way, from path naming the directory or any file in it;
// Grown.Path is then the directory.
func (p *Pipeline) Grow(ctx context.Context, path string, final bool) (*Grown, error) {
	out := &Grown{Path: path}
	notLive := out.notLive
	if dir, codec := p.liveDir(path); codec != nil {
		out.Path = dir
		if final && dir != path && !newest(dir, path) {
			// A file of the directory is idle, but the directory is not.
			final = false
		}
		return p.growDir(ctx, out, dir, codec, final)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := st.Size()
	head := make([]byte, min(size, liveHead))
	if _, err := f.ReadAt(head, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(head) == 0 || len(head) < 16 && !final {
		out.Action = GrowWaiting
		return out, nil
	}
	if SniffCompression(head) != NotCompressed {
		return notLive(false, nil, "a compressed file is ingested once complete")
	}
	codec, err := DetectBytes(p.Codecs, head)
	if err != nil {
		return notLive(false, err, "%v", err)
	}
	ap, ok := codec.(formats.Appendable)
	if !ok {
		return notLive(false, nil, "%s files do not grow in place", codec.Name())
	}
	id, session, hlen, err := ap.LiveID(head)
	live, answer, err := p.liveOf(out, id, err, final, "file")
	switch {
	case answer != nil:
		return answer, nil
	case err == nil && live == nil:
		return p.grow(ctx, out, ap, f, size, nil, false)
	case errors.Is(err, archive.ErrSealed):
		if m, err := p.Archive.Manifest(id); err == nil && m.NativeBytes == size {
			return notLive(false, nil, "recording %s is sealed", id) // and is the file, most likely
		}
		return notLive(true, err, "recording %s (session %s) is sealed: the file is not extending it, and becomes a new recording once complete or idle", id, session)
	case err != nil:
		return nil, err
	}
	if size < live.End() {
		return notLive(true, nil, "shrank to %d bytes, below the %d bytes of live recording %s: not extended; the file becomes a new recording once complete or idle", size, live.End(), id)
	}
	if int64(len(head)) < hlen || !bytes.Equal(head[:hlen], live.Header) {
		return notLive(true, nil, "its header differs from live recording %s's: not extended; the file becomes a new recording once complete or idle", id)
	}
	if size == live.End() && !final {
		out.Action, out.NativeBytes = GrowWaiting, size
		return out, nil
	}
	return p.grow(ctx, out, ap, f, size, live, final)
}

// grow splits the file from live's open tail (from its start when live
// is nil) and commits the grow.
func (p *Pipeline) grow(ctx context.Context, out *Grown, ap formats.Appendable, f *os.File, size int64, live *archive.Live, final bool) (*Grown, error) {
	g, err := p.Archive.NewGrowth(ap.Name(), out.Path, live)
	if err != nil {
		return nil, err
	}
	var in formats.TailInput
	if live != nil {
		in = live.Tail()
	}
	in.R, in.Final = io.NewSectionReader(f, in.Offset, size-in.Offset), final
	res, err := safelyTail(ap, func() (*formats.TailResult, error) { return ap.SplitTail(ctx, in, g) })
	var re *archive.ReplaceError
	var fe *formats.Error
	switch {
	case errors.Is(err, formats.ErrNeedMore):
		out.Action = GrowWaiting
		return out, nil
	case errors.As(err, &re):
		out.Action, out.Warn, out.Cause, out.Why = GrowNotLive, true, err, err.Error()
		return out, nil
	case live != nil && errors.As(err, &fe) && fe.Offset < live.End():
		// Bytes that split cleanly before no longer do.
		return p.notExtending(out, live, err)
	case err != nil:
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%s: %w", out.Path, err)
	}
	if g.Chunks() == 0 {
		out.Action = GrowWaiting // a header, no complete record yet
		return out, nil
	}
	return p.commitGrow(ctx, out, g, res, final)
}

// commitGrow commits a grow the codec has split.
func (p *Pipeline) commitGrow(ctx context.Context, out *Grown, g *archive.Growth, res *formats.TailResult, final bool) (*Grown, error) {
	var re *archive.ReplaceError
	r, err := p.Archive.CommitGrow(ctx, g, res, final)
	if errors.As(err, &re) || errors.As(err, new(*archive.TakenDownError)) {
		out.Action, out.Warn, out.Cause, out.Why = GrowNotLive, true, err, err.Error()
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	out.Manifest, out.Added, out.NativeBytes, out.Warnings, out.Read = r.Manifest, r.Added, r.Manifest.NativeBytes, res.Meta.Warnings, res.Read
	switch {
	case r.Sealed:
		out.Action = GrowSealed
	case r.Created:
		out.Action = GrowStarted
	default:
		out.Action = GrowGrew
	}
	return out, nil
}

// notExtending reports a file whose archived bytes changed.
func (p *Pipeline) notExtending(out *Grown, live *archive.Live, err error) (*Grown, error) {
	cause := &archive.ReplaceError{ID: live.Manifest.ID, Reason: fmt.Sprintf("the file's bytes changed within the %d bytes archived (%v): it does not extend the recording", live.End(), err)}
	out.Action, out.Warn, out.Cause, out.Why = GrowNotLive, true, cause, cause.Error()
	return out, nil
}

// safelyTail is safely for SplitTail.
func safelyTail(c formats.Codec, split func() (*formats.TailResult, error)) (res *formats.TailResult, err error) {
	defer func() {
		if p := recover(); p != nil {
			res, err = nil, fmt.Errorf("%s codec panicked: %v", c.Name(), p)
		}
	}()
	return split()
}

// liveDir returns the live recording directory path stands for (path
// itself, or the directory of a file in it) and its codec, or nil.
func (p *Pipeline) liveDir(path string) (string, formats.Codec) {
	for _, dir := range []string{path, filepath.Dir(path)} {
		for _, c := range p.Codecs {
			if d, ok := c.(formats.AppendableDir); ok && d.IsDirInput(dir) {
				return dir, c
			}
		}
	}
	return "", nil
}

// growDir is Grow for a live recording directory: each commit of the
// directory's writer extends the recording (only the commit's new
// chunks are read), its header piece is written anew.
func (p *Pipeline) growDir(ctx context.Context, out *Grown, dir string, codec formats.Codec, final bool) (*Grown, error) {
	ad := codec.(formats.AppendableDir)
	notLive := out.notLive
	id, session, err := ad.LiveDir(dir)
	live, answer, err := p.liveOf(out, id, err, final, "directory")
	switch {
	case answer != nil:
		return answer, nil
	case errors.Is(err, archive.ErrSealed):
		if m, err := p.Archive.Manifest(id); err == nil && m.Format == codec.Name() && setSize(ad, dir) == m.NativeBytes {
			out.Action, out.NativeBytes = GrowDone, m.NativeBytes
			return out, nil
		}
		return notLive(true, err, "recording %s (session %s) is sealed: the directory is not extending it, and becomes a new recording once complete or idle", id, session)
	case err != nil:
		return nil, err
	}
	g, err := p.Archive.NewGrowth(codec.Name(), dir, live)
	if err != nil {
		return nil, err
	}
	var in formats.TailInput
	if live != nil {
		in = live.Tail()
	} else if err := g.RewritesHeader(); err != nil {
		return nil, err
	}
	in.Final = final
	res, err := safelyTail(codec, func() (*formats.TailResult, error) { return ad.SplitDirTail(ctx, dir, in, g) })
	var re *archive.ReplaceError
	switch {
	case errors.Is(err, formats.ErrNeedMore):
		out.Action = GrowWaiting
		return out, nil
	case live != nil && errors.Is(err, formats.ErrNotExtending), errors.As(err, &re):
		return notLive(true, err, "%v: not extending live recording %s; the directory becomes a new recording once complete or idle", err, id)
	case err != nil:
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	if live == nil && g.Chunks() == 0 || !g.Changed() && !final && !res.Finished {
		out.Action = GrowWaiting // an index with no chunk yet, or nothing new
		return out, nil
	}
	return p.commitGrow(ctx, out, g, res, final)
}

// setSize is the size of the byte stream a directory stands for, or -1.
func setSize(ad formats.AppendableDir, dir string) int64 {
	rc, err := ad.OpenDir(dir)
	if err != nil {
		return -1
	}
	defer rc.Close()
	if s, ok := rc.(interface{ Size() int64 }); ok {
		return s.Size()
	}
	return -1
}

// notLive reports g as not followed live, for why.
func (g *Grown) notLive(warn bool, cause error, format string, args ...any) (*Grown, error) {
	g.Action, g.Warn, g.Cause, g.Why = GrowNotLive, warn, cause, fmt.Sprintf(format, args...)
	return g, nil
}

// liveOf takes what LiveID or LiveDir returned (id, err) and finds the
// live recording to extend: nil with a nil error when there is none yet
// (a grow starts one), the answer when Grow is done (waiting for more
// bytes, not live), or LiveOf's error (ErrSealed, a failure).
func (p *Pipeline) liveOf(out *Grown, id uuid.UUID, err error, final bool, what string) (*archive.Live, *Grown, error) {
	if errors.Is(err, formats.ErrNeedMore) && !final {
		out.Action = GrowWaiting
		return nil, out, nil
	}
	if err != nil {
		answer, _ := out.notLive(false, err, "%v", err)
		return nil, answer, nil
	}
	out.ID = id
	live, err := p.Archive.LiveOf(id)
	if errors.Is(err, archive.ErrNotFound) {
		if final {
			answer, _ := out.notLive(false, nil, "no live recording: the %s is ingested whole", what)
			return nil, answer, nil
		}
		return nil, nil, nil
	}
	return live, nil, err
}

// newest reports whether no file in dir was modified after the file at
// path: a directory is idle when its newest file is.
func newest(dir, path string) bool {
	st, err := os.Stat(path)
	if err != nil {
		return false
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range ents {
		if info, err := e.Info(); err == nil && info.ModTime().After(st.ModTime()) {
			return false
		}
	}
	return true
}
