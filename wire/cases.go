package wire

import (
	"time"

	"github.com/replayarchive/replay/archive"
)

// Case is a moderator's case as GET /api/v1/cases/{id} answers it and
// `archivectl cases show --json` prints it: the whole thread. Cases are
// moderators' data: the API gives them to moderators and admins only.
type Case struct {
	ID        string `json:"id"`
	Recording string `json:"recording"`
	// Status is "open", "resolved" or "dismissed".
	Status   string `json:"status"`
	Assignee string `json:"assignee"`
	// Flag is the flag that opened the case ("" when opened by hand).
	Flag     string             `json:"flag,omitempty"`
	OpenedBy string             `json:"opened_by"`
	Opened   time.Time          `json:"opened"`
	Updated  time.Time          `json:"updated"`
	Notes    []archive.CaseNote `json:"notes"`
}

// CaseOf is the case's JSON.
func CaseOf(c *archive.Case) Case {
	return Case{ID: c.ID.String(), Recording: c.Recording.String(), Status: c.Status, Assignee: c.Assignee, Flag: c.Flag,
		OpenedBy: c.OpenedBy, Opened: c.Opened, Updated: c.Updated, Notes: nonNil(c.Notes)}
}

// CaseSummary is one case of a list: the case without its thread, with
// how many notes it holds and the last of them, which is what a list of
// cases to work on shows.
type CaseSummary struct {
	ID        string            `json:"id"`
	Recording string            `json:"recording"`
	Status    string            `json:"status"`
	Assignee  string            `json:"assignee"`
	Flag      string            `json:"flag,omitempty"`
	OpenedBy  string            `json:"opened_by"`
	Opened    time.Time         `json:"opened"`
	Updated   time.Time         `json:"updated"`
	NoteCount int               `json:"note_count"`
	LastNote  *archive.CaseNote `json:"last_note,omitempty"`
}

// Cases is the answer of GET /api/v1/cases and `archivectl cases ls --json`.
type Cases struct {
	Cases []CaseSummary `json:"cases"`
}

// CasesOf is the list's JSON, in the order given.
func CasesOf(cs []archive.Case) Cases {
	out := Cases{Cases: make([]CaseSummary, len(cs))}
	for i := range cs {
		c := &cs[i]
		out.Cases[i] = CaseSummary{ID: c.ID.String(), Recording: c.Recording.String(), Status: c.Status, Assignee: c.Assignee,
			Flag: c.Flag, OpenedBy: c.OpenedBy, Opened: c.Opened, Updated: c.Updated, NoteCount: len(c.Notes), LastNote: c.LastNote()}
	}
	return out
}
