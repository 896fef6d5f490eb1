// Compressed inputs: a native file inside gzip, xz or zstd.
//
// DDNet keeps its history as .teehistorian.xz and users mail .gz files, so
// ingest looks through one layer of compression: the container is
// recognised from its magic bytes (never from the name), the codec is
// detected on the decompressed head, and the recording is the native file
// inside: its sha256, its size and its export are the native bytes', so
// ingesting the .xz and then the plain file (or the reverse) finds the
// second "already archived".
//
// Decompression streams, so memory does not grow with the output; what is
// bounded is the work a small file can cause. A decompressed stream may
// not pass MaxDecompressedBytes, nor outgrow the compressed bytes read so
// far by more than MaxExpansion once past ExpansionSlack: a kilobyte that
// claims to hold gigabytes fails after ExpansionSlack, in well under a
// second, with an *ExpansionError. The decoders' own memory is capped too
// (MaxDecoderWindow; for xz by xzGuard, which checks every block header
// before the decoder sees it).

package ingest

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/internal/bounded"
	"github.com/ulikunitz/xz"
)

// Compression names a container ingest looks through.
type Compression string

// Containers recognised by SniffCompression.
const (
	NotCompressed Compression = ""
	Gzip          Compression = "gzip"
	XZ            Compression = "xz"
	Zstd          Compression = "zstd"
)

// Budget of one decompressed input (see the file comment).
const (
	// MaxDecompressedBytes caps the native bytes inside one compressed
	// file: a DDNet server file of several days is a few GB.
	MaxDecompressedBytes = 64 << 30
	// MaxExpansion caps native bytes per compressed byte once past
	// ExpansionSlack. Real recordings compress 5-30×; deflate alone
	// can reach 1032×, and xz or zstd of zeros far more.
	MaxExpansion = 256
	// ExpansionSlack is the output allowed before MaxExpansion applies, so
	// that a small, very regular file is not refused.
	ExpansionSlack = 64 << 20
	// MaxDecoderWindow caps the window (zstd) or dictionary (xz) a file
	// may ask the decoder to allocate; xz -9 uses 64 MiB.
	MaxDecoderWindow = 64 << 20
)

// ErrExpansion is wrapped by every *ExpansionError, for errors.Is.
var ErrExpansion = errors.New("decompression exceeds its budget")

// ExpansionError reports a compressed input that expands beyond the
// budget: a decompression bomb, or a file beyond MaxDecompressedBytes.
type ExpansionError struct {
	Compression Compression
	In, Out     int64 // compressed bytes read, native bytes produced
	Limit       string
}

// Error implements error.
func (e *ExpansionError) Error() string {
	return fmt.Sprintf("%s stream expands to more than %d bytes from %d compressed bytes (%s)", e.Compression, e.Out, e.In, e.Limit)
}

// Unwrap returns ErrExpansion.
func (e *ExpansionError) Unwrap() error { return ErrExpansion }

var (
	gzipMagic = []byte{0x1f, 0x8b}
	xzMagic   = []byte{0xfd, '7', 'z', 'X', 'Z', 0x00}
)

// SniffCompression recognises a container from a file's first bytes.
func SniffCompression(head []byte) Compression {
	switch {
	case bytes.HasPrefix(head, xzMagic):
		return XZ
	case bounded.IsZstd(head):
		return Zstd
	case len(head) >= 3 && bytes.HasPrefix(head, gzipMagic) && head[2] == 8: // deflate
		return Gzip
	}
	return NotCompressed
}

// Decompress returns a reader of the native bytes inside r, a stream of
// kind c, within the budget of the file comment. Close releases the
// decoder (not r).
func Decompress(r io.Reader, c Compression) (io.ReadCloser, error) {
	in := &countingReader{r: r}
	var (
		dec     io.Reader
		release func()
		guard   *xzGuard
	)
	switch c {
	case Gzip:
		z, err := gzip.NewReader(in)
		if err != nil {
			return nil, fmt.Errorf("gzip header: %w", err)
		}
		dec, release = z, func() { z.Close() }
	case Zstd:
		z, err := zstd.NewReader(in, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxWindow(MaxDecoderWindow), zstd.WithDecoderMaxMemory(MaxDecompressedBytes))
		if err != nil {
			return nil, fmt.Errorf("zstd: %w", err)
		}
		dec, release = z, z.Close
	case XZ:
		// The xz decoder allocates the dictionary a block header asks
		// for, up to 4 GiB: the guard checks each before it does.
		g := newXZGuard(in)
		z, err := xz.NewReader(g)
		if err != nil {
			if g.err != nil && !errors.Is(g.err, io.EOF) {
				err = g.err
			}
			return nil, fmt.Errorf("xz: %w", err)
		}
		dec, release, guard = z, func() {}, g
	default:
		return nil, fmt.Errorf("unknown compression %q", c)
	}
	return &budgetReader{dec: dec, in: in, kind: c, release: release, guard: guard}, nil
}

// xzGuard passes an xz file through to the decoder, parsing its structure
// (stream headers, block headers, LZMA2 chunk headers, index, footers) as
// the bytes go by, and stops with an error before a block header asking
// for a dictionary over MaxDecoderWindow reaches the decoder, which would
// allocate it (github.com/ulikunitz/xz takes up to 4 GiB from one byte).
// Only the headers are parsed; the decoder checks everything else.
type xzGuard struct {
	br    *bufio.Reader
	state int
	free  int64 // bytes parsed and not yet passed on
	check int64 // size of each block's check field
	block int64 // bytes of the current block so far (header and data)
	index int64 // bytes of the current index so far
	recs  uint64
	pos   int64 // bytes passed on
	err   error
}

const (
	xzStreamHeader = iota
	xzBlockOrIndex
	xzChunk
	xzBlockPad
	xzIndexRecord
	xzIndexEnd
	xzFooter
	xzStreamPad
)

func newXZGuard(r io.Reader) *xzGuard {
	return &xzGuard{br: bufio.NewReaderSize(r, 64<<10)}
}

func (g *xzGuard) Read(p []byte) (int, error) {
	for g.free == 0 {
		if g.err != nil {
			return 0, g.err
		}
		if err := g.parse(); err != nil {
			if !errors.Is(err, io.EOF) {
				err = fmt.Errorf("xz at byte %d: %w", g.pos, err)
			}
			g.err = err
			return 0, err
		}
	}
	n, err := g.br.Read(p[:min(int64(len(p)), g.free)])
	g.free -= int64(n)
	g.pos += int64(n)
	return n, err
}

// peek returns the next n bytes; a stream that ends first is cut short.
func (g *xzGuard) peek(n int) ([]byte, error) {
	b, err := g.br.Peek(n)
	if err != nil && len(b) < n {
		return nil, fmt.Errorf("expected %d more bytes of structure: %w", n, io.ErrUnexpectedEOF)
	}
	return b, nil
}

// parse reads the next piece of structure and sets how many bytes may
// pass on before the next.
func (g *xzGuard) parse() error {
	switch g.state {
	case xzStreamHeader:
		b, err := g.peek(12)
		if err != nil {
			return err
		}
		if !bytes.HasPrefix(b, xzMagic) {
			return errors.New("expected an xz stream header")
		}
		g.check = [16]int64{0, 4, 4, 4, 8, 8, 8, 16, 16, 16, 32, 32, 32, 64, 64, 64}[b[7]&0x0f]
		g.free, g.state = 12, xzBlockOrIndex
	case xzBlockOrIndex:
		b, err := g.peek(1)
		if err != nil {
			return err
		}
		if b[0] == 0 { // index indicator, then the number of records
			b, _ := g.br.Peek(11)
			recs, n := binary.Uvarint(b[1:])
			if n <= 0 {
				return errors.New("bad index record count")
			}
			g.recs, g.index, g.free, g.state = recs, int64(1+n), int64(1+n), xzIndexRecord
			return nil
		}
		size := (int(b[0]) + 1) * 4
		if b, err = g.peek(size); err != nil {
			return err
		}
		if err := checkBlockHeader(b); err != nil {
			return err
		}
		g.block, g.free, g.state = int64(size), int64(size), xzChunk
	case xzChunk:
		b, err := g.peek(1)
		if err != nil {
			return err
		}
		var n int64
		switch c := b[0]; {
		case c == 0:
			n, g.state = 1, xzBlockPad
		case c == 1 || c == 2: // uncompressed chunk
			if b, err = g.peek(3); err != nil {
				return err
			}
			n = 3 + int64(binary.BigEndian.Uint16(b[1:])) + 1
		case c >= 0x80: // LZMA chunk, with properties from state 2 on
			hdr := 5
			if (c>>5)&3 >= 2 {
				hdr = 6
			}
			if b, err = g.peek(hdr); err != nil {
				return err
			}
			n = int64(hdr) + int64(binary.BigEndian.Uint16(b[3:])) + 1
		default:
			return fmt.Errorf("bad LZMA2 control byte %#x", c)
		}
		g.block += n
		g.free = n
	case xzBlockPad:
		g.free, g.state = (4-g.block%4)%4+g.check, xzBlockOrIndex
	case xzIndexRecord:
		if g.recs == 0 {
			g.free, g.state = (4-g.index%4)%4+4, xzFooter // padding, CRC32
			return nil
		}
		b, _ := g.br.Peek(20)
		_, n1 := binary.Uvarint(b)
		if n1 <= 0 {
			return errors.New("bad index record")
		}
		_, n2 := binary.Uvarint(b[n1:])
		if n2 <= 0 {
			return errors.New("bad index record")
		}
		g.recs--
		g.index += int64(n1 + n2)
		g.free = int64(n1 + n2)
	case xzFooter:
		g.free, g.state = 12, xzStreamPad
	case xzStreamPad:
		b, err := g.br.Peek(4)
		if len(b) == 0 && err != nil {
			return err // the end
		}
		if bytes.HasPrefix(xzMagic, b) || bytes.HasPrefix(b, xzMagic[:4]) {
			g.state = xzStreamHeader
			return nil
		}
		if len(b) < 4 || !bytes.Equal(b, []byte{0, 0, 0, 0}) {
			return errors.New("expected stream padding or another xz stream")
		}
		g.free = 4
	}
	return nil
}

// checkBlockHeader refuses a block header (whole, CRC32 included) whose
// LZMA2 filter asks for a dictionary over MaxDecoderWindow.
func checkBlockHeader(h []byte) error {
	size := len(h)
	if crc32.ChecksumIEEE(h[:size-4]) != binary.LittleEndian.Uint32(h[size-4:]) {
		return errors.New("block header: bad CRC32")
	}
	flags, pos := h[1], 2
	body := h[:size-4]
	for _, present := range []bool{flags&0x40 != 0, flags&0x80 != 0} { // compressed, uncompressed size
		if !present {
			continue
		}
		_, n := binary.Uvarint(body[pos:])
		if n <= 0 {
			return errors.New("block header: bad size field")
		}
		pos += n
	}
	for range int(flags&3) + 1 {
		id, n := binary.Uvarint(body[pos:])
		if n <= 0 {
			return errors.New("block header: bad filter id")
		}
		pos += n
		props, n := binary.Uvarint(body[pos:])
		if n <= 0 || props > uint64(len(body)-pos-n) {
			return errors.New("block header: bad filter properties")
		}
		pos += n
		if id == 0x21 && props >= 1 {
			if d := xzDictSize(body[pos]); d > MaxDecoderWindow {
				return fmt.Errorf("dictionary of %d bytes is over the %d-byte limit: %w", d, MaxDecoderWindow, ErrExpansion)
			}
		}
		pos += int(props)
	}
	return nil
}

// xzDictSize decodes LZMA2's dictionary size property.
func xzDictSize(c byte) int64 {
	if c >= 40 {
		return 1<<32 - 1
	}
	return int64(2|c&1) << (c/2 + 11)
}

// countingReader counts the compressed bytes a decoder reads.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// budgetReader enforces the expansion budget on a decoder's output.
type budgetReader struct {
	dec     io.Reader
	in      *countingReader
	out     int64
	kind    Compression
	release func()
	guard   *xzGuard // its error is the cause when the xz decoder fails
}

func (b *budgetReader) Read(p []byte) (int, error) {
	n, err := b.dec.Read(p)
	b.out += int64(n)
	if b.out > MaxDecompressedBytes {
		return n, &ExpansionError{b.kind, b.in.n, MaxDecompressedBytes, fmt.Sprintf("MaxDecompressedBytes %d", int64(MaxDecompressedBytes))}
	}
	if b.out > ExpansionSlack && b.out > b.in.n*MaxExpansion {
		return n, &ExpansionError{b.kind, b.in.n, b.out, fmt.Sprintf("more than %d× past the first %d MiB", MaxExpansion, ExpansionSlack>>20)}
	}
	if err != nil && !errors.Is(err, io.EOF) {
		if b.guard != nil && b.guard.err != nil && !errors.Is(b.guard.err, io.EOF) {
			err = b.guard.err
		}
		err = fmt.Errorf("%s at compressed byte %d: %w", b.kind, b.in.n, err)
	}
	return n, err
}

func (b *budgetReader) Close() error {
	b.release()
	return nil
}

// compressedCodec is the codec of the native file inside a compressed one:
// the walk hands it on as the input's codec, and openNative sees through
// it. Every method is the native codec's.
type compressedCodec struct {
	formats.Codec
	kind Compression
}

// compressionOf returns the container the input's codec sees through.
func compressionOf(c formats.Codec) Compression {
	if cc, ok := c.(compressedCodec); ok {
		return cc.kind
	}
	return NotCompressed
}

// detectCompressed detects the codec of the native file inside the
// compressed file f of kind c.
func detectCompressed(codecs []formats.Codec, f io.Reader, c Compression) (formats.Codec, error) {
	d, err := Decompress(f, c)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	head := make([]byte, formats.DetectSize)
	n, err := io.ReadFull(d, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, err
	}
	codec, err := DetectBytes(codecs, head[:n])
	if err != nil {
		return nil, fmt.Errorf("inside %s: %w", c, err)
	}
	return compressedCodec{codec, c}, nil
}

// openNative opens the file at path for its native bytes: decompressed
// when codec is a compressedCodec.
func openNative(path string, codec formats.Codec) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	kind := compressionOf(codec)
	if kind == NotCompressed {
		return f, nil
	}
	d, err := Decompress(f, kind)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &closeBoth{d, f}, nil
}

// OpenNative opens the file at path for the native bytes it holds: the
// file itself, or what its gzip, xz or zstd container holds (recognised
// from its magic bytes), within the budget of Decompress. The watcher
// uses it to ask a codec whether a file is complete.
func OpenNative(path string) (io.ReadCloser, Compression, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, NotCompressed, err
	}
	head := make([]byte, 8)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		f.Close()
		return nil, NotCompressed, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, NotCompressed, err
	}
	kind := SniffCompression(head[:n])
	if kind == NotCompressed {
		return f, kind, nil
	}
	d, err := Decompress(f, kind)
	if err != nil {
		f.Close()
		return nil, kind, err
	}
	return &closeBoth{d, f}, kind, nil
}

// lookThrough returns br itself when head (its first bytes) is not
// compressed, else a reader of the native bytes inside and their head;
// release frees the decoder.
func lookThrough(br *bufio.Reader, head []byte) (*bufio.Reader, []byte, func(), error) {
	kind := SniffCompression(head)
	if kind == NotCompressed {
		return br, head, func() {}, nil
	}
	d, err := Decompress(br, kind)
	if err != nil {
		return nil, nil, nil, err
	}
	nbr := bufio.NewReaderSize(d, br.Size())
	head, err = nbr.Peek(formats.DetectSize)
	if err != nil && !errors.Is(err, io.EOF) {
		d.Close()
		return nil, nil, nil, err
	}
	return nbr, head, func() { d.Close() }, nil
}

// closeBoth closes the decoder, then the file.
type closeBoth struct {
	io.ReadCloser
	f *os.File
}

func (c *closeBoth) Close() error {
	c.ReadCloser.Close()
	return c.f.Close()
}
