// The read path: an opened Recording is a formats.Source (a codec decodes
// frames and writes clips from it), and Export streams a whole recording
// back as its native bytes, verified against the stored sha256.

package archive

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"
	"github.com/replayarchive/replay/archive/internal/chunkcache"
	"github.com/replayarchive/replay/archive/internal/chunkenc"
	"github.com/replayarchive/replay/formats"
	bolt "go.etcd.io/bbolt"
)

// Recording is an archived recording opened for reading. It implements
// formats.Source. Each ReadChunk is its own short read transaction; nothing
// stays open between calls.
type Recording struct {
	a       *Archive
	m       *Manifest
	meta    formats.Metadata
	header  []byte
	trailer []byte
	chunks  []formats.Chunk
	crcs    []uint32 // CRC-32C of each chunk's native bytes
	// table is the manifest's binary chunk table, decoded into m.Chunks
	// only when Manifest is called (see Open).
	table     []byte
	tableOnce sync.Once
	// reads counts chunk reads (for tests and `frames --stats`); atomic,
	// since a whole export reads chunks on several goroutines.
	reads atomic.Int64
	// offs, for a recording in the remote store, holds where each chunk
	// starts in its object, and the object's size last.
	offs []int64
}

// Open opens recording id for reading.
func (a *Archive) Open(id uuid.UUID) (*Recording, error) {
	var m *Manifest
	var heads, table []byte
	err := a.catalog.View(func(tx *bolt.Tx) (err error) {
		v := tx.Bucket(bucketRecordings).Get(id[:])
		if v == nil {
			return fmt.Errorf("%s: %w", id, ErrNotFound)
		}
		if m, table, err = decodeManifestLazy(v); err != nil {
			return fmt.Errorf("archive: manifest %s: %w", id, err)
		}
		heads = bytes.Clone(tx.Bucket(bucketHeads).Get(id[:]))
		return nil
	})
	if err != nil {
		return nil, err
	}
	if heads == nil {
		return nil, fmt.Errorf("archive: recording %s: heads record missing", id)
	}
	h, t, err := chunkenc.DecodeHeads(a.decoder(), heads, m.HeaderBytes, m.TrailerBytes)
	if err != nil {
		return nil, fmt.Errorf("archive: recording %s: %w", id, err)
	}
	r := &Recording{a: a, m: m, meta: m.Meta, header: h, trailer: t, table: table}
	// Opening must not cost more for a long recording than for a short
	// one: the table is decoded once, straight into the codec's
	// view and the CRCs; m.Chunks waits until someone asks for it.
	remote := m.Remote != ""
	if remote {
		r.offs = []int64{0}
	}
	if table == nil {
		r.chunks, r.crcs = m.formatChunks(), make([]uint32, len(m.Chunks))
		for i, c := range m.Chunks {
			r.crcs[i] = c.CRC
			if remote {
				r.offs = append(r.offs, r.offs[i]+c.Stored)
			}
		}
	} else {
		err := eachChunkEntry(table, func(n int) {
			r.chunks, r.crcs = make([]formats.Chunk, 0, n), make([]uint32, 0, n)
		}, func(c *ChunkEntry) {
			r.chunks = append(r.chunks, formats.Chunk{
				StartTick: c.StartTick, Ticks: c.Ticks, Time: c.Time,
				Offset: c.Offset, Length: c.Length, Precompressed: c.Precompressed,
			})
			r.crcs = append(r.crcs, c.CRC)
			if remote {
				r.offs = append(r.offs, r.offs[len(r.offs)-1]+c.Stored)
			}
		})
		if err != nil {
			return nil, fmt.Errorf("archive: manifest %s: %w", id, err)
		}
	}
	r.meta.ID = m.ID
	if len(r.meta.Flags) != len(m.AllFlags()) {
		r.meta.Flags = m.AllFlags()
	}
	return r, nil
}

// Manifest returns the recording's manifest, its chunk table included.
func (r *Recording) Manifest() *Manifest {
	r.tableOnce.Do(func() {
		if r.table != nil {
			// Open decoded the same bytes already: no error is left.
			r.m.Chunks, _ = decodeChunkTable(r.table)
		}
	})
	return r.m
}

// Format returns the recording's format name, without decoding the chunk
// table into the manifest as Manifest does.
func (r *Recording) Format() string { return r.m.Format }

// Meta implements formats.Source. Events are not loaded (see Archive.Events).
func (r *Recording) Meta() *formats.Metadata { return &r.meta }

// Header implements formats.Source.
func (r *Recording) Header() []byte { return r.header }

// Trailer implements formats.Source.
func (r *Recording) Trailer() []byte { return r.trailer }

// Chunks implements formats.Source.
func (r *Recording) Chunks() []formats.Chunk { return r.chunks }

// Reads returns how many chunks have been read through r.
func (r *Recording) Reads() int { return int(r.reads.Load()) }

// decodeBlob decodes the shard value of a chunk of format whose manifest
// entry is e (chunkenc.Decode, crc as there) with the archive's decoder
// and the format's column transform (Options.Columns), naming the format
// when it has none.
func (a *Archive) decodeBlob(blob []byte, e ChunkEntry, format string, dst []byte, crc bool) (native, resume []byte, err error) {
	native, resume, err = chunkenc.Decode(a.decoder(), a.opts.Columns[format], blob, e.Length, e.CRC, dst, crc)
	if errors.Is(err, chunkenc.ErrNoColumns) {
		err = fmt.Errorf("%w: format %q", err, format)
	}
	return native, resume, err
}

// ReadChunk implements formats.Source: it reads chunk i from the shard in
// one short transaction, then decompresses and verifies it outside it.
func (r *Recording) ReadChunk(ctx context.Context, i int) (native, resume []byte, err error) {
	return r.ReadChunkInto(ctx, i, []byte{})
}

// ReadChunkInto implements formats.ChunkReaderInto: ReadChunk decoding
// into dst's storage when it is large enough.
func (r *Recording) ReadChunkInto(ctx context.Context, i int, dst []byte) (native, resume []byte, err error) {
	if dst == nil {
		dst = []byte{} // a precompressed chunk must not alias the pooled blob buffer
	}
	if i < 0 || i >= len(r.chunks) {
		return nil, nil, fmt.Errorf("archive: recording %s has no chunk %d", r.m.ID, i)
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	if r.m.Remote != "" {
		return r.readChunk(ctx, i, nil, nil, true)
	}
	// A seek reads one chunk: its blob is copied out of the shard into a
	// pooled buffer, which goes back when nothing returned points into it
	// (a streams blob's native bytes and resume state are copies; a zstd
	// blob's resume state is a piece of it).
	bufp := chunkenc.GetBuffer(0)
	native, resume, err = r.readChunk(ctx, i, bufp, dst[:0], true)
	if len(*bufp) > 0 && (*bufp)[0] == chunkenc.FlagStreams {
		chunkenc.PutBuffer(bufp)
	}
	return native, resume, err
}

// readChunk is ReadChunk copying the blob into *blobBuf (kept for the next
// call) and decoding into dst, when they are large enough. With blobBuf nil
// both are allocated; with blobBuf given, dst must not be nil (the native
// bytes of a precompressed chunk must not alias the reused blob buffer).
// Without crc a zstd chunk's CRC-32C is not checked (see chunkenc.Decode).
func (r *Recording) readChunk(ctx context.Context, i int, blobBuf *[]byte, dst []byte, crc bool) (native, resume []byte, err error) {
	c := r.chunks[i]
	e := ChunkEntry{StartTick: c.StartTick, Length: c.Length, CRC: r.crcs[i]}
	var buf []byte
	if blobBuf != nil {
		buf = *blobBuf
	}
	var blob []byte
	cached := false
	if r.m.Remote != "" {
		blob, cached, err = r.remoteBlob(ctx, i, buf, false)
	} else {
		blob, err = r.a.readBlobInto(r.m.Shard, r.m.owner(), e.StartTick, buf)
	}
	if err == nil {
		native, resume, err = r.a.decodeBlob(blob, e, r.m.Format, dst, crc)
		if err != nil && r.m.Live && i == len(r.chunks)-1 {
			// A grow rewrote the open tail since the recording was opened.
			native, resume, err = chunkenc.DecodeGrownTail(r.a.decoder(), blob, e.Length, e.CRC)
		}
		if err != nil && cached {
			// A damaged cache file: drop it and fetch the chunk again.
			r.a.chunkCache().Remove(chunkcache.Name(r.m.ID, r.offs[i]))
			if blob, _, err = r.remoteBlob(ctx, i, buf, true); err == nil {
				native, resume, err = r.a.decodeBlob(blob, e, r.m.Format, dst, crc)
			}
		}
	}
	if blobBuf != nil {
		*blobBuf = blob
	}
	if err != nil {
		return nil, nil, fmt.Errorf("archive: recording %s chunk %d (tick %d): %w", r.m.ID, i, e.StartTick, err)
	}
	r.reads.Add(1)
	return native, resume, nil
}

// readBlobInto copies one chunk blob out of its shard into buf's storage
// (grown if needed), following a reference to a shared blob.
func (a *Archive) readBlobInto(shard string, owner uuid.UUID, tick int64, buf []byte) ([]byte, error) {
	blob, _, err := a.blobInto(shard, owner, tick, buf, false)
	return blob, err
}

// blobInto is readBlobInto; with own, a chunk that refers to a shared blob
// is not followed: shared is set and nothing is read.
func (a *Archive) blobInto(shard string, owner uuid.UUID, tick int64, buf []byte, own bool) (blob []byte, shared bool, err error) {
	err = a.viewShard(shard, func(tx *bolt.Tx) error {
		s, key := chunksOf(tx), chunkKey(owner, tick)
		if own && s.chunks != nil {
			if _, shared = refTarget(s.chunks.Get(key)); shared {
				return nil
			}
		}
		v, err := s.get(key)
		if err != nil {
			return fmt.Errorf("shard %s: %w", shard, err)
		}
		if v == nil {
			return fmt.Errorf("chunk missing from shard %s", shard)
		}
		blob = append(buf[:0], v...)
		return nil
	})
	return blob, shared, err
}

// ErrChecksum is returned when exported bytes do not hash to the sha256
// recorded at ingest.
var ErrChecksum = fmt.Errorf("archive: exported bytes do not match the recorded sha256")

// WriteTo streams the whole native file to w and checks its sha256 at the
// end. The bytes are written as they are read, so on ErrChecksum w has
// already received them: callers that must not publish bad bytes write to
// a temporary file and rename it only on success, or call Verify first.
//
// Reading is pipelined over two cores: a goroutine reads and decompresses
// chunks (each checked by zstd's content checksum, or its CRC-32C when it
// has none) up to exportAhead chunks ahead, while this one hashes and
// writes them.
func (r *Recording) WriteTo(ctx context.Context, w io.Writer) (int64, error) {
	h := sha256.New()
	var n int64
	write := func(b []byte) error {
		h.Write(b)
		k, err := w.Write(b)
		n += int64(k)
		return err
	}
	if r.m.ChunksSHA256 {
		// A live recording whose header changes: its sha256 is of the
		// chunks (Manifest.ChunksSHA256).
		k, err := w.Write(r.header)
		if n = int64(k); err != nil {
			return n, err
		}
	} else if err := write(r.header); err != nil {
		return n, err
	}
	ctx, cancel := context.WithCancel(ctx)
	pieces := make(chan exportPiece, exportAhead)
	free := make(chan []byte, exportAhead+2)
	if r.m.Remote != "" {
		go r.remoteAhead(ctx, pieces, free)
	} else {
		go r.readAhead(ctx, pieces, free)
	}
	defer func() {
		cancel()
		for range pieces { // let the reader finish before returning
		}
	}()
	for p := range pieces {
		if p.err != nil {
			return n, p.err
		}
		if err := write(p.native); err != nil {
			return n, err
		}
		select {
		case free <- p.native:
		default:
		}
	}
	if err := ctx.Err(); err != nil {
		// The reader stopped early because the export was cancelled.
		return n, err
	}
	if err := write(r.trailer); err != nil {
		return n, err
	}
	if n != r.m.NativeBytes || hex.EncodeToString(h.Sum(nil)) != r.m.SHA256 {
		return n, fmt.Errorf("recording %s: %w", r.m.ID, ErrChecksum)
	}
	return n, nil
}

// exportAhead is how many decompressed chunks WriteTo's reader may hold
// ready: enough to ride out a slow write, few enough to bound memory (4 ×
// 64 KiB for teehistorian).
const exportAhead = 4

// exportBuffers is how many chunk buffers a whole export allocates before
// it waits for the writer to give one back: as many as can be out at once
// (exportAhead in order, one on its way to pieces, exportAhead in pieces,
// one being written, one being handed to a worker).
const exportBuffers = 2*exportAhead + 3

// exportPiece is one chunk handed from the reader to the writer, or the
// error that stopped the reader.
type exportPiece struct {
	native []byte
	err    error
}

// readAhead reads every chunk in order into pieces, then closes it. It
// stops at the first error (sent as the last piece) or when ctx ends.
// Chunks are independent, so exportWorkers goroutines read and decompress
// them at once (decompression is most of an export's work) while this one
// hands them on in order; at most exportAhead chunks are in flight.
// Buffers the writer is done with come back through free: a whole export
// allocates a handful of chunk buffers, not one per chunk.
func (r *Recording) readAhead(ctx context.Context, pieces chan<- exportPiece, free <-chan []byte) {
	defer close(pieces)
	ctx, cancel := context.WithCancel(ctx)
	type job struct {
		i   int
		dst []byte
		out chan exportPiece
	}
	jobs := make(chan job)
	order := make(chan chan exportPiece, exportAhead)
	var wg sync.WaitGroup
	defer wg.Wait() // no worker touches r once pieces is closed
	defer cancel()
	for range exportWorkers() {
		wg.Go(func() {
			var blobBuf []byte
			for j := range jobs {
				native, _, err := r.readChunk(ctx, j.i, &blobBuf, j.dst, false)
				j.out <- exportPiece{native, err}
			}
		})
	}
	wg.Go(func() {
		defer close(order)
		defer close(jobs)
		made := 0 // chunk buffers allocated (by readChunk, for dst = {})
		for i := range r.chunks {
			dst := []byte{} // never nil: see readChunk
			select {
			case dst = <-free:
			default:
				// None back yet: a new one up to exportBuffers, then
				// wait (taking a new one whenever the writer was
				// behind made a 15 MB export allocate 2.7 MB).
				if made < exportBuffers {
					made++
					break
				}
				select {
				case dst = <-free:
				case <-ctx.Done():
					return
				}
			}
			j := job{i, dst, make(chan exportPiece, 1)}
			select {
			case order <- j.out:
			case <-ctx.Done():
				return
			}
			select {
			case jobs <- j:
			case <-ctx.Done():
				j.out <- exportPiece{err: ctx.Err()}
				return
			}
		}
	})
	for out := range order {
		p := <-out
		if p.err == nil {
			p.err = ctx.Err()
		}
		select {
		case pieces <- p:
		case <-ctx.Done():
			return
		}
		if p.err != nil {
			return
		}
	}
}

// exportWorkers is how many goroutines decompress a whole export's chunks
// at once: one per core the process may use, up to 4.
func exportWorkers() int { return max(1, min(runtime.GOMAXPROCS(0), 4)) }

// Verify reads every chunk of the recording and checks per-chunk CRCs and
// the whole file's sha256, writing nothing.
func (r *Recording) Verify(ctx context.Context) error {
	_, err := r.WriteTo(ctx, io.Discard)
	return err
}
