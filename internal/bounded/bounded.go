// Package bounded reads input whose sizes come from length fields that
// cannot be trusted. Every codec used to carry its own copy of "read n
// bytes, but do not allocate n before they arrive"; this is the one copy.
//
// Two rules hold for every function here: memory grows with the bytes
// actually read (never with the number a file claims), and every read has
// a ceiling that, when crossed, is an error naming what was being read and
// the limit — not a silent truncation, which would turn a decompression
// bomb into a misleading "file cut short" much later.
package bounded

import (
	"errors"
	"fmt"
	"io"
)

// FileBudget is the memory budget for decoding one file: no single piece
// of a file (a zip member, a decompressed chunk, a record) may need more
// than this. It is 256 MiB so that a server decoding a few
// uploads at once stays within a few GiB whatever the uploads claim.
const FileBudget = 256 << 20

// firstStep is the first buffer a read of unknown honesty allocates; each
// later step doubles what has arrived so far, so the buffer is never more
// than twice the bytes actually read plus firstStep.
const firstStep = 64 << 10

// ErrLimit is wrapped by every *LimitError, for errors.Is.
var ErrLimit = errors.New("size limit exceeded")

// LimitError reports input larger than a limit: What names what was being
// read ("zip member \"a.echoreplay\"", "chunk 3"), Limit the ceiling in
// bytes, and Declared the size the input claimed (-1 when the excess was
// found by reading rather than declared).
type LimitError struct {
	What     string
	Limit    int64
	Declared int64
}

// Error implements error.
func (e *LimitError) Error() string {
	if e.Declared >= 0 {
		return fmt.Sprintf("%s declares %d bytes, more than the limit of %d", e.What, e.Declared, e.Limit)
	}
	return fmt.Sprintf("%s holds more than the limit of %d bytes", e.What, e.Limit)
}

// Unwrap returns ErrLimit.
func (e *LimitError) Unwrap() error { return ErrLimit }

// ReadN reads exactly n bytes from r. n above limit is refused before
// anything is read. When r ends early it returns the bytes that did arrive
// with io.ErrUnexpectedEOF, so a caller can keep a truncated tail.
func ReadN(r io.Reader, n, limit int64, what string) ([]byte, error) {
	return AppendN(nil, r, n, limit, what)
}

// AppendN is ReadN appending to buf, whose spare capacity is reused (a
// decoder reading chunk after chunk keeps one buffer).
func AppendN(buf []byte, r io.Reader, n, limit int64, what string) ([]byte, error) {
	if n < 0 {
		return buf, fmt.Errorf("%s: negative size %d", what, n)
	}
	if n > limit {
		return buf, &LimitError{What: what, Limit: limit, Declared: n}
	}
	for got := int64(0); got < n; {
		if len(buf) == cap(buf) {
			step := max(got, firstStep)
			buf = grow(buf, min(step, n-got))
		}
		k := min(int64(cap(buf)-len(buf)), n-got)
		m, err := io.ReadFull(r, buf[len(buf):len(buf)+int(k)])
		buf = buf[:len(buf)+m]
		got += int64(m)
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return buf, io.ErrUnexpectedEOF
		}
		if err != nil {
			return buf, err
		}
	}
	return buf, nil
}

// grow returns buf with room for at least k more bytes.
func grow(buf []byte, k int64) []byte {
	nb := make([]byte, len(buf), int64(len(buf))+k)
	copy(nb, buf)
	return nb
}

// ReadAll reads r to its end. More than limit bytes is a *LimitError
// (the bytes are not kept); the buffer grows only as bytes arrive.
func ReadAll(r io.Reader, limit int64, what string) ([]byte, error) {
	return AppendAll(nil, r, limit, what)
}

// AppendAll is ReadAll appending to buf, reusing its spare capacity.
// The buffer doubles as bytes arrive, up to exactly limit, so the most it
// holds at once is about 1.5 times limit (the old and the new buffer
// while one is copied into the other).
func AppendAll(buf []byte, r io.Reader, limit int64, what string) ([]byte, error) {
	start := len(buf)
	for {
		got := int64(len(buf) - start)
		if len(buf) == cap(buf) {
			if got >= limit {
				// full at the limit: one more byte means too much
				var one [1]byte
				n, err := io.ReadFull(r, one[:])
				if n > 0 {
					return buf[:start], &LimitError{What: what, Limit: limit, Declared: -1}
				}
				if err == io.EOF {
					return buf, nil
				}
				return buf, err
			}
			buf = grow(buf, min(max(got, firstStep), limit-got))
		}
		m, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// Reader is an io.Reader that fails with a *LimitError once more than its
// limit would be read. io.LimitReader ends silently instead, which makes
// a bomb look like a short file.
type Reader struct {
	r     io.Reader
	left  int64 // bytes that may still be read
	limit int64
	what  string
}

// NewReader returns a reader of r allowing at most limit bytes.
func NewReader(r io.Reader, limit int64, what string) *Reader {
	return &Reader{r: r, left: limit, limit: limit, what: what}
}

// Read implements io.Reader.
func (l *Reader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if l.left <= 0 {
		// the limit is reached: one more byte means the input is too big
		var one [1]byte
		n, err := l.r.Read(one[:])
		if n > 0 {
			return 0, &LimitError{What: l.what, Limit: l.limit, Declared: -1}
		}
		return 0, err
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}

// Zstd frame geometry: a block regenerates at most 128 KiB, and the
// smallest block that does so (an RLE block) takes a 3-byte header and
// one byte of content. A frame header takes at least 6 bytes.
const (
	zstdBlockMax      = 128 << 10
	zstdMinBlockBytes = 4
	zstdMinFrameHead  = 6
)

// ZstdMagic opens every zstd frame.
const ZstdMagic = "\x28\xB5\x2F\xFD"

// IsZstd reports whether b starts with a zstd frame's magic number: the
// codecs that store zstd frames as they are and the ingest's detection of
// compressed input tell them apart by it.
func IsZstd(b []byte) bool {
	return len(b) >= len(ZstdMagic) && string(b[:len(ZstdMagic)]) == ZstdMagic
}

// ZstdMaxOutput is the most that n bytes of zstd frames can decompress
// to: 128 KiB per 4 bytes. A frame that declares more content (or a
// larger window) than this lies, and can be refused before a buffer of
// that size is allocated. Real data stays far below: zstd's best ratio on
// a run of zeros reaches at most this bound.
func ZstdMaxOutput(n int64) int64 {
	if n < zstdMinFrameHead {
		return 0
	}
	blocks := (n-zstdMinFrameHead)/zstdMinBlockBytes + 1
	return blocks * zstdBlockMax
}
