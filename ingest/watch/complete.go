package watch

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/teehistorian"
	"github.com/replayarchive/replay/ingest"
)

// finishByte is the last byte of a teehistorian file that ends with
// FINISH (the record type -1 as a varint). Any file that is complete ends
// with it, so a growing file is split only when it might be complete.
const finishByte = 0x40

// CodecComplete returns an Options.Complete that asks the codecs: a file
// is complete when its codec's split reads to a proper end. Only
// teehistorian has such an end (FINISH, Metadata.Attrs["finished"]); a
// file of another format is never complete here and becomes ready once
// idle for Options.Settle. A file in a live recording directory (an HCRP
// segment set) is complete when the directory has its "finished" marker. Compressed files (gzip, xz, zstd) are looked
// through. A plain teehistorian file whose last byte cannot be FINISH's is
// not split at all, so a growing file costs one small read per change.
func CodecComplete(codecs []formats.Codec) func(ctx context.Context, path string) (bool, error) {
	return func(ctx context.Context, path string) (bool, error) {
		if done, ok := dirComplete(codecs, filepath.Dir(path)); ok {
			return done, nil
		}
		rc, kind, err := ingest.OpenNative(path)
		if err != nil {
			return false, err
		}
		defer rc.Close()
		br := bufio.NewReaderSize(rc, 64<<10)
		head, err := br.Peek(formats.DetectSize)
		if err != nil && !errors.Is(err, io.EOF) {
			return false, nil // a compressed file still being written
		}
		codec, err := ingest.DetectBytes(codecs, head)
		if err != nil || codec.Name() != teehistorian.Name {
			return false, nil
		}
		if kind == ingest.NotCompressed && !endsWith(path, finishByte) {
			return false, nil
		}
		meta, err := codec.Split(ctx, br, discard{})
		if err != nil {
			// A half-written last record: not complete yet.
			return false, nil
		}
		if meta == nil {
			return false, fmt.Errorf("%s codec returned no metadata", codec.Name())
		}
		return meta.Attrs["finished"] == "true", nil
	}
}

// dirComplete reports, for a file in a live recording directory (an HCRP
// segment set: formats.DirInput), whether the directory says it is
// complete (its "finished" marker); ok is false for any other file.
func dirComplete(codecs []formats.Codec, dir string) (done, ok bool) {
	for _, c := range codecs {
		d, isDir := c.(formats.DirInput)
		if !isDir || !d.IsDirInput(dir) {
			continue
		}
		rc, err := d.OpenDir(dir)
		if err != nil {
			return false, true
		}
		defer rc.Close()
		f, ok := rc.(interface{ Finished() bool })
		return ok && f.Finished(), true
	}
	return false, false
}

// endsWith reports whether the file at path ends with byte b.
func endsWith(path string, b byte) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return false
	}
	last := make([]byte, 1)
	_, err = f.ReadAt(last, st.Size()-1)
	return err == nil && last[0] == b
}

// discard is a formats.Writer that keeps nothing.
type discard struct{}

func (discard) Header([]byte) error               { return nil }
func (discard) Chunk(formats.Chunk, []byte) error { return nil }
func (discard) Trailer([]byte) error              { return nil }
