package archive

import (
	"bytes"
	"context"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/replayarchive/replay/formats/all"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
	bolt "go.etcd.io/bbolt"
)

// thRecords builds a teehistorian record stream from varints and raw
// bytes: ints are written as canonical varints, []byte as they are.
func thRecords(parts ...any) []byte {
	var b []byte
	for _, p := range parts {
		switch v := p.(type) {
		case int:
			b = appendTHVarint(b, int32(v))
		case []byte:
			b = append(b, v...)
		case string:
			b = append(append(b, v...), 0)
		}
	}
	return b
}

// appendTHVarint is the Teeworlds varint (formats/teehistorian varint.go).
func appendTHVarint(b []byte, v int32) []byte {
	u := uint32(v)
	var first byte
	if v < 0 {
		first = 0x40
		u = ^u
	}
	first |= byte(u & 0x3f)
	u >>= 6
	for u != 0 {
		b = append(b, first|0x80)
		first = byte(u & 0x7f)
		u >>= 7
	}
	return append(b, first)
}

func TestColumnsRoundTrip(t *testing.T) {
	uuid16 := bytes.Repeat([]byte{0xab}, 16)
	rng := rand.New(rand.NewPCG(3, 4))
	random := make([]byte, 4096)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	every := thRecords(
		thNew, 3, 100, -200, // PLAYER_NEW
		3, 5, -7, // PLAYER_DIFF
		thInNew, 3, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
		thInDiff, 3, 0, 0, 1, 0, 0, 0, 0, 0, 0, -1,
		thTickSkip, 4,
		thMessage, 3, 4, []byte{1, 2, 0, 3},
		thJoin, 3,
		thDrop, 3, "timeout",
		thCommand, 3, 1, "say", 2, "hello", "world",
		thEx, uuid16, 2, []byte{9, 9},
		thOld, 3,
		thFinish,
	)
	var game bytes.Buffer
	if err := teehistoriangen.Generate(&game, teehistoriangen.Options{Duration: 20 * time.Second, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	body := game.Bytes()[16+bytes.IndexByte(game.Bytes()[16:], 0)+1:]
	for _, tc := range []struct {
		name     string
		native   []byte
		wantTail int // bytes the syntax cannot explain
	}{
		{"empty", nil, 0},
		{"every record type", every, 0},
		{"generated game", body, 0},
		{"overlong varints", []byte{0x81, 0x80, 0x00, 0x85, 0x80, 0x80, 0x80, 0xf0, 0x02}, 0},
		{"truncated varint", append(bytes.Clone(every), 0x80), 1},
		{"truncated command", every[:len(every)-30], 0}, // wantTail checked below: nonzero
		{"unknown record type", append(bytes.Clone(every), appendTHVarint(nil, -12)...), 1},
		{"random bytes", random, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cols := splitColumns(tc.native, nil)
			if len(cols) != numCols {
				t.Fatalf("%d streams", len(cols))
			}
			got, err := joinColumns(cols, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tc.native) {
				t.Fatalf("round trip changed the bytes: %d in, %d out", len(tc.native), len(got))
			}
			tail := len(cols[colTail])
			switch {
			case tc.name == "truncated command":
				if tail == 0 {
					t.Error("a truncated record left no tail")
				}
			case tc.wantTail >= 0 && tail != tc.wantTail:
				t.Errorf("tail %d bytes, want %d", tail, tc.wantTail)
			}
		})
	}
}

func TestJoinColumnsRejectsCorruptStreams(t *testing.T) {
	native := thRecords(thNew, 1, 5, 5, 1, 2, 3, thCommand, 1, 0, "kick", 1, "x")
	for _, tc := range []struct {
		name   string
		mutate func(cols [][]byte) [][]byte
		want   string
	}{
		{"stream missing", func(c [][]byte) [][]byte { return c[:numCols-1] }, "streams"},
		{"dx cut", func(c [][]byte) [][]byte { c[colDX] = nil; return c }, "stream 1 ends"},
		{"left over", func(c [][]byte) [][]byte { c[colDY] = append(c[colDY], 1); return c }, "left over"},
		{"raw cut", func(c [][]byte) [][]byte { c[colRaw] = c[colRaw][:3]; return c }, "raw offset"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := joinColumns(tc.mutate(splitColumns(native, nil)), nil)
			if !errors.Is(err, errColumns) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want errColumns saying %q", err, tc.want)
			}
		})
	}
}

func TestStreamsBlobRoundTrip(t *testing.T) {
	a := openTest(t)
	enc, err := getColumnEncoder()
	if err != nil {
		t.Fatal(err)
	}
	var game bytes.Buffer
	if err := teehistoriangen.Generate(&game, teehistoriangen.Options{Duration: 10 * time.Second, Seed: 9}); err != nil {
		t.Fatal(err)
	}
	var cols [][]byte
	for _, tc := range []struct {
		name           string
		resume, native []byte
	}{
		{"empty", nil, nil},
		{"tiny", []byte{1}, []byte{2}},
		{"game", bytes.Repeat([]byte("resume"), 50), game.Bytes()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			blob := encodeStreamsBlob(enc, &cols, tc.resume, tc.native)
			if blob[0] != blobStreams || blob[1] != transformColumns {
				t.Fatalf("blob starts % x", blob[:2])
			}
			e := ChunkEntry{Length: int64(len(tc.native)), CRC: crc32c(tc.native)}
			for _, dst := range [][]byte{nil, make([]byte, 10, 100)} {
				native, resume, err := a.decodeBlobInto(blob, e, dst)
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
		got, resume, err := a.decodeBlob(blob, ChunkEntry{Length: int64(len(native)), CRC: crc32c(native)})
		if err != nil || !bytes.Equal(got, native) || string(resume) != "r" {
			t.Fatalf("precompressed=%v: %q %q %v", pre, got, resume, err)
		}
	}
}

func TestStreamsBlobErrors(t *testing.T) {
	a := openTest(t)
	enc, err := getColumnEncoder()
	if err != nil {
		t.Fatal(err)
	}
	native := bytes.Repeat(thRecords(1, 2, 3, thInDiff, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1), 200)
	native = append(thRecords(thNew, 1, 0, 0, thInNew, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), native...)
	blob := encodeStreamsBlob(enc, new([][]byte), []byte("resume state"), native)
	e := ChunkEntry{Length: int64(len(native)), CRC: crc32c(native)}
	unknown := bytes.Clone(blob)
	unknown[1] = 7
	if _, _, err := a.decodeBlob(unknown, e); !errors.Is(err, errUnknownTransform) || !strings.Contains(err.Error(), "transform 7") {
		t.Fatalf("unknown transform: %v", err)
	}
	// Every truncation fails; every single-byte change fails cleanly or,
	// where zstd ignores the byte, still gives the chunk (the CRC-32C
	// catches what the layout does not): never other bytes, never a panic.
	for n := range len(blob) {
		if _, _, err := a.decodeBlob(blob[:n], e); err == nil {
			t.Fatalf("truncated to %d bytes: no error", n)
		}
	}
	failed := 0
	for i := range blob {
		bad := bytes.Clone(blob)
		bad[i] ^= 0x55
		got, _, err := a.decodeBlob(bad, e)
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
	a := openTest(t)
	var game bytes.Buffer
	if err := teehistoriangen.Generate(&game, teehistoriangen.Options{Duration: 2 * time.Minute, Seed: 11}); err != nil {
		t.Fatal(err)
	}
	p := a.NewPending("teehistorian", "game.teehistorian")
	meta, err := all.ByName("teehistorian").Split(context.Background(), bytes.NewReader(game.Bytes()), p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Finish(meta); err != nil {
		t.Fatal(err)
	}
	res, err := a.Commit(context.Background(), []*Pending{p})
	if err != nil {
		t.Fatal(err)
	}
	m := res[0].Manifest
	if len(m.Chunks) < 2 {
		t.Fatalf("%d chunks: want several", len(m.Chunks))
	}
	streams := 0
	err = a.viewShard(m.Shard, func(tx *bolt.Tx) error {
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
	if got := export(t, a, m.ID); !bytes.Equal(got, game.Bytes()) {
		t.Fatal("export differs from the ingested file")
	}
	rep, err := a.Check(context.Background(), CheckOptions{ReadData: true})
	if err != nil || !rep.OK() {
		t.Fatalf("check: %+v %v", rep, err)
	}
}

func crc32c(b []byte) uint32 { return crc32.Checksum(b, crcTable) }

// FuzzColumns checks that any bytes survive the record columns.
func FuzzColumns(f *testing.F) {
	f.Add(thRecords(thNew, 3, 100, -200, 3, 5, -7, thCommand, 3, 1, "say", 1, "hi", thFinish))
	f.Add([]byte{0x81, 0x80, 0x00, 0xff, 0xff})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, native []byte) {
		got, err := joinColumns(splitColumns(native, nil), nil)
		if err != nil || !bytes.Equal(got, native) {
			t.Fatalf("round trip: %v", err)
		}
	})
}
