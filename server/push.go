// Pushes: a game server on another host sends each growing file's new
// bytes (archivectl push), and the archive grows the file's live
// recording from them (replay.Archive.Push). This file is the HTTP side:
// GET and PUT /api/v1/push/{source...}, for a pusher or an admin.

package server

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/ingest"
	"github.com/replayarchive/replay/wire"
)

// mayPush refuses (403) a caller that is neither a pusher nor an admin:
// the route lets any role through (a pusher is the least), so a viewer
// or a moderator is refused here.
func mayPush(w http.ResponseWriter, r *http.Request) bool {
	a := actorOf(r)
	if a.Role == replay.RolePusher || a.Role == replay.RoleAdmin {
		return true
	}
	writeError(w, http.StatusForbidden, "forbidden", a.Role.String()+" "+a.Name+" may not push recordings: pushing needs a pusher token (or an admin's)")
	return false
}

// pushState answers GET /api/v1/push/{source...}: how many bytes of the
// file the archive holds, and what they are.
func (s *Server) pushState(w http.ResponseWriter, r *http.Request) {
	if !mayPush(w, r) {
		return
	}
	st, err := s.x.PushState(r.PathValue("source"))
	if err != nil {
		s.failPush(w, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.PushOf(st))
}

// pushAppend answers PUT /api/v1/push/{source...}?offset=N[&final=1]:
// the body is the file's bytes from offset N; with replace=1 (offset 0)
// the body is the whole file, a recording directory's header piece,
// which replaces what the archive holds of it (replay.PushReplace).
func (s *Server) pushAppend(w http.ResponseWriter, r *http.Request) {
	if !mayPush(w, r) {
		return
	}
	s.uploads.Add(1)
	defer s.uploads.Done()
	source := r.PathValue("source")
	q := r.URL.Query()
	offset, err := strconv.ParseInt(q.Get("offset"), 10, 64)
	if err != nil || offset < 0 {
		s.failPush(w, badRequest("offset %q: a push says where its bytes start in the file, ?offset=N (N >= 0)", q.Get("offset")))
		return
	}
	var final bool
	switch q.Get("final") {
	case "", "0", "false":
	case "1", "true":
		final = true
	default:
		s.failPush(w, badRequest("final %q: 1 or 0", q.Get("final")))
		return
	}
	var replace bool
	switch q.Get("replace") {
	case "", "0", "false":
	case "1", "true":
		replace = true
	default:
		s.failPush(w, badRequest("replace %q: 1 or 0", q.Get("replace")))
		return
	}
	if replace && offset != 0 {
		s.failPush(w, badRequest("offset %d with replace=1: a replaced file is sent whole, from offset 0", offset))
		return
	}
	if r.ContentLength > replay.MaxPushBytes {
		s.failPush(w, fmt.Errorf("%d bytes: %w (%d bytes a push at most: send the file in pieces)", r.ContentLength, replay.ErrTooLarge, replay.MaxPushBytes))
		return
	}
	// The source is locked while its body streams in: a client that
	// stops sending is cut off after WriteStall, not left holding it.
	body := &stallReader{r: r.Body, rc: http.NewResponseController(w), stall: s.cfg.WriteStall}
	var st *replay.PushState
	if replace {
		st, err = s.x.PushReplace(r.Context(), source, clientBody{body}, final, actorOf(r))
	} else {
		st, err = s.x.Push(r.Context(), source, offset, clientBody{body}, final, actorOf(r))
	}
	body.clear()
	if err != nil {
		s.metrics.pushes.WithLabelValues("failed").Inc()
		s.failPush(w, err)
		return
	}
	s.metrics.pushes.WithLabelValues(string(st.State)).Inc()
	s.metrics.pushBytes.Add(float64(st.Added))
	if res := st.Result; res != nil {
		s.metrics.ingests.WithLabelValues(res.Outcome.String()).Inc()
		if res.Outcome == ingest.OutcomeIngested || res.Outcome == ingest.OutcomeReplaced {
			s.metrics.ingestBytes.Add(float64(res.NativeBytes))
		}
	}
	writeJSON(w, http.StatusOK, wire.PushOf(st))
}

// failPush answers a push's error: a bad source or offset is 400, as is
// a replace of a file that is not a header piece (replace_refused) or a
// header piece pushed without replace (replace_required); a header that
// is not its codec's is 422 bad_header; a push
// that does not fit the bytes held 409 with the bytes held, a final
// ingest that archived nothing as an upload's; the rest as fail does
// (410 taken down, 413 too large, a client gone, 500).
func (s *Server) failPush(w http.ResponseWriter, err error) {
	var ce *replay.PushConflictError
	var ie *replay.PushIngestError
	var pe *replay.PushPieceError
	switch {
	case errors.As(err, &pe):
		status := http.StatusBadRequest
		if pe.Code == replay.PushBadHeader {
			status = http.StatusUnprocessableEntity
		}
		writeJSON(w, status, wire.Error{Error: err.Error(), Code: pe.Code})
	case errors.Is(err, replay.ErrBadPush):
		s.fail(w, badRequest("%v", strings.TrimSuffix(err.Error(), ": "+replay.ErrBadPush.Error())))
	case errors.As(err, &ce):
		have := ce.Have
		writeJSON(w, http.StatusConflict, wire.PushError{Error: wire.Error{Error: err.Error(), Code: ce.Code}, Have: &have})
	case errors.As(err, &ie):
		res := ie.Result
		var td *archive.TakenDownError
		var re *archive.ReplaceError
		switch {
		case errors.As(res.Cause, &td):
			t := td.Takedown
			writeJSON(w, http.StatusGone, wire.Error{Error: res.Err, Code: "taken_down", Takedown: &t})
		case errors.As(res.Cause, &re):
			writeJSON(w, http.StatusConflict, wire.Error{Error: err.Error(), Code: "refused", ID: re.ID.String()})
		default:
			code := "bad_input"
			switch res.Outcome {
			case ingest.OutcomeSkipped:
				code = "skipped"
			case ingest.OutcomeExpired:
				code = "expired"
			}
			writeJSON(w, http.StatusUnprocessableEntity, wire.Error{Error: err.Error(), Code: code})
		}
	default:
		s.fail(w, err)
	}
}

// stallReader is a request body whose every read must make progress
// within stall: the connection's read deadline is moved before each.
type stallReader struct {
	r     io.Reader
	rc    *http.ResponseController
	stall time.Duration
}

func (sr *stallReader) Read(p []byte) (int, error) {
	if err := sr.rc.SetReadDeadline(time.Now().Add(sr.stall)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return 0, err
	}
	n, err := sr.r.Read(p)
	if err != nil {
		sr.clear()
	}
	return n, err
}

// clear lifts the deadline: the grow that follows the body may take longer
// than stall, and the connection may serve another request.
func (sr *stallReader) clear() { sr.rc.SetReadDeadline(time.Time{}) }
