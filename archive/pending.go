// The write path's first half: a Pending recording collects the pieces a
// codec splits a native file into and compresses chunks on goroutines of
// its own as they arrive (Options.CompressWorkers of them), spilling them
// to the shard ahead of the commit when they pile up. Commit (commit.go)
// then commits one or more of them.

package archive

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"path/filepath"
	"sync"

	"github.com/google/uuid"
	"github.com/klauspost/compress/zstd"
	"github.com/replayarchive/replay/archive/internal/chunkenc"
	"github.com/replayarchive/replay/formats"
	bolt "go.etcd.io/bbolt"
)

// defaultSpillBytes is Options.SpillBytes when unset. 4 MiB of blobs is
// about 13 MiB of native teehistorian: a one-hour file still commits in one
// piece, and a 1 GB one holds 4 MiB at a time instead of 16.
const defaultSpillBytes = 4 << 20

// Pending is a recording being ingested. It implements formats.Writer.
// Every Pending must end with Finish (then Commit) or Discard, which stop
// its compressor goroutines.
type Pending struct {
	a      *Archive
	format string
	source string

	// sha hashes the native bytes in file order: the header in Header,
	// the chunks in the collector, the trailer in Finish.
	sha     hash.Hash
	size    int64
	header  []byte
	trailer []byte
	chunks  []ChunkEntry

	// Chunk hands the chunks to the workers in turn (chunk i to
	// workers[i%len(workers)]), which split and compress them while the
	// codec parses the next ones; the collector goroutine takes their
	// blobs back in the same turn, so in chunk order, and owns the fields
	// from blobs to inflight until wait returns.
	workers []*compressWorker
	next    int // the worker of the next chunk
	working sync.WaitGroup
	done    chan struct{} // closed when the collector has taken every blob
	errMu   sync.Mutex
	err     error     // first compressor error
	blobs   [][]byte  // blobs[i] belongs to chunks[len(chunks)-len(blobs)+i]
	stored  []int64   // stored size of every chunk so far
	ticks   []int64   // start tick of every blob in blobs
	pending int64     // bytes in blobs
	id      uuid.UUID // set once decided (first spill or commit)
	shard   string
	spilled bool // some chunks are already in the shard (or being written)
	// spilling is the spill under way, if any (spillAsync).
	spilling chan error
	inflight bool // id is in Archive.writing until the commit or Discard

	// endTurn ends the codec goroutine's turn (turns.go): taken as Chunk
	// returns, ended as the next Chunk, Finish or Discard begins, so the
	// parse between two chunks takes its turn as compression does.
	endTurn func()

	// col is the format's column transform, if it has one
	// (Options.Columns): the workers split each chunk into its streams
	// and encode those.
	col formats.Columnar

	meta *formats.Metadata
	sum  []byte

	// events takes the events a codec sends as it splits (Event, in
	// events.go); Finish adds Metadata.Events and closes it into evBlob,
	// the catalog's value, holding evCount events.
	events  eventStream
	evBlob  []byte
	evCount int

	// chunkSums, kept by the collector once MayReplace is called, holds
	// the sha256 of each chunk's native bytes: Commit compares them with
	// the archived chunks before a grown recording may replace its
	// earlier copy.
	keepSums  bool
	chunkSums [][sha256.Size]byte
}

// compressJob is one chunk for a worker: a copy of its native bytes.
type compressJob struct {
	tick          int64
	resume        []byte
	native        []byte
	precompressed bool
}

// compressed is a worker's answer for one job: its blob, or why not, and
// the chunk's native bytes, which the collector hashes in chunk order and
// hands back to the worker. Once the recording has failed a worker answers
// without compressing.
type compressed struct {
	tick   int64
	blob   []byte
	err    error
	native []byte
	from   *compressWorker
}

// A compressWorker splits and compresses every n-th chunk of a recording.
// Each has its own encoders and its own Chooser, which so sees every n-th
// chunk: the blobs of a recording depend on the number of workers, and
// every one of them decodes to the same native bytes.
type compressWorker struct {
	jobs    chan compressJob
	results chan compressed
	free    chan []byte // native copies handed back for reuse

	// Owned by the worker's goroutine. enc and colEnc are its encoders
	// of whole chunks and of streams, taken from Archive.encoders
	// (encoders.go) when first needed: a format with a column transform
	// needs the chunk encoder only for precompressed chunks. choose
	// picks between colEnc and a literals frame for each stream.
	enc     *zstd.Encoder
	colEnc  *zstd.Encoder
	choose  chunkenc.Chooser
	cols    [][]byte // the column set, reused between chunks
	scratch []byte   // compression buffer, reused between chunks
}

// idleWorkers keeps the compressor workers of recordings that are done,
// with their column set, compression buffer, native copies and Huffman
// scratch: the next recording's workers start with buffers grown to a
// chunk's size instead of growing them again (200 five-minute games: 0.14
// s of 3.6 s of CPU went to that). A worker is kept only while its
// buffers are small (maxIdleWorkerBytes), so one huge chunk is not held
// for the archive's life.
type idleWorkers struct {
	keep int
	mu   sync.Mutex
	idle []*compressWorker
}

// maxIdleWorkerBytes bounds the buffers of a kept worker: eight times a
// teehistorian worker's (about 0.5 MiB for its 64 KiB chunks), above most
// other formats' chunks.
const maxIdleWorkerBytes = 4 << 20

// get returns a kept worker, ready for a recording's chunks, or a new one.
func (p *idleWorkers) get() *compressWorker {
	p.mu.Lock()
	var w *compressWorker
	if n := len(p.idle); n > 0 {
		w, p.idle = p.idle[n-1], p.idle[:n-1]
	}
	p.mu.Unlock()
	if w == nil {
		w = &compressWorker{free: make(chan []byte, 4)}
	}
	w.jobs, w.results = make(chan compressJob, 2), make(chan compressed, 2)
	w.choose.Reset()
	return w
}

// put keeps a worker whose goroutine and collector have ended.
func (p *idleWorkers) put(w *compressWorker) {
	free := make([][]byte, 0, cap(w.free))
	for len(w.free) > 0 {
		free = append(free, <-w.free)
	}
	size := cap(w.scratch)
	for _, c := range w.cols[:cap(w.cols)] {
		size += cap(c)
	}
	for _, b := range free {
		size += cap(b)
	}
	if size > maxIdleWorkerBytes {
		return
	}
	for _, b := range free {
		w.free <- b
	}
	w.jobs, w.results = nil, nil
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.idle) < p.keep {
		p.idle = append(p.idle, w)
	}
}

// NewPending starts a recording of the given format. source is the base name
// of the file it comes from, for show and ls.
func (a *Archive) NewPending(format, source string) *Pending {
	return &Pending{a: a, format: format, source: filepath.Base(source), sha: sha256.New(), col: a.opts.Columns[format],
		events: eventStream{pool: &a.encoders.event}}
}

// MayReplace marks a recording that may replace an archived copy of itself
// (a live recording ingested again as it grows, Metadata.Growing): it keeps
// a sha256 of every chunk, so that Commit can check that the archived
// chunks are the first chunks of the new copy. Call it before the split.
// Without it a growing recording never replaces anything.
func (p *Pending) MayReplace() { p.keepSums = true }

// Header implements formats.Writer.
func (p *Pending) Header(b []byte) error {
	if p.size != 0 || p.header != nil {
		return errors.New("archive: header must come first, once")
	}
	p.header = bytes.Clone(b)
	if p.header == nil {
		p.header = []byte{}
	}
	p.sha.Write(b)
	p.size += int64(len(b))
	return nil
}

// Chunk implements formats.Writer.
func (p *Pending) Chunk(c formats.Chunk, native []byte) error {
	p.turnDone()
	defer func() { p.endTurn = p.a.turns.background() }()
	if p.trailer != nil {
		return errors.New("archive: chunk after trailer")
	}
	var prev *formats.Chunk
	if n := len(p.chunks); n > 0 {
		prev = &formats.Chunk{StartTick: p.chunks[n-1].StartTick}
	}
	if err := formats.CheckChunk(prev, c, len(native)); err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	if err := p.compressErr(); err != nil {
		return err
	}
	p.chunks = append(p.chunks, ChunkEntry{
		StartTick: c.StartTick, Ticks: c.Ticks, Time: c.Time,
		Offset: p.size, Length: int64(len(native)),
		CRC: chunkenc.Checksum(native), Precompressed: c.Precompressed,
	})
	p.size += int64(len(native))
	if p.workers == nil {
		p.startCompressors()
	}
	w := p.workers[p.next%len(p.workers)]
	p.next++
	j := compressJob{tick: c.StartTick, resume: bytes.Clone(c.Resume), precompressed: c.Precompressed}
	select {
	case j.native = <-w.free:
	default:
	}
	j.native = append(j.native[:0], native...)
	w.jobs <- j
	p.a.turns.yield() // as the workers do: see there
	return nil
}

// startCompressors starts the recording's workers and their collector.
func (p *Pending) startCompressors() {
	n := max(1, p.a.opts.CompressWorkers)
	p.workers, p.done = make([]*compressWorker, n), make(chan struct{})
	for i := range p.workers {
		w := p.a.idleWorkers.get()
		p.workers[i] = w
		p.working.Add(1)
		go p.compressLoop(w)
	}
	go p.collect()
}

// compressLoop is a worker: it compresses its jobs in order until jobs
// is closed, then gives its encoders back.
func (p *Pending) compressLoop(w *compressWorker) {
	defer p.working.Done()
	defer close(w.results)
	defer func() {
		if w.enc != nil {
			p.a.encoders.chunk.put(w.enc)
		}
		if w.colEnc != nil {
			p.a.encoders.column.put(w.colEnc)
		}
		w.enc, w.colEnc = nil, nil
	}()
	for j := range w.jobs {
		c := compressed{tick: j.tick, native: j.native, from: w}
		if p.compressErr() == nil {
			end := p.a.turns.background()
			c.blob, c.err = p.compress(w, j)
			end()
		}
		w.results <- c
		p.a.turns.yield()
	}
}

// collect takes the workers' blobs in chunk order, hashes the chunks'
// native bytes (off the codec's goroutine, which is the ingest's longest
// path once the workers share the compression), and spills to the shard
// when enough has piled up. It ends when the worker of the next chunk has
// closed its results: every chunk before it has been taken.
func (p *Pending) collect() {
	defer close(p.done)
	for i := 0; ; i++ {
		c, ok := <-p.workers[i%len(p.workers)].results
		if !ok {
			break
		}
		p.sha.Write(c.native)
		if p.keepSums {
			p.chunkSums = append(p.chunkSums, sha256.Sum256(c.native))
		}
		select {
		case c.from.free <- c.native:
		default:
		}
		if c.err != nil {
			p.setErr(fmt.Errorf("archive: chunk at tick %d: %w", c.tick, c.err))
		}
		if p.compressErr() != nil {
			continue // drain; the error is reported by Chunk or wait
		}
		blob := c.blob
		p.blobs = append(p.blobs, blob)
		p.ticks = append(p.ticks, c.tick)
		p.stored = append(p.stored, int64(len(blob)))
		p.pending += int64(len(blob))
		if p.pending >= p.a.opts.SpillBytes {
			if err := p.spillAsync(); err != nil {
				p.setErr(err)
			}
		}
	}
	if err := p.spillDone(); err != nil {
		p.setErr(err)
	}
}

// compress encodes one chunk's blob with w's encoders: as streams when
// the format has a column transform and the chunk is not precompressed.
func (p *Pending) compress(w *compressWorker, j compressJob) ([]byte, error) {
	var err error
	if p.col != nil && !j.precompressed {
		if w.colEnc == nil {
			if w.colEnc, err = p.a.encoders.column.get(); err != nil {
				return nil, err
			}
		}
		w.cols = p.col.SplitColumns(j.native, w.cols)
		return chunkenc.EncodeStreams(w.colEnc, &w.choose, w.cols, &w.scratch, j.resume), nil
	}
	if w.enc == nil {
		if w.enc, err = p.a.encoders.chunk.get(); err != nil {
			return nil, err
		}
	}
	return chunkenc.Encode(w.enc, &w.scratch, j.resume, j.native, j.precompressed), nil
}

// setErr records the compressor's first error.
func (p *Pending) setErr(err error) {
	p.errMu.Lock()
	defer p.errMu.Unlock()
	if p.err == nil {
		p.err = err
	}
}

func (p *Pending) compressErr() error {
	p.errMu.Lock()
	defer p.errMu.Unlock()
	return p.err
}

// wait stops the workers once they have handled every chunk, and fills
// in the chunks' stored sizes. It returns the compressors' error.
func (p *Pending) wait() error {
	if p.workers != nil {
		for _, w := range p.workers {
			close(w.jobs)
		}
		<-p.done
		p.working.Wait()
		// The workers' buffers would stay alive with p until its
		// commit group is committed: the next recording takes them.
		for _, w := range p.workers {
			p.a.idleWorkers.put(w)
		}
		p.workers = nil
	}
	for i := range p.chunks {
		if i < len(p.stored) {
			p.chunks[i].Stored = p.stored[i]
		}
	}
	return p.compressErr()
}

// Trailer implements formats.Writer.
func (p *Pending) Trailer(b []byte) error {
	if p.trailer != nil {
		return errors.New("archive: trailer given twice")
	}
	p.trailer = bytes.Clone(b)
	if p.trailer == nil {
		p.trailer = []byte{}
	}
	p.size += int64(len(b)) // hashed by Finish, after the chunks

	return nil
}

// Size returns the native bytes received so far.
func (p *Pending) Size() int64 { return p.size }

// spillAsync writes the buffered blobs to the shard ahead of the commit,
// in a goroutine of its own once the spill before it is done, so that the
// compressor goes on with the next chunks while the shard's transaction
// is written and synced (the 1 GB file's compressor, the ingest's slower
// side, spent 0.6–0.7 s of its 10 s in its 50 spills). The recording's id
// and start are not known yet, so its chunks are keyed by a provisional
// random id, which the manifest records as ChunkOwner, in the shard of
// the current month.
func (p *Pending) spillAsync() error {
	if err := p.spillDone(); err != nil {
		return err
	}
	if p.id == uuid.Nil {
		p.id = uuid.New()
		p.shard = p.a.opts.ShardPeriod(p.a.opts.Now())
		p.a.writing.add(p.id)
		p.inflight = true
	}
	shard, id, ticks, blobs := p.shard, p.id, p.ticks, p.blobs
	p.spilled = true // Discard removes whatever the spill wrote
	p.blobs, p.ticks, p.pending = nil, nil, 0
	done := make(chan error, 1)
	p.spilling = done
	go func() { done <- p.a.writeBlobs(shard, id, ticks, blobs) }()
	return nil
}

// spillDone waits for the spill under way, if any, and returns its error.
func (p *Pending) spillDone() error {
	if p.spilling == nil {
		return nil
	}
	err := <-p.spilling
	p.spilling = nil
	return err
}

// Finish records the codec's metadata once Split has returned, and decides
// the recording id. It returns the sha256 of the native bytes.
func (p *Pending) Finish(meta *formats.Metadata) ([]byte, error) {
	p.turnDone()
	if meta == nil {
		return nil, errors.New("archive: no metadata")
	}
	if err := p.wait(); err != nil {
		return nil, err
	}
	for i := range meta.Events {
		if err := p.events.add(&meta.Events[i]); err != nil {
			return nil, err
		}
	}
	blob, n, err := p.events.close()
	if err != nil {
		return nil, err
	}
	p.evBlob, p.evCount = blob, n
	p.meta = meta
	p.sha.Write(p.trailer)
	p.sum = p.sha.Sum(nil)
	if p.header == nil {
		p.header = []byte{}
	}
	if p.trailer == nil {
		p.trailer = []byte{}
	}
	return p.sum, nil
}

// Discard drops a pending recording that will not be committed, removing any
// chunks it spilled.
func (p *Pending) Discard() error {
	p.turnDone()
	p.wait()
	p.events.drop()
	p.evBlob = nil
	defer p.landed()
	if !p.spilled {
		return nil
	}
	return p.a.deleteChunks(p.shard, p.id)
}

// turnDone ends the codec goroutine's turn, if it holds one.
func (p *Pending) turnDone() {
	if p.endTurn != nil {
		p.endTurn()
		p.endTurn = nil
	}
}

// landed takes a spilled recording out of Archive.writing: its manifest
// is committed, or it was dropped and what it left is Check's to remove.
func (p *Pending) landed() {
	if p.inflight {
		p.a.writing.done(p.id)
		p.inflight = false
	}
}

// writeBlobs puts blobs, whose chunks start at ticks, into shard under id
// in one transaction.
func (a *Archive) writeBlobs(shard string, id uuid.UUID, ticks []int64, blobs [][]byte) error {
	err := a.updateShard(shard, true, func(tx *bolt.Tx) error {
		s := chunksOf(tx)
		s.chunks.FillPercent = 1.0 // keys arrive in order within a recording
		for i, blob := range blobs {
			if err := s.put(chunkKey(id, ticks[i]), blob); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("archive: write chunks to shard %s: %w", shard, err)
	}
	return nil
}

// deleteChunks removes every chunk of id from shard.
func (a *Archive) deleteChunks(shard string, id uuid.UUID) error {
	err := a.updateShard(shard, false, func(tx *bolt.Tx) error {
		return chunksOf(tx).deleteOwner(id)
	})
	if errors.Is(err, errNoShard) {
		return nil // no shard, no chunks
	}
	return err
}
