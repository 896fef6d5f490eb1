// This file decodes one record from a byte slice (parse) and applies it to the
// decoder state (apply). parse never changes the state, so a caller can look
// at a record (for instance to cut a chunk before it) before committing it.

package teehistorian

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
)

// parseStatus says how parse ended.
type parseStatus uint8

const (
	parseOK    parseStatus = iota
	parseShort             // b ends inside the record: more bytes are needed
	parseBad               // the record is invalid; see the message
)

// maxTick bounds tick numbers so that tick arithmetic cannot overflow.
const maxTick = math.MaxInt64 / 4

// cursor reads the fields of one record.
type cursor struct {
	b      []byte
	n      int
	status parseStatus
	what   string // what was expected, when status == parseBad
	at     int    // offset of the failing field within the record
}

func (c *cursor) fail(what string) {
	if c.status == parseOK {
		c.status = parseBad
		c.what = what
		c.at = c.n
	}
}

func (c *cursor) int() int32 {
	if c.status != parseOK {
		return 0
	}
	if c.n < len(c.b) {
		// Fast path: a one-byte varint.
		if b0 := c.b[c.n]; b0&0x80 == 0 {
			c.n++
			return oneByteVarint(b0)
		}
	}
	v, n, st := readVarint(c.b[c.n:])
	if st != varintOK {
		c.status = parseShort
		return 0
	}
	c.n += n
	return v
}

// str reads a NUL-terminated string and returns it without the NUL.
func (c *cursor) str() []byte {
	if c.status != parseOK {
		return nil
	}
	i := bytes.IndexByte(c.b[c.n:], 0)
	if i < 0 {
		c.status = parseShort
		return nil
	}
	s := c.b[c.n : c.n+i : c.n+i]
	c.n += i + 1
	return s
}

// raw reads the size bytes of the payload of a record of type name. A
// negative size, or one that would make the record longer than
// MaxRecordBytes, fails at once, before any of the bytes are looked for.
func (c *cursor) raw(size int32, name string) []byte {
	if c.status != parseOK {
		return nil
	}
	if size < 0 {
		c.fail("expected a non-negative " + name + " size")
		return nil
	}
	if limit := MaxRecordBytes - c.n; int(size) > limit {
		c.fail(fmt.Sprintf("expected %s size at most %d bytes (records are at most MaxRecordBytes = %d), got %d", name, limit, MaxRecordBytes, size))
		return nil
	}
	if int64(len(c.b)-c.n) < int64(size) {
		c.status = parseShort
		return nil
	}
	s := c.b[c.n : c.n+int(size) : c.n+int(size)]
	c.n += int(size)
	return s
}

func (c *cursor) cid(what string) int32 {
	v := c.int()
	if c.status == parseOK && (v < 0 || v >= MaxClients) {
		c.fail(what)
	}
	return v
}

// parse decodes the record at the start of b into it, given the state st
// before the record. It does not modify st. On parseBad, what says what was
// expected and at is the offset within b where it went wrong.
func parse(b []byte, st *State, it *Item, version int) (n int, status parseStatus, what string, at int) {
	if n := parseCommon(b, st, it); n > 0 {
		return n, parseOK, "", 0
	}
	return parseRecord(b, st, it, version)
}

// parseCommon decodes the two records most of a file is made of, when each
// of their fields is one byte: a PLAYER_DIFF of a present player and an
// INPUT_DIFF of a client with an input. It reads them without a cursor,
// into it as parseRecord would, and returns their size; for anything else
// it returns 0 and leaves it alone.
func parseCommon(b []byte, st *State, it *Item) int {
	switch {
	case len(b) >= 3 && b[0] < 0x40 && b[1] < 0x80 && b[2] < 0x80:
		cid := int32(b[0])
		p := &st.Clients[cid]
		tick := st.Tick
		if cid <= st.LastCid {
			tick++
		}
		if !p.Alive || tick > maxTick {
			return 0
		}
		it.Type, it.Cid, it.Tick, it.Size = ItemPlayerDiff, cid, tick, 3
		it.DX, it.DY = oneByteVarint(b[1]), oneByteVarint(b[2])
		it.X, it.Y = p.X+it.DX, p.Y+it.DY
	case len(b) >= inputRecordLen && b[0] == inputDiffByte && b[1] < 0x40 &&
		binary.LittleEndian.Uint64(b[2:])&0x8080808080808080 == 0 && (b[10]|b[11])&0x80 == 0:
		cid := int32(b[1])
		p := &st.Clients[cid]
		if !p.HasInput {
			return 0
		}
		it.Type, it.Cid, it.Tick, it.Size = ItemInputDiff, cid, st.Tick, inputRecordLen
		for i := range it.Diff {
			it.Diff[i] = oneByteVarint(b[2+i])
			it.Input[i] = p.Input[i] + it.Diff[i]
		}
	default:
		return 0
	}
	it.Data, it.Cmd, it.Args, it.Ex = nil, nil, it.Args[:0], ExUnknown
	return it.Size
}

// oneByteVarint decodes a varint of one byte (b < 0x80).
func oneByteVarint(b byte) int32 { return int32(b&0x3f) ^ -int32(b>>6) }

// parseRecord is parse for any record, field by field.
func parseRecord(b []byte, st *State, it *Item, version int) (n int, status parseStatus, what string, at int) {
	c := cursor{b: b}
	id := c.int()
	if c.status != parseOK {
		return 0, c.status, "", 0
	}
	it.Tick = st.Tick
	it.Data = nil
	it.Cmd = nil
	it.Args = it.Args[:0]
	it.Ex = ExUnknown
	if id >= 0 {
		it.Type = ItemPlayerDiff
		if id >= MaxClients {
			return 0, parseBad, "expected a client id below 256 for PLAYER_DIFF", 0
		}
		it.Cid = id
		it.DX = c.int()
		it.DY = c.int()
		if c.status == parseOK && !st.Clients[id].Alive {
			c.fail("expected PLAYER_DIFF only for a player that is present (PLAYER_NEW first)")
			c.at = 0
		}
		if c.status == parseOK {
			p := &st.Clients[id]
			it.X, it.Y = p.X+it.DX, p.Y+it.DY
		}
	} else {
		switch id {
		case wireFinish:
			it.Type = ItemFinish
		case wireTickSkip:
			it.Type = ItemTickSkip
			it.Dt = c.int()
			if c.status == parseOK && it.Dt < 0 {
				c.fail("expected a non-negative TICK_SKIP count")
			}
		case wirePlayerNew:
			it.Type = ItemPlayerNew
			it.Cid = c.cid("expected a client id 0..255 in PLAYER_NEW")
			it.X = c.int()
			it.Y = c.int()
			it.DX, it.DY = 0, 0
		case wirePlayerOld:
			it.Type = ItemPlayerOld
			it.Cid = c.cid("expected a client id 0..255 in PLAYER_OLD")
			if c.status == parseOK {
				p := &st.Clients[it.Cid]
				it.X, it.Y = p.X, p.Y
			}
		case wireInputDiff:
			it.Type = ItemInputDiff
			it.Cid = c.cid("expected a client id 0..255 in INPUT_DIFF")
			for i := range it.Diff {
				it.Diff[i] = c.int()
			}
			if c.status == parseOK {
				p := &st.Clients[it.Cid]
				if !p.HasInput {
					c.fail("expected INPUT_DIFF only after an INPUT_NEW for that client")
					c.at = 0
				}
				for i := range it.Input {
					it.Input[i] = p.Input[i] + it.Diff[i]
				}
			}
		case wireInputNew:
			it.Type = ItemInputNew
			it.Cid = c.cid("expected a client id 0..255 in INPUT_NEW")
			for i := range it.Input {
				it.Input[i] = c.int()
			}
			it.Diff = Input{}
		case wireMessage:
			it.Type = ItemMessage
			it.Cid = c.int()
			size := c.int()
			it.Data = c.raw(size, "MESSAGE")
		case wireJoin:
			it.Type = ItemJoin
			it.Cid = c.int()
		case wireDrop:
			it.Type = ItemDrop
			it.Cid = c.int()
			it.Data = c.str()
		case wireCommand:
			it.Type = ItemConsoleCommand
			it.Cid = c.int()
			it.Flags = c.int()
			it.Cmd = c.str()
			nargs := c.int()
			if c.status == parseOK && (nargs < 0 || nargs > maxArgs) {
				c.fail("expected a CONSOLE_COMMAND argument count 0..1024")
			}
			for i := int32(0); i < nargs && c.status == parseOK; i++ {
				it.Args = append(it.Args, c.str())
			}
		case wireEx:
			if version < 2 {
				return 0, parseBad, "expected no EX item in a version 1 file", 0
			}
			it.Type = ItemEx
			if len(c.b)-c.n < 16 {
				c.status = parseShort
				break
			}
			copy(it.UUID[:], c.b[c.n:c.n+16])
			c.n += 16
			size := c.int()
			it.Data = c.raw(size, "EX")
			if c.status == parseOK {
				it.Ex = exKindOf(it.UUID)
			}
		default:
			return 0, parseBad, "expected an item type (-11..-1 or a client id)", 0
		}
	}
	if c.status != parseOK {
		return 0, c.status, c.what, c.at
	}
	// The tick this record belongs to.
	switch {
	case it.Type == ItemTickSkip:
		it.Tick = st.Tick + int64(it.Dt) + 1
	case it.IsPlayer() && it.Cid <= st.LastCid:
		it.Tick = st.Tick + 1
	}
	if it.Tick > maxTick {
		return 0, parseBad, "expected a tick below 2^61", 0
	}
	it.Size = c.n
	return c.n, parseOK, "", 0
}

// apply commits a parsed record to the state.
func apply(st *State, it *Item) {
	st.Tick = it.Tick
	switch it.Type {
	case ItemTickSkip:
		st.LastCid = -1
	case ItemPlayerDiff, ItemPlayerNew:
		st.LastCid = it.Cid
		p := &st.Clients[it.Cid]
		p.Alive, p.X, p.Y = true, it.X, it.Y
	case ItemPlayerOld:
		st.LastCid = it.Cid
		st.Clients[it.Cid].Alive = false
	case ItemInputNew, ItemInputDiff:
		p := &st.Clients[it.Cid]
		p.HasInput, p.Input = true, it.Input
	case ItemJoin:
		if it.Cid >= 0 && it.Cid < MaxClients {
			st.Clients[it.Cid].Connected = true
		}
	case ItemDrop:
		if it.Cid >= 0 && it.Cid < MaxClients {
			p := &st.Clients[it.Cid]
			p.Connected, p.Intro = false, nil
		}
	case ItemEx:
		applyEx(st, it)
	}
}

// keepNameMsg keeps a start-info or change-info message of a client
// without a PLAYER_NAME as its Intro's NameMsg. Only files before
// version_minor 8 need it (later ones name every player by PLAYER_NAME).
func keepNameMsg(st *State, it *Item) {
	if it.Cid < 0 || it.Cid >= MaxClients || len(it.Data) > maxNameMsg {
		return
	}
	if p := &st.Clients[it.Cid]; len(p.Name) == 0 {
		if _, ok := MessageName(it.Data, p.Proto7); ok {
			p.Intro = p.Intro.withNameMsg(it.Data)
		}
	}
}

// maxNameMsg bounds the start-info or change-info message a client's
// state keeps: a name, a clan, a country and a skin with its colours.
const maxNameMsg = 512

// maxAuthPayload bounds the AUTH record a client's state keeps: a cid, a
// level or role and an account name (DDNet's are at most 64 bytes).
const maxAuthPayload = 256

// applyEx tracks the stateful EX items. A payload that does not parse is
// ignored: layouts may change between server versions.
func applyEx(st *State, it *Item) {
	c := cursor{b: it.Data}
	switch it.Ex {
	case ExJoinVer6, ExJoinVer7:
		cid := c.int()
		if c.status == parseOK && cid >= 0 && cid < MaxClients {
			st.Clients[cid].Proto7 = it.Ex == ExJoinVer7
		}
	case ExPlayerTeam:
		cid, team := c.int(), c.int()
		if c.status == parseOK && cid >= 0 && cid < MaxClients {
			st.Clients[cid].Team = team
		}
	case ExTeamPractice:
		team, on := c.int(), c.int()
		if c.status == parseOK {
			st.Practice.Set(team, on != 0)
		}
	case ExPlayerName:
		cid, name := c.int(), c.str()
		if c.status == parseOK && cid >= 0 && cid < MaxClients {
			p := &st.Clients[cid]
			p.Name = append(p.Name[:0], name...)
			if p.Intro != nil && len(p.Intro.NameMsg) > 0 {
				p.Intro = p.Intro.withNameMsg(nil)
			}
		}
	case ExAuthInit, ExAuthLogin, ExAuthInitRole:
		cid := c.int()
		if c.status == parseOK && cid >= 0 && cid < MaxClients && len(it.Data) <= maxAuthPayload {
			p := &st.Clients[cid]
			p.Intro = p.Intro.withAuth(it.Ex, it.Data)
		}
	case ExAuthLogout:
		cid := c.int()
		if c.status == parseOK && cid >= 0 && cid < MaxClients && st.Clients[cid].Intro != nil {
			p := &st.Clients[cid]
			p.Intro = p.Intro.withAuth(ExUnknown, nil)
		}
	}
}
