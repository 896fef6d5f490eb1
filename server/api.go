package server

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/ingest"
	"github.com/replayarchive/replay/query"
	"github.com/replayarchive/replay/wire"
)

func (s *Server) routes() {
	v, m, a := replay.RoleViewer, replay.RoleModerator, replay.RoleAdmin
	h := func(pattern string, role replay.Role, name string, fn http.HandlerFunc) {
		s.mux.HandleFunc(pattern, s.with(role, name, fn))
	}
	s.mux.HandleFunc("GET /healthz", s.healthz)
	s.mux.Handle("GET /metrics", promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{}))

	s.mux.HandleFunc("GET /api/v1/owner/challenge", s.ownerChallenge)
	h("GET /api/v1/whoami", v, "whoami", s.whoami)
	h("GET /api/v1/formats", v, "formats", s.formats)
	h("GET /api/v1/recordings", v, "search", s.search)
	h("POST /api/v1/recordings", a, "upload", s.upload)
	h("POST /api/v1/ingest", a, "ingest", s.ingestPaths)
	h("GET /api/v1/recordings/{id}", v, "show", s.show)
	h("GET /api/v1/recordings/{id}/events", v, "events", s.events)
	h("GET /api/v1/recordings/{id}/frames", v, "frames", s.frames)
	h("GET /api/v1/recordings/{id}/file", v, "file", s.file)
	h("GET /api/v1/recordings/{id}/clip", v, "clip", s.clip)
	h("GET /api/v1/recordings/{id}/export", v, "export", s.convert)
	h("GET /api/v1/recordings/{id}/audit", v, "audit", s.recordingAudit)
	h("PUT /api/v1/recordings/{id}/flags/{name}", m, "flag", s.mark(s.flag))
	h("DELETE /api/v1/recordings/{id}/flags/{name}", m, "unflag", s.mark(s.unflag))
	h("PUT /api/v1/recordings/{id}/hold", m, "hold", s.mark(s.hold))
	h("DELETE /api/v1/recordings/{id}/hold", m, "release", s.mark(s.release))
	h("DELETE /api/v1/recordings/{id}", m, "takedown", s.takedown)
	h("GET /api/v1/takedowns", m, "takedowns", s.takedowns)
	h("POST /api/v1/takedowns/{id}/undo", m, "undo-takedown", s.undoTakedown)
	h("DELETE /api/v1/takedowns/{sha256}", a, "lift-takedown", s.liftTakedown)
	h("GET /api/v1/audit", a, "audit", s.auditLog)
	h("GET /api/v1/retention", v, "retention", s.getRetention)
	h("PUT /api/v1/retention", a, "retention-set", s.putRetention)
	h("DELETE /api/v1/retention", a, "retention-clear", s.clearRetention)
	h("POST /api/v1/prune", a, "prune", s.prune)
	h("GET /api/v1/stats", v, "stats", s.stats)
	h("POST /api/v1/check", a, "check", s.check)
	h("POST /api/v1/reindex", a, "reindex", s.reindex)
	h("GET /api/v1/tokens", a, "tokens", s.listTokens)
	h("POST /api/v1/tokens", a, "token-create", s.createToken)
	h("DELETE /api/v1/tokens/{name}", a, "token-revoke", s.revokeToken)
	if s.cfg.CLI != nil {
		h("POST /api/v1/cli", a, "cli", func(w http.ResponseWriter, r *http.Request) {
			if !isOwnerCLI(r) {
				writeError(w, http.StatusForbidden, "forbidden", "only the archive's owner's command line (a challenge answered with the local secret) may run commands on the server")
				return
			}
			s.cfg.CLI.ServeHTTP(w, r)
		})
	}
	s.mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", "no such endpoint: "+r.Method+" "+r.URL.Path+" (see docs/API.md)")
	})
	if s.cfg.Web != nil {
		s.mux.Handle("/", s.cfg.Web)
	}
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, wire.Error{Error: msg, Code: code})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(true)
	enc.Encode(v)
}

// fail answers err with the status its kind calls for: a caller's mistake
// is a 4xx with its own code and is not logged; what is left is the
// server's failure, 500, logged as an error.
func (s *Server) fail(w http.ResponseWriter, err error) {
	var pe *query.ParseError
	var td *archive.TakenDownError
	var sweep *archive.SweepError
	var amb *archive.AmbiguousError
	switch {
	case errors.As(err, &pe):
		pos := pe.Pos
		writeJSON(w, http.StatusBadRequest, wire.Error{Error: err.Error(), Code: "bad_query", Pos: &pos, Term: pe.Term})
	case errors.Is(err, errSearchBudget):
		writeError(w, http.StatusBadRequest, "bad_query", err.Error())
	case errors.As(err, &amb):
		ids := make([]string, len(amb.Matches))
		for i, id := range amb.Matches {
			ids[i] = id.String()
		}
		writeJSON(w, http.StatusConflict, wire.Error{Error: err.Error(), Code: "ambiguous", IDs: ids})
	case errors.Is(err, archive.ErrBadID), errors.Is(err, archive.ErrBadFlagName), errors.Is(err, replay.ErrEmptyRange),
		errors.Is(err, replay.ErrNoConversion), errors.Is(err, replay.ErrBadTick), errors.Is(err, query.ErrOffset), errors.Is(err, formats.ErrBadOption):
		writeError(w, http.StatusBadRequest, "bad_request", err.Error())
	case errors.Is(err, archive.ErrNotFlagged):
		writeError(w, http.StatusNotFound, "not_flagged", err.Error())
	case errors.Is(err, archive.ErrNotHeld):
		writeError(w, http.StatusNotFound, "not_held", err.Error())
	case errors.Is(err, archive.ErrFileFlag):
		writeError(w, http.StatusConflict, "file_flag", err.Error())
	case errors.Is(err, archive.ErrNoTakedown):
		writeError(w, http.StatusNotFound, "not_found", err.Error())
	case errors.Is(err, errSpoolFull):
		writeError(w, http.StatusRequestEntityTooLarge, "too_large", err.Error())
	case errors.As(err, &td):
		t := td.Takedown
		writeJSON(w, http.StatusGone, wire.Error{Error: err.Error(), Code: "taken_down", Takedown: &t})
	case errors.As(err, &sweep):
		writeError(w, http.StatusOK, "sweep_incomplete", err.Error())
	case errors.Is(err, archive.ErrNotFound):
		writeError(w, http.StatusNotFound, "not_found", err.Error())
	case errors.Is(err, archive.ErrHeld):
		writeError(w, http.StatusConflict, "held", err.Error())
	case errors.Is(err, replay.ErrReadOnly):
		writeError(w, http.StatusConflict, "read_only", err.Error())
	case errors.Is(err, archive.ErrTakedownPending):
		writeError(w, http.StatusConflict, "takedown_pending", err.Error())
	case errors.Is(err, formats.ErrClipUnsupported):
		writeError(w, http.StatusUnprocessableEntity, "clip_unsupported", err.Error())
	case errors.Is(err, replay.ErrPastEnd):
		writeError(w, http.StatusRequestedRangeNotSatisfiable, "past_end", err.Error())
	case errors.Is(err, replay.ErrTooLarge):
		writeError(w, http.StatusRequestEntityTooLarge, "too_large", err.Error())
	case errors.Is(err, archive.ErrTokenExists):
		writeError(w, http.StatusConflict, "exists", err.Error())
	case errors.Is(err, archive.ErrNoToken):
		writeError(w, http.StatusNotFound, "not_found", err.Error())
	case errors.Is(err, errBadRequest):
		writeError(w, http.StatusBadRequest, "bad_request", strings.TrimSuffix(err.Error(), ": "+errBadRequest.Error()))
	case errors.Is(err, errClientGone):
		// The client went away; nobody reads an answer.
	default:
		s.log.Error("request failed", "err", err)
		writeError(w, http.StatusInternalServerError, "internal", err.Error())
	}
}

var (
	errBadRequest   = errors.New("bad request")
	errClientGone   = errors.New("client gone")
	errSearchBudget = errors.New("the search ran past its time budget")
)

func badRequest(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, errBadRequest)...)
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	if _, err := s.x.Stats(r.Context()); err != nil {
		writeError(w, http.StatusServiceUnavailable, "unhealthy", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) whoami(w http.ResponseWriter, r *http.Request) {
	a := actorOf(r)
	writeJSON(w, http.StatusOK, map[string]string{"name": a.Name, "role": a.Role.String()})
}

func (s *Server) formats(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string][]string{"formats": s.x.Formats()})
}

const maxLimit = 200

func (s *Server) search(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query().Get("q")
	limit, err := intParam(r, "limit", query.DefaultLimit)
	if err != nil || limit < 1 || limit > maxLimit {
		s.fail(w, badRequest("limit: want 1 to %d", maxLimit))
		return
	}
	from := 0
	if c := r.URL.Query().Get("cursor"); c != "" {
		if from, err = decodeCursor(c); err != nil {
			s.fail(w, err)
			return
		}
	}
	pq, err := query.Parse(q)
	if err == nil && !seesModeration(r) {
		err = viewerQuery(pq)
	}
	if err != nil {
		s.fail(w, err)
		return
	}
	// The search gets a time budget, and stops when the client leaves.
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.SearchTimeout)
	defer cancel()
	res, err := s.x.SearchQuery(ctx, pq, from, limit)
	switch {
	case err != nil && r.Context().Err() != nil:
		s.fail(w, fmt.Errorf("%w: %v", errClientGone, err))
		return
	case errors.Is(err, context.DeadlineExceeded):
		s.fail(w, fmt.Errorf("%w of %v: narrow it (fewer or longer prefixes, a player:, map: or after: term)", errSearchBudget, s.cfg.SearchTimeout))
		return
	case err != nil:
		s.fail(w, err)
		return
	}
	next := ""
	if n := from + len(res.Hits); n < res.Total && len(res.Hits) > 0 && n <= query.MaxOffset {
		next = encodeCursor(n)
	}
	writeJSON(w, http.StatusOK, wire.SearchOf(s.x, q, res, next))
}

func encodeCursor(from int) string {
	return base64.RawURLEncoding.EncodeToString([]byte("o" + strconv.Itoa(from)))
}

func decodeCursor(c string) (int, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(b) < 2 || b[0] != 'o' {
		return 0, badRequest("cursor %q: not a cursor this server gave", c)
	}
	n, err := strconv.Atoi(string(b[1:]))
	if err != nil || n < 0 || n > query.MaxOffset {
		return 0, badRequest("cursor %q: not a cursor this server gave", c)
	}
	return n, nil
}

func intParam(r *http.Request, name string, def int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	return strconv.Atoi(v)
}

// Uploads.

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
	res, sum, err := s.x.IngestStream(r.Context(), name, r.Body, s.cfg.MaxUpload, actorOf(r))
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

func decodeBody(r *http.Request, v any) error {
	if r.Body == nil || r.ContentLength == 0 {
		return nil
	}
	dec := json.NewDecoder(io.LimitReader(r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
		return badRequest("body: %v", err)
	}
	return nil
}

// Recordings.

// open opens the recording the path names.
func (s *Server) open(r *http.Request) (*replay.Recording, error) {
	return s.x.Recording(r.PathValue("id"))
}

// openRange opens the recording the path names and reads the tick range
// its from and to parameters give (rangeParams). On failure it has
// answered the request and returns false.
func (s *Server) openRange(w http.ResponseWriter, r *http.Request) (*replay.Recording, formats.Range, bool) {
	rec, err := s.open(r)
	if err == nil {
		var span formats.Range
		if span, err = rangeParams(r, rec); err == nil {
			return rec, span, true
		}
	}
	s.fail(w, err)
	return nil, formats.Range{}, false
}

func (s *Server) show(w http.ResponseWriter, r *http.Request) {
	s.writeRecording(w, r, r.PathValue("id"))
}

func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	rec, span, ok := s.openRange(w, r)
	if !ok {
		return
	}
	limit, err := intParam(r, "limit", 10000)
	if err != nil || limit < 1 {
		s.fail(w, badRequest("limit: want a positive number"))
		return
	}
	m := rec.Manifest()
	// A recording's events are written with its content and change only
	// with it (its sha256 and ingest time), so the answer is named by
	// those and the query: the page reopening a recording is answered 304
	// without reading the events again.
	// Viewers get the events without accounts: the role names the answer
	// too.
	q := sha256.Sum256([]byte(r.URL.RawQuery))
	tag := fmt.Sprintf(`"ev-%s-%x-%x-%t"`, m.SHA256, m.Ingested.UnixNano(), q[:8], seesModeration(r))
	w.Header().Set("ETag", tag)
	w.Header().Set("Cache-Control", "private, no-cache")
	if inm := r.Header.Get("If-None-Match"); inm != "" && strings.Contains(inm, tag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	evs, err := s.x.Events(m.ID)
	if err != nil {
		s.fail(w, err)
		return
	}
	if !seesModeration(r) {
		evs = viewerEvents(evs)
	}
	if r.URL.Query().Get("compact") != "" {
		writeJSON(w, http.StatusOK, wire.EventsCompactOf(evs, span, limit))
		return
	}
	writeJSON(w, http.StatusOK, wire.EventsOf(m, evs, span, limit))
}

// rangeParams reads from and to as ticks ("1500") or offsets from the
// recording's start ("1m04s", "90s", "2500ms"); an absent to is the end.
func rangeParams(r *http.Request, rec *replay.Recording) (formats.Range, error) {
	from, err := tickParam(r, "from", rec, 0)
	if err != nil {
		return formats.Range{}, err
	}
	to, err := tickParam(r, "to", rec, -1)
	return formats.Ticks(from, to), err
}

func tickParam(r *http.Request, name string, rec *replay.Recording, def int64) (int64, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	return rec.ParseTick(v)
}

func (s *Server) frames(w http.ResponseWriter, r *http.Request) {
	rec, span, ok := s.openRange(w, r)
	if !ok {
		return
	}
	// types=a,b keeps only frames of those types (the web page asks for
	// the ones holding positions: a teehistorian range is mostly inputs).
	var types map[string]bool
	if v := r.URL.Query().Get("types"); v != "" {
		types = map[string]bool{}
		for _, t := range strings.Split(v, ",") {
			types[strings.TrimSpace(t)] = true
		}
	}
	viewer := !seesModeration(r)
	w.Header().Set("Content-Type", "application/x-ndjson")
	gw, done := s.guardWrites(w)
	defer done()
	bw := bufio.NewWriterSize(gw, 64<<10)
	enc := json.NewEncoder(bw)
	started := false
	err := rec.Frames(r.Context(), span.From, span.To, func(f formats.Frame) error {
		started = true
		if types != nil && !types[f.Type] {
			return nil
		}
		if v, ok := f.Data.(formats.ForViewers); ok && viewer {
			f.Data = v.ForViewers()
		}
		return enc.Encode(f)
	})
	if err != nil && !started {
		s.fail(w, err)
		return
	}
	if err != nil {
		enc.Encode(map[string]string{"error": err.Error()})
	}
	bw.Flush()
}

func (s *Server) file(w http.ResponseWriter, r *http.Request) {
	rec, err := s.open(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	m := rec.Manifest()
	redact := r.URL.Query().Get("redact") != "" && r.URL.Query().Get("redact") != "0"
	if !redact && actorOf(r).Role < replay.RoleAdmin {
		writeError(w, http.StatusForbidden, "forbidden", "whole original files are for admins; ask for a redacted copy with ?redact=1")
		return
	}
	if redact {
		s.serveBuilt(w, r, func(tmp io.Writer) (string, error) {
			return downloadName(m, rec.Extension(), "redacted"), rec.Export(r.Context(), tmp, true)
		})
		return
	}
	setDownload(w, downloadName(m, rec.Extension(), ""))
	w.Header().Set("ETag", `"`+m.SHA256+`"`)
	// Range and If-None-Match are answered; the reader decodes only the
	// chunks a range touches.
	s.serveContent(w, r, m.Ingested, newRecordingReader(r.Context(), rec))
}

func (s *Server) clip(w http.ResponseWriter, r *http.Request) {
	rec, span, ok := s.openRange(w, r)
	if !ok {
		return
	}
	redact := actorOf(r).Role < replay.RoleModerator || (r.URL.Query().Get("redact") != "" && r.URL.Query().Get("redact") != "0")
	s.serveBuilt(w, r, func(tmp io.Writer) (string, error) {
		f, t, err := rec.Clip(r.Context(), span.From, span.To, tmp, redact)
		if err != nil {
			return "", err
		}
		suffix := fmt.Sprintf("%d-%d", f, t)
		if redact {
			suffix += "-redacted"
		}
		w.Header().Set("X-Clip-From", strconv.FormatInt(f, 10))
		w.Header().Set("X-Clip-To", strconv.FormatInt(t, 10))
		return downloadName(rec.Manifest(), rec.Extension(), suffix), nil
	})
}

// convert writes the recording converted to another format.
func (s *Server) convert(w http.ResponseWriter, r *http.Request) {
	rec, span, ok := s.openRange(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	format := q.Get("format")
	if format == "" {
		s.fail(w, badRequest("format: required (one of %s)", strings.Join(rec.ConvertFormats(), ", ")))
		return
	}
	opts := map[string]string{}
	for _, kv := range q["opt"] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			s.fail(w, badRequest("opt %q: want KEY=VALUE", kv))
			return
		}
		opts[k] = v
	}
	s.serveBuilt(w, r, func(tmp io.Writer) (string, error) {
		if err := rec.Convert(r.Context(), format, span.From, span.To, opts, tmp); err != nil {
			return "", err
		}
		return downloadName(rec.Manifest(), replay.Extension(format), format), nil
	})
}

func downloadName(m *archive.Manifest, ext, suffix string) string {
	base := m.ID.String()[:8]
	if suffix != "" {
		base += "-" + suffix
	}
	return base + ext
}

func setDownload(w http.ResponseWriter, name string) {
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": name}))
}

// Marks.

type noteBody struct {
	Note   string `json:"note"`
	Reason string `json:"reason"`
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

// writeRecording answers with everything about recording ref, as the
// caller's role may see it.
func (s *Server) writeRecording(w http.ResponseWriter, r *http.Request, ref string) {
	m, err := s.x.Manifest(ref)
	if err != nil {
		s.fail(w, err)
		return
	}
	audit, err := s.x.Audit(m.ID.String(), 0, 100)
	if err != nil {
		s.fail(w, err)
		return
	}
	out := wire.RecordingOf(s.x, m, audit)
	if !seesModeration(r) {
		out = recordingForViewer(out)
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) flag(r *http.Request, b noteBody) (*archive.Manifest, error) {
	return s.x.Flag(r.Context(), actorOf(r), r.PathValue("id"), r.PathValue("name"), b.Note)
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

func (s *Server) recordingAudit(w http.ResponseWriter, r *http.Request) {
	id, err := s.x.Resolve(r.PathValue("id"))
	if err != nil {
		s.fail(w, err)
		return
	}
	s.writeAudit(w, r, id.String())
}

func (s *Server) auditLog(w http.ResponseWriter, r *http.Request) { s.writeAudit(w, r, "") }

func (s *Server) writeAudit(w http.ResponseWriter, r *http.Request, ref string) {
	limit, err := intParam(r, "limit", 100)
	if err != nil || limit < 1 || limit > 10000 {
		s.fail(w, badRequest("limit: want 1 to 10000"))
		return
	}
	before, err := intParam(r, "before", 0)
	if err != nil || before < 0 {
		s.fail(w, badRequest("before: want a sequence number"))
		return
	}
	es, err := s.x.Audit(ref, uint64(before), limit)
	if err != nil {
		s.fail(w, err)
		return
	}
	if es == nil {
		es = []archive.AuditEntry{}
	}
	if !seesModeration(r) {
		es = viewerAudit(es)
	}
	writeJSON(w, http.StatusOK, map[string]any{"entries": es})
}

// Retention.

func (s *Server) getRetention(w http.ResponseWriter, r *http.Request) {
	p, err := s.x.Policy()
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.PolicyOf(p))
}

func (s *Server) putRetention(w http.ResponseWriter, r *http.Request) {
	var pj wire.Policy
	if err := decodeBody(r, &pj); err != nil {
		s.fail(w, err)
		return
	}
	p, err := pj.Policy()
	if err != nil {
		s.fail(w, badRequest("%v", err))
		return
	}
	if err := s.x.SetPolicy(actorOf(r), p); err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.PolicyOf(p))
}

func (s *Server) clearRetention(w http.ResponseWriter, r *http.Request) {
	if err := s.x.SetPolicy(actorOf(r), nil); err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.PolicyOf(nil))
}

func (s *Server) prune(w http.ResponseWriter, r *http.Request) {
	var req wire.PruneRequest
	if err := decodeBody(r, &req); err != nil {
		s.fail(w, err)
		return
	}
	dry := req.DryRun == nil || *req.DryRun
	var pol *archive.Policy
	var err error
	source := "stored policy"
	if req.Policy != nil {
		source = "request"
		if pol, err = req.Policy.Policy(); err != nil {
			s.fail(w, badRequest("%v", err))
			return
		}
	} else if pol, err = s.x.Policy(); err != nil {
		s.fail(w, err)
		return
	}
	if pol == nil || pol.IsZero() {
		s.fail(w, badRequest("no retention policy: store one (PUT /api/v1/retention) or send one"))
		return
	}
	plan, err := s.x.Plan(r.Context(), *pol, archive.PlanOptions{IncludeFlagged: req.IncludeFlagged})
	if err != nil {
		s.fail(w, err)
		return
	}
	out := wire.Prune{DryRun: dry, PolicySource: source, Policy: wire.PolicyOf(pol), Plan: plan}
	if !dry {
		rep, err := s.x.Prune(r.Context(), actorOf(r), plan)
		if rep != nil {
			s.metrics.prunes.Inc()
			s.metrics.pruned.Add(float64(len(rep.Removed)))
		}
		if err != nil {
			s.fail(w, err)
			return
		}
		out.Report = rep
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) stats(w http.ResponseWriter, r *http.Request) {
	st, err := s.x.Stats(r.Context())
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

func (s *Server) check(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ReadData bool `json:"read_data"`
		Repair   bool `json:"repair"`
	}
	if err := decodeBody(r, &req); err != nil {
		s.fail(w, err)
		return
	}
	rep, err := s.x.Check(r.Context(), archive.CheckOptions{ReadData: req.ReadData, Repair: req.Repair})
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, rep)
}

func (s *Server) reindex(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	n, err := s.x.Reindex(r.Context())
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"recordings": n, "took_ms": time.Since(start).Milliseconds()})
}

// Tokens.

func (s *Server) listTokens(w http.ResponseWriter, r *http.Request) {
	ts, err := s.x.Tokens()
	if err != nil {
		s.fail(w, err)
		return
	}
	type tokenJSON struct {
		Name      string    `json:"name"`
		Role      string    `json:"role"`
		Created   time.Time `json:"created"`
		CreatedBy string    `json:"created_by,omitempty"`
	}
	out := []tokenJSON{}
	for _, t := range ts {
		out = append(out, tokenJSON{t.Name, t.Role, t.Created, t.CreatedBy})
	}
	writeJSON(w, http.StatusOK, map[string]any{"tokens": out})
}

func (s *Server) createToken(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name string `json:"name"`
		Role string `json:"role"`
	}
	if err := decodeBody(r, &req); err != nil {
		s.fail(w, err)
		return
	}
	role, err := replay.ParseRole(req.Role)
	if err != nil {
		s.fail(w, badRequest("%v", err))
		return
	}
	secret, err := s.x.CreateToken(actorOf(r), req.Name, role)
	if err != nil {
		if errors.Is(err, archive.ErrTokenExists) {
			s.fail(w, err)
		} else {
			s.fail(w, badRequest("%v", err))
		}
		return
	}
	writeJSON(w, http.StatusCreated, map[string]string{"name": req.Name, "role": role.String(), "token": secret})
}

func (s *Server) revokeToken(w http.ResponseWriter, r *http.Request) {
	if err := s.x.RevokeToken(actorOf(r), r.PathValue("name")); err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"revoked": r.PathValue("name")})
}
