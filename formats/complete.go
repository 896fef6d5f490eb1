package formats

import (
	"context"
	"io"
)

// TailSize is how many of a file's last bytes Completer.MayBeComplete is
// given (fewer when the file is shorter).
const TailSize = 16

// Completer is implemented by codecs whose files say when they are
// complete (teehistorian's FINISH record), so that a followed file is
// ingested as soon as its writer is done instead of after it has been idle
// for a while. A codec without it has no end marker: its files are ready
// once idle.
type Completer interface {
	// MayBeComplete reports whether tail, the last bytes of a file as it
	// lies on disk (uncompressed), can end a complete file. It is a cheap
	// test: a file that cannot be complete is not read whole.
	MayBeComplete(tail []byte) bool
	// Complete reads a whole file from r and reports whether it is
	// complete: it ends with the format's end marker. A file that ends
	// inside a record is not complete and not an error.
	Complete(ctx context.Context, r io.Reader) (bool, error)
}

// DirCompleter is implemented by codecs whose directory recordings
// (DirInput) say when they are complete (an HCRP segment set's
// "finished" marker).
type DirCompleter interface {
	DirInput
	// DirComplete reports whether the recording directory dir is
	// complete.
	DirComplete(dir string) (bool, error)
}
