// This file decodes the frames of a chunk payload back into API frames
// (the reference's Decompressor_v1/v2/v3), with two behaviours: ours,
// which fixes the reference reader's bugs and tolerates what makes it
// fail, and Reference, which reproduces its output exactly.

package butter

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/replayarchive/replay/formats"
)

// DecodeOptions choose between our decoding and the reference reader's.
type DecodeOptions struct {
	// Reference reproduces the reference reader (ButterReplays 1.3.4
	// DecompressorV3) bug for bug: team stats deltas are taken as absolute
	// values, stat deltas are unsigned, and the bone base is reset to
	// zero/identity at every keyframe. Without it, team stats accumulate,
	// stat deltas are signed, and bones are diffed against the previous
	// frame across chunk boundaries, as the writer encoded them.
	Reference bool
	// MaxChunkPayload bounds the decompressed size of one chunk (0 means
	// 64 MiB; the reference writer's chunks are well under 1 MiB).
	MaxChunkPayload int64
}

func (o DecodeOptions) maxPayload() int64 {
	if o.MaxChunkPayload > 0 {
		return o.MaxChunkPayload
	}
	return maxChunkPayload
}

// invalidName is what the reference reader shows for player index 0.
const invalidName = "[INVALID]"

// decoder holds the state carried from frame to frame.
type decoder struct {
	h     *FileHeader
	opts  DecodeOptions
	table []HeaderPlayer // the header table, grown for unknown indexes
	// prev is the previous frame of the chunk (nil before a keyframe).
	prev *Frame
	// bones is the bone state of the previous frame, kept across chunks.
	bones *Bones
	// unknown counts player indexes beyond the header table.
	unknown int
	// last and cur hold the pose, VR player and disc bytes stored for the
	// previous and the current frame. The writer leaves a position out
	// when its bytes equal the previous frame's (the same delta again), so
	// our decoding applies that delta again where the reference holds.
	last, cur stored
}

// stored are the position deltas (or absolute values) a frame stored.
type stored struct {
	poses map[int64]*[4]vec3
	vr    *vec3
	disc  *[2]vec3
}

func (s *stored) reset() {
	s.vr, s.disc = nil, nil
	if s.poses == nil {
		s.poses = map[int64]*[4]vec3{}
	}
	clear(s.poses)
}

func newDecoder(h *FileHeader, opts DecodeOptions) *decoder {
	return &decoder{h: h, opts: opts, table: append([]HeaderPlayer(nil), h.Players...)}
}

// player returns the header entry for a 1-based file index, making one up
// for an index past the table (a late joiner the table missed).
func (d *decoder) player(idx byte) HeaderPlayer {
	if idx == 0 {
		return HeaderPlayer{Name: invalidName, Level: -1}
	}
	for int(idx) > len(d.table) {
		n := len(d.table) + 1
		d.table = append(d.table, HeaderPlayer{Name: "[UNKNOWN " + strconv.Itoa(n) + "]", UserID: -int64(n)})
		d.unknown++
	}
	return d.table[idx-1]
}

func (d *decoder) name(idx byte) string { return d.player(idx).Name }

// chunkFrames decodes every whole frame of one chunk payload, calling emit
// for each. It stops at the first frame that does not fit (a truncated
// tail) and returns an error saying where.
func (d *decoder) chunkFrames(payload []byte, base int64, emit func(f *Frame, end int) error) error {
	c := &cursor{b: payload, base: base}
	d.prev = nil
	for c.pos < len(payload) {
		start := c.pos
		f, err := d.frame(c)
		if err != nil {
			c.pos = start
			return err
		}
		if err := emit(f, c.pos); err != nil {
			return err
		}
		d.prev = f
		d.last, d.cur = d.cur, d.last
	}
	return nil
}

func (d *decoder) frame(c *cursor) (*Frame, error) {
	start := c.offset()
	marker := c.u16("frame marker")
	if c.err != nil {
		return nil, c.error()
	}
	if marker != markerKeyframe && marker != markerDelta {
		return nil, formats.Errorf(Name, start, "expected frame marker FC FE or FE FE, got %02X %02X", byte(marker), byte(marker>>8))
	}
	key := marker == markerKeyframe
	d.cur.reset()
	if key {
		d.prev = nil
		d.last.reset()
	} else if d.prev == nil {
		return nil, formats.Errorf(Name, start, "expected a keyframe at the start of a chunk, got a delta frame")
	}
	var f *Frame
	switch d.h.Version {
	case 3:
		f = d.frameV3(c, key)
	default:
		f = d.frameV12(c, key)
	}
	if c.err != nil {
		return nil, c.error()
	}
	return f, nil
}

// clockDisplay is ToGameClockDisplay: "mm:ss.hh", truncated.
func clockDisplay(t float32) string {
	it := int(t)
	m, s := it/60, it%60
	h := int(f32((t - float32(it)) * 100))
	return d2(m) + ":" + d2(s) + "." + d2(h)
}

func d2(n int) string {
	if n < 0 {
		s := strconv.Itoa(-n)
		if len(s) < 2 {
			s = "0" + s
		}
		return "-" + s
	}
	if n < 10 {
		return "0" + strconv.Itoa(n)
	}
	return strconv.Itoa(n)
}

func (d *decoder) baseFrame(c *cursor, key bool) *Frame {
	h := d.h
	f := &Frame{
		SessionID:        h.SessionID,
		SessionIP:        h.SessionIP,
		ClientName:       h.ClientName,
		TotalRoundCount:  h.TotalRoundCount,
		BlueRoundScore:   h.BlueRoundScore,
		OrangeRoundScore: h.OrangeRoundScore,
		PrivateMatch:     Bool(h.PrivateMatch),
		MapName:          h.MapName,
		MatchType:        h.MatchType(),
	}
	if key {
		f.RecordedTime = time.UnixMilli(int64(c.u64("keyframe time"))).UTC()
	} else {
		f.RecordedTime = d.prev.RecordedTime.Add(time.Duration(c.u16("frame time delta")) * time.Millisecond)
	}
	f.GameClock = math.Float32frombits(c.u32("game clock"))
	if !key {
		f.GameClock += d.prev.GameClock
	}
	f.GameClockDisplay = clockDisplay(f.GameClock)
	return f
}

func bits(b byte, i uint) bool { return b&(1<<i) != 0 }

// gameStatuses are Echo VR's game states by butter's status byte; 0 is no
// status, which the reference decoder names "NOT FOUND". Milk numbers the
// same states from 0 (milkStatusBase).
var gameStatuses = [...]string{"", "", "pre_match", "round_start", "playing", "score", "round_over", "post_match", "pre_sudden_death", "sudden_death", "post_sudden_death"}

// milkStatusBase is the butter status byte of milk's status 0.
const milkStatusBase = 2

// gameStatusName decodes a butter status byte.
func gameStatusName(b byte) string {
	if int(b) < len(gameStatuses) && b > 0 {
		return gameStatuses[b]
	}
	return "NOT FOUND"
}

func teamName(i byte) string {
	return [...]string{"blue", "orange", "spectator", "none"}[i&3]
}

func pausedStateName(b byte) string {
	if int(b) < len(pausedStates) {
		return pausedStates[b]
	}
	return "unknown"
}

func (d *decoder) readInputs(c *cursor, f *Frame) {
	in := c.u8("inputs byte")
	f.LeftShoulderPressed, f.RightShoulderPressed = Bool(bits(in, 0)), Bool(bits(in, 1))
	f.LeftShoulderPressed2, f.RightShoulderPressed2 = Bool(bits(in, 2)), Bool(bits(in, 3))
}

func (d *decoder) copyInputs(f *Frame) {
	if p := d.prev; p != nil {
		f.LeftShoulderPressed, f.RightShoulderPressed = p.LeftShoulderPressed, p.RightShoulderPressed
		f.LeftShoulderPressed2, f.RightShoulderPressed2 = p.LeftShoulderPressed2, p.RightShoulderPressed2
	}
}

func (d *decoder) readLastScore(c *cursor) *LastScore {
	b := c.u8("last score byte")
	ls := &LastScore{Team: teamName(b & 3), PointAmount: 2}
	if bits(b, 2) {
		ls.PointAmount = 3
	}
	if gt := int(b >> 3); gt < len(goalTypes) {
		ls.GoalType = spaced(goalTypes[gt])
	} else {
		ls.GoalType = strconv.Itoa(gt)
	}
	ls.PersonScored = d.name(c.u8("person scored"))
	ls.AssistScored = d.name(c.u8("assist scored"))
	ls.DiscSpeed = c.half("disc speed")
	ls.DistanceThrown = c.half("distance thrown")
	return ls
}

func spaced(s string) string {
	b := []byte(s)
	for i := range b {
		if b[i] == '_' {
			b[i] = ' '
		}
	}
	return string(b)
}

func (d *decoder) readLastThrow(c *cursor) *LastThrow {
	var v [13]float32
	for i := range v {
		v[i] = c.half("last throw")
	}
	return &LastThrow{v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11], v[12]}
}

func (c *cursor) vec(what string) vec3 {
	return vec3{c.half(what), c.half(what), c.half(what)}
}

func (d *decoder) readVRPlayer(c *cursor) *VRPlayer {
	p := c.vec("VR player position")
	q := readSmallestThree(c.u32("VR player rotation"))
	stored := p
	d.cur.vr = &stored
	if d.prev != nil && d.prev.Player != nil {
		p = p.add(vecOf(d.prev.Player.VRPosition))
	}
	return &VRPlayer{VRPosition: p.list(), VRForward: q.forward().list(), VRLeft: q.left().list(), VRUp: q.up().list()}
}

func (d *decoder) readDisc(c *cursor) *Disc {
	p := c.vec("disc position")
	q := readSmallestThree(c.u32("disc rotation"))
	v := c.vec("disc velocity")
	d.cur.disc = &[2]vec3{p, v}
	if pd := d.prev; pd != nil && pd.Disc != nil {
		p = p.add(vecOf(pd.Disc.Position))
		v = v.add(vecOf(pd.Disc.Velocity))
	}
	return &Disc{Position: p.list(), Forward: q.forward().list(), Left: q.left().list(), Up: q.up().list(), Velocity: v.list()}
}

// readStats reads 14 stats bytes; the ten counters are signed deltas in
// our decoding and unsigned in the reference's.
func (d *decoder) readStats(c *cursor) *Stats {
	b := c.bytes(10, "stats")
	pt := c.half("possession time")
	st := c.u16("stuns")
	if b == nil {
		return &Stats{}
	}
	v := func(i int) int {
		if d.opts.Reference {
			return int(b[i])
		}
		return int(int8(b[i]))
	}
	return &Stats{Assists: v(0), Blocks: v(1), Catches: v(2), Goals: v(3), Interceptions: v(4),
		Passes: v(5), Points: v(6), Saves: v(7), Steals: v(8), ShotsTaken: v(9),
		PossessionTime: pt, Stuns: int(st)}
}

func addStats(a, b *Stats) *Stats {
	return &Stats{
		PossessionTime: a.PossessionTime + b.PossessionTime, Points: a.Points + b.Points,
		Saves: a.Saves + b.Saves, Goals: a.Goals + b.Goals, Stuns: a.Stuns + b.Stuns,
		Passes: a.Passes + b.Passes, Catches: a.Catches + b.Catches, Steals: a.Steals + b.Steals,
		Blocks: a.Blocks + b.Blocks, Interceptions: a.Interceptions + b.Interceptions,
		Assists: a.Assists + b.Assists, ShotsTaken: a.ShotsTaken + b.ShotsTaken,
	}
}

func holdingName(b byte) *string {
	switch b {
	case 255:
		return strPtr("none")
	case 254:
		return strPtr("geo")
	case 253:
		return strPtr("disc")
	case 252:
		return nil
	}
	return strPtr(strconv.Itoa(int(b)))
}

func (d *decoder) frameV3(c *cursor, key bool) *Frame {
	f := d.baseFrame(c, key)
	prev := d.prev
	mask := c.u8("inclusion bitmask")
	if bits(mask, 0) {
		f.GameStatus = strPtr(gameStatusName(c.u8("game status")))
		switch {
		case f.inArena():
			f.BluePoints = float32(c.u8("blue points"))
			f.OrangePoints = float32(c.u8("orange points"))
		case f.inCombat():
			f.BluePoints = c.half("blue points")
			f.OrangePoints = c.half("orange points")
		}
		d.readInputs(c, f)
	} else if prev != nil {
		f.GameStatus = prev.GameStatus
		f.BluePoints, f.OrangePoints = prev.BluePoints, prev.OrangePoints
		d.copyInputs(f)
	}
	if bits(mask, 1) {
		b := c.u8("pause flags")
		f.BlueTeamRestartRequest, f.OrangeTeamRestartRequest = Bool(bits(b, 0)), Bool(bits(b, 1))
		f.Pause = &Pause{
			PausedRequestedTeam: teamName(b >> 2 & 3),
			UnpausedTeam:        teamName(b >> 4 & 3),
			PausedState:         pausedStateName(c.u8("paused state")),
		}
		f.Pause.PausedTimer = c.half("paused timer")
		f.Pause.UnpausedTimer = c.half("unpaused timer")
	} else if prev != nil {
		f.Pause = prev.Pause
		f.BlueTeamRestartRequest, f.OrangeTeamRestartRequest = prev.BlueTeamRestartRequest, prev.OrangeTeamRestartRequest
	}
	if bits(mask, 2) {
		f.LastScore = d.readLastScore(c)
	} else if prev != nil {
		f.LastScore = prev.LastScore
	}
	if bits(mask, 3) {
		f.LastThrow = d.readLastThrow(c)
	} else if prev != nil {
		f.LastThrow = prev.LastThrow
	}
	if bits(mask, 4) {
		f.Player = d.readVRPlayer(c)
	} else if prev != nil {
		f.Player = prev.Player
		if dv := d.last.vr; dv != nil && !d.opts.Reference && prev.Player != nil {
			vp := *prev.Player
			vp.VRPosition = vecOf(vp.VRPosition).add(*dv).list()
			f.Player, d.cur.vr = &vp, dv
		}
	}
	if bits(mask, 5) {
		f.Disc = d.readDisc(c)
	} else if prev != nil {
		f.Disc = prev.Disc
		if dd := d.last.disc; dd != nil && !d.opts.Reference && prev.Disc != nil {
			disc := *prev.Disc
			disc.Position = vecOf(disc.Position).add(dd[0]).list()
			disc.Velocity = vecOf(disc.Velocity).add(dd[1]).list()
			f.Disc, d.cur.disc = &disc, dd
		}
	}
	if bits(mask, 6) {
		f.Contested = c.u8("contested") != 0
		f.PayloadCheckpoint = int(c.u8("payload checkpoint"))
		f.PayloadDefenders = int(c.u8("payload defenders"))
		f.PayloadDistance = c.half("payload distance")
		f.PayloadSpeed = c.half("payload speed")
	} else if prev != nil {
		f.Contested, f.PayloadCheckpoint, f.PayloadDefenders = prev.Contested, prev.PayloadCheckpoint, prev.PayloadDefenders
		f.PayloadDistance, f.PayloadSpeed = prev.PayloadDistance, prev.PayloadSpeed
	}
	if bits(mask, 7) {
		f.RulesChangedAt = int64(c.u64("rules changed at"))
		f.RulesChangedBy = strPtr(c.cstring("rules changed by"))
	} else if prev != nil {
		f.RulesChangedAt, f.RulesChangedBy = prev.RulesChangedAt, prev.RulesChangedBy
	}
	d.teams(c, f, key, 3)
	d.readBones(c, f, key)
	return f
}

// frameV12 decodes the frame layout of format versions 1 and 2.
func (d *decoder) frameV12(c *cursor, key bool) *Frame {
	f := d.baseFrame(c, key)
	prev := d.prev
	mask := c.u8("inclusion bitmask")
	if bits(mask, 0) {
		f.GameStatus = strPtr(gameStatusName(c.u8("game status")))
	} else if prev != nil {
		f.GameStatus = prev.GameStatus
	}
	if bits(mask, 1) {
		f.BluePoints = float32(c.u8("blue points"))
		f.OrangePoints = float32(c.u8("orange points"))
	} else if prev != nil {
		f.BluePoints, f.OrangePoints = prev.BluePoints, prev.OrangePoints
	}
	if bits(mask, 2) {
		b := c.u8("pause flags")
		f.BlueTeamRestartRequest, f.OrangeTeamRestartRequest = Bool(bits(b, 0)), Bool(bits(b, 1))
		f.Pause = &Pause{
			PausedRequestedTeam: teamName(b >> 2 & 3),
			UnpausedTeam:        teamName(b >> 4 & 3),
			PausedState:         pausedStateName(b >> 6),
		}
		f.Pause.PausedTimer = c.half("paused timer")
		f.Pause.UnpausedTimer = c.half("unpaused timer")
	} else if prev != nil {
		f.Pause = prev.Pause
		f.BlueTeamRestartRequest, f.OrangeTeamRestartRequest = prev.BlueTeamRestartRequest, prev.OrangeTeamRestartRequest
	}
	if bits(mask, 3) {
		d.readInputs(c, f)
	} else {
		d.copyInputs(f)
	}
	if bits(mask, 4) {
		f.LastScore = d.readLastScore(c)
	} else if prev != nil {
		f.LastScore = prev.LastScore
	}
	if bits(mask, 5) {
		f.LastThrow = d.readLastThrow(c)
	} else if prev != nil {
		f.LastThrow = prev.LastThrow
	}
	if bits(mask, 6) {
		f.Player = d.readVRPlayer(c)
	} else if prev != nil {
		f.Player = prev.Player
	}
	if bits(mask, 7) {
		f.Disc = d.readDisc(c)
	} else if prev != nil {
		f.Disc = prev.Disc
	}
	d.teams(c, f, key, d.h.Version)
	d.readBones(c, f, key)
	return f
}

func (d *decoder) teams(c *cursor, f *Frame, key bool, version int) {
	prev := d.prev
	tm := c.u8("team bitmask")
	f.Teams = []*Team{{}, {}, {}}
	f.Teams[0].Possession, f.Teams[1].Possession = Bool(bits(tm, 0)), Bool(bits(tm, 1))
	for i := 0; i < 3 && c.err == nil; i++ {
		t := f.Teams[i]
		var pst *Stats
		if prev != nil {
			pst = prev.Teams[i].Stats
		}
		if bits(tm, uint(2+i)) {
			t.Stats = d.readStats(c)
			if !d.opts.Reference && !key && pst != nil {
				t.Stats = addStats(t.Stats, pst)
			}
		} else if pst != nil {
			t.Stats = pst
		} else {
			t.Stats = &Stats{}
		}
		n := int(c.u8("team player count"))
		t.Players = make([]*Player, 0, n)
		for j := 0; j < n && c.err == nil; j++ {
			t.Players = append(t.Players, d.readPlayer(c, f, version))
		}
	}
}

func (d *decoder) readPlayer(c *cursor, f *Frame, version int) *Player {
	hp := d.player(c.u8("player index"))
	p := &Player{Name: hp.Name, PlayerID: int(c.u8("playerid")), Level: hp.Level, Number: hp.Number, UserID: hp.UserID}
	old := d.prev.playerByUserID(p.UserID)
	fl := floats(make([]float32, 0, 54)) // velocity, 4 positions, 4×3 directions
	m := c.u8("player state bitmask")
	p.Possession, p.Blocking, p.Stunned, p.Invulnerable = Bool(bits(m, 0)), Bool(bits(m, 1)), Bool(bits(m, 2)), Bool(bits(m, 3))
	statsBit, pingBit, holdBit, velBit := uint(5), uint(6), uint(6), uint(7)
	if version < 3 {
		statsBit, pingBit, holdBit = 4, 5, 6
	} else {
		p.IsEmotePlaying = Bool(bits(m, 4))
	}
	if bits(m, statsBit) {
		p.Stats = d.readStats(c)
		if old != nil && old.Stats != nil {
			p.Stats = addStats(p.Stats, old.Stats)
		}
	} else if old != nil {
		p.Stats = old.Stats
	}
	if bits(m, pingBit) {
		var dp int
		if version == 1 {
			dp = int(c.u16("ping delta"))
		} else {
			dp = int(int16(c.u16("ping delta")))
		}
		p.Ping = dp
		p.PacketLossRatio = c.half("packet loss delta")
		if old != nil {
			p.Ping += old.Ping
			p.PacketLossRatio += old.PacketLossRatio
		}
	} else if old != nil {
		p.Ping, p.PacketLossRatio = old.Ping, old.PacketLossRatio
	}
	readHolding := (version == 3 && f.inArena()) || (version == 2 && !f.inCombat()) || version == 1
	if readHolding {
		if bits(m, holdBit) {
			p.HoldingLeft = holdingName(c.u8("holding left"))
			p.HoldingRight = holdingName(c.u8("holding right"))
		} else if old != nil {
			p.HoldingLeft, p.HoldingRight = old.HoldingLeft, old.HoldingRight
		}
	}
	if bits(m, velBit) {
		v := c.vec("player velocity")
		if old != nil {
			v = v.add(vecOf(old.Velocity))
		}
		p.Velocity = fl.vec(v)
	} else if old != nil {
		p.Velocity = old.Velocity
	} else {
		p.Velocity = fl.vec(vec3{})
	}
	pm := c.u8("pose bitmask")
	var olds [4]*Transform
	if old != nil {
		olds = [4]*Transform{old.Head, old.Body, old.LHand, old.RHand}
	}
	ts := new([4]Transform)
	var parts [4]*Transform
	lastStored := d.last.poses[p.UserID]
	curStored := new([4]vec3)
	for k := 0; k < 4; k++ {
		t := &ts[k]
		var pos []float32
		if bits(pm, uint(2*k)) {
			v := c.vec("pose position")
			curStored[k] = v
			if olds[k] != nil {
				v = v.add(olds[k].position())
			}
			pos = fl.vec(v)
		} else if olds[k] != nil {
			pos = olds[k].Position
			if k >= 2 {
				pos = olds[k].Pos
			}
			if lastStored != nil && !d.opts.Reference {
				curStored[k] = lastStored[k]
				pos = fl.vec(olds[k].position().add(lastStored[k]))
			}
		} else {
			pos = fl.vec(vec3{})
		}
		if k < 2 {
			t.Position = pos
		} else {
			t.Pos = pos
		}
		if bits(pm, uint(2*k+1)) {
			q := readSmallestThree(c.u32("pose rotation"))
			t.Forward, t.Left, t.Up = fl.vec(q.forward()), fl.vec(q.left()), fl.vec(q.up())
		} else if olds[k] != nil {
			t.Forward, t.Left, t.Up = olds[k].Forward, olds[k].Left, olds[k].Up
		} else {
			q := quatIdentity
			t.Forward, t.Left, t.Up = fl.vec(q.forward()), fl.vec(q.left()), fl.vec(q.up())
		}
		parts[k] = t
	}
	p.Head, p.Body, p.LHand, p.RHand = parts[0], parts[1], parts[2], parts[3]
	if _, dup := d.cur.poses[p.UserID]; !dup {
		d.cur.poses[p.UserID] = curStored
	}
	if f.inCombat() && version >= 2 {
		lo := c.u8("loadout byte")
		p.Weapon = strPtr(weapons[lo&3])
		p.Ordnance = strPtr(ordnances[lo>>2&3])
		p.TacMod = strPtr(tacMods[lo>>4&3])
		p.Arm = strPtr(arms[lo>>6&1])
	}
	return p
}

// floats hands out 3-float slices from one backing array, so a player's
// vectors cost one allocation instead of one each.
type floats []float32

func (fs *floats) vec(v vec3) []float32 {
	if cap(*fs)-len(*fs) < 3 {
		*fs = make([]float32, 0, 54)
	}
	n := len(*fs)
	*fs = append(*fs, v.X, v.Y, v.Z)
	return (*fs)[n : n+3 : n+3]
}

// readFixed is ReadFixedPrecisionFloat(-2, 2, 14) of a zig-zag varint.
func readFixed(c *cursor) float32 {
	u := c.varUint()
	i := int64(u>>1) ^ -int64(u&1)
	v := float64(i)
	v += 8192
	v /= 16384
	v *= 4
	v += -2
	return float32(v)
}

func (c *cursor) varUint() uint64 {
	a0 := c.u8("varint")
	if a0 < 241 {
		return uint64(a0)
	}
	a1 := c.u8("varint")
	if a0 <= 248 {
		return 240 + uint64(a0-241)<<8 + uint64(a1)
	}
	a2 := c.u8("varint")
	if a0 == 249 {
		return 2288 + uint64(a1)<<8 + uint64(a2)
	}
	n := int(a0-250) + 3
	v := uint64(a1) | uint64(a2)<<8
	for i := 2; i < n; i++ {
		v |= uint64(c.u8("varint")) << (8 * uint(i))
	}
	return v
}

func (d *decoder) readBones(c *cursor, f *Frame, key bool) {
	hb := c.u8("bone header byte")
	if c.err != nil {
		return
	}
	if key && d.opts.Reference {
		d.bones = nil
	}
	if hb&1 == 0 {
		d.bones = nil
		return
	}
	n := int(hb >> 1)
	last := d.bones
	if last != nil && len(last.UserBones) != n {
		last = nil
	}
	bones := &Bones{UserBones: make([]BonePlayer, n)}
	for pi := 0; pi < n && c.err == nil; pi++ {
		bp := BonePlayer{BoneT: make([]float32, 3*numBones), BoneO: make([]float32, 4*numBones)}
		masks := c.bytes(6, "bone masks")
		if masks == nil {
			return
		}
		var lbp *BonePlayer
		if last != nil {
			lbp = &last.UserBones[pi]
		}
		for i := 0; i < numBones; i++ {
			lp, lq := vec3{}, quatIdentity
			if lbp != nil {
				lp, lq = bonePose(lbp, i)
			}
			p := lp
			if masks[i/8]&(1<<uint(i%8)) != 0 {
				x := readFixed(c)
				y := readFixed(c)
				z := readFixed(c)
				p = lp.add(vec3{x, y, z})
			}
			bp.BoneT[3*i], bp.BoneT[3*i+1], bp.BoneT[3*i+2] = p.X, p.Y, p.Z
			_ = lq
		}
		for i := 0; i < numBones; i++ {
			lq := quatIdentity
			if lbp != nil {
				_, lq = bonePose(lbp, i)
			}
			q := lq
			if masks[3+i/8]&(1<<uint(i%8)) != 0 {
				q = readSmallestThree(c.u32("bone rotation")).mul(lq)
			}
			bp.BoneO[4*i], bp.BoneO[4*i+1], bp.BoneO[4*i+2], bp.BoneO[4*i+3] = q.X, q.Y, q.Z, q.W
		}
		bones.UserBones[pi] = bp
	}
	f.Bones = bones
	d.bones = bones
}

// bonesResume serialises the bone state carried into the next chunk:
// u8 player count, then 23×(3+4) float32 per player.
func bonesResume(b *Bones) []byte {
	if b == nil {
		return nil
	}
	out := []byte{byte(len(b.UserBones))}
	for _, bp := range b.UserBones {
		for i := 0; i < numBones; i++ {
			p, q := bonePose(&bp, i)
			for _, v := range [...]float32{p.X, p.Y, p.Z, q.X, q.Y, q.Z, q.W} {
				out = binary.LittleEndian.AppendUint32(out, math.Float32bits(v))
			}
		}
	}
	return out
}

func bonesFromResume(r []byte) (*Bones, error) {
	if len(r) == 0 {
		return nil, nil
	}
	n := int(r[0])
	if len(r) != 1+n*numBones*7*4 {
		return nil, fmt.Errorf("butter: resume state of %d bytes does not hold %d bone players", len(r), n)
	}
	b := &Bones{UserBones: make([]BonePlayer, n)}
	off := 1
	for pi := range b.UserBones {
		bp := BonePlayer{BoneT: make([]float32, 3*numBones), BoneO: make([]float32, 4*numBones)}
		for i := 0; i < numBones; i++ {
			var v [7]float32
			for k := range v {
				v[k] = math.Float32frombits(binary.LittleEndian.Uint32(r[off:]))
				off += 4
			}
			copy(bp.BoneT[3*i:], v[:3])
			copy(bp.BoneO[4*i:], v[3:])
		}
		b.UserBones[pi] = bp
	}
	return b, nil
}
