package chunkenc

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/teehistorian"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
)

// thColumns is the teehistorian codec's column transform, which the tests
// of streams blobs use.
var thColumns formats.Columnar = teehistorian.New()

// newEncoder returns an encoder made with opts (EncoderOptions or
// StreamEncoderOptions, as the archive makes them).
func newEncoder(tb testing.TB, opts []zstd.EOption) *zstd.Encoder {
	tb.Helper()
	enc, err := zstd.NewWriter(nil, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return enc
}

// newDecoder returns a decoder as the archive makes it, closed at the end
// of the test.
func newDecoder(tb testing.TB) *zstd.Decoder {
	tb.Helper()
	dec, err := zstd.NewReader(nil, DecoderOptions()...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(dec.Close)
	return dec
}

// goldenStreamsBlob returns a streams blob written by the layout's first
// version (892f2ef; resume state "resume state") and its native bytes:
// teehistorian records of every type and a byte the syntax does not
// explain.
func goldenStreamsBlob(t *testing.T) (blob, native []byte) {
	t.Helper()
	blob, err := os.ReadFile("testdata/streams-v1.blob")
	if err != nil {
		t.Fatal(err)
	}
	native, err = os.ReadFile("testdata/streams-v1.native")
	if err != nil {
		t.Fatal(err)
	}
	return blob, native
}

// TestStreamsBlobGolden reads a streams blob written before the column
// transform moved to the codec (in the record-order layout), and encodes
// its chunk again: the same streams in the same order, each stored the
// same way (zstd or not), but for the position deltas, which the codec
// now groups by player, and the layout stream it adds last. (The zstd
// frames themselves are not compared: the encoder's level and version may
// change them.)
func TestStreamsBlobGolden(t *testing.T) {
	dec := newDecoder(t)
	blob, native := goldenStreamsBlob(t)
	got, resume, err := Decode(dec, thColumns, blob, int64(len(native)), Checksum(native), nil, true)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, native) || string(resume) != "resume state" {
		t.Fatalf("decoded %d bytes, resume %q: want the %d native bytes and \"resume state\"", len(got), resume, len(native))
	}
	again := EncodeColumns(newEncoder(t, StreamEncoderOptions()), new(Chooser), thColumns, new([][]byte), new([]byte), []byte("resume state"), native)
	if !bytes.Equal(again[:2], blob[:2]) {
		t.Fatalf("blob starts % x, the stored one % x", again[:2], blob[:2])
	}
	want, wantZ := blobStreamsOf(t, dec, blob)
	have, haveZ := blobStreamsOf(t, dec, again)
	if len(have) != 19 || len(want) != 18 {
		t.Fatalf("%d streams, the stored blob %d (want 19 and 18)", len(have), len(want))
	}
	if string(have[18]) != "\x01" {
		t.Errorf("layout stream %x, want 01 (by player)", have[18])
	}
	for i := range want {
		if i == 2 || i == 3 { // dx and dy (after the resume state and the types)
			if len(have[i]) != len(want[i]) {
				t.Errorf("stream %d: %d bytes, the stored blob's %d", i, len(have[i]), len(want[i]))
			}
			continue
		}
		if !bytes.Equal(have[i], want[i]) || haveZ[i] != wantZ[i] {
			t.Errorf("stream %d: %d bytes (zstd %v), the stored blob's %d (zstd %v)", i, len(have[i]), haveZ[i], len(want[i]), wantZ[i])
		}
	}
}

// blobStreamsOf returns the decoded streams of a streams blob and which of
// them are stored as zstd frames, read independently of decodeStreams.
func blobStreamsOf(t *testing.T, dec *zstd.Decoder, blob []byte) (streams [][]byte, zstd []bool) {
	t.Helper()
	r := VarintReader{B: blob, Off: 2}
	k := int(r.Uvarint("count"))
	stored := make([]int, k)
	for i := range k {
		v := r.Uvarint("size")
		stored[i] = int(v >> 1)
		zstd = append(zstd, v&1 != 0)
		if v&1 != 0 {
			r.Uvarint("native size")
		}
	}
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	off := r.Off
	for i := range k {
		s := blob[off : off+stored[i]]
		off += stored[i]
		if zstd[i] {
			var err error
			if s, err = dec.DecodeAll(s, nil); err != nil {
				t.Fatalf("stream %d: %v", i, err)
			}
		}
		streams = append(streams, s)
	}
	if off != len(blob) {
		t.Fatalf("%d bytes after the streams", len(blob)-off)
	}
	return streams, zstd
}

func TestStreamsBlobRoundTrip(t *testing.T) {
	dec := newDecoder(t)
	enc := newEncoder(t, StreamEncoderOptions())
	game := teehistoriangen.Must(t, teehistoriangen.Options{Duration: 10 * time.Second, Seed: 9})
	var cols [][]byte
	for _, tc := range []struct {
		name           string
		resume, native []byte
	}{
		{"empty", nil, nil},
		{"tiny", []byte{1}, []byte{2}},
		{"game", bytes.Repeat([]byte("resume"), 50), game},
	} {
		t.Run(tc.name, func(t *testing.T) {
			blob := EncodeColumns(enc, new(Chooser), thColumns, &cols, new([]byte), tc.resume, tc.native)
			if blob[0] != FlagStreams || blob[1] != transformColumns {
				t.Fatalf("blob starts % x", blob[:2])
			}
			for _, dst := range [][]byte{nil, make([]byte, 10, 100)} {
				native, resume, err := Decode(dec, thColumns, blob, int64(len(tc.native)), Checksum(tc.native), dst, true)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(native, tc.native) || !bytes.Equal(resume, tc.resume) {
					t.Fatalf("round trip changed the chunk or its resume state")
				}
			}
		})
	}
	// Blobs of the layout before streams are still read.
	var scratch []byte
	native := []byte("old layout")
	for _, pre := range []bool{false, true} {
		blob := Encode(newEncoder(t, EncoderOptions()), &scratch, []byte("r"), native, pre)
		got, resume, err := Decode(dec, thColumns, blob, int64(len(native)), Checksum(native), nil, true)
		if err != nil || !bytes.Equal(got, native) || string(resume) != "r" {
			t.Fatalf("precompressed=%v: %q %q %v", pre, got, resume, err)
		}
	}
}

func TestStreamsBlobErrors(t *testing.T) {
	dec := newDecoder(t)
	blob, native := goldenStreamsBlob(t)
	n, sum := int64(len(native)), Checksum(native)
	unknown := bytes.Clone(blob)
	unknown[1] = 7
	if _, _, err := Decode(dec, thColumns, unknown, n, sum, nil, true); !errors.Is(err, errUnknownTransform) || !strings.Contains(err.Error(), "transform 7") {
		t.Fatalf("unknown transform: %v", err)
	}
	// Without a transform (the archive names the format: its
	// TestStreamsBlobNeedsColumns).
	if _, _, err := Decode(dec, nil, blob, n, sum, nil, true); !errors.Is(err, ErrNoColumns) {
		t.Fatalf("no columns: %v", err)
	}
	// Every truncation fails; every single-byte change fails cleanly or,
	// where zstd ignores the byte, still gives the chunk (the CRC-32C
	// catches what the layout does not): never other bytes, never a panic.
	for k := range len(blob) {
		if _, _, err := Decode(dec, thColumns, blob[:k], n, sum, nil, true); err == nil {
			t.Fatalf("truncated to %d bytes: no error", k)
		}
	}
	failed := 0
	for i := range blob {
		bad := bytes.Clone(blob)
		bad[i] ^= 0x55
		got, _, err := Decode(dec, thColumns, bad, n, sum, nil, true)
		if err == nil && !bytes.Equal(got, native) {
			t.Fatalf("byte %d changed: other bytes returned without an error", i)
		}
		if err != nil {
			failed++
		}
	}
	if failed < len(blob)*3/4 { // the resume state is not under the CRC, as before
		t.Errorf("only %d of %d changed bytes were noticed", failed, len(blob))
	}
}
