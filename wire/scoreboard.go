package wire

import (
	"slices"

	"github.com/replayarchive/replay/formats"
)

// Scoreboard is the answer of GET /api/v1/recordings/{id}/scoreboard: the
// recording's formats.Scoreboard with its id and format, so one shape
// serves every format (Columns say what each format fills). A format
// without a score answers no columns and no rows.
type Scoreboard struct {
	ID     string `json:"id"`
	Format string `json:"format"`
	formats.Scoreboard
}

// NewScoreboard returns the answer for recording id of format, sb nil for
// a format without a score. Its slices are never nil, so clients read
// them without checks.
func NewScoreboard(id, format string, sb *formats.Scoreboard) Scoreboard {
	out := Scoreboard{ID: id, Format: format}
	if sb != nil {
		out.Scoreboard = *sb
	}
	if out.Columns == nil {
		out.Columns = []formats.ScoreColumn{}
	}
	if out.Players == nil {
		out.Players = []formats.ScoreRow{}
	}
	return out
}

// MapIDs returns s with every player id (rows' and finishes') replaced by
// f(id), on copies of its rows: the server shows viewers pseudonyms.
func (s Scoreboard) MapIDs(f func(string) string) Scoreboard {
	s.Players = slices.Clone(s.Players)
	for i := range s.Players {
		s.Players[i].ID = f(s.Players[i].ID)
	}
	s.Teams = slices.Clone(s.Teams)
	for i := range s.Teams {
		s.Teams[i].ID = f(s.Teams[i].ID)
	}
	s.Finishes = slices.Clone(s.Finishes)
	for i := range s.Finishes {
		s.Finishes[i].PlayerID = f(s.Finishes[i].PlayerID)
	}
	return s
}
