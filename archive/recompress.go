// Recompressing sealed recordings at zstd's best level.
//
// Ingest compresses chunks and events at zstd's fastest level: the best
// level's encoder holds about 40 MiB of match tables, which a command's
// memory budget cannot carry beside an ingest, and it costs several times
// the CPU. A sealed recording no longer changes, so its chunks and its
// events can be encoded again, once, by a maintenance pass that can
// afford both: Recompress. The native bytes stay the same (every new blob
// is decoded and checked against the chunk's CRC-32C before it replaces
// the old one), so exports stay byte-identical and a seek still touches
// one chunk; a new events value must decode to the same JSON.
//
// A recording is done in batches of blobs. Each batch is written, under
// the commit lock, only while the manifest is still the one that was read
// (not deleted, replaced, grown or moved to the remote store). The chunk
// sizes in the manifest are updated last, with the events values; until
// then they may count the old blobs, which only stats and a remote upload
// read (uploads wait for a pass to end). Killed in between, an upload of
// that recording fails clearly (each blob's size is checked) until the
// next pass encodes the recording again and ends the same way.

package archive

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/google/uuid"
	"github.com/klauspost/compress/zstd"
	"github.com/replayarchive/replay/archive/internal/chunkenc"
	bolt "go.etcd.io/bbolt"
)

// RecompressOptions chooses what Recompress re-encodes.
type RecompressOptions struct {
	// OlderThan leaves alone recordings younger than this (by start time,
	// as retention measures age); 0 takes every sealed recording.
	OlderThan time.Duration
	// Now is the time ages are measured from (zero: the archive's clock).
	Now time.Time
	// Progress, if set, is called after each recording.
	Progress func(RecompressProgress)
	// DryRun only counts what the pass would re-encode: the report's
	// Recordings, Chunks, NativeBytes and StoredBefore.
	DryRun bool
	// Retrain trains every format's heads dictionary again from the
	// newest recordings (dicts.go), and compresses every heads record
	// again with it; without it a format is trained when it has no
	// dictionary or one made from few recordings.
	Retrain bool
}

// RecompressProgress reports a pass's progress after each recording.
type RecompressProgress struct {
	Done, Total   int       // recordings re-encoded so far, of those in scope
	ID            uuid.UUID // the recording just done
	StoredBefore  int64     // stored bytes of the recordings done so far, before
	StoredAfter   int64     // and after
	NativeBytes   int64     // native bytes of the recordings done so far
	ChunksWritten int       // chunks replaced so far
	Elapsed       time.Duration
}

// RecompressReport is what a Recompress pass did.
type RecompressReport struct {
	// Recordings counts the recordings re-encoded; Skipped those in scope
	// that changed under the pass (deleted, replaced, moved) and were left.
	Recordings int `json:"recordings"`
	Skipped    int `json:"skipped"`
	// AlreadyDone counts sealed recordings an earlier pass re-encoded;
	// NotSealed those still live or in the remote store.
	AlreadyDone int `json:"already_done"`
	NotSealed   int `json:"not_sealed"`
	// Chunks counts the chunks read; ChunksWritten those whose new blob
	// was smaller and replaced the old one.
	Chunks        int `json:"chunks"`
	ChunksWritten int `json:"chunks_written"`
	// Problems names chunks that could not be read back (damaged: see
	// Check with ReadData); they were left as they are.
	Problems    []string `json:"problems"`
	NativeBytes int64    `json:"native_bytes"`
	// StoredBefore and StoredAfter are the re-encoded recordings' stored
	// bytes (chunks, header, trailer and events) before and after.
	StoredBefore int64 `json:"stored_before"`
	StoredAfter  int64 `json:"stored_after"`
	// EventsSaved is what encoding their events again saved (part of
	// StoredBefore - StoredAfter).
	EventsSaved int64 `json:"events_saved"`
	// ShardsCompacted names the shards rewritten to give the freed pages
	// back; CatalogCompacted says the catalog was too.
	ShardsCompacted  []string `json:"shards_compacted"`
	CatalogCompacted bool     `json:"catalog_compacted"`
	// DictsTrained names the formats whose heads dictionary the pass
	// trained; HeadsRewritten counts the heads records (of any recording,
	// re-encoded by this pass or not) compressed again with their
	// format's dictionary, which saved HeadsSaved stored bytes.
	DictsTrained   []string `json:"dicts_trained"`
	HeadsRewritten int      `json:"heads_rewritten"`
	HeadsSaved     int64    `json:"heads_saved"`
	// DiskBefore and DiskAfter are the archive's bytes on disk.
	DiskBefore int64         `json:"disk_before"`
	DiskAfter  int64         `json:"disk_after"`
	Elapsed    time.Duration `json:"elapsed_ns"`
}

// recompressBatch bounds the new blobs held before they are written.
const recompressBatch = 4 << 20

// recompressCompactRatio: after a pass, a shard it wrote to (or the
// catalog) is compacted when its live pages take less than this part of
// the file. The pass frees the old blobs' pages, about the 5–10% it
// saves: worth a copy, since the pass runs rarely and on sealed data.
const recompressCompactRatio = 0.98

// errRecordingChanged stops the re-encoding of one recording that was
// deleted, replaced, grown or moved since the pass read its manifest.
var errRecordingChanged = errors.New("recording changed during the pass")

// bestEncoders are the best-level encoders of one pass, made on first use:
// whole chunks keep zstd's content checksum (a whole export relies on it),
// streams do without (the chunk's CRC-32C covers them).
type bestEncoders struct {
	whole, streams *zstd.Encoder
}

func (b *bestEncoders) get(streams bool) (*zstd.Encoder, error) {
	e := &b.whole
	if streams {
		e = &b.streams
	}
	if *e == nil {
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBestCompression),
			zstd.WithEncoderCRC(!streams), zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(chunkenc.Window))
		if err != nil {
			return nil, err
		}
		*e = enc
	}
	return *e, nil
}

// Recompress re-encodes the chunks of sealed recordings at zstd's best
// level and then compacts the shards it wrote to, so the bytes it saves go
// back to the file system. A recording is done once: its manifest records
// when (Manifest.Recompressed). It takes about 40 MiB of encoder tables.
func (a *Archive) Recompress(ctx context.Context, opts RecompressOptions) (*RecompressReport, error) {
	if a.opts.ReadOnly && !opts.DryRun {
		return nil, errors.New("archive: recompress: opened read-only")
	}
	a.recompressMu.Lock() // a scheduled pass and a requested one take turns
	defer a.recompressMu.Unlock()
	a.tier.uploadMu.Lock() // and uploads wait for the pass (see tierState)
	defer a.tier.uploadMu.Unlock()
	start := time.Now()
	now := opts.Now
	if now.IsZero() {
		now = a.opts.Now()
	}
	rep := &RecompressReport{ShardsCompacted: []string{}, Problems: []string{}, DictsTrained: []string{}}
	var err error
	if rep.DiskBefore, err = DiskUsage(a.dir); err != nil {
		return nil, fmt.Errorf("archive: recompress: %w", err)
	}
	var todo []uuid.UUID
	var sample headsSample
	err = a.List(ctx, func(m *Manifest) error {
		if !m.Live && m.Remote == "" {
			sample.add(m)
		}
		switch {
		case m.Live || m.Remote != "":
			rep.NotSealed++
		case !m.Recompressed.IsZero():
			rep.AlreadyDone++
		case opts.OlderThan <= 0 || now.Sub(recAge(m)) >= opts.OlderThan:
			todo = append(todo, m.ID)
			if opts.DryRun {
				rep.Recordings++
				rep.Chunks += len(m.Chunks)
				rep.NativeBytes += m.NativeBytes
				rep.StoredBefore += m.StoredBytes
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("archive: recompress: %w", err)
	}
	if opts.DryRun {
		rep.DiskAfter, rep.Elapsed = rep.DiskBefore, time.Since(start)
		return rep, nil
	}

	if rep.DictsTrained, err = a.trainHeadsDicts(ctx, &sample, opts.Retrain); err != nil {
		return rep, err
	}
	if rep.DictsTrained == nil {
		rep.DictsTrained = []string{}
	}

	pending, err := a.headsRewritePending()
	if err != nil {
		return rep, fmt.Errorf("archive: recompress: %w", err)
	}
	if pending {
		if rep.HeadsRewritten, rep.HeadsSaved, err = a.rewriteHeads(ctx); err != nil {
			return rep, fmt.Errorf("archive: recompress: heads: %w", err)
		}
	}

	var encs bestEncoders
	touched := map[string]bool{}
	prog := RecompressProgress{Total: len(todo)}
	for _, id := range todo {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		r, err := a.recompressOne(ctx, id, &encs, now)
		if errors.Is(err, errRecordingChanged) || errors.Is(err, ErrNotFound) {
			rep.Skipped++
			continue
		}
		if err != nil {
			return rep, fmt.Errorf("archive: recompress %s: %w", id, err)
		}
		touched[r.shard] = true
		rep.Problems = append(rep.Problems, r.problems...)
		rep.Recordings++
		rep.Chunks += r.chunks
		rep.ChunksWritten += r.written
		rep.NativeBytes += r.native
		rep.StoredBefore += r.before
		rep.StoredAfter += r.after
		rep.EventsSaved += r.eventsSaved
		if opts.Progress != nil {
			prog.Done++
			prog.ID = id
			prog.StoredBefore, prog.StoredAfter = rep.StoredBefore, rep.StoredAfter
			prog.NativeBytes, prog.ChunksWritten = rep.NativeBytes, rep.ChunksWritten
			prog.Elapsed = time.Since(start)
			opts.Progress(prog)
		}
	}

	names := make([]string, 0, len(touched))
	for name := range touched {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		did, err := a.tidyShard(name, recompressCompactRatio)
		if err != nil {
			return rep, err
		}
		if did == tidyCompacted {
			rep.ShardsCompacted = append(rep.ShardsCompacted, name)
		}
	}
	if rep.Recordings > 0 || rep.HeadsRewritten > 0 {
		if _, rep.CatalogCompacted, err = a.compactCatalog(recompressCompactRatio); err != nil {
			return rep, err
		}
	}
	if rep.DiskAfter, err = DiskUsage(a.dir); err != nil {
		return rep, fmt.Errorf("archive: recompress: %w", err)
	}
	rep.Elapsed = time.Since(start)
	return rep, nil
}

// recompressed is what recompressOne did to one recording.
type recompressed struct {
	problems        []string
	shard           string
	chunks, written int
	native          int64
	before, after   int64
	eventsSaved     int64
}

// recompressOne re-encodes the chunks of recording id with encs.
func (a *Archive) recompressOne(ctx context.Context, id uuid.UUID, encs *bestEncoders, now time.Time) (recompressed, error) {
	m, err := a.Manifest(id)
	if err != nil {
		return recompressed{}, err
	}
	if m.Live || m.Remote != "" || !m.Recompressed.IsZero() {
		return recompressed{}, errRecordingChanged
	}
	owner := m.owner()
	res := recompressed{shard: m.Shard, chunks: len(m.Chunks), native: m.NativeBytes, before: m.StoredBytes}
	stored := make([]int64, len(m.Chunks)) // new sizes; 0: unchanged
	var (
		blob, native []byte
		scratch      []byte
		cols         [][]byte
		choose       = chunkenc.Chooser{ProbeAll: true} // a pass apart from ingest tries both
		batch        [][]byte
		batchTicks   []int64
		batchBytes   int
	)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := a.whileUnchanged(m, func() error { return a.writeBlobs(m.Shard, owner, batchTicks, batch) })
		batch, batchTicks, batchBytes = batch[:0], batchTicks[:0], 0
		return err
	}
	for i, e := range m.Chunks {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		if e.Precompressed {
			continue
		}
		var shared bool
		if blob, shared, err = a.blobInto(m.Shard, owner, e.StartTick, blob, true); err != nil {
			return res, fmt.Errorf("chunk %d (tick %d): %w", i, e.StartTick, err)
		}
		if shared {
			// Encoding it again would give this recording a blob of
			// its own beside the shared one, undoing a saving far
			// larger than the best level's.
			continue
		}
		if len(blob) == 0 || blob[0]&(chunkenc.FlagZstd|chunkenc.FlagStreams) == 0 {
			continue // stored as it is: nothing of ours to encode again
		}
		nat, resume, err := a.decodeBlob(blob, e, m.Format, native, true)
		if err != nil {
			// A damaged chunk is left as it is, for check to report:
			// the rest of the recording is still worth the pass.
			res.problems = append(res.problems, fmt.Sprintf("%s: chunk %d (tick %d): %v", id, i, e.StartTick, err))
			continue
		}
		native = nat[:0]
		var nb []byte
		if blob[0] == chunkenc.FlagStreams {
			col := a.opts.Columns[m.Format]
			enc, err := encs.get(true)
			if err != nil {
				return res, err
			}
			nb = chunkenc.EncodeColumns(enc, &choose, col, &cols, &scratch, resume, nat)
		} else {
			enc, err := encs.get(false)
			if err != nil {
				return res, err
			}
			nb = chunkenc.Encode(enc, &scratch, resume, nat, false)
		}
		if len(nb) >= len(blob) {
			continue
		}
		// The new blob must give the same bytes back before it replaces
		// the old one.
		check, _, err := a.decodeBlob(nb, e, m.Format, nil, true)
		if err != nil || len(check) != len(nat) {
			return res, fmt.Errorf("chunk %d (tick %d): re-encoded blob does not decode to the chunk: %v", i, e.StartTick, err)
		}
		stored[i] = int64(len(nb))
		batch = append(batch, nb)
		batchTicks = append(batchTicks, e.StartTick)
		batchBytes += len(nb)
		res.written++
		if batchBytes >= recompressBatch {
			if err := flush(); err != nil {
				return res, err
			}
		}
	}
	if err := flush(); err != nil {
		return res, err
	}
	events, err := a.encodeEventsAgain(ctx, id, encs, maxEventsJSON)
	if err != nil {
		return res, err
	}
	err = a.whileUnchanged(m, func() error {
		return a.catalog.Update(func(tx *bolt.Tx) error {
			cur, err := getManifest(tx, id)
			if err != nil {
				return err
			}
			for i, s := range stored {
				if s > 0 {
					cur.StoredBytes += s - cur.Chunks[i].Stored
					cur.Chunks[i].Stored = s
				}
			}
			b := tx.Bucket(bucketEvents)
			for _, v := range events {
				if !bytes.Equal(b.Get(v.key), v.old) {
					continue // rewritten since it was read: left as it is now
				}
				if err := b.Put(v.key, v.new); err != nil {
					return err
				}
				saved := int64(len(v.old) - len(v.new))
				cur.StoredBytes -= saved
				res.eventsSaved += saved
			}
			cur.Recompressed = now.UTC()
			res.after = cur.StoredBytes
			return putManifest(tx, cur)
		})
	})
	return res, err
}

// maxEventsJSON bounds the JSON of one events value that a pass encodes
// again, which it holds whole: the 200 five-minute games hold 62 KB each
// (their events took 0.41% of the stored bytes back at the best level).
// A larger value, of a server's recording of days, is left as it is.
const maxEventsJSON = 16 << 20

// eventsValue is one events value of a recording encoded again: its key,
// the value the pass read and the smaller one that replaces it.
type eventsValue struct {
	key, old, new []byte
}

// encodeEventsAgain encodes each events value of recording id (ingest
// writes them at zstd's fastest level, events.go) at the best level, and
// returns those that came out smaller and decode to the same JSON. A
// value whose JSON exceeds limit bytes, or that does not decode, is left
// as it is (check reports a damaged one).
func (a *Archive) encodeEventsAgain(ctx context.Context, id uuid.UUID, encs *bestEncoders, limit int) ([]eventsValue, error) {
	var vals []eventsValue
	err := a.catalog.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketEvents)
		for _, k := range eventKeys(tx, id) {
			vals = append(vals, eventsValue{key: k, old: bytes.Clone(b.Get(k))})
		}
		return nil
	})
	if err != nil || len(vals) == 0 {
		return nil, err
	}
	zr, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true), zstd.WithDecoderMaxMemory(1<<30))
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	decode := func(blob []byte) ([]byte, bool) {
		if zr.Reset(bytes.NewReader(blob)) != nil {
			return nil, false
		}
		plain, err := io.ReadAll(io.LimitReader(zr, int64(limit)+1))
		return plain, err == nil && len(plain) <= limit
	}
	var out []eventsValue
	for _, v := range vals {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		plain, ok := decode(v.old)
		if !ok {
			continue
		}
		enc, err := encs.get(false)
		if err != nil {
			return nil, err
		}
		v.new = enc.EncodeAll(plain, nil)
		if len(v.new) >= len(v.old) {
			continue
		}
		if back, ok := decode(v.new); !ok || !bytes.Equal(back, plain) {
			return nil, fmt.Errorf("events value %x: encoded again, it does not decode to its JSON", v.key)
		}
		out = append(out, v)
	}
	return out, nil
}

// whileUnchanged runs fn under the commit lock if recording m is still as
// the pass read it, and returns errRecordingChanged if not.
func (a *Archive) whileUnchanged(m *Manifest, fn func() error) error {
	a.commitMu.Lock()
	defer a.commitMu.Unlock()
	cur, err := a.Manifest(m.ID)
	if errors.Is(err, ErrNotFound) {
		return errRecordingChanged
	}
	if err != nil {
		return err
	}
	if cur.Live || cur.Remote != "" || cur.owner() != m.owner() || cur.Shard != m.Shard ||
		cur.SHA256 != m.SHA256 || len(cur.Chunks) != len(m.Chunks) {
		return errRecordingChanged
	}
	return fn()
}
