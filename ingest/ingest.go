// Package ingest turns native files into archived recordings: it walks the
// paths it is given, detects each file's format from its content, skips
// bytes already archived (by sha256), splits the rest with their codec and
// commits them in groups, so bulk imports of small files do not pay one
// fsync each.
//
// The walk (walk.go) follows symbolic links inside the tree it was given,
// never one that leads out of it unless asked, and never a directory twice:
// a link loop ends the walk down that path with a report, not a hang.
// Standard input ("-") and named pipes are read once, in one pass.
package ingest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/google/uuid"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/formats"
)

// Outcome says what happened to one input: archive's, where the words
// live.
type Outcome = archive.Outcome

// Outcomes reported per input, under the names ingest's callers use.
const (
	OutcomeIngested  = archive.Ingested
	OutcomeDup       = archive.Duplicate
	OutcomeReplaced  = archive.Replaced
	OutcomeFailed    = archive.Failed
	OutcomeSkipped   = archive.Skipped
	OutcomeTakenDown = archive.TakenDown // FileResult.Cause is an *archive.TakenDownError
	OutcomeRefused   = archive.Refused   // FileResult.Cause is an *archive.ReplaceError
	OutcomeExpired   = archive.Expired
)

// FileResult is what happened to one input path: the path and, once
// known, the id of the recording it is (or was, or names).
type FileResult struct {
	Path        string    `json:"path"`
	Outcome     Outcome   `json:"outcome"`
	ID          uuid.UUID `json:"id,omitzero"`
	Format      string    `json:"format,omitempty"`
	NativeBytes int64     `json:"native_bytes,omitempty"`
	StoredBytes int64     `json:"stored_bytes,omitempty"`
	Warnings    []string  `json:"warnings,omitempty"`
	Note        string    `json:"note,omitempty"`
	Err         string    `json:"error,omitempty"`
	// Cause is the error behind Err where it has a type a caller may act
	// on (*archive.TakenDownError for an HTTP 410, *archive.ReplaceError).
	Cause error `json:"-"`
}

// Progress reports how far a run is.
type Progress struct {
	Files, Done      int
	Bytes, BytesDone int64
	Elapsed          time.Duration
	// Current is the input being read ("" between inputs), so that a
	// status line during one long input says which, and CurrentRead how
	// many bytes of it were read so far (a file of a size some archived
	// file has is read twice, to hash it and to split it, or once when it
	// is that file; any other once). During an input,
	// Progress is called every progressStep bytes read.
	Current     string
	CurrentRead int64
}

// progressStep is how many bytes of one input are read between two
// Progress calls.
const progressStep = 4 << 20

// counted is a Reader that reports the bytes read through it.
type counted struct {
	r    io.Reader
	read func(n int)
}

func (c counted) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	if n > 0 {
		c.read(n)
	}
	return n, err
}

// countedSeeker is a counted ReadSeeker: codecs look for io.ReadSeeker
// (VTX reads its footer first when it can seek).
type countedSeeker struct {
	counted
	s io.Seeker
}

func (c countedSeeker) Seek(off int64, whence int) (int64, error) { return c.s.Seek(off, whence) }

// countedReader is r counting into read (r itself when read is nil),
// seekable when r is.
func countedReader(r io.Reader, read func(int)) io.Reader {
	if read == nil {
		return r
	}
	if s, ok := r.(io.ReadSeeker); ok {
		return countedSeeker{counted{r, read}, s}
	}
	return counted{r, read}
}

// Pipeline ingests files into an archive.
type Pipeline struct {
	Archive *archive.Archive
	// Codecs are tried in order; the first whose Detect accepts the file
	// wins.
	Codecs []formats.Codec
	// GroupBytes and GroupFiles bound a commit group (defaults 32 MiB of
	// native bytes, 64 files): small recordings are committed together,
	// one fsync for many, and each group is committed and indexed while
	// the next is read. 64 rather than 256 files: ddnetsim's rounds kind
	// (200 files of about 174 KB) in 4 groups instead of 2 took 0.885x
	// the wall time (10 alternating pairs); 32 and 16 files cost more CPU
	// than they saved.
	GroupBytes int64
	GroupFiles int
	// Progress, if set, is called before and after each input.
	Progress func(Progress)
	// Stdin is what the path "-" reads (archivectl sets os.Stdin).
	Stdin io.Reader
	// FollowOutside lets a directory walk follow symbolic links that lead
	// out of the directory it was given. Off, such links are reported as
	// skipped: a link in an upload or server directory must not pull in
	// the rest of the machine.
	FollowOutside bool
}

type input struct {
	path  string
	dir   formats.DirInput // set for a directory recording
	codec formats.Codec    // nil for a stream: detected as it is read
	size  int64
	// stream is standard input or a named pipe: read once, in one pass.
	stream bool
}

// Run ingests every path (files, and directories walked recursively) and
// calls report once per input, in input order. It returns an error only
// for failures that stop the whole run (the archive cannot be written,
// ctx cancelled); a bad file is reported and the others go on.
//
// A commit group is committed while the next is read: the commit's writes
// and fsyncs leave a core idle that the next files' parse can use. At
// most one group is being committed, so at most two groups' compressed
// chunks are held; report and Progress are called from Run's goroutine.
func (p *Pipeline) Run(ctx context.Context, paths []string, report func(FileResult)) error {
	inputs, bad := p.expand(paths)
	for _, r := range bad {
		report(r)
	}
	groupBytes, groupFiles := p.GroupBytes, p.GroupFiles
	if groupBytes <= 0 {
		groupBytes = 32 << 20
	}
	if groupFiles <= 0 {
		groupFiles = 64
	}
	var total int64
	for _, in := range inputs {
		total += in.size
	}
	start := time.Now()
	prog := Progress{Files: len(inputs), Bytes: total}

	var (
		group     []queued
		groupSize int64
		c         committer
	)
	// A run that stops early still reports a group whose commit ended.
	defer c.wait(report)
	for _, in := range inputs {
		if err := ctx.Err(); err != nil {
			discardAll(group)
			return err
		}
		if err := c.reportIfDone(report); err != nil {
			discardAll(group)
			return err
		}
		var read func(int)
		if p.Progress != nil {
			prog.Current, prog.CurrentRead, prog.Elapsed = in.path, 0, time.Since(start)
			p.Progress(prog)
			reported := int64(0)
			read = func(n int) {
				prog.CurrentRead += int64(n)
				if prog.CurrentRead-reported >= progressStep {
					reported, prog.Elapsed = prog.CurrentRead, time.Since(start)
					p.Progress(prog)
				}
			}
		}
		res, pending := p.one(ctx, in, read)
		prog.Current, prog.CurrentRead = "", 0
		if errors.Is(ctx.Err(), context.Canceled) {
			if pending != nil {
				pending.Discard()
			}
			discardAll(group)
			return ctx.Err()
		}
		group = append(group, queued{res, pending})
		if pending != nil {
			groupSize += pending.Size()
		}
		prog.Done++
		prog.BytesDone += in.size
		prog.Elapsed = time.Since(start)
		if len(group) >= groupFiles || groupSize >= groupBytes {
			if err := c.wait(report); err != nil {
				discardAll(group)
				return err
			}
			c.start(ctx, p.Archive, group)
			group, groupSize = nil, 0
		}
		if p.Progress != nil {
			p.Progress(prog)
		}
	}
	if err := c.wait(report); err != nil {
		discardAll(group)
		return err
	}
	c.start(ctx, p.Archive, group)
	return c.wait(report)
}

// queued is one input of a commit group: its result so far and, unless
// that is final, the recording to commit.
type queued struct {
	res     FileResult
	pending *archive.Pending
}

// discardAll drops a group's recordings uncommitted.
func discardAll(group []queued) {
	for _, q := range group {
		if q.pending != nil {
			q.pending.Discard()
		}
	}
}

// committer commits one group at a time in its own goroutine and hands
// its results back to Run's goroutine, which reports them.
type committer struct {
	group []queued
	done  chan commitDone // nil when no group is being committed
}

type commitDone struct {
	results []archive.Result
	err     error
}

// start commits group in a goroutine; the previous group has been waited
// for. An empty group is reported at the next wait without a commit.
func (c *committer) start(ctx context.Context, a *archive.Archive, group []queued) {
	var pend []*archive.Pending
	for _, q := range group {
		if q.pending != nil {
			pend = append(pend, q.pending)
		}
	}
	c.group, c.done = group, make(chan commitDone, 1)
	if len(pend) == 0 {
		c.done <- commitDone{}
		return
	}
	go func() {
		results, err := a.Commit(ctx, pend)
		c.done <- commitDone{results, err}
	}()
}

// reportIfDone reports the group under commit if its commit has ended.
func (c *committer) reportIfDone(report func(FileResult)) error {
	if c.done == nil {
		return nil
	}
	select {
	case d := <-c.done:
		return c.finish(d, report)
	default:
		return nil
	}
}

// wait waits for the group under commit, if any, and reports it.
func (c *committer) wait(report func(FileResult)) error {
	if c.done == nil {
		return nil
	}
	return c.finish(<-c.done, report)
}

// finish reports a committed group in input order. A failed commit
// discards the group and stops the run.
func (c *committer) finish(d commitDone, report func(FileResult)) error {
	group := c.group
	c.group, c.done = nil, nil
	if d.err != nil {
		discardAll(group)
		return d.err
	}
	k := 0
	for _, q := range group {
		r := q.res
		if q.pending != nil {
			res := d.results[k]
			k++
			r.ID = res.ID
			r.Note = res.Note
			r.Outcome = res.Outcome
			if res.Err != nil {
				r.Err, r.Cause = fmt.Sprintf("%s: %v", r.Path, res.Err), res.Err
			}
			if res.Manifest != nil {
				r.StoredBytes = res.Manifest.StoredBytes
			}
		}
		report(r)
	}
	return nil
}

// one reads, checks and splits one input. A nil Pending means the result
// is final (failed, already archived, taken down).
func (p *Pipeline) one(ctx context.Context, in input, read func(int)) (FileResult, *archive.Pending) {
	if in.stream {
		return p.oneStream(ctx, in, read)
	}
	res := FileResult{Path: in.path, Format: in.codec.Name()}
	fail := func(err error) (FileResult, *archive.Pending) {
		res.Outcome, res.Err = OutcomeFailed, fmt.Sprintf("%s: %v", in.path, err)
		return res, nil
	}
	open := func() (io.ReadCloser, error) {
		if in.dir != nil {
			return in.dir.OpenDir(in.path)
		}
		return openNative(in.path, in.codec) // decompressed if need be (compressed.go)
	}
	if in.dir != nil {
		if r, ok, err := p.extendLive(ctx, res, in); err != nil {
			return fail(err)
		} else if ok {
			return r, nil
		}
	}
	n, known, err := p.known(in, open, read)
	if err != nil {
		return fail(err)
	}
	res.NativeBytes = n
	if known != nil {
		known.Path, known.Format = res.Path, res.Format
		return *known, nil
	}

	pending := p.Archive.NewPending(in.codec.Name(), in.path)
	var meta *formats.Metadata
	if in.dir != nil {
		// A live directory replaces its archived copy as it grows, once
		// Commit has checked that copy's chunks against these.
		pending.MayReplace()
		meta, err = safely(in.codec.Name(), func() (*formats.Metadata, error) { return in.dir.SplitDir(ctx, in.path, pending) })
	} else {
		var rc io.ReadCloser
		rc, err = open()
		if err != nil {
			return fail(err)
		}
		defer rc.Close()
		meta, err = safely(in.codec.Name(), func() (*formats.Metadata, error) {
			return in.codec.Split(ctx, countedReader(rc, read), pending)
		})
	}
	if err == nil {
		_, err = pending.Finish(meta)
	}
	if err == nil && pending.Size() != n {
		err = fmt.Errorf("%s codec consumed %d of %d bytes", in.codec.Name(), pending.Size(), n)
	}
	if err != nil {
		pending.Discard()
		return fail(err)
	}
	res.Warnings = meta.Warnings
	return res, pending
}

// known finds out, before any parse, whether the native bytes of in are
// archived or taken down already: re-ingesting known bytes is a read, not
// a parse. It returns their size, and a final result when they are known.
// A plain file of a size no archived source has is not read at all
// (Archive.MayHoldSize): its sha256 is the one the split computes, which
// Commit checks (a file of many GB is then read once, not twice).
func (p *Pipeline) known(in input, open func() (io.ReadCloser, error), read func(int)) (int64, *FileResult, error) {
	if in.dir == nil && compressionOf(in.codec) == NotCompressed {
		fi, err := os.Stat(in.path)
		if err != nil {
			return 0, nil, err
		}
		if may, err := p.Archive.MayHoldSize(fi.Size()); err != nil {
			return 0, nil, err
		} else if !may {
			return fi.Size(), nil, nil
		}
	}
	rc, err := open()
	if err != nil {
		return 0, nil, err
	}
	h := sha256.New()
	n, err := io.Copy(h, countedReader(rc, read))
	rc.Close()
	if err != nil {
		return 0, nil, err
	}
	sum := h.Sum(nil)
	if id, ok, err := p.Archive.SourceID(sum); err != nil {
		return 0, nil, err
	} else if ok {
		return n, &FileResult{Outcome: OutcomeDup, ID: id, NativeBytes: n}, nil
	}
	// Bytes taken down are not even parsed (Commit refuses them anyway).
	if t, err := p.Archive.TakenDown(sum); err != nil {
		return 0, nil, err
	} else if t != nil {
		cause := &archive.TakenDownError{Takedown: *t}
		return n, &FileResult{Outcome: OutcomeTakenDown, ID: t.ID, Cause: cause, Err: fmt.Sprintf("%s: %v", in.path, cause), NativeBytes: n}, nil
	}
	return n, nil, nil
}

// oneStream reads standard input or a named pipe in one pass: its format
// is detected from its first bytes as they arrive, and the sha256 that
// finds a duplicate or a takedown is the one the split computes, so it is
// known only at the commit.
func (p *Pipeline) oneStream(ctx context.Context, in input, read func(int)) (FileResult, *archive.Pending) {
	res := FileResult{Path: in.path}
	fail := func(err error) (FileResult, *archive.Pending) {
		res.Outcome, res.Err = OutcomeFailed, fmt.Sprintf("%s: %v", in.path, err)
		return res, nil
	}
	var r io.Reader
	source := in.path
	if in.path == "-" {
		if p.Stdin == nil {
			return fail(errors.New("standard input is not available (Pipeline.Stdin is nil)"))
		}
		r, source = p.Stdin, "stdin"
	} else {
		f, err := os.Open(in.path)
		if err != nil {
			return fail(err)
		}
		defer f.Close()
		r = f
	}
	br := bufio.NewReaderSize(countedReader(r, read), max(64<<10, formats.DetectSize))
	head, err := br.Peek(formats.DetectSize)
	if err != nil && !errors.Is(err, io.EOF) {
		return fail(err)
	}
	br, head, release, err := lookThrough(br, head) // compressed.go
	if err != nil {
		return fail(err)
	}
	defer release()
	codec, err := DetectBytes(p.Codecs, head)
	if err != nil {
		return fail(err)
	}
	res.Format = codec.Name()
	pending := p.Archive.NewPending(codec.Name(), source)
	meta, err := safely(codec.Name(), func() (*formats.Metadata, error) { return codec.Split(ctx, br, pending) })
	if err == nil {
		_, err = pending.Finish(meta)
	}
	if err == nil {
		// The codec must have taken every byte: a file's size is known
		// up front, a stream's only once it ends.
		if _, perr := br.Peek(1); perr == nil {
			err = fmt.Errorf("%s codec stopped at byte %d, but the input goes on", codec.Name(), pending.Size())
		}
	}
	if err != nil {
		pending.Discard()
		return fail(err)
	}
	res.NativeBytes = pending.Size()
	res.Warnings = meta.Warnings
	return res, pending
}

// safely runs a codec's split, turning a panic into an error: a bug in one
// codec must not take down a bulk import.
func safely(name string, split func() (*formats.Metadata, error)) (meta *formats.Metadata, err error) {
	defer func() {
		if p := recover(); p != nil {
			meta, err = nil, fmt.Errorf("%s codec panicked: %v", name, p)
		}
	}()
	return split()
}

// ErrUnknownFormat is returned by Detect for content no codec recognises.
var ErrUnknownFormat = errors.New("unknown format (no codec recognises the first bytes)")

// Detect returns the codec for the file at path, from its first bytes.
func (p *Pipeline) Detect(path string) (formats.Codec, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	head := make([]byte, formats.DetectSize)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if c := SniffCompression(head[:n]); c != NotCompressed {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return nil, err
		}
		return detectCompressed(p.Codecs, f, c) // compressed.go
	}
	return DetectBytes(p.Codecs, head[:n])
}

// DetectBytes returns the first codec that accepts head.
func DetectBytes(codecs []formats.Codec, head []byte) (formats.Codec, error) {
	if len(head) == 0 {
		return nil, errors.New("empty file")
	}
	for _, c := range codecs {
		if detect(c, head) {
			return c, nil
		}
	}
	return nil, ErrUnknownFormat
}

func detect(c formats.Codec, head []byte) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return c.Detect(bytes.Clone(head))
}

// extendLive ingests a directory whose live recording is archived (a set
// followed by serve --watch, ingested by hand meanwhile) by growing that
// recording, not by archiving a copy: ok says it did. A directory that
// does not extend its live recording is left to the whole ingest.
func (p *Pipeline) extendLive(ctx context.Context, res FileResult, in input) (FileResult, bool, error) {
	ad, isLive := in.codec.(formats.AppendableDir)
	if !isLive {
		return res, false, nil
	}
	id, _, err := ad.LiveDir(in.path)
	if err != nil {
		return res, false, nil // the whole ingest reports it
	}
	if _, err := p.Archive.LiveOf(id); err != nil {
		return res, false, nil // no live recording (or sealed: a dup or a copy)
	}
	g, err := p.Grow(ctx, in.path, false)
	if err != nil {
		return res, false, err
	}
	res.ID, res.NativeBytes, res.Warnings = id, g.NativeBytes, g.Warnings
	switch g.Action {
	case GrowGrew:
		res.Outcome, res.Note = OutcomeIngested, fmt.Sprintf("extended live recording %s by %d bytes", id, g.Added)
	case GrowSealed:
		res.Outcome, res.Note = OutcomeIngested, fmt.Sprintf("extended live recording %s by %d bytes and sealed it", id, g.Added)
	case GrowWaiting:
		res.Outcome, res.Note = OutcomeDup, fmt.Sprintf("live recording %s holds every commit of the directory", id)
	default:
		return res, false, nil
	}
	if g.Manifest != nil {
		res.NativeBytes, res.StoredBytes = g.Manifest.NativeBytes, g.Manifest.StoredBytes
	}
	return res, true, nil
}
