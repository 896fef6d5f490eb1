package chunkenc

import "github.com/klauspost/compress/zstd"

// Window is the zstd window of chunk compression. A chunk is compressed
// on its own (EncodeAll), so a window larger than the chunk buys nothing,
// while the encoder keeps a history buffer of twice the window: 16 MiB at
// the default 8 MiB window, most of an ingest's live heap. Chunks are
// 64 KiB for teehistorian and rarely above 1 MiB for the other formats;
// larger ones compress with a 1 MiB window.
const Window = 1 << 20

// EncoderOptions configure the encoders of an ingest: whole chunks
// (Encode) and the heads record. Ingest compresses at zstd's fastest level
// and leaves the best to the background pass (the archive's recompress.go):
// against the default level, split and encoded as an ingest does
// (BenchmarkEncodeLevels), a simulated crowded server's file encodes
// 1.05× as fast for 0.8% more bytes and teehistoriangen's 1 GB file
// 1.10–1.12× as fast for 5% more; the kinds of docs/PERFORMANCE.md store
// 1.3–4.6% more after ingest. Its match tables are the smallest too.
func EncoderOptions() []zstd.EOption {
	return []zstd.EOption{zstd.WithEncoderLevel(zstd.SpeedFastest),
		zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(Window), zstd.WithLowerEncoderMem(true)}
}

// StreamEncoderOptions configure the encoders of a chunk's streams
// (EncodeStreams) at ingest: the same level, without a frame checksum
// (the chunk's CRC-32C covers the joined result). The best level's
// encoder tables are about 40 MiB: under a command's 48 MiB soft memory
// limit the collector then ran without pause (an hour's ingest took 6×
// the CPU, 200 games' 7×).
func StreamEncoderOptions() []zstd.EOption {
	return append(EncoderOptions(), zstd.WithEncoderCRC(false))
}

// DecoderOptions configure the decoder of blobs and heads records.
// Decoded sizes are known from the manifest and checked before decoding;
// the memory cap is a second line of defence against a corrupt blob.
func DecoderOptions() []zstd.DOption {
	return []zstd.DOption{zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(1 << 30)}
}
