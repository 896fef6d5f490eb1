// This file reads the framing of a VTX file as the SDK writes it:
//
//	"VTXP"|"VTXF"  u32 H  header blob
//	u32 S  chunk blob   (repeated)
//	footer blob  u32 F  "VTXP"|"VTXF"
//
// All integers are little-endian. The chunks are walked by their size
// prefixes from the front, so a file whose footer is missing (the writer
// stopped before closing it) is still read; the footer is recognized as the
// bytes that end with its own size and the magic.

package vtx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/internal/bounded"
)

func errAt(off int64, msg string, args ...any) *formats.Error {
	return formats.Errorf(Name, off, msg, args...)
}

// blobError turns a decode error inside a blob at file offset off into a
// *formats.Error.
func blobError(off int64, what string, err error) *formats.Error {
	return &formats.Error{Format: Name, Offset: off, What: what, Err: err}
}

// backendOf returns the backend named by a four-byte magic.
func backendOf(magic []byte) (Backend, bool) {
	if len(magic) < 4 {
		return 0, false
	}
	for _, b := range [...]Backend{Protobuf, FlatBuffers} {
		if [4]byte(magic) == b.Magic() {
			return b, true
		}
	}
	return 0, false
}

// DecodeHeader decodes a header blob (raw or zstd) of backend b.
func (d *Decoder) DecodeHeader(b Backend, blob []byte) (*Header, error) {
	raw, err := d.Unpack(blob)
	if err != nil {
		return nil, err
	}
	if b == Protobuf {
		return pbHeader(raw)
	}
	return fbHeader(raw)
}

// DecodeChunk decodes a chunk blob (raw or zstd) of backend b.
func (d *Decoder) DecodeChunk(b Backend, blob []byte) (*Chunk, error) {
	raw, err := d.Unpack(blob)
	if err != nil {
		return nil, err
	}
	if b == Protobuf {
		return pbChunk(raw)
	}
	return fbChunk(raw)
}

// DecodeFooter decodes a footer blob (raw or zstd) of backend b.
func (d *Decoder) DecodeFooter(b Backend, blob []byte) (*Footer, error) {
	raw, err := d.Unpack(blob)
	if err != nil {
		return nil, err
	}
	if b == Protobuf {
		return pbFooter(raw)
	}
	return fbFooter(raw)
}

// ParseHeaderPiece decodes the header piece of a file (magic, u32 size and
// header blob, exactly).
func (d *Decoder) ParseHeaderPiece(piece []byte) (Backend, *Header, error) {
	if len(piece) < 8 {
		return 0, nil, errAt(0, "expected the magic and the header size, got %d bytes", len(piece))
	}
	b, ok := backendOf(piece)
	if !ok {
		return 0, nil, errAt(0, "expected magic \"VTXP\" or \"VTXF\", got %q", piece[:4])
	}
	if n := le32(piece[4:]); int64(n) != int64(len(piece)-8) {
		return 0, nil, errAt(4, "header size %d does not match the %d header bytes", n, len(piece)-8)
	}
	h, err := d.DecodeHeader(b, piece[8:])
	if err != nil {
		return 0, nil, blobError(8, "header blob", err)
	}
	return b, h, nil
}

// ParseTrailerPiece decodes the trailer piece of a file (footer blob, u32
// size, magic). It returns nil, nil for an empty trailer (footer missing).
func (d *Decoder) ParseTrailerPiece(b Backend, piece []byte, base int64) (*Footer, error) {
	if len(piece) == 0 {
		return nil, nil
	}
	n := len(piece)
	if n < 8 {
		return nil, errAt(base, "expected the footer, its u32 size and the magic at the end, got %d bytes", n)
	}
	m := b.Magic()
	if !bytes.Equal(piece[n-4:], m[:]) {
		return nil, errAt(base+int64(n-4), "expected the closing magic %q, got %q", m[:], piece[n-4:])
	}
	if f := le32(piece[n-8:]); int64(f) != int64(n-8) {
		return nil, errAt(base+int64(n-8), "footer size %d does not match the %d bytes before it", f, n-8)
	}
	ft, err := d.DecodeFooter(b, piece[:n-8])
	if err != nil {
		return nil, blobError(base, "footer blob", err)
	}
	return ft, nil
}

// scanned is what scan hands to its callbacks for each chunk.
type scanned struct {
	offset int64  // of the u32 size
	piece  []byte // u32 size + blob; valid until the callback returns
	chunk  *Chunk // nil in light mode
	frames int
	start  int64 // first frame
}

// scanner walks a VTX stream.
type scanner struct {
	r       io.Reader
	dec     *Decoder
	maxBlob int64
	off     int64
	backend Backend
	header  *Header
	footer  *Footer
	frames  int64
	chunks  []IndexEntry // as walked
	blob    []byte       // the blob being read, reused
	// light, when set, replaces the full chunk decode by a light scan that
	// only counts frames and collects entities.
	light *lightScan
}

// readChunk decodes (or light-scans) a chunk blob and returns its frame
// count.
func (s *scanner) readChunk(blob []byte) (*Chunk, int, error) {
	if s.light == nil {
		c, err := s.dec.DecodeChunk(s.backend, blob)
		if err != nil {
			return nil, 0, err
		}
		return c, len(c.Frames), nil
	}
	raw, err := s.dec.Unpack(blob)
	if err != nil {
		return nil, 0, err
	}
	n, err := s.light.chunk(s.backend, raw)
	return nil, n, err
}

// readN reads exactly n bytes into s.blob (reused), growing it only as
// data arrives, so a lying size cannot force a large allocation.
func (s *scanner) readN(n int64, what string) (int64, error) {
	var err error
	s.blob, err = bounded.AppendN(s.blob[:0], s.r, n, s.maxBlob, what)
	s.off += int64(len(s.blob))
	return int64(len(s.blob)), err
}

// readRest reads what is left of the stream, at most limit bytes.
func (s *scanner) readRest(limit int64) ([]byte, error) {
	at := s.off
	b, err := bounded.ReadAll(s.r, limit, "the footer")
	s.off += int64(len(b))
	if errors.Is(err, bounded.ErrLimit) {
		return nil, errAt(at, "more than %d bytes follow where the footer was expected", limit)
	}
	if err != nil {
		return nil, err
	}
	return b, nil
}

// readHeader reads the magic, size and header blob; it returns the piece.
func (s *scanner) readHeader() ([]byte, error) {
	var pre [8]byte
	n, err := io.ReadFull(s.r, pre[:])
	s.off += int64(n)
	if err != nil {
		if n >= 4 {
			if _, ok := backendOf(pre[:4]); !ok {
				return nil, errAt(0, "expected magic \"VTXP\" or \"VTXF\", got %q", pre[:4])
			}
		}
		return nil, errAt(int64(n), "expected the magic and the u32 header size, file ends after %d bytes", n)
	}
	b, ok := backendOf(pre[:4])
	if !ok {
		return nil, errAt(0, "expected magic \"VTXP\" or \"VTXF\", got %q", pre[:4])
	}
	s.backend = b
	h := int64(le32(pre[4:]))
	if h > s.maxBlob {
		return nil, errAt(4, "header size %d exceeds the limit of %d bytes", h, s.maxBlob)
	}
	if got, err := s.readN(h, "header blob"); err != nil {
		return nil, errAt(8+got, "header declares %d bytes, file ends after %d: %v", h, got, err)
	}
	hdr, err := s.dec.DecodeHeader(b, s.blob)
	if err != nil {
		return nil, blobError(8, "header blob", err)
	}
	s.header = hdr
	piece := make([]byte, 0, 8+h)
	piece = append(piece, pre[:]...)
	return append(piece, s.blob...), nil
}

// tail checks that b, read from offset at, is the footer blob followed by
// its size and the magic, and decodes the footer.
func (s *scanner) tail(at int64, b []byte) error {
	ft, err := s.dec.ParseTrailerPiece(s.backend, b, at)
	if err != nil {
		return err
	}
	s.footer = ft
	return nil
}

// scan walks the chunks after the header, calling chunk for each. It
// returns the trailer piece (nil when the footer is missing).
func (s *scanner) scan(ctx context.Context, chunk func(*scanned) error) ([]byte, error) {
	var sz [4]byte
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		at := s.off
		n, err := io.ReadFull(s.r, sz[:])
		s.off += int64(n)
		if n == 0 && err == io.EOF {
			return nil, nil // footer missing: the file ends after a chunk
		}
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("vtx: reading at offset %d: %w", at, err)
		}
		if n < 4 {
			t := bytes.Clone(sz[:n])
			if err := s.tail(at, t); err != nil {
				return nil, errAt(at, "expected a chunk's u32 size or the footer, the file ends after %d bytes", n)
			}
			return t, nil
		}
		size := int64(le32(sz[:]))
		if size > s.maxBlob {
			// Not a chunk: the footer, whose zstd magic reads as a huge size.
			rest, err := s.readRest(s.maxBlob + 8)
			if err != nil {
				return nil, err
			}
			t := append(bytes.Clone(sz[:]), rest...)
			if terr := s.tail(at, t); terr != nil {
				return nil, notFooter(terr, fmt.Sprintf("chunk size %d at offset %d exceeds the limit of %d bytes, and what follows is not the footer", size, at, s.maxBlob))
			}
			return t, nil
		}
		got, rerr := s.readN(size, fmt.Sprintf("chunk %d", len(s.chunks)))
		if rerr != nil {
			if !errors.Is(rerr, io.ErrUnexpectedEOF) {
				return nil, fmt.Errorf("vtx: reading chunk at offset %d: %w", at, rerr)
			}
			t := append(bytes.Clone(sz[:]), s.blob...)
			if s.tail(at, t) != nil {
				return nil, errAt(s.off, "chunk at offset %d declares %d bytes but the file ends after %d of them (and they are not the footer)", at, size, got)
			}
			return t, nil
		}
		c, nf, cerr := s.readChunk(s.blob)
		if cerr == nil && nf == 0 {
			cerr = errors.New("chunk holds no frames")
		}
		if cerr != nil {
			// Perhaps the footer after all (a raw footer can start with a
			// small number); otherwise the chunk is broken.
			blob := s.blob
			rest, err := s.readRest(s.maxBlob + 8)
			if err == nil {
				t := make([]byte, 0, 4+len(blob)+len(rest))
				t = append(append(append(t, sz[:]...), blob...), rest...)
				if s.tail(at, t) == nil {
					return t, nil
				}
			}
			return nil, blobError(at+4, fmt.Sprintf("chunk %d blob (%d bytes)", len(s.chunks), size), cerr)
		}
		piece := s.blob
		piece = append(sz[:], piece...) // one copy per chunk
		sc := &scanned{offset: at, piece: piece, chunk: c, frames: nf, start: s.frames}
		s.chunks = append(s.chunks, IndexEntry{
			ChunkIndex: int32(len(s.chunks)), StartFrame: int32(s.frames),
			EndFrame: int32(s.frames + int64(nf) - 1), FileOffset: uint64(at), Size: uint32(size + 4),
		})
		s.frames += int64(nf)
		if err := chunk(sc); err != nil {
			return nil, err
		}
	}
}

// notFooter reports that the bytes at the end are neither a chunk nor the
// footer, keeping the footer check's offset when it has one.
func notFooter(terr error, what string) error {
	var fe *formats.Error
	if errors.As(terr, &fe) {
		return &formats.Error{Format: Name, Offset: fe.Offset, What: what + ": " + fe.What, Err: fe.Err}
	}
	return fmt.Errorf("vtx: %s: %w", what, terr)
}

// checkIndex compares the footer's chunk index and frame count with the
// walked chunks and returns warnings for every difference.
func (s *scanner) checkIndex() []string {
	if s.footer == nil {
		return nil
	}
	var w []string
	if int64(s.footer.TotalFrames) != s.frames {
		w = append(w, fmt.Sprintf("footer says %d frames, the chunks hold %d", s.footer.TotalFrames, s.frames))
	}
	if len(s.footer.Chunks) != len(s.chunks) {
		w = append(w, fmt.Sprintf("footer indexes %d chunks, the file holds %d", len(s.footer.Chunks), len(s.chunks)))
		return w
	}
	for i, e := range s.footer.Chunks {
		g := s.chunks[i]
		if e.StartFrame != g.StartFrame || e.EndFrame != g.EndFrame || e.FileOffset != g.FileOffset || e.Size != g.Size {
			w = append(w, fmt.Sprintf("footer entry %d {frames %d-%d, offset %d, size %d} differs from the chunk found {frames %d-%d, offset %d, size %d}",
				i, e.StartFrame, e.EndFrame, e.FileOffset, e.Size, g.StartFrame, g.EndFrame, g.FileOffset, g.Size))
			if len(w) > 8 {
				break
			}
		}
	}
	return w
}

// File is a whole VTX file decoded in memory.
type File struct {
	Backend Backend
	Header  *Header
	// Footer is nil when the file has none (recovered by walking chunks).
	Footer *Footer
	// Index lists the chunks as found in the file.
	Index  []IndexEntry
	Chunks []*Chunk
	// Warnings say what was tolerated (missing footer, index mismatches).
	Warnings []string
}

// Frames returns the number of frames in the file's chunks.
func (f *File) Frames() int {
	n := 0
	for _, c := range f.Chunks {
		n += len(c.Frames)
	}
	return n
}

// ReadFile decodes a whole VTX file from r, every chunk included.
// maxBlob bounds each blob, compressed and decompressed (0 for
// DefaultMaxBlobSize).
func ReadFile(ctx context.Context, r io.Reader, maxBlob int64) (*File, error) {
	if maxBlob <= 0 {
		maxBlob = DefaultMaxBlobSize
	}
	dec := NewDecoder(maxBlob)
	defer dec.Close()
	s := &scanner{r: r, dec: dec, maxBlob: maxBlob}
	if _, err := s.readHeader(); err != nil {
		return nil, err
	}
	f := &File{Backend: s.backend, Header: s.header}
	if _, err := s.scan(ctx, func(sc *scanned) error {
		f.Chunks = append(f.Chunks, sc.chunk)
		return nil
	}); err != nil {
		return nil, err
	}
	f.Footer, f.Index = s.footer, s.chunks
	if s.footer == nil {
		f.Warnings = append(f.Warnings, missingFooter)
	}
	f.Warnings = append(f.Warnings, s.checkIndex()...)
	return f, nil
}

const missingFooter = "footer missing (the writer stopped before closing the file): chunk index rebuilt by walking the chunk sizes; frame times unknown"
