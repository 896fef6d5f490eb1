package hcrp

import (
	"context"
	"io"

	"github.com/replayarchive/replay/formats"
)

// The HCRP codec is a formats.DirInput: a live recording is a directory of
// segments that ingest hands over whole.
var _ formats.DirInput = Codec{}

// IsDirInput implements formats.DirInput: dir is a live segment set.
func (Codec) IsDirInput(dir string) bool { return IsSegmentSet(dir) }

// OpenDir implements formats.DirInput: the set's segments read as one
// compacted stream.
func (Codec) OpenDir(dir string) (io.ReadCloser, error) { return OpenSegmentSet(dir) }

// SplitDir implements formats.DirInput with SplitSegmentSet.
func (c Codec) SplitDir(ctx context.Context, dir string, w formats.Writer) (*formats.Metadata, error) {
	return c.SplitSegmentSet(ctx, dir, w)
}

// The HCRP codec is a formats.DirCompleter: a segment set's writer marks
// it complete.
var _ formats.DirCompleter = Codec{}

// DirComplete implements formats.DirCompleter: the set has its "finished"
// marker.
func (Codec) DirComplete(dir string) (bool, error) {
	s, err := OpenSegmentSet(dir)
	if err != nil {
		return false, err
	}
	defer s.Close()
	return s.Finished(), nil
}
