package watch

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"

	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/ingest"
)

// CodecComplete returns an Options.Complete that asks the codecs: a file
// is complete when its codec is a formats.Completer and says so (a
// teehistorian file that ends with FINISH). A file of another format is
// never complete here and becomes ready once idle for Options.Settle. A
// file in a live recording directory is complete when its codec, a
// formats.DirCompleter, says the directory is (an HCRP segment set's
// "finished" marker). Compressed files (gzip, xz, zstd) are looked
// through. A plain file whose last bytes cannot end a complete one
// (Completer.MayBeComplete) is not read whole, so a growing file costs
// one small read per change.
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
		if err != nil {
			return false, nil
		}
		c, ok := codec.(formats.Completer)
		if !ok {
			return false, nil
		}
		if kind == ingest.NotCompressed && !c.MayBeComplete(tail(path)) {
			return false, nil
		}
		return c.Complete(ctx, br)
	}
}

// dirComplete reports, for a file in a live recording directory (a
// formats.DirInput's), whether the directory says it is complete; ok is
// false for any other file.
func dirComplete(codecs []formats.Codec, dir string) (done, ok bool) {
	for _, c := range codecs {
		d, isDir := c.(formats.DirInput)
		if !isDir || !d.IsDirInput(dir) {
			continue
		}
		dc, can := c.(formats.DirCompleter)
		if !can {
			return false, true
		}
		done, err := dc.DirComplete(dir)
		return err == nil && done, true
	}
	return false, false
}

// tail returns the last formats.TailSize bytes of the file at path (nil
// when it cannot be read).
func tail(path string) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return nil
	}
	n := min(st.Size(), formats.TailSize)
	b := make([]byte, n)
	if _, err := f.ReadAt(b, st.Size()-n); err != nil {
		return nil
	}
	return b
}
