package server

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/formats"
)

// RecordingJSON is everything the API says about one recording.
type RecordingJSON struct {
	ID             string               `json:"id"`
	Format         string               `json:"format"`
	SourceName     string               `json:"source_name,omitempty"`
	SHA256         string               `json:"sha256"`
	NativeBytes    int64                `json:"native_bytes"`
	StoredBytes    int64                `json:"stored_bytes"`
	Ingested       time.Time            `json:"ingested"`
	Start          string               `json:"start,omitempty"`
	DurationMS     int64                `json:"duration_ms"`
	Ticks          int64                `json:"ticks"`
	TickRate       float64              `json:"tick_rate,omitempty"`
	FirstTick      int64                `json:"first_tick"`
	LastTick       int64                `json:"last_tick"`
	Map            string               `json:"map,omitempty"`
	Server         string               `json:"server,omitempty"`
	Session        string               `json:"session,omitempty"`
	Players        []formats.Player     `json:"players"`
	Flags          []archive.Flag       `json:"flags"`
	FileFlags      []string             `json:"file_flags"`
	Hold           *archive.Hold        `json:"hold"`
	Attrs          map[string]string    `json:"attrs,omitempty"`
	Warnings       []string             `json:"warnings,omitempty"`
	EventCount     int                  `json:"event_count"`
	Chunks         []ChunkJSON          `json:"chunks"`
	CanClip        bool                 `json:"can_clip"`
	ConvertFormats []string             `json:"convert_formats"`
	Extension      string               `json:"extension"`
	Audit          []archive.AuditEntry `json:"audit"`
}

// ChunkJSON is one chunk's tick range and time, so a client can fetch
// frames a chunk at a time.
type ChunkJSON struct {
	StartTick int64 `json:"start_tick"`
	Ticks     int64 `json:"ticks"`
	TimeMS    int64 `json:"time_ms"`
}

// RecordingJSONOf describes rec with its audit history.
func RecordingJSONOf(rec *replay.Recording, audit []archive.AuditEntry) RecordingJSON {
	m := rec.Manifest()
	out := RecordingJSON{
		ID: m.ID.String(), Format: m.Format, SourceName: m.SourceName, SHA256: m.SHA256,
		NativeBytes: m.NativeBytes, StoredBytes: m.StoredBytes, Ingested: m.Ingested,
		DurationMS: m.Meta.Duration.Milliseconds(), Ticks: m.Meta.Ticks, TickRate: m.Meta.TickRate,
		LastTick: rec.LastTick(), Map: m.Meta.Map, Server: m.Meta.Server, Session: m.Meta.Session,
		Players: m.Meta.Players, Flags: m.Flags, FileFlags: m.Meta.Flags, Hold: m.Hold, Attrs: m.Meta.Attrs,
		Warnings: m.Meta.Warnings, EventCount: m.EventCount, CanClip: rec.CanClip(),
		ConvertFormats: rec.ConvertFormats(), Extension: rec.Extension(), Audit: audit,
	}
	if !m.Meta.Start.IsZero() {
		out.Start = m.Meta.Start.UTC().Format(time.RFC3339)
	}
	cs := rec.Chunks()
	if len(cs) > 0 {
		out.FirstTick = cs[0].StartTick
	}
	out.Chunks = make([]ChunkJSON, len(cs))
	for i, c := range cs {
		out.Chunks[i] = ChunkJSON{StartTick: c.StartTick, Ticks: c.Ticks, TimeMS: c.Time.Milliseconds()}
	}
	if out.Players == nil {
		out.Players = []formats.Player{}
	}
	if out.Flags == nil {
		out.Flags = []archive.Flag{}
	}
	if out.FileFlags == nil {
		out.FileFlags = []string{}
	}
	if out.ConvertFormats == nil {
		out.ConvertFormats = []string{}
	}
	if out.Audit == nil {
		out.Audit = []archive.AuditEntry{}
	}
	return out
}

// recordingReader reads a recording's native bytes with random access:
// header, chunks and trailer at their offsets in the native file. A read
// decompresses only the chunk it lands in (each verified by its CRC), so a
// Range request costs the chunks it covers, not the file.
type recordingReader struct {
	ctx  context.Context
	rec  *replay.Recording
	size int64
	pos  int64
	// The last chunk read, kept for the reads that follow it.
	cur    int
	native []byte
}

func newRecordingReader(ctx context.Context, rec *replay.Recording) *recordingReader {
	return &recordingReader{ctx: ctx, rec: rec, size: rec.Manifest().NativeBytes, cur: -1}
}

func (r *recordingReader) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		off += r.pos
	case io.SeekEnd:
		off += r.size
	default:
		return 0, errors.New("seek: bad whence")
	}
	if off < 0 {
		return 0, errors.New("seek: negative position")
	}
	r.pos = off
	return off, nil
}

func (r *recordingReader) Read(p []byte) (int, error) {
	if r.pos >= r.size {
		return 0, io.EOF
	}
	header := r.rec.Header()
	if r.pos < int64(len(header)) {
		n := copy(p, header[r.pos:])
		r.pos += int64(n)
		return n, nil
	}
	cs := r.rec.Chunks()
	i := chunkAt(cs, r.pos)
	if i < 0 {
		trailer := r.rec.Trailer()
		start := r.size - int64(len(trailer))
		if r.pos < start {
			return 0, errors.New("recording: gap between the chunks and the trailer")
		}
		n := copy(p, trailer[r.pos-start:])
		r.pos += int64(n)
		return n, nil
	}
	if i != r.cur {
		native, _, err := r.rec.ReadChunk(r.ctx, i)
		if err != nil {
			return 0, err
		}
		r.cur, r.native = i, native
	}
	n := copy(p, r.native[r.pos-cs[i].Offset:])
	r.pos += int64(n)
	return n, nil
}

// chunkAt returns the chunk holding byte offset off, or -1.
func chunkAt(cs []formats.Chunk, off int64) int {
	lo, hi := 0, len(cs)
	for lo < hi {
		mid := (lo + hi) / 2
		if cs[mid].Offset+cs[mid].Length <= off {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo < len(cs) && cs[lo].Offset <= off {
		return lo
	}
	return -1
}
