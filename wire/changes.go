package wire

import (
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/ingest"
)

// Upload answers an upload of a file.
type Upload struct {
	ID          string   `json:"id"`
	Outcome     string   `json:"outcome"`
	Format      string   `json:"format,omitempty"`
	NativeBytes int64    `json:"native_bytes,omitempty"`
	StoredBytes int64    `json:"stored_bytes,omitempty"`
	SHA256      string   `json:"sha256"`
	Warnings    []string `json:"warnings,omitempty"`
	Note        string   `json:"note,omitempty"`
}

// UploadOf is the JSON form of an ingest's result for a file of hex
// sha256 sum.
func UploadOf(res ingest.FileResult, sum string) Upload {
	out := Upload{Outcome: res.Outcome.String(), Format: res.Format, NativeBytes: res.NativeBytes,
		StoredBytes: res.StoredBytes, SHA256: sum, Warnings: res.Warnings, Note: res.Note}
	if res.ID != [16]byte{} {
		out.ID = res.ID.String()
	}
	return out
}

// TakenDown answers a takedown (the API's DELETE of a recording, and
// `archivectl delete --json`).
type TakenDown struct {
	Deleted     string            `json:"deleted"`
	StoredBytes int64             `json:"stored_bytes"`
	SHA256      string            `json:"sha256"`
	Takedown    *archive.Takedown `json:"takedown"`
	// Warning says what of the takedown is left to finish (a sweep that
	// failed: the takedown took effect).
	Warning string `json:"warning,omitempty"`
}

// TakenDownOf is the JSON form of the takedown t of recording m; warning,
// when not nil, is what is left to finish.
func TakenDownOf(m *archive.Manifest, t *archive.Takedown, warning error) TakenDown {
	out := TakenDown{Deleted: m.ID.String(), StoredBytes: m.StoredBytes, SHA256: m.SHA256, Takedown: t}
	if warning != nil {
		out.Warning = warning.Error()
	}
	return out
}

// Restored answers the undo of a takedown.
type Restored struct {
	Restored string            `json:"restored"`
	Takedown *archive.Takedown `json:"takedown"`
}
