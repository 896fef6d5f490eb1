// Package hcrpgen generates deterministic, realistic HCRP parkour sessions
// (players running a course with deltas and snapshots, block edits, hand and
// item events, checkpoints, chat and anticheat flags) with hcrp.Recorder. It
// is test data: the tests and benchmarks across the module and archivectl's
// demo use it, and it is internal so that it is no part of the hcrp
// package's public API. The hcrp package's own tests that need it are
// external tests (package hcrp_test), since this package imports hcrp.
package hcrpgen

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/google/uuid"

	"github.com/replayarchive/replay/formats/hcrp"
)

// Config describes a generated session; the same Config gives the same
// bytes. Zero fields take the defaults noted.
type Config struct {
	Seed    uint64
	Ticks   int // ticks to record (default 1200, one minute)
	Players int // players on the course (default 3); entity 0 is the runner
	// WorldID is the map; the zero value is World for every seed, so two
	// generated runs are runs of the same world.
	WorldID uuid.UUID
	Start   time.Time // default 2026-08-11 12:00 UTC plus Seed minutes
	// Pace scales the runner's speed (default 1; a ghost race compares
	// sessions of different pace).
	Pace float64
}

// World is the world id of generated sessions when Config.WorldID is zero.
var World = uuid.MustParse("6f1c4a8e-2b7d-4c1e-9a5f-3d8b0e7c1a24")

// featherNBT is the network NBT compound {id: "minecraft:feather", count: 1},
// the item every generated player holds.
const featherNBT = "\x0a\x08\x00\x02id\x00\x11minecraft:feather\x03\x00\x05count\x00\x00\x00\x01\x00"

// resetReasons is how many CheckpointReset reasons hcrp names
// (hcrp.ResetReason: "lives" to "relog").
const resetReasons = 10

// Session simulates one recorded session. Its Options carry the header
// fields, the metadata and the snapshot callback; Step records one tick.
type Session struct {
	cfg     Config
	rng     *rand.Rand
	players []genPlayer
	blocks  []hcrp.BlockPos
	states  []int32
	meta    hcrp.Meta
	item    []byte
	tick    int64
	checkpt int
}

type genPlayer struct {
	q     hcrp.Pos // position as a reader rebuilds it (quantised deltas applied)
	phase float64
	speed float64
	state uint8
	slot  int32
}

// NewSession returns a session generator for cfg.
func NewSession(cfg Config) *Session {
	if cfg.Ticks <= 0 {
		cfg.Ticks = 1200
	}
	if cfg.Players <= 0 {
		cfg.Players = 3
	}
	if cfg.WorldID == uuid.Nil {
		cfg.WorldID = World
	}
	if cfg.Start.IsZero() {
		cfg.Start = time.Date(2026, 8, 11, 12, 0, 0, 0, time.UTC).Add(time.Duration(cfg.Seed) * time.Minute)
	}
	if cfg.Pace <= 0 {
		cfg.Pace = 1
	}
	s := &Session{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, 0x68637270))}
	s.meta.Map = "parkour-spire"
	s.meta.Server = "hc-eu-1"
	for i := 0; i < cfg.Players; i++ {
		id := uuid.NewSHA1(World, fmt.Appendf(nil, "player-%d-%d", cfg.Seed, i))
		s.meta.Players = append(s.meta.Players, hcrp.MetaPlayer{UUID: id.String(), Name: fmt.Sprintf("Runner%d_%d", cfg.Seed, i), Entity: int32(i)})
		s.players = append(s.players, genPlayer{
			q:     hcrp.Pos{X: 0.5 + float64(i), Y: 64, Z: 0.5, Yaw: -90},
			phase: s.rng.Float64() * math.Pi,
			speed: (0.18 + 0.04*s.rng.Float64()) * cfg.Pace,
		})
	}
	// Flags and chat are scheduled up front so the metadata is known.
	for t := 0; t < cfg.Ticks; t += 150 + s.rng.IntN(300) {
		p := s.rng.IntN(cfg.Players)
		checks := []string{"fly", "speed", "timer", "reach"}
		s.meta.Anticheat = append(s.meta.Anticheat, hcrp.Flag{Type: checks[s.rng.IntN(len(checks))], Tick: int32(t),
			Player: s.meta.Players[p].UUID, Detail: fmt.Sprintf("vl=%d", 1+s.rng.IntN(9))})
	}
	lines := []string{"gg", "this jump is impossible", "how do you do the neo", "brb", "nice time!"}
	for t := 40; t < cfg.Ticks; t += 100 + s.rng.IntN(200) {
		p := s.rng.IntN(cfg.Players)
		s.meta.Chat = append(s.meta.Chat, hcrp.ChatLine{Tick: int32(t), Player: s.meta.Players[p].UUID, Text: lines[s.rng.IntN(len(lines))]})
	}
	s.item = []byte(featherNBT)
	return s
}

// Options returns recorder options for the session; chunk and segment
// limits are left at their defaults for the caller to set.
func (s *Session) Options() hcrp.Options {
	m := s.meta
	return hcrp.Options{
		WorldID:      s.cfg.WorldID,
		WorldVersion: make([]byte, 16),
		DataVersion:  4671,
		Start:        s.cfg.Start,
		Meta:         &m,
		Snapshot:     s.snapshot,
	}
}

func (s *Session) snapshot(r *hcrp.Recorder, tick int64) error {
	e := hcrp.Event{Type: hcrp.ClearGhostBlocks}
	if err := r.Add(&e); err != nil {
		return err
	}
	for i := range s.players {
		p := &s.players[i]
		e = hcrp.Event{Type: hcrp.SpawnEntity, Entity: int32(i), EntityType: 149, Pos: p.q}
		if err := r.Add(&e); err != nil {
			return err
		}
		e = hcrp.Event{Type: hcrp.EntityState, Entity: int32(i), State: p.state}
		if err := r.Add(&e); err != nil {
			return err
		}
		e = hcrp.Event{Type: hcrp.SetItem, Entity: int32(i), Items: []hcrp.ItemSlot{{Slot: 0, NBT: s.item}}}
		if err := r.Add(&e); err != nil {
			return err
		}
		e = hcrp.Event{Type: hcrp.ChangeHeldSlot, Entity: int32(i), Slot: p.slot}
		if err := r.Add(&e); err != nil {
			return err
		}
	}
	for i, b := range s.blocks {
		e = hcrp.Event{Type: hcrp.SetBlock, Block: b, BlockState: s.states[i]}
		if err := r.Add(&e); err != nil {
			return err
		}
	}
	return nil
}

// Step records the session's next tick; it returns false once all ticks
// are recorded.
func (s *Session) Step(r *hcrp.Recorder) (bool, error) {
	if s.tick >= int64(s.cfg.Ticks) {
		return false, nil
	}
	if err := r.StartTick(); err != nil {
		return false, err
	}
	t := s.tick
	s.tick++
	var e hcrp.Event
	add := func() error { return r.Add(&e) }
	if t == 0 {
		e = hcrp.Event{Type: hcrp.RunStart}
		if err := add(); err != nil {
			return false, err
		}
	}
	for i := range s.players {
		p := &s.players[i]
		// The course runs along +x and weaves in z, with jumps.
		ft := float64(t)
		tx := 0.5 + float64(i) + ft*p.speed
		tz := 0.5 + 3*math.Sin(ft/40+p.phase)
		ty := 64 + 1.2*math.Max(0, math.Sin(ft/6+p.phase))
		d := hcrp.QuantizeLpPos(hcrp.Pos{X: tx - p.q.X, Y: ty - p.q.Y, Z: tz - p.q.Z,
			Yaw: float32(-90 + 20*math.Cos(ft/40+p.phase)), Pitch: float32(10 * math.Sin(ft/13))})
		e = hcrp.Event{Type: hcrp.DeltaMove, Entity: int32(i), Pos: d, Velocity: hcrp.Vec3{X: d.X, Y: d.Y, Z: d.Z}}
		if err := add(); err != nil {
			return false, err
		}
		p.q.X += d.X
		p.q.Y += d.Y
		p.q.Z += d.Z
		p.q.Yaw, p.q.Pitch = d.Yaw, d.Pitch
		switch n := s.rng.IntN(200); {
		case n < 3:
			p.state ^= hcrp.StateSprinting
			e = hcrp.Event{Type: hcrp.EntityState, Entity: int32(i), State: p.state}
		case n < 6:
			e = hcrp.Event{Type: hcrp.HandAnimation, Entity: int32(i), Hand: hcrp.Hand(n % 2)}
		case n < 7:
			e = hcrp.Event{Type: hcrp.ItemUse, Entity: int32(i), HasHand: true, Hand: 0}
		case n < 8:
			p.slot = int32(s.rng.IntN(9))
			e = hcrp.Event{Type: hcrp.ChangeHeldSlot, Entity: int32(i), Slot: p.slot}
		case n < 9 && len(s.blocks) < 64:
			b := hcrp.BlockPos{X: int32(p.q.X), Y: int32(p.q.Y) - 1, Z: int32(p.q.Z)}
			s.blocks = append(s.blocks, b)
			s.states = append(s.states, int32(1+s.rng.IntN(20000)))
			e = hcrp.Event{Type: hcrp.SetBlock, Block: b, BlockState: s.states[len(s.states)-1]}
		default:
			continue
		}
		if err := add(); err != nil {
			return false, err
		}
	}
	runTime := (t + 1) * hcrp.TickDuration.Milliseconds()
	switch {
	case t == int64(s.cfg.Ticks)-1:
		e = hcrp.Event{Type: hcrp.RunEnd, End: hcrp.EndFinish, RunTime: runTime}
	case s.players[0].q.X >= float64(40*(s.checkpt+1)):
		s.checkpt++ // a checkpoint every 40 blocks along the course
		e = hcrp.Event{Type: hcrp.CheckpointReached, Checkpoint: fmt.Sprintf("cp-%d", s.checkpt), RunTime: runTime}
	case s.rng.IntN(900) == 0:
		e = hcrp.Event{Type: hcrp.CheckpointReset, Reset: hcrp.ResetReason(s.rng.IntN(resetReasons)), RunTime: runTime}
	default:
		return true, nil
	}
	return true, add()
}

// Positions returns where each player (entity i) stands after the ticks
// recorded so far, as a reader replaying the recording rebuilds it: a test
// of seeking compares the two.
func (s *Session) Positions() []hcrp.Pos {
	ps := make([]hcrp.Pos, len(s.players))
	for i := range s.players {
		ps[i] = s.players[i].q
	}
	return ps
}

// Generate records a whole session as a compacted file; opts adjusts the
// recorder (chunk limits, level) and may be nil.
func Generate(cfg Config, opts func(*hcrp.Options)) ([]byte, error) {
	s := NewSession(cfg)
	o := s.Options()
	if opts != nil {
		opts(&o)
	}
	var buf bytes.Buffer
	r, err := hcrp.NewRecorder(&buf, o)
	if err != nil {
		return nil, err
	}
	if err := s.Run(r); err != nil {
		return nil, err
	}
	if err := r.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Run records every remaining tick of the session into r (without closing
// it).
func (s *Session) Run(r *hcrp.Recorder) error {
	for {
		ok, err := s.Step(r)
		if err != nil || !ok {
			return err
		}
	}
}
