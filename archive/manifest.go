// Manifests: the catalog's record of one archived recording.
//
// A manifest is committed last when a recording is ingested and removed first
// when it is deleted, so a recording exists exactly when its manifest does.
// It is stored as JSON: manifests are read one at a time or listed, never on
// a per-tick path, and JSON keeps the catalog inspectable with any bbolt tool;
// only the chunk table, which grows with the recording, is binary inside it.

package archive

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/replayarchive/replay/formats"
)

// Manifest describes one archived recording.
type Manifest struct {
	ID     uuid.UUID `json:"id"`
	Format string    `json:"format"`
	// Meta is what the codec reported, without Events (kept in their own
	// bucket: they can be many, and listing recordings does not need them).
	Meta formats.Metadata `json:"meta"`
	// SHA256 is the hex sha256 of the whole native file.
	SHA256 string `json:"sha256"`
	// ChunksSHA256 says SHA256 covers the chunk bytes only, not the header
	// piece: a live recording whose header is rewritten by every grow (an
	// HCRP segment set) cannot resume a hash of the whole file. Sealing
	// hashes the whole file once and clears it.
	ChunksSHA256 bool  `json:"chunks_sha256,omitempty"`
	NativeBytes  int64 `json:"native_bytes"`
	// HeaderBytes and TrailerBytes are the sizes of the native header and
	// trailer pieces (kept in the catalog's heads bucket).
	HeaderBytes  int64 `json:"header_bytes"`
	TrailerBytes int64 `json:"trailer_bytes"`
	// StoredBytes counts chunk blobs plus the stored header and trailer.
	StoredBytes int64 `json:"stored_bytes"`
	// Shard names the shard file (without .db) that holds the chunks.
	Shard string `json:"shard"`
	// ChunkOwner is the id the chunk keys use when it differs from ID (a
	// very large file whose chunks were written before its id was known).
	ChunkOwner uuid.UUID `json:"chunk_owner,omitzero"`
	Ingested   time.Time `json:"ingested"`
	// SourceName is the base name of the file it was ingested from.
	SourceName string       `json:"source_name,omitempty"`
	Chunks     []ChunkEntry `json:"chunks"`
	// Flags set by moderators (the file's own flags are in Meta.Flags).
	Flags []Flag `json:"flags,omitempty"`
	// Hold pins the recording against retention and deletion.
	Hold *Hold `json:"hold,omitempty"`
	// EventCount is how many searchable events were stored.
	EventCount int `json:"event_count"`
	// Remote is the key of the object holding the chunks once they moved
	// to the remote store (remote.go), "" while they are in Shard; chunk
	// i sits in it at the sum of the Stored sizes before it.
	Remote string `json:"remote,omitempty"`
	// RemoteBytes is the size of that object.
	RemoteBytes int64 `json:"remote_bytes,omitempty"`
	// Live says the recording is still growing: its file is being
	// written, and it is extended in place as bytes arrive (live.go).
	Live bool `json:"live,omitempty"`
	// Recompressed is when Recompress re-encoded the chunks at zstd's
	// best level (zero: as ingest wrote them).
	Recompressed time.Time `json:"recompressed,omitzero"`
}

// ChunkEntry is one chunk's entry in a manifest's chunk index.
type ChunkEntry struct {
	StartTick int64         `json:"t"`
	Ticks     int64         `json:"n"`
	Time      time.Duration `json:"ts"`
	Offset    int64         `json:"o"`
	Length    int64         `json:"l"`
	// Stored is the size of the blob in the shard.
	Stored int64 `json:"s"`
	// CRC is the CRC-32C of the chunk's native bytes.
	CRC uint32 `json:"c"`
	// Precompressed chunks are stored as they are, not zstd-compressed.
	Precompressed bool `json:"p,omitempty"`
}

// Flag is a moderator's flag on a recording: on the whole of it, or on
// the moment Range says ("griefing at 0:42-0:50").
type Flag struct {
	Name string    `json:"name"`
	Note string    `json:"note,omitempty"`
	At   time.Time `json:"at"`
	// Range is the ticks the flag is about (nil: the whole recording).
	Range *TickRange `json:"range,omitempty"`
}

// TickRange is a span of a recording's ticks, both ends included.
type TickRange struct {
	From int64 `json:"from"`
	To   int64 `json:"to"`
}

// Hold pins a recording: retention never removes it and delete refuses it.
type Hold struct {
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
}

// owner returns the id the recording's chunk keys are written under.
func (m *Manifest) owner() uuid.UUID {
	if m.ChunkOwner != uuid.Nil {
		return m.ChunkOwner
	}
	return m.ID
}

// AllFlags returns the file's own flags followed by the moderators', without
// duplicates.
func (m *Manifest) AllFlags() []string {
	seen := make(map[string]bool, len(m.Meta.Flags)+len(m.Flags))
	var out []string
	for _, f := range m.Meta.Flags {
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	for _, f := range m.Flags {
		if !seen[f.Name] {
			seen[f.Name] = true
			out = append(out, f.Name)
		}
	}
	return out
}

// Flagged reports whether the recording carries any flag.
func (m *Manifest) Flagged() bool { return len(m.Meta.Flags) > 0 || len(m.Flags) > 0 }

// Age is how old the recording is at now for every time-based policy
// (retention's --max-age and prune --older-than, the remote upload delay,
// recompress --older-than): now less AgeFrom. It is 0 when the manifest
// says no time at all, so an unknown age never makes a recording go.
func (m *Manifest) Age(now time.Time) time.Duration {
	t := m.AgeFrom()
	if t.IsZero() {
		return 0
	}
	return now.Sub(t)
}

// AgeFrom is the instant Age counts from: the recording's start, or its
// ingest when the file says no start (a header-only SC2 replay, a .milk
// capture) or one after its ingest (a wrong clock or a bad header: nothing
// starts after the archive received it). So every recording ages from its
// ingest at the latest, and a policy of any age reaches it.
func (m *Manifest) AgeFrom() time.Time {
	s := m.Meta.Start
	switch {
	case s.IsZero():
		return m.Ingested
	case m.Ingested.IsZero() || s.Before(m.Ingested):
		return s
	}
	return m.Ingested
}

// chunks converts the index to the codec's view.
func (m *Manifest) formatChunks() []formats.Chunk {
	out := make([]formats.Chunk, len(m.Chunks))
	for i, c := range m.Chunks {
		out[i] = formats.Chunk{
			StartTick: c.StartTick, Ticks: c.Ticks, Time: c.Time,
			Offset: c.Offset, Length: c.Length, Precompressed: c.Precompressed,
		}
	}
	return out
}

// manifestFields is Manifest without its JSON methods.
type manifestFields Manifest

// manifestWire is the stored form: Chunks is replaced by the binary Table
// ("chunks" here shadows the embedded field, and is only read).
type manifestWire struct {
	*manifestFields
	Chunks []ChunkEntry `json:"chunks,omitempty"`
	Table  []byte       `json:"ct,omitempty"`
	// TableLen is the length of Table in base64, so that decodeManifest
	// finds the table from the end of the value.
	TableLen int `json:"ctl,omitempty"`
}

// MarshalJSON stores the chunk table in binary (see chunkTableVersion).
func (m *Manifest) MarshalJSON() ([]byte, error) {
	t := appendChunkTable(nil, m.Chunks)
	return json.Marshal(manifestWire{manifestFields: (*manifestFields)(m), Table: t, TableLen: base64.StdEncoding.EncodedLen(len(t))})
}

// UnmarshalJSON reads a manifest with a binary chunk table or, from an older
// catalog, a JSON list.
func (m *Manifest) UnmarshalJSON(b []byte) error {
	w := manifestWire{manifestFields: (*manifestFields)(m)}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	m.Chunks = w.Chunks
	if w.Table != nil {
		c, err := decodeChunkTable(w.Table)
		if err != nil {
			return err
		}
		m.Chunks = c
	}
	return nil
}

// decodeManifest reads a stored manifest like json.Unmarshal, but takes
// the chunk table off the end before the JSON decoder sees it: the decoder
// scans a value twice (validation, then decoding, and once more through
// UnmarshalJSON), and the table is most of a long recording's manifest.
// MarshalJSON ends the value with `"ct":"<base64>","ctl":<its length>}`,
// so the table is found from the end without a scan. A value of another
// shape goes through json.Unmarshal.
func decodeManifest(v []byte) (*Manifest, error) {
	m, table, err := decodeManifestLazy(v)
	if err != nil || table == nil {
		return m, err
	}
	if m.Chunks, err = decodeChunkTable(table); err != nil {
		return nil, err
	}
	return m, nil
}

// decodeManifestLazy is decodeManifest leaving the binary chunk table
// undecoded: it returns the table, with m.Chunks nil, when v holds one at
// its end, else m as json.Unmarshal reads it and a nil table.
func decodeManifestLazy(v []byte) (m *Manifest, table []byte, err error) {
	m = new(Manifest)
	head, enc, ok := splitTable(v)
	if !ok {
		return m, nil, json.Unmarshal(v, m)
	}
	if err := json.Unmarshal(head, m); err != nil {
		return nil, nil, err
	}
	table = make([]byte, base64.StdEncoding.DecodedLen(len(enc)))
	n, err := base64.StdEncoding.Decode(table, enc)
	if err != nil {
		return nil, nil, fmt.Errorf("archive: chunk table: %w", err)
	}
	return m, table[:n], nil
}

// splitTable cuts v into the manifest without its table (a JSON object)
// and the base64 table, when v ends as MarshalJSON writes it.
func splitTable(v []byte) (head, enc []byte, ok bool) {
	const lenField, tableField = `,"ctl":`, `,"ct":"`
	tail := v[max(0, len(v)-32):]
	i := bytes.LastIndex(tail, []byte(lenField))
	if i < 0 || !bytes.HasSuffix(tail, []byte("}")) {
		return nil, nil, false
	}
	n, err := strconv.Atoi(string(tail[i+len(lenField) : len(tail)-1]))
	end := len(v) - len(tail) + i - 1 // the table's closing quote
	start := end - n
	if err != nil || n < 0 || start-len(tableField) < 1 || v[end] != '"' || string(v[start-len(tableField):start]) != tableField {
		return nil, nil, false
	}
	enc = v[start:end]
	if bytes.IndexByte(enc, '"') >= 0 || bytes.IndexByte(enc, '\\') >= 0 {
		return nil, nil, false
	}
	head = bytes.TrimRight(v[:start-len(tableField)], " \t\r\n")
	if len(head) == 0 || head[len(head)-1] == '{' {
		return nil, nil, false // the table's comma follows no field
	}
	head = append(bytes.Clone(head), '}')
	return head, enc, true
}
