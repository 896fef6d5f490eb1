package server_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
	"github.com/replayarchive/replay/server"
	"github.com/replayarchive/replay/wire"
)

// watcher is one participant's event stream, read as it comes.
type watcher struct {
	t      *testing.T
	states chan wire.WatchState
	resp   *http.Response
	mu     sync.Mutex
	last   wire.WatchState
}

// watch opens the stream of room for participant p (or, with p empty,
// joins with token).
func (ts *testServer) watch(room, p, token string) *watcher {
	ts.t.Helper()
	u := ts.url + "/api/v1/watch/" + room + "/events"
	if p != "" {
		u += "?participant=" + p
	}
	req, _ := http.NewRequest("GET", u, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		ts.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		resp.Body.Close()
		ts.t.Fatalf("events of %s: %d %s", room, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	w := &watcher{t: ts.t, states: make(chan wire.WatchState, 1000), resp: resp}
	go func() {
		defer close(w.states)
		sc := bufio.NewScanner(resp.Body)
		event := ""
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				var st wire.WatchState
				if event != "state" || json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &st) != nil {
					ts.t.Errorf("bad event %q: %q", event, line)
					return
				}
				w.mu.Lock()
				w.last = st
				w.mu.Unlock()
				w.states <- st
			}
		}
	}()
	ts.t.Cleanup(func() { resp.Body.Close() })
	return w
}

// until waits up to d for a state that ok accepts.
func (w *watcher) until(what string, d time.Duration, ok func(wire.WatchState) bool) wire.WatchState {
	w.t.Helper()
	deadline := time.After(d)
	for {
		select {
		case st, open := <-w.states:
			if !open {
				w.t.Fatalf("%s: the stream ended", what)
			}
			if ok(st) {
				return st
			}
		case <-deadline:
			w.mu.Lock()
			defer w.mu.Unlock()
			w.t.Fatalf("%s: not within %v (last state %+v)", what, d, w.last)
		}
	}
}

func (ts *testServer) watchPost(want int, path, token string, body any) wire.WatchState {
	ts.t.Helper()
	b, _ := json.Marshal(body)
	var st wire.WatchState
	out := ts.want(want, "POST", path, token, bytes.NewReader(b), nil)
	if want == http.StatusOK {
		json.Unmarshal(out, &st)
	}
	return st
}

func ptr[T any](v T) *T { return &v }

// names are the participants' names a state shows.
func names(st wire.WatchState) string {
	var ns []string
	for _, p := range st.Participants {
		ns = append(ns, p.Name)
	}
	return strings.Join(ns, ",")
}

// TestWatchTogether: a moderator opens a room, a viewer joins; a state
// the controller posts reaches both streams within 200 ms; the viewer's
// post is 409 until it takes the controls, then the moderator's is; the
// viewer sees the moderator's name only as a pseudonym.
func TestWatchTogether(t *testing.T) {
	ts := start(t, server.Config{})
	rec, _ := ts.ingestGame(teehistoriangen.Options{Duration: 2 * time.Minute, Seed: 33})
	mod := ts.token("maria-moderator", replay.RoleModerator)
	viewer := ts.token("vic-viewer", replay.RoleViewer)

	ts.want(http.StatusForbidden, "POST", "/api/v1/watch", viewer, strings.NewReader(`{"recording":"`+rec+`"}`), nil)
	ts.want(http.StatusNotFound, "POST", "/api/v1/watch", mod, strings.NewReader(`{"recording":"0000000000000000000000000000000a"}`), nil)
	ts.want(http.StatusBadRequest, "POST", "/api/v1/watch", mod, strings.NewReader(`{}`), nil)
	if code, _, _ := ts.do("POST", "/api/v1/watch", mod, strings.NewReader(`{"recording":"`+rec+`"}`), "Origin", "http://evil.example"); code != http.StatusForbidden {
		t.Errorf("a cross-origin create: %d", code)
	}
	var room struct {
		wire.WatchRoom
		wire.WatchJoin
	}
	json.Unmarshal(ts.want(http.StatusCreated, "POST", "/api/v1/watch", mod, strings.NewReader(`{"recording":"`+rec+`"}`), nil), &room)
	if room.ID == "" || room.Participant == "" || room.Recording != rec || room.Link != "/r/"+rec+"?watch="+room.ID {
		t.Fatalf("created %+v", room)
	}
	base := "/api/v1/watch/" + room.ID

	a := ts.watch(room.ID, room.Participant, "")
	var vj wire.WatchJoin
	json.Unmarshal(ts.want(http.StatusOK, "POST", base+"/join", viewer, nil, nil), &vj)
	b := ts.watch(room.ID, vj.Participant, "")
	both := func(what string, ok func(wire.WatchState) bool) (wire.WatchState, wire.WatchState) {
		t.Helper()
		return a.until("moderator: "+what, 2*time.Second, ok), b.until("viewer: "+what, 2*time.Second, ok)
	}
	sa, sb := both("two participants", func(st wire.WatchState) bool { return len(st.Participants) == 2 })
	if !sa.YouControl || sb.YouControl || sa.Controller != "maria-moderator" {
		t.Errorf("controls: moderator %+v, viewer %+v", sa, sb)
	}
	if names(sa) != "maria-moderator,vic-viewer" {
		t.Errorf("the moderator sees %s", names(sa))
	}
	if n := names(sb); strings.Contains(n, "maria") || !strings.HasSuffix(n, ",vic-viewer") || !strings.HasPrefix(sb.Controller, "p") || strings.Contains(sb.Controller, "maria") {
		t.Errorf("the viewer sees %s, controller %q", n, sb.Controller)
	}

	for i, tick := range []int64{1234, 1500, 77} {
		began := time.Now()
		ts.watchPost(http.StatusOK, base+"/state", mod, wire.WatchSet{Participant: room.Participant, Tick: ptr(tick), Playing: ptr(i%2 == 0), Speed: ptr(2.0)})
		both(fmt.Sprint("tick ", tick), func(st wire.WatchState) bool { return st.Tick == tick && st.Playing == (i%2 == 0) && st.Speed == 2 })
		if took := time.Since(began); took > 200*time.Millisecond {
			t.Errorf("tick %d reached both after %v", tick, took)
		}
	}

	ts.watchPost(http.StatusConflict, base+"/state", viewer, wire.WatchSet{Participant: vj.Participant, Tick: ptr[int64](5)})
	// A participant id is only its own caller's.
	ts.watchPost(http.StatusNotFound, base+"/state", viewer, wire.WatchSet{Participant: room.Participant, Tick: ptr[int64](5)})
	ts.watchPost(http.StatusNotFound, base+"/take", viewer, wire.WatchSet{Participant: room.Participant})
	ts.watchPost(http.StatusBadRequest, base+"/state", mod, wire.WatchSet{Participant: room.Participant, Speed: ptr(0.0)})
	ts.watchPost(http.StatusOK, base+"/take", viewer, wire.WatchSet{Participant: vj.Participant})
	both("the viewer has the controls", func(st wire.WatchState) bool {
		return st.YouControl == (st.You == vj.Participant) && st.Controller != "maria-moderator"
	})
	ts.watchPost(http.StatusConflict, base+"/state", mod, wire.WatchSet{Participant: room.Participant, Tick: ptr[int64](9)})
	ts.watchPost(http.StatusOK, base+"/state", viewer, wire.WatchSet{Participant: vj.Participant, Tick: ptr[int64](4321), Playing: ptr(false)})
	both("the viewer's tick", func(st wire.WatchState) bool { return st.Tick == 4321 && !st.Playing })

	// A token joins by opening the stream; no credential, no stream.
	c := ts.watch(room.ID, "", mod)
	c.until("a third participant", 2*time.Second, func(st wire.WatchState) bool { return len(st.Participants) == 3 })
	ts.want(http.StatusUnauthorized, "GET", base+"/events", "", nil, nil)
	ts.want(http.StatusNotFound, "GET", base+"/events?participant=nobody", "", nil, nil)
	ts.want(http.StatusNotFound, "GET", "/api/v1/watch/nosuchroom/events?participant="+vj.Participant, "", nil, nil)

	// The viewer leaves: the controls are nobody's, anyone may take them.
	b.resp.Body.Close()
	a.until("the viewer left", 2*time.Second, func(st wire.WatchState) bool { return len(st.Participants) == 2 && st.Controller == "" })
	ts.watchPost(http.StatusOK, base+"/take", mod, wire.WatchSet{Participant: room.Participant})
}

// TestWatchSlowClient: a participant that stops reading its stream is
// dropped once its buffer is full, while the others get every state in
// time; the room's events are coalesced.
func TestWatchSlowClient(t *testing.T) {
	ts := start(t, server.Config{WriteStall: 2 * time.Second, Watch: server.WatchConfig{Buffer: 4, MinInterval: time.Millisecond}})
	rec, _ := ts.ingestGame(teehistoriangen.Options{Duration: 2 * time.Minute, Seed: 34})
	mod := ts.token("mod", replay.RoleModerator)
	var room struct {
		wire.WatchRoom
		wire.WatchJoin
	}
	json.Unmarshal(ts.want(http.StatusCreated, "POST", "/api/v1/watch", mod, strings.NewReader(`{"recording":"`+rec+`"}`), nil), &room)
	base := "/api/v1/watch/" + room.ID
	a := ts.watch(room.ID, room.Participant, "")
	b := ts.watch(room.ID, "", mod)

	var sj wire.WatchJoin
	json.Unmarshal(ts.want(http.StatusOK, "POST", base+"/join", ts.token("slow-"+strings.Repeat("x", 200), replay.RoleViewer), nil, nil), &sj)
	u, _ := url.Parse(ts.url)
	conn := dialSlowReader(t, u.Host)
	defer conn.Close()
	fmt.Fprintf(conn, "GET %s/events?participant=%s HTTP/1.1\r\nHost: %s\r\n\r\n", base, sj.Participant, u.Host)
	a.until("three participants", 2*time.Second, func(st wire.WatchState) bool { return len(st.Participants) == 3 })

	var slowest atomic.Int64
	began := time.Now()
	dropped := false
	// The client is dropped once the kernel's buffers toward it are full
	// too: about 8 s of states here, more on a loaded machine.
	for i := int64(1); time.Since(began) < 60*time.Second; i++ {
		t0 := time.Now()
		ts.watchPost(http.StatusOK, base+"/state", mod, wire.WatchSet{Participant: room.Participant, Tick: ptr(i)})
		for _, w := range []*watcher{a, b} {
			w.until(fmt.Sprint("tick ", i), 2*time.Second, func(st wire.WatchState) bool { return st.Tick >= i })
		}
		slowest.Store(max(slowest.Load(), int64(time.Since(t0))))
		a.mu.Lock()
		n := len(a.last.Participants)
		a.mu.Unlock()
		if n == 2 {
			t.Logf("the slow client was dropped after %d states, %v", i, time.Since(began))
			dropped = true
			break
		}
	}
	if !dropped {
		t.Fatal("the client that does not read was not dropped in 60 s")
	}
	if d := time.Duration(slowest.Load()); d > 200*time.Millisecond {
		t.Errorf("a state took %v to reach the readers while a client did not read", d)
	}
	// Its place is given up: its stream cannot be opened again.
	ts.want(http.StatusNotFound, "GET", base+"/events?participant="+sj.Participant, "", nil, nil)
}

// TestWatchLimits: at most MaxRooms rooms and MaxParticipants in one; a
// room nobody watches ends after Idle.
func TestWatchLimits(t *testing.T) {
	var now atomic.Int64
	now.Store(time.Now().UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	ts := start(t, server.Config{Now: clock, Watch: server.WatchConfig{MaxRooms: 2, MaxParticipants: 3, Idle: time.Minute}})
	rec, _ := ts.ingestGame(teehistoriangen.Options{Duration: time.Minute, Seed: 35})
	mod := ts.token("mod", replay.RoleModerator)
	viewer := ts.token("viewer", replay.RoleViewer)
	body := `{"recording":"` + rec + `"}`
	var r1, r2 struct{ wire.WatchRoom }
	json.Unmarshal(ts.want(http.StatusCreated, "POST", "/api/v1/watch", mod, strings.NewReader(body), nil), &r1)
	json.Unmarshal(ts.want(http.StatusCreated, "POST", "/api/v1/watch", mod, strings.NewReader(body), nil), &r2)
	var e wire.Error
	json.Unmarshal(ts.want(http.StatusTooManyRequests, "POST", "/api/v1/watch", mod, strings.NewReader(body), nil), &e)
	if e.Code != "too_many_rooms" {
		t.Errorf("a third room: %+v", e)
	}
	// r1 has its creator and two more: full.
	ts.want(http.StatusOK, "POST", "/api/v1/watch/"+r1.ID+"/join", viewer, nil, nil)
	w := ts.watch(r1.ID, "", viewer)
	json.Unmarshal(ts.want(http.StatusConflict, "POST", "/api/v1/watch/"+r1.ID+"/join", viewer, nil, nil), &e)
	if e.Code != "room_full" {
		t.Errorf("a fourth participant: %+v", e)
	}
	w.until("joined", 2*time.Second, func(st wire.WatchState) bool { return len(st.Participants) == 1 })
	// r2 was never watched: past Idle it is gone and a new room fits;
	// r1 has a stream open and stays.
	now.Add(int64(2 * time.Minute))
	ts.want(http.StatusNotFound, "POST", "/api/v1/watch/"+r2.ID+"/join", viewer, nil, nil)
	ts.want(http.StatusCreated, "POST", "/api/v1/watch", mod, strings.NewReader(body), nil)
	// The two who joined r1 but never opened a stream lost their places.
	ts.want(http.StatusOK, "POST", "/api/v1/watch/"+r1.ID+"/join", mod, nil, nil)
	ts.want(http.StatusOK, "POST", "/api/v1/watch/"+r1.ID+"/join", mod, nil, nil)
}
