// This file holds the Codec: Split (header, one archive chunk per VTX chunk,
// trailer), metadata from the header, the embedded schema and the frames,
// Frames (decoded frames as JSON with schema names) and Clip.

// Package vtx reads and writes VTX replay files (Zenos Interactive's
// per-frame state format, both the protobuf "VTXP" and the FlatBuffers
// "VTXF" backends) and implements formats.Codec for them.
package vtx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/internal/bounded"
)

// DefaultMaxPlayers bounds Metadata.Players unless Codec.MaxPlayers is set.
const DefaultMaxPlayers = 1024

// defaultFPS is the SDK writer's default_fps, used for times when a file
// has no footer.
const defaultFPS = 60

// Name is the format's name as stored in manifests.
const Name = "vtx"

// Codec implements formats.Codec for VTX. The zero value is ready to use;
// New returns one like every codec package does.
type Codec struct {
	// MaxBlobSize bounds every header, chunk and footer blob, compressed
	// and decompressed (DefaultMaxBlobSize when 0). Split holds one chunk
	// (and the footer) in memory at a time.
	MaxBlobSize int64
	// MaxPlayers bounds the distinct entities listed in Metadata.Players
	// (DefaultMaxPlayers when 0).
	MaxPlayers int
}

var _ formats.Codec = Codec{}

// New returns a VTX codec with the default bounds.
func New() *Codec { return &Codec{} }

// Name implements formats.Codec.
func (Codec) Name() string { return Name }

// Detect implements formats.Codec: the file starts with "VTXP" or "VTXF".
func (Codec) Detect(head []byte) bool {
	_, ok := backendOf(head)
	return ok
}

func (c Codec) maxBlob() int64 {
	if c.MaxBlobSize > 0 {
		return c.MaxBlobSize
	}
	return DefaultMaxBlobSize
}

// Split implements formats.Codec. The header piece is the magic, the u32
// header size and the header blob; each VTX chunk (its u32 size and blob)
// is one archive chunk; the trailer is the footer blob, its u32 size and
// the magic. A file without a footer is split up to its last whole chunk
// with an empty trailer and a warning.
func (c Codec) Split(ctx context.Context, r io.Reader, w formats.Writer) (*formats.Metadata, error) {
	maxBlob := c.maxBlob()
	dec := NewDecoder(maxBlob)
	defer dec.Close()
	s := &scanner{r: r, dec: dec, maxBlob: maxBlob}
	early := peekFooter(r, dec, maxBlob) // times for chunk entries, when r can seek
	hp, err := s.readHeader()
	if err != nil {
		return nil, err
	}
	meta := &formats.Metadata{}
	schema, err := ParseSchema(s.header.Schema)
	if err != nil {
		meta.Warnings = append(meta.Warnings, fmt.Sprintf("embedded schema unreadable, properties unnamed: %v", err))
		schema, _ = ParseSchema("")
	}
	if err := w.Header(hp); err != nil {
		return nil, err
	}
	col := collector{schema: schema, max: c.MaxPlayers, seen: map[string]struct{}{}}
	if col.max <= 0 {
		col.max = DefaultMaxPlayers
	}
	s.light = &lightScan{col: &col}
	trailer, err := s.scan(ctx, func(sc *scanned) error {
		ch := formats.Chunk{
			StartTick:     sc.start,
			Ticks:         int64(sc.frames),
			Time:          frameTime(early, sc.start),
			Precompressed: bounded.IsZstd(sc.piece[4:]),
		}
		return w.Chunk(ch, sc.piece)
	})
	if err != nil {
		return nil, err
	}
	if trailer != nil {
		if err := w.Trailer(trailer); err != nil {
			return nil, err
		}
	}
	c.fillMeta(meta, s, schema, &col)
	return meta, nil
}

// peekFooter reads the footer from the end of r when r can seek, and puts
// r back where it was. It returns nil when it cannot.
func peekFooter(r io.Reader, dec *Decoder, maxBlob int64) *Footer {
	rs, ok := r.(io.ReadSeeker)
	if !ok {
		return nil
	}
	cur, err := rs.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil
	}
	defer rs.Seek(cur, io.SeekStart)
	end, err := rs.Seek(0, io.SeekEnd)
	if err != nil || end-cur < 16 {
		return nil
	}
	var tail [8]byte
	if _, err := rs.Seek(end-8, io.SeekStart); err != nil {
		return nil
	}
	if _, err := io.ReadFull(rs, tail[:]); err != nil {
		return nil
	}
	b, ok := backendOf(tail[4:])
	f := int64(le32(tail[:]))
	if !ok || f > maxBlob || f > end-cur-16 {
		return nil
	}
	if _, err := rs.Seek(end-8-f, io.SeekStart); err != nil {
		return nil
	}
	blob := make([]byte, f)
	if _, err := io.ReadFull(rs, blob); err != nil {
		return nil
	}
	ft, err := dec.DecodeFooter(b, blob)
	if err != nil {
		return nil
	}
	return ft
}

// frameTime returns the time of frame i from the recording's first frame:
// from the footer's game times when known, else at the SDK's default fps.
func frameTime(f *Footer, i int64) time.Duration {
	if f != nil && i >= 0 && i < int64(len(f.GameTime)) && f.GameTime[i] >= f.GameTime[0] {
		return time.Duration(f.GameTime[i]-f.GameTime[0]) * 100
	}
	return time.Duration(i) * time.Second / defaultFPS
}

// collector gathers the distinct entities of the frames as players.
type collector struct {
	schema  *Schema
	max     int
	seen    map[string]struct{}
	players []formats.Player
	dropped int
}

// known reports whether the entity id has been listed (or the list is
// full, which counts the id as dropped).
func (c *collector) known(id []byte) bool {
	if _, ok := c.seen[string(id)]; ok {
		return true
	}
	if len(c.players) >= c.max {
		c.dropped++
		return true
	}
	return false
}

// add lists a new entity.
func (c *collector) add(id []byte, typeID int32, name []byte) {
	sid := string(id)
	c.seen[sid] = struct{}{}
	p := formats.Player{Name: string(name), ID: sid, Team: c.schema.TypeName(typeID)}
	if p.Name == "" {
		p.Name = sid
	}
	c.players = append(c.players, p)
}

// fillMeta fills meta from what the scanner and collector found.
func (c Codec) fillMeta(meta *formats.Metadata, s *scanner, schema *Schema, col *collector) {
	h, ft := s.header, s.footer
	meta.Session = h.ReplayUUID
	if h.RecordedUTC > 0 {
		meta.Start = time.Unix(h.RecordedUTC, 0).UTC()
	}
	meta.Ticks = s.frames
	meta.Players = col.players
	a := map[string]string{
		"backend":             s.backend.String(),
		"format_version":      fmt.Sprintf("%d.%d", h.FormatMajor, h.FormatMinor),
		"schema_identifier":   h.DataIdentifier,
		"schema_version":      h.DataVersionString,
		"schema_data_version": strconv.Itoa(int(h.DataVersion)),
		"chunks":              strconv.Itoa(len(s.chunks)),
	}
	if h.ReplayName != "" {
		a["replay_name"] = h.ReplayName
	}
	if h.SchemaVersion != 0 {
		a["schema_revision"] = strconv.FormatUint(uint64(h.SchemaVersion), 10)
	}
	if schema.Version != "" {
		a["schema_json_version"] = schema.Version
	}
	if len(schema.Structs) > 0 {
		names := make([]string, len(schema.Structs))
		for i, st := range schema.Structs {
			names[i] = st.Name
		}
		a["entity_types"] = strings.Join(names, ",")
	}
	if m := strings.TrimSpace(h.CustomJSONMetadata); m != "" && m != "{}" {
		if len(m) > 4096 {
			m = m[:4096]
		}
		a["custom_json_metadata"] = m
	}
	switch {
	case ft != nil && len(ft.GameTime) > 1 && ft.GameTime[len(ft.GameTime)-1] > ft.GameTime[0]:
		n := len(ft.GameTime)
		span := ft.GameTime[n-1] - ft.GameTime[0]
		meta.Duration = time.Duration(span) * 100
		fps := float64(n-1) * TicksPerSecond / float64(span)
		meta.TickRate = math.Round(fps*1000) / 1000
	case ft != nil && ft.DurationSeconds > 0 && !math.IsInf(float64(ft.DurationSeconds), 0):
		meta.Duration = time.Duration(float64(ft.DurationSeconds) * float64(time.Second))
		if s.frames > 1 {
			meta.TickRate = math.Round(float64(s.frames-1)/float64(ft.DurationSeconds)*1000) / 1000
		}
	default:
		meta.Duration = frameTime(nil, max(s.frames-1, 0))
	}
	if meta.TickRate > 0 {
		a["fps"] = strconv.FormatFloat(meta.TickRate, 'f', -1, 64)
	}
	meta.Attrs = a
	if ft == nil {
		meta.Warnings = append(meta.Warnings, missingFooter)
	} else {
		for _, ev := range ft.Events {
			meta.Events = append(meta.Events, footerEvent(ft, ev))
		}
	}
	meta.Warnings = append(meta.Warnings, s.checkIndex()...)
	if col.dropped > 0 {
		meta.Warnings = append(meta.Warnings, fmt.Sprintf("more than %d distinct entities: players list cut at %d", col.max, col.max))
	}
}

// footerEvent converts a footer TimelineEvent.
func footerEvent(ft *Footer, ev TimelineEvent) formats.Event {
	e := formats.Event{Kind: ev.EventType, Text: ev.Label, PlayerID: ev.EntityUniqueID}
	if e.Kind == "" {
		e.Kind = "timeline"
	}
	if t := float64(ev.GameTime); t > 0 && !math.IsInf(t, 0) && t < 1e9 {
		e.Time = time.Duration(t * float64(time.Second))
		if len(ft.GameTime) > 0 {
			ticks := uint64(t*TicksPerSecond) + ft.GameTime[0]
			lo, hi := 0, len(ft.GameTime)
			for lo < hi {
				m := (lo + hi) / 2
				if ft.GameTime[m] < ticks {
					lo = m + 1
				} else {
					hi = m
				}
			}
			e.Tick = int64(lo)
		}
	}
	return e
}

// decodeChunkPiece decodes an archived chunk (u32 size and blob).
func decodeChunkPiece(dec *Decoder, b Backend, piece []byte, off int64) (*Chunk, error) {
	if len(piece) < 4 || int64(le32(piece)) != int64(len(piece)-4) {
		return nil, errAt(off, "expected a chunk's u32 size and that many bytes, got %d bytes", len(piece))
	}
	c, err := dec.DecodeChunk(b, piece[4:])
	if err != nil {
		return nil, blobError(off+4, "chunk blob", err)
	}
	return c, nil
}

// source is an opened archived recording.
type source struct {
	src     formats.Source
	dec     *Decoder
	backend Backend
	header  *Header
	schema  *Schema
	footer  *Footer
}

func (c Codec) open(src formats.Source) (*source, error) {
	dec := NewDecoder(c.maxBlob())
	b, h, err := dec.ParseHeaderPiece(src.Header())
	if err != nil {
		dec.Close()
		return nil, err
	}
	schema, err := ParseSchema(h.Schema)
	if err != nil {
		schema, _ = ParseSchema("")
	}
	var base int64
	for _, ch := range src.Chunks() {
		base = max(base, ch.Offset+ch.Length)
	}
	ft, err := dec.ParseTrailerPiece(b, src.Trailer(), base)
	if err != nil {
		dec.Close()
		return nil, err
	}
	return &source{src: src, dec: dec, backend: b, header: h, schema: schema, footer: ft}, nil
}

// each decodes the chunks covering r and calls fn for each frame in the
// range with its index.
func (s *source) each(ctx context.Context, r formats.Range, fn func(tick int64, f *Frame) error) error {
	return formats.EachChunk(ctx, s.src, r, func(_ int, ch formats.Chunk, native, _ []byte) error {
		c, err := decodeChunkPiece(s.dec, s.backend, native, ch.Offset)
		if err != nil {
			return err
		}
		for j := range c.Frames {
			tick := ch.StartTick + int64(j)
			if r.Past(tick) {
				return formats.ErrStop
			}
			if !r.Contains(tick) {
				continue
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := fn(tick, &c.Frames[j]); err != nil {
				return err
			}
		}
		return nil
	})
}

// times returns the game and creation times of frame i (0 when unknown).
func (s *source) times(i int64) (game, created uint64, ok bool) {
	if s.footer == nil {
		return 0, 0, false
	}
	if i < int64(len(s.footer.GameTime)) {
		game, ok = s.footer.GameTime[i], true
	}
	if i < int64(len(s.footer.CreatedUTC)) {
		created = s.footer.CreatedUTC[i]
	}
	return game, created, ok
}

// Frames implements formats.Codec: each frame in r is emitted as
// Frame{Tick: frame index, Type: "frame", Data: FrameData}.
func (c Codec) Frames(ctx context.Context, src formats.Source, r formats.Range, emit func(formats.Frame) error) error {
	s, err := c.open(src)
	if err != nil {
		return err
	}
	defer s.dec.Close()
	return s.each(ctx, r, func(tick int64, f *Frame) error {
		fd := s.schema.FrameJSON(f)
		if gt, cu, ok := s.times(tick); ok {
			n := Num(float64(gt) / TicksPerSecond)
			fd.GameTime, fd.CreatedUTC = &n, cu
		}
		return emit(formats.Frame{Tick: tick, Type: "frame", Data: fd})
	})
}

// ErrEmptyRange is returned by Clip when no frame falls in the range.
var ErrEmptyRange = errors.New("vtx: no frames in the requested range")

// Clip implements formats.Codec: the frames in r are written as a
// new file of the same backend with the source's header, re-chunked at
// DefaultChunkFrames, with their original game and creation times and a
// rebuilt footer.
func (c Codec) Clip(ctx context.Context, src formats.Source, r formats.Range, w io.Writer) error {
	s, err := c.open(src)
	if err != nil {
		return err
	}
	defer s.dec.Close()
	var wr *Writer
	err = s.each(ctx, r, func(tick int64, f *Frame) error {
		if wr == nil {
			if wr, err = newWriterPiece(w, s.backend, src.Header(), nil); err != nil {
				return err
			}
		}
		gt, cu, ok := s.times(tick)
		if !ok {
			gt = uint64(frameTime(nil, tick) / 100)
		}
		return wr.WriteFrame(f, gt, cu)
	})
	if err != nil {
		if wr != nil {
			wr.pk.close()
		}
		return err
	}
	if wr == nil {
		return ErrEmptyRange
	}
	return wr.Close()
}
