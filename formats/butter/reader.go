// This file reads a whole .butter file held in memory: header, chunk
// table, and every chunk, tolerating a file cut off mid-chunk.

package butter

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/replayarchive/replay/formats"
)

// Decoded is the result of reading a .butter file.
type Decoded struct {
	Header *FileHeader
	// Frames are the decoded frames, in order.
	Frames []*Frame
	// Warnings say what was tolerated (truncation, unknown players).
	Warnings []string
}

// Decode reads a whole .butter file.
func Decode(ctx context.Context, b []byte, opts DecodeOptions) (*Decoded, error) {
	out := &Decoded{}
	h, warn, err := ReadFrames(ctx, b, opts, func(_ int, f *Frame) error {
		out.Frames = append(out.Frames, f)
		return nil
	})
	out.Header, out.Warnings = h, warn
	return out, err
}

// ReadFrames decodes every frame of the .butter file b and calls emit with
// its index. A file cut short yields every whole frame and a warning; a
// chunk whose bytes are corrupt stops decoding with an error naming its
// offset (the frames before it have been emitted).
func ReadFrames(ctx context.Context, b []byte, opts DecodeOptions, emit func(i int, f *Frame) error) (*FileHeader, []string, error) {
	h, err := ParseFileHeader(b)
	if err != nil {
		return nil, nil, err
	}
	d := newDecoder(h, opts)
	var warnings []string
	off := h.DataStart()
	n := 0
	for ci, size := range h.ChunkSizes {
		if err := ctx.Err(); err != nil {
			return h, warnings, err
		}
		if size == 0 {
			continue
		}
		end := off + int64(size)
		truncated := end > int64(len(b))
		if truncated {
			end = int64(len(b))
		}
		if off >= end {
			warnings = append(warnings, fmt.Sprintf("file ends before chunk %d of %d (byte offset %d): %d chunks lost", ci, len(h.ChunkSizes), off, len(h.ChunkSizes)-ci))
			break
		}
		before := n
		_, werr := decodeChunk(d, b[off:end], off, ci, h.Compression, func(f *Frame) error {
			if err := emit(n, f); err != nil {
				return err
			}
			n++
			return nil
		})
		if werr != nil {
			if !truncated || !errors.Is(werr, io.ErrUnexpectedEOF) {
				return h, warnings, werr
			}
		}
		if truncated {
			warnings = append(warnings, fmt.Sprintf("file cut off in chunk %d of %d: %d of %d bytes present, %d whole frames kept from it; %d later chunks lost",
				ci, len(h.ChunkSizes), end-off, size, n-before, len(h.ChunkSizes)-ci-1))
			break
		}
		off = end
	}
	if d.unknown > 0 {
		warnings = append(warnings, fmt.Sprintf("%d player index(es) beyond the header's player table (late joiners); shown as [UNKNOWN n]", d.unknown))
	}
	return h, warnings, nil
}

// decodeChunk decompresses and decodes one stored chunk starting at file
// offset off. A chunk whose stored bytes end early decodes its whole
// frames and returns an error wrapping io.ErrUnexpectedEOF.
func decodeChunk(d *decoder, stored []byte, off int64, ci int, comp Compression, emit func(*Frame) error) (int, error) {
	payload, zerr := decompressChunk(stored, comp, d.opts.maxPayload())
	if zerr != nil && !errors.Is(zerr, io.ErrUnexpectedEOF) {
		return 0, &formats.Error{Format: Name, Offset: off, What: fmt.Sprintf("chunk %d: expected %s data", ci, comp), Err: zerr}
	}
	base := off
	if comp != CompressNone {
		base = 0 // offsets inside a decompressed payload
	}
	frames := 0
	err := d.chunkFrames(payload, base, func(f *Frame, _ int) error {
		frames++
		return emit(f)
	})
	if err != nil {
		var fe *formats.Error
		if comp != CompressNone && errors.As(err, &fe) {
			fe.What = fmt.Sprintf("chunk %d (at byte %d), payload offset %d: %s", ci, off, fe.Offset, fe.What)
			fe.Offset = off
		}
		if zerr != nil && errors.As(err, &fe) && errors.Is(err, errShort) {
			fe.Err = io.ErrUnexpectedEOF
			return frames, err
		}
		if comp == CompressNone && errors.Is(err, errShort) {
			fe := err.(*formats.Error)
			fe.Err = io.ErrUnexpectedEOF
		}
		return frames, err
	}
	if zerr != nil {
		return frames, &formats.Error{Format: Name, Offset: off, What: fmt.Sprintf("chunk %d: compressed data cut short", ci), Err: zerr}
	}
	return frames, nil
}
