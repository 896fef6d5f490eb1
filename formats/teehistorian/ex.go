// This file decodes the payloads of known EX items and the few client game
// messages that carry a player's name.

package teehistorian

import (
	"strings"

	"github.com/google/uuid"
)

// ExFields is a decoded EX payload. Which fields are set depends on the kind.
type ExFields struct {
	Cid, Cid2    int32
	Team         int32
	Level        int32
	Role         string // rcon role name (PR #10964 layout of AUTH_LOGIN, AUTH_INIT_ROLE)
	Version      int32
	TimeTicks    int32
	Practice     bool
	Name         string // auth name, player name or version string
	ConnectionID uuid.UUID
	SaveID       uuid.UUID
	Save         string
}

// ParseEx decodes the payload of a known EX kind. ok is false for unknown
// kinds and for payloads that do not match the known layout.
func ParseEx(kind ExKind, data []byte) (f ExFields, ok bool) {
	c := cursor{b: data}
	uid := func() (u uuid.UUID) {
		if c.status != parseOK {
			return
		}
		if len(c.b)-c.n < 16 {
			c.status = parseShort
			return
		}
		copy(u[:], c.b[c.n:])
		c.n += 16
		return
	}
	switch kind {
	case ExTest, ExAntibot:
	case ExDDNetVersionOld:
		f.Cid, f.Version = c.int(), c.int()
	case ExDDNetVersion:
		f.Cid = c.int()
		f.ConnectionID = uid()
		f.Version = c.int()
		f.Name = string(c.str())
	case ExAuthInit, ExAuthLogin:
		f.Cid, f.Level = c.int(), c.int()
		f.Name = string(c.str())
		if c.status != parseOK || c.n != len(data) {
			// DDNet PR #10964 changed AUTH_LOGIN to (cid, role, name)
			// under the same UUID; the old layout then leaves bytes over.
			c = cursor{b: data}
			f = ExFields{Cid: c.int(), Role: string(c.str()), Name: string(c.str())}
		}
	case ExAuthInitRole:
		f.Cid = c.int()
		f.Role = string(c.str())
		f.Name = string(c.str())
	case ExAuthLogout, ExJoinVer6, ExJoinVer7, ExPlayerReady, ExPlayerRejoin:
		f.Cid = c.int()
	case ExPlayerSwap:
		f.Cid, f.Cid2 = c.int(), c.int()
	case ExSaveSuccess, ExLoadSuccess:
		f.Team = c.int()
		f.SaveID = uid()
		f.Save = string(c.str())
	case ExSaveFailure, ExLoadFailure:
		f.Team = c.int()
	case ExPlayerTeam:
		f.Cid, f.Team = c.int(), c.int()
	case ExTeamPractice:
		f.Team = c.int()
		f.Practice = c.int() != 0
	case ExPlayerName:
		f.Cid = c.int()
		f.Name = string(c.str())
	case ExPlayerFinish:
		f.Cid, f.TimeTicks = c.int(), c.int()
	case ExTeamFinish:
		f.Team, f.TimeTicks = c.int(), c.int()
	default:
		return f, false
	}
	f.Name = strings.ToValidUTF8(f.Name, "\uFFFD")
	f.Role = strings.ToValidUTF8(f.Role, "\uFFFD")
	// A payload with bytes left over has a layout we do not know.
	return f, c.status == parseOK && (c.n == len(data) || kind == ExTest || kind == ExAntibot)
}

// Game message ids that carry the player's name as their first string.
const (
	msg6StartInfo  = 20 // 0.6 NETMSGTYPE_CL_STARTINFO
	msg6ChangeInfo = 21 // 0.6 NETMSGTYPE_CL_CHANGEINFO
	msg7StartInfo  = 27 // 0.7 NETMSGTYPE_CL_STARTINFO
)

// MessageID returns the game message id and system flag of a MESSAGE body
// (its first varint is msgid<<1 | sys). ok is false for an empty or
// malformed body.
func MessageID(data []byte) (id int32, sys bool, ok bool) {
	v, _, st := readVarint(data)
	if st != varintOK {
		return 0, false, false
	}
	return v >> 1, v&1 != 0, true
}

// MessageName returns the player name carried by a client's start-info or
// change-info message (0.6 ids 20/21, 0.7 id 27), and ok=false for other
// messages.
func MessageName(data []byte, proto7 bool) (string, bool) {
	v, n, st := readVarint(data)
	if st != varintOK || v&1 != 0 {
		return "", false
	}
	id := v >> 1
	if proto7 && id != msg7StartInfo || !proto7 && id != msg6StartInfo && id != msg6ChangeInfo {
		return "", false
	}
	c := cursor{b: data[n:]}
	name := c.str()
	if c.status != parseOK {
		return "", false
	}
	return strings.ToValidUTF8(string(name), "\uFFFD"), true
}
