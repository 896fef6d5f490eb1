// This file defines Item, one decoded teehistorian record, and the per-client
// state a decoder keeps (positions, inputs, teams) that makes the deltas and
// implicit ticks of the format decodable.

package teehistorian

import (
	"bytes"
	"fmt"
	"math"
	"strings"
)

// ItemType is the kind of a top-level teehistorian record.
type ItemType uint8

// Item types. The wire id of each is given in the comment.
const (
	ItemPlayerDiff     ItemType = iota + 1 // cid >= 0
	ItemFinish                             // -1
	ItemTickSkip                           // -2
	ItemPlayerNew                          // -3
	ItemPlayerOld                          // -4
	ItemInputDiff                          // -5
	ItemInputNew                           // -6
	ItemMessage                            // -7
	ItemJoin                               // -8
	ItemDrop                               // -9
	ItemConsoleCommand                     // -10
	ItemEx                                 // -11
)

// Wire ids of the record types (each record's first varint; a client id
// >= 0 is a PLAYER_DIFF).
const (
	wireFinish    = -1
	wireTickSkip  = -2
	wirePlayerNew = -3
	wirePlayerOld = -4
	wireInputDiff = -5
	wireInputNew  = -6
	wireMessage   = -7
	wireJoin      = -8
	wireDrop      = -9
	wireCommand   = -10
	wireEx        = -11
)

var itemNames = [...]string{
	ItemPlayerDiff:     "player_diff",
	ItemFinish:         "finish",
	ItemTickSkip:       "tick_skip",
	ItemPlayerNew:      "player_new",
	ItemPlayerOld:      "player_old",
	ItemInputDiff:      "input_diff",
	ItemInputNew:       "input_new",
	ItemMessage:        "message",
	ItemJoin:           "join",
	ItemDrop:           "drop",
	ItemConsoleCommand: "console_command",
	ItemEx:             "ex",
}

// String returns the type's frame name ("player_diff", "ex", ...).
func (t ItemType) String() string {
	if int(t) < len(itemNames) && itemNames[t] != "" {
		return itemNames[t]
	}
	return fmt.Sprintf("item(%d)", t)
}

// MaxClients bounds the client ids of player and input records. DDNet uses
// 64 before 19.1 and 128 since; the bound leaves room for forks.
const MaxClients = 256

// InputSize is the number of ints in a CNetObj_PlayerInput.
const InputSize = 10

// Input is one player input: Direction, TargetX, TargetY, Jump, Fire, Hook,
// PlayerFlags, WantedWeapon, NextWeapon, PrevWeapon.
type Input [InputSize]int32

// maxArgs bounds the arguments of one console command, so that a hostile
// count cannot make the decoder loop or allocate without bound. DDNet's
// console allows far fewer.
const maxArgs = 1024

// Item is one decoded record. The Reader reuses one Item: its slices point
// into the reader's buffer and are valid only until the next call to Next.
type Item struct {
	Type   ItemType
	Tick   int64 // tick the record belongs to
	Offset int64 // byte offset of the record in the file
	Size   int   // encoded size in bytes

	Cid int32 // client id (PLAYER_*, INPUT_*, MESSAGE, JOIN, DROP, CONSOLE_COMMAND)

	// PLAYER_NEW/PLAYER_DIFF: the absolute position after the record; DX, DY
	// the delta of a PLAYER_DIFF. PLAYER_OLD: the last position.
	X, Y, DX, DY int32

	// TICK_SKIP: the number of skipped ticks.
	Dt int32

	// INPUT_NEW/INPUT_DIFF: the absolute input after the record; Diff the
	// delta of an INPUT_DIFF.
	Input, Diff Input

	// CONSOLE_COMMAND: flag mask, command and arguments (no NULs).
	Flags int32
	Cmd   []byte
	Args  [][]byte

	// MESSAGE body, DROP reason, or EX payload.
	Data []byte

	// EX: the UUID and, when known, its kind.
	UUID [16]byte
	Ex   ExKind
}

// String formats the item for tests and debugging (it allocates).
func (it *Item) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s", it.Tick, it.Type)
	switch it.Type {
	case ItemPlayerDiff:
		fmt.Fprintf(&b, " cid=%d d=%d,%d pos=%d,%d", it.Cid, it.DX, it.DY, it.X, it.Y)
	case ItemPlayerNew:
		fmt.Fprintf(&b, " cid=%d pos=%d,%d", it.Cid, it.X, it.Y)
	case ItemPlayerOld, ItemJoin:
		fmt.Fprintf(&b, " cid=%d", it.Cid)
	case ItemTickSkip:
		fmt.Fprintf(&b, " dt=%d", it.Dt)
	case ItemInputNew:
		fmt.Fprintf(&b, " cid=%d in=%v", it.Cid, it.Input)
	case ItemInputDiff:
		fmt.Fprintf(&b, " cid=%d d=%v in=%v", it.Cid, it.Diff, it.Input)
	case ItemMessage:
		fmt.Fprintf(&b, " cid=%d data=%x", it.Cid, it.Data)
	case ItemDrop:
		fmt.Fprintf(&b, " cid=%d reason=%q", it.Cid, it.Data)
	case ItemConsoleCommand:
		fmt.Fprintf(&b, " cid=%d flags=%d cmd=%q args=%q", it.Cid, it.Flags, it.Cmd, it.Args)
	case ItemEx:
		fmt.Fprintf(&b, " %s data=%x", it.Ex, it.Data)
		if it.Ex == ExUnknown {
			fmt.Fprintf(&b, " uuid=%x", it.UUID)
		}
	}
	return b.String()
}

// IsPlayer reports whether the item is a PLAYER_NEW, PLAYER_DIFF or
// PLAYER_OLD record, the records that can start a tick implicitly.
func (it *Item) IsPlayer() bool {
	return it.Type == ItemPlayerDiff || it.Type == ItemPlayerNew || it.Type == ItemPlayerOld
}

// Client is what a decoder knows about one client id.
type Client struct {
	Alive     bool // the character exists (PLAYER_NEW seen, no PLAYER_OLD since)
	X, Y      int32
	HasInput  bool // an INPUT_NEW was seen
	Input     Input
	Connected bool // JOIN seen, no DROP since
	Proto7    bool // the last join was a 0.7 client (JOINVER7)
	Team      int32
	Name      []byte // last PLAYER_NAME (reused buffer)
	// Intro is what a clip needs to introduce the client when it joined
	// before the clip's start; nil when there is nothing. It is replaced,
	// never changed in place, so copies of a State may share it.
	Intro *Intro
}

// Intro is a connected client's name message and login.
type Intro struct {
	// NameMsg is the client's last start-info or change-info MESSAGE while
	// it has no PLAYER_NAME (files before version_minor 8 name players
	// only there).
	NameMsg []byte
	// AuthKind and Auth are the client's last AUTH_INIT, AUTH_LOGIN or
	// AUTH_INIT_ROLE and its payload while it is logged in (AuthKind is
	// ExUnknown when it is not).
	AuthKind ExKind
	Auth     []byte
}

// withNameMsg returns a copy of in (which may be nil) with msg, or nil
// when the copy would hold nothing.
func (in *Intro) withNameMsg(msg []byte) *Intro {
	var kind ExKind
	var auth []byte
	if in != nil {
		kind, auth = in.AuthKind, in.Auth
	}
	if len(msg) == 0 && kind == ExUnknown {
		return nil
	}
	return &Intro{NameMsg: bytes.Clone(msg), AuthKind: kind, Auth: auth}
}

// withAuth returns a copy of in (which may be nil) with the login kind and
// payload (ExUnknown: logged out), or nil when it would hold nothing.
func (in *Intro) withAuth(kind ExKind, payload []byte) *Intro {
	var msg []byte
	if in != nil {
		msg = in.NameMsg
	}
	if len(msg) == 0 && kind == ExUnknown {
		return nil
	}
	out := &Intro{NameMsg: msg, AuthKind: kind}
	if kind != ExUnknown {
		out.Auth = bytes.Clone(payload)
	}
	return out
}

// State is the decoder state between two records: everything needed to
// decode the rest of the stream.
type State struct {
	// Tick is the tick of the last record; 0 at the start of the file.
	Tick int64
	// LastCid is the client id of the last player record in Tick, -1 right
	// after a TICK_SKIP, math.MaxInt32 at the start of the file ("any player
	// record starts a new tick").
	LastCid int32
	Clients [MaxClients]Client
	// Practice holds the teams in practice mode.
	Practice TeamSet
}

// Reset puts s in its start-of-file state.
func (s *State) Reset() {
	names := [MaxClients][]byte{}
	for i := range s.Clients {
		names[i] = s.Clients[i].Name[:0]
	}
	*s = State{LastCid: math.MaxInt32}
	for i := range s.Clients {
		s.Clients[i].Name = names[i]
	}
}

// TeamSet is a set of team numbers 0..255; others are never members.
type TeamSet [4]uint64

// Has reports whether team is in the set.
func (ts *TeamSet) Has(team int32) bool {
	return team >= 0 && team < 256 && ts[team>>6]&(1<<(team&63)) != 0
}

// Set adds team to the set or removes it.
func (ts *TeamSet) Set(team int32, on bool) {
	if team < 0 || team >= 256 {
		return
	}
	if on {
		ts[team>>6] |= 1 << (team & 63)
	} else {
		ts[team>>6] &^= 1 << (team & 63)
	}
}
