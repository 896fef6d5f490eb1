// Tests of hostile input: zip bombs, lying lengths and
// decompression bombs end with a clear error, quickly, and without the
// memory their sizes claim.

package butter

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/replayarchive/replay/formats/formatstest"
	"github.com/replayarchive/replay/internal/bounded"
	"github.com/replayarchive/replay/internal/memtest"
)

// rawZip returns a zip of one deflated member named name whose
// directory declares size bytes, whatever the deflate stream holds.
func rawZip(t testing.TB, name string, deflated []byte, size uint64) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	w, err := zw.CreateRaw(&zip.FileHeader{Name: name, Method: zip.Deflate,
		CompressedSize64: uint64(len(deflated)), UncompressedSize64: size})
	if err != nil {
		t.Fatal(err)
	}
	w.Write(deflated)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// deflateNewlines deflates n newlines: what a 82-second bomb was made of.
func deflateNewlines(t testing.TB, n int) []byte {
	var b bytes.Buffer
	fw, _ := flate.NewWriter(&b, flate.BestCompression)
	line := bytes.Repeat([]byte{'\n'}, 1<<20)
	for i := 0; i < n>>20; i++ {
		fw.Write(line)
	}
	fw.Close()
	return b.Bytes()
}

// checkBomb splits native with the echoreplay codec and wants an error
// containing every one of want, in under 5 s and 64 MiB of peak heap.
func checkBomb(t *testing.T, native []byte, want ...string) {
	t.Helper()
	var err error
	start := time.Now()
	peak := memtest.Peak(func() { _, err = formatstest.TrySplit(NewEchoReplay(), native) })
	took := time.Since(start)
	if err == nil {
		t.Fatal("bomb accepted")
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
	if took > 5*time.Second || peak > 64<<20 {
		t.Errorf("bomb took %v and held %d MiB", took, peak>>20)
	}
	t.Logf("%v, %.1f MiB peak heap: %v", took.Round(time.Millisecond), float64(peak)/(1<<20), err)
}

func TestZipBombDeclared(t *testing.T) {
	// a member declaring 1 TiB is refused before a byte is inflated
	z := rawZip(t, "bomb.echoreplay", deflateNewlines(t, 1<<20), 1<<40)
	checkBomb(t, z, `zip member "bomb.echoreplay"`, "declares 1099511627776 bytes", "limit of 268435456")
}

func TestZipBombLyingSize(t *testing.T) {
	// a member declaring 100 bytes that inflates to 32 MiB of newlines
	z := rawZip(t, "liar.echoreplay", deflateNewlines(t, 32<<20), 100)
	checkBomb(t, z, `zip member "liar.echoreplay"`, "more than its declared 100 bytes")
}

func TestZippedMemberLimit(t *testing.T) {
	// OpenZipped's own limit, below an honest declared size
	var text []byte
	for _, fr := range exampleFrames(t, 3) {
		text, _ = AppendLine(text, fr)
	}
	_, err := OpenZipped(zipped(t, text), 1000)
	if !errors.Is(err, bounded.ErrLimit) || !strings.Contains(err.Error(), "limit of 1000") {
		t.Fatalf("err = %v", err)
	}
	rc, err := OpenZipped(zipped(t, text), int64(len(text)))
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	frames := 0
	for lr := NewLineReader(rc); ; frames++ {
		if _, _, _, err := lr.Next(); err != nil {
			break
		}
	}
	if frames != 3 {
		t.Fatalf("read %d frames at exactly the limit, want 3", frames)
	}
}

// butterWithChunk returns a .butter file of the example header with one
// chunk of the given declared size and bytes.
func butterWithChunk(t testing.TB, c Compression, declared uint32, chunk []byte) []byte {
	good := writeFrames(t, exampleFrames(t, 2), WriterOptions{Compression: c})
	h, err := ParseFileHeader(good)
	if err != nil {
		t.Fatal(err)
	}
	b := bytes.Clone(good[:h.HeaderLen])
	b = appendU32(b, 1)
	b = appendU32(b, declared)
	return append(b, chunk...)
}

func TestButterLyingChunkSize(t *testing.T) {
	// 100 bytes of chunk that claim 256 MiB: kept as a truncated chunk
	// with a warning, never a 256 MiB buffer
	b := butterWithChunk(t, CompressNone, bounded.FileBudget, bytes.Repeat([]byte{0xFC}, 100))
	var err error
	var rec *formatstest.Recording
	peak := memtest.Peak(func() { rec, err = formatstest.TrySplit(New(), b) })
	if peak > 8<<20 {
		t.Fatalf("a lying chunk size held %d MiB", peak>>20)
	}
	if err == nil && (rec == nil || len(rec.Metadata.Warnings) == 0) {
		t.Fatal("a chunk cut short left no warning")
	}
	// past the budget: refused by the header parser
	b = butterWithChunk(t, CompressNone, bounded.FileBudget+1, nil)
	if _, err := formatstest.TrySplit(New(), b); err == nil || !strings.Contains(err.Error(), "chunk size up to") {
		t.Fatalf("chunk size past the budget: %v", err)
	}
}

func TestButterDecompressionBombs(t *testing.T) {
	// the codec's limit scaled down to 8 MiB so the test stays fast; the
	// default (maxChunkPayload, 64 MiB) takes the same path
	const limit = 8 << 20
	codec := &Codec{Options: DecodeOptions{MaxChunkPayload: limit}}
	zeros := make([]byte, 3*limit)
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	zw.Write(zeros)
	zw.Close()
	enc, _ := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	zb := enc.EncodeAll(zeros, nil)
	enc.Close()
	zeros = nil
	for _, c := range []struct {
		comp  Compression
		chunk []byte
	}{{CompressGzip, gz.Bytes()}, {CompressZstd3, zb}} {
		b := butterWithChunk(t, c.comp, uint32(len(c.chunk)), c.chunk)
		var err error
		peak := memtest.Peak(func() { _, err = formatstest.TrySplit(codec, b) })
		if err == nil || !strings.Contains(err.Error(), "limit of 8388608") {
			t.Errorf("%v bomb: %v", c.comp, err)
		}
		// the payload read up to the limit (1.5 times it while the buffer
		// grows) plus zstd's window (at most the limit)
		if peak > 3*limit+4<<20 {
			t.Errorf("%v bomb held %d MiB", c.comp, peak>>20)
		}
		t.Logf("%v bomb (%d bytes): %.1f MiB peak heap: %v", c.comp, len(c.chunk), float64(peak)/(1<<20), err)
	}
}

func TestZstdLyingWindow(t *testing.T) {
	// a few bytes declaring a 64 MiB window and no content size: refused
	// by the bound on what those bytes could hold, not by allocating the
	// window
	frame := []byte{
		0x28, 0xB5, 0x2F, 0xFD, // magic
		0x00,             // no content size, not single-segment, no checksum
		16 << 3,          // window 2^(10+16) = 64 MiB
		0x21, 0x00, 0x00, // last block, raw, 4 bytes
		't', 'i', 'n', 'y',
	}
	var h zstd.Header
	if err := h.Decode(frame); err != nil || h.WindowSize != 64<<20 {
		t.Fatalf("hand-made frame: %v, window %d", err, h.WindowSize)
	}
	var err error
	peak := memtest.Peak(func() { _, err = decompressChunk(frame, CompressZstd3, maxChunkPayload) })
	if err == nil {
		t.Fatal("lying window accepted")
	}
	if peak > 4<<20 {
		t.Fatalf("a %d-byte frame declaring a 64 MiB window held %d MiB", len(frame), peak>>20)
	}
	t.Log(err)
}
