// Watching a recording together (issue 33): a moderator opens a room for a
// recording, others join it, and every participant's page follows the
// room's moment, speed and playing state, which only the participant
// holding the controls may change (any may take them). Rooms live in
// memory on the Server, bounded in number, in participants and in what
// they send: state events are coalesced to at most one every
// WatchConfig.MinInterval, and each participant's stream has a buffer of
// WatchConfig.Buffer events; one that falls that far behind (a client
// that stops reading) is dropped, so no client holds up a room.

package server

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/wire"
)

// WatchConfig bounds the shared viewings (POST /api/v1/watch). The zero
// value is a good default.
type WatchConfig struct {
	// MaxRooms is how many rooms may be open at once (default 64).
	MaxRooms int
	// MaxParticipants is how many may be in one room (default 16).
	MaxParticipants int
	// Idle is how long a room stays open with nobody connected
	// (default 30 min).
	Idle time.Duration
	// Heartbeat is how often a quiet stream gets a comment, so proxies and
	// the browser keep it open (default 15 s).
	Heartbeat time.Duration
	// MinInterval is the least time between two state events of a room
	// (default 50 ms: at most 20 a second); changes in between are sent
	// together, as the latest state.
	MinInterval time.Duration
	// Buffer is how many events a participant's stream may fall behind
	// before the participant is dropped (default 16).
	Buffer int
}

func (c *WatchConfig) defaults() {
	if c.MaxRooms <= 0 {
		c.MaxRooms = 64
	}
	if c.MaxParticipants <= 0 {
		c.MaxParticipants = 16
	}
	if c.Idle <= 0 {
		c.Idle = 30 * time.Minute
	}
	if c.Heartbeat <= 0 {
		c.Heartbeat = 15 * time.Second
	}
	if c.MinInterval <= 0 {
		c.MinInterval = 50 * time.Millisecond
	}
	if c.Buffer <= 0 {
		c.Buffer = 16
	}
}

// joinGrace is how long a participant that joined may take to open its
// stream before its place is given up.
const joinGrace = 30 * time.Second

// maxWatchSpeed bounds a room's playback speed (the page offers 0.25× to 8×).
const maxWatchSpeed = 16

var (
	errNoRoom        = errors.New("no such watch room (it ended, expired or never was)")
	errTooManyRooms  = errors.New("too many watch rooms are open")
	errRoomFull      = errors.New("the watch room is full")
	errNoParticipant = errors.New("no such participant in this room (join it first: POST /api/v1/watch/{id}/join)")
	errNotController = errors.New("another participant has the controls (take them first: POST /api/v1/watch/{id}/take)")
)

// watchRooms are the Server's open rooms.
type watchRooms struct {
	cfg WatchConfig
	now func() time.Time
	// name is how a viewer sees another participant's name (a pseudonym).
	name func(room, name string) string

	mu    sync.Mutex
	rooms map[string]*watchRoom
	// done is closed on shutdown: every stream ends.
	done   chan struct{}
	closed bool
}

func newWatchRooms(cfg WatchConfig, now func() time.Time, name func(room, name string) string) *watchRooms {
	cfg.defaults()
	return &watchRooms{cfg: cfg, now: now, name: name, rooms: map[string]*watchRoom{}, done: make(chan struct{})}
}

// close ends every room's streams and refuses new rooms; the server calls
// it when it shuts down.
func (ws *watchRooms) close() {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if !ws.closed {
		ws.closed = true
		close(ws.done)
	}
}

// create opens a room for recording rec, with creator in it holding the
// controls.
func (ws *watchRooms) create(rec string, creator replay.Actor) (*watchRoom, *watchParticipant, error) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.closed {
		return nil, nil, fmt.Errorf("the server is shutting down: %w", errTooManyRooms)
	}
	now := ws.now()
	for id, r := range ws.rooms {
		if r.expired(now) {
			delete(ws.rooms, id)
		}
	}
	if len(ws.rooms) >= ws.cfg.MaxRooms {
		return nil, nil, fmt.Errorf("%w (at most %d; an unused room ends after %v)", errTooManyRooms, ws.cfg.MaxRooms, ws.cfg.Idle)
	}
	r := &watchRoom{ws: ws, id: randomID(8), rec: rec, speed: 1, parts: map[string]*watchParticipant{}, emptySince: now}
	ws.rooms[r.id] = r
	p, err := r.join(creator)
	if err != nil {
		return nil, nil, err
	}
	r.controller = p.id
	return r, p, nil
}

// room returns the open room id.
func (ws *watchRooms) room(id string) (*watchRoom, error) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	r, ok := ws.rooms[id]
	if !ok || ws.closed {
		return nil, errNoRoom
	}
	if r.expired(ws.now()) {
		delete(ws.rooms, id)
		return nil, errNoRoom
	}
	return r, nil
}

// watchRoom is one shared viewing.
type watchRoom struct {
	ws      *watchRooms
	id, rec string

	mu         sync.Mutex
	version    uint64
	tick       int64
	speed      float64
	playing    bool
	controller string // a participant's id, "" for nobody
	parts      map[string]*watchParticipant
	seq        int
	// emptySince is when the last stream ended (zero while one is open).
	emptySince time.Time
	// lastSent is when the last state event went out; pending is a timer
	// that sends the changes made since, once MinInterval has passed.
	lastSent time.Time
	pending  *time.Timer
}

// watchParticipant is one who joined a room.
type watchParticipant struct {
	id     string
	actor  replay.Actor
	seq    int
	joined time.Time
	// ch is the stream's buffer and gone is closed when the participant
	// is dropped; both nil until the stream opens.
	ch   chan []byte
	gone chan struct{}
}

// expired reports whether the room has had no stream open for Idle.
func (r *watchRoom) expired(now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.emptySince.IsZero() && now.Sub(r.emptySince) > r.ws.cfg.Idle
}

// join adds a participant for a.
func (r *watchRoom) join(a replay.Actor) (*watchParticipant, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.ws.now()
	for id, p := range r.parts {
		if p.ch == nil && now.Sub(p.joined) > joinGrace {
			delete(r.parts, id)
		}
	}
	if len(r.parts) >= r.ws.cfg.MaxParticipants {
		return nil, fmt.Errorf("%w (at most %d participants)", errRoomFull, r.ws.cfg.MaxParticipants)
	}
	r.seq++
	p := &watchParticipant{id: randomID(16), actor: a, seq: r.seq, joined: now}
	r.parts[p.id] = p
	return p, nil
}

// participant returns participant id, which must be a's when a is given.
func (r *watchRoom) participant(id string, a *replay.Actor) (*watchParticipant, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, ok := r.parts[id]
	if !ok || (a != nil && (p.actor.Name != a.Name || p.actor.Role != a.Role)) {
		return nil, errNoParticipant
	}
	return p, nil
}

// connect opens p's stream: it gets the room's state at once. A stream
// p had open before is ended.
func (r *watchRoom) connect(p *watchParticipant) (<-chan []byte, <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p.gone != nil {
		close(p.gone)
	}
	p.ch, p.gone = make(chan []byte, r.ws.cfg.Buffer), make(chan struct{})
	r.emptySince = time.Time{}
	r.version++
	r.sendLocked(r.ws.now())
	return p.ch, p.gone
}

// leave ends p's stream opened with ch: p leaves the room, and the
// controls with it.
func (r *watchRoom) leave(p *watchParticipant, ch <-chan []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p.ch != ch || r.parts[p.id] != p {
		return // dropped already, or its stream was opened again
	}
	r.dropLocked(p)
	r.changedLocked()
}

// dropLocked removes p and ends its stream.
func (r *watchRoom) dropLocked(p *watchParticipant) {
	delete(r.parts, p.id)
	if p.gone != nil {
		close(p.gone)
	}
	if r.controller == p.id {
		r.controller = ""
	}
	open := false
	for _, q := range r.parts {
		open = open || q.ch != nil
	}
	if !open {
		r.emptySince = r.ws.now()
	}
}

// changedLocked records a change and sends it now, or once MinInterval has
// passed since the last event (with whatever else changed by then).
func (r *watchRoom) changedLocked() {
	r.version++
	if r.pending != nil {
		return
	}
	now := r.ws.now()
	if wait := r.ws.cfg.MinInterval - now.Sub(r.lastSent); wait > 0 {
		r.pending = time.AfterFunc(wait, func() {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.pending = nil
			r.sendLocked(r.ws.now())
		})
		return
	}
	r.sendLocked(now)
}

// sendLocked queues the state for every open stream, each as its
// participant may see it; a stream whose buffer is full is dropped, and
// the others are told.
func (r *watchRoom) sendLocked(now time.Time) {
	r.lastSent = now
	for {
		dropped := false
		for _, p := range r.parts {
			if p.ch == nil {
				continue
			}
			select {
			case p.ch <- r.eventLocked(p):
			default:
				r.dropLocked(p)
				r.version++
				dropped = true
			}
		}
		if !dropped {
			return
		}
	}
}

// eventLocked is the state as to receiver: one SSE event.
func (r *watchRoom) eventLocked(to *watchParticipant) []byte {
	b, _ := json.Marshal(r.stateLocked(to))
	return append(append([]byte("event: state\ndata: "), b...), "\n\n"...)
}

// stateLocked is the room's state as to may see it: a viewer sees the
// other participants' names as pseudonyms (it sees no moderator's name
// anywhere else either).
func (r *watchRoom) stateLocked(to *watchParticipant) wire.WatchState {
	named := func(p *watchParticipant) string {
		if p == to || to.actor.Role >= replay.RoleModerator {
			return p.actor.Name
		}
		return r.ws.name(r.id, p.actor.Name)
	}
	st := wire.WatchState{Room: r.id, Recording: r.rec, Version: r.version, Tick: r.tick, Speed: r.speed, Playing: r.playing,
		You: to.id, YouControl: r.controller == to.id, Participants: []wire.WatchParticipant{}}
	ps := make([]*watchParticipant, 0, len(r.parts))
	for _, p := range r.parts {
		if p.ch != nil {
			ps = append(ps, p)
		}
	}
	slices.SortFunc(ps, func(a, b *watchParticipant) int { return a.seq - b.seq })
	for _, p := range ps {
		st.Participants = append(st.Participants, wire.WatchParticipant{Name: named(p), Role: p.actor.Role.String(), Controls: r.controller == p.id, You: p == to})
	}
	if c := r.parts[r.controller]; c != nil {
		st.Controller = named(c)
	}
	return st
}

// set applies p's change, when p has the controls.
func (r *watchRoom) set(p *watchParticipant, in wire.WatchSet) (wire.WatchState, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.controller != p.id {
		return wire.WatchState{}, errNotController
	}
	if in.Tick != nil {
		r.tick = *in.Tick
	}
	if in.Speed != nil {
		r.speed = *in.Speed
	}
	if in.Playing != nil {
		r.playing = *in.Playing
	}
	r.changedLocked()
	return r.stateLocked(p), nil
}

// take gives p the controls.
func (r *watchRoom) take(p *watchParticipant) wire.WatchState {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.controller != p.id {
		r.controller = p.id
		r.changedLocked()
	}
	return r.stateLocked(p)
}

func randomID(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// watchFail answers the rooms' refusals, and passes the rest to fail.
func (s *Server) watchFail(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, errNoRoom):
		writeError(w, http.StatusNotFound, "no_room", err.Error())
	case errors.Is(err, errNoParticipant):
		writeError(w, http.StatusNotFound, "no_participant", err.Error())
	case errors.Is(err, errTooManyRooms):
		writeError(w, http.StatusTooManyRequests, "too_many_rooms", err.Error())
	case errors.Is(err, errRoomFull):
		writeError(w, http.StatusConflict, "room_full", err.Error())
	case errors.Is(err, errNotController):
		writeError(w, http.StatusConflict, "not_controller", err.Error())
	default:
		s.fail(w, err)
	}
}

// watchCreate opens a room: POST /api/v1/watch {"recording": ID}.
func (s *Server) watchCreate(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Recording string `json:"recording"`
	}
	if err := decodeBody(r, &in); err != nil {
		s.fail(w, err)
		return
	}
	if in.Recording == "" {
		s.fail(w, badRequest("the body names no recording: {\"recording\": ID}"))
		return
	}
	m, err := s.x.Manifest(in.Recording)
	if err != nil {
		s.fail(w, fmt.Errorf("watch recording %s: %w", in.Recording, err))
		return
	}
	room, p, err := s.watch.create(m.ID.String(), actorOf(r))
	if err != nil {
		s.watchFail(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, struct {
		wire.WatchRoom
		wire.WatchJoin
	}{wire.WatchRoom{ID: room.id, Recording: room.rec, Link: "/r/" + room.rec + "?watch=" + room.id}, wire.WatchJoin{Participant: p.id}})
}

// joinable returns room id of the request, when the caller may read its
// recording (a recording taken down since ends its rooms for everyone).
func (s *Server) joinable(r *http.Request) (*watchRoom, error) {
	room, err := s.watch.room(r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	if _, err := s.x.Manifest(room.rec); err != nil {
		return nil, fmt.Errorf("watch room %s: %w", room.id, err)
	}
	return room, nil
}

// watchJoin adds the caller to a room: POST /api/v1/watch/{id}/join.
func (s *Server) watchJoin(w http.ResponseWriter, r *http.Request) {
	_, p, err := s.joinRoom(r)
	if err != nil {
		s.watchFail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.WatchJoin{Participant: p.id})
}

// joinRoom adds the caller to the room the request names.
func (s *Server) joinRoom(r *http.Request) (*watchRoom, *watchParticipant, error) {
	room, err := s.joinable(r)
	if err != nil {
		return nil, nil, err
	}
	p, err := room.join(actorOf(r))
	return room, p, err
}

// watchEvents streams a room's state as Server-Sent Events:
// GET /api/v1/watch/{id}/events?participant=P (a browser's EventSource,
// which can send no token: the participant id, a secret its join
// answered, is the credential), or with a token and no participant (the
// caller joins).
func (s *Server) watchEvents(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("participant") == "" {
		s.with(replay.RoleViewer, "watch-events", waitedOn, func(w http.ResponseWriter, r *http.Request) {
			room, p, err := s.joinRoom(r)
			if err != nil {
				s.watchFail(w, err)
				return
			}
			s.stream(w, r, room, p)
		})(w, r)
		return
	}
	room, err := s.joinable(r)
	if err != nil {
		s.watchFail(w, err)
		return
	}
	p, err := room.participant(r.URL.Query().Get("participant"), nil)
	if err != nil {
		s.watchFail(w, err)
		return
	}
	s.stream(w, r, room, p)
}

// stream sends p's events until the client goes, p is dropped or the
// server shuts down; each write may wait at most Config.WriteStall.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, room *watchRoom, p *watchParticipant) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	rc := http.NewResponseController(w)
	ch, gone := room.connect(p)
	defer room.leave(p, ch)
	write := func(b []byte) bool {
		rc.SetWriteDeadline(time.Now().Add(s.cfg.WriteStall))
		if _, err := w.Write(b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	w.WriteHeader(http.StatusOK)
	if !write([]byte("retry: 2000\n\n")) {
		return
	}
	hb := time.NewTicker(s.watch.cfg.Heartbeat)
	defer hb.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-s.watch.done:
			return
		case <-gone:
			return
		case b := <-ch:
			if !write(b) {
				return
			}
		case <-hb.C:
			if !write([]byte(": heartbeat\n\n")) {
				return
			}
		}
	}
}

// watchPost reads a state or take request: the caller's participant.
func (s *Server) watchPost(w http.ResponseWriter, r *http.Request) (*watchRoom, *watchParticipant, wire.WatchSet, bool) {
	var in wire.WatchSet
	if err := decodeBody(r, &in); err != nil {
		s.fail(w, err)
		return nil, nil, in, false
	}
	room, err := s.joinable(r)
	if err != nil {
		s.watchFail(w, err)
		return nil, nil, in, false
	}
	a := actorOf(r)
	p, err := room.participant(in.Participant, &a)
	if err != nil {
		s.watchFail(w, err)
		return nil, nil, in, false
	}
	return room, p, in, true
}

// watchState sets the room's tick, speed or playing state:
// POST /api/v1/watch/{id}/state, by the participant with the controls.
func (s *Server) watchState(w http.ResponseWriter, r *http.Request) {
	room, p, in, ok := s.watchPost(w, r)
	if !ok {
		return
	}
	if in.Speed != nil && !(*in.Speed > 0 && *in.Speed <= maxWatchSpeed) {
		s.fail(w, badRequest("speed %v: it is more than 0 and at most %d", *in.Speed, maxWatchSpeed))
		return
	}
	if in.Tick != nil && *in.Tick < 0 {
		s.fail(w, badRequest("tick %d: ticks are not negative", *in.Tick))
		return
	}
	st, err := room.set(p, in)
	if err != nil {
		s.watchFail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// watchTake gives the caller the controls: POST /api/v1/watch/{id}/take.
func (s *Server) watchTake(w http.ResponseWriter, r *http.Request) {
	room, p, _, ok := s.watchPost(w, r)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, room.take(p))
}
