// The route table, the mapping of errors to statuses and codes (fail), and
// what every handler reads and writes requests with.

package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/query"
	"github.com/replayarchive/replay/wire"
)

func (s *Server) routes() {
	v, m, a := replay.RoleViewer, replay.RoleModerator, replay.RoleAdmin
	// h registers a route a person waits on; bg one whose work is
	// background work itself (routeKind).
	h := func(pattern string, role replay.Role, name string, fn http.HandlerFunc) {
		s.mux.HandleFunc(pattern, s.with(role, name, waitedOn, fn))
	}
	bg := func(pattern string, role replay.Role, name string, fn http.HandlerFunc) {
		s.mux.HandleFunc(pattern, s.with(role, name, background, fn))
	}
	s.mux.HandleFunc("GET /healthz", s.healthz)
	s.mux.Handle("GET /metrics", promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{}))

	s.mux.HandleFunc("GET /api/v1/owner/challenge", s.ownerChallenge)
	h("GET /api/v1/whoami", v, "whoami", s.whoami)
	h("GET /api/v1/formats", v, "formats", s.formats)
	h("GET /api/v1/recordings", v, "search", s.search)
	bg("POST /api/v1/recordings", m, "upload", s.upload)
	bg("POST /api/v1/ingest", a, "ingest", s.ingestPaths)
	h("GET /api/v1/recordings/{id}", v, "show", s.show)
	h("GET /api/v1/recordings/{id}/events", v, "events", s.events)
	h("GET /api/v1/recordings/{id}/frames", v, "frames", s.frames)
	h("GET /api/v1/recordings/{id}/tracks", v, "tracks", s.tracks)
	h("GET /api/v1/recordings/{id}/scoreboard", v, "scoreboard", s.scoreboard)
	h("GET /api/v1/recordings/{id}/file", v, "file", s.file)
	h("GET /api/v1/recordings/{id}/clip", v, "clip", s.clip)
	h("GET /api/v1/recordings/{id}/export", v, "export", s.convert)
	h("GET /api/v1/recordings/{id}/audit", v, "audit", s.recordingAudit)
	h("GET /api/v1/recordings/{id}/map", v, "recording-map", s.recordingMap)
	h("GET /api/v1/players", v, "player", s.player)
	h("GET /api/v1/players/{key}", v, "player", s.player)
	h("GET /api/v1/maps", v, "maps", s.listMaps)
	bg("POST /api/v1/maps", m, "map-add", s.addMap)
	h("GET /api/v1/maps/{sha256}/game", v, "map-game", s.mapGame)
	h("PUT /api/v1/recordings/{id}/flags/{name}", m, "flag", s.mark(s.flag))
	h("DELETE /api/v1/recordings/{id}/flags/{name}", m, "unflag", s.mark(s.unflag))
	h("PUT /api/v1/recordings/{id}/hold", m, "hold", s.mark(s.hold))
	h("DELETE /api/v1/recordings/{id}/hold", m, "release", s.mark(s.release))
	s.caseRoutes(h)
	s.shareRoutes(h)
	h("DELETE /api/v1/recordings/{id}", m, "takedown", s.takedown)
	h("GET /api/v1/takedowns", m, "takedowns", s.takedowns)
	h("POST /api/v1/takedowns/{id}/undo", m, "undo-takedown", s.undoTakedown)
	h("DELETE /api/v1/takedowns/{sha256}", a, "lift-takedown", s.liftTakedown)
	h("GET /api/v1/audit", a, "audit", s.auditLog)
	h("GET /api/v1/retention", v, "retention", s.getRetention)
	h("PUT /api/v1/retention", a, "retention-set", s.putRetention)
	h("DELETE /api/v1/retention", a, "retention-clear", s.clearRetention)
	bg("POST /api/v1/prune", a, "prune", s.prune)
	h("GET /api/v1/stats", v, "stats", s.stats)
	bg("POST /api/v1/check", a, "check", s.check)
	bg("POST /api/v1/reindex", a, "reindex", s.reindex)
	h("GET /api/v1/tokens", a, "tokens", s.listTokens)
	h("POST /api/v1/tokens", a, "token-create", s.createToken)
	h("DELETE /api/v1/tokens/{name}", a, "token-revoke", s.revokeToken)
	h("POST /api/v1/watch", m, "watch-create", s.watchCreate)
	h("POST /api/v1/watch/{id}/join", v, "watch-join", s.watchJoin)
	h("POST /api/v1/watch/{id}/state", v, "watch-state", s.watchState)
	h("POST /api/v1/watch/{id}/take", v, "watch-take", s.watchTake)
	// The stream authenticates itself: a browser's EventSource sends no
	// token, only the participant id its join answered.
	s.mux.HandleFunc("GET /api/v1/watch/{id}/events", s.watchEvents)
	// Pushes take a pusher or an admin (checked in push.go: a viewer or a
	// moderator may not push).
	bg("GET /api/v1/push/{source...}", replay.RolePusher, "push-state", s.pushState)
	bg("PUT /api/v1/push/{source...}", replay.RolePusher, "push", s.pushAppend)
	if s.cfg.CLI != nil {
		bg("POST /api/v1/cli", a, "cli", func(w http.ResponseWriter, r *http.Request) {
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
	case errors.Is(err, archive.ErrReadingNode):
		writeError(w, http.StatusConflict, "reading_node", err.Error())
	case errors.Is(err, replay.ErrJanitorElsewhere):
		writeError(w, http.StatusConflict, "janitor_elsewhere", err.Error())
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

func intParam(r *http.Request, name string, def int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	return strconv.Atoi(v)
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
