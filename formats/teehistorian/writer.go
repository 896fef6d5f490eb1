// This file implements Recorder, a writer with the semantics of DDNet's
// CTeeHistorian: the caller reports the state of every tick (positions,
// inputs, events) and the recorder writes only what changed, with the same
// implicit/explicit tick rules, so that its output is byte-identical to
// DDNet's for the same calls.

package teehistorian

import (
	"bufio"
	"fmt"
	"io"
	"math"

	"github.com/google/uuid"
)

// Recorder writes a teehistorian file. Methods return the first write error;
// after an error every call returns it again.
type Recorder struct {
	w   *bufio.Writer
	b   []byte // scratch for one record
	err error

	tick            int64
	lastWrittenTick int64
	tickWritten     bool
	prevMaxCid      int32
	maxCid          int32

	players  [MaxClients]recPlayer
	practice TeamSet
	finished bool
}

type recPlayer struct {
	alive    bool
	x, y     int32
	hasInput bool
	uid      uint64
	input    Input
	team     int32
}

// NewRecorder writes the magic and the header JSON (followed by its NUL) to
// w and returns a recorder at tick 0. headerJSON is written as is; use
// HeaderInfo.MarshalJSON for a DDNet-style header.
func NewRecorder(w io.Writer, headerJSON []byte) (*Recorder, error) {
	raw := make([]byte, 0, len(Magic)+len(headerJSON)+1)
	raw = append(append(append(raw, Magic[:]...), headerJSON...), 0)
	return newRecorderRaw(w, raw)
}

func (rec *Recorder) reset() {
	rec.tick, rec.lastWrittenTick, rec.tickWritten = 0, 0, true
	rec.prevMaxCid, rec.maxCid = MaxClients, MaxClients
}

// BeginTick starts tick t (DDNet's BeginTick followed by BeginPlayers).
// Ticks must increase; BeginTick(0) at the start does nothing, since tick 0
// is implicit.
func (rec *Recorder) BeginTick(t int64) error {
	if rec.err != nil {
		return rec.err
	}
	if t == 0 && rec.tick == 0 {
		return nil
	}
	if t <= rec.tick || t > maxTick {
		rec.err = fmt.Errorf("teehistorian: tick %d does not follow tick %d", t, rec.tick)
		return rec.err
	}
	rec.tick = t
	rec.tickWritten = false
	rec.prevMaxCid = rec.maxCid
	rec.maxCid = -1
	return nil
}

func (rec *Recorder) flushItem() error {
	if rec.err != nil {
		return rec.err
	}
	if _, err := rec.w.Write(rec.b); err != nil {
		rec.err = fmt.Errorf("teehistorian: tick %d: %w", rec.tick, err)
	}
	rec.b = rec.b[:0]
	return rec.err
}

func (rec *Recorder) writeTick() {
	// A gap too long for one TICK_SKIP is written as several.
	gap := rec.tick - rec.lastWrittenTick - 1
	for gap > math.MaxInt32 {
		rec.b = AppendVarint(rec.b, wireTickSkip)
		rec.b = AppendVarint(rec.b, math.MaxInt32)
		gap -= math.MaxInt32 + 1
	}
	rec.b = AppendVarint(rec.b, wireTickSkip)
	rec.b = AppendVarint(rec.b, int32(gap))
	rec.lastWrittenTick = rec.tick
	rec.tickWritten = true
}

// ensureTick writes a TICK_SKIP before a non-player record when the tick is
// not written yet.
func (rec *Recorder) ensureTick() {
	if !rec.tickWritten {
		rec.writeTick()
	}
}

func (rec *Recorder) ensureTickPlayer(cid int32) error {
	if cid <= rec.maxCid {
		rec.err = fmt.Errorf("teehistorian: tick %d: player records out of order (client %d after %d)", rec.tick, cid, rec.maxCid)
		return rec.err
	}
	rec.maxCid = cid
	if !rec.tickWritten && (cid > rec.prevMaxCid || rec.lastWrittenTick+1 != rec.tick) {
		rec.writeTick()
	} else {
		rec.lastWrittenTick = rec.tick
		rec.tickWritten = true
	}
	return rec.err
}

func checkCid(cid int32) error {
	if cid < 0 || cid >= MaxClients {
		return fmt.Errorf("teehistorian: client id %d out of range", cid)
	}
	return nil
}

// Player records that client cid's character is at (x, y) at the end of the
// current tick. Calls within a tick must come in increasing cid order.
func (rec *Recorder) Player(cid, x, y int32) error {
	if err := checkCid(cid); err != nil {
		return err
	}
	p := &rec.players[cid]
	if !p.alive || p.x != x || p.y != y {
		if rec.ensureTickPlayer(cid) != nil {
			return rec.err
		}
		if !p.alive {
			rec.b = AppendVarint(rec.b, wirePlayerNew)
			rec.b = AppendVarint(rec.b, cid)
			rec.b = AppendVarint(rec.b, x)
			rec.b = AppendVarint(rec.b, y)
		} else {
			rec.b = AppendVarint(rec.b, cid)
			rec.b = AppendVarint(rec.b, x-p.x)
			rec.b = AppendVarint(rec.b, y-p.y)
		}
		if rec.flushItem() != nil {
			return rec.err
		}
	}
	p.alive, p.x, p.y = true, x, y
	return nil
}

// DeadPlayer records that client cid has no character at the end of the
// current tick.
func (rec *Recorder) DeadPlayer(cid int32) error {
	if err := checkCid(cid); err != nil {
		return err
	}
	p := &rec.players[cid]
	if p.alive {
		if rec.ensureTickPlayer(cid) != nil {
			return rec.err
		}
		rec.b = AppendVarint(rec.b, wirePlayerOld)
		rec.b = AppendVarint(rec.b, cid)
		if rec.flushItem() != nil {
			return rec.err
		}
	}
	p.alive = false
	return nil
}

// Input records an input of client cid. uid identifies the client's
// connection (DDNet's UniqueClientId): a new uid writes INPUT_NEW, the same
// uid an INPUT_DIFF, and an unchanged input nothing.
func (rec *Recorder) Input(cid int32, uid uint64, in Input) error {
	if err := checkCid(cid); err != nil {
		return err
	}
	p := &rec.players[cid]
	if p.hasInput && p.uid == uid {
		if p.input == in {
			return nil
		}
		rec.ensureTick()
		rec.b = AppendVarint(rec.b, wireInputDiff)
		rec.b = AppendVarint(rec.b, cid)
		for i := range in {
			rec.b = AppendVarint(rec.b, in[i]-p.input[i])
		}
	} else {
		rec.ensureTick()
		rec.b = AppendVarint(rec.b, wireInputNew)
		rec.b = AppendVarint(rec.b, cid)
		for i := range in {
			rec.b = AppendVarint(rec.b, in[i])
		}
	}
	p.hasInput, p.uid, p.input = true, uid, in
	return rec.flushItem()
}

// Message records a game message sent by client cid (its packed bytes).
func (rec *Recorder) Message(cid int32, msg []byte) error {
	rec.ensureTick()
	rec.b = AppendVarint(rec.b, wireMessage)
	rec.b = AppendVarint(rec.b, cid)
	rec.b = AppendVarint(rec.b, int32(len(msg)))
	rec.b = append(rec.b, msg...)
	return rec.flushItem()
}

// PlayerJoin records an engine-level join: EX JOINVER6 or JOINVER7, then
// JOIN (DDNet's RecordPlayerJoin).
func (rec *Recorder) PlayerJoin(cid int32, proto7 bool) error {
	kind := ExJoinVer6
	if proto7 {
		kind = ExJoinVer7
	}
	if rec.exInts(kind, cid) != nil {
		return rec.err
	}
	return rec.Join(cid)
}

// Join writes a bare JOIN record.
func (rec *Recorder) Join(cid int32) error {
	rec.ensureTick()
	rec.b = AppendVarint(rec.b, wireJoin)
	rec.b = AppendVarint(rec.b, cid)
	return rec.flushItem()
}

// Drop records that client cid left, with reason.
func (rec *Recorder) Drop(cid int32, reason string) error { return drop(rec, cid, reason) }

// drop writes DROP from a string or decoded bytes.
func drop[S ~string | ~[]byte](rec *Recorder, cid int32, reason S) error {
	rec.ensureTick()
	rec.b = AppendVarint(rec.b, wireDrop)
	rec.b = AppendVarint(rec.b, cid)
	rec.b = append(append(rec.b, reason...), 0)
	return rec.flushItem()
}

// ConsoleCommand records an executed console command.
func (rec *Recorder) ConsoleCommand(cid, flags int32, cmd string, args ...string) error {
	return consoleCommand(rec, cid, flags, cmd, args)
}

// consoleCommand writes CONSOLE_COMMAND from strings or decoded bytes.
func consoleCommand[S ~string | ~[]byte](rec *Recorder, cid, flags int32, cmd S, args []S) error {
	rec.ensureTick()
	rec.b = appendConsoleCommand(rec.b, cid, flags, cmd, args)
	return rec.flushItem()
}

// appendConsoleCommand appends the encoding of a CONSOLE_COMMAND record.
func appendConsoleCommand[S ~string | ~[]byte](b []byte, cid, flags int32, cmd S, args []S) []byte {
	b = AppendVarint(b, wireCommand)
	b = AppendVarint(b, cid)
	b = AppendVarint(b, flags)
	b = append(append(b, cmd...), 0)
	b = AppendVarint(b, int32(len(args)))
	for _, a := range args {
		b = append(append(b, a...), 0)
	}
	return b
}

// Ex writes an EX record with the given UUID and payload.
func (rec *Recorder) Ex(id uuid.UUID, payload []byte) error {
	rec.ensureTick()
	rec.b = AppendVarint(rec.b, wireEx)
	rec.b = append(rec.b, id[:]...)
	rec.b = AppendVarint(rec.b, int32(len(payload)))
	rec.b = append(rec.b, payload...)
	return rec.flushItem()
}

// exPayload writes an EX record whose payload is built by fill.
func (rec *Recorder) exPayload(kind ExKind, fill func(p []byte) []byte) error {
	var tmp [256]byte
	p := fill(tmp[:0])
	return rec.Ex(kind.UUID(), p)
}

func (rec *Recorder) exInts(kind ExKind, v ...int32) error {
	return rec.exPayload(kind, func(p []byte) []byte {
		for _, x := range v {
			p = AppendVarint(p, x)
		}
		return p
	})
}

func appendStr(b []byte, s string) []byte { return append(append(b, s...), 0) }

// TestExtra writes the empty EX TEST record.
func (rec *Recorder) TestExtra() error { return rec.Ex(ExTest.UUID(), nil) }

// DDNetVersion records a client's DDNet version (EX DDNETVER).
func (rec *Recorder) DDNetVersion(cid int32, connID uuid.UUID, version int32, versionStr string) error {
	return rec.exPayload(ExDDNetVersion, func(p []byte) []byte {
		p = AppendVarint(p, cid)
		p = append(p, connID[:]...)
		p = AppendVarint(p, version)
		return appendStr(p, versionStr)
	})
}

// DDNetVersionOld records a client's DDNet version (EX DDNETVER_OLD).
func (rec *Recorder) DDNetVersionOld(cid, version int32) error {
	return rec.exInts(ExDDNetVersionOld, cid, version)
}

func (rec *Recorder) auth(kind ExKind, cid, level int32, name string) error {
	return rec.exPayload(kind, func(p []byte) []byte {
		p = AppendVarint(p, cid)
		p = AppendVarint(p, level)
		return appendStr(p, name)
	})
}

// AuthInit records rcon access held since the map start (EX AUTH_INIT).
func (rec *Recorder) AuthInit(cid, level int32, authName string) error {
	return rec.auth(ExAuthInit, cid, level, authName)
}

// AuthLogin records an rcon login (EX AUTH_LOGIN).
func (rec *Recorder) AuthLogin(cid, level int32, authName string) error {
	return rec.auth(ExAuthLogin, cid, level, authName)
}

// AuthLogout records an rcon logout (EX AUTH_LOGOUT).
func (rec *Recorder) AuthLogout(cid int32) error { return rec.exInts(ExAuthLogout, cid) }

func (rec *Recorder) teamSave(kind ExKind, team int32, saveID uuid.UUID, save string) error {
	if len(save) > 60000 {
		return fmt.Errorf("teehistorian: save code of %d bytes is too long", len(save))
	}
	return rec.Ex(kind.UUID(), appendStr(append(AppendVarint(nil, team), saveID[:]...), save))
}

// TeamSaveSuccess records a team save (EX SAVE_SUCCESS).
func (rec *Recorder) TeamSaveSuccess(team int32, saveID uuid.UUID, save string) error {
	return rec.teamSave(ExSaveSuccess, team, saveID, save)
}

// TeamSaveFailure records a failed team save (EX SAVE_FAILURE).
func (rec *Recorder) TeamSaveFailure(team int32) error { return rec.exInts(ExSaveFailure, team) }

// TeamLoadSuccess records a team load (EX LOAD_SUCCESS).
func (rec *Recorder) TeamLoadSuccess(team int32, saveID uuid.UUID, save string) error {
	return rec.teamSave(ExLoadSuccess, team, saveID, save)
}

// TeamLoadFailure records a failed team load (EX LOAD_FAILURE).
func (rec *Recorder) TeamLoadFailure(team int32) error { return rec.exInts(ExLoadFailure, team) }

// PlayerSwap records two players swapping tees (EX PLAYER_SWAP).
func (rec *Recorder) PlayerSwap(cid1, cid2 int32) error {
	return rec.exInts(ExPlayerSwap, cid1, cid2)
}

// PlayerTeam records client cid's team; like DDNet it writes EX PLAYER_TEAM
// only when the team changed (initially 0).
func (rec *Recorder) PlayerTeam(cid, team int32) error {
	if err := checkCid(cid); err != nil {
		return err
	}
	if rec.players[cid].team == team {
		return rec.err
	}
	rec.players[cid].team = team
	return rec.exInts(ExPlayerTeam, cid, team)
}

// TeamPractice records a team's practice mode; like DDNet it writes EX
// TEAM_PRACTICE only on a change (initially off).
func (rec *Recorder) TeamPractice(team int32, practice bool) error {
	if team < 0 || team >= 256 {
		return fmt.Errorf("teehistorian: team %d out of range", team)
	}
	if rec.practice.Has(team) == practice {
		return rec.err
	}
	rec.practice.Set(team, practice)
	v := int32(0)
	if practice {
		v = 1
	}
	return rec.exInts(ExTeamPractice, team, v)
}

// PlayerRejoin records a network-level rejoin (EX PLAYER_REJOIN).
func (rec *Recorder) PlayerRejoin(cid int32) error { return rec.exInts(ExPlayerRejoin, cid) }

// PlayerReady records that client cid is ready to enter (EX PLAYER_READY).
func (rec *Recorder) PlayerReady(cid int32) error { return rec.exInts(ExPlayerReady, cid) }

// Antibot records opaque antibot data (EX ANTIBOT).
func (rec *Recorder) Antibot(data []byte) error { return rec.Ex(ExAntibot.UUID(), data) }

// PlayerName records a player's name (EX PLAYER_NAME).
func (rec *Recorder) PlayerName(cid int32, name string) error {
	return rec.exPayload(ExPlayerName, func(p []byte) []byte {
		return appendStr(AppendVarint(p, cid), name)
	})
}

// PlayerFinish records a finished race in ticks (EX PLAYER_FINISH).
func (rec *Recorder) PlayerFinish(cid, timeTicks int32) error {
	return rec.exInts(ExPlayerFinish, cid, timeTicks)
}

// TeamFinish records a team's finished race in ticks (EX TEAM_FINISH).
func (rec *Recorder) TeamFinish(team, timeTicks int32) error {
	return rec.exInts(ExTeamFinish, team, timeTicks)
}

// Finish writes FINISH and flushes. Nothing may be recorded after it.
func (rec *Recorder) Finish() error {
	if rec.err != nil {
		return rec.err
	}
	if rec.finished {
		return fmt.Errorf("teehistorian: Finish called twice")
	}
	rec.finished = true
	rec.b = AppendVarint(rec.b, wireFinish)
	if rec.flushItem() != nil {
		return rec.err
	}
	return rec.Flush()
}

// Flush writes buffered bytes to the underlying writer.
func (rec *Recorder) Flush() error {
	if rec.err != nil {
		return rec.err
	}
	if err := rec.w.Flush(); err != nil {
		rec.err = fmt.Errorf("teehistorian: flush: %w", err)
	}
	return rec.err
}

// newRecorderRaw writes a stored header block (magic, JSON, NUL) as is.
func newRecorderRaw(w io.Writer, raw []byte) (*Recorder, error) {
	rec := &Recorder{w: bufio.NewWriterSize(w, 64<<10)}
	rec.reset()
	if _, err := rec.w.Write(raw); err != nil {
		return nil, fmt.Errorf("teehistorian: write header: %w", err)
	}
	return rec, nil
}
