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
	"github.com/replayarchive/replay/internal/units"
	"github.com/replayarchive/replay/query"
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

// Error is the body of every error response.
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

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, Error{Error: msg, Code: code})
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
		writeJSON(w, http.StatusBadRequest, Error{Error: err.Error(), Code: "bad_query", Pos: &pos, Term: pe.Term})
	case errors.Is(err, errSearchBudget):
		writeError(w, http.StatusBadRequest, "bad_query", err.Error())
	case errors.As(err, &amb):
		ids := make([]string, len(amb.Matches))
		for i, id := range amb.Matches {
			ids[i] = id.String()
		}
		writeJSON(w, http.StatusConflict, Error{Error: err.Error(), Code: "ambiguous", IDs: ids})
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
		writeJSON(w, http.StatusGone, Error{Error: err.Error(), Code: "taken_down", Takedown: &t})
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

// Search results.

// EventJSON is one event in a search hit or a recording's event list.
type EventJSON struct {
	Tick     int64  `json:"tick"`
	TimeMS   int64  `json:"time_ms"`
	At       string `json:"at,omitempty"`
	Kind     string `json:"kind"`
	Player   string `json:"player,omitempty"`
	PlayerID string `json:"player_id,omitempty"`
	Text     string `json:"text,omitempty"`
	ClipURL  string `json:"clip_url,omitempty"`
}

// HitJSON is one recording found by a search.
type HitJSON struct {
	ID         string      `json:"id"`
	Format     string      `json:"format"`
	Session    string      `json:"session,omitempty"`
	Start      string      `json:"start,omitempty"`
	DurationMS int64       `json:"duration_ms"`
	Map        string      `json:"map,omitempty"`
	Server     string      `json:"server,omitempty"`
	Players    []string    `json:"players"`
	Flags      []string    `json:"flags"`
	CanClip    bool        `json:"can_clip"`
	EventTotal int         `json:"event_total"`
	Events     []EventJSON `json:"events"`
}

// SearchJSON is the answer to a search.
type SearchJSON struct {
	Query      string    `json:"query"`
	Total      int       `json:"total"`
	TookMS     float64   `json:"took_ms"`
	NextCursor string    `json:"next_cursor,omitempty"`
	Hits       []HitJSON `json:"hits"`
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
	writeJSON(w, http.StatusOK, SearchJSONOf(s.x, q, res, next))
}

// SearchJSONOf is the JSON form of search results (the API's, and
// `archivectl search --json`'s).
func SearchJSONOf(x *replay.Archive, q string, res *query.Results, next string) SearchJSON {
	out := SearchJSON{Query: q, Total: res.Total, TookMS: float64(res.Took.Microseconds()) / 1000, Hits: []HitJSON{}, NextCursor: next}
	for _, h := range res.Hits {
		out.Hits = append(out.Hits, HitJSONOf(h, x.CanClip(h.Format)))
	}
	return out
}

// HitJSONOf is the JSON form of one hit; canClip says whether its format
// can clip, so that only then a clip URL is offered.
func HitJSONOf(h query.Hit, canClip bool) HitJSON {
	hj := HitJSON{ID: h.ID, Format: h.Format, Session: h.Session, DurationMS: h.Duration.Milliseconds(),
		Map: h.Map, Server: h.Server, Players: nonNil(h.Players), Flags: nonNil(h.Flags),
		CanClip: canClip, EventTotal: h.EventTotal, Events: []EventJSON{}}
	if !h.Start.IsZero() {
		hj.Start = h.Start.UTC().Format(time.RFC3339)
	}
	for _, ev := range h.Events {
		ej := EventJSON{Tick: ev.Tick, TimeMS: ev.Time.Milliseconds(), Kind: ev.Kind, Player: ev.Player, Text: ev.Text}
		if !h.Start.IsZero() {
			ej.At = h.Start.Add(ev.Time).UTC().Format(time.RFC3339)
		}
		if hj.CanClip {
			ej.ClipURL = ClipURL(h.ID, ev.Time)
		}
		hj.Events = append(hj.Events, ej)
	}
	return hj
}

// ClipURL is the clip endpoint for a few seconds around offset t of a
// recording; the server clamps the range to the recording.
func ClipURL(id string, t time.Duration) string {
	from := max(t-replay.ClipMargin*time.Second, 0)
	to := t + replay.ClipMargin*time.Second
	return fmt.Sprintf("/api/v1/recordings/%s/clip?from=%s&to=%s", id, offsetString(from), offsetString(to))
}

// offsetString prints an offset in the form from/to parameters take.
func offsetString(d time.Duration) string {
	return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
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

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Uploads.

// UploadJSON answers an upload.
type UploadJSON struct {
	ID          string   `json:"id"`
	Outcome     string   `json:"outcome"`
	Format      string   `json:"format,omitempty"`
	NativeBytes int64    `json:"native_bytes,omitempty"`
	StoredBytes int64    `json:"stored_bytes,omitempty"`
	SHA256      string   `json:"sha256"`
	Warnings    []string `json:"warnings,omitempty"`
	Note        string   `json:"note,omitempty"`
}

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
	out := UploadJSON{ID: idString(res), Outcome: res.Outcome.String(), Format: res.Format, NativeBytes: res.NativeBytes,
		StoredBytes: res.StoredBytes, SHA256: sum, Warnings: res.Warnings, Note: res.Note}
	switch res.Outcome {
	case ingest.OutcomeIngested, ingest.OutcomeReplaced:
		s.metrics.ingestBytes.Add(float64(res.NativeBytes))
		w.Header().Set("Location", "/api/v1/recordings/"+out.ID)
		writeJSON(w, http.StatusCreated, out)
	case ingest.OutcomeDup:
		writeJSON(w, http.StatusConflict, Error{Error: "these bytes are archived already as recording " + out.ID, Code: "duplicate", ID: out.ID})
	default:
		var td *archive.TakenDownError
		if errors.As(res.Cause, &td) {
			t := td.Takedown
			writeJSON(w, http.StatusGone, Error{Error: res.Err, Code: "taken_down", Takedown: &t})
			return
		}
		var re *archive.ReplaceError
		if errors.As(res.Cause, &re) {
			writeJSON(w, http.StatusConflict, Error{Error: res.Err, Code: "refused", ID: out.ID})
			return
		}
		code := "bad_input"
		switch res.Outcome {
		case ingest.OutcomeSkipped:
			code = "skipped"
		case ingest.OutcomeExpired:
			code = "expired"
		}
		writeJSON(w, http.StatusUnprocessableEntity, Error{Error: strings.TrimSpace(res.Err), Code: code})
	}
}

func idString(r ingest.FileResult) string {
	if r.ID == [16]byte{} {
		return ""
	}
	return r.ID.String()
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
		writeJSON(w, http.StatusOK, compactEvents(evs, span, limit))
		return
	}
	out := struct {
		Events []EventJSON `json:"events"`
		Total  int         `json:"total"`
	}{Events: []EventJSON{}}
	for _, ev := range evs {
		if !span.Contains(ev.Tick) {
			continue
		}
		out.Total++
		if len(out.Events) < limit {
			out.Events = append(out.Events, EventJSONOf(m, ev))
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// EventsCompactJSON is a recording's events as columns (`?compact=1`), for
// the web page's timeline: a one-hour teehistorian file's 7,437 events are
// about a seventh of the bytes of the event objects, and quicker to write
// and parse. Event i is tick Tick[0]+…+Tick[i] (each entry is the
// difference from the event before, the first from 0; TimeMS likewise),
// and Kind, Player, PlayerID and Text index Strings, where 0 is "".
type EventsCompactJSON struct {
	Total    int      `json:"total"`
	Strings  []string `json:"strings"`
	Tick     []int64  `json:"tick"`
	TimeMS   []int64  `json:"time_ms"`
	Kind     []int    `json:"kind"`
	Player   []int    `json:"player"`
	PlayerID []int    `json:"player_id"`
	Text     []int    `json:"text"`
}

// compactEvents is the column form of the events of evs in span, the first
// limit of them.
func compactEvents(evs []formats.Event, span formats.Range, limit int) EventsCompactJSON {
	out := EventsCompactJSON{Strings: []string{""}, Tick: []int64{}, TimeMS: []int64{}, Kind: []int{}, Player: []int{}, PlayerID: []int{}, Text: []int{}}
	index := map[string]int{"": 0}
	str := func(s string) int {
		i, ok := index[s]
		if !ok {
			i = len(out.Strings)
			index[s] = i
			out.Strings = append(out.Strings, s)
		}
		return i
	}
	var tick, ms int64
	for _, ev := range evs {
		if !span.Contains(ev.Tick) {
			continue
		}
		out.Total++
		if len(out.Tick) >= limit {
			continue
		}
		t := ev.Time.Milliseconds()
		out.Tick = append(out.Tick, ev.Tick-tick)
		out.TimeMS = append(out.TimeMS, t-ms)
		tick, ms = ev.Tick, t
		out.Kind = append(out.Kind, str(ev.Kind))
		out.Player = append(out.Player, str(ev.Player))
		out.PlayerID = append(out.PlayerID, str(ev.PlayerID))
		out.Text = append(out.Text, str(ev.Text))
	}
	return out
}

// EventJSONOf is the JSON form of an event of recording m.
func EventJSONOf(m *archive.Manifest, ev formats.Event) EventJSON {
	ej := EventJSON{Tick: ev.Tick, TimeMS: ev.Time.Milliseconds(), Kind: ev.Kind, Player: ev.Player, PlayerID: ev.PlayerID, Text: ev.Text}
	if !m.Meta.Start.IsZero() {
		ej.At = m.Meta.Start.Add(ev.Time).UTC().Format(time.RFC3339)
	}
	return ej
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
	rec, err := s.x.Recording(ref)
	if err != nil {
		s.fail(w, err)
		return
	}
	audit, err := s.x.Audit(rec.Manifest().ID.String(), 0, 100)
	if err != nil {
		s.fail(w, err)
		return
	}
	out := RecordingJSONOf(rec, audit)
	if !seesModeration(r) {
		out = out.forViewer()
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

// PolicyJSON is a retention policy as the API takes and gives it.
type PolicyJSON struct {
	MaxAge   string   `json:"max_age,omitempty"`
	MaxBytes int64    `json:"max_bytes,omitempty"`
	Formats  []string `json:"formats,omitempty"`
	Text     string   `json:"text,omitempty"`
}

// PolicyJSONOf is the JSON form of p.
func PolicyJSONOf(p *archive.Policy) PolicyJSON {
	if p == nil {
		return PolicyJSON{Text: "no retention policy"}
	}
	out := PolicyJSON{MaxBytes: p.MaxBytes, Formats: p.Formats, Text: replay.DescribePolicy(p)}
	if p.MaxAge > 0 {
		out.MaxAge = units.FormatDuration(p.MaxAge)
	}
	return out
}

// Policy turns the JSON form back into a policy.
func (p PolicyJSON) Policy() (*archive.Policy, error) {
	pol := &archive.Policy{MaxBytes: p.MaxBytes, Formats: p.Formats}
	if p.MaxAge != "" {
		d, err := units.ParseDuration(p.MaxAge)
		if err != nil {
			return nil, badRequest("max_age: %v", err)
		}
		pol.MaxAge = d
	}
	if p.MaxBytes < 0 {
		return nil, badRequest("max_bytes: must not be negative")
	}
	if err := replay.CheckFormats(p.Formats); err != nil {
		return nil, badRequest("%v", err)
	}
	return pol, nil
}

func (s *Server) getRetention(w http.ResponseWriter, r *http.Request) {
	p, err := s.x.Policy()
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, PolicyJSONOf(p))
}

func (s *Server) putRetention(w http.ResponseWriter, r *http.Request) {
	var pj PolicyJSON
	if err := decodeBody(r, &pj); err != nil {
		s.fail(w, err)
		return
	}
	p, err := pj.Policy()
	if err != nil {
		s.fail(w, err)
		return
	}
	if err := s.x.SetPolicy(actorOf(r), p); err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, PolicyJSONOf(p))
}

func (s *Server) clearRetention(w http.ResponseWriter, r *http.Request) {
	if err := s.x.SetPolicy(actorOf(r), nil); err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, PolicyJSONOf(nil))
}

// PruneRequest asks for a prune: by the stored policy unless a policy is
// given, and as a dry run unless DryRun is false.
type PruneRequest struct {
	DryRun         *bool       `json:"dry_run,omitempty"`
	Policy         *PolicyJSON `json:"policy,omitempty"`
	IncludeFlagged bool        `json:"include_flagged,omitempty"`
}

// PruneJSON answers a prune.
type PruneJSON struct {
	DryRun bool                 `json:"dry_run"`
	Policy PolicyJSON           `json:"policy"`
	Plan   *archive.Plan        `json:"plan"`
	Report *archive.PruneReport `json:"report,omitempty"`
}

func (s *Server) prune(w http.ResponseWriter, r *http.Request) {
	var req PruneRequest
	if err := decodeBody(r, &req); err != nil {
		s.fail(w, err)
		return
	}
	dry := req.DryRun == nil || *req.DryRun
	var pol *archive.Policy
	var err error
	if req.Policy != nil {
		if pol, err = req.Policy.Policy(); err != nil {
			s.fail(w, err)
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
	out := PruneJSON{DryRun: dry, Policy: PolicyJSONOf(pol), Plan: plan}
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
