package formats

import (
	"context"
	"io"
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
	SplitDir(ctx context.Context, dir string, w Writer) (*Metadata, error)
}
