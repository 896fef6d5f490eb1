// Package formats defines the contract between the archive and the codecs
// that understand one native replay format each (formats/teehistorian,
// formats/butter, formats/sc2replay, formats/vtx, formats/hcrp).
//
// A codec splits a native file into pieces the archive can store and seek:
//
//	header ‖ chunk 0 ‖ chunk 1 ‖ … ‖ chunk N-1 ‖ trailer
//
// Concatenated in order the pieces are the original file, byte for byte. Each
// chunk covers a contiguous range of ticks (frames, game loops: whatever the
// format counts in), starts on a tick boundary, and carries a small resume
// state: what a decoder must know to start decoding at that chunk without
// reading the ones before it. Chunk start ticks strictly increase; CheckChunk
// holds every rule a chunk must pass.
//
// The codec also reports metadata (players, map, server, searchable events)
// and, given random access to an archived recording through a Source, decodes
// frames of a tick range and writes a clip: a valid native file of that range.
//
// Codecs never import the archive; the archive and the ingest pipeline import
// codecs through this package.
//
// Every codec package has the same shape: a constant Name holding the
// format's name as stored in manifests (Codec.Name returns it; Error.Format,
// warnings and the format lists of exporters use it; error strings keep Go's
// literal package prefix, as in "hcrp: ..."), and a constructor
// New() *Codec returning the codec with its defaults
// (formats/butter, which holds three formats, also has NewMilk and
// NewEchoReplay, and a name constant per format). Pointers, because several
// codecs carry settings a caller may change (teehistorian's ChunkSize,
// sc2replay's MaxSize) and a pointer is the one form that works for all of
// them; a codec holds no state between calls, so one value may be shared.
//
// Tick ranges are a Range: inclusive, To < 0 for "to the end". Codecs test
// ticks with its methods and walk chunks with EachChunk.
package formats

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/google/uuid"
)

// DetectSize is how many leading bytes of a file Detect is given (fewer when
// the file is shorter).
const DetectSize = 4096

// Codec reads and writes one native format.
type Codec interface {
	// Name is the format's short name as stored in manifests and shown to
	// users ("teehistorian", "butter", "sc2replay", "vtx", "hcrp", ...).
	Name() string

	// Detect reports whether head, the first DetectSize bytes of a file (or
	// the whole file when shorter), is this format. It must not panic on any
	// input and must decide from content, never from a file name.
	Detect(head []byte) bool

	// Split reads a whole native file from r and hands every byte of it to w
	// exactly once, in order, as a header, chunks and a trailer. It returns
	// the recording's metadata. Split streams: it must not hold the whole file
	// in memory unless the format needs random access (MPQ), and then only up
	// to a bound it documents. Errors should be *Error values so the user
	// learns the byte offset and what was expected.
	Split(ctx context.Context, r io.Reader, w Writer) (*Metadata, error)

	// Frames decodes the ticks in r of an archived recording and calls emit
	// once per decoded event or frame, in tick order. It reads only the
	// chunks that cover the range.
	Frames(ctx context.Context, src Source, r Range, emit func(Frame) error) error

	// Clip writes a valid native file holding the ticks in r. A format for
	// which clips are not meaningful returns an error wrapping
	// ErrClipUnsupported.
	Clip(ctx context.Context, src Source, r Range, w io.Writer) error
}

// ErrBadOption is wrapped by Export's error for an option (opts) the
// format does not take, or a value it cannot use: the caller's mistake.
var ErrBadOption = errors.New("bad export option")

// Exporter is implemented by codecs that can convert an archived recording
// into another native format (for example an .echoreplay session to .butter).
type Exporter interface {
	// ExportFormats lists the format names Export accepts.
	ExportFormats() []string
	// Export writes the ticks in r of the recording (All for the whole one)
	// as the named format. opts holds format-specific settings given by the
	// user as key=value (e.g. "keyframe-interval", "compression").
	Export(ctx context.Context, src Source, format string, r Range, opts map[string]string, w io.Writer) error
}

// Columnar is implemented by codecs whose chunks the archive stores as
// separate streams, one per kind of field, each compressed on its own: a
// chunk interleaves record types, deltas and strings, and fields of one
// kind compress far better together than mixed (teehistorian: 0.71× the
// bytes of compressing the chunk whole, docs/PERFORMANCE.md). The archive
// keeps the streams' layout; the codec alone knows its records' syntax.
//
// The transform must round-trip every input byte-exactly, including bytes
// the syntax does not explain (a truncated record, an unknown type), and
// must always give the same streams in the same order: the archive stores
// them as they are, so changing the split changes the on-disk layout.
type Columnar interface {
	// SplitColumns returns the streams of chunk, reusing cols (its
	// slices' backing arrays; each is reset first) when it has the
	// right number of streams.
	SplitColumns(chunk []byte, cols [][]byte) [][]byte
	// JoinColumns reverses SplitColumns, appending the chunk's bytes to
	// dst. Streams SplitColumns cannot have made are an error. It must
	// not keep cols: the archive reuses their memory for the next chunk.
	JoinColumns(dst []byte, cols [][]byte) ([]byte, error)
}

// ErrClipUnsupported is wrapped by Clip errors of formats whose files cannot
// be cut into a valid shorter file.
var ErrClipUnsupported = errors.New("clips are not supported for this format")

// Writer receives the pieces of a native file from Codec.Split. Slices passed
// to it may be reused by the codec after the call returns.
type Writer interface {
	// Header takes the native bytes before the first chunk. Call it at most
	// once, before any Chunk; omit it when the format has no header.
	Header(native []byte) error
	// Chunk takes the native bytes of one chunk and its index entry. The
	// archive fills in c.Offset and c.Length itself.
	Chunk(c Chunk, native []byte) error
	// Trailer takes the native bytes after the last chunk. Call it at most
	// once, last.
	Trailer(native []byte) error
}

// EventWriter is implemented by Writers that take a recording's events as
// the codec finds them, so that a codec need not hold them all until Split
// returns: a server running for days records hundreds of thousands, and
// every one must stay searchable. A codec may send events to it
// instead of listing them in Metadata.Events (teehistorian does); the
// recording's events are then those sent, in order, followed by any in
// Metadata.Events.
type EventWriter interface {
	Event(e Event) error
}

// Chunk is one chunk's entry in a recording's chunk index.
type Chunk struct {
	// StartTick is the first tick the chunk holds; Ticks how many it covers.
	StartTick int64 `json:"start_tick"`
	Ticks     int64 `json:"ticks"`
	// Time is the offset of StartTick from the recording's start.
	Time time.Duration `json:"time"`
	// Offset and Length locate the chunk's bytes in the native file. Set by
	// the archive, not the codec.
	Offset int64 `json:"offset"`
	Length int64 `json:"length"`
	// Resume is the codec's resume state: what a decoder needs to start at
	// this chunk. Opaque to the archive; keep it small.
	Resume []byte `json:"-"`
	// Precompressed says the native bytes are already compressed (gzip or
	// zstd inside the format, MPQ sectors): the archive stores them as they
	// are instead of compressing again.
	Precompressed bool `json:"precompressed,omitempty"`
}

// EndTick returns the tick after the chunk's last one.
func (c Chunk) EndTick() int64 { return c.StartTick + c.Ticks }

// Source gives a codec random access to one archived recording. The archive
// implements it; formatstest has an in-memory one for codec tests.
type Source interface {
	// Meta returns the metadata recorded at ingest.
	Meta() *Metadata
	// Header and Trailer return the native header and trailer bytes.
	Header() []byte
	Trailer() []byte
	// Chunks returns the chunk index, in tick order. Do not modify it.
	Chunks() []Chunk
	// ReadChunk returns the native bytes and the resume state of chunk i.
	ReadChunk(ctx context.Context, i int) (native, resume []byte, err error)
}

// ChunkReaderInto is implemented by Sources that can decode a chunk into a
// buffer the caller owns. A codec serving many seeks keeps one buffer
// instead of allocating a chunk's worth per call: the collections those
// allocations caused were most of a seek's slowest percent.
type ChunkReaderInto interface {
	// ReadChunkInto is ReadChunk appending the native bytes to dst[:0]
	// (grown if needed, or freshly allocated: never memory the Source
	// keeps); the resume state does not point into dst.
	ReadChunkInto(ctx context.Context, i int, dst []byte) (native, resume []byte, err error)
}

// FindChunk returns the index of the chunk that holds tick, or of the first
// chunk after it when tick falls in a gap; len(chunks) when tick is past the
// end. chunks must be in tick order.
func FindChunk(chunks []Chunk, tick int64) int {
	lo, hi := 0, len(chunks)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if chunks[m].EndTick() <= tick {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// EachChunk reads, in order, every chunk of src that holds ticks in r and
// calls fn with its position in the index, its entry, its native bytes and
// its resume state. It stops at the first error fn returns, or when ctx is
// done; an fn that returns ErrStop ends the walk and EachChunk returns nil.
func EachChunk(ctx context.Context, src Source, r Range, fn func(i int, c Chunk, native, resume []byte) error) error {
	if r.Empty() {
		return nil
	}
	chunks := src.Chunks()
	for i := FindChunk(chunks, max(r.From, 0)); i < len(chunks); i++ {
		c := chunks[i]
		if r.Past(c.StartTick) {
			break
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		native, resume, err := src.ReadChunk(ctx, i)
		if err != nil {
			return fmt.Errorf("chunk %d (tick %d): %w", i, c.StartTick, err)
		}
		if err := fn(i, c, native, resume); errors.Is(err, ErrStop) {
			return nil
		} else if err != nil {
			return err
		}
	}
	return nil
}

// Frame is one decoded event or frame, printed as a JSON line by
// `archivectl frames`.
type Frame struct {
	Tick int64 `json:"tick"`
	// Type names what Data holds ("input", "player_new", "frame", ...).
	Type string `json:"type"`
	// Data is the decoded content; it must marshal to JSON.
	Data any `json:"data,omitempty"`
}

// Metadata describes one recording. Codecs fill what their format knows.
type Metadata struct {
	// ID is the recording id when the file itself names exactly this
	// recording (teehistorian game_uuid); uuid.Nil lets the archive derive
	// one from the file's sha256.
	ID uuid.UUID `json:"id"`
	// Session is the session or world the recording belongs to (butter
	// sessionid, HCRP world id, VTX replay_uuid, teehistorian game_uuid).
	Session string `json:"session,omitempty"`
	// Start is when the recording began (zero when unknown).
	Start time.Time `json:"start"`
	// Duration is the recording's length in real time.
	Duration time.Duration `json:"duration"`
	// TickRate is ticks per second of real time (0 when unknown).
	TickRate float64 `json:"tick_rate,omitempty"`
	// Ticks is the number of ticks (frames, loops) recorded.
	Ticks int64 `json:"ticks"`
	// Players lists who took part, in first-seen order.
	Players []Player `json:"players,omitempty"`
	// Map and Server name where the recording was made.
	Map    string `json:"map,omitempty"`
	Server string `json:"server,omitempty"`
	// Flags are anticheat or moderation flags carried by the file itself.
	Flags []string `json:"flags,omitempty"`
	// Attrs holds other format-specific facts worth showing and searching
	// (server version, client name, game version, ...).
	Attrs map[string]string `json:"attrs,omitempty"`
	// Events are the searchable moments: console commands, chat, logins,
	// votes, finishes, joins, drops, flags. Secrets must be redacted by the
	// codec before they land here.
	Events []Event `json:"events,omitempty"`
	// Growing marks a live recording that may still grow (an HCRP segment
	// set): ingesting it again under the same ID, once more segments have
	// arrived, replaces the archived copy instead of being refused.
	Growing bool `json:"growing,omitempty"`
	// Warnings say what the codec tolerated (a file cut short, a missing
	// footer, a build with no protocol table). Ingest prints them.
	Warnings []string `json:"warnings,omitempty"`
}

// Player is one participant.
type Player struct {
	Name string `json:"name"`
	// ID is the player's stable id where the format has one (account name,
	// userid, toon handle, entity id).
	ID   string `json:"id,omitempty"`
	Team string `json:"team,omitempty"`
}

// Event is one searchable moment of a recording.
type Event struct {
	Tick int64         `json:"tick"`
	Time time.Duration `json:"time"`
	// Kind is one of the Event* constants, or a format-specific word.
	Kind string `json:"kind"`
	// Player and PlayerID say who did it, where known.
	Player   string `json:"player,omitempty"`
	PlayerID string `json:"player_id,omitempty"`
	// Text is what was typed or what happened (redacted where secret).
	Text string `json:"text,omitempty"`
}

// Redacted is what replaces, in what viewers are shown, a value only
// moderators may see.
const Redacted = "[redacted]"

// WithoutAccount returns e with the account its player signed in with
// replaced by Redacted in a login event's text (teehistorian: "rcon login
// as NAME"); PlayerID keeps it, for moderators. A login event that names
// no account in PlayerID keeps only its kind as text.
func (e Event) WithoutAccount() Event {
	if e.Kind != EventLogin {
		return e
	}
	if e.PlayerID == "" {
		e.Text = e.Kind
	} else {
		e.Text = strings.ReplaceAll(e.Text, e.PlayerID, Redacted)
	}
	return e
}

// ForViewers is implemented by frame data that names accounts (Frame.Data
// of teehistorian's rcon logins): ForViewers returns the data with them
// replaced by Redacted, which the server sends to viewers.
type ForViewers interface {
	ForViewers() any
}

// Event kinds shared by the formats.
const (
	EventCommand = "command"
	EventChat    = "chat"
	EventLogin   = "login"
	EventVote    = "vote"
	EventFinish  = "finish"
	EventJoin    = "join"
	EventDrop    = "drop"
	EventTeam    = "team"
	EventFlag    = "flag"
)

// Error is a parse error that says where in the native bytes it happened
// and what was expected there.
type Error struct {
	Format string
	Offset int64
	What   string // what was expected or found, e.g. "expected item type, got EOF"
	Err    error  // the underlying cause, may be nil
}

// Error reads "format: byte offset N: what", so a report points at the byte.
func (e *Error) Error() string {
	s := fmt.Sprintf("%s: byte offset %d: %s", e.Format, e.Offset, e.What)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the cause, so errors.Is sees io.ErrUnexpectedEOF and the like.
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error for format at offset with a formatted message.
func Errorf(format string, offset int64, msg string, args ...any) *Error {
	return &Error{Format: format, Offset: offset, What: fmt.Sprintf(msg, args...)}
}
