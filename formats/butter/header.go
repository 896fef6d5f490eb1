// This file parses the .butter file header and chunk table, and
// decompresses chunks with a bound on their size.

package butter

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/klauspost/compress/zstd"
	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/internal/bounded"
)

// Name is the .butter format's name as stored in manifests and used in
// errors. The package's other formats have MilkName and EchoReplayName.
const Name = "butter"

// Frame markers: the two bytes before every frame, as a little-endian
// uint16 (FC FE, FE FE on disk).
const (
	markerKeyframe = 0xFEFC
	markerDelta    = 0xFEFE
)

// gzipMagic starts a gzip-compressed chunk (a zstd one: bounded.IsZstd).
var gzipMagic = []byte{0x1F, 0x8B}

// Bounds on what a header may claim before we allocate for it.
const (
	maxChunks       = 1 << 22            // chunk table entries
	maxChunkSize    = bounded.FileBudget // stored bytes of one chunk
	maxChunkPayload = 64 << 20           // decompressed bytes of one chunk (bomb guard)
)

// HeaderPlayer is one entry of the header's player table.
type HeaderPlayer struct {
	Name   string
	UserID int64
	Number int
	Level  int
}

// FileHeader is a .butter file header and chunk table.
type FileHeader struct {
	Version          int
	KeyframeInterval int
	Compression      Compression
	ClientName       string
	SessionID        string // uppercase, dashed 8-4-4-4-12
	SessionIP        string
	Players          []HeaderPlayer
	TotalRoundCount  int
	BlueRoundScore   int
	OrangeRoundScore int
	PrivateMatch     bool
	MapName          string
	// HeaderLen is the size of the header before the chunk table.
	HeaderLen int64
	// ChunkSizes are the stored (compressed) sizes from the chunk table.
	ChunkSizes []uint32
}

// DataStart is the offset of the first chunk.
func (h *FileHeader) DataStart() int64 { return h.HeaderLen + 4 + 4*int64(len(h.ChunkSizes)) }

// MatchType is the match type the reference derives from the map.
func (h *FileHeader) MatchType() string { return matchType(h.MapName, h.PrivateMatch) }

func matchType(m string, private bool) string {
	switch {
	case m == "mpl_arena_a" && private:
		return "Echo_Arena_Private"
	case m == "mpl_arena_a":
		return "Echo_Arena"
	case isCombatMap(m) && private:
		return "Echo_Combat_Private"
	case isCombatMap(m):
		return "Echo_Combat"
	}
	return "Unknown"
}

// errShort marks a read past the end of the available bytes.
var errShort = errors.New("unexpected end of data")

// cursor reads little-endian values from a byte slice, remembering the
// first short read; base is the offset of b[0] in the file.
type cursor struct {
	b    []byte
	pos  int
	base int64
	err  error
	what string
}

func (c *cursor) fail(what string) {
	if c.err == nil {
		c.err = errShort
		c.what = what
	}
}

func (c *cursor) need(n int, what string) bool {
	if c.err != nil {
		return false
	}
	if n < 0 || len(c.b)-c.pos < n {
		c.fail(what)
		return false
	}
	return true
}

func (c *cursor) u8(what string) byte {
	if !c.need(1, what) {
		return 0
	}
	c.pos++
	return c.b[c.pos-1]
}

func (c *cursor) u16(what string) uint16 {
	if !c.need(2, what) {
		return 0
	}
	c.pos += 2
	return binary.LittleEndian.Uint16(c.b[c.pos-2:])
}

func (c *cursor) u32(what string) uint32 {
	if !c.need(4, what) {
		return 0
	}
	c.pos += 4
	return binary.LittleEndian.Uint32(c.b[c.pos-4:])
}

func (c *cursor) u64(what string) uint64 {
	if !c.need(8, what) {
		return 0
	}
	c.pos += 8
	return binary.LittleEndian.Uint64(c.b[c.pos-8:])
}

func (c *cursor) half(what string) float32 { return fromHalf(c.u16(what)) }

func (c *cursor) bytes(n int, what string) []byte {
	if !c.need(n, what) {
		return nil
	}
	c.pos += n
	return c.b[c.pos-n : c.pos]
}

// cstring is ReadASCIIString: up to 1024 bytes, ending at a NUL.
func (c *cursor) cstring(what string) string {
	var sb strings.Builder
	for i := 0; i < 1024; i++ {
		b := c.u8(what)
		if c.err != nil || b == 0 {
			break
		}
		if b >= 0x80 {
			b = '?'
		}
		sb.WriteByte(b)
	}
	return sb.String()
}

// offset is the file offset of the next byte.
func (c *cursor) offset() int64 { return c.base + int64(c.pos) }

func (c *cursor) error() error {
	if c.err == nil {
		return nil
	}
	return &formats.Error{Format: Name, Offset: c.offset(), What: "expected " + c.what + ", got end of data", Err: c.err}
}

// ParseFileHeader parses the header and chunk table at the start of b.
// When b is too short it returns an error wrapping io.ErrUnexpectedEOF.
func ParseFileHeader(b []byte) (*FileHeader, error) {
	c := &cursor{b: b}
	h := new(FileHeader)
	h.Version = int(c.u8("format version"))
	if c.err == nil && (h.Version < 1 || h.Version > 3) {
		return nil, formats.Errorf(Name, 0, "expected format version 1, 2 or 3, got %d", h.Version)
	}
	h.KeyframeInterval = int(c.u16("keyframe interval"))
	h.Compression = Compression(c.u8("compression byte"))
	if c.err == nil && int(h.Compression) >= len(compressionNames) {
		return nil, formats.Errorf(Name, 3, "expected compression 0..6, got %d", h.Compression)
	}
	if c.err == nil && h.KeyframeInterval == 0 {
		return nil, formats.Errorf(Name, 1, "expected a keyframe interval above 0")
	}
	h.ClientName = c.cstring("client name")
	sid := c.bytes(16, "session id")
	if sid != nil {
		h.SessionID = formatSessionID(sid)
	}
	ip := c.bytes(4, "session ip")
	if ip != nil {
		h.SessionIP = fmt.Sprintf("%d.%d.%d.%d", ip[0], ip[1], ip[2], ip[3])
	}
	n := int(c.u8("player count"))
	if c.err == nil {
		h.Players = make([]HeaderPlayer, n)
	}
	for i := 0; i < n && c.err == nil; i++ {
		h.Players[i].Name = c.cstring("player name")
	}
	for i := 0; i < n && c.err == nil; i++ {
		h.Players[i].UserID = int64(c.u64("player userid"))
	}
	for i := 0; i < n && c.err == nil; i++ {
		h.Players[i].Number = int(c.u8("player number"))
	}
	for i := 0; i < n && c.err == nil; i++ {
		h.Players[i].Level = int(c.u8("player level"))
	}
	h.TotalRoundCount = int(c.u8("total round count"))
	rs := c.u8("round scores")
	h.BlueRoundScore, h.OrangeRoundScore = int(rs&0xF), int(rs>>4&0xF)
	mb := c.u8("map byte")
	h.PrivateMatch = mb&1 == 1
	if mi := int(mb >> 1); mi < len(mapNames) {
		h.MapName = mapNames[mi]
	} else {
		h.MapName = fmt.Sprint(mi)
	}
	h.HeaderLen = int64(c.pos)
	count := c.u32("chunk count")
	if c.err == nil && count > maxChunks {
		return nil, formats.Errorf(Name, h.HeaderLen, "expected a chunk count up to %d, got %d", maxChunks, count)
	}
	if c.err == nil && int64(len(b)-c.pos) < 4*int64(count) {
		c.fail("chunk table")
	}
	if c.err == nil {
		h.ChunkSizes = make([]uint32, count)
		for i := range h.ChunkSizes {
			h.ChunkSizes[i] = c.u32("chunk size")
			if h.ChunkSizes[i] > maxChunkSize {
				return nil, formats.Errorf(Name, c.offset()-4, "expected a chunk size up to %d, got %d", maxChunkSize, h.ChunkSizes[i])
			}
		}
	}
	if c.err != nil {
		e := c.error().(*formats.Error)
		e.Err = io.ErrUnexpectedEOF
		return nil, e
	}
	return h, nil
}

func formatSessionID(b []byte) string {
	const hexd = "0123456789ABCDEF"
	var s []byte
	for i, x := range b {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			s = append(s, '-')
		}
		s = append(s, hexd[x>>4], hexd[x&15])
	}
	return string(s)
}

// decompressChunk returns the payload of a stored chunk, refusing to
// produce more than limit bytes. Memory grows with the bytes actually
// decompressed; a zstd frame's window is also capped by what its
// compressed bytes could possibly produce (bounded.ZstdMaxOutput), so a
// few bytes declaring a 64 MiB window allocate nothing of the kind. A
// truncated gzip or zstd stream returns what could be decompressed
// together with an error wrapping io.ErrUnexpectedEOF.
func decompressChunk(b []byte, c Compression, limit int64) ([]byte, error) {
	switch c {
	case CompressNone:
		return b, nil
	case CompressGzip:
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		zr.Multistream(false)
		return bounded.ReadAll(zr, limit, "gzip chunk")
	default:
		limit = min(limit, max(bounded.ZstdMaxOutput(int64(len(b))), zstd.MinWindowSize))
		d, err := zstd.NewReader(bytes.NewReader(b), zstd.WithDecoderMaxMemory(uint64(limit)), zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(uint64(min(limit, zstd.MaxWindowSize))))
		if err != nil {
			return nil, err
		}
		defer d.Close()
		out, err := bounded.ReadAll(d, limit, "zstd chunk")
		switch {
		case errors.Is(err, bounded.ErrLimit):
			return nil, err
		case errors.Is(err, zstd.ErrDecoderSizeExceeded), errors.Is(err, zstd.ErrWindowSizeExceeded):
			return nil, fmt.Errorf("chunk decompresses to more than %d bytes: %w", limit, err)
		case err != nil && !errors.Is(err, io.ErrUnexpectedEOF):
			// a zstd stream cut short shows up as one of several errors
			err = fmt.Errorf("%w: %v", io.ErrUnexpectedEOF, err)
		}
		return out, err
	}
}
