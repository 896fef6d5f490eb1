package server

import (
	"context"
	"errors"
	"io"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/formats"
)

// recordingReader reads a recording's native bytes with random access:
// header, chunks and trailer at their offsets in the native file. A read
// decompresses only the chunk it lands in (each verified by its CRC), so a
// Range request costs the chunks it covers, not the file.
type recordingReader struct {
	ctx  context.Context
	rec  *replay.Recording
	size int64
	pos  int64
	// The last chunk read, kept for the reads that follow it.
	cur    int
	native []byte
}

func newRecordingReader(ctx context.Context, rec *replay.Recording) *recordingReader {
	return &recordingReader{ctx: ctx, rec: rec, size: rec.Manifest().NativeBytes, cur: -1}
}

func (r *recordingReader) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		off += r.pos
	case io.SeekEnd:
		off += r.size
	default:
		return 0, errors.New("seek: bad whence")
	}
	if off < 0 {
		return 0, errors.New("seek: negative position")
	}
	r.pos = off
	return off, nil
}

func (r *recordingReader) Read(p []byte) (int, error) {
	if r.pos >= r.size {
		return 0, io.EOF
	}
	header := r.rec.Header()
	if r.pos < int64(len(header)) {
		n := copy(p, header[r.pos:])
		r.pos += int64(n)
		return n, nil
	}
	cs := r.rec.Chunks()
	i := chunkAt(cs, r.pos)
	if i < 0 {
		trailer := r.rec.Trailer()
		start := r.size - int64(len(trailer))
		if r.pos < start {
			return 0, errors.New("recording: gap between the chunks and the trailer")
		}
		n := copy(p, trailer[r.pos-start:])
		r.pos += int64(n)
		return n, nil
	}
	if i != r.cur {
		native, _, err := r.rec.ReadChunk(r.ctx, i)
		if err != nil {
			return 0, err
		}
		r.cur, r.native = i, native
	}
	n := copy(p, r.native[r.pos-cs[i].Offset:])
	r.pos += int64(n)
	return n, nil
}

// chunkAt returns the chunk holding byte offset off, or -1.
func chunkAt(cs []formats.Chunk, off int64) int {
	lo, hi := 0, len(cs)
	for lo < hi {
		mid := (lo + hi) / 2
		if cs[mid].Offset+cs[mid].Length <= off {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo < len(cs) && cs[lo].Offset <= off {
		return lo
	}
	return -1
}
