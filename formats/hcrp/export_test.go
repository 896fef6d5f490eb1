// Names of this package that its external tests (package hcrp_test, the
// ones that need internal/gen/hcrpgen, which imports this package) use.

package hcrp

import (
	"context"
	"io/fs"

	"github.com/google/uuid"
	"github.com/replayarchive/replay/formats"
)

// Unexported parts of the codec that external tests exercise.
var (
	NewEncoder     = newEncoder
	WriteCompacted = writeCompacted
	ReadVarInt     = readVarInt
	ReadVarLong    = readVarLong
)

// Limits the external tests go past.
const (
	MaxMetadataLen   = maxMetadataLen
	MaxIndexLen      = maxIndexLen
	MaxChunkLen      = maxChunkLen
	MaxIndexedEvents = maxIndexedEvents
)

// ScanChunk calls fn with each event of the uncompressed chunk b (described
// by e) and its tick, as the reader's scanner decodes them.
func ScanChunk(b []byte, e *IndexEntry, fn func(tick int64, ev Event)) error {
	var sc scanner
	sc.reset(b, e)
	for sc.next() {
		fn(sc.tick, sc.Event)
	}
	return sc.err
}

// SplitSet splits an open segment set as Codec.SplitDir does after
// opening it.
func SplitSet(ctx context.Context, s *SegmentSet, w formats.Writer) (*formats.Metadata, error) {
	return Codec{}.splitSet(ctx, s, w)
}

// SplitDirTailFS is Codec.SplitDirTail of the segment set name in fsys.
func SplitDirTailFS(ctx context.Context, fsys fs.FS, name string, in formats.TailInput, w formats.Writer) (*formats.TailResult, error) {
	return Codec{}.splitDirTail(ctx, fsys, name, in, w)
}

// HeaderID is the recording id a segment set's header gives (its fallback
// when the metadata names none).
func HeaderID(s *SegmentSet) uuid.UUID { return recordingID(s.set.hdr) }
