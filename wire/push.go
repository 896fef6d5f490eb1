package wire

import (
	"github.com/google/uuid"
	"github.com/replayarchive/replay"
)

// Push is the answer of GET and PUT /api/v1/push/{source...}: how much of
// a pushed file the archive holds and what it is. The agent
// (archivectl push) reads the same value.
type Push struct {
	Source string `json:"source"`
	// Have is how many bytes of the file the archive holds (durably).
	Have int64 `json:"have"`
	// State is new, waiting, live, sealed or ingested.
	State  string `json:"state"`
	ID     string `json:"id,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
	Note   string `json:"note,omitempty"`
	// Piece is what the file is in its recording directory (header,
	// append or marker) when it is part of one (an HCRP segment set),
	// and ContentSHA256 the sha256 of a header piece's bytes held: an
	// agent sends a header again (whole, replace=1) only when it differs.
	Piece         string `json:"piece,omitempty"`
	ContentSHA256 string `json:"content_sha256,omitempty"`
}

// PushOf is the Push of a source's state.
func PushOf(st *replay.PushState) Push {
	p := Push{Source: st.Source, Have: st.Have, State: string(st.State), SHA256: st.SHA256, Note: st.Note,
		Piece: st.Piece, ContentSHA256: st.ContentSHA256}
	if st.ID != uuid.Nil {
		p.ID = st.ID.String()
	}
	return p
}

// PushError is an error answer of the push endpoints: Error with how many
// bytes of the file the archive holds, where a conflict (409 offset_gap,
// rewrite, sealed) says.
type PushError struct {
	Error
	Have *int64 `json:"have,omitempty"`
}
