// This file defines the replay events (ids 0-14 of the reference registry:
// the Minestom built-ins and the parkour host's additions) and their payload
// encodings: positions, Minecraft's packed "LpVec3" velocities, the LP_POS
// delta encoding and packed block positions.

package hcrp

import (
	"encoding/binary"
	"fmt"
	"math"
)

// EventType is an event id. Ids are positional in the reference registry and
// not stored in the file.
type EventType uint8

// The events of the reference registry, in id order.
const (
	DeltaMove         EventType = iota // entity, LP_POS delta (absolute yaw/pitch), velocity
	AbsoluteMove                       // entity, position, velocity
	EntityState                        // entity, pose, state flags
	HandAnimation                      // entity, hand
	ItemUse                            // entity, optional hand
	SetItem                            // entity, slot → item NBT
	ChangeHeldSlot                     // entity, slot
	SetBlock                           // block position, block state
	SpawnEntity                        // entity, entity type, position
	DestroyEntity                      // entity
	RunStart                           // (none)
	CheckpointReached                  // checkpoint id, run time
	CheckpointReset                    // reason, run time
	RunEnd                             // reason, run time
	ClearGhostBlocks                   // (none)
	numEventTypes
)

var eventNames = [numEventTypes]string{
	"delta_move", "absolute_move", "entity_state", "hand_animation", "item_use",
	"set_item", "change_held_slot", "set_block", "spawn_entity", "destroy_entity",
	"run_start", "checkpoint_reached", "checkpoint_reset", "run_end", "clear_ghost_blocks",
}

// String returns the event's snake_case name ("delta_move").
func (t EventType) String() string {
	if t < numEventTypes {
		return eventNames[t]
	}
	return fmt.Sprintf("event_%d", uint8(t))
}

// Enum names, in ordinal order, of the reference implementation's enums
// (EntityPose, PlayerHand, the parkour reset and end reasons).
var (
	poseNames = [...]string{"standing", "fall_flying", "sleeping", "swimming", "spin_attack", "sneaking",
		"long_jumping", "dying", "croaking", "using_tongue", "sitting", "roaring", "sniffing", "emerging",
		"digging", "sliding", "shooting", "inhaling"}
	handNames        = [...]string{"main", "off"}
	resetReasonNames = [...]string{"lives", "reset_height", "timer", "manual", "forced", "liquid", "sneak",
		"turn", "sprint", "relog"}
	endReasonNames = [...]string{"finish", "reset"}
)

// Pose is an EntityPose ordinal of the reference (EntityState events).
type Pose int32

// String names the pose ("sneaking"); unknown ordinals are given as
// numbers, as by the other enums' String.
func (v Pose) String() string { return enumName(poseNames[:], int32(v)) }

// Hand is a PlayerHand ordinal of the reference (HandAnimation, ItemUse).
type Hand int32

// String names the hand ("main", "off").
func (v Hand) String() string { return enumName(handNames[:], int32(v)) }

// ResetReason is why a parkour run went back to its checkpoint
// (CheckpointReset).
type ResetReason int32

// String names the reason ("reset_height").
func (v ResetReason) String() string { return enumName(resetReasonNames[:], int32(v)) }

// EndReason is how a parkour run ended (RunEnd).
type EndReason int32

// The run end reasons.
const (
	EndFinish EndReason = iota // the runner reached the finish
	EndReset                   // the run was reset
)

// String names the reason ("finish", "reset").
func (v EndReason) String() string { return enumName(endReasonNames[:], int32(v)) }

// Entity state flags of EntityState events.
const (
	StateOnFire    = 0x01
	StateSneaking  = 0x02
	StateRiptide   = 0x04
	StateSprinting = 0x08
	StateSwimming  = 0x10
	StateInvisible = 0x20
	StateGlowing   = 0x40
	StateElytra    = 0x80
)

// Vec3 is a vector of doubles.
type Vec3 struct{ X, Y, Z float64 }

// Pos is a position with a view direction, in degrees.
type Pos struct {
	X, Y, Z    float64
	Yaw, Pitch float32
}

// BlockPos is a block position (x and z in 26 bits, y in 12 bits when packed).
type BlockPos struct{ X, Y, Z int32 }

// ItemSlot is one inventory slot of a SetItem event. NBT is the item as
// network NBT (tag type 0x0A then the compound payload).
type ItemSlot struct {
	Slot int32
	NBT  []byte
}

// Event is one replay event. It is a flat value so a recorder can pass it
// without allocating; only the fields of its Type are meaningful.
type Event struct {
	Type   EventType
	Entity int32 // replay-local entity id (0 is the recorded player)
	// Pos: absolute position (AbsoluteMove, SpawnEntity) or, for DeltaMove,
	// the position delta with absolute yaw and pitch.
	Pos        Pos
	Velocity   Vec3  // DeltaMove, AbsoluteMove
	Pose       Pose  // EntityState
	State      uint8 // EntityState: State* flags
	Hand       Hand  // HandAnimation, ItemUse
	HasHand    bool  // ItemUse: whether Hand is present
	Slot       int32 // ChangeHeldSlot
	Items      []ItemSlot
	Block      BlockPos    // SetBlock
	BlockState int32       // SetBlock: global block state id
	EntityType int32       // SpawnEntity: entity type registry id
	Checkpoint string      // CheckpointReached
	Reset      ResetReason // CheckpointReset
	End        EndReason   // RunEnd
	RunTime    int64       // CheckpointReached, CheckpointReset, RunEnd: milliseconds
}

// AppendEvent appends the event id and payload of e to b.
func AppendEvent(b []byte, e *Event) ([]byte, error) {
	if e.Type >= numEventTypes {
		return b, fmt.Errorf("hcrp: unknown event type %d", e.Type)
	}
	b = AppendVarInt(b, int32(e.Type))
	switch e.Type {
	case DeltaMove:
		b = AppendVarInt(b, e.Entity)
		b = appendLpPos(b, e.Pos)
		b = appendLpVec3(b, e.Velocity)
	case AbsoluteMove:
		b = AppendVarInt(b, e.Entity)
		b = appendPos(b, e.Pos)
		b = appendLpVec3(b, e.Velocity)
	case EntityState:
		b = AppendVarInt(b, e.Entity)
		b = AppendVarInt(b, int32(e.Pose))
		b = append(b, e.State)
	case HandAnimation:
		b = AppendVarInt(b, e.Entity)
		b = AppendVarInt(b, int32(e.Hand))
	case ItemUse:
		b = AppendVarInt(b, e.Entity)
		if e.HasHand {
			b = append(b, 1)
			b = AppendVarInt(b, int32(e.Hand))
		} else {
			b = append(b, 0)
		}
	case SetItem:
		b = AppendVarInt(b, e.Entity)
		b = AppendVarInt(b, int32(len(e.Items)))
		for _, it := range e.Items {
			if len(it.NBT) < 2 || it.NBT[0] != tagCompound {
				return b, fmt.Errorf("hcrp: set_item slot %d: item is not a network NBT compound", it.Slot)
			}
			if end, err := skipPayload(it.NBT, 1, tagCompound, 0); err != nil || end != len(it.NBT) {
				return b, fmt.Errorf("hcrp: set_item slot %d: item is not one well-formed NBT compound", it.Slot)
			}
			b = AppendVarInt(b, it.Slot)
			b = append(b, it.NBT...)
		}
	case ChangeHeldSlot:
		b = AppendVarInt(b, e.Entity)
		b = AppendVarInt(b, e.Slot)
	case SetBlock:
		b = binary.BigEndian.AppendUint64(b, uint64(packBlockPos(e.Block)))
		b = AppendVarInt(b, e.BlockState)
	case SpawnEntity:
		b = AppendVarInt(b, e.Entity)
		b = AppendVarInt(b, e.EntityType)
		b = appendPos(b, e.Pos)
	case DestroyEntity:
		b = AppendVarInt(b, e.Entity)
	case CheckpointReached:
		b = AppendVarInt(b, int32(len(e.Checkpoint)))
		b = append(b, e.Checkpoint...)
		b = AppendVarLong(b, e.RunTime)
	case CheckpointReset:
		b = AppendVarInt(b, int32(e.Reset))
		b = AppendVarLong(b, e.RunTime)
	case RunEnd:
		b = AppendVarInt(b, int32(e.End))
		b = AppendVarLong(b, e.RunTime)
	case RunStart, ClearGhostBlocks:
	}
	return b, nil
}

// decodeEvent decodes one event (id and payload) at b[p:] into e, returning
// the offset after it. e.Items is reused and its NBT slices alias b.
func decodeEvent(b []byte, p int, e *Event) (int, error) {
	id, p, err := readVarInt(b, p)
	if err != nil {
		return p, fmt.Errorf("event id: %w", err)
	}
	if id < 0 || id >= int32(numEventTypes) {
		return p, fmt.Errorf("unknown event id %d", id)
	}
	items := e.Items[:0]
	*e = Event{Type: EventType(id)}
	r := reader{b: b, p: p}
	switch e.Type {
	case DeltaMove:
		e.Entity = r.varInt()
		e.Pos = r.lpPos()
		e.Velocity = r.lpVec3()
	case AbsoluteMove:
		e.Entity = r.varInt()
		e.Pos = r.pos()
		e.Velocity = r.lpVec3()
	case EntityState:
		e.Entity = r.varInt()
		e.Pose = Pose(r.varInt())
		e.State = r.byte()
	case HandAnimation:
		e.Entity = r.varInt()
		e.Hand = Hand(r.varInt())
	case ItemUse:
		e.Entity = r.varInt()
		if e.HasHand = r.bool(); e.HasHand {
			e.Hand = Hand(r.varInt())
		}
	case SetItem:
		e.Entity = r.varInt()
		n := r.varInt()
		// Each slot takes at least 3 bytes (slot, tag type, end tag).
		if n < 0 || int(n) > (len(b)-r.p)/3 {
			return r.p, fmt.Errorf("set_item: %d slots do not fit in %d bytes", n, len(b)-r.p)
		}
		for i := int32(0); i < n && r.err == nil; i++ {
			slot := r.varInt()
			nb := r.nbtCompound()
			items = append(items, ItemSlot{Slot: slot, NBT: nb})
		}
	case ChangeHeldSlot:
		e.Entity = r.varInt()
		e.Slot = r.varInt()
	case SetBlock:
		e.Block = unpackBlockPos(int64(r.u64()))
		e.BlockState = r.varInt()
	case SpawnEntity:
		e.Entity = r.varInt()
		e.EntityType = r.varInt()
		e.Pos = r.pos()
	case DestroyEntity:
		e.Entity = r.varInt()
	case CheckpointReached:
		e.Checkpoint = r.str()
		e.RunTime = r.varLong()
	case CheckpointReset:
		e.Reset = ResetReason(r.varInt())
		e.RunTime = r.varLong()
	case RunEnd:
		e.End = EndReason(r.varInt())
		e.RunTime = r.varLong()
	case RunStart, ClearGhostBlocks:
	}
	e.Items = items
	if r.err != nil {
		return r.p, fmt.Errorf("%s payload: %w", e.Type, r.err)
	}
	return r.p, nil
}

// reader decodes primitives from b, remembering the first error.
type reader struct {
	b   []byte
	p   int
	err error
}

func (r *reader) need(n int) bool {
	if r.err != nil {
		return false
	}
	if n > len(r.b)-r.p {
		r.err = errShort
		return false
	}
	return true
}

func (r *reader) byte() byte {
	if !r.need(1) {
		return 0
	}
	r.p++
	return r.b[r.p-1]
}

func (r *reader) bool() bool {
	c := r.byte()
	if c > 1 && r.err == nil {
		r.err = fmt.Errorf("boolean byte %d", c)
	}
	return c == 1
}

func (r *reader) u32() uint32 {
	if !r.need(4) {
		return 0
	}
	r.p += 4
	return binary.BigEndian.Uint32(r.b[r.p-4:])
}

func (r *reader) u64() uint64 {
	if !r.need(8) {
		return 0
	}
	r.p += 8
	return binary.BigEndian.Uint64(r.b[r.p-8:])
}

func (r *reader) varInt() int32 {
	if r.err != nil {
		return 0
	}
	v, p, err := readVarInt(r.b, r.p)
	r.p, r.err = p, err
	return v
}

func (r *reader) varLong() int64 {
	if r.err != nil {
		return 0
	}
	v, p, err := readVarLong(r.b, r.p)
	r.p, r.err = p, err
	return v
}

func (r *reader) str() string {
	n := r.varInt()
	if r.err != nil {
		return ""
	}
	if n < 0 || !r.need(int(n)) {
		if r.err == nil {
			r.err = fmt.Errorf("string length %d", n)
		}
		return ""
	}
	r.p += int(n)
	return string(r.b[r.p-int(n) : r.p])
}

func (r *reader) pos() Pos {
	if !r.need(32) {
		return Pos{}
	}
	return Pos{
		X:     math.Float64frombits(r.u64()),
		Y:     math.Float64frombits(r.u64()),
		Z:     math.Float64frombits(r.u64()),
		Yaw:   math.Float32frombits(r.u32()),
		Pitch: math.Float32frombits(r.u32()),
	}
}

func (r *reader) lpPos() Pos {
	x, y, z := r.varLong(), r.varLong(), r.varLong()
	if !r.need(4) {
		return Pos{}
	}
	yaw := int16(binary.BigEndian.Uint16(r.b[r.p:]))
	pitch := int16(binary.BigEndian.Uint16(r.b[r.p+2:]))
	r.p += 4
	return Pos{
		X: float64(unzigzag(x)) / 4096, Y: float64(unzigzag(y)) / 4096, Z: float64(unzigzag(z)) / 4096,
		Yaw: float32(float64(yaw) * 360 / 65536), Pitch: float32(float64(pitch) * 360 / 65536),
	}
}

func (r *reader) lpVec3() Vec3 {
	lo := r.byte()
	if r.err != nil || lo == 0 {
		return Vec3{}
	}
	mid := r.byte()
	hi := r.u32()
	buf := uint64(hi)<<16 | uint64(mid)<<8 | uint64(lo)
	scale := uint64(lo & 3)
	if lo&4 != 0 {
		scale |= uint64(uint32(r.varInt())) << 2
	}
	s := float64(scale)
	return Vec3{unpackLp(buf>>3) * s, unpackLp(buf>>18) * s, unpackLp(buf>>33) * s}
}

// nbtCompound returns the network NBT compound (type byte included) at the
// read position.
func (r *reader) nbtCompound() []byte {
	if !r.need(1) {
		return nil
	}
	if r.b[r.p] != tagCompound {
		r.err = fmt.Errorf("expected NBT compound tag, got tag type %d", r.b[r.p])
		return nil
	}
	end, err := skipPayload(r.b, r.p+1, tagCompound, 0)
	if err != nil {
		r.err = fmt.Errorf("item NBT: %w", err)
		return nil
	}
	s := r.b[r.p:end]
	r.p = end
	return s
}

func appendPos(b []byte, p Pos) []byte {
	b = binary.BigEndian.AppendUint64(b, math.Float64bits(p.X))
	b = binary.BigEndian.AppendUint64(b, math.Float64bits(p.Y))
	b = binary.BigEndian.AppendUint64(b, math.Float64bits(p.Z))
	b = binary.BigEndian.AppendUint32(b, math.Float32bits(p.Yaw))
	return binary.BigEndian.AppendUint32(b, math.Float32bits(p.Pitch))
}

// javaRound is Java's Math.round(double): floor(v + 0.5), saturating.
func javaRound(v float64) int64 {
	if v != v {
		return 0
	}
	f := math.Floor(v + 0.5)
	switch {
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

func zigzag(v int64) uint64  { return uint64(v<<1) ^ uint64(v>>63) }
func unzigzag(u int64) int64 { return int64(uint64(u)>>1) ^ -(u & 1) }
func angleToShort(deg float32) uint16 {
	return uint16(javaRound(float64(deg) * 65536 / 360))
}

// QuantizeLpPos returns p as a reader decodes it from an LP_POS (the
// position of a DeltaMove or an absolute lp position): coordinates rounded to
// 1/4096 block, yaw and pitch to 1/65536 turn in [-180, 180). A recorder that
// tracks positions by summing deltas quantises each delta with it so that it
// stays where a reader replaying the deltas will be.
func QuantizeLpPos(p Pos) Pos {
	return Pos{
		X: float64(javaRound(p.X*4096)) / 4096, Y: float64(javaRound(p.Y*4096)) / 4096, Z: float64(javaRound(p.Z*4096)) / 4096,
		Yaw: float32(float64(int16(angleToShort(p.Yaw))) * 360 / 65536), Pitch: float32(float64(int16(angleToShort(p.Pitch))) * 360 / 65536),
	}
}

// appendLpPos writes ReplayTypes.LP_POS: x, y, z as VarLong(zigzag(round(v*4096)))
// and yaw, pitch as wrapping shorts of 1/65536 turn.
func appendLpPos(b []byte, p Pos) []byte {
	b = AppendVarLong(b, int64(zigzag(javaRound(p.X*4096))))
	b = AppendVarLong(b, int64(zigzag(javaRound(p.Y*4096))))
	b = AppendVarLong(b, int64(zigzag(javaRound(p.Z*4096))))
	b = binary.BigEndian.AppendUint16(b, angleToShort(p.Yaw))
	return binary.BigEndian.AppendUint16(b, angleToShort(p.Pitch))
}

const lpAbsMax = 1.7179869183e10

func lpSanitize(v float64) float64 {
	if v != v {
		return 0
	}
	return math.Max(-lpAbsMax, math.Min(lpAbsMax, v))
}

func packLp(v float64) uint64 { return uint64(javaRound((v*0.5 + 0.5) * 32766)) }

func unpackLp(v uint64) float64 {
	return math.Min(float64(v&0x7fff), 32766)*2/32766 - 1
}

// appendLpVec3 writes a velocity as vanilla's LpVec3: a zero byte for a
// (nearly) zero vector, else 6 bytes holding a 2-bit scale, a "big scale"
// bit and three 15-bit components, plus a VarInt of scale>>2 when the scale
// needs more than 2 bits.
func appendLpVec3(b []byte, v Vec3) []byte {
	x, y, z := lpSanitize(v.X), lpSanitize(v.Y), lpSanitize(v.Z)
	m := math.Max(math.Abs(x), math.Max(math.Abs(y), math.Abs(z)))
	if m < 3.051944088384301e-5 {
		return append(b, 0)
	}
	scale := int64(math.Ceil(m))
	big := scale&3 != scale
	markers := uint64(scale)
	if big {
		markers = uint64(scale&3) | 4
	}
	s := float64(scale)
	buf := markers | packLp(x/s)<<3 | packLp(y/s)<<18 | packLp(z/s)<<33
	b = append(b, byte(buf), byte(buf>>8))
	b = binary.BigEndian.AppendUint32(b, uint32(buf>>16))
	if big {
		b = AppendVarInt(b, int32(scale>>2))
	}
	return b
}

func packBlockPos(p BlockPos) int64 {
	return int64(p.X&0x3ffffff)<<38 | int64(p.Z&0x3ffffff)<<12 | int64(p.Y&0xfff)
}

func unpackBlockPos(v int64) BlockPos {
	return BlockPos{X: int32(v >> 38), Y: int32(v << 52 >> 52), Z: int32(v << 26 >> 38)}
}

// Fields returns the event's payload as a JSON-friendly map, holding only
// the fields of its type. Enum ordinals are given as names where known.
func (e *Event) Fields() map[string]any {
	m := map[string]any{}
	switch e.Type {
	case DeltaMove:
		m["entity"] = e.Entity
		m["dx"], m["dy"], m["dz"] = jf(e.Pos.X), jf(e.Pos.Y), jf(e.Pos.Z)
		m["yaw"], m["pitch"] = jf(float64(e.Pos.Yaw)), jf(float64(e.Pos.Pitch))
		m["velocity"] = []any{jf(e.Velocity.X), jf(e.Velocity.Y), jf(e.Velocity.Z)}
	case AbsoluteMove, SpawnEntity:
		m["entity"] = e.Entity
		m["x"], m["y"], m["z"] = jf(e.Pos.X), jf(e.Pos.Y), jf(e.Pos.Z)
		m["yaw"], m["pitch"] = jf(float64(e.Pos.Yaw)), jf(float64(e.Pos.Pitch))
		if e.Type == AbsoluteMove {
			m["velocity"] = []any{jf(e.Velocity.X), jf(e.Velocity.Y), jf(e.Velocity.Z)}
		} else {
			m["entity_type"] = e.EntityType
		}
	case EntityState:
		m["entity"] = e.Entity
		m["pose"] = e.Pose.String()
		m["flags"] = e.State
	case HandAnimation:
		m["entity"] = e.Entity
		m["hand"] = e.Hand.String()
	case ItemUse:
		m["entity"] = e.Entity
		if e.HasHand {
			m["hand"] = e.Hand.String()
		}
	case SetItem:
		m["entity"] = e.Entity
		slots := make(map[string]int, len(e.Items))
		for _, it := range e.Items {
			slots[fmt.Sprint(it.Slot)] = len(it.NBT)
		}
		m["slots"] = slots // slot → item NBT size in bytes
	case ChangeHeldSlot:
		m["entity"] = e.Entity
		m["slot"] = e.Slot
	case SetBlock:
		m["x"], m["y"], m["z"] = e.Block.X, e.Block.Y, e.Block.Z
		m["block_state"] = e.BlockState
	case DestroyEntity:
		m["entity"] = e.Entity
	case CheckpointReached:
		m["checkpoint"] = e.Checkpoint
		m["run_time_ms"] = e.RunTime
	case CheckpointReset:
		m["reason"] = e.Reset.String()
		m["run_time_ms"] = e.RunTime
	case RunEnd:
		m["reason"] = e.End.String()
		m["run_time_ms"] = e.RunTime
	}
	return m
}

// jf returns f for JSON: NaN and infinities, which encoding/json refuses,
// become strings ("NaN", "+Inf", "-Inf").
func jf(f float64) any {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Sprint(f)
	}
	return f
}

func enumName(names []string, v int32) string {
	if v >= 0 && int(v) < len(names) {
		return names[v]
	}
	return fmt.Sprint(v)
}
