// This file runs the simulation: a Session is a run of servers of one kind;
// each file is one map load, simulated tick by tick, with clients that join,
// play through bots, chat, vote, type commands and leave.

package ddnetsim

import (
	"container/heap"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/google/uuid"
	th "github.com/replayarchive/replay/formats/teehistorian"
)

const tickRate = 50

// teeworldsNS is the namespace of DDNet's name-based UUIDs.
var teeworldsNS = uuid.MustParse("e05ddaaa-c4e6-4cfb-b642-5d48e80c0029")

// Extended (UUID) client messages DDNet clients send after entering; their
// UUIDs are computed the way DDNet's CalculateUuid does.
var (
	msgShowOthers   = uuid.NewMD5(teeworldsNS, []byte("showothers@netmsg.ddnet.tw"))
	msgShowDistance = uuid.NewMD5(teeworldsNS, []byte("show-distance@netmsg.ddnet.tw"))
	msgCameraInfo   = uuid.NewMD5(teeworldsNS, []byte("camera-info@netmsg.ddnet.org"))
)

// Game message ids of client messages DDNet records (0.6 and 0.7 tables).
const (
	m6SetTeam, m6SetSpec, m6StartInfo, m6ChangeInfo, m6Kill, m6Emoticon, m6IsDDNet = 18, 19, 20, 21, 22, 23, 26
	m7SetTeam, m7StartInfo, m7Kill, m7Emoticon, m7Vote, m7CallVote                 = 25, 27, 28, 30, 31, 32
)

// Session writes the files of a run of simulated servers of one kind: a
// server writes a few files in a row (map changes), then another server
// takes over. It is deterministic by kind and seed.
type Session struct {
	kind  Kind
	r     *rand.Rand
	pop   []identity
	srv   *server
	left  int       // files the current server still writes
	clock time.Time // start of the data set's time line
	carry []*client // players connected at the last file's end
}

// NewSession starts a session. The population of players depends only on
// the seed's network (seed/1000), so data sets of neighbouring seeds share
// their regulars as servers of one network do.
func NewSession(k Kind, seed uint64) *Session {
	return &Session{
		kind:  k,
		r:     rand.New(rand.NewPCG(seed, 0x5eed0000+uint64(len(k.Name)))),
		pop:   population(seed/1000, 3000),
		clock: time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(seed%1000) * 24 * time.Hour),
	}
}

// FileInfo describes one written file.
type FileInfo struct {
	GameUUID   string // also the file's name on a server: GameUUID.teehistorian
	Server     string
	Map        string
	Version    string // server release, e.g. "19.8.2"
	Ticks      int64
	MaxPlayers int  // most clients connected at once
	Finished   bool // ends with FINISH
}

// Next plans the next file and returns its game UUID, so a caller can name
// the file before writing it with Write.
func (s *Session) Next() uuid.UUID {
	var u uuid.UUID
	for i := range u {
		u[i] = byte(s.r.Uint32())
	}
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return u
}

// Write simulates one file with game uuid id (from Next) and writes it to w.
func (s *Session) Write(w io.Writer, id uuid.UUID) (FileInfo, error) {
	r := s.r
	k := &s.kind
	if s.srv == nil || s.left <= 0 {
		s.srv = newServer(r, k, s.clock)
		s.left = k.FilesPerServer[0] + r.IntN(k.FilesPerServer[1]-k.FilesPerServer[0]+1)
		s.carry = nil
	}
	s.left--
	srv := s.srv
	length := k.fileLength(r.Float64())
	mapName := srv.mode.maps(r)
	start := srv.clock
	hdr := srv.headerJSON(r, id, mapName, start)
	rec, err := th.NewRecorder(w, hdr)
	if err != nil {
		return FileInfo{}, fmt.Errorf("ddnetsim: %s: %w", id, err)
	}
	g := &game{
		s: s, k: k, srv: srv, r: r, rec: rec,
		world: genWorld(rand.New(rand.NewPCG(uint64(len(mapName)), hashSeed(mapName))), srv.mode.race),
		end:   int64(length.Seconds() * tickRate),
		crash: r.Float64() < k.Crash,
	}
	g.target = k.Players[0] + r.IntN(k.Players[1]-k.Players[0]+1)
	g.busy = k.Busy >= 1 || r.Float64() < k.Busy
	g.busyUntil = g.nextBusyFlip()
	info := FileInfo{GameUUID: id.String(), Server: srv.name, Map: mapName, Version: srv.ver.release}
	if err := g.run(); err != nil {
		return info, fmt.Errorf("ddnetsim: %s: %w", id, err)
	}
	info.Ticks, info.MaxPlayers, info.Finished = g.tick, g.maxPlayers, !g.crash
	srv.clock = start.Add(time.Duration(g.tick)*time.Second/tickRate + time.Duration(1+r.IntN(30))*time.Second)
	if g.crash {
		// A crashed server restarts: no previous game, nobody carried.
		srv.prevGame, s.carry = "", nil
		srv.clock = srv.clock.Add(time.Duration(r.IntN(3600)) * time.Second)
	} else {
		srv.prevGame = id.String()
		s.carry = s.carry[:0]
		for _, c := range g.slots {
			if c != nil && !c.leaving {
				s.carry = append(s.carry, c)
			}
		}
	}
	return info, nil
}

func hashSeed(s string) uint64 {
	var h uint64 = 1469598103934665603
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * 1099511628211
	}
	return h
}

// client is one connected player.
type client struct {
	cid    int32
	id     *identity
	uid    uint64
	ready  bool // entered the game (PLAYER_READY)
	alive  bool
	ghost  bool // dropped while alive: PLAYER_OLD due next tick
	c      core
	in     th.Input // last input sent
	sent   bool
	respAt int64 // tick of the next spawn
	nextIn int64 // tick of the next input packet

	mode      int
	modeUntil int64
	dir       int32
	jumpUntil int64
	hookUntil int64
	fireHeld  bool
	fireUntil int64
	ax, ay    float64 // aim, relative to the tee
	avx, avy  float64
	chatUntil int64
	scoreTill int64
	weapon    int32
	team      int32
	raceStart int64
	frozenCnt int
	stuck     int
	leaving   bool
	authed    bool
}

const (
	modeRace = iota
	modeWait
	modeAFK
	modeSpec
	modeFight
)

type event struct {
	tick int64
	seq  uint64
	fn   func() error
}

type eventHeap []event

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	return h[i].tick < h[j].tick || h[i].tick == h[j].tick && h[i].seq < h[j].seq
}
func (h eventHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(event)) }
func (h *eventHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// game is the simulation of one file.
type game struct {
	s     *Session
	k     *Kind
	srv   *server
	r     *rand.Rand
	rec   *th.Recorder
	world *world

	tick, end  int64
	crash      bool
	slots      [128]*client
	nconn      int
	target     int
	busy       bool
	busyUntil  int64
	events     eventHeap
	seq        uint64
	maxPlayers int
	voteUntil  int64
	teams      map[int32][]int32
	teamStart  map[int32]int64
	nextJoin   int64
}

func (g *game) at(t int64, fn func() error) {
	g.seq++
	heap.Push(&g.events, event{t, g.seq, fn})
}

// chance turns a rate per minute into a probability for one tick.
func (g *game) chance(perMin float64) bool {
	return perMin > 0 && g.r.Float64() < perMin/(60*tickRate)
}

func (g *game) nextBusyFlip() int64 {
	if g.k.Busy >= 1 {
		return math.MaxInt64
	}
	mean := g.k.BusyMinutes * 60 * tickRate
	if !g.busy {
		mean = mean * (1 - g.k.Busy) / g.k.Busy
	}
	return g.tick + 1 + int64(g.r.ExpFloat64()*mean)
}

func (g *game) run() error {
	g.teams = map[int32][]int32{}
	g.teamStart = map[int32]int64{}
	// Players carried over from the previous map: JOIN at tick 0 (in the
	// releases that write it), then the usual entering once the map loaded.
	for _, old := range g.s.carry {
		c := &client{cid: old.cid, id: old.id, raceStart: -1}
		if err := g.connect(c, g.srv.ver.carriesJoins(), 20+int64(g.r.IntN(200))); err != nil {
			return err
		}
	}
	if !g.busy {
		g.target = 0
	}
	for g.tick = 1; g.tick <= g.end; g.tick++ {
		// Nothing can happen on an empty server until the next event or
		// join: jump there (the recorder writes one TICK_SKIP).
		if g.nconn == 0 && g.pendingGhosts() == 0 {
			next := min(g.end, g.busyUntil)
			if g.target > 0 {
				next = min(next, g.tick+int64(g.r.ExpFloat64()*20*tickRate))
			}
			if len(g.events) > 0 {
				next = min(next, g.events[0].tick)
			}
			g.tick = max(g.tick, next)
		}
		if err := g.rec.BeginTick(g.tick); err != nil {
			return err
		}
		if g.tick >= g.busyUntil {
			g.busy = !g.busy
			g.busyUntil = g.nextBusyFlip()
			g.target = 0
			if g.busy {
				g.target = g.k.Players[0] + g.r.IntN(g.k.Players[1]-g.k.Players[0]+1)
			}
		}
		if err := g.positions(); err != nil {
			return err
		}
		for _, c := range g.slots {
			if c != nil && c.ready && g.tick >= c.nextIn {
				if err := g.sendInput(c); err != nil {
					return err
				}
			}
		}
		for len(g.events) > 0 && g.events[0].tick <= g.tick {
			e := heap.Pop(&g.events).(event)
			if err := e.fn(); err != nil {
				return err
			}
		}
		if err := g.serverEvents(); err != nil {
			return err
		}
	}
	g.tick = g.end
	if g.crash {
		return g.rec.Flush()
	}
	if err := g.closing(); err != nil {
		return err
	}
	return g.rec.Finish()
}

func (g *game) pendingGhosts() int {
	n := 0
	for _, c := range g.slots {
		if c != nil && c.ghost {
			n++
		}
	}
	return n
}

// positions steps every character and records the positions at the end of
// the tick, in client id order.
func (g *game) positions() error {
	for cid, c := range g.slots {
		if c == nil {
			continue
		}
		if c.ghost {
			g.slots[cid] = nil
			if err := g.rec.DeadPlayer(int32(cid)); err != nil {
				return err
			}
			continue
		}
		if !c.alive && c.ready && c.respAt > 0 && g.tick >= c.respAt && c.mode != modeSpec {
			g.spawn(c)
		}
		if !c.alive {
			if err := g.rec.DeadPlayer(c.cid); err != nil {
				return err
			}
			continue
		}
		ax, ay := c.aimVec()
		t := c.c.step(g.world, c.in[0], c.in[3] != 0, c.in[5] != 0, ax, ay)
		switch {
		case t == tileDeath:
			g.die(c, 25)
		case g.world.race && c.raceStart < 0 && c.c.x >= g.world.startX && c.c.x < g.world.startX+64:
			c.raceStart = g.tick
		case g.world.race && c.raceStart >= 0 && c.c.x >= g.world.finishX:
			if err := g.finishRace(c); err != nil {
				return err
			}
		}
		if c.c.frozen == freezeTicks {
			c.frozenCnt++
		}
		if !c.alive {
			if err := g.rec.DeadPlayer(c.cid); err != nil {
				return err
			}
			continue
		}
		if err := g.rec.Player(c.cid, int32(c.c.x), int32(c.c.y)); err != nil {
			return err
		}
	}
	return nil
}

func (c *client) aimVec() (float64, float64) { return float64(c.in[1]), float64(c.in[2]) }

func (g *game) spawn(c *client) {
	sp := g.world.spawns[g.r.IntN(len(g.world.spawns))]
	c.c = core{x: sp[0], y: sp[1]}
	c.alive, c.respAt, c.raceStart, c.frozenCnt, c.stuck = true, 0, -1, 0, 0
}

func (g *game) die(c *client, delay int64) {
	c.alive = false
	c.respAt = g.tick + delay
}

func (g *game) finishRace(c *client) error {
	ticks := int32(g.tick - c.raceStart)
	c.raceStart = -1
	if g.srv.ver.nameFinish() {
		if err := g.rec.PlayerFinish(c.cid, ticks); err != nil {
			return err
		}
		if c.team != 0 {
			if err := g.rec.TeamFinish(c.team, ticks); err != nil {
				return err
			}
		}
	}
	// Back to the start after a moment, as players /kill after a finish.
	c.mode, c.modeUntil = modeWait, g.tick+int64(50+g.r.IntN(500))
	g.at(c.modeUntil, func() error {
		if g.slots[c.cid] != c || !c.alive {
			return nil
		}
		g.die(c, 1)
		return g.message(c, killMsg(c))
	})
	return nil
}

func killMsg(c *client) []byte {
	if c.id.proto7 {
		return th.AppendVarint(nil, m7Kill<<1)
	}
	return th.AppendVarint(nil, m6Kill<<1)
}

func (g *game) message(c *client, msg []byte) error { return g.rec.Message(c.cid, msg) }

// connect occupies a slot and schedules the client's entering; joined says
// whether JOIN (and JOINVER) is written now.
func (g *game) connect(c *client, joined bool, enterDelay int64) error {
	if g.slots[c.cid] != nil {
		return nil
	}
	g.slots[c.cid] = c
	g.nconn++
	g.maxPlayers = max(g.maxPlayers, g.nconn)
	c.uid = g.r.Uint64()
	v := g.srv.ver
	if joined {
		var err error
		if v.joinVer() {
			err = g.rec.PlayerJoin(c.cid, c.id.proto7)
		} else {
			err = g.rec.Join(c.cid)
		}
		if err != nil {
			return err
		}
		if g.tick == 0 && c.authed && v.ex() && v.authOnChange() {
			if v.authInitOnly() {
				err = g.rec.AuthInit(c.cid, c.id.authLevel, c.id.authName)
			} else {
				err = g.rec.AuthLogin(c.cid, c.id.authLevel, c.id.authName)
			}
			if err != nil {
				return err
			}
		}
	}
	g.at(g.tick+enterDelay, func() error { return g.enter(c) })
	return nil
}

// enter writes what a client sends while entering: its start info, the
// server's PLAYER_NAME, PLAYER_READY and DDNETVER, then DDNet's version
// and settings messages, the first input and the automatic /timeout.
func (g *game) enter(c *client) error {
	if g.slots[c.cid] != c {
		return nil
	}
	v := g.srv.ver
	cv := clientVersions[c.id.client]
	if err := g.message(c, startInfo(c.id)); err != nil {
		return err
	}
	if v.nameFinish() {
		if err := g.rec.PlayerName(c.cid, c.id.name); err != nil {
			return err
		}
	}
	g.at(g.tick+1, func() error {
		if g.slots[c.cid] != c {
			return nil
		}
		if v.ready() {
			if err := g.rec.PlayerReady(c.cid); err != nil {
				return err
			}
		}
		if v.ddnetVer() && cv.str != "" {
			var conn uuid.UUID
			for i := range conn {
				conn[i] = byte(g.r.Uint32())
			}
			if err := g.rec.DDNetVersion(c.cid, conn, cv.ddnet, cv.str); err != nil {
				return err
			}
		}
		c.ready = true
		c.respAt = g.tick + 1
		c.raceStart = -1
		c.mode, c.modeUntil = g.pickMode(c), g.tick+int64(100+g.r.IntN(1500))
		return nil
	})
	g.at(g.tick+int64(20+g.r.IntN(12)), func() error {
		if g.slots[c.cid] != c {
			return nil
		}
		if cv.ddnet > 0 && !c.id.proto7 {
			if v.legacyMessage() {
				if err := g.message(c, th.AppendVarint(th.AppendVarint(nil, m6IsDDNet<<1), cv.ddnet)); err != nil {
					return err
				}
			}
			if v.extMessages() {
				if err := g.message(c, extMsg(msgShowOthers, 0)); err != nil {
					return err
				}
				if v.showDistance() && cv.ddnet >= 15000 {
					if err := g.message(c, extMsg(msgShowDistance, int32(1200+g.r.IntN(700)), int32(700+g.r.IntN(400)))); err != nil {
						return err
					}
				}
				if v.cameraInfo() && cv.ddnet >= 19000 {
					if err := g.message(c, extMsg(msgCameraInfo, int32(pick(g.r, []int{1000, 1000, 1000, 1200, 800})), 0, 0)); err != nil {
						return err
					}
				}
			}
		}
		if cv.ddnet > 0 {
			g.at(g.tick+int64(40+g.r.IntN(80)), func() error {
				if g.slots[c.cid] != c {
					return nil
				}
				return g.rec.ConsoleCommand(c.cid, 128, "timeout", c.id.timeout)
			})
		}
		return nil
	})
	return nil
}

func startInfo(id *identity) []byte {
	b := th.AppendVarint(nil, m6StartInfo<<1)
	if id.proto7 {
		b = th.AppendVarint(nil, m7StartInfo<<1)
	}
	b = appendStr(b, id.name)
	b = appendStr(b, id.clan)
	b = th.AppendVarint(b, id.country)
	if id.proto7 {
		h := hashSeed(id.name)
		for i, parts := range skinParts7 {
			b = appendStr(b, parts[(h>>(i*5))%uint64(len(parts))])
		}
		for i := range 6 {
			b = th.AppendVarint(b, int32(h>>(i+30))&1)
		}
		for i := range 6 {
			b = th.AppendVarint(b, int32(h>>(i*7))&0xffffff)
		}
		return b
	}
	b = appendStr(b, id.skin)
	cc := int32(0)
	if id.customColor {
		cc = 1
	}
	b = th.AppendVarint(b, cc)
	b = th.AppendVarint(b, id.bodyColor)
	return th.AppendVarint(b, id.feetColor)
}

func extMsg(id uuid.UUID, v ...int32) []byte {
	b := append([]byte{0}, id[:]...)
	for _, x := range v {
		b = th.AppendVarint(b, x)
	}
	return b
}

func appendStr(b []byte, s string) []byte { return append(append(b, s...), 0) }

// drop writes DROP now; the character goes on the next tick.
func (g *game) drop(c *client, reason string) error {
	if g.slots[c.cid] != c || c.ghost {
		return nil
	}
	if err := g.rec.Drop(c.cid, reason); err != nil {
		return err
	}
	g.nconn--
	if c.team != 0 {
		g.leaveTeam(c)
	}
	c.leaving = true
	if c.alive {
		c.ghost = true
		c.alive = false
	} else {
		g.slots[c.cid] = nil
	}
	return nil
}

func (g *game) leaveTeam(c *client) {
	m := g.teams[c.team]
	for i, x := range m {
		if x == c.cid {
			g.teams[c.team] = append(m[:i], m[i+1:]...)
			break
		}
	}
}

func (g *game) pickMode(c *client) int {
	u := g.r.Float64()
	switch {
	case u < g.k.AFK:
		return modeAFK
	case u < g.k.AFK+g.k.Spec:
		return modeSpec
	case u < g.k.AFK+g.k.Spec+0.15:
		return modeWait
	case g.world.race:
		return modeRace
	default:
		return modeFight
	}
}

// sendInput runs a client's bot and sends its input packet, recorded when
// it differs from the last one. Clients send every 2 or 3 ticks while
// something changes.
func (g *game) sendInput(c *client) error {
	r := g.r
	c.nextIn = g.tick + 2 + int64(r.IntN(2))
	if g.tick >= c.modeUntil {
		prev := c.mode
		c.mode = g.pickMode(c)
		c.modeUntil = g.tick + int64((2+r.ExpFloat64()*20)*tickRate)
		if c.mode == modeAFK {
			c.modeUntil += int64(r.ExpFloat64() * 120 * tickRate)
		}
		if c.mode == modeSpec && prev != modeSpec {
			if err := g.command(c, "pause"); err != nil {
				return err
			}
			if c.alive {
				g.die(c, 0)
			}
		}
		if prev == modeSpec && c.mode != modeSpec {
			c.respAt = g.tick + 1
			if err := g.command(c, "pause"); err != nil {
				return err
			}
		}
	}
	act := c.id.activity * g.k.Activity
	in := c.in
	switch c.mode {
	case modeAFK:
		in[0], in[3], in[5] = 0, 0, 0
		if c.fireHeld {
			c.fireHeld = false
			in[4]++
		}
		return g.input(c, in)
	case modeSpec:
		// The camera follows the mouse: large targets that move in bursts.
		if r.Float64() < 0.15*act {
			c.ax = clamp(c.ax+r.NormFloat64()*300, -3000, 3000)
			c.ay = clamp(c.ay+r.NormFloat64()*200, -2000, 2000)
		}
		in[0], in[3], in[5] = 0, 0, 0
	case modeWait:
		in[0] = 0
		in[3] = 0
		g.mouse(c, act*0.5, 0, 0)
	case modeRace:
		g.raceBot(c, &in, act)
	case modeFight:
		g.fightBot(c, &in, act)
	}
	if c.mode != modeSpec && c.mode != modeAFK {
		// Fire: a counter of presses and releases.
		if c.fireHeld && g.tick >= c.fireUntil {
			c.fireHeld = false
			in[4]++
		} else if !c.fireHeld && r.Float64() < g.fireRate()*act {
			c.fireHeld = true
			c.fireUntil = g.tick + int64(2+r.IntN(15))
			in[4]++
		}
		if r.Float64() < 0.002*act {
			c.weapon = int32(r.IntN(5))
			in[7] = c.weapon + 1
		} else if in[7] != 0 && r.Float64() < 0.3 {
			in[7] = 0
		}
		if r.Float64() < 0.001*act {
			if r.IntN(2) == 0 {
				in[8] += 2
			} else {
				in[9] += 2
			}
		}
	}
	in[1], in[2] = quant(c.ax, c.id.sens), quant(c.ay, c.id.sens)
	if in[1] == 0 && in[2] == 0 {
		in[1] = 1
	}
	flags := c.id.flagsBase
	if g.tick < c.chatUntil {
		flags |= 4
		in[0], in[3], in[5] = 0, 0, 0
	}
	if g.tick < c.scoreTill {
		flags |= 8
	}
	in[6] = flags
	return g.input(c, in)
}

func (g *game) fireRate() float64 {
	if g.world.race {
		return 0.01
	}
	return 0.12
}

func quant(v, step float64) int32 { return int32(math.Round(v/step) * step) }

func (g *game) input(c *client, in th.Input) error {
	if c.sent && in == c.in {
		return nil
	}
	c.in, c.sent = in, true
	return g.rec.Input(c.cid, c.uid, in)
}

// mouse moves the aim like a hand on a mouse: bursts of motion toward a
// wanted direction (wx, wy, or anywhere when both are 0), still otherwise.
func (g *game) mouse(c *client, act, wx, wy float64) {
	r := g.r
	if r.Float64() > 0.35+0.6*act {
		return
	}
	if wx != 0 || wy != 0 {
		c.avx += (wx - c.ax) * 0.25
		c.avy += (wy - c.ay) * 0.25
	}
	c.avx = c.avx*0.6 + r.NormFloat64()*12*act
	c.avy = c.avy*0.6 + r.NormFloat64()*9*act
	c.ax = clamp(c.ax+c.avx, -700, 700)
	c.ay = clamp(c.ay+c.avy, -500, 500)
	if d := math.Hypot(c.ax, c.ay); d < 30 {
		c.ax, c.ay = c.ax*40/(d+1), c.ay*40/(d+1)+1
	}
}

func (g *game) raceBot(c *client, in *th.Input, act float64) {
	r := g.r
	if !c.alive {
		g.mouse(c, act*0.3, 0, 0)
		return
	}
	co := &c.c
	// The wanted direction is held for seconds: mostly on toward the
	// finish, sometimes back or standing to look.
	if c.dir == 0 && r.Float64() < 0.1 || r.Float64() < 0.015 {
		switch u := r.Float64(); {
		case u < 0.82:
			c.dir = 1
		case u < 0.9:
			c.dir = -1
		default:
			c.dir = 0
		}
	}
	want := c.dir
	in[0] = want
	pit := !g.world.solid(co.x, co.y+physHalf+96)
	blocked := co.vx == 0 && want != 0 && co.frozen == 0
	if blocked {
		c.stuck++
	} else if c.stuck > 0 {
		c.stuck--
	}
	if g.tick >= c.jumpUntil {
		in[3] = 0
		if co.frozen == 0 && (blocked && co.grounded || !co.grounded && c.stuck > 0 && co.vy > -1 && co.jumped&2 == 0 || pit && co.vy > 2 && co.jumped&2 == 0 && r.Float64() < 0.5 || co.grounded && r.Float64() < 0.006*act) {
			in[3] = 1
			c.jumpUntil = g.tick + int64(2+r.IntN(8))
		}
	}
	wx, wy := 0.0, 0.0
	if g.tick >= c.hookUntil {
		in[5] = 0
		if co.frozen == 0 && (c.stuck > 3 || pit && co.vy > 6 || r.Float64() < 0.003*act) {
			in[5] = 1
			c.hookUntil = g.tick + int64(8+r.IntN(40))
			c.ax, c.ay = float64(want)*(60+r.Float64()*200), -(150 + r.Float64()*200)
		}
	}
	if in[5] != 0 {
		wx, wy = float64(want)*200, -250
	}
	g.mouse(c, act, wx, wy)
	// Stuck for good (frozen again and again, or against a wall): kill.
	if c.frozenCnt > 3 || c.stuck > 40 {
		c.frozenCnt, c.stuck = 0, 0
		g.die(c, 25)
		g.at(g.tick, func() error { return g.message(c, killMsg(c)) })
	}
}

func (g *game) fightBot(c *client, in *th.Input, act float64) {
	r := g.r
	if !c.alive {
		g.mouse(c, act*0.3, 0, 0)
		return
	}
	if r.Float64() < 0.08*act {
		in[0] = int32(r.IntN(3) - 1)
	}
	if g.tick >= c.jumpUntil {
		in[3] = 0
		if r.Float64() < 0.06*act || c.c.vx == 0 && in[0] != 0 {
			in[3] = 1
			c.jumpUntil = g.tick + int64(2+r.IntN(6))
		}
	}
	if g.tick >= c.hookUntil {
		in[5] = 0
		if r.Float64() < 0.03*act {
			in[5] = 1
			c.hookUntil = g.tick + int64(5+r.IntN(30))
		}
	}
	g.mouse(c, act, 0, 0)
	// Killed by someone now and then.
	if r.Float64() < 0.004*act {
		g.die(c, 25)
	}
}

// command records a chat command typed by c.
func (g *game) command(c *client, cmd string, args ...string) error {
	return g.rec.ConsoleCommand(c.cid, 128, cmd, args...)
}

// serverEvents draws this tick's joins, leaves, chat, commands, votes and
// rcon actions.
func (g *game) serverEvents() error {
	r := g.r
	k := g.k
	// Joins up to the target, spread out.
	if g.nconn < g.target && g.tick >= g.nextJoin {
		g.nextJoin = g.tick + int64(r.ExpFloat64()*min(8, 60/float64(g.target))*tickRate)
		if err := g.join(); err != nil {
			return err
		}
	}
	if g.nconn > g.target && r.Float64() < 1.0/(30*tickRate) {
		for _, c := range g.slots {
			if c != nil && !c.leaving && !c.ghost {
				return g.drop(c, pick(r, dropReasons))
			}
		}
	}
	for _, c := range g.slots {
		if c == nil || c.leaving || !c.ready {
			continue
		}
		if k.ChurnPerHour > 0 && g.chance(k.ChurnPerHour/60) {
			if err := g.drop(c, pick(r, dropReasons)); err != nil {
				return err
			}
			continue
		}
		if c.mode == modeAFK {
			continue
		}
		if g.chance(k.ChatPerMin) {
			c.chatUntil = g.tick + int64((1+r.ExpFloat64()*4)*tickRate)
		}
		if g.chance(0.3) {
			c.scoreTill = g.tick + int64((0.5+r.ExpFloat64())*tickRate)
		}
		if g.chance(k.EmotePerMin) {
			id := int32(m6Emoticon)
			if c.id.proto7 {
				id = m7Emoticon
			}
			if err := g.message(c, th.AppendVarint(th.AppendVarint(nil, id<<1), int32(r.IntN(16)))); err != nil {
				return err
			}
		}
		if g.chance(k.CmdPerMin) {
			if err := g.chatCommand(c); err != nil {
				return err
			}
		}
	}
	if g.nconn > 0 && g.tick > g.voteUntil && g.chance(k.VotesPerHour/60) {
		if err := g.vote(); err != nil {
			return err
		}
	}
	if g.nconn > 0 && g.chance(k.RconPerHour/60) {
		if err := g.rcon(); err != nil {
			return err
		}
	}
	return nil
}

func (g *game) join() error {
	limit := int32(min(64, int(g.srv.ver.maxClients())))
	cid := int32(-1)
	for i := int32(0); i < limit; i++ {
		if g.slots[i] == nil {
			cid = i
			break
		}
	}
	if cid < 0 {
		return nil
	}
	// Regulars (low indices) come far more often than the rest.
	n := len(g.s.pop)
	i := int(float64(n) * math.Pow(g.r.Float64(), 3))
	id := &g.s.pop[min(i, n-1)]
	for _, c := range g.slots {
		if c != nil && c.id == id {
			return nil
		}
	}
	c := &client{cid: cid, id: id, raceStart: -1}
	return g.connect(c, true, int64(6+g.r.IntN(8)))
}

var chatCmds = []string{"rank", "points", "top5", "info", "help", "rules", "me", "emote", "team", "team", "team", "pause", "spec", "kill",
	"practice", "save", "load", "swap", "lock", "invite", "showothers", "mapinfo", "timecp", "times", "whisper_is_excluded"}

func (g *game) chatCommand(c *client) error {
	r := g.r
	v := g.srv.ver
	cmd := pick(r, chatCmds)
	if !g.world.race && (cmd == "team" || cmd == "practice" || cmd == "save" || cmd == "load" || cmd == "swap" || cmd == "lock" || cmd == "invite") {
		cmd = "rank"
	}
	switch cmd {
	case "whisper_is_excluded": // whispers are not recorded; the chatting flag is
		c.chatUntil = g.tick + int64(2*tickRate)
		return nil
	case "team":
		t := int32(0)
		if c.team == 0 {
			t = int32(1 + r.IntN(20))
		}
		if err := g.command(c, "team", fmt.Sprint(t)); err != nil {
			return err
		}
		if c.team != 0 {
			g.leaveTeam(c)
		}
		c.team = t
		if t != 0 {
			g.teams[t] = append(g.teams[t], c.cid)
		}
		if v.playerTeam() {
			return g.rec.PlayerTeam(c.cid, t)
		}
		return nil
	case "kill":
		if err := g.command(c, "kill"); err != nil {
			return err
		}
		if c.alive {
			g.die(c, 3)
		}
		return nil
	case "me":
		return g.command(c, "me", pick(r, []string{"is hungry", "rage quits soon", "loves this map", "afk 5 min", "needs help at part 2"}))
	case "emote":
		return g.command(c, "emote", pick(r, []string{"happy", "angry", "pain", "surprise", "blink"}), fmt.Sprint(1+r.IntN(30)))
	case "rank", "points", "times":
		args := []string{}
		if r.IntN(2) == 0 {
			args = append(args, g.s.pop[r.IntN(200)].name)
		}
		return g.command(c, cmd, args...)
	case "practice":
		if err := g.command(c, "practice", "1"); err != nil {
			return err
		}
		if v.playerTeam() && c.team != 0 {
			return g.rec.TeamPractice(c.team, true)
		}
		return nil
	case "save", "load":
		pw := strings.ToLower(pick(r, mapWords)) + fmt.Sprint(r.IntN(100))
		if err := g.command(c, cmd, pw); err != nil {
			return err
		}
		if !v.saveLoad() || !v.ex() || c.team == 0 {
			return nil
		}
		members := len(g.teams[c.team])
		if r.IntN(5) == 0 {
			if cmd == "save" {
				return g.rec.TeamSaveFailure(c.team)
			}
			return g.rec.TeamLoadFailure(c.team)
		}
		var sid uuid.UUID
		for i := range sid {
			sid[i] = byte(r.Uint32())
		}
		code := g.saveCode(max(members, 1))
		if cmd == "save" {
			return g.rec.TeamSaveSuccess(c.team, sid, code)
		}
		return g.rec.TeamLoadSuccess(c.team, sid, code)
	case "swap":
		if err := g.command(c, "swap"); err != nil {
			return err
		}
		if m := g.teams[c.team]; v.num >= 16020 && len(m) > 1 && c.team != 0 {
			other := m[r.IntN(len(m))]
			if other != c.cid {
				return g.rec.PlayerSwap(c.cid, other)
			}
		}
		return nil
	case "invite":
		return g.command(c, "invite", g.s.pop[r.IntN(200)].name)
	case "lock":
		return g.command(c, "lock", pick(r, []string{"", "1", "0"}))
	}
	return g.command(c, cmd)
}

// saveCode writes a team save string the way DDNet's CSaveTeam does: a team
// line, then one tab-separated line of character state per tee.
func (g *game) saveCode(tees int) string {
	r := g.r
	var b strings.Builder
	fmt.Fprintf(&b, "%d\t%d\t%d\t%d\t%d\n", 2, tees, r.IntN(300000), 0, r.IntN(2))
	for range tees {
		b.WriteString(g.s.pop[r.IntN(len(g.s.pop))].name)
		for range 90 + r.IntN(20) {
			b.WriteByte('\t')
			switch r.IntN(4) {
			case 0:
				fmt.Fprint(&b, r.IntN(60000))
			case 1:
				fmt.Fprintf(&b, "%.6f", r.NormFloat64()*10)
			default:
				fmt.Fprint(&b, r.IntN(2))
			}
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// vote: a player calls a vote; 0.7 clients' Cl_CallVote and Cl_Vote are
// recorded (0.6 ones are not); a passed vote runs its command as the
// server (client id -1).
func (g *game) vote() error {
	r := g.r
	var callers []*client
	for _, c := range g.slots {
		if c != nil && c.ready && !c.leaving {
			callers = append(callers, c)
		}
	}
	if len(callers) == 0 {
		return nil
	}
	caller := pick(r, callers)
	target := pick(r, callers)
	type opt struct {
		typ, desc string
		cmd       []string
	}
	opts := []opt{
		{"option", "Restart", []string{"restart", "10"}},
		{"option", "Change map", []string{"change_map", g.srv.mode.maps(r)}},
		{"option", "Random map", []string{"random_map"}},
		{"option", "Random unfinished map", []string{"random_unfinished_map"}},
		{"option", "Team mode", []string{"sv_team", fmt.Sprint(r.IntN(2))}},
		{"kick", fmt.Sprint(target.cid), []string{"kick", fmt.Sprint(target.cid), "Kicked by vote"}},
		{"spectate", fmt.Sprint(target.cid), []string{"set_team", fmt.Sprint(target.cid), "-1", "5"}},
	}
	o := pick(r, opts)
	g.voteUntil = g.tick + 25*tickRate
	if caller.id.proto7 {
		reason := pick(r, []string{"", "", "afk", "blocking", "next", "pls"})
		b := th.AppendVarint(nil, m7CallVote<<1)
		b = appendStr(appendStr(appendStr(b, o.typ), o.desc), reason)
		b = th.AppendVarint(b, 0)
		if err := g.message(caller, b); err != nil {
			return err
		}
	}
	for _, c := range callers {
		if c.id.proto7 && c != caller {
			v := int32(1)
			if r.IntN(3) == 0 {
				v = -1
			}
			cc := c
			g.at(g.tick+int64(r.IntN(12*tickRate)), func() error {
				if g.slots[cc.cid] != cc {
					return nil
				}
				return g.message(cc, th.AppendVarint(th.AppendVarint(nil, m7Vote<<1), v))
			})
		}
	}
	if r.Float64() < 0.55 {
		g.at(g.tick+int64((3+r.Float64()*20)*tickRate), func() error {
			if err := g.rec.ConsoleCommand(-1, 4, o.cmd[0], o.cmd[1:]...); err != nil {
				return err
			}
			if o.typ == "kick" && g.slots[target.cid] == target {
				return g.drop(target, "Kicked by vote")
			}
			return nil
		})
	}
	return nil
}

// rcon: a moderator logs in and types commands (flags 4), or the server's
// console runs one (client id -1).
func (g *game) rcon() error {
	r := g.r
	v := g.srv.ver
	var mods, all []*client
	for _, c := range g.slots {
		if c != nil && c.ready && !c.leaving {
			all = append(all, c)
			if c.id.authLevel > 0 {
				mods = append(mods, c)
			}
		}
	}
	if len(all) == 0 {
		return nil
	}
	if len(mods) == 0 || r.IntN(4) == 0 {
		return g.rec.ConsoleCommand(-1, 4, pick(r, []string{"status", "say", "broadcast", "sv_motd", "reload"}), pick(r, []string{"Server restart in 10 minutes", "Welcome!", "", "Event starts soon"}))
	}
	m := pick(r, mods)
	if !m.authed {
		m.authed = true
		if v.ex() {
			if err := g.rec.AuthLogin(m.cid, m.id.authLevel, m.id.authName); err != nil {
				return err
			}
		}
	}
	t := pick(r, all)
	var err error
	switch r.IntN(8) {
	case 0:
		err = g.rec.ConsoleCommand(m.cid, 4, "kick", fmt.Sprint(t.cid), pick(r, []string{"spam", "blocking", "afk", "bot"}))
		if err == nil && t != m {
			err = g.drop(t, "Kicked (spam)")
		}
	case 1:
		err = g.rec.ConsoleCommand(m.cid, 4, "mute", fmt.Sprint(t.cid), fmt.Sprint(60*(1+r.IntN(30))), "spam")
	case 2:
		err = g.rec.ConsoleCommand(m.cid, 4, "ban", fmt.Sprint(t.cid), fmt.Sprint(5*(1+r.IntN(12))), "cheating")
		if err == nil && t != m {
			err = g.drop(t, "You have been banned for 5 minutes (cheating)")
		}
	case 3:
		err = g.rec.ConsoleCommand(m.cid, 4, "vote", pick(r, []string{"yes", "no"}))
	case 4:
		err = g.rec.ConsoleCommand(m.cid, 4, "status")
	case 5:
		err = g.rec.ConsoleCommand(m.cid, 4, "say", "please stop blocking at the start")
	case 6:
		err = g.rec.ConsoleCommand(m.cid, 4, "set_team", fmt.Sprint(t.cid), "-1")
	default:
		err = g.rec.ConsoleCommand(m.cid, 4, "logout")
		if err == nil && v.ex() {
			m.authed = false
			err = g.rec.AuthLogout(m.cid)
		}
	}
	return err
}

// closing writes how a cleanly ended file ends: a map change by vote or
// rcon, or a shutdown that drops everyone.
func (g *game) closing() error {
	r := g.r
	switch r.IntN(4) {
	case 0:
		if err := g.rec.ConsoleCommand(-1, 4, "shutdown"); err != nil {
			return err
		}
		for _, c := range g.slots {
			if c != nil && !c.leaving && !c.ghost {
				if err := g.drop(c, "Server shutdown"); err != nil {
					return err
				}
			}
		}
		g.s.left = 0
	case 1:
		return g.rec.ConsoleCommand(-1, 4, "change_map", g.srv.mode.maps(r))
	case 2:
		return g.rec.ConsoleCommand(-1, 4, "random_map")
	}
	return nil
}
