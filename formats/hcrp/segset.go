// This file serves live recording directories (preamble.dat plus
// segment-NNN.dat files) to the archive as compacted byte streams, and
// compacts recordings into one file at a higher zstd level.

package hcrp

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/google/uuid"
	"github.com/klauspost/compress/zstd"
	"github.com/replayarchive/replay/formats"
)

// IsSegmentSet reports whether dir is a recording directory: it holds a
// preamble.dat that starts with the HCRP magic.
func IsSegmentSet(dir string) bool {
	f, err := os.Open(filepath.Join(dir, PreambleFile))
	if err != nil {
		return false
	}
	defer f.Close()
	var head [6]byte
	if _, err := io.ReadFull(f, head[:]); err != nil {
		return false
	}
	return Codec{}.Detect(head[:])
}

// SegmentSet is a recording directory read as the compacted file it stands
// for: the preamble with absolute offsets, then the indexed chunks of every
// segment as they are (still at the recording's zstd level). The same
// segments always give the same bytes. Chunks a segment holds beyond the
// preamble's index (a segment written just before a crash) are left out.
type SegmentSet struct {
	set  *segmentSet
	r    io.Reader
	size int64
	id   uuid.UUID
}

// OpenSegmentSet opens the recording directory dir. Close it when done.
func OpenSegmentSet(dir string) (*SegmentSet, error) {
	return OpenSegmentSetFS(os.DirFS(dir), filepath.Base(filepath.Clean(dir)))
}

// OpenSegmentSetFS is OpenSegmentSet for a recording directory given as a
// file system (its segment files must implement io.ReaderAt); name is the
// directory's name, used for the ID.
func OpenSegmentSetFS(fsys fs.FS, name string) (*SegmentSet, error) {
	set, err := openSegmentSet(fsys)
	if err != nil {
		return nil, err
	}
	pre, _, err := compactedPreamble(*set.hdr, set.meta, set.index)
	if err != nil {
		set.Close()
		return nil, err
	}
	parts := []io.Reader{bytes.NewReader(pre)}
	size := int64(len(pre))
	for i, f := range set.files {
		parts = append(parts, io.NewSectionReader(f, 0, set.spans[i]))
		size += set.spans[i]
	}
	return &SegmentSet{set: set, r: io.MultiReader(parts...), size: size, id: setID(name, set.hdr)}, nil
}

// Read implements io.Reader over the compacted bytes.
func (s *SegmentSet) Read(p []byte) (int, error) { return s.r.Read(p) }

// Close closes the segment files.
func (s *SegmentSet) Close() error { return s.set.Close() }

// Size returns the length of the compacted stream.
func (s *SegmentSet) Size() int64 { return s.size }

// ID returns the recording's stable id: the directory name when it is a
// UUID (the reference names directories by replay id), else a UUIDv5 of the
// world id and the start timestamp.
func (s *SegmentSet) ID() uuid.UUID { return s.id }

// Finished reports whether the directory has the "finished" marker.
func (s *SegmentSet) Finished() bool { return s.set.finished }

// SplitSegmentSet splits the recording directory dir as Split splits a
// compacted file, and marks the metadata as a growing recording with the
// set's stable ID, so ingesting the directory again after more segments
// arrived replaces the same recording.
func (c Codec) SplitSegmentSet(ctx context.Context, dir string, w formats.Writer) (*formats.Metadata, error) {
	s, err := OpenSegmentSet(dir)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	md, err := c.splitSet(ctx, s, w)
	if err != nil {
		return nil, fmt.Errorf("hcrp: %s: %w", dir, err)
	}
	return md, nil
}

func (c Codec) splitSet(ctx context.Context, s *SegmentSet, w formats.Writer) (*formats.Metadata, error) {
	md, err := c.Split(ctx, s, w)
	if err != nil {
		return nil, err
	}
	md.ID = s.ID()
	md.Growing = true
	md.Attrs["finished"] = strconv.FormatBool(s.Finished())
	md.Attrs["segments"] = strconv.Itoa(len(s.set.files))
	return md, nil
}

// CompactOptions configures Compact.
type CompactOptions struct {
	// Level is the zstd level chunks are recompressed at; the default is
	// SpeedBestCompression (the reference compacts at zstd level 19).
	Level zstd.EncoderLevel
	// Extra is merged into the metadata (its set keys replace the file's).
	Extra *Meta
}

// Compact writes r's recording as one compacted file, recompressing every
// chunk at opts.Level. r may be a live directory (OpenDir) or a compacted
// file.
func Compact(ctx context.Context, r *Reader, w io.Writer, opts CompactOptions) error {
	if opts.Level == 0 {
		opts.Level = zstd.SpeedBestCompression
	}
	enc, err := newEncoder(opts.Level)
	if err != nil {
		return err
	}
	defer enc.Close()
	meta := r.MetaRaw
	if opts.Extra != nil {
		b, err := EncodeMeta(opts.Extra)
		if err != nil {
			return err
		}
		if meta, err = MergeMeta(meta, b); err != nil {
			return err
		}
	}
	// Recompress first: the index needs the new compressed lengths.
	entries := make([]IndexEntry, len(r.Index))
	copy(entries, r.Index)
	var data []byte
	for i := range entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		raw, err := r.Chunk(ctx, i)
		if err != nil {
			return err
		}
		n := len(data)
		data = enc.EncodeAll(raw, data)
		entries[i].Offset = int64(n)
		entries[i].CompressedLen = int32(len(data) - n)
	}
	return writeCompacted(w, *r.Header, meta, entries, func(i int) ([]byte, error) {
		e := &entries[i]
		return data[e.Offset : e.Offset+int64(e.CompressedLen)], nil
	})
}
