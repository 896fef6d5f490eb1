// This file reads Exhibit's .milk format (the Node.js compressor.js of
// Exhibitmark/chode @ 07585a4), the ancestor of .butter: a JSON header
// ending in NUL, then 0xFEFD group headers (scores, clock, stats) each
// followed by 0xFDFE samples (disc, state, every player's pose). It has no
// timestamps, ids or orientations of its own beyond those vectors.

package butter

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/replayarchive/replay/formats"
)

// MilkName is the .milk format's name as stored in manifests and used in
// errors.
const MilkName = "milk"

// Record markers of .milk: each group header and each sample starts with
// one.
const (
	milkGroupMarker  = "\xFE\xFD"
	milkSampleMarker = "\xFD\xFE"
)

// maxMilkHeader bounds the JSON header.
const maxMilkHeader = 64 << 10

// maxMilkRate bounds a header's rate: the session API answers at most a
// few hundred times a second.
const maxMilkRate = 1000

// MilkHeader is the JSON header of a .milk file.
type MilkHeader struct {
	Author  string     `json:"author"`
	Players [][]string `json:"players"`
	Numbers [][]int    `json:"numbers"`
	// Rate is the samples per second. compressor.js does not write it
	// (each group holds one second of samples, so a file's first group
	// gives the rate); clips write it, as their first group may be cut.
	Rate float64 `json:"rate,omitempty"`
}

func (h *MilkHeader) teamSize(i int) int {
	if i < len(h.Players) {
		return len(h.Players[i])
	}
	return 0
}

func (h *MilkHeader) numPlayers() int { return h.teamSize(0) + h.teamSize(1) }

func (h *MilkHeader) groupSize() int  { return 6 + 13*(2+h.numPlayers()) }
func (h *MilkHeader) sampleSize() int { return 9 + 42*h.numPlayers() + 3 }

// MilkCodec is the .milk codec.
type MilkCodec struct{}

// NewMilk returns the .milk codec.
func NewMilk() *MilkCodec { return &MilkCodec{} }

var (
	_ formats.Codec    = (*MilkCodec)(nil)
	_ formats.Exporter = (*MilkCodec)(nil)
)

// Name implements formats.Codec.
func (*MilkCodec) Name() string { return MilkName }

// Detect implements formats.Codec: a JSON header naming players, a NUL,
// then a group header.
func (*MilkCodec) Detect(head []byte) bool {
	if len(head) < 2 || head[0] != '{' {
		return false
	}
	i := bytes.IndexByte(head, 0)
	if i < 0 {
		return len(head) < formats.DetectSize && bytes.Contains(head, []byte(`"players"`))
	}
	var h MilkHeader
	if json.Unmarshal(head[:i], &h) != nil || h.numPlayers() == 0 {
		return false
	}
	return len(head) < i+3 || string(head[i+1:i+3]) == milkGroupMarker
}

func parseMilkHeader(b []byte) (*MilkHeader, error) {
	var h MilkHeader
	if err := json.Unmarshal(b, &h); err != nil {
		return nil, &formats.Error{Format: MilkName, Offset: 0, What: "expected a JSON header", Err: err}
	}
	if h.numPlayers() == 0 || h.numPlayers() > 8 || len(h.Players) > 2 {
		return nil, formats.Errorf(MilkName, 0, "expected 1 to 8 players in two teams, got %d in %d", h.numPlayers(), len(h.Players))
	}
	if h.Rate < 0 || h.Rate > maxMilkRate {
		return nil, formats.Errorf(MilkName, 0, "expected a rate of 0 to %d samples per second, got %v", maxMilkRate, h.Rate)
	}
	return &h, nil
}

// readMilkHeader reads the JSON header and its NUL.
func readMilkHeader(r io.Reader) (*MilkHeader, []byte, error) {
	var buf []byte
	one := make([]byte, 4096)
	for {
		if i := bytes.IndexByte(buf, 0); i >= 0 {
			h, err := parseMilkHeader(buf[:i])
			return h, buf, err
		}
		if len(buf) > maxMilkHeader {
			return nil, nil, formats.Errorf(MilkName, int64(len(buf)), "expected the header's NUL within %d bytes", maxMilkHeader)
		}
		n, err := r.Read(one)
		buf = append(buf, one[:n]...)
		if err == io.EOF && n == 0 {
			return nil, nil, formats.Errorf(MilkName, int64(len(buf)), "expected the header's NUL, got end of file")
		}
		if err != nil && err != io.EOF {
			return nil, nil, err
		}
	}
}

// milkDecoder turns groups and samples into frames.
type milkDecoder struct {
	h     *MilkHeader
	group []byte // the current group header, nil before the first
}

func (d *milkDecoder) frame(sample []byte) *Frame {
	h := d.h
	c := &cursor{b: d.group}
	c.pos = 2
	f := &Frame{MapName: "mpl_arena_a", MatchType: "Echo_Arena", ClientName: h.Author}
	f.BluePoints = float32(c.u8(""))
	f.OrangePoints = float32(c.u8(""))
	f.GameClock = c.half("")
	f.GameClockDisplay = clockDisplay(f.GameClock)
	teamStats := func() *Stats {
		s := &Stats{Points: int(c.u8(""))}
		s.PossessionTime = c.half("")
		s.Interceptions, s.Blocks, s.Steals, s.Catches = int(c.u8("")), int(c.u8("")), int(c.u8("")), int(c.u8(""))
		s.Passes, s.Saves, s.Goals, s.Stuns = int(c.u8("")), int(c.u8("")), int(c.u8("")), int(c.u8(""))
		s.Assists, s.ShotsTaken = int(c.u8("")), int(c.u8(""))
		return s
	}
	playerStats := func() *Stats {
		s := &Stats{PossessionTime: c.half("")}
		s.Points, s.Saves, s.Goals, s.Stuns = int(c.u8("")), int(c.u8("")), int(c.u8("")), int(c.u8(""))
		s.Passes, s.Catches, s.Steals, s.Blocks = int(c.u8("")), int(c.u8("")), int(c.u8("")), int(c.u8(""))
		s.Interceptions, s.Assists, s.ShotsTaken = int(c.u8("")), int(c.u8("")), int(c.u8(""))
		return s
	}
	f.Teams = []*Team{{Team: "BLUE TEAM"}, {Team: "ORANGE TEAM"}, {Team: "SPECTATORS"}}
	for ti := 0; ti < 2; ti++ {
		f.Teams[ti].Stats = teamStats()
		for pi := 0; pi < h.teamSize(ti); pi++ {
			// .milk has no user ids. Each player gets a synthetic one,
			// -(1 + its place in the header), so conversions keep the
			// players apart (.butter's player table is keyed by userid).
			p := &Player{Name: h.Players[ti][pi], Stats: playerStats(), UserID: -int64(1 + ti*h.teamSize(0) + pi)}
			if ti < len(h.Numbers) && pi < len(h.Numbers[ti]) {
				p.Number = h.Numbers[ti][pi]
			}
			f.Teams[ti].Players = append(f.Teams[ti].Players, p)
		}
	}
	s := &cursor{b: sample}
	s.pos = 2
	f.Disc = &Disc{Position: s.vec("").list(), Forward: []float32{0, 0, 1}, Left: []float32{1, 0, 0}, Up: []float32{0, 1, 0}, Velocity: []float32{0, 0, 0}}
	// compressor.js's game state codes are gameStatuses from pre_match on.
	if st := int(s.u8("")); st+milkStatusBase < len(gameStatuses) {
		f.GameStatus = strPtr(gameStatuses[st+milkStatusBase])
	} else {
		f.GameStatus = strPtr(strconv.Itoa(st))
	}
	var all []*Player
	for ti := 0; ti < 2; ti++ {
		all = append(all, f.Teams[ti].Players...)
	}
	for _, p := range all {
		var v [7]vec3
		for k := range v {
			v[k] = s.vec("")
		}
		head := &Transform{Position: v[0].list(), Left: v[3].list(), Up: v[4].list(), Forward: v[5].list()}
		p.Head = head
		p.RHand = &Transform{Pos: v[1].list(), Left: head.Left, Up: head.Up, Forward: head.Forward}
		p.LHand = &Transform{Pos: v[2].list(), Left: head.Left, Up: head.Up, Forward: head.Forward}
		p.Velocity = v[6].list()
	}
	flags := s.bytes(3, "")
	for i, p := range all {
		slot := i
		if i >= h.teamSize(0) {
			slot = 4 + i - h.teamSize(0)
		}
		bit := uint(7 - slot)
		p.Possession, p.Blocking, p.Stunned = Bool(bits(flags[0], bit)), Bool(bits(flags[1], bit)), Bool(bits(flags[2], bit))
	}
	return f
}

// milkRecords walks the records after the header, calling each with the
// record's marker, bytes and file offset.
func milkRecords(ctx context.Context, h *MilkHeader, r io.Reader, off int64, each func(group bool, rec []byte, off int64) error) error {
	gs, ss := h.groupSize(), h.sampleSize()
	buf := make([]byte, max(gs, ss))
	for n := 0; ; n++ {
		if n%256 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		m, err := io.ReadFull(r, buf[:2])
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return formats.Errorf(MilkName, off+int64(m), "expected a record marker, got end of file")
		}
		var size int
		switch {
		case string(buf[:2]) == milkGroupMarker:
			size = gs
		case string(buf[:2]) == milkSampleMarker:
			size = ss
		default:
			return formats.Errorf(MilkName, off, "expected record marker FE FD or FD FE, got %02X %02X", buf[0], buf[1])
		}
		m, err = io.ReadFull(r, buf[2:size])
		if err != nil {
			return formats.Errorf(MilkName, off+2+int64(m), "expected %d more bytes of a record, got end of file", size-2-m)
		}
		if err := each(size == gs, buf[:size], off); err != nil {
			return err
		}
		off += int64(size)
	}
}

// Split implements formats.Codec: the header is the JSON and its NUL;
// each chunk is one group header with its samples (tick = sample index).
// .milk has no timestamps, but compressor.js puts one second of samples
// in each group (recorder.js's frame rate), so the samples of a full group
// are the tick rate: the header's rate when it has one (a clip), else the
// first group's samples once a second group shows that it was full. Chunk
// times and the duration follow from it; a file of one group and no rate
// has neither.
func (c *MilkCodec) Split(ctx context.Context, r io.Reader, w formats.Writer) (*formats.Metadata, error) {
	h, buf, err := readMilkHeader(r)
	if err != nil {
		return nil, err
	}
	hl := bytes.IndexByte(buf, 0) + 1
	if err := w.Header(buf[:hl]); err != nil {
		return nil, err
	}
	meta := &formats.Metadata{Map: "mpl_arena_a", Attrs: map[string]string{"author": h.Author, "format": "milk (compressor.js)"}}
	for ti := 0; ti < len(h.Players); ti++ {
		for _, n := range h.Players[ti] {
			meta.Players = append(meta.Players, formats.Player{Name: n, Team: teamNames[ti]})
		}
	}
	var chunk []byte
	var start, tick int64
	rate := h.Rate
	flush := func() error {
		if len(chunk) == 0 {
			return nil
		}
		err := w.Chunk(formats.Chunk{StartTick: start, Ticks: tick - start, Time: milkTime(start, rate)}, chunk)
		chunk, start = chunk[:0], tick
		return err
	}
	err = milkRecords(ctx, h, io.MultiReader(bytes.NewReader(buf[hl:]), r), int64(hl), func(group bool, rec []byte, off int64) error {
		if group {
			// a group starts a chunk, unless the chunk has no sample yet
			if tick > start {
				if rate == 0 {
					rate = float64(tick - start) // the first group, now known to be whole
				}
				if err := flush(); err != nil {
					return err
				}
			}
		} else {
			if len(chunk) == 0 {
				return formats.Errorf(MilkName, off, "expected a group header before the first sample")
			}
			tick++
		}
		chunk = append(chunk, rec...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := flush(); err != nil {
		return nil, err
	}
	meta.Ticks = tick
	if rate > 0 {
		meta.TickRate = rate
		meta.Duration = milkTime(max(tick-1, 0), rate)
	}
	return meta, nil
}

// milkTime is the offset of sample tick at rate samples per second, in
// whole milliseconds (what a conversion's timestamps hold); 0 when the
// rate is unknown.
func milkTime(tick int64, rate float64) time.Duration {
	if rate <= 0 {
		return 0
	}
	return time.Duration(float64(tick) * 1000 / rate * float64(time.Millisecond)).Round(time.Millisecond)
}

// milkRate is the samples per second of an archived .milk recording: the
// header's rate, else the first chunk's samples when a later chunk shows
// that the first group was whole; 0 when neither says.
func milkRate(h *MilkHeader, src formats.Source) float64 {
	if h.Rate > 0 {
		return h.Rate
	}
	if cs := src.Chunks(); len(cs) > 1 && cs[0].Ticks > 0 {
		return float64(cs[0].Ticks)
	}
	return 0
}

// milkClipHeader is the header of a clip: the source's JSON with its rate
// added (a clip's first group may be cut, so its samples no longer say
// the rate) and the source's closing byte.
func milkClipHeader(src formats.Source, h *MilkHeader) ([]byte, error) {
	hb := src.Header()
	rate := milkRate(h, src)
	if h.Rate > 0 || rate == 0 {
		return hb, nil
	}
	js := bytes.TrimRight(hb[:len(hb)-1], " \t\r\n")
	if len(js) == 0 || js[len(js)-1] != '}' {
		return nil, formats.Errorf(MilkName, int64(len(js)), "expected the header's JSON to end in }")
	}
	out := append([]byte{}, js[:len(js)-1]...)
	out = append(out, `,"rate":`...)
	out = strconv.AppendFloat(out, rate, 'g', -1, 64)
	out = append(out, '}')
	return append(out, hb[len(hb)-1]), nil
}

// milkSourceHeader parses the header piece of an archived .milk recording
// (the JSON header and its NUL).
func milkSourceHeader(src formats.Source) (*MilkHeader, error) {
	hb := src.Header()
	if len(hb) == 0 {
		return nil, formats.Errorf(MilkName, 0, "missing header")
	}
	return parseMilkHeader(hb[:len(hb)-1])
}

// milkFrames decodes the samples of r.
func (c *MilkCodec) milkFrames(ctx context.Context, src formats.Source, r formats.Range, emit func(tick int64, f *Frame) error) error {
	h, err := milkSourceHeader(src)
	if err != nil {
		return err
	}
	return formats.EachChunk(ctx, src, r, func(_ int, ch formats.Chunk, native, _ []byte) error {
		d := &milkDecoder{h: h}
		tick := ch.StartTick
		return milkRecords(ctx, h, bytes.NewReader(native), ch.Offset, func(group bool, rec []byte, off int64) error {
			if group {
				d.group = bytes.Clone(rec)
				return nil
			}
			if d.group == nil {
				return formats.Errorf(MilkName, off, "expected a group header before the first sample")
			}
			t := tick
			tick++
			if r.Past(t) {
				return formats.ErrStop
			}
			if !r.Contains(t) {
				return nil
			}
			return emit(t, d.frame(rec))
		})
	})
}

// Frames implements formats.Codec: one "frame" per sample, as session API
// JSON with what .milk carries.
func (c *MilkCodec) Frames(ctx context.Context, src formats.Source, r formats.Range, emit func(formats.Frame) error) error {
	return c.milkFrames(ctx, src, r, func(tick int64, f *Frame) error {
		return emit(formats.Frame{Tick: tick, Type: "frame", Data: f})
	})
}

// Clip implements formats.Codec: the header (with the source's rate, see
// milkClipHeader), then for each covered group its header and the samples
// of r.
func (c *MilkCodec) Clip(ctx context.Context, src formats.Source, r formats.Range, w io.Writer) error {
	h, err := milkSourceHeader(src)
	if err != nil {
		return err
	}
	hb, err := milkClipHeader(src, h)
	if err != nil {
		return err
	}
	if _, err := w.Write(hb); err != nil {
		return err
	}
	return formats.EachChunk(ctx, src, r, func(_ int, ch formats.Chunk, native, _ []byte) error {
		tick := ch.StartTick
		return milkRecords(ctx, h, bytes.NewReader(native), ch.Offset, func(group bool, rec []byte, _ int64) error {
			if !group {
				t := tick
				tick++
				if !r.Contains(t) {
					return nil
				}
			}
			_, err := w.Write(rec)
			return err
		})
	})
}

// ExportFormats implements formats.Exporter.
func (*MilkCodec) ExportFormats() []string { return []string{Name, EchoReplayName} }

// Export implements formats.Exporter. .milk has no timestamps: frames get
// "start" (RFC 3339, default 1970-01-01T00:00:00Z) plus i/"rate" seconds
// (default the recording's rate, see Split, else 45 Hz, the example
// capture's rate); the other opts are those of the butter and echoreplay
// exports.
func (c *MilkCodec) Export(ctx context.Context, src formats.Source, format string, r formats.Range, opts map[string]string, w io.Writer) error {
	h, err := milkSourceHeader(src)
	if err != nil {
		return err
	}
	start := time.Unix(0, 0).UTC()
	rate := milkRate(h, src)
	if rate == 0 {
		rate = 45
	}
	rest := map[string]string{}
	for k, v := range opts {
		switch k {
		case "start":
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				return fmt.Errorf("%s: start %q: %w", MilkName, v, err)
			}
			start = t.UTC()
		case "rate":
			hz, err := strconv.ParseFloat(v, 64)
			if err != nil || hz <= 0 {
				return fmt.Errorf("%s: rate %q: want a positive number of frames per second", MilkName, v)
			}
			rate = hz
		default:
			rest[k] = v
		}
	}
	return exportFrames(format, rest, w, func(emit func(*Frame) error) error {
		return c.milkFrames(ctx, src, r, func(tick int64, f *Frame) error {
			f.RecordedTime = start.Add(time.Duration(float64(tick) * 1000 / rate * float64(time.Millisecond)).Round(time.Millisecond))
			f.SessionIP = "0.0.0.0"
			return emit(f)
		})
	})
}
