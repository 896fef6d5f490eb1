// This file encodes one frame (ButterFrame.GetBytes of the reference v3
// writer): marker, time, clock, the inclusion bitmask and its sections,
// team and player data, and the bone block.

package butter

import (
	"encoding/binary"
	"math"
	"strconv"
	"strings"
)

func appendHalf(b []byte, f float32) []byte {
	return binary.LittleEndian.AppendUint16(b, toHalf(f))
}

func appendHalves(b []byte, v vec3) []byte {
	return appendHalf(appendHalf(appendHalf(b, v.X), v.Y), v.Z)
}

func appendPose(b []byte, pos vec3, rot quat) []byte {
	b = appendHalves(b, pos)
	return binary.LittleEndian.AppendUint32(b, smallestThree(rot))
}

// dotnetByte is C#'s (byte) cast of a float.
func dotnetByte(f float32) byte { return byte(dotnetToInt32(float64(f))) }

func boolBit(b Bool, bit uint) byte {
	if b {
		return 1 << bit
	}
	return 0
}

func strEq(a, b *string) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

func sameBytes(a, b []byte) bool {
	if a == nil || b == nil {
		return false
	}
	return string(a) == string(b)
}

// gameStatusByte encodes a status for butter (gameStatuses); an unknown
// or missing one is 0.
func gameStatusByte(s *string) byte {
	if s == nil {
		return 0
	}
	for i := 1; i < len(gameStatuses); i++ {
		if gameStatuses[i] == *s {
			return byte(i)
		}
	}
	return 0
}

// teamIndex is TeamToTeamIndex; unknown strings (the reference throws) are
// written as 3, "none".
func teamIndex(s string) byte {
	switch s {
	case "blue":
		return 0
	case "orange":
		return 1
	case "spectator":
		return 2
	}
	return 3
}

var pausedStates = []string{"unpaused", "paused", "unpausing", "pausing", "none"}

func pausedStateByte(s string) byte {
	for i, n := range pausedStates {
		if n == s {
			return byte(i)
		}
	}
	return 5
}

var goalTypes = []string{"unknown", "BOUNCE_SHOT", "INSIDE_SHOT", "LONG_BOUNCE_SHOT", "LONG_SHOT", "SELF_GOAL", "SLAM_DUNK", "BUMPER_SHOT", "HEADBUTT"}

// goalTypeByte is Enum.TryParse on the goal type with spaces as
// underscores: a name, or a number, else 0.
func goalTypeByte(s string) byte {
	s = strings.ReplaceAll(s, " ", "_")
	for i, n := range goalTypes {
		if n == s {
			return byte(i)
		}
	}
	if n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64); err == nil {
		return byte(n)
	}
	return 0
}

// holdingByte is HoldingToByte; a non-numeric holder (the reference
// throws) is written as 255, "none".
func holdingByte(s *string) byte {
	if s == nil {
		return 252
	}
	switch *s {
	case "none":
		return 255
	case "geo":
		return 254
	case "disc":
		return 253
	}
	n, err := strconv.ParseUint(strings.TrimSpace(*s), 10, 8)
	if err != nil {
		return 255
	}
	return byte(n)
}

var weapons = []string{"rocket", "blaster", "scout", "assault"}
var ordnances = []string{"stun", "det", "burst", "arc"}
var tacMods = []string{"sensor", "wraith", "heal", "shield"}
var arms = []string{"Left", "Right"}

func enumIndex(names []string, s *string) byte {
	if s == nil {
		return 0
	}
	for i, n := range names {
		if n == *s {
			return byte(i)
		}
	}
	return 0
}

// statsBytes is StatsBytes(stats, last): ten byte deltas, a half
// possession-time delta and a clamped u16 stuns delta; nil stats give an
// empty slice.
func statsBytes(b []byte, s, last *Stats) []byte {
	if s == nil {
		return b
	}
	var l Stats
	if last != nil {
		l = *last
	}
	b = append(b,
		byte(s.Assists-l.Assists), byte(s.Blocks-l.Blocks), byte(s.Catches-l.Catches),
		byte(s.Goals-l.Goals), byte(s.Interceptions-l.Interceptions), byte(s.Passes-l.Passes),
		byte(s.Points-l.Points), byte(s.Saves-l.Saves), byte(s.Steals-l.Steals),
		byte(s.ShotsTaken-l.ShotsTaken))
	b = appendHalf(b, s.PossessionTime-l.PossessionTime)
	st := s.Stuns - l.Stuns
	st = max(0, min(st, math.MaxUint16))
	return binary.LittleEndian.AppendUint16(b, uint16(st))
}

func sameStats(a, b *Stats) bool {
	var x, y [14]byte
	return string(statsBytes(x[:0], a, nil)) == string(statsBytes(y[:0], b, nil))
}

func (e *encFrame) computeSections(w *Writer) {
	f := e.f
	p := e.prevInChunk
	var pf *Frame
	if p != nil {
		pf = p.f
	}
	// inputs
	e.input = boolBit(f.LeftShoulderPressed, 0) | boolBit(f.RightShoulderPressed, 1) |
		boolBit(f.LeftShoulderPressed2, 2) | boolBit(f.RightShoulderPressed2, 3)

	// pause and restarts
	pause := f.Pause
	if pause == nil {
		pause = &Pause{}
	}
	flags := boolBit(f.BlueTeamRestartRequest, 0) | boolBit(f.OrangeTeamRestartRequest, 1) |
		teamIndex(pause.PausedRequestedTeam)<<2 | teamIndex(pause.UnpausedTeam)<<4
	e.pause = append(e.buf.pause[:0], flags, pausedStateByte(pause.PausedState))
	var pt, ut float32
	if pf != nil {
		pp := pf.Pause
		if pp == nil {
			pp = &Pause{}
		}
		pt, ut = pause.PausedTimer-pp.PausedTimer, pause.UnpausedTimer-pp.UnpausedTimer
	}
	e.pause = appendHalf(appendHalf(e.pause, pt), ut)

	// last score (Arena)
	e.lastScore, e.disc, e.combat, e.rules = nil, nil, nil, nil
	if f.inArena() {
		ls := f.LastScore
		if ls == nil {
			ls = &LastScore{}
		}
		b := teamIndex(ls.Team)
		if ls.PointAmount != 2 {
			b |= 1 << 2
		}
		b |= goalTypeByte(ls.GoalType) << 3
		e.lastScore = append(e.buf.lastScore[:0], b, w.table.index(ls.PersonScored), w.table.index(ls.AssistScored))
		e.lastScore = appendHalf(appendHalf(e.lastScore, ls.DiscSpeed), ls.DistanceThrown)
	}

	// last throw
	lt := f.LastThrow
	if lt == nil {
		lt = &LastThrow{}
	}
	e.lastThrow = e.buf.lastThrow[:0]
	for _, v := range [...]float32{lt.ArmSpeed, lt.TotalSpeed, lt.OffAxisSpinDeg, lt.WristThrowPenalty,
		lt.RotPerSec, lt.PotSpeedFromRot, lt.SpeedFromArm, lt.SpeedFromMovement, lt.SpeedFromWrist,
		lt.WristAlignToThrowDeg, lt.ThrowAlignToMovementDeg, lt.OffAxisPenalty, lt.ThrowMovePenalty} {
		e.lastThrow = appendHalf(e.lastThrow, v)
	}

	// VR player
	vp := f.Player
	if vp == nil {
		vp = &VRPlayer{}
	}
	pos := vecOf(vp.VRPosition)
	if pf != nil && pf.Player != nil {
		pos = pos.sub(vecOf(pf.Player.VRPosition))
	}
	e.vr = appendPose(e.buf.vr[:0], pos, lookRotation(vecOf(vp.VRForward), vecOf(vp.VRUp)))

	// disc (Arena)
	if f.inArena() {
		d := f.Disc
		if d == nil {
			d = &Disc{}
		}
		dp, dv := vecOf(d.Position), vecOf(d.Velocity)
		if pf != nil && pf.Disc != nil {
			dp = dp.sub(vecOf(pf.Disc.Position))
			dv = dv.sub(vecOf(pf.Disc.Velocity))
		}
		e.disc = appendPose(e.buf.disc[:0], dp, lookRotation(vecOf(d.Forward), vecOf(d.Up)))
		e.disc = appendHalves(e.disc, dv)
	}

	// Combat payload
	if f.inCombat() {
		c := byte(0)
		if f.Contested {
			c = 1
		}
		e.combat = append(e.buf.combat[:0], c, byte(f.PayloadCheckpoint), byte(f.PayloadDefenders))
		e.combat = appendHalf(appendHalf(e.combat, f.PayloadDistance), f.PayloadSpeed)
	}

	// rules changed (private Arena)
	if f.inArena() && bool(f.PrivateMatch) {
		e.rules = binary.LittleEndian.AppendUint64(e.buf.rules[:0], uint64(f.RulesChangedAt))
		if f.RulesChangedBy != nil {
			e.rules = appendASCII(e.rules, *f.RulesChangedBy)
		}
		e.rules = append(e.rules, 0)
		e.buf.rules = e.rules
	}
}

func (w *Writer) encodeFrame(b []byte, e *encFrame, lastBones *Bones) ([]byte, error) {
	f := e.f
	p := e.prevInChunk
	key := p == nil
	var pf *Frame
	if !key {
		pf = p.f
	}
	if key {
		b = binary.LittleEndian.AppendUint16(b, markerKeyframe)
		ticks := f.RecordedTime.UnixNano() / 100 // .NET ticks since the epoch
		ms := float64(ticks) * 0.0001
		b = binary.LittleEndian.AppendUint64(b, uint64(int64(ms)))
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(f.GameClock))
	} else {
		b = binary.LittleEndian.AppendUint16(b, markerDelta)
		ticks := f.RecordedTime.Sub(pf.RecordedTime).Nanoseconds() / 100
		b = binary.LittleEndian.AppendUint16(b, dotnetToUint16(float64(ticks)*0.0001))
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(f.GameClock-pf.GameClock))
	}
	e.computeSections(w)

	var incl [8]bool
	if key {
		incl[0] = true
	} else {
		incl[0] = !strEq(f.GameStatus, pf.GameStatus) ||
			math.Abs(float64(f.BluePoints-pf.BluePoints)) > .01 ||
			math.Abs(float64(f.OrangePoints-pf.OrangePoints)) > .01 ||
			e.input != p.input
	}
	incl[1] = key || !sameBytes(e.pause, p.pause)
	incl[2] = e.lastScore != nil && (key || !sameBytes(e.lastScore, p.lastScore))
	incl[3] = key || !sameBytes(e.lastThrow, p.lastThrow)
	incl[4] = key || !sameBytes(e.vr, p.vr)
	incl[5] = e.disc != nil && (key || !sameBytes(e.disc, p.disc))
	incl[6] = e.combat != nil && (key || !sameBytes(e.combat, p.combat))
	incl[7] = e.rules != nil && (key || !sameBytes(e.rules, p.rules))
	var mask byte
	for i, v := range incl {
		if v {
			mask |= 1 << uint(i)
		}
	}
	b = append(b, mask)
	if incl[0] {
		b = append(b, gameStatusByte(f.GameStatus))
		switch {
		case f.inArena():
			b = append(b, dotnetByte(f.BluePoints), dotnetByte(f.OrangePoints))
		case f.inCombat():
			b = appendHalf(appendHalf(b, f.BluePoints), f.OrangePoints)
		}
		b = append(b, e.input)
	}
	if incl[1] {
		b = append(b, e.pause...)
	}
	if incl[2] {
		b = append(b, e.lastScore...)
	}
	if incl[3] {
		b = append(b, e.lastThrow...)
	}
	if incl[4] {
		b = append(b, e.vr...)
	}
	if incl[5] {
		b = append(b, e.disc...)
	}
	if incl[6] {
		b = append(b, e.combat...)
	}
	if incl[7] {
		b = append(b, e.rules...)
	}

	// team data
	var teamMask byte
	var tstats [3]bool
	for i := 0; i < 3; i++ {
		t := f.team(i)
		if t == nil {
			continue
		}
		if i < 2 && t.Possession {
			teamMask |= 1 << uint(i)
		}
		var pst *Stats
		if pf != nil {
			if pt := pf.team(i); pt != nil {
				pst = pt.Stats
			}
		}
		if t.Stats != nil && !sameStats(t.Stats, pst) {
			tstats[i] = true
			teamMask |= 1 << uint(2+i)
		}
	}
	b = append(b, teamMask)
	e.poses = e.poses[:0]
	for i := 0; i < 3; i++ {
		t := f.team(i)
		if tstats[i] {
			var pst *Stats
			if pf != nil {
				if pt := pf.team(i); pt != nil {
					pst = pt.Stats
				}
			}
			b = statsBytes(b, t.Stats, pst)
		}
		if t == nil {
			b = append(b, 0)
			continue
		}
		b = append(b, byte(len(t.Players)))
		for _, pl := range t.Players {
			b = w.encodePlayer(b, e, pl, pf)
		}
	}
	return encodeBones(b, f.Bones, lastBones), nil
}

func (w *Writer) encodePlayer(b []byte, e *encFrame, pl *Player, pf *Frame) []byte {
	f := e.f
	b = append(b, w.table.index(pl.Name), byte(pl.PlayerID))
	lp := pf.playerByUserID(pl.UserID)
	vel := vecOf(pl.Velocity)
	if lp != nil {
		vel = vel.sub(vecOf(lp.Velocity))
	}
	var st [8]bool
	st[0], st[1], st[2], st[3], st[4] = bool(pl.Possession), bool(pl.Blocking), bool(pl.Stunned), bool(pl.Invulnerable), bool(pl.IsEmotePlaying)
	var lstats *Stats
	if lp != nil {
		lstats = lp.Stats
	}
	st[5] = !sameStats(pl.Stats, lstats)
	st[6] = lp == nil || !(pl.Ping == lp.Ping &&
		math.Abs(float64(pl.PacketLossRatio-lp.PacketLossRatio)) < 1.401298e-45 &&
		strEq(pl.HoldingLeft, lp.HoldingLeft) && strEq(pl.HoldingRight, lp.HoldingRight))
	st[7] = vel.lengthSquared() > float32(.0001)
	var sm byte
	for i, v := range st {
		if v {
			sm |= 1 << uint(i)
		}
	}
	b = append(b, sm)
	if st[5] {
		b = statsBytes(b, pl.Stats, lstats)
	}
	if st[6] {
		var lping int
		var lloss float32
		if lp != nil {
			lping, lloss = lp.Ping, lp.PacketLossRatio
		}
		b = binary.LittleEndian.AppendUint16(b, uint16(int16(pl.Ping-lping)))
		b = appendHalf(b, pl.PacketLossRatio-lloss)
		if f.inArena() {
			b = append(b, holdingByte(pl.HoldingLeft), holdingByte(pl.HoldingRight))
		}
	}
	if st[7] {
		b = appendHalves(b, vel)
	}

	var last *[4][10]byte
	if lp != nil && e.prevInChunk != nil {
		last = e.prevInChunk.posesOf(lp.UserID)
	}
	var curArr [4][10]byte
	cur := &curArr
	var pm byte
	parts := [4]*Transform{pl.Head, pl.Body, pl.LHand, pl.RHand}
	var empty Transform
	for k, tr := range parts {
		if tr == nil {
			tr = &empty
		}
		pos := tr.position()
		if lp != nil {
			if lt := [4]*Transform{lp.Head, lp.Body, lp.LHand, lp.RHand}[k]; lt != nil {
				pos = pos.sub(lt.position())
			}
		}
		appendPose(cur[k][:0], pos, tr.rotation())
		if last == nil || cur[k] != last[k] {
			pm |= 1 << uint(2*k)
		}
		if last == nil || string(cur[k][6:]) != string(last[k][6:]) {
			pm |= 1 << uint(2*k+1)
		}
	}
	if e.posesOf(pl.UserID) == nil {
		e.poses = append(e.poses, poseEntry{pl.UserID, curArr})
	}
	b = append(b, pm)
	for k := 0; k < 4; k++ {
		if pm&(1<<uint(2*k)) != 0 {
			b = append(b, cur[k][:6]...)
		}
		if pm&(1<<uint(2*k+1)) != 0 {
			b = append(b, cur[k][6:]...)
		}
	}
	if f.inCombat() {
		b = append(b, enumIndex(weapons, pl.Weapon)|enumIndex(ordnances, pl.Ordnance)<<2|
			enumIndex(tacMods, pl.TacMod)<<4|enumIndex(arms, pl.Arm)<<6)
	}
	return b
}

// bonePose returns bone i's position and rotation (zero when missing).
func bonePose(bp *BonePlayer, i int) (vec3, quat) {
	var p vec3
	var q quat
	if len(bp.BoneT) >= 3*i+3 {
		p = vec3{bp.BoneT[3*i], bp.BoneT[3*i+1], bp.BoneT[3*i+2]}
	}
	if len(bp.BoneO) >= 4*i+4 {
		q = quat{bp.BoneO[4*i], bp.BoneO[4*i+1], bp.BoneO[4*i+2], bp.BoneO[4*i+3]}
	}
	return p, q
}

const numBones = 23

func encodeBones(b []byte, bones, last *Bones) []byte {
	if bones == nil || bones.UserBones == nil {
		return append(b, 0)
	}
	n := len(bones.UserBones)
	b = append(b, 1|byte(uint16(n)<<1))
	if last != nil && len(last.UserBones) != n {
		last = nil
	}
	var rot []byte
	for pi := range bones.UserBones {
		bp := &bones.UserBones[pi]
		var lbp *BonePlayer
		if last != nil {
			lbp = &last.UserBones[pi]
		}
		maskAt := len(b)
		b = append(b, 0, 0, 0, 0, 0, 0)
		rot = rot[:0]
		for i := 0; i < numBones; i++ {
			p, q := bonePose(bp, i)
			lp, lq := vec3{}, quatIdentity
			if lbp != nil {
				lp, lq = bonePose(lbp, i)
			}
			d := p.sub(lp)
			if d.length() > float32(.001) {
				b[maskAt+i/8] |= 1 << uint(i%8)
				b = appendFixed(b, d.X)
				b = appendFixed(b, d.Y)
				b = appendFixed(b, d.Z)
			}
			if angleDeg(q, lq) > 1 {
				b[maskAt+3+i/8] |= 1 << uint(i%8)
				rot = binary.LittleEndian.AppendUint32(rot, smallestThree(q.mul(lq.inverse())))
			}
		}
		b = append(b, rot...)
	}
	return b
}

// appendFixed is GetFixedPrecisionBytes(min -2, max 2, 14 bits) of one
// value: a zig-zag varint of trunc((v+2)/4·2¹⁴ − 2¹³), clamped.
func appendFixed(b []byte, v float32) []byte {
	f := float64(v - (-2))
	f /= 4
	f *= 16384
	f -= 8192
	f = max(-8192, min(f, 8191))
	i := int64(f)
	return appendVarUint(b, uint64((i>>63)^(i<<1)))
}

// appendVarUint is Mirror's WriteVarUInt.
func appendVarUint(b []byte, v uint64) []byte {
	switch {
	case v <= 240:
		return append(b, byte(v))
	case v <= 2287:
		return append(b, byte((v-240)>>8+241), byte((v-240)&0xFF))
	case v <= 67823:
		return append(b, 249, byte((v-2288)>>8), byte((v-2288)&0xFF))
	}
	n := 3
	for n < 8 && v>>(8*uint(n)) != 0 {
		n++
	}
	b = append(b, byte(250+n-3))
	for i := 0; i < n; i++ {
		b = append(b, byte(v>>(8*uint(i))))
	}
	return b
}
