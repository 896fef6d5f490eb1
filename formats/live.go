package formats

import (
	"context"
	"errors"
	"io"

	"github.com/google/uuid"
)

// Appendable is implemented by codecs whose files grow by appending
// records while a game runs (teehistorian): the archive then extends a
// live recording in place as bytes arrive, re-splitting only its open
// tail chunk, instead of splitting the whole file again.
type Appendable interface {
	Codec
	// LiveID reads the recording id and session a growing file names from
	// head, its first bytes, and the length of its header piece. It
	// returns ErrNeedMore while head ends inside the header.
	LiveID(head []byte) (id uuid.UUID, session string, headerLen int64, err error)
	// SplitTail continues the split of a growing file from its open tail
	// chunk (or from its first byte), handing the pieces to w as Split
	// does: the first chunk replaces the open tail and starts at its
	// tick. Without in.Final it stops at the end of the last complete
	// record and leaves a half-written one for the next call. w is an
	// EventWriter: the new events go to it, each once it is final (an
	// event that may still change waits in TailResult.State, bounded),
	// since an archived event is never rewritten.
	SplitTail(ctx context.Context, in TailInput, w Writer) (*TailResult, error)
}

// ErrNeedMore says a growing file does not hold enough bytes yet.
var ErrNeedMore = errors.New("the file ends inside its header: more bytes are needed")

// TailInput is where SplitTail resumes.
type TailInput struct {
	// R reads the file from byte Offset on.
	R io.Reader
	// Offset is the file offset of the open tail chunk; 0 with Resume nil
	// for a first split (R starts with the header).
	Offset int64
	// Resume and StartTick are the open tail chunk's resume state (nil:
	// first split) and first tick.
	Resume    []byte
	StartTick int64
	// Seen is how many bytes from Offset were split before: their records
	// are decoded again to cut chunks, but not observed for metadata.
	Seen int64
	// Header is the archived header piece (for a resumed split).
	Header []byte
	// State is TailResult.State of the previous call.
	State []byte
	// Events is how many events are archived; the next one sent
	// follows them.
	Events int
	// Chunks is how many chunks are archived (for SplitDirTail).
	Chunks int
	// Final says the file is finished or idle: every byte is taken, a
	// half-written last record as the trailer.
	Final bool
}

// TailResult is what SplitTail found.
type TailResult struct {
	// Meta is the metadata of the whole recording so far; its Events
	// are new events to append after those sent (normally none).
	Meta *Metadata
	// State is the codec's state after the last complete record, for the
	// next call's TailInput.State.
	State []byte
	// End is the file offset after the last complete record (after the
	// trailer when Final or Finished).
	End int64
	// Finished says the file's end marker was read: it is complete.
	Finished bool
	// Read is how many bytes of input the call read (0 when the codec
	// does not count), so that tests and stats can show that a grow reads
	// what was added, not what was archived before.
	Read int64
}

// AppendableDir is implemented by codecs whose live recordings are
// directories of pieces written once each, indexed by a small file
// rewritten with every commit (an HCRP segment set: preamble.dat and
// segment-NNN.dat). The archive extends one live recording as commits
// arrive, as it does for an Appendable file, except that the header
// piece is written anew by every grow (its counts and index change) and
// archived chunks are never sent again: new chunks follow the last one.
type AppendableDir interface {
	DirInput
	// LiveDir reads the recording id and session the directory dir
	// names. It returns ErrNeedMore while the directory has no index yet.
	LiveDir(dir string) (id uuid.UUID, session string, err error)
	// SplitDirTail continues the split of the growing directory dir: it
	// hands w the whole header piece, then the chunks after the
	// in.Chunks already archived (in.Header, in.State and in.Events are
	// the archive's), and the new events as SplitTail does. Without in.Final and before the directory says it
	// is complete, it returns ErrNeedMore when nothing was added. It
	// returns an error wrapping ErrNotExtending when the directory no
	// longer holds what was archived (a segment rewritten, another
	// recording under the same name).
	SplitDirTail(ctx context.Context, dir string, in TailInput, w Writer) (*TailResult, error)
}

// ErrNotExtending says a growing input no longer holds the bytes archived
// from it, so it cannot extend its live recording.
var ErrNotExtending = errors.New("the input does not extend its live recording")

// PieceKind says what one file of a recording directory is, for a
// directory sent file by file to an archive on another host (archivectl
// push): the archive keeps a copy of each file and must know which it
// appends to, which it replaces whole, and which says the directory is
// complete.
type PieceKind int8

// The kinds of a recording directory's files.
const (
	// PieceNone: the file is not part of the recording (a writer's
	// temporary file); it is not sent.
	PieceNone PieceKind = iota
	// PieceHeader: the file is replaced whole by its writer (a rename)
	// with every commit (an HCRP set's preamble.dat); it is sent whole.
	PieceHeader
	// PieceAppend: the file only grows, and its bytes never change once
	// written (an HCRP set's segment-NNN.dat); its new bytes are sent.
	PieceAppend
	// PieceMarker: the file's presence says the directory is complete (an
	// HCRP set's empty "finished"); it is sent last, empty.
	PieceMarker
)

// String is the kind's name, as the push API answers it.
func (k PieceKind) String() string {
	switch k {
	case PieceHeader:
		return "header"
	case PieceAppend:
		return "append"
	case PieceMarker:
		return "marker"
	}
	return "none"
}

// DirPieces is implemented by DirInput codecs whose recording
// directories can be mirrored file by file on another host and grown
// there (an HCRP segment set pushed by archivectl push): the agent and
// the archive ask it what each file is, so that neither knows the
// format's file names.
type DirPieces interface {
	Codec
	DirInput
	// DirPiece says what the file named name (a base name, no directory)
	// is in one of this codec's recording directories.
	DirPiece(name string) PieceKind
	// CheckHeaderPiece returns an error (a *Error, with the offset)
	// unless b is a whole header piece of this codec: a header pushed to
	// replace the archive's copy is checked before it replaces it.
	CheckHeaderPiece(b []byte) error
	// DirMissing says what the directory's header references that its
	// other pieces do not hold yet ("" when they hold it all): a copy
	// whose header arrived before the bytes it indexes waits for them.
	DirMissing(dir string) (string, error)
}
