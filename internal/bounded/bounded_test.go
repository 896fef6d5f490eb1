package bounded

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/replayarchive/replay/internal/memtest"
)

func TestReadNLyingLength(t *testing.T) {
	in := bytes.Repeat([]byte{7}, 100)
	var got []byte
	var err error
	alloc := memtest.Allocated(func() { got, err = ReadN(bytes.NewReader(in), 1<<30, 1<<31, "record") })
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err = %v, want io.ErrUnexpectedEOF", err)
	}
	if !bytes.Equal(got, in) {
		t.Fatalf("got %d bytes, want the 100 that arrived", len(got))
	}
	if alloc > 1<<20 {
		t.Fatalf("a 1 GiB claim over 100 bytes allocated %d bytes", alloc)
	}
}

func TestReadNExactAndLimit(t *testing.T) {
	in := bytes.Repeat([]byte("abc"), 100_000)
	got, err := ReadN(bytes.NewReader(in), int64(len(in)), int64(len(in)), "x")
	if err != nil || !bytes.Equal(got, in) {
		t.Fatalf("exact read: %d bytes, %v", len(got), err)
	}
	if cap(got) > 2*len(in)+firstStep {
		t.Fatalf("buffer cap %d for %d bytes", cap(got), len(in))
	}
	_, err = ReadN(bytes.NewReader(in), 11, 10, "chunk 3")
	var le *LimitError
	if !errors.As(err, &le) || !errors.Is(err, ErrLimit) || le.Declared != 11 || !strings.Contains(err.Error(), "chunk 3") {
		t.Fatalf("over the limit: %v", err)
	}
	if _, err := ReadN(bytes.NewReader(in), -1, 10, "x"); err == nil {
		t.Fatal("negative size accepted")
	}
	buf := make([]byte, 2, 64)
	copy(buf, "hi")
	buf, err = AppendN(buf, strings.NewReader("there"), 5, 5, "x")
	if err != nil || string(buf) != "hithere" {
		t.Fatalf("AppendN = %q, %v", buf, err)
	}
}

func TestReadAll(t *testing.T) {
	in := bytes.Repeat([]byte{1}, 200_000)
	got, err := ReadAll(bytes.NewReader(in), 200_000, "x")
	if err != nil || len(got) != len(in) {
		t.Fatalf("at the limit: %d, %v", len(got), err)
	}
	_, err = ReadAll(bytes.NewReader(in), 199_999, "member")
	var le *LimitError
	if !errors.As(err, &le) || le.Declared != -1 || le.Limit != 199_999 {
		t.Fatalf("past the limit: %v", err)
	}
	got, err = ReadAll(strings.NewReader(""), 0, "x")
	if err != nil || len(got) != 0 {
		t.Fatalf("empty: %q, %v", got, err)
	}
}

func TestReaderFailsPastLimit(t *testing.T) {
	r := NewReader(strings.NewReader("0123456789"), 10, "entry")
	b, err := io.ReadAll(r)
	if err != nil || len(b) != 10 {
		t.Fatalf("exactly the limit: %q, %v", b, err)
	}
	r = NewReader(strings.NewReader("0123456789x"), 10, "zip member \"a\"")
	b, err = io.ReadAll(r)
	if !errors.Is(err, ErrLimit) || len(b) != 10 || !strings.Contains(err.Error(), "zip member") {
		t.Fatalf("one past: %q, %v", b, err)
	}
}

func TestZstdMaxOutput(t *testing.T) {
	for _, c := range []struct{ n, want int64 }{{0, 0}, {5, 0}, {6, 128 << 10}, {9, 128 << 10}, {10, 256 << 10}, {100, 24 * 128 << 10}} {
		if got := ZstdMaxOutput(c.n); got != c.want {
			t.Errorf("ZstdMaxOutput(%d) = %d, want %d", c.n, got, c.want)
		}
	}
}

// TestZstdMaxOutputHoldsForZeros checks the bound against zstd's best
// case, a long run of zeros, at the fastest and the strongest level.
func TestZstdMaxOutputHoldsForZeros(t *testing.T) {
	zeros := make([]byte, 8<<20)
	for _, lvl := range []zstd.EncoderLevel{zstd.SpeedFastest, zstd.SpeedBestCompression} {
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(lvl), zstd.WithEncoderConcurrency(1))
		if err != nil {
			t.Fatal(err)
		}
		c := enc.EncodeAll(zeros, nil)
		enc.Close()
		if max := ZstdMaxOutput(int64(len(c))); max < int64(len(zeros)) {
			t.Fatalf("level %v: %d compressed bytes hold %d, bound says at most %d", lvl, len(c), len(zeros), max)
		}
	}
}
