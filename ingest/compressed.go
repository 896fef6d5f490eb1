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
// (MaxDecoderWindow).

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
	zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}
)

// SniffCompression recognises a container from a file's first bytes.
func SniffCompression(head []byte) Compression {
	switch {
	case bytes.HasPrefix(head, xzMagic):
		return XZ
	case bytes.HasPrefix(head, zstdMagic):
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
		// for, up to 4 GiB: check the first block's before it does.
		br := newPeekReader(in)
		if err := checkXZDict(br); err != nil {
			return nil, err
		}
		z, err := xz.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("xz: %w", err)
		}
		dec, release = z, func() {}
	default:
		return nil, fmt.Errorf("unknown compression %q", c)
	}
	return &budgetReader{dec: dec, in: in, kind: c, release: release}, nil
}

// checkXZDict reads the stream header and first block header of an xz
// stream without consuming them and refuses a dictionary over
// MaxDecoderWindow. Later blocks and concatenated streams are not
// checked: the xz package gives no hook between blocks (see docs/live.md).
func checkXZDict(p *peekReader) error {
	const streamHeader = 12
	b, err := p.peek(streamHeader + 1)
	if err != nil {
		return fmt.Errorf("xz: stream header: %w", err)
	}
	size := (int(b[streamHeader]) + 1) * 4 // block header size; 0 → index (empty stream)
	if b[streamHeader] == 0 {
		return nil
	}
	b, err = p.peek(streamHeader + size)
	if err != nil {
		return fmt.Errorf("xz: first block header: %w", err)
	}
	h := b[streamHeader : streamHeader+size]
	if crc32.ChecksumIEEE(h[:size-4]) != binary.LittleEndian.Uint32(h[size-4:]) {
		return errors.New("xz: first block header: bad CRC32")
	}
	flags, pos := h[1], 2
	for _, present := range []bool{flags&0x40 != 0, flags&0x80 != 0} { // compressed, uncompressed size
		if !present {
			continue
		}
		_, n := binary.Uvarint(h[pos : size-4])
		if n <= 0 {
			return errors.New("xz: first block header: bad size field")
		}
		pos += n
	}
	// One filter, LZMA2 (0x21), one property byte: the dictionary size.
	if flags&3 != 0 || pos+3 > size-4 || h[pos] != 0x21 || h[pos+1] != 1 {
		return errors.New("xz: first block header: only a single LZMA2 filter is supported")
	}
	if d := xzDictSize(h[pos+2]); d > MaxDecoderWindow {
		return fmt.Errorf("xz: dictionary of %d bytes is over the %d-byte limit: %w", d, MaxDecoderWindow, ErrExpansion)
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

// peekReader lets checkXZDict look ahead without consuming.
type peekReader struct {
	r   io.Reader
	buf []byte
}

func newPeekReader(r io.Reader) *peekReader { return &peekReader{r: r} }

// peek returns the next n bytes (n ≤ 1028, an xz block header's maximum
// plus the stream header) without consuming them.
func (p *peekReader) peek(n int) ([]byte, error) {
	if len(p.buf) < n {
		more := make([]byte, n-len(p.buf))
		k, err := io.ReadFull(p.r, more)
		p.buf = append(p.buf, more[:k]...)
		if err != nil {
			return p.buf, err
		}
	}
	return p.buf[:n], nil
}

func (p *peekReader) Read(b []byte) (int, error) {
	if len(p.buf) > 0 {
		n := copy(b, p.buf)
		p.buf = p.buf[n:]
		return n, nil
	}
	return p.r.Read(b)
}

// budgetReader enforces the expansion budget on a decoder's output.
type budgetReader struct {
	dec     io.Reader
	in      *countingReader
	out     int64
	kind    Compression
	release func()
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
