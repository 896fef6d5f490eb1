// Package ingest turns native files into archived recordings: it walks the
// paths it is given, detects each file's format from its content, skips
// bytes already archived (by sha256), splits the rest with their codec and
// commits them in groups, so bulk imports of small files do not pay one
// fsync each.
package ingest

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
	"time"

	"github.com/google/uuid"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/formats"
)

// DirInput is implemented by codecs whose recordings can be a directory
// (an HCRP live segment set): ingest hands such a directory over whole
// instead of walking into it.
type DirInput interface {
	// IsDirInput reports whether dir is one recording of this format.
	IsDirInput(dir string) bool
	// OpenDir returns the byte stream the directory stands for (what
	// SplitDir hands to its Writer), for the sha256 pass.
	OpenDir(dir string) (io.ReadCloser, error)
	// SplitDir is Split for a directory: it may set Metadata.ID and
	// Metadata.Growing so that a grown directory replaces its recording.
	SplitDir(ctx context.Context, dir string, w formats.Writer) (*formats.Metadata, error)
}

// Outcomes reported per input.
const (
	OutcomeIngested = "ingested"
	OutcomeDup      = "already archived"
	OutcomeReplaced = "replaced"
	OutcomeFailed   = "failed"
	// OutcomeSkipped: a file of no known format met while walking a
	// directory (a named file of no known format fails instead).
	OutcomeSkipped = "skipped"
)

// FileResult is what happened to one input path.
type FileResult struct {
	Path        string    `json:"path"`
	Outcome     string    `json:"outcome"`
	ID          uuid.UUID `json:"id,omitzero"`
	Format      string    `json:"format,omitempty"`
	NativeBytes int64     `json:"native_bytes,omitempty"`
	StoredBytes int64     `json:"stored_bytes,omitempty"`
	Warnings    []string  `json:"warnings,omitempty"`
	Note        string    `json:"note,omitempty"`
	Err         string    `json:"error,omitempty"`
}

// Progress reports how far a run is.
type Progress struct {
	Files, Done      int
	Bytes, BytesDone int64
	Elapsed          time.Duration
}

// Pipeline ingests files into an archive.
type Pipeline struct {
	Archive *archive.Archive
	// Codecs are tried in order; the first whose Detect accepts the file
	// wins.
	Codecs []formats.Codec
	// GroupBytes and GroupFiles bound a commit group (defaults 32 MiB of
	// native bytes, 256 files): small recordings are committed together.
	GroupBytes int64
	GroupFiles int
	// Progress, if set, is called after each input.
	Progress func(Progress)
}

type input struct {
	path  string
	dir   DirInput // set for a directory recording
	codec formats.Codec
	size  int64
}

// Run ingests every path (files, and directories walked recursively) and
// calls report once per input, in input order within each commit group.
// It returns an error only for failures that stop the whole run (the
// archive cannot be written, ctx cancelled); a bad file is reported and
// the others go on.
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
		groupFiles = 256
	}
	var total int64
	for _, in := range inputs {
		total += in.size
	}
	start := time.Now()
	prog := Progress{Files: len(inputs), Bytes: total}

	type queued struct {
		res     FileResult
		pending *archive.Pending
	}
	var group []queued
	var groupSize int64
	flush := func() error {
		var pend []*archive.Pending
		for _, q := range group {
			if q.pending != nil {
				pend = append(pend, q.pending)
			}
		}
		var results []archive.Result
		if len(pend) > 0 {
			var err error
			if results, err = p.Archive.Commit(ctx, pend); err != nil {
				for _, q := range group {
					if q.pending != nil {
						q.pending.Discard()
					}
				}
				return err
			}
		}
		k := 0
		for _, q := range group {
			r := q.res
			if q.pending != nil {
				res := results[k]
				k++
				r.ID = res.ID
				r.Note = res.Note
				switch res.Outcome {
				case archive.Ingested:
					r.Outcome = OutcomeIngested
				case archive.Duplicate:
					r.Outcome = OutcomeDup
				case archive.Replaced:
					r.Outcome = OutcomeReplaced
				}
				if res.Manifest != nil {
					r.StoredBytes = res.Manifest.StoredBytes
				}
			}
			report(r)
		}
		group, groupSize = group[:0], 0
		return nil
	}

	for _, in := range inputs {
		if err := ctx.Err(); err != nil {
			return err
		}
		res, pending := p.one(ctx, in)
		if errors.Is(ctx.Err(), context.Canceled) {
			if pending != nil {
				pending.Discard()
			}
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
			if err := flush(); err != nil {
				return err
			}
		}
		if p.Progress != nil {
			p.Progress(prog)
		}
	}
	return flush()
}

// one reads, checks and splits one input. A nil Pending means the result
// is final (failed, or already archived).
func (p *Pipeline) one(ctx context.Context, in input) (FileResult, *archive.Pending) {
	res := FileResult{Path: in.path, Format: in.codec.Name()}
	fail := func(err error) (FileResult, *archive.Pending) {
		res.Outcome, res.Err = OutcomeFailed, fmt.Sprintf("%s: %v", in.path, err)
		return res, nil
	}
	open := func() (io.ReadCloser, error) {
		if in.dir != nil {
			return in.dir.OpenDir(in.path)
		}
		return os.Open(in.path)
	}
	// A hashing pass first: re-ingesting known bytes is a read, not a parse.
	rc, err := open()
	if err != nil {
		return fail(err)
	}
	h := sha256.New()
	n, err := io.Copy(h, rc)
	rc.Close()
	if err != nil {
		return fail(err)
	}
	res.NativeBytes = n
	if id, ok, err := p.Archive.SourceID(h.Sum(nil)); err != nil {
		return fail(err)
	} else if ok {
		res.Outcome, res.ID = OutcomeDup, id
		return res, nil
	}

	pending := p.Archive.NewPending(in.codec.Name(), in.path)
	var meta *formats.Metadata
	if in.dir != nil {
		meta, err = safely(in.codec.Name(), func() (*formats.Metadata, error) { return in.dir.SplitDir(ctx, in.path, pending) })
	} else {
		rc, err = open()
		if err != nil {
			return fail(err)
		}
		defer rc.Close()
		meta, err = safely(in.codec.Name(), func() (*formats.Metadata, error) { return in.codec.Split(ctx, rc, pending) })
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

// expand walks paths into inputs with a detected codec, reporting what
// cannot be read or recognised.
func (p *Pipeline) expand(paths []string) ([]input, []FileResult) {
	var inputs []input
	var bad []FileResult
	failed := func(path string, err error) {
		bad = append(bad, FileResult{Path: path, Outcome: OutcomeFailed, Err: fmt.Sprintf("%s: %v", path, err)})
	}
	var visit func(path string, explicit bool)
	visit = func(path string, explicit bool) {
		st, err := os.Stat(path)
		if err != nil {
			failed(path, err)
			return
		}
		if st.IsDir() {
			for _, c := range p.Codecs {
				if d, ok := c.(DirInput); ok && d.IsDirInput(path) {
					inputs = append(inputs, input{path: path, dir: d, codec: c, size: dirSize(path)})
					return
				}
			}
			ents, err := os.ReadDir(path)
			if err != nil {
				failed(path, err)
				return
			}
			sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
			for _, e := range ents {
				if e.Name()[0] == '.' {
					continue
				}
				visit(filepath.Join(path, e.Name()), false)
			}
			return
		}
		if !st.Mode().IsRegular() {
			return
		}
		codec, err := p.Detect(path)
		if err != nil {
			if explicit || !errors.Is(err, ErrUnknownFormat) {
				failed(path, err)
			} else {
				// Inside a directory, files of no known format (notes,
				// SOURCES.md) are reported as skipped, not failed.
				bad = append(bad, FileResult{Path: path, Outcome: OutcomeSkipped, Err: err.Error()})
			}
			return
		}
		inputs = append(inputs, input{path: path, codec: codec, size: st.Size()})
	}
	for _, path := range paths {
		visit(path, true)
	}
	return inputs, bad
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
