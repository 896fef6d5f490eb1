// This file holds the fixed layout: the header, the index entries, the
// preamble checks and the primitive encodings (big-endian integers and
// Minecraft VarInt/VarLong).

// Package hcrp reads and writes Hollow Cube's chunked replay format ("HCRP",
// format version 4) as their mapmaker server implements it: a 256-byte
// big-endian header, network NBT metadata, a chunk index, and one zstd frame
// per chunk of up to 100 ticks of events. While recording, a replay is a
// directory of append-only segment files plus a preamble file (header,
// metadata and index) rewritten atomically after every segment; compaction
// turns the directory into one file.
package hcrp

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/internal/bounded"
)

// Format constants from the reference implementation.
const (
	// Magic is "HCRP" as a big-endian int32.
	Magic = 0x48435250
	// Version is the only format version this package reads and writes.
	Version = 4
	// HeaderSize is the size of the zero-padded header.
	HeaderSize = 256
	// MaxWorldVersion is the longest world version blob.
	MaxWorldVersion = 32
	// TickRate is the fixed server tick rate (ticks per second).
	TickRate = 20
	// TickDuration is the real time of one tick.
	TickDuration = time.Second / TickRate

	// ChunkTickLimit and ChunkByteLimit close a chunk while recording.
	ChunkTickLimit = 100
	ChunkByteLimit = 1 << 20
	// SegmentByteLimit closes a segment (compressed bytes) while recording.
	SegmentByteLimit = 4 << 20

	// FlagSnapshot marks an index entry whose chunk opens with a snapshot.
	FlagSnapshot = 0x01

	// Names of the files of a segmented recording directory.
	PreambleFile  = "preamble.dat"
	FinishedFile  = "finished"
	segmentFormat = "segment-%03d.dat"
)

// Limits applied to untrusted input before anything is allocated.
const (
	maxMetadataLen  = 16 << 20
	maxIndexLen     = 64 << 20
	maxChunkLen     = 16 << 20 // compressed or uncompressed bytes of one chunk
	maxPreambleLen  = HeaderSize + maxMetadataLen + maxIndexLen
	maxEventsInTick = 32767
)

// Name is the format's name as stored in manifests and used in errors.
const Name = "hcrp"

// SegmentName returns the file name of segment i ("segment-007.dat").
func SegmentName(i int) string { return fmt.Sprintf(segmentFormat, i) }

// Header is the fixed 256-byte header of a preamble or compacted file.
type Header struct {
	Version      int16
	Flags        int16
	WorldID      uuid.UUID
	WorldVersion []byte // opaque, at most MaxWorldVersion bytes
	Timestamp    int64  // Unix milliseconds when the recording started
	Dictionary   int16  // 0: no dictionary (the only value readers accept)
	MetadataLen  int32
	IndexLen     int32
	Ticks        int32 // complete ticks in the recording
	Chunks       int32 // index entries
	DataVersion  int32 // Minecraft data version of the ids in events
}

// Start returns the header timestamp as a time.
func (h *Header) Start() time.Time { return time.UnixMilli(h.Timestamp).UTC() }

// PreambleLen is the length of header, metadata and index together.
func (h *Header) PreambleLen() int64 {
	return HeaderSize + int64(h.MetadataLen) + int64(h.IndexLen)
}

// AppendHeader appends the 256-byte encoding of h to b. Version 0 is written
// as Version. It fails when the world version is too long.
func AppendHeader(b []byte, h *Header) ([]byte, error) {
	if len(h.WorldVersion) > MaxWorldVersion {
		return b, fmt.Errorf("hcrp: world version is %d bytes, at most %d allowed", len(h.WorldVersion), MaxWorldVersion)
	}
	v := h.Version
	if v == 0 {
		v = Version
	}
	start := len(b)
	b = binary.BigEndian.AppendUint32(b, Magic)
	b = binary.BigEndian.AppendUint16(b, uint16(v))
	b = binary.BigEndian.AppendUint16(b, uint16(h.Flags))
	b = append(b, h.WorldID[:]...)
	b = append(b, byte(len(h.WorldVersion)))
	b = append(b, h.WorldVersion...)
	b = binary.BigEndian.AppendUint64(b, uint64(h.Timestamp))
	b = binary.BigEndian.AppendUint16(b, uint16(h.Dictionary))
	b = binary.BigEndian.AppendUint32(b, uint32(h.MetadataLen))
	b = binary.BigEndian.AppendUint32(b, uint32(h.IndexLen))
	b = binary.BigEndian.AppendUint32(b, uint32(h.Ticks))
	b = binary.BigEndian.AppendUint32(b, uint32(h.Chunks))
	b = binary.BigEndian.AppendUint32(b, uint32(h.DataVersion))
	for len(b)-start < HeaderSize {
		b = append(b, 0)
	}
	return b, nil
}

// ParseHeader decodes and checks the 256-byte header at the start of b.
func ParseHeader(b []byte) (*Header, error) {
	if len(b) < 6 {
		return nil, formats.Errorf(Name, int64(len(b)), "expected a %d-byte header, got %d bytes", HeaderSize, len(b))
	}
	if m := binary.BigEndian.Uint32(b); m != Magic {
		return nil, formats.Errorf(Name, 0, "expected magic \"HCRP\", got %q", b[:4])
	}
	h := &Header{Version: int16(binary.BigEndian.Uint16(b[4:]))}
	if h.Version != Version {
		return nil, formats.Errorf(Name, 4, "expected format version %d, got %d", Version, h.Version)
	}
	if len(b) < HeaderSize {
		return nil, formats.Errorf(Name, int64(len(b)), "expected a %d-byte header, got %d bytes", HeaderSize, len(b))
	}
	h.Flags = int16(binary.BigEndian.Uint16(b[6:]))
	copy(h.WorldID[:], b[8:24])
	n := int(b[24])
	if n > MaxWorldVersion {
		return nil, formats.Errorf(Name, 24, "expected a world version length of at most %d, got %d", MaxWorldVersion, n)
	}
	h.WorldVersion = append([]byte(nil), b[25:25+n]...)
	p := 25 + n
	h.Timestamp = int64(binary.BigEndian.Uint64(b[p:]))
	h.Dictionary = int16(binary.BigEndian.Uint16(b[p+8:]))
	h.MetadataLen = int32(binary.BigEndian.Uint32(b[p+10:]))
	h.IndexLen = int32(binary.BigEndian.Uint32(b[p+14:]))
	h.Ticks = int32(binary.BigEndian.Uint32(b[p+18:]))
	h.Chunks = int32(binary.BigEndian.Uint32(b[p+22:]))
	h.DataVersion = int32(binary.BigEndian.Uint32(b[p+26:]))
	switch {
	case h.Dictionary != 0:
		return nil, formats.Errorf(Name, int64(p+8), "expected dictionary 0 (none), got %d", h.Dictionary)
	case h.MetadataLen < 2 || h.MetadataLen > maxMetadataLen:
		return nil, formats.Errorf(Name, int64(p+10), "expected a metadata length in [2, %d], got %d", maxMetadataLen, h.MetadataLen)
	case h.IndexLen < 0 || h.IndexLen > maxIndexLen:
		return nil, formats.Errorf(Name, int64(p+14), "expected an index length in [0, %d], got %d", maxIndexLen, h.IndexLen)
	case h.Ticks < 0:
		return nil, formats.Errorf(Name, int64(p+18), "expected a non-negative tick count, got %d", h.Ticks)
	case h.Chunks < 0 || int64(h.Chunks)*12 > int64(h.IndexLen):
		// An index entry takes at least 12 bytes.
		return nil, formats.Errorf(Name, int64(p+22), "chunk count %d does not fit an index of %d bytes", h.Chunks, h.IndexLen)
	}
	return h, nil
}

// IndexEntry is one chunk's entry in the index.
type IndexEntry struct {
	StartTick int32
	Ticks     int32
	Flags     uint8
	// Offset is the chunk's absolute file offset in a compacted file, and
	// segment<<32 | offset-in-segment in a segmented recording.
	Offset          int64
	CompressedLen   int32
	UncompressedLen int32
}

// Snapshot reports whether the chunk opens with a snapshot.
func (e *IndexEntry) Snapshot() bool { return e.Flags&FlagSnapshot != 0 }

// EndTick returns the tick after the chunk's last one.
func (e *IndexEntry) EndTick() int64 { return int64(e.StartTick) + int64(e.Ticks) }

// Segment splits a segmented recording's offset into segment number and
// offset inside the segment file.
func (e *IndexEntry) Segment() (seg int, off int64) {
	return int(uint64(e.Offset) >> 32), e.Offset & 0xffffffff
}

// AppendIndexEntry appends the encoding of e to b.
func AppendIndexEntry(b []byte, e *IndexEntry) []byte {
	b = AppendVarInt(b, e.StartTick)
	b = AppendVarInt(b, e.Ticks)
	b = append(b, e.Flags)
	b = binary.BigEndian.AppendUint64(b, uint64(e.Offset))
	b = AppendVarInt(b, e.CompressedLen)
	return AppendVarInt(b, e.UncompressedLen)
}

// parseIndex decodes count entries from b, which starts at file offset base.
func parseIndex(b []byte, count int, base int64) ([]IndexEntry, error) {
	entries := make([]IndexEntry, count)
	p := 0
	for i := range entries {
		e := &entries[i]
		var err error
		at := p
		if e.StartTick, p, err = readVarInt(b, p); err == nil {
			if e.Ticks, p, err = readVarInt(b, p); err == nil {
				if p+9 > len(b) {
					err = errShort
				} else {
					e.Flags = b[p]
					e.Offset = int64(binary.BigEndian.Uint64(b[p+1:]))
					p += 9
					if e.CompressedLen, p, err = readVarInt(b, p); err == nil {
						e.UncompressedLen, p, err = readVarInt(b, p)
					}
				}
			}
		}
		if err != nil {
			return nil, &formats.Error{Format: Name, Offset: base + int64(p), What: fmt.Sprintf("index entry %d (at %d): %v", i, base+int64(at), err)}
		}
	}
	if p != len(b) {
		return nil, formats.Errorf(Name, base+int64(p), "index holds %d bytes after its %d entries", len(b)-p, count)
	}
	return entries, nil
}

// checkIndex applies the reference implementation's index rules. segmented
// selects the offset rule: segment<<32|offset (segments contiguous, each
// starting at 0, chunks back to back) or absolute offsets starting at
// dataStart. base is the index's file offset, for errors.
func checkIndex(h *Header, entries []IndexEntry, segmented bool, dataStart, base int64) error {
	var tick int64
	var off int64 = dataStart
	seg := -1
	for i := range entries {
		e := &entries[i]
		bad := func(msg string, args ...any) error {
			return formats.Errorf(Name, base, "index entry %d: "+msg, append([]any{i}, args...)...)
		}
		switch {
		case int64(e.StartTick) != tick:
			return bad("expected start tick %d (ticks must be contiguous from 0), got %d", tick, e.StartTick)
		case e.Ticks <= 0:
			return bad("expected a positive tick count, got %d", e.Ticks)
		case e.CompressedLen <= 0 || e.CompressedLen > maxChunkLen:
			return bad("expected a compressed length in [1, %d], got %d", maxChunkLen, e.CompressedLen)
		case e.UncompressedLen <= 0 || e.UncompressedLen > maxChunkLen:
			return bad("expected an uncompressed length in [1, %d], got %d", maxChunkLen, e.UncompressedLen)
		case int64(e.UncompressedLen) > bounded.ZstdMaxOutput(int64(e.CompressedLen)):
			// the decompression buffer is allocated from this length
			return bad("uncompressed length %d is more than %d compressed bytes of zstd can hold (%d)",
				e.UncompressedLen, e.CompressedLen, bounded.ZstdMaxOutput(int64(e.CompressedLen)))
		}
		if segmented {
			s, o := e.Segment()
			switch {
			case s == seg && o != off:
				return bad("expected offset %d in segment %d, got %d", off, s, o)
			case s == seg+1 && o != 0:
				return bad("expected the first chunk of segment %d at offset 0, got %d", s, o)
			case s != seg && s != seg+1:
				return bad("expected segment %d or %d, got %d", seg, seg+1, s)
			}
			if s != seg {
				seg, off = s, 0
			}
		} else if e.Offset != off {
			return bad("expected chunk offset %d (chunks follow each other), got %d", off, e.Offset)
		}
		off += int64(e.CompressedLen)
		tick += int64(e.Ticks)
	}
	if tick != int64(h.Ticks) {
		return formats.Errorf(Name, base, "index covers %d ticks, header says %d", tick, h.Ticks)
	}
	return nil
}

var errShort = fmt.Errorf("unexpected end of data")

// AppendVarInt appends v as a Minecraft VarInt (negative values take 5 bytes).
func AppendVarInt(b []byte, v int32) []byte {
	return binary.AppendUvarint(b, uint64(uint32(v)))
}

// AppendVarLong appends v as a Minecraft VarLong.
func AppendVarLong(b []byte, v int64) []byte {
	return binary.AppendUvarint(b, uint64(v))
}

// readVarInt decodes a VarInt at b[p:], returning the value and the offset
// after it.
func readVarInt(b []byte, p int) (int32, int, error) {
	u, p, err := readVar(b, p, 5, "VarInt")
	return int32(uint32(u)), p, err
}

// readVarLong decodes a VarLong at b[p:].
func readVarLong(b []byte, p int) (int64, int, error) {
	u, p, err := readVar(b, p, 10, "VarLong")
	return int64(u), p, err
}

// readVar decodes Minecraft's little-endian base-128 integer of at most n
// bytes (5 for a VarInt, 10 for a VarLong) at b[p:]; the caller keeps the
// low 32 or 64 bits, as Minecraft does.
func readVar(b []byte, p, n int, what string) (uint64, int, error) {
	var u uint64
	for i := 0; i < n; i++ {
		if p >= len(b) {
			return 0, p, errShort
		}
		c := b[p]
		p++
		u |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return u, p, nil
		}
	}
	return 0, p, fmt.Errorf("%s longer than %d bytes", what, n)
}
