// The archive's on-disk layout, in one place: every bbolt bucket, how its
// keys and values are encoded, and the encoders and decoders of the binary
// values. The JSON values are the Go types named below, in their own files.

package archive

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/klauspost/compress/zstd"
	"github.com/replayarchive/replay/formats"
)

// An archive directory holds:
//
//	catalog.db           the source of truth (the catalog buckets below)
//	catalog.db.compacting  a catalog compaction's copy (removed by Open)
//	shards/NAME.db       chunk blobs, one file per ShardPeriod (bucketChunks)
//	shards/NAME.db.compacting  a shard compaction's copy (removed by Open)
//	index/               the search index, derived from the catalog (package query)
//
// All integers in keys are big-endian, so that bbolt's byte order is
// numeric order; ids are a uuid's 16 bytes.

// Catalog buckets. Open creates all but the audit and token buckets, which
// are created by their first write.
var (
	// bucketRecordings: id (16 B) → Manifest JSON (manifest.go), its chunk
	// table in binary (appendChunkTable) at the end of the value.
	bucketRecordings = []byte("recordings")
	// bucketSessions: session ‖ 0 ‖ id (16 B) → nil (sessionKey).
	bucketSessions = []byte("sessions")
	// bucketSources: sha256 of the ingested file (32 B) → id (16 B).
	bucketSources = []byte("sources")
	// bucketSourceSizes: a file's size (8 B) ‖ its sha256 (32 B) → nil
	// (sourceSizeKey), for each bucketSources entry and each takedown that
	// knows its size: a file of a size none has is neither archived nor
	// taken down, which an ingest knows without reading the file
	// (Archive.MayHoldSize). Open builds it for a catalog written before
	// it.
	bucketSourceSizes = []byte("source_sizes")
	// bucketHeads: id (16 B) → the native header and trailer (encodeHeads).
	bucketHeads = []byte("heads")
	// bucketEvents: a recording's events as zstd(JSON []formats.Event)
	// values, absent when it has none: id (16 B) → every event, written
	// at once by an ingest; a live recording's are pieces, id ‖ number of
	// the piece's first event (8 B, eventPieceKey) → the events from it up
	// to the next piece (events.go). The recording's events are its
	// values' arrays in key order (a recording that started live under an
	// older build has both: its bare id's value first).
	bucketEvents = []byte("events")
	// bucketChanges: seq (8 B, seqKey) → Change JSON (catalog.go), the log
	// the search index follows.
	bucketChanges = []byte("changes")
	// bucketSettings: name → JSON; settingPolicy → Policy (retention.go),
	// settingRemote → RemoteConfig (remote.go).
	bucketSettings = []byte("settings")
	// bucketTombstones: chunk owner id (16 B) → tombstone JSON, a delete
	// whose chunks are not yet swept (delete.go).
	bucketTombstones = []byte("tombstones")
	// bucketTakedowns: sha256 (32 B) → Takedown JSON (takedown.go).
	bucketTakedowns = []byte("takedowns")
	// bucketTakedownIdents: an identity a takedown refuses besides its
	// bytes ‖ the takedown's sha256 (32 B) → nil: identIDPrefix(id) for
	// the recording id and the id its file names, identSessionPrefix for
	// its session. Open builds it for a catalog written before it.
	bucketTakedownIdents = []byte("takedown_idents")
	// bucketTakenDown: id (16 B) → the manifest (as in bucketRecordings)
	// of a recording taken down and kept until its purge (Takedown.PurgeAt);
	// its heads, events, live state and chunks stay under its id. Created
	// by the first takedown with a grace period, so readers must allow it
	// to be missing.
	bucketTakenDown = []byte("taken_down")
	// bucketAudit: seq (8 B, seqKey) → AuditEntry JSON (audit.go).
	bucketAudit = []byte("audit")
	// bucketAuditRec: recording id (16 B) ‖ seq (8 B) → nil (auditRecKey),
	// the audit entries of one recording.
	bucketAuditRec = []byte("audit_rec")
	// bucketTokens: name → Token JSON (tokens.go).
	bucketTokens = []byte("tokens")
	// bucketLive: id (16 B) → liveState JSON of a recording that still
	// grows (live.go); created by the first live commit, so readers must
	// allow it to be missing.
	bucketLive = []byte("live")
)

// settingPolicy is the retention policy's key in bucketSettings.
var settingPolicy = []byte("retention")

// settingRemote is the RemoteConfig's key in bucketSettings (remote.go).
var settingRemote = []byte("remote")

// bucketChunks is a shard's one bucket: chunk owner id (16 B) ‖ start tick
// (8 B) → chunk blob (encodeBlob). The owner is the recording id, or for a
// recording spilled during ingest the provisional id its chunks went under
// (the manifest's ChunkOwner). A blob held by several chunks is stored once
// under the nil uuid ‖ a sequence number and the chunks refer to it
// (shared.go, with its buckets bucketContent and bucketRefs).
var bucketChunks = []byte("chunks")

// seqKey is the key of a change log or audit entry.
func seqKey(seq uint64) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], seq)
	return k[:]
}

// seqOf decodes a seqKey.
func seqOf(k []byte) uint64 { return binary.BigEndian.Uint64(k) }

// sessionKey is a bucketSessions key: the session first, so that a cursor
// seek lists a session's recordings.
func sessionKey(session string, id uuid.UUID) []byte {
	return append(sessionPrefix(session), id[:]...)
}

// sessionPrefix is what the bucketSessions keys of session start with; the
// recording id (16 B) follows it.
func sessionPrefix(session string) []byte {
	k := make([]byte, 0, len(session)+1+16)
	return append(append(k, session...), 0)
}

// identIDPrefix is what the bucketTakedownIdents keys of recording id
// start with.
func identIDPrefix(id uuid.UUID) []byte {
	return append([]byte{'i'}, id[:]...)
}

// identSessionPrefix is what the bucketTakedownIdents keys of session
// start with.
func identSessionPrefix(session string) []byte {
	k := make([]byte, 0, 2+len(session)+32)
	return append(append(append(k, 's'), session...), 0)
}

// auditRecKey is a bucketAuditRec key: the recording id first, so that a
// cursor walks one recording's entries.
func auditRecKey(id uuid.UUID, seq uint64) []byte {
	k := make([]byte, 0, 24)
	k = append(k, id[:]...)
	return binary.BigEndian.AppendUint64(k, seq)
}

// auditRecEntry returns the bucketAudit key (a seqKey) of the entry that
// auditRecKey k points to.
func auditRecEntry(k []byte) []byte { return k[16:] }

// chunkKey is a bucketChunks key.
func chunkKey(id uuid.UUID, tick int64) []byte {
	k := make([]byte, 24)
	copy(k, id[:])
	binary.BigEndian.PutUint64(k[16:], uint64(tick))
	return k
}

// tombstone is a bucketTombstones value: where the chunks of a deleted
// recording are, and how many bytes they hold.
type tombstone struct {
	Shard  string    `json:"shard"`
	Owner  uuid.UUID `json:"owner"`
	Stored int64     `json:"stored"`
	// ID and Remote name a recording's bucket objects once it moved to the
	// remote store (remote.go); Sweep deletes them.
	ID     uuid.UUID `json:"id,omitzero"`
	Remote string    `json:"remote,omitempty"`
}

// encodeHeads builds a bucketHeads value: uvarint len(zstd header) ‖ zstd
// header ‖ zstd trailer; an empty piece is stored as zero bytes.
func (a *Archive) encodeHeads(header, trailer []byte) []byte {
	var h, t []byte
	if len(header) > 0 {
		h = a.enc.EncodeAll(header, nil)
	}
	if len(trailer) > 0 {
		t = a.enc.EncodeAll(trailer, nil)
	}
	out := binary.AppendUvarint(nil, uint64(len(h)))
	out = append(out, h...)
	return append(out, t...)
}

// decodeHeads reverses encodeHeads, checking the sizes the manifest gives.
func (a *Archive) decodeHeads(blob []byte, headerLen, trailerLen int64) (header, trailer []byte, err error) {
	n, k := binary.Uvarint(blob)
	if k <= 0 || n > uint64(len(blob)-k) {
		return nil, nil, fmt.Errorf("corrupt heads record")
	}
	h, t := blob[k:k+int(n)], blob[k+int(n):]
	if len(h) > 0 {
		if header, err = a.decodeBounded(h, headerLen); err != nil {
			return nil, nil, fmt.Errorf("header: %w", err)
		}
	}
	if len(t) > 0 {
		if trailer, err = a.decodeBounded(t, trailerLen); err != nil {
			return nil, nil, fmt.Errorf("trailer: %w", err)
		}
	}
	if int64(len(header)) != headerLen || int64(len(trailer)) != trailerLen {
		return nil, nil, fmt.Errorf("heads record holds %d+%d bytes, manifest says %d+%d", len(header), len(trailer), headerLen, trailerLen)
	}
	return header, trailer, nil
}

// crcTable is the CRC-32C of ChunkEntry.CRC, over a chunk's native bytes.
var crcTable = crc32.MakeTable(crc32.Castagnoli)

// encodeBlob lays out a shard value: flags (bit 0: zstd) ‖ uvarint
// len(resume) ‖ resume ‖ payload. (Chunks of formats with a transform are
// laid out by encodeStreamsBlob instead, flag bit 1.)
//
// scratch is reused between calls to compress into; the returned blob is a
// fresh slice of exactly its size, since it is kept until the commit.
func (a *Archive) encodeBlob(scratch *[]byte, resume, native []byte, precompressed bool) []byte {
	return encodeBlobWith(a.enc, scratch, resume, native, precompressed)
}

// encodeBlobWith is encodeBlob with a given encoder.
func encodeBlobWith(enc *zstd.Encoder, scratch *[]byte, resume, native []byte, precompressed bool) []byte {
	flags := byte(0)
	if !precompressed {
		flags = blobZstd
	}
	head := make([]byte, 0, 1+binary.MaxVarintLen64+len(resume))
	head = append(head, flags)
	head = binary.AppendUvarint(head, uint64(len(resume)))
	head = append(head, resume...)
	payload := native
	if !precompressed {
		*scratch = enc.EncodeAll(native, (*scratch)[:0])
		payload = *scratch
	}
	out := make([]byte, len(head)+len(payload))
	copy(out, head)
	copy(out[len(head):], payload)
	return out
}

// Blob flags (the first byte of a shard value).
const (
	// blobZstd: the payload is one zstd frame of the native bytes.
	blobZstd = 1 << 0
	// blobStreams: the blob is laid out by encodeStreamsBlob.
	blobStreams = 1 << 1
	// blobRef: the value is a reference to a shared blob: blobRef ‖ the
	// shared blob's chunk key (shared.go). Readers only ever see the blob
	// it names.
	blobRef = 1 << 2
)

// Transforms of a streams blob (its second byte). A build that meets a
// transform it does not know refuses the chunk with errUnknownTransform,
// so an archive written by a newer build fails clearly, never silently.
const (
	// transformColumns: the native bytes as the streams of the format's
	// formats.Columnar (Options.Columns; for teehistorian, record columns:
	// formats/teehistorian columns.go).
	transformColumns = 1
)

// errUnknownTransform is returned for a streams blob whose transform this
// build does not have.
var errUnknownTransform = errors.New("chunk uses a transform this build does not know (written by a newer version?)")

// errNoColumns is returned for a streams blob of a format the archive was
// opened without a formats.Columnar for (Options.Columns).
var errNoColumns = errors.New("chunk is stored as columns, but the archive has no column transform for its format")

// A streams blob (flags bit 1; archives written before it hold none):
//
//	flags (blobStreams) ‖ transform (1 B) ‖ uvarint k ‖
//	k × (uvarint stored<<1 | zstd, then uvarint native size if zstd) ‖
//	the k streams' stored bytes, in order
//
// Stream 0 is the resume state, streams 1..k-1 the transform's streams.
// Each stream is one zstd frame (no frame checksum: the chunk's CRC-32C
// covers the result) or, when that is not smaller, its bytes as they are:
// each field kind gets its own entropy tables.

// maxStreams bounds k, so that a corrupt count allocates nothing large.
const maxStreams = 64

// encodeStreamsBlob lays out a streams blob of native under
// transformColumns with the streams col splits it into (reusing cols),
// compressing each stream with enc or as a literals frame (see
// encodeStreams).
func encodeStreamsBlob(enc *zstd.Encoder, ch *streamChooser, col formats.Columnar, cols *[][]byte, scratch *[]byte, resume, native []byte) []byte {
	*cols = col.SplitColumns(native, *cols)
	return encodeStreams(enc, ch, *cols, scratch, resume)
}

// encodeStreams lays out a streams blob under transformColumns of a
// chunk's resume state and the streams its format's transform split it
// into, each stream a zstd frame made by enc or a literals frame, as ch
// chooses. scratch is reused between calls: the streams are encoded one
// after the other into it, and the blob is its one allocation.
func encodeStreams(enc *zstd.Encoder, ch *streamChooser, cols [][]byte, scratch *[]byte, resume []byte) []byte {
	k := 1 + len(cols)
	head := make([]byte, 0, 2+binary.MaxVarintLen64*(1+2*k))
	head = append(head, blobStreams, transformColumns)
	head = binary.AppendUvarint(head, uint64(k))
	body := (*scratch)[:0]
	for i := range k {
		s := resume
		if i > 0 {
			s = cols[i-1]
		}
		start, z := len(body), uint64(0)
		if len(s) >= minStreamZstd {
			body, z = ch.encode(enc, i, body, s)
		}
		if z == 0 {
			body = append(body, s...)
		}
		head = binary.AppendUvarint(head, uint64(len(body)-start)<<1|z)
		if z == 1 {
			head = binary.AppendUvarint(head, uint64(len(s)))
		}
	}
	ch.chunks++
	*scratch = body
	out := make([]byte, 0, len(head)+len(body))
	return append(append(out, head...), body...)
}

// streamChooser decides, stream by stream, whether a chunk's stream is
// compressed by the encoder or as a literals frame (literals.go), from
// the chunks it has seen: every probeEvery'th chunk (every chunk with
// probeAll) tries both and keeps the smaller, and the chunks between
// take for each stream what won its last try. So a column of symbols
// that the encoder's matches make larger is Huffman-coded alone, in a
// fraction of the encoder's time, whatever the data: the choice is the
// archive's own measurement, not a list of columns.
type streamChooser struct {
	lits     literalsCoder
	probeAll bool
	chunks   int
	useLits  [maxStreams]bool
}

// probeEvery is how often a chooser tries both ways on every stream.
const probeEvery = 16

// encode appends stream i of the current chunk, s, to body as a zstd
// frame (z 1) or leaves body as it was (z 0: s is stored as it is).
func (ch *streamChooser) encode(enc *zstd.Encoder, i int, body, s []byte) (_ []byte, z uint64) {
	if i >= len(ch.useLits) {
		// More streams than a blob may hold (decodeStreamsBlob refuses
		// the blob) have no choice kept: the encoder codes them.
		return zstdFrame(enc, body, s)
	}
	probe := ch.probeAll || ch.chunks%probeEvery == 0
	if !probe && ch.useLits[i] {
		if out, ok := ch.lits.appendFrame(body, s); ok {
			return out, 1
		}
	}
	start := len(body)
	if body, z = zstdFrame(enc, body, s); !probe {
		return body, z
	}
	mark := len(body)
	out, ok := ch.lits.appendFrame(body, s)
	ch.useLits[i] = ok && (z == 0 || len(out)-mark < mark-start)
	if !ch.useLits[i] {
		return out[:mark], z
	}
	n := copy(out[start:], out[mark:])
	return out[:start+n], 1
}

// zstdFrame appends s to body as a zstd frame made by enc (z 1), or
// leaves body as it was when the frame would not be smaller (z 0).
func zstdFrame(enc *zstd.Encoder, body, s []byte) (_ []byte, z uint64) {
	start := len(body)
	if body = enc.EncodeAll(s, body); len(body)-start < len(s) {
		return body, 1
	}
	return body[:start], 0
}

// minStreamZstd is the smallest stream worth a zstd frame: a frame's
// header and block header cost about 8 bytes.
const minStreamZstd = 16

// decodeStreamsBlob reverses encodeStreamsBlob for a chunk of format,
// appending the native bytes to dst; want is the native size the manifest
// records, which bounds what the streams may claim.
func (a *Archive) decodeStreamsBlob(blob []byte, format string, want int64, dst []byte) (native, resume []byte, err error) {
	if len(blob) < 3 {
		return nil, nil, errors.New("streams blob too short")
	}
	if blob[1] != transformColumns {
		return nil, nil, fmt.Errorf("%w: transform %d", errUnknownTransform, blob[1])
	}
	col := a.opts.Columns[format]
	if col == nil {
		return nil, nil, fmt.Errorf("%w: format %q", errNoColumns, format)
	}
	if want < 0 || want > MaxChunkBytes {
		return nil, nil, fmt.Errorf("recorded size %d is out of range (corrupt manifest?)", want)
	}
	r := tableReader{b: blob, off: 2}
	k := r.uvarint("stream count")
	if r.err == nil && (k < 1 || k > maxStreams) {
		return nil, nil, fmt.Errorf("streams blob holds %d streams, want 1..%d", k, maxStreams)
	}
	type stream struct {
		stored, native int
		zstd           bool
	}
	var stArr [maxStreams]stream
	st := stArr[:min(k, maxStreams)]
	total := 0 // native bytes of all streams
	for i := range st {
		v := r.uvarint("stream size")
		st[i] = stream{stored: int(min(v>>1, uint64(len(blob)))), zstd: v&1 != 0}
		st[i].native = st[i].stored
		if st[i].zstd {
			st[i].native = int(min(r.uvarint("stream native size"), 2*MaxChunkBytes))
		}
		total += st[i].native
	}
	if r.err != nil {
		return nil, nil, fmt.Errorf("streams blob header: %w", r.err)
	}
	// The resume state is small; the columns hold the native bytes plus
	// nothing: a total above both is a corrupt blob, refused before any
	// allocation.
	if int64(total) > want+MaxChunkBytes {
		return nil, nil, fmt.Errorf("streams blob claims %d bytes for a chunk of %d", total, want)
	}
	bufp := getStreamsBuf(total + decodeSlack)
	defer streamsBufs.Put(bufp)
	buf := (*bufp)[:0]
	var partsArr [maxStreams][]byte
	parts := partsArr[:len(st)]
	off := r.off
	for i, s := range st {
		if s.stored > len(blob)-off {
			return nil, nil, fmt.Errorf("stream %d: %d bytes at offset %d, blob has %d", i, s.stored, off, len(blob))
		}
		src := blob[off : off+s.stored]
		off += s.stored
		start := len(buf)
		if s.zstd {
			out, err := a.dec.DecodeAll(src, buf)
			if err != nil {
				return nil, nil, fmt.Errorf("stream %d: %w", i, err)
			}
			if len(out)-start != s.native {
				return nil, nil, fmt.Errorf("stream %d: decoded %d bytes, want %d", i, len(out)-start, s.native)
			}
			buf = out
		} else {
			buf = append(buf, src...)
		}
		parts[i] = buf[start:len(buf):len(buf)]
	}
	if off != len(blob) {
		return nil, nil, fmt.Errorf("%d bytes after the last stream", len(blob)-off)
	}
	native, err = col.JoinColumns(dst, parts[1:])
	if err != nil {
		return nil, nil, err
	}
	// The streams' buffer goes back to the pool: the resume state, small,
	// is copied out of it.
	return native, bytes.Clone(parts[0]), nil
}

// streamsBufs holds the buffers (*[]byte) decodeStreamsBlob decodes a
// chunk's streams into, and ReadChunk copies a streams blob into. A chunk
// read used to allocate one, 64 KiB and more for teehistorian, only to
// join it: a whole export page-faulted fresh memory for every chunk, and
// the collector ran for it. A sync.Pool, unlike the encoders' pools
// (encoders.go): a buffer is cheap to make again after a collection, and
// as many are in use as chunks are read at once, which has no bound to
// keep.
var streamsBufs sync.Pool

// getStreamsBuf returns a buffer from streamsBufs with room for n bytes.
func getStreamsBuf(n int) *[]byte {
	bufp, _ := streamsBufs.Get().(*[]byte)
	if bufp == nil {
		bufp = new([]byte)
	}
	if cap(*bufp) < n {
		*bufp = make([]byte, 0, n)
	}
	return bufp
}

// decodeBlob reverses encodeBlob, checking the native length and CRC.
// format names the chunk's format, whose Columnar a streams blob needs.
func (a *Archive) decodeBlob(blob []byte, e ChunkEntry, format string) (native, resume []byte, err error) {
	return a.decodeBlobInto(blob, e, format, nil)
}

// decodeBlobInto is decodeBlob decoding into dst when it is large enough
// (whole exports cycle a few buffers instead of allocating one per chunk).
// The native bytes never alias blob when dst is given.
func (a *Archive) decodeBlobInto(blob []byte, e ChunkEntry, format string, dst []byte) (native, resume []byte, err error) {
	return a.decodeBlobCRC(blob, e, format, dst, true)
}

// decodeBlobCRC is decodeBlobInto checking the CRC-32C of a zstd chunk
// only if crc is set. A whole export leaves it unset: zstd checks its
// frame's content checksum (xxhash64 of the native bytes) as it decodes,
// which names a corrupt chunk as the CRC would, and the sha256 of the whole
// file covers every byte once more (including a frame whose header lost its
// checksum flag). Precompressed chunks, which have no frame, and streams
// blobs, whose frames carry no checksum, are always checked.
func (a *Archive) decodeBlobCRC(blob []byte, e ChunkEntry, format string, dst []byte, crc bool) (native, resume []byte, err error) {
	if len(blob) < 2 {
		return nil, nil, errors.New("blob too short")
	}
	flags := blob[0]
	if flags != 0 && flags != blobZstd && flags != blobStreams {
		return nil, nil, fmt.Errorf("unknown blob flags %#x (written by a newer version?)", flags)
	}
	if flags == blobStreams {
		native, resume, err = a.decodeStreamsBlob(blob, format, e.Length, dst[:0:cap(dst)])
		if err != nil {
			return nil, nil, err
		}
	} else {
		n, k := binary.Uvarint(blob[1:])
		if k <= 0 || n > uint64(len(blob)-1-k) {
			return nil, nil, errors.New("blob resume length out of range")
		}
		resume = blob[1+k : 1+k+int(n)]
		payload := blob[1+k+int(n):]
		switch {
		case flags&blobZstd != 0:
			native, err = a.decodeChunk(payload, e.Length, dst)
			if err != nil {
				return nil, nil, err
			}
		case dst != nil:
			native = append(dst[:0], payload...)
		default:
			native = payload
		}
	}
	if int64(len(native)) != e.Length {
		return nil, nil, fmt.Errorf("chunk holds %d bytes, index says %d", len(native), e.Length)
	}
	if (crc || flags != blobZstd) && crc32.Checksum(native, crcTable) != e.CRC {
		return nil, nil, errors.New("chunk checksum mismatch")
	}
	return native, resume, nil
}

// decodeChunk is decodeBounded with room to spare in the output buffer:
// zstd's fast decoding loops write up to 16 bytes past what they decode,
// and on a buffer without that room it falls back to a careful loop that
// took twice the time of a whole export.
func (a *Archive) decodeChunk(blob []byte, want int64, dst []byte) ([]byte, error) {
	if want < 0 || want > MaxChunkBytes {
		return nil, fmt.Errorf("recorded size %d is out of range (corrupt manifest?)", want)
	}
	// Pre-size for the recorded length, but not beyond 16 MiB: a corrupt
	// length must not buy a large allocation with a tiny blob.
	if int64(cap(dst)) < min(want, 16<<20)+decodeSlack {
		dst = make([]byte, 0, min(want, 16<<20)+decodeSlack)
	}
	out, err := a.dec.DecodeAll(blob, dst[:0])
	if err != nil {
		return nil, err
	}
	if int64(len(out)) != want {
		return nil, fmt.Errorf("decoded %d bytes, want %d", len(out), want)
	}
	return out, nil
}

// decodeSlack is the spare capacity zstd's fast decoding loops need
// (compressedBlockOverAlloc in klauspost/compress), with a margin.
const decodeSlack = 64

// The chunk table is stored in binary, not as a JSON list: decoding 15,843
// JSON entries was 56% of the CPU time of opening a 1 GB recording; the
// binary table decodes in well under a millisecond.
//
// A manifest's JSON holds it as "ct", base64 by encoding/json:
//
//	version(1) uvarint(count) then per chunk:
//	  varint  StartTick − end of the previous chunk (StartTick+Ticks; 0 first)
//	  uvarint Ticks<<1 | Precompressed
//	  varint  Time − previous Time
//	  varint  Offset − end of the previous chunk (Offset+Length; 0 first)
//	  uvarint Length
//	  uvarint Stored
//	  uint32  CRC, little-endian
//
// Manifests written before it hold "chunks" as a JSON list; both are read.
const chunkTableVersion = 1

// minChunkEntry is the smallest encoded chunk entry, which bounds the count
// a table of a given size can claim.
const minChunkEntry = 6 + 4

// appendChunkTable appends the binary form of chunks to b.
func appendChunkTable(b []byte, chunks []ChunkEntry) []byte {
	b = append(b, chunkTableVersion)
	b = binary.AppendUvarint(b, uint64(len(chunks)))
	var endTick, endOff int64
	var prevTime time.Duration
	for _, c := range chunks {
		b = binary.AppendVarint(b, c.StartTick-endTick)
		ticks := uint64(c.Ticks) << 1
		if c.Precompressed {
			ticks |= 1
		}
		b = binary.AppendUvarint(b, ticks)
		b = binary.AppendVarint(b, int64(c.Time-prevTime))
		b = binary.AppendVarint(b, c.Offset-endOff)
		b = binary.AppendUvarint(b, uint64(c.Length))
		b = binary.AppendUvarint(b, uint64(c.Stored))
		b = binary.LittleEndian.AppendUint32(b, c.CRC)
		endTick, endOff, prevTime = c.StartTick+c.Ticks, c.Offset+c.Length, c.Time
	}
	return b
}

// decodeChunkTable reads a table written by appendChunkTable.
func decodeChunkTable(b []byte) ([]ChunkEntry, error) {
	var out []ChunkEntry
	err := eachChunkEntry(b, func(n int) { out = make([]ChunkEntry, 0, n) }, func(c *ChunkEntry) { out = append(out, *c) })
	if err != nil {
		return nil, err
	}
	return out, nil
}

// eachChunkEntry decodes table b, calling count with the number of entries
// (checked against the table's size before anything is allocated) and then
// fn with each entry, which it must copy to keep.
func eachChunkEntry(b []byte, count func(n int), fn func(c *ChunkEntry)) error {
	if len(b) == 0 || b[0] != chunkTableVersion {
		return fmt.Errorf("archive: chunk table: want version %d at offset 0", chunkTableVersion)
	}
	r := tableReader{b: b, off: 1}
	n := r.uvarint("count")
	if r.err == nil && n > uint64(len(b)-r.off)/minChunkEntry {
		return fmt.Errorf("archive: chunk table claims %d chunks in %d bytes", n, len(b))
	}
	count(int(n))
	var endTick, endOff int64
	var prevTime time.Duration
	i := uint64(0)
	var c ChunkEntry // one for all: fn must copy it
	for ; i < n && r.err == nil; i++ {
		c = ChunkEntry{}
		c.StartTick = endTick + r.varint("start tick")
		ticks := r.uvarint("ticks")
		c.Ticks, c.Precompressed = int64(ticks>>1), ticks&1 != 0
		c.Time = prevTime + time.Duration(r.varint("time"))
		c.Offset = endOff + r.varint("offset")
		c.Length = r.size("length")
		c.Stored = r.size("stored size")
		c.CRC = r.uint32()
		endTick, endOff, prevTime = c.StartTick+c.Ticks, c.Offset+c.Length, c.Time
		if r.err == nil {
			fn(&c)
		}
	}
	if r.err == nil && r.off != len(b) {
		r.err = fmt.Errorf("%d bytes after the last chunk", len(b)-r.off)
	}
	if r.err != nil {
		return fmt.Errorf("archive: chunk table entry %d (offset %d): %w", max(i, 1)-1, r.off, r.err)
	}
	return nil
}

// tableReader reads varints, keeping the first error.
type tableReader struct {
	b   []byte
	off int
	err error
}

func (r *tableReader) uvarint(what string) uint64 {
	if r.err != nil {
		return 0
	}
	v, k := binary.Uvarint(r.b[r.off:])
	if k <= 0 {
		r.err = fmt.Errorf("want a uvarint %s", what)
		return 0
	}
	r.off += k
	return v
}

func (r *tableReader) varint(what string) int64 {
	if r.err != nil {
		return 0
	}
	v, k := binary.Varint(r.b[r.off:])
	if k <= 0 {
		r.err = fmt.Errorf("want a varint %s", what)
		return 0
	}
	r.off += k
	return v
}

// size reads a byte count, which no chunk may have above MaxChunkBytes (a
// stored blob may exceed its native size a little).
func (r *tableReader) size(what string) int64 {
	v := r.uvarint(what)
	if r.err == nil && v > 2*MaxChunkBytes {
		r.err = fmt.Errorf("%s %d is more than a chunk may hold", what, v)
	}
	return int64(v)
}

func (r *tableReader) uint32() uint32 {
	if r.err != nil {
		return 0
	}
	if len(r.b)-r.off < 4 {
		r.err = errors.New("want a 4-byte CRC")
		return 0
	}
	v := binary.LittleEndian.Uint32(r.b[r.off:])
	r.off += 4
	return v
}
