package archive

import (
	"sync"

	"github.com/klauspost/compress/zstd"
)

// chunkWindow is the zstd window of chunk compression. A chunk is
// compressed on its own (EncodeAll), so a window larger than the chunk buys
// nothing, while the encoder keeps a history buffer of twice the window:
// 16 MiB at the default 8 MiB window, most of an ingest's live heap.
// Chunks are 64 KiB for teehistorian and rarely above 1 MiB
// for the other formats; larger ones compress with a 1 MiB window.
const chunkWindow = 1 << 20

// encoders holds an archive's idle zstd encoders, one pool per use.
type encoders struct {
	// chunk compresses whole chunks at the archive's level with a
	// chunk-sized window.
	chunk encoderPool
	// column compresses the streams of transformed chunks
	// (encodeStreamsBlob) at the same better level. The best level made
	// the generated games' streams 0.95× smaller, but its encoder's tables
	// are about 40 MiB: under a command's 48 MiB soft memory limit the
	// collector then ran without pause (an hour's ingest took 6× the CPU,
	// 200 games' 7×) and without the limit the peak RSS passed 64 MiB over
	// the baseline (docs/PERFORMANCE.md). No frame checksum: the chunk's
	// CRC-32C covers the joined result.
	column encoderPool
	// event compresses a recording's events (events.go).
	event encoderPool
}

// newEncoders returns empty pools, one per use.
func newEncoders() *encoders {
	return &encoders{
		chunk:  encoderPool{opts: chunkEncoderOptions()},
		column: encoderPool{opts: columnEncoderOptions()},
		event: encoderPool{opts: []zstd.EOption{zstd.WithEncoderLevel(zstd.SpeedBetterCompression),
			zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(eventWindow), zstd.WithLowerEncoderMem(true)}},
	}
}

// chunkEncoderOptions configure the encoders of whole chunks.
func chunkEncoderOptions() []zstd.EOption {
	return []zstd.EOption{zstd.WithEncoderLevel(zstd.SpeedBetterCompression),
		zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(chunkWindow), zstd.WithLowerEncoderMem(true)}
}

// columnEncoderOptions configure the encoders of a chunk's streams.
func columnEncoderOptions() []zstd.EOption {
	return append(chunkEncoderOptions(), zstd.WithEncoderCRC(false))
}

// maxIdleEncoders is how many idle encoders a pool keeps: as many as
// recordings compress at once in one ingest (the pipeline's one, and a
// live grow beside it).
const maxIdleEncoders = 2

// encoderPool keeps idle encoders of one configuration. An encoder is
// several MiB of tables and history: each compressor takes one for its
// recording's life and gives it back, so ingesting 200 small games reuses
// a couple of encoders instead of allocating 200. Not a sync.Pool: that
// one is emptied by every garbage collection, which the command's soft
// memory limit makes frequent, and the 200 games then built an encoder
// for most recordings (docs/PERFORMANCE.md).
type encoderPool struct {
	opts []zstd.EOption
	mu   sync.Mutex
	idle []*zstd.Encoder
}

// get returns an idle encoder or a new one.
func (p *encoderPool) get() (*zstd.Encoder, error) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		e := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return e, nil
	}
	p.mu.Unlock()
	return zstd.NewWriter(nil, p.opts...)
}

// put gives back an encoder that holds no state (after EncodeAll, or
// Reset); beyond maxIdleEncoders it is left to the collector.
func (p *encoderPool) put(e *zstd.Encoder) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.idle) < maxIdleEncoders {
		p.idle = append(p.idle, e)
	}
}
