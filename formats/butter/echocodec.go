// This file is the "echoreplay" formats.Codec. A plain .echoreplay is
// split into chunks of whole lines (about 192 KiB each, tick = line
// index); a zipped one is a single precompressed chunk, because a zip
// cannot be cut into independently stored pieces without rewriting it.

package butter

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/internal/bounded"
)

// EchoReplayCodec is the .echoreplay codec.
type EchoReplayCodec struct {
	// ChunkSize is the target size of a plain chunk (0 means 192 KiB:
	// the archive stores a chunk as columns (echocolumns.go), which
	// shrink the more lines a chunk holds, while a seek decodes a whole
	// chunk; docs/formats/butter.md has the measured trade-off).
	ChunkSize int
}

// NewEchoReplay returns the .echoreplay codec.
func NewEchoReplay() *EchoReplayCodec { return &EchoReplayCodec{} }

var (
	_ formats.Codec    = (*EchoReplayCodec)(nil)
	_ formats.Exporter = (*EchoReplayCodec)(nil)
)

// EchoReplayName is the .echoreplay format's name as stored in manifests
// and used in errors.
const EchoReplayName = "echoreplay"

// maxZipped bounds a zipped .echoreplay Split holds in memory: the
// per-file budget.
const maxZipped = bounded.FileBudget

// Name implements formats.Codec.
func (*EchoReplayCodec) Name() string { return EchoReplayName }

var lineStart = regexp.MustCompile(`^\d{4}/\d{2}/\d{2} \d{2}[:.]\d{2}[:.]\d{2}(\.\d{1,7})?\t\s*\{`)

// Detect implements formats.Codec: a line starting with a timestamp, a TAB
// and a JSON object, or a zip whose first entry is named *.echoreplay.
func (*EchoReplayCodec) Detect(head []byte) bool {
	if isZip(head) {
		if len(head) < 30 {
			return false
		}
		n := int(head[26]) | int(head[27])<<8
		if 30+n > len(head) {
			return false
		}
		return strings.HasSuffix(strings.ToLower(string(head[30:30+n])), ".echoreplay")
	}
	head = bytes.TrimPrefix(head, []byte("\xEF\xBB\xBF"))
	return lineStart.Match(head)
}

func (c *EchoReplayCodec) chunkSize() int {
	if c.ChunkSize > 0 {
		return c.ChunkSize
	}
	return 192 << 10
}

// Split implements formats.Codec. Every line's timestamp and JSON are
// checked; a malformed line is an error naming its byte offset.
func (c *EchoReplayCodec) Split(ctx context.Context, r io.Reader, w formats.Writer) (*formats.Metadata, error) {
	br := newPeekReader(r)
	head, _ := br.peek(4)
	meta := &formats.Metadata{Attrs: map[string]string{}}
	mb := newMetaBuilder(meta)
	if isZip(head) {
		b, err := bounded.ReadAll(br, maxZipped, "zipped .echoreplay")
		if err != nil {
			return nil, &formats.Error{Format: EchoReplayName, Offset: 0, What: "reading the zip", Err: err}
		}
		rc, err := OpenZipped(b, maxUnzipped)
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		n, err := scanLines(ctx, rc, mb, meta, nil)
		if err != nil {
			return nil, err
		}
		meta.Attrs["zipped"] = "true"
		if err := w.Chunk(formats.Chunk{StartTick: 0, Ticks: n, Precompressed: true}, b); err != nil {
			return nil, err
		}
		mb.finish()
		return meta, nil
	}
	var chunk []byte
	var start int64
	var startTime *Frame
	flush := func(end int64) error {
		if len(chunk) == 0 {
			return nil
		}
		ch := formats.Chunk{StartTick: start, Ticks: end - start}
		if startTime != nil {
			ch.Time = startTime.RecordedTime.Sub(mb.first)
		}
		err := w.Chunk(ch, chunk)
		chunk, start, startTime = chunk[:0], end, nil
		return err
	}
	_, err := scanLines(ctx, br, mb, meta, func(tick int64, raw []byte, f *Frame) error {
		if f != nil && startTime == nil {
			startTime = f
		}
		chunk = append(chunk, raw...)
		end := tick
		if f != nil {
			end++
		}
		// a chunk holds at least one line with a tick, so start ticks
		// strictly increase
		if len(chunk) >= c.chunkSize() && end > start {
			return flush(end)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := flush(mb.n); err != nil {
		return nil, err
	}
	mb.finish()
	return meta, nil
}

// scanLines parses every line of r, feeding metadata and calling each
// (when not nil) with the line's tick, raw bytes and frame (nil for blank
// lines, which take no tick).
func scanLines(ctx context.Context, r io.Reader, mb *metaBuilder, meta *formats.Metadata, each func(tick int64, raw []byte, f *Frame) error) (int64, error) {
	sc := bufioScanner(r)
	var off int64
	var tick int64
	for sc.Scan() {
		if tick%256 == 0 {
			if err := ctx.Err(); err != nil {
				return tick, err
			}
		}
		raw := sc.Bytes()
		lineOff := off
		off += int64(len(raw))
		text := bytes.TrimRight(raw, "\r\n")
		if len(bytes.TrimSpace(text)) == 0 {
			if each != nil {
				if err := each(tick, raw, nil); err != nil {
					return tick, err
				}
			}
			continue
		}
		l, err := SplitLine(text)
		if err != nil {
			return tick, &formats.Error{Format: EchoReplayName, Offset: lineOff, What: fmt.Sprintf("line %d: %v", tick+1, err)}
		}
		f, err := l.Frame()
		if err != nil {
			return tick, &formats.Error{Format: EchoReplayName, Offset: lineOff, What: fmt.Sprintf("line %d", tick+1), Err: err}
		}
		if tick == 0 {
			meta.Session = f.SessionID
			meta.Map = f.MapName
			meta.Attrs["client_name"] = f.ClientName
			meta.Attrs["match_type"] = f.MatchType
			if f.PrivateMatch {
				meta.Attrs["match"] = "private"
			} else {
				meta.Attrs["match"] = "public"
			}
		}
		mb.add(tick, f)
		if each != nil {
			if err := each(tick, raw, f); err != nil {
				return tick, err
			}
		}
		tick++
	}
	if err := sc.Err(); err != nil {
		return tick, &formats.Error{Format: EchoReplayName, Offset: off, What: fmt.Sprintf("line %d", tick+1), Err: err}
	}
	return tick, nil
}

// rawLines calls each for every non-blank line of the stored chunks that
// cover rg, with its tick.
func (c *EchoReplayCodec) rawLines(ctx context.Context, src formats.Source, rg formats.Range, each func(tick int64, l Line) error) error {
	return formats.EachChunk(ctx, src, rg, func(_ int, ch formats.Chunk, native, _ []byte) error {
		var r io.Reader = bytes.NewReader(native)
		if ch.Precompressed {
			rc, err := OpenZipped(native, maxUnzipped)
			if err != nil {
				return err
			}
			defer rc.Close()
			r = rc
		}
		lr := NewLineReader(r)
		tick := ch.StartTick
		for {
			if tick%256 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			l, _, _, err := lr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return err
			}
			t := tick
			tick++
			if rg.Past(t) {
				return formats.ErrStop
			}
			if !rg.Contains(t) {
				continue
			}
			if err := each(t, l); err != nil {
				return err
			}
		}
		return nil
	})
}

// Frames implements formats.Codec: the stored session JSON of each line
// (with "recorded_time" added first), and a "bones" frame when the line
// has bones.
func (c *EchoReplayCodec) Frames(ctx context.Context, src formats.Source, r formats.Range, emit func(formats.Frame) error) error {
	var buf []byte
	return c.rawLines(ctx, src, r, func(tick int64, l Line) error {
		s := bytes.TrimSpace(l.Session)
		if len(s) < 2 || s[0] != '{' {
			return fmt.Errorf("%s: tick %d: session is not a JSON object", EchoReplayName, tick)
		}
		buf = append(buf[:0], `{"recorded_time":"`...)
		buf = l.Time.AppendFormat(buf, TimeLayout)
		buf = append(buf, '"')
		if body := bytes.TrimSpace(s[1:]); len(body) > 0 && body[0] != '}' {
			buf = append(buf, ',')
		}
		buf = append(buf, s[1:]...)
		if err := emit(formats.Frame{Tick: tick, Type: "frame", Data: rawJSON(bytes.Clone(buf))}); err != nil {
			return err
		}
		if b := bytes.TrimSpace(l.Bones); len(b) > 0 {
			return emit(formats.Frame{Tick: tick, Type: "bones", Data: rawJSON(bytes.Clone(b))})
		}
		return nil
	})
}

// rawJSON is stored JSON passed through as it is.
type rawJSON []byte

// MarshalJSON implements json.Marshaler.
func (r rawJSON) MarshalJSON() ([]byte, error) { return r, nil }

// Clip implements formats.Codec: the lines of r, as plain text,
// or zipped when the recording is a zipped .echoreplay.
func (c *EchoReplayCodec) Clip(ctx context.Context, src formats.Source, r formats.Range, w io.Writer) error {
	zipped := false
	for _, ch := range src.Chunks() {
		zipped = zipped || ch.Precompressed
	}
	var out io.Writer = w
	var ew *EchoReplayWriter
	if zipped {
		var err error
		if ew, err = NewEchoReplayWriter(w, true, "clip.echoreplay"); err != nil {
			return err
		}
		out = ew.w
	}
	var buf []byte
	err := c.rawLines(ctx, src, r, func(_ int64, l Line) error {
		buf = l.Time.AppendFormat(buf[:0], TimeLayout)
		buf = append(buf, '\t')
		buf = append(buf, l.Session...)
		if l.Bones != nil {
			buf = append(buf, '\t')
			buf = append(buf, l.Bones...)
		}
		buf = append(buf, '\n')
		_, err := out.Write(buf)
		return err
	})
	if err != nil {
		return err
	}
	if ew != nil {
		return ew.Close()
	}
	return nil
}

// ExportFormats implements formats.Exporter.
func (*EchoReplayCodec) ExportFormats() []string { return []string{Name, EchoReplayName} }

// Export implements formats.Exporter: "butter" encodes the frames of
// r with our writer (opts "keyframe-interval", default 300, and
// "compression", default gzip, as in Spark); "echoreplay" writes them
// re-serialised (opts "zip", "entry").
func (c *EchoReplayCodec) Export(ctx context.Context, src formats.Source, format string, r formats.Range, opts map[string]string, w io.Writer) error {
	return exportFrames(format, opts, w, func(emit func(*Frame) error) error {
		return c.rawLines(ctx, src, r, func(tick int64, l Line) error {
			f, err := l.Frame()
			if err != nil {
				return fmt.Errorf("%s: tick %d: %w", EchoReplayName, tick, err)
			}
			return emit(f)
		})
	})
}

// peekReader is a reader that can look at its first bytes.
type peekReader struct {
	r   io.Reader
	buf []byte
}

func newPeekReader(r io.Reader) *peekReader { return &peekReader{r: r} }

func (p *peekReader) peek(n int) ([]byte, error) {
	for len(p.buf) < n {
		b := make([]byte, n-len(p.buf))
		m, err := p.r.Read(b)
		p.buf = append(p.buf, b[:m]...)
		if err != nil {
			return p.buf, err
		}
	}
	return p.buf[:n], nil
}

// Read implements io.Reader.
func (p *peekReader) Read(b []byte) (int, error) {
	if len(p.buf) > 0 {
		n := copy(b, p.buf)
		p.buf = p.buf[n:]
		return n, nil
	}
	return p.r.Read(b)
}
