package chunkenc

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/replayarchive/replay/formats"
)

// A VarintReader reads the integers of a stored header from B at Off,
// keeping the first error in Err, so that a decoder checks once: a
// streams blob's here, the manifest's chunk table in the archive.
type VarintReader struct {
	B   []byte
	Off int
	Err error
}

// Uvarint reads a uvarint; what names it in the error.
func (r *VarintReader) Uvarint(what string) uint64 { return next(r, binary.Uvarint, "uvarint", what) }

// Varint reads a varint; what names it in the error.
func (r *VarintReader) Varint(what string) int64 { return next(r, binary.Varint, "varint", what) }

// next reads one integer of r with read (binary.Uvarint or binary.Varint),
// a kind named what.
func next[T int64 | uint64](r *VarintReader, read func([]byte) (T, int), kind, what string) T {
	if r.Err != nil {
		return 0
	}
	v, k := read(r.B[r.Off:])
	if k <= 0 {
		r.Err = fmt.Errorf("want a %s %s", kind, what)
		return 0
	}
	r.Off += k
	return v
}

// Size reads a byte count, which no chunk may have above
// formats.MaxChunkBytes (a stored blob may exceed its native size a
// little).
func (r *VarintReader) Size(what string) int64 {
	v := r.Uvarint(what)
	if r.Err == nil && v > 2*formats.MaxChunkBytes {
		r.Err = fmt.Errorf("%s %d is more than a chunk may hold", what, v)
	}
	return int64(v)
}

// Uint32 reads a little-endian CRC.
func (r *VarintReader) Uint32() uint32 {
	if r.Err != nil {
		return 0
	}
	if len(r.B)-r.Off < 4 {
		r.Err = errors.New("want a 4-byte CRC")
		return 0
	}
	v := binary.LittleEndian.Uint32(r.B[r.Off:])
	r.Off += 4
	return v
}
