// This file writes VTX files the way the SDK's ChunkedFileSink does: the
// header, then chunks of up to ChunkFrames frames each behind their u32
// size, then the footer with the chunk index and per-frame times, its u32
// size and the magic again. Blobs follow the SDK's compression rule.

package vtx

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	flatbuffers "github.com/google/flatbuffers/go"
)

// DefaultChunkFrames is the SDK's default chunk_max_frames.
const DefaultChunkFrames = 1000

// TicksPerSecond is the rate of VTX times (100-ns ticks).
const TicksPerSecond = 10_000_000

// WriterOptions tune a Writer. The zero value writes like the SDK's
// defaults: 1000 frames per chunk, zstd level 10.
type WriterOptions struct {
	// ChunkFrames is the number of frames per chunk (DefaultChunkFrames
	// when 0).
	ChunkFrames int
	// Level is the zstd level (10 when 0).
	Level int
	// NoCompression stores every blob raw.
	NoCompression bool
}

// Writer writes one VTX file. Frames are serialized as they are written;
// a chunk is flushed every ChunkFrames frames. Close writes the footer.
type Writer struct {
	w       io.Writer
	backend Backend
	opts    WriterOptions
	pk      *packer
	fe      *fbEnc
	off     int64
	err     error
	closed  bool

	// The chunk being built: proto bytes or FlatBuffers frame offsets.
	pb       []byte
	fbFrames []flatbuffers.UOffsetT
	inChunk  int

	footer Footer
	total  int
}

// NewWriter writes the magic and header h and returns a Writer for the
// frames. opts may be nil.
func NewWriter(w io.Writer, backend Backend, h *Header, opts *WriterOptions) (*Writer, error) {
	wr, err := newWriter(w, backend, opts)
	if err != nil {
		return nil, err
	}
	var raw []byte
	if backend == Protobuf {
		raw = pbEncodeHeader(nil, h)
	} else {
		raw = wr.fe.header(h)
	}
	blob := wr.pk.pack(raw)
	var pre [8]byte
	m := backend.Magic()
	copy(pre[:], m[:])
	binary.LittleEndian.PutUint32(pre[4:], uint32(len(blob)))
	if err := wr.write(pre[:], blob); err != nil {
		wr.pk.close()
		return nil, err
	}
	wr.startChunk()
	return wr, nil
}

// newWriterPiece starts a Writer with a header piece already encoded
// (magic, size and blob), as Clip does to keep the source's header.
func newWriterPiece(w io.Writer, backend Backend, headerPiece []byte, opts *WriterOptions) (*Writer, error) {
	wr, err := newWriter(w, backend, opts)
	if err != nil {
		return nil, err
	}
	if err := wr.write(headerPiece); err != nil {
		wr.pk.close()
		return nil, err
	}
	wr.startChunk()
	return wr, nil
}

func newWriter(w io.Writer, backend Backend, opts *WriterOptions) (*Writer, error) {
	if backend != Protobuf && backend != FlatBuffers {
		return nil, fmt.Errorf("vtx: unknown backend %q", byte(backend))
	}
	wr := &Writer{w: w, backend: backend}
	if opts != nil {
		wr.opts = *opts
	}
	if wr.opts.ChunkFrames <= 0 {
		wr.opts.ChunkFrames = DefaultChunkFrames
	}
	pk, err := newPacker(wr.opts.Level, !wr.opts.NoCompression)
	if err != nil {
		return nil, err
	}
	wr.pk = pk
	if backend == FlatBuffers {
		wr.fe = newFbEnc()
	}
	return wr, nil
}

func (w *Writer) write(bs ...[]byte) error {
	if w.err != nil {
		return w.err
	}
	for _, b := range bs {
		n, err := w.w.Write(b)
		w.off += int64(n)
		if err != nil {
			w.err = fmt.Errorf("vtx: write at offset %d: %w", w.off, err)
			return w.err
		}
	}
	return nil
}

func (w *Writer) startChunk() {
	w.inChunk = 0
	idx := int32(len(w.footer.Chunks))
	if w.backend == Protobuf {
		w.pb = pbVarint(w.pb[:0], 1, uint64(idx))
		w.pb = pbVarint(w.pb, 2, 1) // is_compressed, as the SDK sets it
		return
	}
	w.fe.b.Reset()
	w.fbFrames = w.fbFrames[:0]
}

// WriteFrame adds one frame with its game time and creation time (both in
// 100-ns ticks; created since the Unix epoch).
func (w *Writer) WriteFrame(f *Frame, gameTime, createdUTC uint64) error {
	if w.closed {
		return errors.New("vtx: write after Close")
	}
	if w.err != nil {
		return w.err
	}
	if w.backend == Protobuf {
		w.pb = pbAppendMsg(w.pb, 4, func(b []byte) []byte { return msgFrame(b, *f) })
	} else {
		w.fbFrames = append(w.fbFrames, w.fe.frame(f))
	}
	w.footer.GameTime = append(w.footer.GameTime, gameTime)
	w.footer.CreatedUTC = append(w.footer.CreatedUTC, createdUTC)
	w.inChunk++
	w.total++
	if w.inChunk >= w.opts.ChunkFrames {
		return w.Flush()
	}
	return nil
}

// Flush writes the frames written since the last chunk as one chunk.
func (w *Writer) Flush() error {
	if w.err != nil || w.inChunk == 0 {
		return w.err
	}
	idx := int32(len(w.footer.Chunks))
	var raw []byte
	if w.backend == Protobuf {
		raw = w.pb
	} else {
		frames := w.fe.offsets(w.fbFrames)
		w.fe.b.StartObject(5)
		w.fe.slot(3, frames)
		w.fe.b.PrependInt32Slot(0, idx, 0)
		w.fe.b.PrependBoolSlot(1, true, false)
		raw = w.fe.finish(w.fe.b.EndObject())
	}
	blob := w.pk.pack(raw)
	var sz [4]byte
	binary.LittleEndian.PutUint32(sz[:], uint32(len(blob)))
	start := int32(w.total - w.inChunk)
	entry := IndexEntry{ChunkIndex: idx, StartFrame: start, EndFrame: start + int32(w.inChunk) - 1,
		FileOffset: uint64(w.off), Size: uint32(len(blob) + 4)}
	if err := w.write(sz[:], blob); err != nil {
		return err
	}
	w.footer.Chunks = append(w.footer.Chunks, entry)
	w.startChunk()
	return nil
}

// Close flushes the last chunk and writes the footer. It does not close
// the underlying writer.
func (w *Writer) Close() error {
	if w.closed {
		return w.err
	}
	defer w.pk.close()
	if err := w.Flush(); err != nil {
		w.closed = true
		return err
	}
	w.closed = true
	f := &w.footer
	f.TotalFrames = int32(w.total)
	if n := len(f.GameTime); n > 1 {
		f.DurationSeconds = float32(float64(f.GameTime[n-1]-f.GameTime[0]) / TicksPerSecond)
	}
	var raw []byte
	if w.backend == Protobuf {
		raw = pbEncodeFooter(nil, f)
	} else {
		raw = w.fe.footer(f)
	}
	blob := w.pk.pack(raw)
	var tail [8]byte
	binary.LittleEndian.PutUint32(tail[:], uint32(len(blob)))
	m := w.backend.Magic()
	copy(tail[4:], m[:])
	return w.write(blob, tail[:])
}
