// This file is a deterministic generator of realistic parkour sessions
// (players running a course with deltas and snapshots, block edits, hand and
// item events, checkpoints, chat and anticheat flags) for tests, benchmarks
// and demos.

package hcrp

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/google/uuid"
)

// SessionConfig describes a generated session. The generator (NewSession,
// Generate) makes deterministic test data for this package's tests, the
// other packages' tests, benchmarks and archivectl's demo; it lives here, not
// under internal/, because this package's own tests use it and Go does not
// let them import a package that imports this one.
type SessionConfig struct {
	Seed    uint64
	Ticks   int // ticks to record (default 1200, one minute)
	Players int // players on the course (default 3); entity 0 is the runner
	// WorldID is the map; the zero value derives one that is the same for
	// every seed, so two generated runs are runs of the same world.
	WorldID uuid.UUID
	Start   time.Time // default 2026-08-11 12:00 UTC plus Seed minutes
	// Pace scales the runner's speed (default 1; a ghost race compares
	// sessions of different pace).
	Pace float64
}

// genWorld is the world id of generated sessions when none is given.
var genWorld = uuid.MustParse("6f1c4a8e-2b7d-4c1e-9a5f-3d8b0e7c1a24")

// Session simulates one recorded session. Its Options carry the header
// fields, the metadata and the snapshot callback; Step records one tick.
type Session struct {
	cfg     SessionConfig
	rng     *rand.Rand
	players []genPlayer
	blocks  []BlockPos
	states  []int32
	meta    Meta
	item    []byte
	tick    int64
	checkpt int
}

type genPlayer struct {
	q     Pos // position as a reader rebuilds it (quantised deltas applied)
	phase float64
	speed float64
	state uint8
	slot  int32
}

// NewSession returns a session generator for cfg.
func NewSession(cfg SessionConfig) *Session {
	if cfg.Ticks <= 0 {
		cfg.Ticks = 1200
	}
	if cfg.Players <= 0 {
		cfg.Players = 3
	}
	if cfg.WorldID == uuid.Nil {
		cfg.WorldID = genWorld
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
		id := uuid.NewSHA1(genWorld, fmt.Appendf(nil, "player-%d-%d", cfg.Seed, i))
		s.meta.Players = append(s.meta.Players, MetaPlayer{UUID: id.String(), Name: fmt.Sprintf("Runner%d_%d", cfg.Seed, i), Entity: int32(i)})
		s.players = append(s.players, genPlayer{
			q:     Pos{X: 0.5 + float64(i), Y: 64, Z: 0.5, Yaw: -90},
			phase: s.rng.Float64() * math.Pi,
			speed: (0.18 + 0.04*s.rng.Float64()) * cfg.Pace,
		})
	}
	// Flags and chat are scheduled up front so the metadata is known.
	for t := 0; t < cfg.Ticks; t += 150 + s.rng.IntN(300) {
		p := s.rng.IntN(cfg.Players)
		checks := []string{"fly", "speed", "timer", "reach"}
		s.meta.Anticheat = append(s.meta.Anticheat, Flag{Type: checks[s.rng.IntN(len(checks))], Tick: int32(t),
			Player: s.meta.Players[p].UUID, Detail: fmt.Sprintf("vl=%d", 1+s.rng.IntN(9))})
	}
	lines := []string{"gg", "this jump is impossible", "how do you do the neo", "brb", "nice time!"}
	for t := 40; t < cfg.Ticks; t += 100 + s.rng.IntN(200) {
		p := s.rng.IntN(cfg.Players)
		s.meta.Chat = append(s.meta.Chat, ChatLine{Tick: int32(t), Player: s.meta.Players[p].UUID, Text: lines[s.rng.IntN(len(lines))]})
	}
	item, _ := encodeNBT(struct {
		ID    string `nbt:"id"`
		Count int32  `nbt:"count"`
	}{"minecraft:feather", 1})
	s.item = item
	return s
}

// Options returns recorder options for the session; chunk and segment
// limits are left at their defaults for the caller to set.
func (s *Session) Options() Options {
	m := s.meta
	return Options{
		WorldID:      s.cfg.WorldID,
		WorldVersion: make([]byte, 16),
		DataVersion:  4671,
		Start:        s.cfg.Start,
		Meta:         &m,
		Snapshot:     s.snapshot,
	}
}

func (s *Session) snapshot(r *Recorder, tick int64) error {
	e := Event{Type: ClearGhostBlocks}
	if err := r.Add(&e); err != nil {
		return err
	}
	for i := range s.players {
		p := &s.players[i]
		e = Event{Type: SpawnEntity, Entity: int32(i), EntityType: 149, Pos: p.q}
		if err := r.Add(&e); err != nil {
			return err
		}
		e = Event{Type: EntityState, Entity: int32(i), State: p.state}
		if err := r.Add(&e); err != nil {
			return err
		}
		e = Event{Type: SetItem, Entity: int32(i), Items: []ItemSlot{{Slot: 0, NBT: s.item}}}
		if err := r.Add(&e); err != nil {
			return err
		}
		e = Event{Type: ChangeHeldSlot, Entity: int32(i), Slot: p.slot}
		if err := r.Add(&e); err != nil {
			return err
		}
	}
	for i, b := range s.blocks {
		e = Event{Type: SetBlock, Block: b, BlockState: s.states[i]}
		if err := r.Add(&e); err != nil {
			return err
		}
	}
	return nil
}

// Step records the session's next tick; it returns false once all ticks
// are recorded.
func (s *Session) Step(r *Recorder) (bool, error) {
	if s.tick >= int64(s.cfg.Ticks) {
		return false, nil
	}
	if err := r.StartTick(); err != nil {
		return false, err
	}
	t := s.tick
	s.tick++
	var e Event
	add := func() error { return r.Add(&e) }
	if t == 0 {
		e = Event{Type: RunStart}
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
		dx := float64(javaRound((tx-p.q.X)*4096)) / 4096
		dy := float64(javaRound((ty-p.q.Y)*4096)) / 4096
		dz := float64(javaRound((tz-p.q.Z)*4096)) / 4096
		yaw := float32(float64(int16(angleToShort(float32(-90+20*math.Cos(ft/40+p.phase))))) * 360 / 65536)
		pitch := float32(float64(int16(angleToShort(float32(10*math.Sin(ft/13))))) * 360 / 65536)
		e = Event{Type: DeltaMove, Entity: int32(i), Pos: Pos{X: dx, Y: dy, Z: dz, Yaw: yaw, Pitch: pitch},
			Velocity: Vec3{X: dx, Y: dy, Z: dz}}
		if err := add(); err != nil {
			return false, err
		}
		p.q.X += dx
		p.q.Y += dy
		p.q.Z += dz
		p.q.Yaw, p.q.Pitch = yaw, pitch
		switch n := s.rng.IntN(200); {
		case n < 3:
			p.state ^= StateSprinting
			e = Event{Type: EntityState, Entity: int32(i), State: p.state}
		case n < 6:
			e = Event{Type: HandAnimation, Entity: int32(i), Hand: int32(n % 2)}
		case n < 7:
			e = Event{Type: ItemUse, Entity: int32(i), HasHand: true, Hand: 0}
		case n < 8:
			p.slot = int32(s.rng.IntN(9))
			e = Event{Type: ChangeHeldSlot, Entity: int32(i), Slot: p.slot}
		case n < 9 && len(s.blocks) < 64:
			b := BlockPos{X: int32(p.q.X), Y: int32(p.q.Y) - 1, Z: int32(p.q.Z)}
			s.blocks = append(s.blocks, b)
			s.states = append(s.states, int32(1+s.rng.IntN(20000)))
			e = Event{Type: SetBlock, Block: b, BlockState: s.states[len(s.states)-1]}
		default:
			continue
		}
		if err := add(); err != nil {
			return false, err
		}
	}
	runTime := (t + 1) * TickDuration.Milliseconds()
	switch {
	case t == int64(s.cfg.Ticks)-1:
		e = Event{Type: RunEnd, Reason: 0, RunTime: runTime}
	case s.players[0].q.X >= float64(40*(s.checkpt+1)):
		s.checkpt++ // a checkpoint every 40 blocks along the course
		e = Event{Type: CheckpointReached, Checkpoint: fmt.Sprintf("cp-%d", s.checkpt), RunTime: runTime}
	case s.rng.IntN(900) == 0:
		e = Event{Type: CheckpointReset, Reason: int32(s.rng.IntN(len(resetReasonNames))), RunTime: runTime}
	default:
		return true, nil
	}
	return true, add()
}

// Generate records a whole session as a compacted file; opts adjusts the
// recorder (chunk limits, level) and may be nil.
func Generate(cfg SessionConfig, opts func(*Options)) ([]byte, error) {
	s := NewSession(cfg)
	o := s.Options()
	if opts != nil {
		opts(&o)
	}
	var buf bytes.Buffer
	r, err := NewRecorder(&buf, o)
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
func (s *Session) Run(r *Recorder) error {
	for {
		ok, err := s.Step(r)
		if err != nil || !ok {
			return err
		}
	}
}
