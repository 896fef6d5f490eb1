// This file is the archive's codec for HCRP: Detect, Split of compacted
// files into preamble and chunk pieces with metadata, Frames (seek to the
// nearest snapshot chunk, then decode events) and Clip. Live recording
// directories are compacted on the fly by segset.go and split the same way.

package hcrp

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/klauspost/compress/zstd"
	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/internal/bounded"
)

// Codec implements formats.Codec for HCRP files. It has no settings; New
// returns one like every codec package does.
type Codec struct{}

var _ formats.Codec = Codec{}

// New returns an HCRP codec.
func New() *Codec { return &Codec{} }

// Name implements formats.Codec.
func (Codec) Name() string { return Name }

// Detect implements formats.Codec: the "HCRP" magic and a format version
// of 1 to 4 (Split explains why it reads only version 4).
func (Codec) Detect(head []byte) bool {
	if len(head) < 6 || binary.BigEndian.Uint32(head) != Magic {
		return false
	}
	v := binary.BigEndian.Uint16(head[4:])
	return v >= 1 && v <= Version
}

// Split implements formats.Codec for a compacted file: the header piece is
// the preamble (header, metadata, index), then one piece per chunk (a zstd
// frame, so Precompressed). Chunk resume state is the chunk's index flags
// and the number of the nearest snapshot chunk at or before it.
func (Codec) Split(ctx context.Context, r io.Reader, w formats.Writer) (*formats.Metadata, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	head := make([]byte, HeaderSize)
	if n, err := io.ReadFull(br, head); err != nil {
		if n >= 6 {
			if _, herr := ParseHeader(head[:n]); herr != nil {
				return nil, herr
			}
		}
		return nil, &formats.Error{Format: Name, Offset: int64(n), What: fmt.Sprintf("expected a %d-byte header", HeaderSize), Err: err}
	}
	h, err := ParseHeader(head)
	if err != nil {
		return nil, err
	}
	pre, err := bounded.AppendN(head, br, h.PreambleLen()-HeaderSize, maxPreambleLen, "metadata and index")
	if err != nil {
		return nil, &formats.Error{Format: Name, Offset: int64(len(pre)),
			What: fmt.Sprintf("expected %d bytes of metadata and index", h.PreambleLen()-HeaderSize), Err: err}
	}
	ibase := HeaderSize + int64(h.MetadataLen)
	h, metaRaw, index, err := parsePreamble(pre, false)
	if err != nil {
		if _, _, idx, serr := parsePreamble(pre, true); serr == nil && len(idx) > 0 {
			return nil, &formats.Error{Format: Name, Offset: ibase,
				What: "index holds segment offsets: this is the preamble.dat of a recording directory; ingest the directory instead", Err: err}
		}
		return nil, err
	}
	if err := w.Header(pre); err != nil {
		return nil, fmt.Errorf("hcrp: header: %w", err)
	}
	meta, col := newMetadata(h, metaRaw)
	col.sink, _ = w.(formats.EventWriter)
	cs, err := newChunkSplitter(col, 0)
	if err != nil {
		return nil, err
	}
	defer cs.close()
	var comp []byte
	for i := range index {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		e := &index[i]
		if comp, err = bounded.AppendN(comp[:0], br, int64(e.CompressedLen), maxChunkLen, fmt.Sprintf("chunk %d", i)); err != nil {
			return nil, &formats.Error{Format: Name, Offset: e.Offset + int64(len(comp)),
				What: fmt.Sprintf("chunk %d: expected %d bytes", i, e.CompressedLen), Err: err}
		}
		if err := cs.put(i, e, comp, w); err != nil {
			return nil, err
		}
	}
	meta.Warnings = append(meta.Warnings, cs.warnings...)
	end := h.PreambleLen()
	if n := len(index); n > 0 {
		end = index[n-1].Offset + int64(index[n-1].CompressedLen)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		if err != nil {
			return nil, &formats.Error{Format: Name, Offset: end, What: "expected end of file", Err: err}
		}
		return nil, formats.Errorf(Name, end, "expected end of file after the last chunk, found more bytes")
	}
	if err := col.finish(meta); err != nil {
		return nil, err
	}
	return meta, nil
}

// chunkSplitter hands a recording's chunks to a formats.Writer as they
// are stored (a zstd frame each, so Precompressed), collecting their
// events on the way. Chunk resume state is the chunk's index flags and
// the number of the nearest snapshot chunk at or before it.
type chunkSplitter struct {
	dec *zstd.Decoder
	raw []byte
	sc  scanner
	col *collector
	// snap is the number of the last snapshot chunk.
	snap int
	// warnings say which chunks' events stopped decoding.
	warnings []string
}

func newChunkSplitter(col *collector, snap int) (*chunkSplitter, error) {
	dec, err := newDecoder()
	if err != nil {
		return nil, err
	}
	return &chunkSplitter{dec: dec, col: col, snap: snap}, nil
}

func (cs *chunkSplitter) close() { cs.dec.Close() }

// put decompresses chunk i (comp, with index entry e), collects its
// events and hands it to w.
func (cs *chunkSplitter) put(i int, e *IndexEntry, comp []byte, w formats.Writer) error {
	var err error
	if cs.raw, err = decompress(cs.dec, comp, e, i, cs.raw); err != nil {
		return err
	}
	sc := &cs.sc
	sc.reset(cs.raw, e)
	for sc.next() {
		cs.col.event(sc.tick, &sc.Event)
	}
	if sc.err != nil {
		cs.warnings = append(cs.warnings, chunkError(i, e, sc).Error()+" (rest of the chunk not indexed)")
	}
	if e.Snapshot() {
		cs.snap = i
	}
	c := formats.Chunk{
		StartTick:     int64(e.StartTick),
		Ticks:         int64(e.Ticks),
		Time:          time.Duration(e.StartTick) * TickDuration,
		Resume:        binary.AppendUvarint([]byte{e.Flags}, uint64(cs.snap)),
		Precompressed: true,
	}
	if err := w.Chunk(c, comp); err != nil {
		return fmt.Errorf("hcrp: chunk %d: %w", i, err)
	}
	return nil
}

// newMetadata fills what the preamble says and returns a collector for the
// events found in chunks.
func newMetadata(h *Header, metaRaw []byte) (*formats.Metadata, *collector) {
	md := &formats.Metadata{
		Session:  h.WorldID.String(),
		Start:    h.Start(),
		TickRate: TickRate,
		Ticks:    int64(h.Ticks),
		Duration: time.Duration(h.Ticks) * TickDuration,
		Attrs: map[string]string{
			"format_version": strconv.Itoa(int(h.Version)),
			"data_version":   strconv.Itoa(int(h.DataVersion)),
			"world_version":  hex.EncodeToString(h.WorldVersion),
			"chunks":         strconv.Itoa(int(h.Chunks)),
		},
	}
	if h.Flags != 0 {
		md.Attrs["header_flags"] = strconv.Itoa(int(h.Flags))
	}
	col := &collector{players: map[int32]formats.Player{}, seen: map[int32]bool{}}
	m, err := DecodeMeta(metaRaw)
	if err != nil {
		md.Warnings = append(md.Warnings, Name+": "+err.Error())
	}
	if m == nil {
		return md, col
	}
	md.Map, md.Server = m.Map, m.Server
	byUUID := map[string]string{}
	for _, p := range m.Players {
		pl := formats.Player{Name: p.Name, ID: p.UUID}
		md.Players = append(md.Players, pl)
		col.players[p.Entity] = pl
		byUUID[p.UUID] = p.Name
	}
	seenFlag := map[string]bool{}
	for _, f := range m.Anticheat {
		if !seenFlag[f.Type] {
			seenFlag[f.Type] = true
			md.Flags = append(md.Flags, f.Type)
		}
		text := f.Type
		if f.Detail != "" {
			text += ": " + f.Detail
		}
		col.meta = append(col.meta, formats.Event{Tick: int64(f.Tick), Time: time.Duration(f.Tick) * TickDuration,
			Kind: formats.EventFlag, Player: byUUID[f.Player], PlayerID: f.Player, Text: text})
	}
	for _, c := range m.Chat {
		col.meta = append(col.meta, formats.Event{Tick: int64(c.Tick), Time: time.Duration(c.Tick) * TickDuration,
			Kind: formats.EventChat, Player: byUUID[c.Player], PlayerID: c.Player, Text: c.Text})
	}
	known := map[string]bool{"map": true, "server": true, "players": true, "anticheat": true, "chat": true}
	for _, e := range rootEntries(metaRaw) {
		if v, ok := e.scalar(metaRaw); ok && !known[e.Name] {
			md.Attrs["meta."+e.Name] = v
		}
	}
	return md, col
}

// maxIndexedEvents bounds the events taken from chunks where Split holds
// them in memory (its Writer is not a formats.EventWriter), so a file of
// millions of tiny events cannot make Split's metadata huge. The archive's
// Writer takes every event as it comes, and a live recording
// (SplitDirTail) keeps every event: there nothing is left out.
const maxIndexedEvents = 100_000

// collector turns chunk events into searchable metadata events. With a
// sink, every event goes to it as it is found, in tick order, the
// preamble's (anticheat flags, chat: bounded by the preamble's size)
// merged in before the first chunk event past their tick; without one,
// events are collected in memory up to maxIndexedEvents.
type collector struct {
	players map[int32]formats.Player // by entity id
	seen    map[int32]bool           // player entities spawned
	meta    []formats.Event          // the preamble's events
	sink    formats.EventWriter
	keepAll bool // no maxIndexedEvents: a live recording's (SplitDirTail)
	sorted  bool // meta is in tick order and sent up to sent
	sent    int
	err     error // sink's first error
	events  []formats.Event
	n       int // events taken from chunks
	dropped int // events past maxIndexedEvents
}

// flush hands the sink the preamble's events up to tick.
func (c *collector) flush(tick int64) {
	c.sortMeta()
	for c.sent < len(c.meta) && c.meta[c.sent].Tick <= tick && c.err == nil {
		c.err = c.sink.Event(c.meta[c.sent])
		c.sent++
	}
}

// skipMeta marks the preamble's events before tick as sent (by an
// earlier grow of a live recording).
func (c *collector) skipMeta(tick int64) {
	c.sortMeta()
	for c.sent < len(c.meta) && c.meta[c.sent].Tick < tick {
		c.sent++
	}
}

// sortMeta puts the preamble's events in tick order once.
func (c *collector) sortMeta() {
	if !c.sorted {
		sort.SliceStable(c.meta, func(i, j int) bool { return c.meta[i].Tick < c.meta[j].Tick })
		c.sorted = true
	}
}

// send hands e to the sink after the preamble's events up to its tick.
func (c *collector) send(e formats.Event) {
	c.flush(e.Tick)
	if c.err == nil {
		c.err = c.sink.Event(e)
	}
}

func (c *collector) event(tick int64, e *Event) {
	switch e.Type {
	case SpawnEntity, DestroyEntity, RunStart, CheckpointReached, CheckpointReset, RunEnd:
	default:
		return
	}
	if c.sink == nil && !c.keepAll && c.n >= maxIndexedEvents {
		c.dropped++
		return
	}
	ev := formats.Event{Tick: tick, Time: time.Duration(tick) * TickDuration}
	runner := c.players[0]
	switch e.Type {
	case SpawnEntity, DestroyEntity:
		p, ok := c.players[e.Entity]
		if !ok || (e.Type == SpawnEntity) == c.seen[e.Entity] {
			return
		}
		c.seen[e.Entity] = e.Type == SpawnEntity
		ev.Kind, ev.Player, ev.PlayerID = formats.EventJoin, p.Name, p.ID
		if e.Type == DestroyEntity {
			ev.Kind = formats.EventDrop
		}
	case RunStart:
		ev.Kind, ev.Text = "run_start", "run started"
	case CheckpointReached:
		ev.Kind, ev.Text = "checkpoint", e.Checkpoint+" at "+runTime(e.RunTime)
	case CheckpointReset:
		ev.Kind, ev.Text = "checkpoint_reset", e.Reset.String()+" at "+runTime(e.RunTime)
	case RunEnd:
		ev.Kind, ev.Text = "run_end", e.End.String()+" at "+runTime(e.RunTime)
		if e.End == EndFinish {
			ev.Kind = formats.EventFinish
		}
	default:
		return
	}
	if ev.Player == "" && e.Type >= RunStart {
		ev.Player, ev.PlayerID = runner.Name, runner.ID
	}
	c.n++
	if c.sink != nil {
		c.send(ev)
		return
	}
	c.events = append(c.events, ev)
}

// finish puts the events into md (or the rest of the preamble's into the
// sink) and returns the sink's first error.
func (c *collector) finish(md *formats.Metadata) error {
	if c.sink != nil {
		c.flush(math.MaxInt64)
		if c.err != nil {
			return fmt.Errorf("hcrp: events: %w", c.err)
		}
		return nil
	}
	if c.dropped > 0 {
		md.Warnings = append(md.Warnings, fmt.Sprintf("%s: %d run and join events past the first %d were not indexed", Name, c.dropped, maxIndexedEvents))
	}
	events := append(c.meta, c.events...)
	sort.SliceStable(events, func(i, j int) bool { return events[i].Tick < events[j].Tick })
	md.Events = events
	return nil
}

// runTime formats a run time in milliseconds as m:ss.mmm.
func runTime(ms int64) string {
	if ms < 0 {
		return strconv.FormatInt(ms, 10) + "ms"
	}
	return fmt.Sprintf("%d:%02d.%03d", ms/60000, ms/1000%60, ms%1000)
}

// sourceReader builds a Reader over an archived recording.
func sourceReader(src formats.Source) (*Reader, error) {
	h, meta, index, err := parsePreamble(src.Header(), false)
	if err != nil {
		return nil, err
	}
	if n := len(src.Chunks()); n != len(index) {
		return nil, fmt.Errorf("hcrp: archive holds %d chunks, the index %d", n, len(index))
	}
	rd, err := newReader(h, meta, index)
	if err != nil {
		return nil, err
	}
	rd.read = func(ctx context.Context, i int, _ []byte) ([]byte, error) {
		b, _, err := src.ReadChunk(ctx, i)
		return b, err
	}
	return rd, nil
}

// withReader opens src and, when r holds ticks of the recording, calls fn
// with the reader and r clamped to them.
func withReader(src formats.Source, r formats.Range, fn func(rd *Reader, r formats.Range) error) error {
	rd, err := sourceReader(src)
	if err != nil {
		return err
	}
	defer rd.Close()
	if r = r.Clamp(rd.Ticks() - 1); r.Empty() {
		return nil
	}
	return fn(rd, r)
}

// Frames implements formats.Codec. Decoding starts at the nearest snapshot
// chunk at or before the one holding from. When that is earlier than from,
// the first frame is a "state" frame at from with every entity's position
// rebuilt from the snapshot. Events follow as frames named after the event
// type (Data = Event.Fields()), interleaved with "anticheat_flag" and "chat"
// frames from the metadata. A chunk whose events stop decoding yields one
// "raw" frame with the rest of its bytes, and decoding goes on with the
// next chunk.
func (Codec) Frames(ctx context.Context, src formats.Source, r formats.Range, emit func(formats.Frame) error) error {
	return withReader(src, r, func(rd *Reader, r formats.Range) error {
		from := r.From
		var extra []formats.Frame
		for _, e := range rootEntries(rd.MetaRaw) {
			if e.Name == "anticheat" || e.Name == "chat" {
				extra = metaFrames(rd.Meta(), r)
				break
			}
		}
		flush := func(tick int64) error {
			for len(extra) > 0 && extra[0].Tick <= tick {
				if err := emit(extra[0]); err != nil {
					return err
				}
				extra = extra[1:]
			}
			return nil
		}
		first := findChunk(rd.Index, from)
		start := snapshotBefore(rd.Index, first)
		st := NewState()
		applied := false
		var sc scanner
		for i := start; i < len(rd.Index) && !r.Past(int64(rd.Index[i].StartTick)); i++ {
			if err := ctx.Err(); err != nil {
				return err
			}
			e := &rd.Index[i]
			raw, err := rd.Chunk(ctx, i)
			if err != nil {
				return err
			}
			sc.reset(raw, e)
			for sc.next() {
				if sc.tick < from {
					st.Apply(&sc.Event)
					applied = true
					continue
				}
				if r.Past(sc.tick) {
					break
				}
				if applied {
					applied = false
					if err := emit(formats.Frame{Tick: from, Type: "state", Data: stateFields(st)}); err != nil {
						return err
					}
				}
				if err := flush(sc.tick); err != nil {
					return err
				}
				if err := emit(formats.Frame{Tick: sc.tick, Type: sc.Event.Type.String(), Data: sc.Event.Fields()}); err != nil {
					return err
				}
			}
			if sc.err != nil && !r.Past(sc.tick) {
				err := chunkError(i, e, &sc)
				if err := emit(formats.Frame{Tick: max(sc.tick, from), Type: "raw", Data: map[string]any{
					"chunk": i, "offset": sc.start, "error": err.Error(), "bytes": append([]byte(nil), raw[sc.start:]...),
				}}); err != nil {
					return err
				}
			}
		}
		if applied {
			if err := emit(formats.Frame{Tick: from, Type: "state", Data: stateFields(st)}); err != nil {
				return err
			}
		}
		return flush(r.To)
	})
}

func stateFields(st *State) map[string]any {
	ents := make([]map[string]any, 0, len(st.Entities))
	ids := make([]int32, 0, len(st.Entities))
	for id := range st.Entities {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		en := st.Entities[id]
		ents = append(ents, map[string]any{"entity": id, "type": en.Type,
			"x": jf(en.Pos.X), "y": jf(en.Pos.Y), "z": jf(en.Pos.Z), "yaw": jf(float64(en.Pos.Yaw)), "pitch": jf(float64(en.Pos.Pitch))})
	}
	return map[string]any{"entities": ents, "blocks": len(st.Blocks)}
}

// metaFrames returns the metadata's flags and chat lines in r as frames, in
// tick order.
func metaFrames(m *Meta, r formats.Range) []formats.Frame {
	var out []formats.Frame
	for _, f := range m.Anticheat {
		if t := int64(f.Tick); r.Contains(t) {
			out = append(out, formats.Frame{Tick: t, Type: "anticheat_flag",
				Data: map[string]any{"type": f.Type, "player": f.Player, "detail": f.Detail}})
		}
	}
	for _, c := range m.Chat {
		if t := int64(c.Tick); r.Contains(t) {
			out = append(out, formats.Frame{Tick: t, Type: "chat", Data: map[string]any{"player": c.Player, "text": c.Text}})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Tick < out[j].Tick })
	return out
}

// Clip implements formats.Codec: a compacted file of the chunks from the
// nearest snapshot chunk at or before from through the chunk holding to.
// Chunk bytes are copied as they are; the index is renumbered from tick 0
// (the reference requires it), the header timestamp moves to the first
// kept tick, the metadata's flags and chat are cut to the clip and
// renumbered, and "source_start_tick" records the original first tick.
func (Codec) Clip(ctx context.Context, src formats.Source, r formats.Range, w io.Writer) error {
	rd, err := sourceReader(src)
	if err != nil {
		return err
	}
	defer rd.Close()
	if r.From >= rd.Ticks() {
		return fmt.Errorf("%s: clip from tick %d: the recording has %d ticks", Name, r.From, rd.Ticks())
	}
	c := r.Clamp(rd.Ticks() - 1)
	if c.Empty() {
		return fmt.Errorf("%s: clip range %v is empty", Name, r)
	}
	first := snapshotBefore(rd.Index, findChunk(rd.Index, c.From))
	last := findChunk(rd.Index, c.To)
	entries := rd.Index[first : last+1]
	return writeSubset(w, *rd.Header, rd.MetaRaw, entries, func(i int) ([]byte, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return rd.RawChunk(ctx, first+i)
	})
}

// Resume decodes a chunk's resume state: its index flags and the number of
// the nearest snapshot chunk at or before it.
func Resume(b []byte) (flags uint8, snapshot int, err error) {
	if len(b) < 2 {
		return 0, 0, errors.New("hcrp: resume state too short")
	}
	v, n := binary.Uvarint(b[1:])
	if n <= 0 || v > 1<<31 {
		return 0, 0, errors.New("hcrp: bad resume state")
	}
	return b[0], int(v), nil
}

// recordingID derives a stable id for a live recording directory from its
// world id and timestamp, when the directory is not named by a UUID.
func recordingID(h *Header) uuid.UUID {
	return uuid.NewSHA1(h.WorldID, strconv.AppendInt([]byte("hcrp-recording:"), h.Timestamp, 10))
}
