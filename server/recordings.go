// A recording's endpoints: show, events, frames, the file, clips,
// conversions and its audit history.

package server

import (
	"bufio"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/wire"
)

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
		out = s.recordingForViewer(out)
	}
	writeJSON(w, http.StatusOK, out)
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
		evs = s.viewerEvents(m.ID.String(), evs)
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
	if name == "from" {
		return rec.ParseFrom(v)
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
	content := newRecordingReader(r.Context(), rec)
	if r.Header.Get("Range") == "" {
		// The first chunk is read (and kept by the reader) before the 200
		// and its Content-Length commit the answer: a recording that cannot
		// be read at all (its remote object gone, the store unreachable)
		// is an error answer, not a body that breaks off. A chunk failing
		// later still cuts the body short of its Content-Length, and the
		// connection is closed: a broken download, never a short file.
		if err := probeFirstChunk(content, rec); err != nil {
			s.fail(w, err)
			return
		}
	}
	setDownload(w, downloadName(m, rec.Extension(), ""))
	w.Header().Set("ETag", `"`+m.SHA256+`"`)
	// Range and If-None-Match are answered; the reader decodes only the
	// chunks a range touches.
	s.serveContent(w, r, m.Ingested, content)
}

// probeFirstChunk reads one byte of the recording's first chunk through
// content and seeks back to the start.
func probeFirstChunk(content io.ReadSeeker, rec *replay.Recording) error {
	cs := rec.Chunks()
	if len(cs) == 0 {
		return nil
	}
	if _, err := content.Seek(cs[0].Offset, io.SeekStart); err != nil {
		return err
	}
	if _, err := content.Read(make([]byte, 1)); err != nil {
		return fmt.Errorf("recording %s: %w", rec.Manifest().ID, err)
	}
	_, err := content.Seek(0, io.SeekStart)
	return err
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

func (s *Server) recordingAudit(w http.ResponseWriter, r *http.Request) {
	id, err := s.x.Resolve(r.PathValue("id"))
	if err != nil {
		s.fail(w, err)
		return
	}
	s.writeAudit(w, r, id.String())
}

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
