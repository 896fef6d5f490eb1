// Package wire holds the JSON shapes the archive prints: the HTTP API's
// answers and the command line's --json output are the same values, made
// by the same constructors from the library's (RecordingOf, SearchOf,
// PolicyOf, ...), so a script reads `archivectl show --json` and
// GET /api/v1/recordings/{id} alike. What a viewer may not see is taken
// out by the server, on these values.
package wire

import "github.com/replayarchive/replay/archive"

// Error is the body of every error the API answers.
type Error struct {
	Error string `json:"error"`
	Code  string `json:"code"`
	// Pos and Term point at the offending term of a query that does not
	// parse.
	Pos  *int   `json:"pos,omitempty"`
	Term string `json:"term,omitempty"`
	// Takedown says who took a file down, when and why (410 on upload).
	Takedown *archive.Takedown `json:"takedown,omitempty"`
	// ID is the recording an upload duplicates (409).
	ID string `json:"id,omitempty"`
	// IDs are recordings an ambiguous id prefix matches (409, at most 10).
	IDs []string `json:"ids,omitempty"`
}

// nonNil makes a nil list print as [] rather than null, so clients can
// iterate without a check.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
