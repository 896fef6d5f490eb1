package chunkenc

import (
	"os"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/replayarchive/replay/formats/formatstest"
	"github.com/replayarchive/replay/formats/teehistorian"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
)

// BenchmarkDecodeChunk decodes one 64 KiB teehistorian chunk stored as
// record columns and as one zstd frame (the layout before).
//
//	go test -run '^$' -bench DecodeChunk ./archive/internal/chunkenc/
func BenchmarkDecodeChunk(b *testing.B) {
	game := teehistoriangen.Must(b, teehistoriangen.Options{Duration: time.Minute, Seed: 3})
	native := game[len(game)-64<<10:]
	dec := newDecoder(b)
	n, sum := int64(len(native)), Checksum(native)
	var scratch []byte
	for _, bc := range []struct {
		name string
		blob []byte
	}{
		{"columns", EncodeColumns(newEncoder(b, StreamEncoderOptions()), new(Chooser), thColumns, new([][]byte), new([]byte), []byte("resume"), native)},
		{"whole", Encode(newEncoder(b, EncoderOptions()), &scratch, []byte("resume"), native, false)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(native)))
			dst := make([]byte, 0, len(native)+decodeSlack)
			for b.Loop() {
				if _, _, err := Decode(dec, thColumns, bc.blob, n, sum, dst, true); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEncodeStreams encodes the 64 KiB chunks of generated games as
// an ingest's compressor does (a chooser per game), and with the encoder
// alone, and each chunk as one frame at zstd's default level (the level
// of zstd -3, the ingest goal's baseline). It reports the stored bytes
// per native byte.
//
//	go test -run '^$' -bench EncodeStreams -count 6 ./archive/internal/chunkenc/
func BenchmarkEncodeStreams(b *testing.B) {
	var games [][][]byte
	var native int
	for seed := range uint64(8) {
		chunks, n := teehistorianChunks(b, teehistoriangen.Must(b, teehistoriangen.Options{Duration: 5 * time.Minute, Players: 8, Seed: 20 + seed}))
		games, native = append(games, chunks), native+n
	}
	enc := newEncoder(b, StreamEncoderOptions())
	for _, bc := range []struct {
		name   string
		chunks int // a chooser from 1 never tries literals frames
	}{{"chooser", 0}, {"encoder-alone", 1}} {
		b.Run(bc.name, func(b *testing.B) { encodeGames(b, enc, games, native, bc.chunks) })
	}
	// What the baseline, zstd -3, does with the same chunks.
	level3, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("zstd-default-whole", func(b *testing.B) {
		b.SetBytes(int64(native))
		var dst []byte
		stored := 0
		for b.Loop() {
			stored = 0
			for _, chunks := range games {
				for _, c := range chunks {
					dst = level3.EncodeAll(c, dst[:0])
					stored += len(dst)
				}
			}
		}
		b.ReportMetric(float64(stored)/float64(native), "stored/B")
	})
}

// BenchmarkEncodeLevels splits and encodes the chunks of a teehistorian
// file (REPLAY_BENCH_FILE, its first 64 MB) as an ingest's worker does,
// at zstd's fastest level (the ingest's) and at the default, and reports
// the stored bytes per native byte: the choice in EncoderOptions. The
// file is one the generator did not shape (docs/PERFORMANCE.md, "Data
// nobody tuned to"), or the 1 GB teehistoriangen one.
func BenchmarkEncodeLevels(b *testing.B) {
	path := os.Getenv("REPLAY_BENCH_FILE")
	if path == "" {
		b.Skip("REPLAY_BENCH_FILE names no teehistorian file")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	chunks, native := teehistorianChunks(b, data[:min(len(data), 64<<20)])
	for _, level := range []zstd.EncoderLevel{zstd.SpeedFastest, zstd.SpeedDefault} {
		enc := newEncoder(b, append(StreamEncoderOptions(), zstd.WithEncoderLevel(level)))
		b.Run(level.String(), func(b *testing.B) { encodeGames(b, enc, [][][]byte{chunks}, native, 0) })
	}
}

// teehistorianChunks returns the native chunks the codec cuts file into,
// and their bytes.
func teehistorianChunks(b *testing.B, file []byte) (chunks [][]byte, native int) {
	rec := formatstest.Split(b, &teehistorian.Codec{}, file)
	for i := range rec.ChunkIndex {
		c, _, err := rec.ReadChunk(b.Context(), i)
		if err != nil {
			b.Fatal(err)
		}
		chunks, native = append(chunks, c), native+len(c)
	}
	return chunks, native
}

// encodeGames encodes each game's chunks as an ingest's worker does, a
// chooser per game (Chooser.chunks set to from), and reports the stored
// bytes per native byte.
func encodeGames(b *testing.B, enc *zstd.Encoder, games [][][]byte, native, from int) {
	b.SetBytes(int64(native))
	var cols [][]byte
	var scratch []byte
	stored := 0
	for b.Loop() {
		stored = 0
		for _, chunks := range games {
			ch := Chooser{chunks: from}
			for _, c := range chunks {
				stored += len(EncodeColumns(enc, &ch, thColumns, &cols, &scratch, nil, c))
			}
		}
	}
	b.ReportMetric(float64(stored)/float64(native), "stored/B")
}
