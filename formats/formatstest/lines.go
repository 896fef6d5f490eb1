// A toy codec for tests of the archive and the ingest pipeline: a file is
// the line "LINES <session>\n" followed by lines "<tick> <text>\n" with
// increasing ticks. Chunks hold ChunkLines lines each; a line whose text
// starts with "cmd " becomes a command event.

package formatstest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/replayarchive/replay/formats"
)

// LinesName is the toy codec's format name.
const LinesName = "lines"

// Lines is the toy codec. ChunkLines is the lines per chunk (default 4).
type Lines struct{ ChunkLines int }

// Name implements formats.Codec.
func (Lines) Name() string { return LinesName }

// Detect implements formats.Codec.
func (Lines) Detect(head []byte) bool { return bytes.HasPrefix(head, []byte("LINES ")) }

// Split implements formats.Codec.
func (l Lines) Split(ctx context.Context, r io.Reader, w formats.Writer) (*formats.Metadata, error) {
	per := l.ChunkLines
	if per <= 0 {
		per = 4
	}
	br := bufio.NewReader(r)
	head, err := br.ReadBytes('\n')
	if err != nil || !bytes.HasPrefix(head, []byte("LINES ")) {
		return nil, formats.Errorf(LinesName, 0, "expected \"LINES <session>\\n\"")
	}
	meta := &formats.Metadata{Session: strings.TrimSpace(string(head[6:])), TickRate: 1}
	if err := w.Header(head); err != nil {
		return nil, err
	}
	var buf []byte
	var c formats.Chunk
	n, off, last := 0, int64(len(head)), int64(-1)
	flush := func() error {
		if n == 0 {
			return nil
		}
		c.Ticks = last - c.StartTick + 1
		err := w.Chunk(c, buf)
		buf, n = buf[:0], 0
		return err
	}
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		line, err := br.ReadBytes('\n')
		if err == io.EOF && len(line) == 0 {
			break
		}
		if err != nil {
			return nil, formats.Errorf(LinesName, off, "expected a line ending in \\n")
		}
		tickText, text, _ := strings.Cut(strings.TrimSuffix(string(line), "\n"), " ")
		tick, perr := strconv.ParseInt(tickText, 10, 64)
		if perr != nil || tick <= last {
			return nil, formats.Errorf(LinesName, off, "expected an increasing tick, got %q", tickText)
		}
		if n == 0 {
			c = formats.Chunk{StartTick: tick, Resume: []byte(tickText)}
		}
		if cmd, ok := strings.CutPrefix(text, "cmd "); ok {
			meta.Events = append(meta.Events, formats.Event{Tick: tick, Kind: formats.EventCommand, Text: cmd})
		}
		if name, ok := strings.CutPrefix(text, "join "); ok {
			meta.Players = append(meta.Players, formats.Player{Name: name})
		}
		buf = append(buf, line...)
		n++
		last = tick
		off += int64(len(line))
		if n == per {
			if err := flush(); err != nil {
				return nil, err
			}
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	meta.Ticks = last + 1
	return meta, nil
}

// Frames implements formats.Codec.
func (Lines) Frames(ctx context.Context, src formats.Source, r formats.Range, emit func(formats.Frame) error) error {
	return formats.EachChunk(ctx, src, r, func(_ int, _ formats.Chunk, native, _ []byte) error {
		for _, line := range strings.Split(strings.TrimSuffix(string(native), "\n"), "\n") {
			tickText, text, _ := strings.Cut(line, " ")
			tick, _ := strconv.ParseInt(tickText, 10, 64)
			if !r.Contains(tick) {
				continue
			}
			if err := emit(formats.Frame{Tick: tick, Type: "line", Data: text}); err != nil {
				return err
			}
		}
		return nil
	})
}

// Clip implements formats.Codec.
func (l Lines) Clip(ctx context.Context, src formats.Source, r formats.Range, w io.Writer) error {
	if _, err := w.Write(src.Header()); err != nil {
		return err
	}
	return l.Frames(ctx, src, r, func(f formats.Frame) error {
		_, err := fmt.Fprintf(w, "%d %s\n", f.Tick, f.Data)
		return err
	})
}

// LinesFile builds a toy file of n ticks for session, with a command every
// tenth tick and a join on tick 0.
func LinesFile(session string, n int) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "LINES %s\n", session)
	for i := 0; i < n; i++ {
		switch {
		case i == 0:
			fmt.Fprintf(&b, "%d join alice\n", i)
		case i%10 == 0:
			fmt.Fprintf(&b, "%d cmd kick %d\n", i, i)
		default:
			fmt.Fprintf(&b, "%d move %d\n", i, i*7)
		}
	}
	return b.Bytes()
}
