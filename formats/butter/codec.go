// This file is the "butter" formats.Codec: it splits a .butter file into
// its header (file header + chunk table) and one piece per butter chunk,
// reports metadata, decodes frames of a tick range from the chunks that
// cover it, cuts clips, and exports to .echoreplay or a re-encoded .butter.

package butter

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/internal/bounded"
)

// Codec is the .butter codec. The zero value decodes with our fixes;
// set Options.Reference to decode exactly like the reference reader.
type Codec struct {
	Options DecodeOptions
}

// New returns the .butter codec.
func New() *Codec { return &Codec{} }

var (
	_ formats.Codec    = (*Codec)(nil)
	_ formats.Exporter = (*Codec)(nil)
)

// Name implements formats.Codec.
func (*Codec) Name() string { return Name }

// Detect implements formats.Codec: a version byte 1-3, a nonzero keyframe
// interval, a known compression, then a printable client name, and when
// the head holds it all, a header that parses.
func (*Codec) Detect(head []byte) bool {
	if len(head) < 5 || head[0] < 1 || head[0] > 3 {
		return false
	}
	if head[1] == 0 && head[2] == 0 || head[3] > 6 {
		return false
	}
	i := 4
	for ; i < len(head) && head[i] != 0; i++ {
		if head[i] < 0x20 || head[i] > 0x7E || i > 4+64 {
			return false
		}
	}
	if i >= len(head) {
		return len(head) < formats.DetectSize
	}
	h, err := ParseFileHeader(head)
	if err != nil {
		return errors.Is(err, io.ErrUnexpectedEOF)
	}
	if len(head) < int(h.DataStart())+2 {
		return true
	}
	// the first chunk starts with a keyframe marker (uncompressed), a gzip
	// magic or a zstd magic
	d := head[h.DataStart():]
	switch h.Compression {
	case CompressNone:
		return binary.LittleEndian.Uint16(d) == markerKeyframe
	case CompressGzip:
		return bytes.HasPrefix(d, gzipMagic)
	}
	return len(d) < len(bounded.ZstdMagic) || bounded.IsZstd(d)
}

// maxHeader bounds the header and chunk table Split will buffer.
const maxHeader = 32 << 20

// readHeader reads the header and chunk table from r, doubling what it
// has read until they parse (bounded.AppendN: the buffer follows the bytes
// that arrive, up to maxHeader).
func readHeader(r io.Reader) (*FileHeader, []byte, error) {
	var buf []byte
	for {
		var err error
		buf, err = bounded.AppendN(buf, r, int64(max(len(buf), 4096)), maxHeader, "header and chunk table")
		eof := err == io.ErrUnexpectedEOF
		if err != nil && !eof {
			return nil, nil, &formats.Error{Format: Name, Offset: int64(len(buf)), What: "reading the header", Err: err}
		}
		h, perr := ParseFileHeader(buf)
		if perr == nil {
			return h, buf, nil
		}
		if !errors.Is(perr, io.ErrUnexpectedEOF) || eof || len(buf) >= maxHeader {
			return nil, nil, perr
		}
	}
}

// metaBuilder collects metadata and events from decoded frames.
type metaBuilder struct {
	meta     *formats.Metadata
	seen     map[int64]int    // userid → index in meta.Players
	teamOf   map[int64]string // userid → team in the previous frame
	first    time.Time
	last     time.Time
	n        int64
	lastGoal *LastScore
	score    scoreState // the stats for the scoreboard (scoreboard.go)
}

var teamNames = []string{"blue", "orange", "spectator"}

// earliestRecording is Echo VR's release: a first frame stamped before it
// carries no real time (a conversion from .milk, which has no timestamps,
// counts from the Unix epoch), so the recording's start is left unknown.
var earliestRecording = time.Date(2017, 7, 20, 0, 0, 0, 0, time.UTC)

func newMetaBuilder(m *formats.Metadata) *metaBuilder {
	return &metaBuilder{meta: m, seen: map[int64]int{}, teamOf: map[int64]string{}}
}

func (mb *metaBuilder) add(tick int64, f *Frame) {
	if mb.n == 0 {
		mb.first = f.RecordedTime
	}
	mb.last = f.RecordedTime
	mb.n++
	mb.score.add(f)
	at := f.RecordedTime.Sub(mb.first)
	now := make(map[int64]string, len(mb.teamOf))
	for ti, t := range f.Teams {
		if t == nil || ti >= len(teamNames) {
			continue
		}
		team := teamNames[ti]
		for _, p := range t.Players {
			if _, dup := now[p.UserID]; dup {
				continue
			}
			now[p.UserID] = team
			id := strconv.FormatInt(p.UserID, 10)
			i, ok := mb.seen[p.UserID]
			if !ok {
				mb.seen[p.UserID] = len(mb.meta.Players)
				mb.meta.Players = append(mb.meta.Players, formats.Player{Name: p.Name, ID: id, Team: team})
			} else if mb.meta.Players[i].Team == "spectator" && team != "spectator" {
				mb.meta.Players[i].Team = team
			}
			prevTeam, was := mb.teamOf[p.UserID]
			switch {
			case !was && tick > 0:
				mb.meta.Events = append(mb.meta.Events, formats.Event{Tick: tick, Time: at, Kind: formats.EventJoin, Player: p.Name, PlayerID: id, Text: team})
			case was && prevTeam != team:
				mb.meta.Events = append(mb.meta.Events, formats.Event{Tick: tick, Time: at, Kind: formats.EventTeam, Player: p.Name, PlayerID: id, Text: team})
			}
		}
	}
	for id := range mb.teamOf {
		if _, ok := now[id]; !ok {
			name := mb.meta.Players[mb.seen[id]].Name
			mb.meta.Events = append(mb.meta.Events, formats.Event{Tick: tick, Time: at, Kind: formats.EventDrop, Player: name, PlayerID: strconv.FormatInt(id, 10)})
		}
	}
	mb.teamOf = now
	if ls := f.LastScore; ls != nil {
		if mb.lastGoal != nil && *ls != *mb.lastGoal {
			ev := formats.Event{Tick: tick, Time: at, Kind: "goal", Player: ls.PersonScored,
				Text: fmt.Sprintf("%s %s, %d points, %.1f m/s", ls.Team, ls.GoalType, ls.PointAmount, ls.DiscSpeed)}
			for _, p := range mb.meta.Players {
				if p.Name == ls.PersonScored {
					ev.PlayerID = p.ID
					break
				}
			}
			mb.meta.Events = append(mb.meta.Events, ev)
		}
		g := *ls
		mb.lastGoal = &g
	}
}

func (mb *metaBuilder) finish() {
	m := mb.meta
	mb.score.store(m)
	m.Ticks = mb.n
	if mb.n > 0 && !mb.first.Before(earliestRecording) {
		m.Start = mb.first
	}
	m.Duration = mb.last.Sub(mb.first)
	if mb.n > 1 && m.Duration > 0 {
		m.TickRate = float64(mb.n-1) / m.Duration.Seconds()
	}
}

// headerMeta fills what the file header says.
func headerMeta(h *FileHeader) *formats.Metadata {
	m := &formats.Metadata{Session: h.SessionID, Map: h.MapName, Attrs: map[string]string{}}
	if h.PrivateMatch {
		m.Attrs["match"] = "private"
	} else {
		m.Attrs["match"] = "public"
	}
	m.Attrs["match_type"] = h.MatchType()
	m.Attrs["client_name"] = h.ClientName
	m.Attrs["format_version"] = strconv.Itoa(h.Version)
	m.Attrs["keyframe_interval"] = strconv.Itoa(h.KeyframeInterval)
	m.Attrs["compression"] = h.Compression.String()
	m.Attrs["round_scores"] = fmt.Sprintf("%d:%d of %d", h.BlueRoundScore, h.OrangeRoundScore, h.TotalRoundCount)
	return m
}

// Split implements formats.Codec. It holds one chunk at a time. Every
// frame is decoded once (to count frames, time chunks and carry the bone
// state each chunk's Resume needs). A file cut off mid-chunk keeps every
// whole frame: the partial chunk becomes the last piece and
// Metadata.Warnings says what was lost. Bytes after the last chunk go to
// the trailer.
func (c *Codec) Split(ctx context.Context, r io.Reader, w formats.Writer) (*formats.Metadata, error) {
	h, buf, err := readHeader(r)
	if err != nil {
		return nil, err
	}
	ds := h.DataStart()
	if err := w.Header(buf[:ds]); err != nil {
		return nil, err
	}
	rest := io.MultiReader(bytes.NewReader(buf[ds:]), r)
	meta := headerMeta(h)
	mb := newMetaBuilder(meta)
	d := newDecoder(h, c.Options)
	off := ds
	var tick int64
	var chunk []byte
	for ci, size := range h.ChunkSizes {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if size == 0 {
			continue
		}
		// the buffer grows as bytes arrive: a lying size costs nothing
		chunk, err = bounded.AppendN(chunk[:0], rest, int64(size), maxChunkSize, fmt.Sprintf("chunk %d", ci))
		truncated := err != nil
		if truncated && err != io.ErrUnexpectedEOF {
			return nil, &formats.Error{Format: Name, Offset: off, What: fmt.Sprintf("reading chunk %d", ci), Err: err}
		}
		if len(chunk) == 0 {
			meta.Warnings = append(meta.Warnings, fmt.Sprintf("file ends before chunk %d of %d (byte offset %d): %d chunks lost", ci, len(h.ChunkSizes), off, len(h.ChunkSizes)-ci))
			break
		}
		resume := bonesResume(d.bones)
		if c.Options.Reference {
			resume = nil
		}
		start := tick
		var firstTime time.Time
		frames, derr := decodeChunk(d, chunk, off, ci, h.Compression, func(f *Frame) error {
			if tick == start {
				firstTime = f.RecordedTime
			}
			mb.add(tick, f)
			tick++
			return nil
		})
		if derr != nil && !(truncated && errors.Is(derr, io.ErrUnexpectedEOF)) {
			return nil, derr
		}
		if frames == 0 && !truncated {
			return nil, formats.Errorf(Name, off, "expected at least one frame in chunk %d, got none", ci)
		}
		if frames == 0 {
			// A chunk cut off before its first whole frame covers no tick,
			// so it is no chunk (formats.CheckChunk): its bytes, the last
			// of the file, are the trailer.
			meta.Warnings = append(meta.Warnings, fmt.Sprintf("file cut off in chunk %d of %d before its first whole frame: its %d bytes kept as trailer; %d later chunks lost",
				ci, len(h.ChunkSizes), len(chunk), len(h.ChunkSizes)-ci-1))
			if err := w.Trailer(chunk); err != nil {
				return nil, err
			}
			break
		}
		ch := formats.Chunk{StartTick: start, Ticks: int64(frames), Time: firstTime.Sub(mb.first), Resume: resume, Precompressed: h.Compression != CompressNone}
		if err := w.Chunk(ch, chunk); err != nil {
			return nil, err
		}
		off += int64(len(chunk))
		if truncated {
			meta.Warnings = append(meta.Warnings, fmt.Sprintf("file cut off in chunk %d of %d: %d of %d bytes present, %d whole frames kept from it; %d later chunks lost",
				ci, len(h.ChunkSizes), len(chunk), size, frames, len(h.ChunkSizes)-ci-1))
			break
		}
	}
	trailer, err := bounded.ReadAll(rest, maxHeader, "trailer")
	if errors.Is(err, bounded.ErrLimit) {
		return nil, formats.Errorf(Name, off, "expected the end of the file after the last chunk, got more than %d bytes", maxHeader)
	}
	if err != nil {
		return nil, err
	}
	if len(trailer) > 0 {
		meta.Warnings = append(meta.Warnings, fmt.Sprintf("%d bytes after the last chunk (byte offset %d) kept as trailer", len(trailer), off))
		if err := w.Trailer(trailer); err != nil {
			return nil, err
		}
	}
	if d.unknown > 0 {
		meta.Warnings = append(meta.Warnings, fmt.Sprintf("%d player index(es) beyond the header's player table (late joiners); shown as [UNKNOWN n]", d.unknown))
	}
	mb.finish()
	return meta, nil
}

// sourceHeader parses the archived header piece.
func sourceHeader(src formats.Source) (*FileHeader, error) {
	return ParseFileHeader(src.Header())
}

// rangeFrames decodes the frames of r from the chunks that cover them.
func (c *Codec) rangeFrames(ctx context.Context, src formats.Source, r formats.Range, emit func(tick int64, f *Frame) error) (*FileHeader, error) {
	h, err := sourceHeader(src)
	if err != nil {
		return nil, err
	}
	last := len(src.Chunks()) - 1
	err = formats.EachChunk(ctx, src, r, func(i int, ch formats.Chunk, native, resume []byte) error {
		d := newDecoder(h, c.Options)
		var err error
		if d.bones, err = bonesFromResume(resume); err != nil {
			return err
		}
		tick := ch.StartTick
		_, err = decodeChunk(d, native, ch.Offset, i, h.Compression, func(f *Frame) error {
			t := tick
			tick++
			if r.Past(t) {
				return formats.ErrStop
			}
			if !r.Contains(t) {
				return nil
			}
			return emit(t, f)
		})
		if i == last && errors.Is(err, io.ErrUnexpectedEOF) {
			return nil // a file cut short keeps its whole frames
		}
		return err
	})
	return h, err
}

// FrameData is what Frames emits for one frame: the API JSON with the
// recording time added as "recorded_time".
type FrameData struct {
	RecordedTime string `json:"recorded_time"`
	*Frame
}

// Frames implements formats.Codec: one formats.Frame of Type "frame" per
// frame, Data the session API JSON (plus "recorded_time"); a frame with
// bones is followed by one of Type "bones" at the same tick.
func (c *Codec) Frames(ctx context.Context, src formats.Source, r formats.Range, emit func(formats.Frame) error) error {
	_, err := c.rangeFrames(ctx, src, r, func(tick int64, f *Frame) error {
		return emitFrame(tick, f, emit)
	})
	return err
}

func emitFrame(tick int64, f *Frame, emit func(formats.Frame) error) error {
	if err := emit(formats.Frame{Tick: tick, Type: "frame", Data: FrameData{f.RecordedTime.UTC().Format(TimeLayout), f}}); err != nil {
		return err
	}
	if f.Bones != nil {
		return emit(formats.Frame{Tick: tick, Type: "bones", Data: f.Bones})
	}
	return nil
}

// Clip implements formats.Codec: a valid .butter holding the chunks that
// cover r, so it starts on the keyframe at or before r.From. The
// header is kept as it is (its player table lists every player of the
// whole recording) with a new chunk table; the last chunk is cut after
// r.To (and recompressed with our compressor when the file is
// compressed). Bone data in the first chunk of a clip that does not start
// at tick 0 decodes against a zero base, as every chunk does in the
// reference reader.
func (c *Codec) Clip(ctx context.Context, src formats.Source, r formats.Range, w io.Writer) error {
	h, err := sourceHeader(src)
	if err != nil {
		return err
	}
	chunks := src.Chunks()
	if formats.FindChunk(chunks, max(r.From, 0)) >= len(chunks) || r.Empty() {
		return fmt.Errorf("%s: clip %v: no frames in range", Name, r)
	}
	var pieces [][]byte
	err = formats.EachChunk(ctx, src, r, func(i int, ch formats.Chunk, native, _ []byte) error {
		keep := ch.Ticks
		if r.Past(ch.EndTick() - 1) {
			keep = r.To - ch.StartTick + 1
		}
		piece, err := cutChunk(h, native, int(keep), ch.Offset, i, c.Options.maxPayload())
		if len(piece) > 0 {
			pieces = append(pieces, piece)
		}
		return err
	})
	if err != nil {
		return err
	}
	out := bytes.Clone(src.Header()[:h.HeaderLen])
	out = appendU32(out, uint32(len(pieces)))
	for _, p := range pieces {
		out = appendU32(out, uint32(len(p)))
	}
	if _, err := w.Write(out); err != nil {
		return err
	}
	for _, p := range pieces {
		if _, err := w.Write(p); err != nil {
			return err
		}
	}
	return nil
}

func appendU32(b []byte, v uint32) []byte {
	return append(b, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
}

// cutChunk returns the stored chunk holding only its first keep frames:
// the original bytes when nothing is cut and the chunk is whole, otherwise
// the cut payload, recompressed.
func cutChunk(h *FileHeader, native []byte, keep int, off int64, ci int, limit int64) ([]byte, error) {
	payload, zerr := decompressChunk(native, h.Compression, limit)
	if zerr != nil && !errors.Is(zerr, io.ErrUnexpectedEOF) {
		return nil, &formats.Error{Format: Name, Offset: off, What: fmt.Sprintf("chunk %d", ci), Err: zerr}
	}
	d := newDecoder(h, DecodeOptions{})
	n, end := 0, 0
	err := d.chunkFrames(payload, 0, func(_ *Frame, e int) error {
		n, end = n+1, e
		if n == keep {
			return formats.ErrStop
		}
		return nil
	})
	if err != nil && !errors.Is(err, formats.ErrStop) && !errors.Is(err, errShort) {
		return nil, err
	}
	if zerr == nil && end == len(payload) {
		return native, nil
	}
	if end == 0 {
		return nil, nil
	}
	return compressPayload(payload[:end], h.Compression, nil)
}

// ExportFormats implements formats.Exporter.
func (*Codec) ExportFormats() []string { return []string{Name, EchoReplayName} }

// Export implements formats.Exporter: "echoreplay" writes the decoded
// frames of r as .echoreplay lines (opts "zip"=true for a zipped
// file, "entry" names its entry); "butter" re-encodes them with our writer
// (opts "keyframe-interval", default 300, and "compression", default
// gzip). Re-encoding decoded frames quantizes them a second time.
func (c *Codec) Export(ctx context.Context, src formats.Source, format string, r formats.Range, opts map[string]string, w io.Writer) error {
	return exportFrames(format, opts, w, func(emit func(*Frame) error) error {
		_, err := c.rangeFrames(ctx, src, r, func(_ int64, f *Frame) error { return emit(f) })
		return err
	})
}

// exportFrames writes the frames produced by each as format.
func exportFrames(format string, opts map[string]string, w io.Writer, each func(emit func(*Frame) error) error) error {
	switch format {
	case Name:
		wo, err := WriterOptionsFrom(opts)
		if err != nil {
			return err
		}
		bw, err := NewWriter(wo)
		if err != nil {
			return err
		}
		if err := each(bw.Add); err != nil {
			return err
		}
		_, err = bw.WriteTo(w)
		return err
	case EchoReplayName:
		for k := range opts {
			if k != "zip" && k != "entry" {
				return fmt.Errorf("butter: unknown echoreplay export option %q (want zip, entry): %w", k, formats.ErrBadOption)
			}
		}
		entry := opts["entry"]
		if entry == "" {
			entry = "replay.echoreplay"
		}
		ew, err := NewEchoReplayWriter(w, opts["zip"] == "true" || opts["zip"] == "1", entry)
		if err != nil {
			return err
		}
		if err := each(ew.Write); err != nil {
			return err
		}
		return ew.Close()
	}
	return fmt.Errorf("butter: cannot export as %q (want butter or echoreplay)", format)
}

// WriterOptionsFrom parses export opts: "keyframe-interval" (default 300)
// and "compression" (none, gzip, zstd_3, zstd_7, zstd_15, zstd_22;
// default gzip), Spark's defaults.
func WriterOptionsFrom(opts map[string]string) (WriterOptions, error) {
	wo := WriterOptions{KeyframeInterval: DefaultKeyframeInterval, Compression: DefaultCompression}
	for k, v := range opts {
		switch k {
		case "keyframe-interval":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 65535 {
				return wo, fmt.Errorf("butter: keyframe-interval %q: want 1..65535: %w", v, formats.ErrBadOption)
			}
			wo.KeyframeInterval = n
		case "compression":
			cmp, err := ParseCompression(v)
			if err != nil {
				return wo, fmt.Errorf("%w: %w", err, formats.ErrBadOption)
			}
			wo.Compression = cmp
		default:
			return wo, fmt.Errorf("butter: unknown butter export option %q (want keyframe-interval, compression): %w", k, formats.ErrBadOption)
		}
	}
	return wo, nil
}
