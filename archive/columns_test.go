package archive

import (
	"bytes"
	"context"
	"errors"
	"hash/crc32"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/all"
	"github.com/replayarchive/replay/formats/teehistorian"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
	bolt "go.etcd.io/bbolt"
)

// thColumns is the teehistorian codec's column transform, which the
// archive tests of streams blobs use (replay.Open sets it from the codecs).
var thColumns formats.Columnar = teehistorian.New()

// thColumnSet is the Options.Columns of an archive with thColumns.
var thColumnSet = map[string]formats.Columnar{"teehistorian": thColumns}

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
// transform moved to the codec, and encodes its chunk again into the same
// streams, in the same order, each stored the same way (zstd or not): the
// on-disk layout is unchanged. (The zstd frames themselves are not
// compared: the encoder's level and version may change them.)
func TestStreamsBlobGolden(t *testing.T) {
	a := openTest(t, "", Options{Columns: thColumnSet})
	blob, native := goldenStreamsBlob(t)
	got, resume, err := a.decodeBlob(blob, ChunkEntry{Length: int64(len(native)), CRC: crc32c(native)}, "teehistorian")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, native) || string(resume) != "resume state" {
		t.Fatalf("decoded %d bytes, resume %q: want the %d native bytes and \"resume state\"", len(got), resume, len(native))
	}
	enc, err := newColumnEncoder()
	if err != nil {
		t.Fatal(err)
	}
	again := encodeStreamsBlob(enc, new(streamChooser), thColumns, new([][]byte), new([]byte), []byte("resume state"), native)
	if !bytes.Equal(again[:2], blob[:2]) {
		t.Fatalf("blob starts % x, the stored one % x", again[:2], blob[:2])
	}
	want, wantZ := blobStreamsOf(t, a, blob)
	have, haveZ := blobStreamsOf(t, a, again)
	if len(have) != len(want) || len(want) != 18 {
		t.Fatalf("%d streams, the stored blob %d (want 18)", len(have), len(want))
	}
	for i := range want {
		if !bytes.Equal(have[i], want[i]) || haveZ[i] != wantZ[i] {
			t.Errorf("stream %d: %d bytes (zstd %v), the stored blob's %d (zstd %v)", i, len(have[i]), haveZ[i], len(want[i]), wantZ[i])
		}
	}
}

// blobStreamsOf returns the decoded streams of a streams blob and which of
// them are stored as zstd frames, read independently of decodeStreamsBlob.
func blobStreamsOf(t *testing.T, a *Archive, blob []byte) (streams [][]byte, zstd []bool) {
	t.Helper()
	r := tableReader{b: blob, off: 2}
	k := int(r.uvarint("count"))
	stored := make([]int, k)
	for i := range k {
		v := r.uvarint("size")
		stored[i] = int(v >> 1)
		zstd = append(zstd, v&1 != 0)
		if v&1 != 0 {
			r.uvarint("native size")
		}
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	off := r.off
	for i := range k {
		s := blob[off : off+stored[i]]
		off += stored[i]
		if zstd[i] {
			var err error
			if s, err = a.dec.DecodeAll(s, nil); err != nil {
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
	a := openTest(t, "", Options{Columns: thColumnSet})
	enc, err := newColumnEncoder()
	if err != nil {
		t.Fatal(err)
	}
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
			blob := encodeStreamsBlob(enc, new(streamChooser), thColumns, &cols, new([]byte), tc.resume, tc.native)
			if blob[0] != blobStreams || blob[1] != transformColumns {
				t.Fatalf("blob starts % x", blob[:2])
			}
			e := ChunkEntry{Length: int64(len(tc.native)), CRC: crc32c(tc.native)}
			for _, dst := range [][]byte{nil, make([]byte, 10, 100)} {
				native, resume, err := a.decodeBlobInto(blob, e, "teehistorian", dst)
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
		blob := a.encodeBlob(&scratch, []byte("r"), native, pre)
		got, resume, err := a.decodeBlob(blob, ChunkEntry{Length: int64(len(native)), CRC: crc32c(native)}, "teehistorian")
		if err != nil || !bytes.Equal(got, native) || string(resume) != "r" {
			t.Fatalf("precompressed=%v: %q %q %v", pre, got, resume, err)
		}
	}
}

func TestStreamsBlobErrors(t *testing.T) {
	a := openTest(t, "", Options{Columns: thColumnSet})
	blob, native := goldenStreamsBlob(t)
	const th = "teehistorian"
	e := ChunkEntry{Length: int64(len(native)), CRC: crc32c(native)}
	unknown := bytes.Clone(blob)
	unknown[1] = 7
	if _, _, err := a.decodeBlob(unknown, e, th); !errors.Is(err, errUnknownTransform) || !strings.Contains(err.Error(), "transform 7") {
		t.Fatalf("unknown transform: %v", err)
	}
	// A format without a transform, and an archive opened without any.
	if _, _, err := a.decodeBlob(blob, e, "vtx"); !errors.Is(err, errNoColumns) || !strings.Contains(err.Error(), `format "vtx"`) {
		t.Fatalf("format without columns: %v", err)
	}
	if _, _, err := openTest(t, "", Options{}).decodeBlob(blob, e, th); !errors.Is(err, errNoColumns) || !strings.Contains(err.Error(), `format "teehistorian"`) {
		t.Fatalf("archive without columns: %v", err)
	}
	// Every truncation fails; every single-byte change fails cleanly or,
	// where zstd ignores the byte, still gives the chunk (the CRC-32C
	// catches what the layout does not): never other bytes, never a panic.
	for n := range len(blob) {
		if _, _, err := a.decodeBlob(blob[:n], e, th); err == nil {
			t.Fatalf("truncated to %d bytes: no error", n)
		}
	}
	failed := 0
	for i := range blob {
		bad := bytes.Clone(blob)
		bad[i] ^= 0x55
		got, _, err := a.decodeBlob(bad, e, th)
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

// TestTeehistorianChunksAreColumns ingests a generated game through the
// codec: its chunks are stored as record columns, export is byte-identical,
// and Check with ReadData verifies them.
func TestTeehistorianChunksAreColumns(t *testing.T) {
	a := openTest(t, "", Options{Columns: thColumnSet})
	game := teehistoriangen.Must(t, teehistoriangen.Options{Duration: 2 * time.Minute, Seed: 11})
	m := ingestWith(t, a, all.ByName("teehistorian"), game, nil).Manifest
	if len(m.Chunks) < 2 {
		t.Fatalf("%d chunks: want several", len(m.Chunks))
	}
	streams := 0
	err := a.viewShard(m.Shard, func(tx *bolt.Tx) error {
		for _, c := range m.Chunks {
			if v := tx.Bucket(bucketChunks).Get(chunkKey(m.ID, c.StartTick)); len(v) > 0 && v[0] == blobStreams {
				streams++
			}
		}
		return nil
	})
	if err != nil || streams != len(m.Chunks) {
		t.Fatalf("%d of %d chunks stored as streams (%v)", streams, len(m.Chunks), err)
	}
	if got := export(t, a, m.ID); !bytes.Equal(got, game) {
		t.Fatal("export differs from the ingested file")
	}
	// ReadChunk reuses its buffers: what it returned must not change
	// under later reads.
	rec, err := a.Open(m.ID)
	if err != nil {
		t.Fatal(err)
	}
	type read struct{ native, resume, resumeThen []byte }
	var reads []read
	for range 2 {
		for i := range m.Chunks {
			native, resume, err := rec.ReadChunk(context.Background(), i)
			if err != nil {
				t.Fatal(err)
			}
			reads = append(reads, read{native, resume, bytes.Clone(resume)})
		}
	}
	for k, r := range reads {
		c := m.Chunks[k%len(m.Chunks)]
		if !bytes.Equal(r.native, game[c.Offset:c.Offset+c.Length]) || !bytes.Equal(r.resume, r.resumeThen) {
			t.Fatalf("read %d (chunk %d) changed after later reads", k, k%len(m.Chunks))
		}
	}
	rep, err := a.Check(context.Background(), CheckOptions{ReadData: true})
	if err != nil || !rep.OK() {
		t.Fatalf("check: %+v %v", rep, err)
	}
}

func crc32c(b []byte) uint32 { return crc32.Checksum(b, crcTable) }

// slowWriter keeps what is written to it, taking a millisecond per write:
// a writer the export's decoding workers always run ahead of.
type slowWriter struct{ bytes.Buffer }

func (w *slowWriter) Write(b []byte) (int, error) {
	time.Sleep(time.Millisecond)
	return w.Buffer.Write(b)
}

// TestExportManyChunks exports a recording of many more chunks than a
// whole export has buffers (exportBuffers), to a slow writer and to a
// fast one: the decoders wait for buffers to come back, and every byte
// arrives in order.
func TestExportManyChunks(t *testing.T) {
	a := openTest(t, "", Options{Columns: thColumnSet})
	game := teehistoriangen.Must(t, teehistoriangen.Options{Duration: 15 * time.Minute, Seed: 12})
	m := ingestWith(t, a, all.ByName("teehistorian"), game, nil).Manifest
	if len(m.Chunks) < 4*exportBuffers {
		t.Fatalf("%d chunks: want many more than %d", len(m.Chunks), exportBuffers)
	}
	rec, err := a.Open(m.ID)
	if err != nil {
		t.Fatal(err)
	}
	var slow slowWriter
	if _, err := rec.WriteTo(context.Background(), &slow); err != nil || !bytes.Equal(slow.Bytes(), game) {
		t.Fatalf("export to a slow writer: %d of %d bytes, %v", slow.Len(), len(game), err)
	}
	if got := export(t, a, m.ID); !bytes.Equal(got, game) {
		t.Fatal("export differs from the ingested file")
	}
}
