// This file reads and writes .echoreplay files: one line per API fetch,
// "yyyy/MM/dd HH:mm:ss.fff<TAB>session JSON[<TAB>bones JSON]", as plain
// text or inside a zip archive (Spark's "compressed" variant).

package butter

import (
	"archive/zip"
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/internal/bounded"
)

// TimeLayout is the .echoreplay timestamp layout.
const TimeLayout = "2006/01/02 15:04:05.000"

// maxLine bounds one .echoreplay line (a session frame is ~10-50 KB; with
// bones well under 1 MB).
const maxLine = 16 << 20

// Line is one .echoreplay line split into its fields, without parsing the
// JSON.
type Line struct {
	Time    time.Time
	Session []byte // the session JSON as stored
	Bones   []byte // the bones JSON, nil when absent
}

// ParseTime parses an .echoreplay timestamp. Besides the usual layout it
// accepts the "HH.mm.ss" variant some Spark versions wrote.
func ParseTime(s string) (time.Time, error) {
	if len(s) == 23 && s[13] == '.' && s[16] == '.' {
		b := []byte(s)
		b[13], b[16] = ':', ':'
		s = string(b)
	}
	t, err := time.Parse(TimeLayout, s)
	if err != nil {
		// any number of fractional digits, or none
		t, err = time.Parse("2006/01/02 15:04:05.999999999", s)
	}
	return t, err
}

// SplitLine splits one line (without its line ending) into its fields.
func SplitLine(line []byte) (Line, error) {
	tab := bytes.IndexByte(line, '\t')
	if tab < 0 {
		return Line{}, errors.New("no TAB after the timestamp")
	}
	t, err := ParseTime(string(line[:tab]))
	if err != nil {
		return Line{}, fmt.Errorf("bad timestamp %q", truncate(line[:tab], 40))
	}
	rest := line[tab+1:]
	l := Line{Time: t, Session: rest}
	if i := bytes.IndexByte(rest, '\t'); i >= 0 {
		l.Session, l.Bones = rest[:i], rest[i+1:]
	}
	return l, nil
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

// Frame parses the line's JSON into a Frame (ParseFrame: either API
// shape).
func (l Line) Frame() (*Frame, error) {
	f, err := ParseFrame(l.Session)
	if err != nil {
		return nil, fmt.Errorf("session JSON: %w", err)
	}
	f.RecordedTime = l.Time
	if len(bytes.TrimSpace(l.Bones)) > 0 {
		f.Bones = new(Bones)
		if err := json.Unmarshal(l.Bones, f.Bones); err != nil {
			return nil, fmt.Errorf("bones JSON: %w", err)
		}
	}
	return f, nil
}

// bufioScanner returns a line scanner over r that keeps line endings.
func bufioScanner(r io.Reader) *bufio.Scanner {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 256<<10), maxLine)
	sc.Split(scanLinesKeepEnd)
	return sc
}

// LineReader reads .echoreplay lines one at a time.
type LineReader struct {
	sc  *bufio.Scanner
	n   int   // lines returned
	off int64 // byte offset of the next line
}

// NewLineReader reads plain .echoreplay text from r.
func NewLineReader(r io.Reader) *LineReader {
	return &LineReader{sc: bufioScanner(r)}
}

// scanLinesKeepEnd is bufio.ScanLines that keeps the line ending, so byte
// offsets stay exact.
func scanLinesKeepEnd(data []byte, atEOF bool) (int, []byte, error) {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return i + 1, data[:i+1], nil
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}

// Next returns the next non-empty line, its raw bytes (with line ending)
// and its byte offset; io.EOF at the end.
func (r *LineReader) Next() (Line, []byte, int64, error) {
	for r.sc.Scan() {
		raw := r.sc.Bytes()
		off := r.off
		r.off += int64(len(raw))
		text := bytes.TrimRight(raw, "\r\n")
		if len(bytes.TrimSpace(text)) == 0 {
			continue
		}
		l, err := SplitLine(text)
		if err != nil {
			return Line{}, raw, off, &formats.Error{Format: EchoReplayName, Offset: off, What: fmt.Sprintf("line %d: %v", r.n+1, err)}
		}
		r.n++
		return l, raw, off, nil
	}
	if err := r.sc.Err(); err != nil {
		return Line{}, nil, r.off, &formats.Error{Format: EchoReplayName, Offset: r.off, What: "reading line", Err: err}
	}
	return Line{}, nil, r.off, io.EOF
}

// isZip reports whether b starts like a zip archive.
func isZip(b []byte) bool { return len(b) >= 4 && string(b[:4]) == "PK\x03\x04" }

// maxUnzipped bounds the text of a zipped .echoreplay (decompression bomb
// guard): the per-file budget, bounded.FileBudget (256 MiB). A session
// frame is 10-50 KB, so this is hours of recording at 60 Hz.
const maxUnzipped = bounded.FileBudget

// OpenZipped returns a reader of the first entry of a zipped .echoreplay
// (the reference reads Entries[0]), limited to limit bytes of text. The
// entry's declared size is checked against limit before anything is
// decompressed, and the reader fails (rather than ending early) if the
// entry turns out larger than declared or than limit.
func OpenZipped(b []byte, limit int64) (io.ReadCloser, error) {
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil, &formats.Error{Format: EchoReplayName, Offset: 0, What: "reading zip", Err: err}
	}
	if len(zr.File) == 0 {
		return nil, formats.Errorf(EchoReplayName, 0, "zip has no entries")
	}
	f := zr.File[0]
	what := fmt.Sprintf("zip member %q", f.Name)
	off, _ := f.DataOffset()
	if f.UncompressedSize64 > uint64(limit) {
		return nil, &formats.Error{Format: EchoReplayName, Offset: off, What: "refusing to decompress",
			Err: &bounded.LimitError{What: what, Limit: limit, Declared: int64(min(f.UncompressedSize64, 1<<62))}}
	}
	rc, err := f.Open()
	if err != nil {
		return nil, &formats.Error{Format: EchoReplayName, Offset: off, What: "opening " + what, Err: err}
	}
	return &zipMember{r: bounded.NewReader(rc, limit, what), rc: rc, what: what, declared: f.UncompressedSize64}, nil
}

// zipMember reads one zip entry, bounded, and says what archive/zip's
// terse errors mean for it.
type zipMember struct {
	r        io.Reader
	rc       io.ReadCloser
	what     string
	declared uint64
}

// Read implements io.Reader.
func (z *zipMember) Read(p []byte) (int, error) {
	n, err := z.r.Read(p)
	switch {
	case errors.Is(err, zip.ErrFormat):
		err = fmt.Errorf("%s holds more than its declared %d bytes, or is corrupt: %w", z.what, z.declared, err)
	case errors.Is(err, zip.ErrChecksum):
		err = fmt.Errorf("%s fails its CRC-32 check: %w", z.what, err)
	}
	return n, err
}

// Close implements io.Closer.
func (z *zipMember) Close() error { return z.rc.Close() }

// ReadEchoReplay parses every frame of an .echoreplay (plain or zipped)
// held in b.
func ReadEchoReplay(b []byte) ([]*Frame, error) {
	var r io.Reader = bytes.NewReader(b)
	if isZip(b) {
		rc, err := OpenZipped(b, maxUnzipped)
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		r = rc
	}
	lr := NewLineReader(r)
	var out []*Frame
	for {
		l, _, off, err := lr.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		f, err := l.Frame()
		if err != nil {
			return out, &formats.Error{Format: EchoReplayName, Offset: off, What: fmt.Sprintf("line %d", lr.n), Err: err}
		}
		out = append(out, f)
	}
}

// AppendLine appends f as one .echoreplay line (LF-terminated).
func AppendLine(b []byte, f *Frame) ([]byte, error) {
	b = f.RecordedTime.UTC().AppendFormat(b, TimeLayout)
	b = append(b, '\t')
	js, err := json.Marshal(f)
	if err != nil {
		return b, err
	}
	b = append(b, js...)
	if f.Bones != nil {
		js, err = json.Marshal(f.Bones)
		if err != nil {
			return b, err
		}
		b = append(b, '\t')
		b = append(b, js...)
	}
	return append(b, '\n'), nil
}

// EchoReplayWriter writes frames as .echoreplay text, optionally zipped
// with one entry named Name (Spark's layout).
type EchoReplayWriter struct {
	w   io.Writer
	zw  *zip.Writer
	buf []byte
}

// NewEchoReplayWriter writes plain text to w, or a zip holding one entry
// called entry when zipped is true.
func NewEchoReplayWriter(w io.Writer, zipped bool, entry string) (*EchoReplayWriter, error) {
	ew := &EchoReplayWriter{w: w}
	if zipped {
		ew.zw = zip.NewWriter(w)
		fw, err := ew.zw.CreateHeader(&zip.FileHeader{Name: entry, Method: zip.Deflate})
		if err != nil {
			return nil, err
		}
		ew.w = fw
	}
	return ew, nil
}

// Write writes one frame.
func (ew *EchoReplayWriter) Write(f *Frame) error {
	var err error
	ew.buf, err = AppendLine(ew.buf[:0], f)
	if err != nil {
		return err
	}
	_, err = ew.w.Write(ew.buf)
	return err
}

// Close finishes the zip, if any.
func (ew *EchoReplayWriter) Close() error {
	if ew.zw != nil {
		return ew.zw.Close()
	}
	return nil
}
