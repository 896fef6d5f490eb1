// Package teehistoriangen generates deterministic, realistic teehistorian
// files (players joining, moving, typing commands, finishing, changing teams,
// leaving) with teehistorian.Recorder, streaming its output. It is test data:
// the tests and benchmarks across the module, internal/cmd/thgen and
// archivectl's demo use it, and it is internal so that it is no part of the
// teehistorian package's public API. The teehistorian package's own tests
// that need it are external tests (package teehistorian_test), since this
// package imports teehistorian.
package teehistoriangen

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/google/uuid"

	"github.com/replayarchive/replay/formats/teehistorian"
)

// Options configures Generate. Zero fields take the defaults noted.
type Options struct {
	Duration time.Duration // recorded game time; default 1 minute
	Players  int           // client slots in use (max concurrent players); default 16, at most teehistorian.MaxClients
	Seed     uint64        // the same options and seed give the same bytes
	Start    time.Time     // header start_time; default 2026-01-01T12:00:00Z
	MapName  string        // default "Kobra 3 Solo"
	// Messages adds client game messages besides the start-info ones
	// (emoticons, kills) as MESSAGE records.
	Messages bool
	// NoFinish leaves out the FINISH record, like a server that crashed.
	NoFinish bool
	// CommandsPerHour adds console commands ("rank N", N counting from 1)
	// at that rate of game time, each by an online player (skipped when
	// none is online), on top of the simulated ones: with few players it
	// makes a long file of many events that stays small (the test of a
	// 16-hour server file).
	CommandsPerHour int
	// Idle is the share of the time (0 to 1) a player stands still, which
	// writes no position records; default about 5%.
	Idle float64
}

// genPlayer is the generator's view of one client slot.
type genPlayer struct {
	online    bool
	proto7    bool
	name      string
	uid       uint64
	alive     bool
	spawnAt   int64 // tick at which the character (re)spawns; 0 = not scheduled
	x, y      int32
	vx, vy    int32
	idleUntil int64
	input     teehistorian.Input
	team      int32
	raceStart int64
	authed    bool
}

// Generate writes a deterministic, realistic teehistorian file to w.
func Generate(w io.Writer, opt Options) error {
	if opt.Duration <= 0 {
		opt.Duration = time.Minute
	}
	if opt.Players <= 0 {
		opt.Players = 16
	}
	if opt.Players > teehistorian.MaxClients {
		return fmt.Errorf("teehistoriangen: %d players exceed %d client slots", opt.Players, teehistorian.MaxClients)
	}
	if opt.Start.IsZero() {
		opt.Start = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	}
	if opt.MapName == "" {
		opt.MapName = "Kobra 3 Solo"
	}
	genNames := []string{"nameless tee", "brainless tee", "Pulsar", "Cor", "deen", "Ryozuki", "Zwelf", "heinrich5991",
		"Learath2", "def", "ChillerDragon", "Jupstar", "murpi", "Patiga", "Robyt3", "sjrc", "fokkonaut", "Welf", "Tater", "bencie"}

	genClans := []string{"", "DDNet", "Chilli.*", "Dark", "Kog", "|*KoG*|"}
	rng := rand.New(rand.NewPCG(opt.Seed, opt.Seed^0x9e3779b97f4a7c15))
	randUUID := func() uuid.UUID {
		var u uuid.UUID
		for i := range u {
			u[i] = byte(rng.Uint32())
		}
		u[6] = u[6]&0x0f | 0x40
		u[8] = u[8]&0x3f | 0x80
		return u
	}
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	randCode := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = letters[rng.IntN(len(letters))]
		}
		return string(b)
	}
	hi := teehistorian.HeaderInfo{
		GameUUID:        randUUID().String(),
		ServerVersion:   "0.6.4, 19.8.2 (generated)",
		StartTime:       opt.Start,
		ServerName:      "Generated DDNet Server",
		ServerPort:      "8303",
		GameType:        "DDraceNetwork",
		MapName:         opt.MapName,
		MapSize:         "903514",
		MapSHA256:       fmt.Sprintf("%016x%016x%016x%016x", rng.Uint64(), rng.Uint64(), rng.Uint64(), rng.Uint64()),
		MapCRC:          fmt.Sprintf("%08x", rng.Uint32()),
		PrngDescription: fmt.Sprintf("pcg-xsh-rr:%016x:%016x", rng.Uint64(), rng.Uint64()),
		Config:          [][2]string{{"sv_name", "Generated DDNet Server"}, {"sv_map", opt.MapName}, {"sv_tee_historian", "1"}},
		UUIDs:           teehistorian.ExUUIDNames(),
	}
	hj, _ := hi.MarshalJSON()
	rec, err := teehistorian.NewRecorder(w, hj)
	if err != nil {
		return err
	}

	ps := make([]genPlayer, opt.Players)
	var nextUID uint64
	ticks := int64(opt.Duration / teehistorian.TickDuration)
	var every, extra int64 // a command every `every` ticks; extra counts them
	if opt.CommandsPerHour > 0 {
		every = max(1, int64(time.Hour/teehistorian.TickDuration)/int64(opt.CommandsPerHour))
	}
	// A player idles for 50-549 ticks (300 on average) once per idleOdds
	// ticks of moving: idle share 300/(300+idleOdds).
	idleOdds := 1000
	if opt.Idle > 0 && opt.Idle < 1 {
		idleOdds = max(1, int(300*(1-opt.Idle)/opt.Idle))
	}
	var msg []byte
	for t := int64(1); t <= ticks; t++ {
		if err := rec.BeginTick(t); err != nil {
			return err
		}
		// Positions at the end of the tick, in client id order.
		for cid := range ps {
			p := &ps[cid]
			if p.online && !p.alive && p.spawnAt != 0 && t >= p.spawnAt {
				p.alive, p.spawnAt = true, 0
				p.x, p.y = 32*int32(10+rng.IntN(20)), 32*int32(10+rng.IntN(5))
				p.vx, p.vy = 0, 0
				p.raceStart = t
			}
			if !p.alive {
				rec.DeadPlayer(int32(cid))
				continue
			}
			if t >= p.idleUntil {
				if rng.IntN(idleOdds) == 0 {
					p.idleUntil = t + int64(50+rng.IntN(500))
					p.vx, p.vy = 0, 0
				} else {
					if rng.IntN(8) == 0 {
						p.vx = int32(rng.IntN(21) - 10)
					}
					if rng.IntN(12) == 0 {
						p.vy = int32(rng.IntN(31) - 15)
					}
					p.x += p.vx
					p.y += p.vy
				}
			}
			rec.Player(int32(cid), p.x, p.y)
		}
		// Inputs and events that arrive before the next tick.
		for cid := range ps {
			p := &ps[cid]
			c := int32(cid)
			if !p.online {
				if rng.IntN(1500) == 0 {
					p.online, p.proto7 = true, rng.IntN(5) == 0
					p.name = genNames[rng.IntN(len(genNames))]
					if rng.IntN(3) == 0 {
						p.name = fmt.Sprintf("%s%d", p.name, rng.IntN(100))
					}
					nextUID++
					p.uid = nextUID
					p.spawnAt = t + int64(10+rng.IntN(40))
					p.team, p.authed = 0, false
					rec.PlayerJoin(c, p.proto7)
					msg = AppendStartInfo(msg[:0], p.proto7, p.name, genClans[rng.IntN(len(genClans))])
					rec.Message(c, msg)
					rec.PlayerName(c, p.name)
					rec.PlayerReady(c)
					rec.DDNetVersion(c, randUUID(), 19080, "DDNet 19.8.2 (generated)")
					rec.ConsoleCommand(c, 128, "timeout", randCode(16))
				}
				continue
			}
			if p.alive && (t < p.idleUntil && rng.IntN(20) == 0 || t >= p.idleUntil && rng.IntN(3) == 0) {
				p.input[0] = int32(rng.IntN(3) - 1)
				p.input[1] += int32(rng.IntN(41) - 20)
				p.input[2] += int32(rng.IntN(41) - 20)
				p.input[3] = int32(rng.IntN(6) / 5)
				p.input[4] += int32(rng.IntN(8) / 7)
				p.input[5] = int32(rng.IntN(4) / 3)
				p.input[6] = 1
				p.input[7] = int32(rng.IntN(40) / 39)
				rec.Input(c, p.uid, p.input)
			}
			switch r := rng.IntN(300000); {
			case r < 5: // leave, after 20 minutes on average
				reasons := []string{"", "Timeout", "Leave", "too many pancakes"}
				rec.Drop(c, reasons[rng.IntN(len(reasons))])
				p.online, p.alive, p.spawnAt = false, false, 0
				if p.team != 0 {
					rec.PlayerTeam(c, 0)
				}
				p.team = 0
			case r < 155 && p.alive: // die
				rec.ConsoleCommand(c, 128, "kill")
				p.alive, p.spawnAt = false, t+int64(25+rng.IntN(50))
			case r < 305: // team change
				team := int32(rng.IntN(8))
				rec.ConsoleCommand(c, 128, "team", fmt.Sprint(team))
				p.team = team
				rec.PlayerTeam(c, team)
				if rng.IntN(4) == 0 {
					rec.TeamPractice(team, rng.IntN(2) == 0)
				}
			case r < 385 && p.alive: // finish
				rec.PlayerFinish(c, int32(t-p.raceStart))
				if p.team != 0 && rng.IntN(2) == 0 {
					rec.TeamFinish(p.team, int32(t-p.raceStart))
				}
				p.raceStart = t
			case r < 425: // account login or register with a password
				if rng.IntN(2) == 0 {
					rec.ConsoleCommand(c, 128, "login", p.name, "pw-"+randCode(10))
				} else {
					pw := "pw-" + randCode(10)
					rec.ConsoleCommand(c, 128, "register", p.name, pw, pw)
				}
			case r < 455: // reconnect code again
				rec.ConsoleCommand(c, 128, "timeout", randCode(16))
			case r < 475 && !p.authed: // rcon login and a moderation command
				p.authed = true
				rec.AuthLogin(c, int32(1+rng.IntN(3)), fmt.Sprintf("mod_%s", randCode(4)))
				rec.ConsoleCommand(c, 4, "kick", fmt.Sprint(rng.IntN(opt.Players)), "spam")
			case r < 605:
				cmds := []string{"pause", "spec", "rank", "points", "emote", "top5"}
				rec.ConsoleCommand(c, 128, cmds[rng.IntN(len(cmds))])
			case r < 805 && opt.Messages:
				// Cl_Emoticon (0.6 id 23 / 0.7 id 26) with an emoticon number.
				id := int32(23)
				if p.proto7 {
					id = 26
				}
				msg = teehistorian.AppendVarint(teehistorian.AppendVarint(msg[:0], id<<1), int32(rng.IntN(16)))
				rec.Message(c, msg)
			}
		}
		if every > 0 && t%every == 0 {
			for i := range ps {
				if c := (int(t/every) + i) % len(ps); ps[c].online {
					extra++
					rec.ConsoleCommand(int32(c), 128, "rank", fmt.Sprint(extra))
					break
				}
			}
		}
	}
	for cid := range ps {
		if ps[cid].online {
			rec.Drop(int32(cid), "Server shutdown")
		}
	}
	if opt.NoFinish {
		return rec.Flush()
	}
	return rec.Finish()
}

// Client start-info message ids (NETMSGTYPE_CL_STARTINFO).
const (
	msg6StartInfo = 20 // 0.6
	msg7StartInfo = 27 // 0.7
)

// AppendStartInfo appends a client start-info game message: 0.6 Cl_StartInfo
// (name, clan, country, skin, custom colors, body, feet) or 0.7 Cl_StartInfo
// (name, clan, country, six skin parts, six use-custom flags, six colors).
// It is exported for the teehistorian tests that write such a message
// themselves.
func AppendStartInfo(b []byte, proto7 bool, name, clan string) []byte {
	if proto7 {
		b = teehistorian.AppendVarint(b, msg7StartInfo<<1)
		b = appendStr(appendStr(b, name), clan)
		b = teehistorian.AppendVarint(b, -1)
		for _, part := range []string{"standard", "", "", "standard", "standard", "standard"} {
			b = appendStr(b, part)
		}
		for range 6 {
			b = teehistorian.AppendVarint(b, 0)
		}
		for range 6 {
			b = teehistorian.AppendVarint(b, 0)
		}
		return b
	}
	b = teehistorian.AppendVarint(b, msg6StartInfo<<1)
	b = appendStr(appendStr(b, name), clan)
	b = teehistorian.AppendVarint(b, -1)
	b = appendStr(b, "default")
	b = teehistorian.AppendVarint(b, 0)
	b = teehistorian.AppendVarint(b, 65408)
	return teehistorian.AppendVarint(b, 65408)
}

// appendStr appends s and its NUL terminator, as teehistorian strings are
// written.
func appendStr(b []byte, s string) []byte { return append(append(b, s...), 0) }

// TB is the part of testing.TB that Must uses (this package does not
// import testing: internal/cmd/thgen and the demo link it too).
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Must returns the file Generate writes for opt, failing tb if it cannot:
// the set-up of the tests and benchmarks that need a game in memory.
func Must(tb TB, opt Options) []byte {
	tb.Helper()
	var b bytes.Buffer
	if err := Generate(&b, opt); err != nil {
		tb.Fatalf("generate a game: %v", err)
	}
	return b.Bytes()
}
