// This file is the .butter writer: it encodes API frames into keyframe
// chunks exactly as the reference C# writer (ButterReplays 1.3.4) does, so
// an uncompressed file is byte-identical to the reference's and compressed
// files differ only in the compressor's output, not in the chunk payloads.

package butter

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/klauspost/compress/zstd"
)

// Compression is the chunk compression byte of the file header.
type Compression byte

// Chunk compression formats (ButterFile.CompressionFormat).
const (
	CompressNone      Compression = 0
	CompressGzip      Compression = 1
	CompressZstd3     Compression = 2
	CompressZstd7     Compression = 3
	CompressZstd15    Compression = 4
	CompressZstd22    Compression = 5
	CompressZstd7Dict Compression = 6 // no dictionary is ever used; same as zstd 7
)

// Spark's defaults: gzip chunks, a keyframe every 300 frames.
const (
	DefaultKeyframeInterval = 300
	DefaultCompression      = CompressGzip
)

var compressionNames = []string{"none", "gzip", "zstd_3", "zstd_7", "zstd_15", "zstd_22", "zstd_7_dict"}

// String returns the reference's name for c ("none", "gzip", "zstd_3", ...).
func (c Compression) String() string {
	if int(c) < len(compressionNames) {
		return compressionNames[c]
	}
	return "compression(" + strconv.Itoa(int(c)) + ")"
}

// ParseCompression parses a compression name or header byte value.
func ParseCompression(s string) (Compression, error) {
	for i, n := range compressionNames {
		if strings.EqualFold(s, n) {
			return Compression(i), nil
		}
	}
	switch strings.ToLower(s) {
	case "zstd":
		return CompressZstd3, nil
	case "", "default":
		return DefaultCompression, nil
	}
	if n, err := strconv.Atoi(s); err == nil && n >= 0 && n < len(compressionNames) {
		return Compression(n), nil
	}
	return 0, fmt.Errorf("butter: unknown compression %q (want none, gzip, zstd_3, zstd_7, zstd_15, zstd_22)", s)
}

func (c Compression) zstdLevel() zstd.EncoderLevel {
	switch c {
	case CompressZstd3:
		return zstd.SpeedDefault
	case CompressZstd7, CompressZstd7Dict:
		return zstd.SpeedBetterCompression
	}
	return zstd.SpeedBestCompression
}

// WriterOptions are the settings of a new .butter file.
type WriterOptions struct {
	// KeyframeInterval is the number of frames per chunk (0 means 300).
	KeyframeInterval int
	// Compression is the chunk compression.
	Compression Compression
}

// Writer builds a .butter file from frames given in order. Chunks are
// encoded (and compressed) as soon as they are complete; the header, which
// lists every player seen, is written by WriteTo at the end.
type Writer struct {
	opts    WriterOptions
	table   playerTable
	first   *Frame
	n       int
	last    *encFrame
	pending []*encFrame
	free    []*encFrame
	chunks  [][]byte
	payload []byte
	zenc    *zstd.Encoder
	// prevBones is the bones of the last frame of the previous chunk: the
	// reference diffs bones against the previous frame even on keyframes.
	prevBones *Bones
}

// encFrame is one frame being encoded, with the section bytes the next
// frame of its chunk compares against.
type encFrame struct {
	f           *Frame
	index       int
	prevInChunk *encFrame
	input       byte
	pause       []byte
	lastScore   []byte
	lastThrow   []byte
	vr          []byte
	disc        []byte
	combat      []byte
	rules       []byte
	poses       []poseEntry
	// backing arrays of the section slices, reused with the encFrame
	buf struct {
		pause     [6]byte
		lastScore [7]byte
		lastThrow [26]byte
		vr        [10]byte
		disc      [16]byte
		combat    [7]byte
		rules     []byte
	}
}

// poseEntry is one player's four pose byte strings in a frame.
type poseEntry struct {
	userid int64
	b      [4][10]byte
}

// posesOf returns the pose bytes stored for userid, or nil.
func (e *encFrame) posesOf(userid int64) *[4][10]byte {
	for i := range e.poses {
		if e.poses[i].userid == userid {
			return &e.poses[i].b
		}
	}
	return nil
}

// NewWriter returns a Writer with opts (zero values mean Spark's defaults
// for the keyframe interval; compression 0 is "none").
func NewWriter(opts WriterOptions) (*Writer, error) {
	if opts.KeyframeInterval == 0 {
		opts.KeyframeInterval = DefaultKeyframeInterval
	}
	if opts.KeyframeInterval < 1 || opts.KeyframeInterval > math.MaxUint16 {
		return nil, fmt.Errorf("butter: keyframe interval %d out of range 1..65535", opts.KeyframeInterval)
	}
	if int(opts.Compression) >= len(compressionNames) {
		return nil, fmt.Errorf("butter: unknown compression %d", opts.Compression)
	}
	return &Writer{opts: opts}, nil
}

// Add appends one frame. Frames must be given in recording order.
func (w *Writer) Add(f *Frame) error {
	if w.first == nil {
		w.first = f
	}
	w.table.consider(f)
	key := w.n%w.opts.KeyframeInterval == 0 || w.last == nil
	if key && len(w.pending) > 0 {
		if err := w.flushChunk(); err != nil {
			return err
		}
	}
	var ef *encFrame
	if n := len(w.free); n > 0 {
		ef, w.free = w.free[n-1], w.free[:n-1]
	} else {
		ef = &encFrame{poses: make([]poseEntry, 0, 16)}
	}
	ef.f, ef.index, ef.prevInChunk = f, w.n, nil
	if !key {
		ef.prevInChunk = w.last
	}
	w.pending = append(w.pending, ef)
	w.last = ef
	w.n++
	return nil
}

func (w *Writer) flushChunk() error {
	w.payload = w.payload[:0]
	var lastBones *Bones
	if w.pending[0].index > 0 {
		lastBones = w.prevBones
	}
	for _, ef := range w.pending {
		var err error
		w.payload, err = w.encodeFrame(w.payload, ef, lastBones)
		if err != nil {
			return fmt.Errorf("butter: frame %d: %w", ef.index, err)
		}
		lastBones = ef.f.Bones
		ef.prevInChunk = nil
	}
	w.prevBones = lastBones
	c, err := w.compress(w.payload)
	if err != nil {
		return err
	}
	w.chunks = append(w.chunks, c)
	// The next chunk starts on a keyframe and needs none of these frames:
	// keep them for reuse.
	for _, ef := range w.pending {
		ef.f = nil
		w.free = append(w.free, ef)
	}
	w.pending = w.pending[:0]
	return nil
}

func (w *Writer) compress(p []byte) ([]byte, error) {
	if w.opts.Compression >= CompressZstd3 && w.zenc == nil {
		var err error
		w.zenc, err = newZstdEncoder(w.opts.Compression)
		if err != nil {
			return nil, err
		}
	}
	return compressPayload(p, w.opts.Compression, w.zenc)
}

func newZstdEncoder(c Compression) (*zstd.Encoder, error) {
	return zstd.NewWriter(nil, zstd.WithEncoderLevel(c.zstdLevel()), zstd.WithEncoderConcurrency(1))
}

// compressPayload compresses one chunk payload; zenc may be nil.
func compressPayload(p []byte, comp Compression, zenc *zstd.Encoder) ([]byte, error) {
	switch comp {
	case CompressNone:
		return bytes.Clone(p), nil
	case CompressGzip:
		var b bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&b, gzip.DefaultCompression)
		zw.Write(p)
		if err := zw.Close(); err != nil {
			return nil, err
		}
		return b.Bytes(), nil
	default:
		if zenc == nil {
			var err error
			if zenc, err = newZstdEncoder(comp); err != nil {
				return nil, err
			}
			defer zenc.Close()
		}
		return zenc.EncodeAll(p, nil), nil
	}
}

// WriteTo finishes the file (encoding the last chunk) and writes it to out.
// The Writer must not be used afterwards.
func (w *Writer) WriteTo(out io.Writer) (int64, error) {
	if w.n == 0 {
		return 0, errors.New("butter: no frames to write")
	}
	if len(w.pending) > 0 {
		if err := w.flushChunk(); err != nil {
			return 0, err
		}
	}
	hdr := w.header()
	hdr = binary.LittleEndian.AppendUint32(hdr, uint32(len(w.chunks)))
	for _, c := range w.chunks {
		hdr = binary.LittleEndian.AppendUint32(hdr, uint32(len(c)))
	}
	n, err := out.Write(hdr)
	total := int64(n)
	if err != nil {
		return total, err
	}
	for _, c := range w.chunks {
		n, err = out.Write(c)
		total += int64(n)
		if err != nil {
			return total, err
		}
	}
	if w.zenc != nil {
		w.zenc.Close()
	}
	return total, nil
}

// Bytes finishes the file and returns it.
func (w *Writer) Bytes() ([]byte, error) {
	var b bytes.Buffer
	_, err := w.WriteTo(&b)
	return b.Bytes(), err
}

// playerTable is the header's player table: every player seen, first-seen
// order, de-duplicated by userid.
type playerTable struct {
	names   []string
	userids []int64
	numbers []int
	levels  []int
}

func (t *playerTable) consider(f *Frame) {
	for _, tm := range f.Teams {
		if tm == nil {
			continue
		}
		for _, p := range tm.Players {
			if !t.has(p.UserID) {
				t.names = append(t.names, p.Name)
				t.userids = append(t.userids, p.UserID)
				t.numbers = append(t.numbers, p.Number)
				t.levels = append(t.levels, p.Level)
			}
		}
	}
}

func (t *playerTable) has(id int64) bool {
	for _, u := range t.userids {
		if u == id {
			return true
		}
	}
	return false
}

// index is the reference's GetPlayerIndex(name): 1-based, 0 when unknown.
func (t *playerTable) index(name string) byte {
	for i, n := range t.names {
		if n == name {
			return byte(i + 1)
		}
	}
	return 0
}

func (w *Writer) header() []byte {
	f := w.first
	b := []byte{3}
	b = binary.LittleEndian.AppendUint16(b, uint16(w.opts.KeyframeInterval))
	b = append(b, byte(w.opts.Compression))
	b = appendASCII(b, f.ClientName)
	b = append(b, 0)
	b = append(b, sessionIDBytes(f.SessionID)...)
	b = append(b, ipBytes(f.SessionIP)...)
	t := &w.table
	b = append(b, byte(len(t.names)))
	for _, n := range t.names {
		b = appendASCII(b, n)
		b = append(b, 0)
	}
	for _, u := range t.userids {
		b = binary.LittleEndian.AppendUint64(b, uint64(u))
	}
	for _, n := range t.numbers {
		b = append(b, byte(n))
	}
	for _, l := range t.levels {
		b = append(b, byte(l))
	}
	b = append(b, byte(f.TotalRoundCount))
	b = append(b, byte(f.BlueRoundScore)+byte(f.OrangeRoundScore<<4))
	mb := byte(0)
	if f.PrivateMatch {
		mb = 1
	}
	mb += byte(mapIndex(f.MapName) << 1)
	b = append(b, mb)
	return b
}

var mapNames = []string{"uncoded", "mpl_lobby_b2", "mpl_arena_a", "mpl_combat_fission", "mpl_combat_combustion", "mpl_combat_dyson", "mpl_combat_gauss", "mpl_tutorial_arena"}

// mapIndex is the map's code; unknown maps (the reference throws) are 0.
func mapIndex(m string) int {
	for i, n := range mapNames {
		if n == m {
			return i
		}
	}
	return 0
}

// appendASCII is .NET's Encoding.ASCII.GetBytes: every UTF-16 code unit
// above 0x7F becomes '?'.
func appendASCII(b []byte, s string) []byte {
	for _, r := range s {
		switch {
		case r < 0x80:
			b = append(b, byte(r))
		case r >= 0x10000 && r <= utf8MaxRune:
			b = append(b, '?', '?')
		default:
			b = append(b, '?')
		}
	}
	return b
}

const utf8MaxRune = 0x10FFFF

// sessionIDBytes is the reference's SessionIdToBytes: dashes removed, hex
// digit pairs parsed with its permissive GetHexVal.
func sessionIDBytes(s string) []byte {
	s = strings.ReplaceAll(s, "-", "")
	out := make([]byte, 16)
	for i := 0; i < 16 && 2*i+1 < len(s); i++ {
		out[i] = byte(hexVal(s[2*i])<<4 + hexVal(s[2*i+1]))
	}
	return out
}

func hexVal(c byte) int {
	v := int(c)
	switch {
	case v < 58:
		return v - 48
	case v < 97:
		return v - 55
	}
	return v - 87
}

// ipBytes is the reference's IpAddressToBytes; anything but a dotted quad
// (which makes the reference throw) is written as 0.0.0.0.
func ipBytes(s string) []byte {
	parts := strings.Split(s, ".")
	out := make([]byte, 4)
	if len(parts) != 4 {
		return out
	}
	for i, p := range parts {
		n, err := strconv.ParseUint(strings.TrimSpace(p), 10, 8)
		if err != nil {
			return make([]byte, 4)
		}
		out[i] = byte(n)
	}
	return out
}
