// Manifests: the catalog's record of one archived recording.
//
// A manifest is committed last when a recording is ingested and removed first
// when it is deleted, so a recording exists exactly when its manifest does.
// It is stored as JSON: manifests are read one at a time or listed, never on
// a per-tick path, and JSON keeps the catalog inspectable with any bbolt tool.

package archive

import (
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
	SHA256      string `json:"sha256"`
	NativeBytes int64  `json:"native_bytes"`
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

// Flag is a moderator's flag on a recording.
type Flag struct {
	Name string    `json:"name"`
	Note string    `json:"note,omitempty"`
	At   time.Time `json:"at"`
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

// Age is the time the retention policy measures from: the recording's start
// when the file says it, else when it was ingested.
func (m *Manifest) Age(now time.Time) time.Duration {
	t := m.Meta.Start
	if t.IsZero() {
		t = m.Ingested
	}
	return now.Sub(t)
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
