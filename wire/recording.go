package wire

import (
	"time"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/formats"
)

// Recording is everything the archive says about one recording: the API's
// answer to GET /api/v1/recordings/{id} and to a mark, and `archivectl
// show --json` (ls --json lists them).
type Recording struct {
	ID          string    `json:"id"`
	Format      string    `json:"format"`
	SourceName  string    `json:"source_name,omitempty"`
	SHA256      string    `json:"sha256"`
	NativeBytes int64     `json:"native_bytes"`
	StoredBytes int64     `json:"stored_bytes"`
	Ingested    time.Time `json:"ingested"`
	// Recompressed is when 'recompress' re-encoded the chunks; absent if
	// never.
	Recompressed time.Time `json:"recompressed,omitzero"`
	// Location is where the chunks are: "local" (this node's disk alone,
	// not uploaded yet), "remote" (the bucket) or "both" (the bucket, and
	// all of it in this node's chunk cache).
	Location       string               `json:"location"`
	Start          string               `json:"start,omitempty"`
	DurationMS     int64                `json:"duration_ms"`
	Ticks          int64                `json:"ticks"`
	TickRate       float64              `json:"tick_rate,omitempty"`
	FirstTick      int64                `json:"first_tick"`
	LastTick       int64                `json:"last_tick"`
	Map            string               `json:"map,omitempty"`
	Server         string               `json:"server,omitempty"`
	Session        string               `json:"session,omitempty"`
	Players        []formats.Player     `json:"players"`
	Flags          []archive.Flag       `json:"flags"`
	FileFlags      []string             `json:"file_flags"`
	Hold           *archive.Hold        `json:"hold"`
	Attrs          map[string]string    `json:"attrs,omitempty"`
	Warnings       []string             `json:"warnings,omitempty"`
	EventCount     int                  `json:"event_count"`
	Chunks         []Chunk              `json:"chunks"`
	CanClip        bool                 `json:"can_clip"`
	ConvertFormats []string             `json:"convert_formats"`
	Extension      string               `json:"extension"`
	Audit          []archive.AuditEntry `json:"audit"`
}

// Chunk is one chunk's tick range and time, so a client can fetch frames
// a chunk at a time.
type Chunk struct {
	StartTick int64 `json:"start_tick"`
	Ticks     int64 `json:"ticks"`
	TimeMS    int64 `json:"time_ms"`
}

// RecordingOf describes the recording of manifest m with its audit
// history; x says what its format's codec can do (clip, convert).
func RecordingOf(x *replay.Archive, m *archive.Manifest, audit []archive.AuditEntry) Recording {
	out := Recording{
		ID: m.ID.String(), Format: m.Format, SourceName: m.SourceName, SHA256: m.SHA256,
		NativeBytes: m.NativeBytes, StoredBytes: m.StoredBytes, Ingested: m.Ingested, Recompressed: m.Recompressed,
		Location:   x.Location(m),
		DurationMS: m.Meta.Duration.Milliseconds(), Ticks: m.Meta.Ticks, TickRate: m.Meta.TickRate, LastTick: -1,
		Map: m.Meta.Map, Server: m.Meta.Server, Session: m.Meta.Session,
		Players: nonNil(m.Meta.Players), Flags: nonNil(m.Flags), FileFlags: nonNil(m.Meta.Flags), Hold: m.Hold,
		Attrs: m.Meta.Attrs, Warnings: m.Meta.Warnings, EventCount: m.EventCount, CanClip: x.CanClip(m.Format),
		ConvertFormats: nonNil(x.ConvertFormats(m.Format)), Extension: replay.Extension(m.Format), Audit: nonNil(audit),
		Chunks: make([]Chunk, len(m.Chunks)),
	}
	if !m.Meta.Start.IsZero() {
		out.Start = m.Meta.Start.UTC().Format(time.RFC3339)
	}
	for i, c := range m.Chunks {
		out.Chunks[i] = Chunk{StartTick: c.StartTick, Ticks: c.Ticks, TimeMS: c.Time.Milliseconds()}
	}
	if n := len(m.Chunks); n > 0 {
		out.FirstTick = m.Chunks[0].StartTick
		out.LastTick = m.Chunks[n-1].StartTick + m.Chunks[n-1].Ticks - 1
	}
	return out
}
