package archive

import (
	"sync"

	"github.com/klauspost/compress/zstd"
	"github.com/replayarchive/replay/archive/internal/chunkenc"
)

// encoders holds an archive's idle zstd encoders, one pool per use.
type encoders struct {
	// chunk compresses whole chunks (chunkenc.EncoderOptions).
	chunk encoderPool
	// column compresses the streams of transformed chunks
	// (chunkenc.StreamEncoderOptions says why at the default level, not
	// the best).
	column encoderPool
	// event compresses a recording's events (events.go).
	event encoderPool
}

// newEncoders returns empty pools, one per use. The chunk pools keep an
// idle encoder for each of a recording's compressor workers
// (Options.CompressWorkers).
func newEncoders(workers int) *encoders {
	keep := maxIdleEncoders + max(workers, 1) - 1
	return &encoders{
		chunk:  encoderPool{opts: chunkenc.EncoderOptions(), keep: keep},
		column: encoderPool{opts: chunkenc.StreamEncoderOptions(), keep: keep},
		// Concurrency 2 compresses each full block of the events'
		// stream on a goroutine of the encoder's while the codec goes on
		// (0.66 s of the 1 GB file's parse, on the ingest's longest path).
		// The fastest level, as for chunks: the better level's 4 MiB
		// match table cost a cache miss a byte on a recording's few KB of
		// events (24 small DDNet files: 11% of an ingest's time), for
		// 0.1% of the stored bytes (docs/PERFORMANCE.md).
		event: encoderPool{opts: []zstd.EOption{zstd.WithEncoderLevel(zstd.SpeedFastest),
			zstd.WithEncoderConcurrency(2), zstd.WithWindowSize(eventWindow), zstd.WithLowerEncoderMem(true)}},
	}
}

// maxIdleEncoders is how many idle encoders a pool keeps by default: as
// many as recordings compress at once in one ingest (the pipeline's one,
// and a live grow beside it). The chunk pools keep one more for each
// compressor worker past the first.
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
	keep int // idle encoders kept (maxIdleEncoders when 0)
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
// Reset); beyond the pool's keep it is left to the collector.
func (p *encoderPool) put(e *zstd.Encoder) {
	p.mu.Lock()
	defer p.mu.Unlock()
	keep := p.keep
	if keep <= 0 {
		keep = maxIdleEncoders
	}
	if len(p.idle) < keep {
		p.idle = append(p.idle, e)
	}
}
