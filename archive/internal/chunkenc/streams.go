package chunkenc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/klauspost/compress/zstd"
	"github.com/replayarchive/replay/formats"
)

// Transforms of a streams blob (its second byte). A build that meets a
// transform it does not know refuses the chunk with errUnknownTransform,
// so an archive written by a newer build fails clearly, never silently.
const (
	// transformColumns: the native bytes as the streams of the format's
	// formats.Columnar (for teehistorian, record columns:
	// formats/teehistorian columns.go).
	transformColumns = 1
)

// errUnknownTransform is returned for a streams blob whose transform this
// build does not have.
var errUnknownTransform = errors.New("chunk uses a transform this build does not know (written by a newer version?)")

// ErrNoColumns is returned for a streams blob decoded without a
// formats.Columnar: the archive names the format it has none for.
var ErrNoColumns = errors.New("chunk is stored as columns, but the archive has no column transform for its format")

// A streams blob (flags bit 1; archives written before it hold none):
//
//	flags (FlagStreams) ‖ transform (1 B) ‖ uvarint k ‖
//	k × (uvarint stored<<1 | zstd, then uvarint native size if zstd) ‖
//	the k streams' stored bytes, in order
//
// Stream 0 is the resume state, streams 1..k-1 the transform's streams.
// Each stream is one zstd frame (no frame checksum: the chunk's CRC-32C
// covers the result) or, when that is not smaller, its bytes as they are:
// each field kind gets its own entropy tables.

// maxStreams bounds k, so that a corrupt count allocates nothing large.
const maxStreams = 64

// EncodeColumns lays out a streams blob of native under transformColumns
// with the streams col splits it into (reusing cols), compressing each
// stream with enc or as a literals frame (see EncodeStreams).
func EncodeColumns(enc *zstd.Encoder, ch *Chooser, col formats.Columnar, cols *[][]byte, scratch *[]byte, resume, native []byte) []byte {
	*cols = col.SplitColumns(native, *cols)
	return EncodeStreams(enc, ch, *cols, scratch, resume)
}

// EncodeStreams lays out a streams blob under transformColumns of a
// chunk's resume state and the streams its format's transform split it
// into, each stream a zstd frame made by enc or a literals frame, as ch
// chooses. scratch is reused between calls: the streams are encoded one
// after the other into it, and the blob is its one allocation.
func EncodeStreams(enc *zstd.Encoder, ch *Chooser, cols [][]byte, scratch *[]byte, resume []byte) []byte {
	k := 1 + len(cols)
	head := make([]byte, 0, 2+binary.MaxVarintLen64*(1+2*k))
	head = append(head, FlagStreams, transformColumns)
	head = binary.AppendUvarint(head, uint64(k))
	body := (*scratch)[:0]
	for i := range k {
		s := resume
		if i > 0 {
			s = cols[i-1]
		}
		start, z := len(body), uint64(0)
		if len(s) >= minStreamZstd {
			body, z = ch.encode(enc, i, body, s)
		}
		if z == 0 {
			body = append(body, s...)
		}
		head = binary.AppendUvarint(head, uint64(len(body)-start)<<1|z)
		if z == 1 {
			head = binary.AppendUvarint(head, uint64(len(s)))
		}
	}
	ch.chunks++
	*scratch = body
	out := make([]byte, 0, len(head)+len(body))
	return append(append(out, head...), body...)
}

// A Chooser decides, stream by stream, whether a chunk's stream is
// compressed by the encoder or as a literals frame (literals.go), from
// the chunks it has seen: every probeEvery'th chunk (every chunk with
// ProbeAll) tries both and keeps the smaller, and the chunks between
// take for each stream what won its last try. So a column of symbols
// that the encoder's matches make larger is Huffman-coded alone, in a
// fraction of the encoder's time, whatever the data: the choice is the
// archive's own measurement, not a list of columns. One Chooser serves
// the chunks of one recording, in order.
type Chooser struct {
	// ProbeAll tries both ways on every chunk (a pass apart from ingest,
	// where the time is worth the bytes).
	ProbeAll bool
	lits     literalsCoder
	chunks   int
	useLits  [maxStreams]bool
}

// Reset readies ch for another recording's chunks; it keeps its buffers.
func (ch *Chooser) Reset() {
	ch.chunks = 0
	ch.useLits = [maxStreams]bool{}
}

// probeEvery is how often a chooser tries both ways on every stream.
const probeEvery = 16

// encode appends stream i of the current chunk, s, to body as a zstd
// frame (z 1) or leaves body as it was (z 0: s is stored as it is).
func (ch *Chooser) encode(enc *zstd.Encoder, i int, body, s []byte) (_ []byte, z uint64) {
	if i >= len(ch.useLits) {
		// More streams than a blob may hold (decodeStreams refuses the
		// blob) have no choice kept: the encoder codes them.
		return zstdFrame(enc, body, s)
	}
	probe := ch.ProbeAll || ch.chunks%probeEvery == 0
	if !probe && ch.useLits[i] {
		if out, ok := ch.lits.appendFrame(body, s); ok {
			return out, 1
		}
	}
	start := len(body)
	if body, z = zstdFrame(enc, body, s); !probe {
		return body, z
	}
	mark := len(body)
	out, ok := ch.lits.appendFrame(body, s)
	ch.useLits[i] = ok && (z == 0 || len(out)-mark < mark-start)
	if !ch.useLits[i] {
		return out[:mark], z
	}
	n := copy(out[start:], out[mark:])
	return out[:start+n], 1
}

// zstdFrame appends s to body as a zstd frame made by enc (z 1), or
// leaves body as it was when the frame would not be smaller (z 0).
func zstdFrame(enc *zstd.Encoder, body, s []byte) (_ []byte, z uint64) {
	start := len(body)
	if body = enc.EncodeAll(s, body); len(body)-start < len(s) {
		return body, 1
	}
	return body[:start], 0
}

// minStreamZstd is the smallest stream worth a zstd frame: a frame's
// header and block header cost about 8 bytes.
const minStreamZstd = 16

// decodeStreams reverses EncodeStreams with dec and col, appending the
// native bytes to dst; want is the native size the manifest records,
// which bounds what the streams may claim.
func decodeStreams(dec *zstd.Decoder, col formats.Columnar, blob []byte, want int64, dst []byte) (native, resume []byte, err error) {
	if len(blob) < 3 {
		return nil, nil, errors.New("streams blob too short")
	}
	if blob[1] != transformColumns {
		return nil, nil, fmt.Errorf("%w: transform %d", errUnknownTransform, blob[1])
	}
	if col == nil {
		return nil, nil, ErrNoColumns
	}
	if want < 0 || want > formats.MaxChunkBytes {
		return nil, nil, fmt.Errorf("recorded size %d is out of range (corrupt manifest?)", want)
	}
	r := VarintReader{B: blob, Off: 2}
	k := r.Uvarint("stream count")
	if r.Err == nil && (k < 1 || k > maxStreams) {
		return nil, nil, fmt.Errorf("streams blob holds %d streams, want 1..%d", k, maxStreams)
	}
	type stream struct {
		stored, native int
		zstd           bool
	}
	var stArr [maxStreams]stream
	st := stArr[:min(k, maxStreams)]
	total := 0 // native bytes of all streams
	for i := range st {
		v := r.Uvarint("stream size")
		st[i] = stream{stored: int(min(v>>1, uint64(len(blob)))), zstd: v&1 != 0}
		st[i].native = st[i].stored
		if st[i].zstd {
			st[i].native = int(min(r.Uvarint("stream native size"), 2*formats.MaxChunkBytes))
		}
		total += st[i].native
	}
	if r.Err != nil {
		return nil, nil, fmt.Errorf("streams blob header: %w", r.Err)
	}
	// The resume state is small; the columns hold the native bytes plus
	// nothing: a total above both is a corrupt blob, refused before any
	// allocation.
	if int64(total) > want+formats.MaxChunkBytes {
		return nil, nil, fmt.Errorf("streams blob claims %d bytes for a chunk of %d", total, want)
	}
	bufp := GetBuffer(total + decodeSlack)
	defer PutBuffer(bufp)
	buf := (*bufp)[:0]
	var partsArr [maxStreams][]byte
	parts := partsArr[:len(st)]
	off := r.Off
	for i, s := range st {
		if s.stored > len(blob)-off {
			return nil, nil, fmt.Errorf("stream %d: %d bytes at offset %d, blob has %d", i, s.stored, off, len(blob))
		}
		src := blob[off : off+s.stored]
		off += s.stored
		start := len(buf)
		if s.zstd {
			out, err := dec.DecodeAll(src, buf)
			if err != nil {
				return nil, nil, fmt.Errorf("stream %d: %w", i, err)
			}
			if len(out)-start != s.native {
				return nil, nil, fmt.Errorf("stream %d: decoded %d bytes, want %d", i, len(out)-start, s.native)
			}
			buf = out
		} else {
			buf = append(buf, src...)
		}
		parts[i] = buf[start:len(buf):len(buf)]
	}
	if off != len(blob) {
		return nil, nil, fmt.Errorf("%d bytes after the last stream", len(blob)-off)
	}
	native, err = col.JoinColumns(dst, parts[1:])
	if err != nil {
		return nil, nil, err
	}
	// The streams' buffer goes back to the pool: the resume state, small,
	// is copied out of it.
	return native, bytes.Clone(parts[0]), nil
}
