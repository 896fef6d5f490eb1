// Uploads of a file, and ingests of paths on the server's disk.

package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"path/filepath"
	"strings"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/ingest"
	"github.com/replayarchive/replay/wire"
)

func (s *Server) upload(w http.ResponseWriter, r *http.Request) {
	s.uploads.Add(1)
	defer s.uploads.Done()
	if r.ContentLength > s.cfg.MaxUpload {
		s.fail(w, fmt.Errorf("%d bytes: %w (%d bytes)", r.ContentLength, replay.ErrTooLarge, s.cfg.MaxUpload))
		return
	}
	name := r.URL.Query().Get("name")
	if name == "" {
		if _, p, err := mime.ParseMediaType(r.Header.Get("Content-Disposition")); err == nil {
			name = p["filename"]
		}
	}
	res, sum, err := s.x.IngestStream(r.Context(), name, clientBody{r.Body}, s.cfg.MaxUpload, actorOf(r))
	if err != nil {
		s.fail(w, err)
		return
	}
	s.metrics.ingests.WithLabelValues(res.Outcome.String()).Inc()
	out := wire.UploadOf(res, sum)
	switch res.Outcome {
	case ingest.OutcomeIngested, ingest.OutcomeReplaced:
		s.metrics.ingestBytes.Add(float64(res.NativeBytes))
		w.Header().Set("Location", "/api/v1/recordings/"+out.ID)
		writeJSON(w, http.StatusCreated, out)
	case ingest.OutcomeDup:
		writeJSON(w, http.StatusConflict, wire.Error{Error: "these bytes are archived already as recording " + out.ID, Code: "duplicate", ID: out.ID})
	default:
		var td *archive.TakenDownError
		if errors.As(res.Cause, &td) {
			t := td.Takedown
			writeJSON(w, http.StatusGone, wire.Error{Error: res.Err, Code: "taken_down", Takedown: &t})
			return
		}
		var re *archive.ReplaceError
		if errors.As(res.Cause, &re) {
			writeJSON(w, http.StatusConflict, wire.Error{Error: res.Err, Code: "refused", ID: out.ID})
			return
		}
		code := "bad_input"
		switch res.Outcome {
		case ingest.OutcomeSkipped:
			code = "skipped"
		case ingest.OutcomeExpired:
			code = "expired"
		}
		writeJSON(w, http.StatusUnprocessableEntity, wire.Error{Error: strings.TrimSpace(res.Err), Code: code})
	}
}

// ingestPaths ingests files on the server's own disk: the owner's command
// line uses it to hand over what it was asked to ingest.
func (s *Server) ingestPaths(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Paths []string `json:"paths"`
	}
	if err := decodeBody(r, &req); err != nil {
		s.fail(w, err)
		return
	}
	if len(req.Paths) == 0 {
		s.fail(w, badRequest("no paths"))
		return
	}
	for _, p := range req.Paths {
		if p != "-" && !filepath.IsAbs(p) {
			s.fail(w, badRequest("path %q: must be absolute", p))
			return
		}
	}
	// Results stream as NDJSON, one line per input, so a long ingest
	// shows progress and a client can pair each file with its id.
	w.Header().Set("Content-Type", "application/x-ndjson")
	enc := json.NewEncoder(w)
	rc := http.NewResponseController(w)
	err := s.x.Ingest(r.Context(), req.Paths, replay.IngestOptions{By: actorOf(r)}, func(fr ingest.FileResult) {
		s.metrics.ingests.WithLabelValues(fr.Outcome.String()).Inc()
		if fr.Outcome == ingest.OutcomeIngested {
			s.metrics.ingestBytes.Add(float64(fr.NativeBytes))
		}
		enc.Encode(map[string]any{"result": fr})
		rc.Flush()
	})
	if err != nil {
		enc.Encode(map[string]any{"error": err.Error()})
	}
}

// clientBody is a request's body whose read errors say the client went
// away (a cut connection is the client's doing, not the server's error).
type clientBody struct{ r io.Reader }

func (c clientBody) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("%w: %w", errClientGone, err)
	}
	return n, err
}
