package chunkenc

import (
	"bytes"
	"math/rand/v2"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/replayarchive/replay/formats/formatstest"
	"github.com/replayarchive/replay/formats/teehistorian"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
)

// symbols returns n bytes drawn from k symbols, the shape of a column of
// input fields.
func symbols(rng *rand.Rand, n, k int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.IntN(k) * 7)
	}
	return b
}

// TestLiteralsFrameDecodes: literals frames of every size class decode,
// with zstd's decoder, to what they were made of, and are smaller.
func TestLiteralsFrameDecodes(t *testing.T) {
	dec, err := zstd.NewReader(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	var c literalsCoder
	made := 0
	for _, n := range []int{minLiteralsFrame, 100, 255, 256, 257, 1023, 1024, 1025, 16383, 16384, 65535, 65536 + 256, 100_000, maxLiteralsFrame} {
		for _, k := range []int{2, 3, 17, 200} {
			src := symbols(rng, n, k)
			frame, ok := c.appendFrame([]byte("prefix"), src)
			if !bytes.HasPrefix(frame, []byte("prefix")) {
				t.Fatalf("n=%d k=%d: dst's bytes were changed", n, k)
			}
			frame = frame[len("prefix"):]
			if !ok {
				if len(frame) != 0 {
					t.Fatalf("n=%d k=%d: refused, but %d bytes appended", n, k, len(frame))
				}
				continue
			}
			made++
			if len(frame) >= n {
				t.Errorf("n=%d k=%d: frame of %d bytes is not smaller", n, k, len(frame))
			}
			got, err := dec.DecodeAll(frame, nil)
			if err != nil || !bytes.Equal(got, src) {
				t.Fatalf("n=%d k=%d: decoded %d bytes, %v", n, k, len(got), err)
			}
		}
	}
	if made < 40 {
		t.Errorf("%d frames made, want most of the 56 cases", made)
	}
}

// TestLiteralsFrameRefuses: what a literals frame cannot hold smaller is
// left to the encoder, with dst as it was.
func TestLiteralsFrameRefuses(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	random := make([]byte, 4096)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	var c literalsCoder
	for _, tc := range []struct {
		name string
		src  []byte
	}{
		{"too short", symbols(rng, minLiteralsFrame-1, 2)},
		{"too long", symbols(rng, maxLiteralsFrame+1, 2)},
		{"one byte repeated", bytes.Repeat([]byte{9}, 5000)},
		{"random bytes", random},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if out, ok := c.appendFrame([]byte("x"), tc.src); ok || string(out) != "x" {
				t.Errorf("ok %v, %d bytes", ok, len(out))
			}
		})
	}
}

// TestLiteralsFrameZstdCommand: the reference decoder, the zstd command,
// reads literals frames too (skipped where it is not installed, but not
// in CI, which installs it).
func TestLiteralsFrameZstdCommand(t *testing.T) {
	path, err := exec.LookPath("zstd")
	if err != nil && os.Getenv("CI") != "" {
		t.Fatal("CI is set but there is no zstd command (.ci/run installs it)")
	}
	if err != nil {
		t.Skip("no zstd command")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	var c literalsCoder
	for _, n := range []int{200, 1000, 5000, 70000, maxLiteralsFrame} {
		src := symbols(rng, n, 5)
		frame, ok := c.appendFrame(nil, src)
		if !ok {
			t.Fatalf("n=%d: no frame", n)
		}
		cmd := exec.Command(path, "-d", "-c", "-q")
		cmd.Stdin = bytes.NewReader(frame)
		got, err := cmd.Output()
		if err != nil || !bytes.Equal(got, src) {
			t.Fatalf("n=%d: zstd -d gave %d bytes, %v", n, len(got), err)
		}
	}
}

// FuzzLiteralsFrame: a literals frame of any bytes decodes to them.
func FuzzLiteralsFrame(f *testing.F) {
	f.Add(bytes.Repeat([]byte{1, 2, 3, 1, 1, 2}, 20))
	f.Add(bytes.Repeat([]byte{0, 0, 0, 1}, 400))
	dec, err := zstd.NewReader(nil)
	if err != nil {
		f.Fatal(err)
	}
	defer dec.Close()
	f.Fuzz(func(t *testing.T, src []byte) {
		var c literalsCoder
		frame, ok := c.appendFrame(nil, src)
		if !ok {
			return
		}
		got, err := dec.DecodeAll(frame, nil)
		if err != nil || !bytes.Equal(got, src) {
			t.Fatalf("decoded %d of %d bytes: %v", len(got), len(src), err)
		}
	})
}

// TestStreamChooser encodes the chunks of a generated game as a
// recording's compressor does: every blob decodes to its chunk; the
// probes find streams the literals frames win and streams the encoder
// wins; and the blobs are smaller than the encoder's alone.
func TestStreamChooser(t *testing.T) {
	dec := newDecoder(t)
	game := teehistoriangen.Must(t, teehistoriangen.Options{Duration: 4 * time.Minute, Seed: 13})
	rec := formatstest.Split(t, &teehistorian.Codec{ChunkSize: 16 << 10}, game)
	enc := newEncoder(t, StreamEncoderOptions())
	var ch Chooser
	var cols [][]byte
	var scratch []byte
	chosen, encoderOnly := 0, 0
	for i := range rec.ChunkIndex {
		native, resume, err := rec.ReadChunk(t.Context(), i)
		if err != nil {
			t.Fatal(err)
		}
		blob := EncodeColumns(enc, &ch, thColumns, &cols, &scratch, resume, native)
		got, gotResume, err := Decode(dec, thColumns, blob, int64(len(native)), Checksum(native), nil, true)
		if err != nil || !bytes.Equal(got, native) || !bytes.Equal(gotResume, resume) {
			t.Fatalf("chunk %d: decoded %d of %d bytes: %v", i, len(got), len(native), err)
		}
		chosen += len(blob)
		encoderOnly += len(EncodeColumns(enc, &Chooser{chunks: 1}, thColumns, &cols, &scratch, resume, native))
	}
	if len(rec.ChunkIndex) <= probeEvery {
		t.Fatalf("%d chunks: want more than one probe", len(rec.ChunkIndex))
	}
	lits := 0
	for _, l := range ch.useLits {
		if l {
			lits++
		}
	}
	if lits == 0 || lits >= 1+len(cols) {
		t.Errorf("literals frames for %d of %d streams: want some, not all", lits, 1+len(cols))
	}
	if chosen >= encoderOnly {
		t.Errorf("%d bytes with the chooser, %d with the encoder alone", chosen, encoderOnly)
	}
	t.Logf("%d chunks: %d bytes with the chooser (literals for %d streams), %d with the encoder alone", len(rec.ChunkIndex), chosen, lits, encoderOnly)
}
