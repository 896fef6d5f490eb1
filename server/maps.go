// Maps: the DDNet maps a moderator sees a teehistorian recording against
// (replay.AddMap; the page draws the game layer under the trails).

package server

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/wire"
)

// addMap stores the map file in the body (application/octet-stream, at
// most replay.MaxMapBytes): 201 with the map, 200 when it was held
// already, 422 bad_map with the reader's reason when it is not a map.
func (s *Server) addMap(w http.ResponseWriter, r *http.Request) {
	s.uploads.Add(1)
	defer s.uploads.Done()
	if r.ContentLength > replay.MaxMapBytes {
		s.failMap(w, fmt.Errorf("%d bytes: %w (%d bytes)", r.ContentLength, replay.ErrTooLarge, replay.MaxMapBytes))
		return
	}
	name := r.URL.Query().Get("name")
	if name == "" {
		name = "upload"
	}
	a, err := s.x.AddMap(r.Context(), actorOf(r), name, clientBody{r.Body})
	if err != nil {
		s.failMap(w, err)
		return
	}
	status := http.StatusCreated
	if a.Existed {
		status = http.StatusOK
	} else {
		w.Header().Set("Location", "/api/v1/maps/"+a.SHA256+"/game")
	}
	writeJSON(w, status, wire.MapAddOf(a))
}

// listMaps answers the stored maps.
func (s *Server) listMaps(w http.ResponseWriter, r *http.Request) {
	maps, bad, err := s.x.Maps()
	if err != nil {
		s.failMap(w, err)
		return
	}
	for _, err := range bad {
		s.log.Warn("stored map does not read", "err", err)
	}
	out := make([]wire.Map, 0, len(maps))
	for _, m := range maps {
		out = append(out, wire.MapOf(m))
	}
	writeJSON(w, http.StatusOK, map[string][]wire.Map{"maps": out})
}

// mapGame answers a stored map's game layer. A map's bytes never change
// under its sha256, so the answer may be cached for good.
func (s *Server) mapGame(w http.ResponseWriter, r *http.Request) {
	sha := strings.ToLower(r.PathValue("sha256"))
	tag := `"map-` + sha + `"`
	w.Header().Set("Cache-Control", "private, max-age=31536000, immutable")
	if notModified(w, r, tag) {
		return
	}
	m, err := s.x.Map(sha)
	if err != nil {
		w.Header().Del("Cache-Control")
		s.failMap(w, err)
		return
	}
	w.Header().Set("ETag", tag)
	writeJSON(w, http.StatusOK, wire.GameLayerOf(m))
}

// recordingMap answers the game layer of the map a recording was played
// on, or 404 no_map when it names none or the map was not added. The
// answer is named by the map's sha256, so reopening a recording is a 304.
func (s *Server) recordingMap(w http.ResponseWriter, r *http.Request) {
	man, err := s.x.Manifest(r.PathValue("id"))
	if err != nil {
		s.failMap(w, err)
		return
	}
	w.Header().Set("Cache-Control", "private, no-cache")
	if sha := replay.RecordingMapSHA256(man); sha != "" && notModified(w, r, `"map-`+sha+`"`) {
		return
	}
	m, err := s.x.RecordingMap(man.ID.String())
	if err != nil {
		s.failMap(w, err)
		return
	}
	w.Header().Set("ETag", `"map-`+m.SHA256Hex()+`"`)
	writeJSON(w, http.StatusOK, wire.GameLayerOf(m))
}

// notModified answers 304 when the request's If-None-Match names tag.
func notModified(w http.ResponseWriter, r *http.Request, tag string) bool {
	inm := r.Header.Get("If-None-Match")
	if inm == "" || !strings.Contains(inm, tag) {
		return false
	}
	w.Header().Set("ETag", tag)
	w.WriteHeader(http.StatusNotModified)
	return true
}

// failMap answers the maps' own errors, then what every handler answers.
func (s *Server) failMap(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, replay.ErrNoMap):
		writeError(w, http.StatusNotFound, "no_map", err.Error())
	case errors.Is(err, replay.ErrBadMapID):
		writeError(w, http.StatusBadRequest, "bad_request", err.Error())
	case errors.Is(err, replay.ErrBadMap):
		writeError(w, http.StatusUnprocessableEntity, "bad_map", err.Error())
	default:
		s.fail(w, err)
	}
}
