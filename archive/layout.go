// The archive's on-disk layout, in one place: every bbolt bucket, how its
// keys and values are encoded, and the encoding of the manifest's chunk
// table. The JSON values are the Go types named below, in their own files;
// chunk blobs and heads records are encoded by archive/internal/chunkenc,
// the events' JSON by archive/internal/eventjson.

package archive

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/replayarchive/replay/archive/internal/chunkenc"
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

// Catalog buckets. Open creates all but the audit, token, live and case
// buckets, which are created by their first write.
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
	// bucketHeads: id (16 B) → the native header and trailer
	// (chunkenc.EncodeHeads).
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
	// bucketDicts: dictionary id (4 B, chunkenc.DictKey) → a heads
	// dictionary (chunkenc.EncodeDict), kept while the archive lives
	// (dicts.go). Created by the first dictionary.
	bucketDicts = []byte("dicts")
	// bucketDictUse: format name → the id (4 B) of the dictionary new heads
	// records of that format are compressed with.
	bucketDictUse = []byte("dict_use")
	// bucketAuditRec: recording id (16 B) ‖ seq (8 B) → nil (auditRecKey),
	// the audit entries of one recording.
	bucketAuditRec = []byte("audit_rec")
	// bucketTokens: name → Token JSON (tokens.go).
	bucketTokens = []byte("tokens")
	// bucketLive: id (16 B) → liveState JSON of a recording that still
	// grows (live.go); created by the first live commit, so readers must
	// allow it to be missing.
	bucketLive = []byte("live")
	// bucketCases: case id (16 B) → Case JSON, its notes included
	// (cases.go); created by the first case, so readers allow it to be
	// missing.
	bucketCases = []byte("cases")
)

// settingPolicy is the retention policy's key in bucketSettings.
var settingPolicy = []byte("retention")

// settingRemote is the RemoteConfig's key in bucketSettings (remote.go).
var settingRemote = []byte("remote")

// settingHeadsRewrite ("1") is set with a new heads dictionary and
// removed once every heads record that can use it does (dicts.go), so a
// pass killed in between is finished by the next.
var settingHeadsRewrite = []byte("heads_rewrite")

// settingCatalogURL is the shared catalog this archive follows
// (catalogstate.go), and settingCatalogSeq (8 bytes, big-endian) the last
// of its changes applied here.
var (
	settingCatalogURL = []byte("catalog")
	settingCatalogSeq = []byte("catalog_seq")
)

// bucketChunks is a shard's one bucket: chunk owner id (16 B) ‖ start tick
// (8 B) → chunk blob (chunkenc.Encode, chunkenc.EncodeStreams). The owner
// is the recording id, or for a recording spilled during ingest the
// provisional id its chunks went under (the manifest's ChunkOwner). A blob
// held by several chunks is stored once under the nil uuid ‖ a sequence
// number and the chunks refer to it (shared.go, with its buckets
// bucketContent and bucketRefs).
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
	r := chunkenc.VarintReader{B: b, Off: 1}
	n := r.Uvarint("count")
	if r.Err == nil && n > uint64(len(b)-r.Off)/minChunkEntry {
		return fmt.Errorf("archive: chunk table claims %d chunks in %d bytes", n, len(b))
	}
	count(int(n))
	var endTick, endOff int64
	var prevTime time.Duration
	i := uint64(0)
	var c ChunkEntry // one for all: fn must copy it
	for ; i < n && r.Err == nil; i++ {
		c = ChunkEntry{}
		c.StartTick = endTick + r.Varint("start tick")
		ticks := r.Uvarint("ticks")
		c.Ticks, c.Precompressed = int64(ticks>>1), ticks&1 != 0
		c.Time = prevTime + time.Duration(r.Varint("time"))
		c.Offset = endOff + r.Varint("offset")
		c.Length = r.Size("length")
		c.Stored = r.Size("stored size")
		c.CRC = r.Uint32()
		endTick, endOff, prevTime = c.StartTick+c.Ticks, c.Offset+c.Length, c.Time
		if r.Err == nil {
			fn(&c)
		}
	}
	if r.Err == nil && r.Off != len(b) {
		r.Err = fmt.Errorf("%d bytes after the last chunk", len(b)-r.Off)
	}
	if r.Err != nil {
		return fmt.Errorf("archive: chunk table entry %d (offset %d): %w", max(i, 1)-1, r.Off, r.Err)
	}
	return nil
}
