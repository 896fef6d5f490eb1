// A moderator's marks on a recording: flags and holds.

package server

import (
	"net/http"
	"strings"

	"github.com/replayarchive/replay/archive"
)

type noteBody struct {
	Note   string `json:"note"`
	Reason string `json:"reason"`
	// From and To put a flag on a moment (ticks, offsets like 1m04s, or
	// 0:42); both absent: the whole recording.
	From string `json:"from"`
	To   string `json:"to"`
}

func (s *Server) markBody(r *http.Request) (noteBody, error) {
	var b noteBody
	err := decodeBody(r, &b)
	if b.Reason == "" {
		b.Reason = r.URL.Query().Get("reason")
	}
	if b.Note == "" {
		b.Note = r.URL.Query().Get("note")
	}
	if b.From == "" {
		b.From = r.URL.Query().Get("from")
	}
	if b.To == "" {
		b.To = r.URL.Query().Get("to")
	}
	return b, err
}

// mark wraps a moderator's mark: do gets the body's note or reason, and
// the answer is the recording as it is afterwards, with its history.
func (s *Server) mark(do func(r *http.Request, b noteBody) (*archive.Manifest, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		b, err := s.markBody(r)
		if err != nil {
			s.fail(w, err)
			return
		}
		m, err := do(r, b)
		if err != nil {
			s.fail(w, err)
			return
		}
		s.writeRecording(w, r, m.ID.String())
	}
}

func (s *Server) flag(r *http.Request, b noteBody) (*archive.Manifest, error) {
	return s.x.FlagAt(r.Context(), actorOf(r), r.PathValue("id"), r.PathValue("name"), b.Note, b.From, b.To)
}

func (s *Server) unflag(r *http.Request, b noteBody) (*archive.Manifest, error) {
	return s.x.Unflag(r.Context(), actorOf(r), r.PathValue("id"), r.PathValue("name"), b.Reason)
}

func (s *Server) hold(r *http.Request, b noteBody) (*archive.Manifest, error) {
	if strings.TrimSpace(b.Reason) == "" {
		return nil, badRequest("a hold needs a reason")
	}
	return s.x.Hold(r.Context(), actorOf(r), r.PathValue("id"), b.Reason)
}

func (s *Server) release(r *http.Request, b noteBody) (*archive.Manifest, error) {
	return s.x.Release(r.Context(), actorOf(r), r.PathValue("id"), b.Reason)
}
