package archive

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/replayarchive/replay/archive/internal/chunkenc"
	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/all"
	"github.com/replayarchive/replay/formats/formatstest"
	"github.com/replayarchive/replay/formats/teehistorian"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
	bolt "go.etcd.io/bbolt"
)

// thColumns is the teehistorian codec's column transform, which the
// archive tests of streams blobs use (replay.Open sets it from the codecs).
var thColumns formats.Columnar = teehistorian.New()

// thColumnSet is the Options.Columns of an archive with thColumns.
var thColumnSet = map[string]formats.Columnar{"teehistorian": thColumns}

// TestStreamsBlobNeedsColumns: a streams blob of a format without a
// transform, or read by an archive opened without any, is refused naming
// the format (chunkenc's tests hold the layout itself).
func TestStreamsBlobNeedsColumns(t *testing.T) {
	a := openTest(t, "", Options{Columns: thColumnSet})
	enc, err := zstd.NewWriter(nil, chunkenc.StreamEncoderOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	native := teehistoriangen.Must(t, teehistoriangen.Options{Duration: 10 * time.Second, Seed: 9})
	blob := chunkenc.EncodeColumns(enc, new(chunkenc.Chooser), thColumns, new([][]byte), new([]byte), []byte("resume"), native)
	e := ChunkEntry{Length: int64(len(native)), CRC: chunkenc.Checksum(native)}
	if got, _, err := a.decodeBlob(blob, e, "teehistorian", nil, true); err != nil || !bytes.Equal(got, native) {
		t.Fatalf("with its transform: %d of %d bytes, %v", len(got), len(native), err)
	}
	if _, _, err := a.decodeBlob(blob, e, "vtx", nil, true); !errors.Is(err, chunkenc.ErrNoColumns) || !strings.Contains(err.Error(), `format "vtx"`) {
		t.Fatalf("format without columns: %v", err)
	}
	if _, _, err := openTest(t, "", Options{}).decodeBlob(blob, e, "teehistorian", nil, true); !errors.Is(err, chunkenc.ErrNoColumns) || !strings.Contains(err.Error(), `format "teehistorian"`) {
		t.Fatalf("archive without columns: %v", err)
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
			if v := tx.Bucket(bucketChunks).Get(chunkKey(m.ID, c.StartTick)); len(v) > 0 && v[0] == chunkenc.FlagStreams {
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

// TestCompressWorkers ingests with one and with three compressor workers:
// each worker compresses every third chunk, and the collector puts the
// blobs back in chunk order, spilling as it goes. Both archives export the
// same bytes, check clean with ReadData, and hold the same chunk table;
// a file that fails part-way with three workers leaves nothing behind.
func TestCompressWorkers(t *testing.T) {
	game := teehistoriangen.Must(t, teehistoriangen.Options{Duration: 10 * time.Minute, Players: 8, Seed: 12})
	lines := formatstest.LinesFile("lines", 400)
	var tables [][]ChunkEntry
	for _, workers := range []int{1, 3} {
		a := openTest(t, "", Options{Columns: thColumnSet, CompressWorkers: workers, SpillBytes: 32 << 10})
		res := ingestWith(t, a, all.ByName("teehistorian"), game, nil)
		if len(res.Manifest.Chunks) < 6 {
			t.Fatalf("%d chunks: want several for each worker", len(res.Manifest.Chunks))
		}
		if res.Manifest.ChunkOwner == res.ID {
			t.Fatalf("workers %d: the recording did not spill", workers)
		}
		if got := export(t, a, res.ID); !bytes.Equal(got, game) {
			t.Fatalf("workers %d: export differs from the file", workers)
		}
		if got := export(t, a, ingest(t, a, lines, nil).ID); !bytes.Equal(got, lines) {
			t.Fatalf("workers %d: export of whole chunks differs", workers)
		}
		if rep, err := a.Check(context.Background(), CheckOptions{ReadData: true}); err != nil || !rep.OK() {
			t.Fatalf("workers %d: check: %+v %v", workers, rep, err)
		}
		tables = append(tables, res.Manifest.Chunks)

		p := a.NewPending("lines", "broken")
		if _, err := (formatstest.Lines{}).Split(context.Background(), bytes.NewReader(append(formatstest.LinesFile("x", 300), "1 backwards\n"...)), p); err == nil {
			t.Fatal("split of a broken file succeeded")
		}
		if err := p.Discard(); err != nil {
			t.Fatal(err)
		}
		if rep, err := a.Check(context.Background(), CheckOptions{}); err != nil || !rep.OK() || rep.Orphans != 0 {
			t.Fatalf("workers %d: after a discard: %+v %v", workers, rep, err)
		}
	}
	// The blobs differ (each worker's chooser sees its own chunks), the
	// chunks they hold do not.
	one, three := tables[0], tables[1]
	if len(one) != len(three) {
		t.Fatalf("%d chunks with one worker, %d with three", len(one), len(three))
	}
	for i := range one {
		a, b := one[i], three[i]
		a.Stored, b.Stored = 0, 0
		if a != b {
			t.Fatalf("chunk %d: %+v with one worker, %+v with three", i, one[i], three[i])
		}
	}
}

// TestWorkersKept: a recording's workers are kept for the next one, and a
// kept worker's chooser starts afresh: a game stores the same blobs after
// another game as in an archive of its own. A worker whose buffers grew
// past maxIdleWorkerBytes is not kept.
func TestWorkersKept(t *testing.T) {
	first := teehistoriangen.Must(t, teehistoriangen.Options{Duration: 3 * time.Minute, Players: 12, Seed: 21})
	second := teehistoriangen.Must(t, teehistoriangen.Options{Duration: 4 * time.Minute, Players: 5, Seed: 22})
	codec := all.ByName("teehistorian")
	opts := Options{Columns: thColumnSet, CompressWorkers: 2}

	alone := openTest(t, "", opts)
	want := ingestWith(t, alone, codec, second, nil).Manifest.Chunks

	a := openTest(t, "", opts)
	ingestWith(t, a, codec, first, nil)
	if n := len(a.idleWorkers.idle); n != 2 {
		t.Fatalf("%d workers kept after a recording, want 2", n)
	}
	kept := a.idleWorkers.idle[0]
	if cap(kept.scratch) == 0 || len(kept.cols) == 0 {
		t.Fatalf("a kept worker has no buffers: scratch %d, %d columns", cap(kept.scratch), len(kept.cols))
	}
	got := ingestWith(t, a, codec, second, nil).Manifest.Chunks
	if len(got) != len(want) {
		t.Fatalf("%d chunks after another game, %d alone", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("chunk %d: %+v after another game, %+v alone", i, got[i], want[i])
		}
	}

	big := &compressWorker{free: make(chan []byte, 4), scratch: make([]byte, maxIdleWorkerBytes+1)}
	pool := &idleWorkers{keep: 4}
	pool.put(big)
	if len(pool.idle) != 0 {
		t.Fatal("a worker with buffers past maxIdleWorkerBytes was kept")
	}
}
