// This file implements the streaming Reader: it reads the header, then one
// record at a time through a reused buffer, keeping the decoder state that
// resolves implicit ticks, position deltas and input deltas.

package teehistorian

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/replayarchive/replay/formats"
)

// Name is the format's name as stored in manifests and used in errors.
const Name = "teehistorian"

// maxHeader bounds the JSON header. Real headers are about 3.5 KB.
const maxHeader = 4 << 20

// MaxRecordBytes bounds one record, all its fields included. A MESSAGE or
// EX item whose size field claims more is refused as soon as the size is
// read, and a record whose
// strings run on (no NUL) is refused once this many bytes of it have been
// read, so a lying length never makes the reader read or buffer more than
// this. DDNet's records are far smaller: a network message is at most about
// 1.4 KB, a console line 512 bytes, a team save string about 60 KB.
const MaxRecordBytes = 1 << 20

// maxBuffer bounds the reader's buffer: one chunk (which Split cuts by
// MaxChunkBytes) plus the record that crosses its end. The buffer grows
// only as bytes arrive, doubling up to this.
const maxBuffer = MaxChunkBytes + 2*MaxRecordBytes

// Reader decodes a teehistorian file record by record. It does not allocate
// per record once its buffer has grown to the largest record.
type Reader struct {
	r        io.Reader
	buf      []byte
	pos, end int   // next record; end of the buffered bytes
	keep     int   // index of the first byte that must be kept, or -1
	base     int64 // file offset of buf[0]
	rerr     error // sticky error from r (io.EOF at the end)

	hdr      Header
	st       State
	it       Item
	parsed   bool // it holds a parsed record that is not applied yet
	finished bool // FINISH was read
	// short says the last error was the file ending inside a record or
	// the header: a growing file that waits for its rest (live.go).
	short bool
}

// NewReader reads the magic and the JSON header from r and returns a reader
// positioned at the first record.
func NewReader(r io.Reader) (*Reader, error) {
	rd := &Reader{r: r, buf: make([]byte, 32<<10), keep: 0}
	if err := rd.readHeader(); err != nil {
		return nil, err
	}
	rd.keep = -1
	return rd, nil
}

// newChunkReader decodes the records in native, which start at file offset
// base, from the state st.
func newChunkReader(native []byte, base int64, hdr *Header, st *State) *Reader {
	rd := &Reader{buf: native, end: len(native), keep: -1, base: base, rerr: io.EOF}
	if hdr != nil {
		rd.hdr = *hdr
	}
	if st != nil {
		rd.st = *st
	} else {
		rd.st.Reset()
	}
	return rd
}

func (r *Reader) errorf(off int64, what string, args ...any) error {
	return formats.Errorf(Name, off, what, args...)
}

func (r *Reader) readHeader() error {
	for r.end < len(Magic) && r.rerr == nil {
		if err := r.fill(); err != nil {
			return err
		}
	}
	if r.end < len(Magic) && bytes.HasPrefix(Magic[:], r.buf[:r.end]) {
		r.short = true
	}
	if r.end < len(Magic) || !bytes.Equal(r.buf[:len(Magic)], Magic[:]) {
		return r.errorf(0, "expected the 16-byte teehistorian magic UUID 699db17b-8efb-34ff-b1d8-da6f60c15dd1")
	}
	searched := len(Magic)
	for {
		if i := bytes.IndexByte(r.buf[searched:r.end], 0); i >= 0 {
			nul := searched + i
			r.hdr.Raw = bytes.Clone(r.buf[:nul+1])
			r.hdr.JSON = r.hdr.Raw[len(Magic):nul]
			if err := parseHeaderJSON(&r.hdr, r.hdr.JSON); err != nil {
				return &formats.Error{Format: Name, Offset: int64(len(Magic)), What: "bad JSON header", Err: err}
			}
			r.pos = nul + 1
			r.st.Reset()
			return nil
		}
		searched = r.end
		if r.end > maxHeader {
			return r.errorf(int64(len(Magic)), "expected the JSON header to end with a NUL within %d bytes", maxHeader)
		}
		if r.rerr != nil {
			r.short = true
			return r.errorf(int64(r.end), "expected the JSON header to end with a NUL byte, got end of file")
		}
		if err := r.fill(); err != nil {
			return err
		}
	}
}

// fill reads more bytes into the buffer, first dropping bytes before pos
// (and before keep, when set). It returns a non-EOF read error.
func (r *Reader) fill() error {
	if r.rerr != nil {
		if r.rerr == io.EOF {
			return nil
		}
		return r.rerr
	}
	lo := r.pos
	if r.keep >= 0 && r.keep < lo {
		lo = r.keep
	}
	if lo > 0 {
		copy(r.buf, r.buf[lo:r.end])
		r.end -= lo
		r.pos -= lo
		if r.keep >= 0 {
			r.keep -= lo
		}
		r.base += int64(lo)
	}
	if r.end == len(r.buf) {
		// Grow only when the buffer is full of real bytes, so a length
		// field never makes us allocate more than what the file holds.
		size := min(2*len(r.buf), maxBuffer)
		if size <= len(r.buf) {
			return r.errorf(r.base, "expected a tick boundary within %d bytes, got %d bytes of one tick", MaxChunkBytes, r.end)
		}
		nb := make([]byte, size)
		copy(nb, r.buf[:r.end])
		r.buf = nb
	}
	for tries := 0; tries < 100; tries++ {
		n, err := r.r.Read(r.buf[r.end:])
		r.end += n
		if err != nil {
			r.rerr = err
			if err != io.EOF {
				return fmt.Errorf("teehistorian: read at byte %d: %w", r.base+int64(r.end), err)
			}
			return nil
		}
		if n > 0 {
			return nil
		}
	}
	r.rerr = io.ErrNoProgress
	return r.rerr
}

// Header returns the parsed header.
func (r *Reader) Header() *Header { return &r.hdr }

// State returns the decoder state after the last record returned by Next.
func (r *Reader) State() *State { return &r.st }

// Finished reports whether the FINISH record was read.
func (r *Reader) Finished() bool { return r.finished }

// Offset returns the file offset of the next record.
func (r *Reader) Offset() int64 { return r.base + int64(r.pos) }

// Next returns the next record, or io.EOF after FINISH or when the file ends
// on a record boundary (check Finished). The Item and its slices are reused
// by the following call. A record cut short by the end of the file or an
// invalid record gives a *formats.Error.
func (r *Reader) Next() (*Item, error) {
	it, err := r.peek()
	if err != nil {
		return nil, err
	}
	r.commit()
	return it, nil
}

// peek parses the next record without applying it to the state.
func (r *Reader) peek() (*Item, error) {
	if r.parsed {
		return &r.it, nil
	}
	if r.finished {
		return nil, io.EOF
	}
	for {
		_, status, what, at := parse(r.buf[r.pos:r.end], &r.st, &r.it, r.hdr.Version)
		switch status {
		case parseOK:
			r.it.Offset = r.base + int64(r.pos)
			r.parsed = true
			return &r.it, nil
		case parseBad:
			return nil, r.errorf(r.base+int64(r.pos+at), "%s", what)
		}
		// parseShort: read more, unless the file has ended.
		if r.rerr != nil {
			if r.pos == r.end {
				return nil, io.EOF
			}
			r.short = true
			return nil, r.errorf(r.base+int64(r.pos), "expected a complete record, got end of file after %d bytes of it", r.end-r.pos)
		}
		if r.end-r.pos >= MaxRecordBytes {
			return nil, r.errorf(r.base+int64(r.pos), "expected a record of at most %d bytes, got %d bytes without its end", MaxRecordBytes, r.end-r.pos)
		}
		if err := r.fill(); err != nil {
			return nil, err
		}
	}
}

// commit applies the parsed record and moves past it.
func (r *Reader) commit() {
	apply(&r.st, &r.it)
	if r.it.Type == ItemMessage && r.hdr.VersionMinor < 8 {
		keepNameMsg(&r.st, &r.it)
	}
	r.pos += r.it.Size
	r.parsed = false
	if r.it.Type == ItemFinish {
		r.finished = true
	}
}

// rest reads and returns every byte after the current position (used for
// bytes that follow FINISH). It is bounded by limit.
func (r *Reader) rest(limit int) ([]byte, error) {
	for r.rerr == nil {
		if r.end-r.pos > limit {
			return nil, r.errorf(r.base+int64(r.pos), "expected nothing after FINISH, got more than %d bytes", limit)
		}
		if err := r.fill(); err != nil {
			return nil, err
		}
	}
	if r.rerr != io.EOF {
		return nil, r.rerr
	}
	b := r.buf[r.pos:r.end]
	r.pos = r.end
	return b, nil
}

// errIsEOF reports whether err is a clean end of the stream.
func errIsEOF(err error) bool { return errors.Is(err, io.EOF) }
