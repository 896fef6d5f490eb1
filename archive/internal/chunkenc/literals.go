package chunkenc

import (
	"encoding/binary"

	"github.com/klauspost/compress/huff0"
)

// A literals frame is a zstd frame (RFC 8878) of one compressed block that
// holds only Huffman-coded literals and no sequences. Any zstd decoder
// reads it. Streams of symbols with little to repeat (an input field, a
// client id) come out smaller this way than from the encoder's match
// finder, whose short matches cost more than the literals they replace,
// and it takes a fraction of the time (docs/PERFORMANCE.md, "Literals
// frames").

// Limits of a literals frame: one block holds at most 128 KiB, and Huffman
// coding does not pay below a few dozen bytes. Four Huffman streams from
// 1 KiB on, as zstd's own encoder does; one below.
const (
	maxLiteralsFrame = 128 << 10
	minLiteralsFrame = 32
	fourStreamsFrom  = 1 << 10
)

// literalsCoder builds literals frames, reusing its Huffman scratch.
type literalsCoder struct {
	huff huff0.Scratch
}

// appendFrame appends a literals frame of src to dst. It returns dst
// unchanged and false when src is out of the frame's limits or Huffman
// coding would not make it smaller (one repeated byte, bytes too evenly
// spread): the caller uses the encoder instead.
func (c *literalsCoder) appendFrame(dst, src []byte) ([]byte, bool) {
	n := len(src)
	if n < minLiteralsFrame || n > maxLiteralsFrame {
		return dst, false
	}
	// Every frame stands alone: its Huffman table is always written.
	c.huff.Reuse = huff0.ReusePolicyNone
	var lits []byte
	var err error
	if n >= fourStreamsFrom {
		lits, _, err = huff0.Compress4X(src, &c.huff)
	} else {
		lits, _, err = huff0.Compress1X(src, &c.huff)
	}
	if err != nil || len(lits) >= n {
		return dst, false
	}
	start := len(dst)
	// Frame header: magic number; a single segment (the window is the
	// content), no checksum, no dictionary; the content size.
	dst = binary.LittleEndian.AppendUint32(dst, 0xFD2FB528)
	switch {
	case n < 256:
		dst = append(dst, 0<<6|1<<5, byte(n))
	case n < 256+1<<16:
		dst = append(dst, 1<<6|1<<5)
		dst = binary.LittleEndian.AppendUint16(dst, uint16(n-256))
	default:
		dst = append(dst, 2<<6|1<<5)
		dst = binary.LittleEndian.AppendUint32(dst, uint32(n))
	}
	// The block: its header (its size filled in last), the literals
	// section (header and the Huffman table and streams), then a
	// sequences section of zero sequences.
	bhAt := len(dst)
	dst = append(dst, 0, 0, 0)
	dst = appendLiteralsHeader(dst, n, len(lits), n < fourStreamsFrom)
	dst = append(dst, lits...)
	dst = append(dst, 0)
	const last, compressed = 1, 2 << 1
	bh := uint32(last | compressed | (len(dst)-bhAt-3)<<3)
	dst[bhAt], dst[bhAt+1], dst[bhAt+2] = byte(bh), byte(bh>>8), byte(bh>>16)
	if len(dst)-start >= n {
		return dst[:start], false
	}
	return dst, true
}

// appendLiteralsHeader appends the header of a compressed literals section
// (RFC 8878 3.1.1.3.1.1) of regen bytes Huffman-coded into comp bytes, in
// one stream (regen below 1 KiB) or four.
func appendLiteralsHeader(b []byte, regen, comp int, single bool) []byte {
	const compressedLiterals = 2
	r, c := uint64(regen), uint64(comp)
	switch {
	case single: // size format 0: 10-bit sizes, one stream
		v := compressedLiterals | 0<<2 | r<<4 | c<<14
		return append(b, byte(v), byte(v>>8), byte(v>>16))
	case regen < 1<<10 && comp < 1<<10: // size format 1: 10-bit sizes
		v := compressedLiterals | 1<<2 | r<<4 | c<<14
		return append(b, byte(v), byte(v>>8), byte(v>>16))
	case regen < 1<<14 && comp < 1<<14: // size format 2: 14-bit sizes
		v := compressedLiterals | 2<<2 | r<<4 | c<<18
		return append(b, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
	default: // size format 3: 18-bit sizes (maxLiteralsFrame fits)
		v := compressedLiterals | 3<<2 | r<<4 | c<<22
		return append(b, byte(v), byte(v>>8), byte(v>>16), byte(v>>24), byte(v>>32))
	}
}
