// This file implements Frames (decode the records of a tick range from the
// chunks that cover it) and Clip (write a valid teehistorian file holding a
// tick range, with the state at its start synthesized).

package teehistorian

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"sync"

	"github.com/google/uuid"

	"github.com/replayarchive/replay/formats"
)

// parseStoredHeader parses a header block (magic, JSON, NUL) kept by the
// archive.
func parseStoredHeader(raw []byte) (*Header, error) {
	if len(raw) < len(Magic)+1 || !bytes.Equal(raw[:len(Magic)], Magic[:]) || raw[len(raw)-1] != 0 {
		return nil, formats.Errorf(Name, 0, "expected a stored header block (magic, JSON, NUL)")
	}
	h := &Header{Raw: raw, JSON: raw[len(Magic) : len(raw)-1]}
	if err := parseHeaderJSON(h, h.JSON); err != nil {
		return nil, &formats.Error{Format: Name, Offset: int64(len(Magic)), What: "bad JSON header", Err: err}
	}
	return h, nil
}

// chunkWalker decodes the records of consecutive chunks of a source, starting
// at the chunk that holds the first tick of its range.
type chunkWalker struct {
	src    formats.Source
	hdr    *Header
	chunks []formats.Chunk
	i      int
	rd     *Reader
	st     State
	r      formats.Range // the ticks wanted: chunks past it are not read
	peeks  int           // calls to peek, so ctx is checked every 1024th
	// resumeV is the version of the resume state the walk started from
	// (0 before it reads one): a clip from a version 1 state may lack the
	// clients' start-info messages and logins (recoverIntros).
	resumeV byte

	// A pooled walker (Frames: its frames copy what they hold) keeps
	// between calls the header it parsed and the bytes it parsed it from,
	// one native chunk buffer (a chunk is done with before the next is
	// read) and two readers used in turn (the next one starts from the
	// state the last one ended in).
	pooled  bool
	hdrRaw  []byte
	buf     []byte
	readers *[2]Reader // only a pooled walker has them
	turn    int
}

// newChunkWalker returns a walker of src from the chunk that holds the
// first tick of r. (Frames takes a pooled one: pooledWalker.)
func newChunkWalker(src formats.Source, r formats.Range) (*chunkWalker, error) {
	hdr, err := parseStoredHeader(src.Header())
	if err != nil {
		return nil, err
	}
	chunks := src.Chunks()
	return &chunkWalker{src: src, hdr: hdr, chunks: chunks, i: formats.FindChunk(chunks, max(r.From, 0)), r: r}, nil
}

// walkers keeps pooled chunk walkers (about 70 KB each, with a chunk
// buffer): a seek allocated 140 KB, and the collections that caused were
// most of the slowest percent of seeks.
var walkers sync.Pool

// pooledWalker is newChunkWalker for Frames, from the pool. Give it back
// with release.
func pooledWalker(src formats.Source, r formats.Range) (*chunkWalker, error) {
	w, _ := walkers.Get().(*chunkWalker)
	if w == nil {
		w = &chunkWalker{pooled: true, readers: new([2]Reader)}
	}
	if err := w.header(src.Header()); err != nil {
		w.release()
		return nil, err
	}
	w.src, w.chunks, w.r, w.rd, w.peeks = src, src.Chunks(), r, nil, 0
	w.i = formats.FindChunk(w.chunks, max(r.From, 0))
	return w, nil
}

// header sets the walker's parsed header from a stored header block,
// parsing it only when it differs from the last one. The parse is of a
// copy: a header aliases the bytes it was parsed from, and a source may
// reuse the memory its Header returned.
func (w *chunkWalker) header(raw []byte) error {
	if w.hdr != nil && bytes.Equal(raw, w.hdrRaw) {
		return nil
	}
	w.hdr, w.hdrRaw = nil, nil
	cp := bytes.Clone(raw)
	hdr, err := parseStoredHeader(cp)
	if err != nil {
		return err
	}
	w.hdr, w.hdrRaw = hdr, cp
	return nil
}

// release returns a pooled walker to the pool.
func (w *chunkWalker) release() {
	if !w.pooled {
		return
	}
	w.src, w.chunks, w.rd = nil, nil, nil
	if cap(w.buf) > 4*DefaultChunkSize {
		w.buf = nil // an unusually large chunk: do not keep it
	}
	walkers.Put(w)
}

// nextReader returns a reader over native, at file offset base, from
// state st: a new one, or for a pooled walker the reader not in use (st is
// the walker's state or the other reader's, never its own).
func (w *chunkWalker) nextReader(native []byte, base int64, st *State) *Reader {
	if !w.pooled {
		return newChunkReader(native, base, w.hdr, st)
	}
	rd := &w.readers[w.turn]
	w.turn ^= 1
	*rd = Reader{buf: native, end: len(native), keep: -1, base: base, rerr: io.EOF, hdr: *w.hdr, st: *st}
	return rd
}

// peek returns the next record (not yet applied; call commit), or io.EOF
// after the last chunk or FINISH. The state before the record is w.rd.State().
// It checks ctx on the first call and every 1024th after it, so the loops
// over it stop soon after a cancel without paying for a check per record.
func (w *chunkWalker) peek(ctx context.Context) (*Item, error) {
	if w.peeks&1023 == 0 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	w.peeks++
	for {
		if w.rd != nil {
			it, err := w.rd.peek()
			if err == nil {
				return it, nil
			}
			if !errIsEOF(err) {
				return nil, fmt.Errorf("teehistorian: chunk %d: %w", w.i-1, err)
			}
			if w.rd.finished {
				return nil, io.EOF
			}
		}
		if w.i >= len(w.chunks) || w.r.Past(w.chunks[w.i].StartTick) {
			return nil, io.EOF
		}
		var native, resume []byte
		var err error
		if into, ok := w.src.(formats.ChunkReaderInto); ok && w.pooled {
			// Only bytes decoded into the walker's own buffer (or a
			// fresh one) become its buffer, never a source's own.
			native, resume, err = into.ReadChunkInto(ctx, w.i, w.buf[:0])
			if err == nil && cap(native) > cap(w.buf) {
				w.buf = native[:0]
			}
		} else {
			native, resume, err = w.src.ReadChunk(ctx, w.i)
		}
		if err != nil {
			return nil, fmt.Errorf("teehistorian: read chunk %d: %w", w.i, err)
		}
		if w.rd == nil {
			if err := decodeResume(&w.st, resume); err != nil {
				return nil, fmt.Errorf("teehistorian: chunk %d: %w", w.i, err)
			}
			w.resumeV = resume[0]
			w.rd = w.nextReader(native, w.chunks[w.i].Offset, &w.st)
		} else {
			// Continue with the state the previous chunk ended in.
			w.rd = w.nextReader(native, w.chunks[w.i].Offset, &w.rd.st)
		}
		w.i++
	}
}

func (w *chunkWalker) commit() { w.rd.commit() }

// Frames implements formats.Codec. Each record in r becomes one
// Frame whose Type is the record's name ("player_diff", "ex", ...) and
// whose Data holds absolute positions and inputs; console command secrets
// are redacted.
func (c *Codec) Frames(ctx context.Context, src formats.Source, r formats.Range, emit func(formats.Frame) error) error {
	w, err := pooledWalker(src, r)
	if err != nil {
		return err
	}
	defer w.release()
	return frames(ctx, w, r, emit)
}

// frames emits the records of r that w walks over.
func frames(ctx context.Context, w *chunkWalker, r formats.Range, emit func(formats.Frame) error) error {
	for {
		it, err := w.peek(ctx)
		if errIsEOF(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if r.Past(it.Tick) {
			return nil
		}
		if r.Contains(it.Tick) {
			if err := emit(formats.Frame{Tick: it.Tick, Type: it.Type.String(), Data: frameData(it, w.rd.State())}); err != nil {
				return err
			}
		}
		w.commit()
	}
}

// Frame payloads, one per record type.
type (
	// PlayerFrame is a PLAYER_NEW, PLAYER_DIFF or PLAYER_OLD record.
	PlayerFrame struct {
		Cid int32 `json:"cid"`
		X   int32 `json:"x"`
		Y   int32 `json:"y"`
		DX  int32 `json:"dx,omitempty"`
		DY  int32 `json:"dy,omitempty"`
	}
	// InputFrame is an INPUT_NEW or INPUT_DIFF record with the absolute input.
	InputFrame struct {
		Cid   int32  `json:"cid"`
		Input Input  `json:"input"`
		Diff  *Input `json:"diff,omitempty"`
	}
	// TickSkipFrame is a TICK_SKIP record.
	TickSkipFrame struct {
		Dt int32 `json:"dt"`
	}
	// ClientFrame is a JOIN, or a DROP with its reason.
	ClientFrame struct {
		Cid    int32  `json:"cid"`
		Reason string `json:"reason,omitempty"`
	}
	// MessageFrame is a client game message.
	MessageFrame struct {
		Cid   int32  `json:"cid"`
		MsgID int32  `json:"msg_id"`
		Sys   bool   `json:"sys,omitempty"`
		Name  string `json:"name,omitempty"` // from start-info/change-info
		Data  []byte `json:"data"`
	}
	// CommandFrame is a console command; Text has secrets redacted.
	CommandFrame struct {
		Cid   int32  `json:"cid"`
		Flags int32  `json:"flags"`
		Cmd   string `json:"cmd"`
		Text  string `json:"text"`
	}
	// ExFrame is an EX record: the kind, its decoded fields, and the raw
	// payload for unknown kinds and antibot data.
	ExFrame struct {
		Kind   string         `json:"kind"`
		UUID   string         `json:"uuid"`
		Size   int            `json:"size"`
		Fields map[string]any `json:"fields,omitempty"`
		Data   []byte         `json:"data,omitempty"`
	}
)

// frameData builds the Frame payload of it; st is the state before it.
func frameData(it *Item, st *State) any {
	switch it.Type {
	case ItemPlayerNew, ItemPlayerOld:
		return PlayerFrame{Cid: it.Cid, X: it.X, Y: it.Y}
	case ItemPlayerDiff:
		return PlayerFrame{Cid: it.Cid, X: it.X, Y: it.Y, DX: it.DX, DY: it.DY}
	case ItemInputNew:
		return InputFrame{Cid: it.Cid, Input: it.Input}
	case ItemInputDiff:
		d := it.Diff
		return InputFrame{Cid: it.Cid, Input: it.Input, Diff: &d}
	case ItemTickSkip:
		return TickSkipFrame{Dt: it.Dt}
	case ItemJoin:
		return ClientFrame{Cid: it.Cid}
	case ItemDrop:
		return ClientFrame{Cid: it.Cid, Reason: string(bytes.ToValidUTF8(it.Data, []byte("\uFFFD")))}
	case ItemMessage:
		m := MessageFrame{Cid: it.Cid, Data: bytes.Clone(it.Data)}
		m.MsgID, m.Sys, _ = MessageID(it.Data)
		if it.Cid >= 0 && it.Cid < MaxClients {
			m.Name, _ = MessageName(it.Data, st.Clients[it.Cid].Proto7)
		}
		return m
	case ItemConsoleCommand:
		return CommandFrame{Cid: it.Cid, Flags: it.Flags, Cmd: string(bytes.ToValidUTF8(it.Cmd, []byte("\uFFFD"))), Text: CommandText(it.Cmd, it.Args)}
	case ItemEx:
		return exFrame(it)
	}
	return nil
}

// ForViewers implements formats.ForViewers: the account of an rcon login
// (auth_name) is for moderators.
func (e ExFrame) ForViewers() any {
	if _, ok := e.Fields["auth_name"]; !ok {
		return e
	}
	e.Fields = maps.Clone(e.Fields)
	e.Fields["auth_name"] = Redacted
	return e
}

func exFrame(it *Item) ExFrame {
	e := ExFrame{Kind: it.Ex.String(), UUID: uuid.UUID(it.UUID).String(), Size: len(it.Data)}
	f, ok := ParseEx(it.Ex, it.Data)
	if !ok {
		if it.Ex == ExUnknown || it.Ex == ExAntibot || len(it.Data) > 0 {
			e.Data = bytes.Clone(it.Data)
		}
		return e
	}
	m := map[string]any{}
	switch it.Ex {
	case ExDDNetVersionOld:
		m["cid"], m["version"] = f.Cid, f.Version
	case ExDDNetVersion:
		m["cid"], m["connection_id"], m["version"], m["version_str"] = f.Cid, f.ConnectionID.String(), f.Version, f.Name
	case ExAuthInit, ExAuthLogin, ExAuthInitRole:
		m["cid"], m["auth_name"] = f.Cid, f.Name
		if f.Role != "" {
			m["role"] = f.Role
		} else {
			m["level"] = f.Level
		}
	case ExAuthLogout, ExJoinVer6, ExJoinVer7, ExPlayerReady, ExPlayerRejoin:
		m["cid"] = f.Cid
	case ExPlayerSwap:
		m["cid1"], m["cid2"] = f.Cid, f.Cid2
	case ExSaveSuccess, ExLoadSuccess:
		// The save string is the team's full state; it is not shown.
		m["team"], m["save_id"], m["save_size"] = f.Team, f.SaveID.String(), len(f.Save)
	case ExSaveFailure, ExLoadFailure:
		m["team"] = f.Team
	case ExPlayerTeam:
		m["cid"], m["team"] = f.Cid, f.Team
	case ExTeamPractice:
		m["team"], m["practice"] = f.Team, f.Practice
	case ExPlayerName:
		m["cid"], m["name"] = f.Cid, f.Name
	case ExPlayerFinish:
		m["cid"], m["time_ticks"], m["time"] = f.Cid, f.TimeTicks, raceTime(f.TimeTicks)
	case ExTeamFinish:
		m["team"], m["time_ticks"], m["time"] = f.Team, f.TimeTicks, raceTime(f.TimeTicks)
	case ExAntibot:
		e.Data = bytes.Clone(it.Data)
	}
	if len(m) > 0 {
		e.Fields = m
	}
	return e
}

// Clip implements formats.Codec. The clip has the original header bytes.
// When r starts after tick 0 it starts with the tick before holding the
// synthesized state at the end of that tick, as DDNet writes a new file
// for the players it carries over: for connected clients JOINVER/JOIN,
// their login (see clipAuthKind) and the start-info or change-info
// message that last named them (files before version_minor 8 name
// players only there); PLAYER_NAME, PLAYER_TEAM and TEAM_PRACTICE;
// PLAYER_NEW for present characters, INPUT_NEW with the last inputs. The records of the ticks of r follow,
// re-encoded (so implicit ticks stay valid), and FINISH ends it. Positions
// and inputs at every tick of the range equal the original's.
func (c *Codec) Clip(ctx context.Context, src formats.Source, r formats.Range, w io.Writer) error {
	return c.clip(ctx, src, r, w, false)
}

// clip writes the clip of r; with redact, the header and console commands
// have their secrets replaced (see secrets.go).
func (c *Codec) clip(ctx context.Context, src formats.Source, r formats.Range, w io.Writer, redact bool) error {
	if r.Empty() {
		return fmt.Errorf("%s: clip range %v is empty", Name, r)
	}
	from := max(r.From, 0)
	wk, err := newChunkWalker(src, r)
	if err != nil {
		return err
	}
	if len(wk.chunks) > 0 && wk.i >= len(wk.chunks) {
		return fmt.Errorf("teehistorian: clip start tick %d is after the end of the recording (tick %d)", from, wk.chunks[len(wk.chunks)-1].EndTick()-1)
	}
	raw := wk.hdr.Raw
	if redact {
		if raw, err = redactedHeader(wk.hdr); err != nil {
			return err
		}
	}
	rec, err := newRecorderRaw(w, raw)
	if err != nil {
		return err
	}
	var uid [MaxClients]uint64
	started := false
	start := func(st *State) error {
		started = true
		if from == 0 {
			return nil
		}
		if wk.resumeV == resumeVersion && namelessClient(st) {
			// An older archive's chunk: its state predates the clients'
			// start-info messages and logins.
			cp := *st
			if err := recoverIntros(ctx, src, from, &cp); err != nil {
				return err
			}
			st = &cp
		}
		if from-1 > 0 {
			if err := rec.BeginTick(from - 1); err != nil {
				return err
			}
			for cid := range st.Clients {
				if p := &st.Clients[cid]; p.Alive {
					rec.Player(int32(cid), p.X, p.Y)
				}
			}
		}
		for cid := range st.Clients {
			p := &st.Clients[cid]
			if p.Connected {
				rec.PlayerJoin(int32(cid), p.Proto7)
				if in := p.Intro; in != nil && in.AuthKind != ExUnknown {
					rec.Ex(clipAuthKind(in.AuthKind, wk.hdr.VersionMinor).UUID(), in.Auth)
				}
				if in := p.Intro; in != nil && len(in.NameMsg) > 0 {
					rec.Message(int32(cid), in.NameMsg)
				}
			}
			if len(p.Name) > 0 {
				rec.PlayerName(int32(cid), string(p.Name))
			}
			rec.PlayerTeam(int32(cid), p.Team)
		}
		for team := int32(0); team < 256; team++ {
			if st.Practice.Has(team) {
				rec.TeamPractice(team, true)
			}
		}
		for cid := range st.Clients {
			if p := &st.Clients[cid]; p.HasInput {
				uid[cid] = 1
				rec.Input(int32(cid), 1, p.Input)
			}
		}
		return rec.err
	}
	for {
		it, err := wk.peek(ctx)
		if errIsEOF(err) {
			break
		}
		if err != nil {
			return err
		}
		if r.Past(it.Tick) || it.Type == ItemFinish {
			break
		}
		if it.Tick < from {
			wk.commit()
			continue
		}
		if !started {
			if err := start(wk.rd.State()); err != nil {
				return err
			}
		}
		if it.Tick > rec.tick {
			if err := rec.BeginTick(it.Tick); err != nil {
				return err
			}
		}
		if redact && it.Type == ItemConsoleCommand {
			err = clipRedactedCommand(rec, it)
		} else {
			err = clipRecord(rec, it, &uid)
		}
		if err != nil {
			return err
		}
		wk.commit()
	}
	if !started && wk.rd != nil {
		if err := start(wk.rd.State()); err != nil {
			return err
		}
	}
	return rec.Finish()
}

// maxIntroChunks bounds the chunks recoverIntros decodes (64 MiB of a
// file at the default chunk size): past it a clip starts from its chunk's
// state alone, as before.
const maxIntroChunks = 1024

// namelessClient reports whether a client connected in st has neither a
// name (PLAYER_NAME) nor a start-info message to name it by.
func namelessClient(st *State) bool {
	for i := range st.Clients {
		c := &st.Clients[i]
		if c.Connected && len(c.Name) == 0 && (c.Intro == nil || len(c.Intro.NameMsg) == 0) {
			return true
		}
	}
	return false
}

// recoverIntros gives the clients connected in st (the state at tick
// from, decoded from an older archive's version 1 resume state, which
// kept no start-info messages or logins) those the file holds: it decodes
// src from its start to from (at most maxIntroChunks chunks) and copies
// each connected client's start-info message and login where st lacks
// them. A clip of such an archive then names everyone present at from,
// as a clip of one archived now does, without re-ingesting the file.
func recoverIntros(ctx context.Context, src formats.Source, from int64, st *State) error {
	if formats.FindChunk(src.Chunks(), from) > maxIntroChunks {
		return nil
	}
	wk, err := newChunkWalker(src, formats.Ticks(0, from-1))
	if err != nil {
		return err
	}
	for {
		it, err := wk.peek(ctx)
		if errIsEOF(err) {
			break
		}
		if err != nil {
			return fmt.Errorf("teehistorian: names before tick %d: %w", from, err)
		}
		if it.Tick >= from {
			break
		}
		wk.commit()
	}
	if wk.rd == nil {
		return nil
	}
	full := wk.rd.State()
	for cid := range st.Clients {
		c, f := &st.Clients[cid], &full.Clients[cid]
		if !c.Connected || !f.Connected || f.Intro == nil {
			continue
		}
		in := Intro{}
		if c.Intro != nil {
			in = *c.Intro
		}
		if len(in.NameMsg) == 0 && len(c.Name) == 0 {
			in.NameMsg = f.Intro.NameMsg
		}
		if in.AuthKind == ExUnknown {
			in.AuthKind, in.Auth = f.Intro.AuthKind, f.Intro.Auth
		}
		if len(in.NameMsg) > 0 || in.AuthKind != ExUnknown {
			c.Intro = &in
		}
	}
	return nil
}

// clipAuthKind is the record a clip starts a logged-in client's login
// with: DDNet wrote AUTH_INIT for the players logged in when a file began
// until version_minor 22, AUTH_LOGIN from then on; AUTH_INIT_ROLE (the
// same for a role) stays.
func clipAuthKind(k ExKind, minor int) ExKind {
	if k == ExAuthInitRole {
		return k
	}
	if minor < 22 {
		return ExAuthInit
	}
	return ExAuthLogin
}

// clipRedactedCommand re-records a console command with its secret
// arguments replaced.
func clipRedactedCommand(rec *Recorder, it *Item) error {
	if _, err := redactedCommand(nil, it); err != nil {
		return err
	}
	args, _ := RedactArgs(it.Cmd, it.Args)
	return consoleCommand(rec, it.Cid, it.Flags, it.Cmd, args)
}

// clipRecord re-records one decoded record.
func clipRecord(rec *Recorder, it *Item, uid *[MaxClients]uint64) error {
	switch it.Type {
	case ItemPlayerNew, ItemPlayerDiff:
		return rec.Player(it.Cid, it.X, it.Y)
	case ItemPlayerOld:
		return rec.DeadPlayer(it.Cid)
	case ItemInputNew:
		uid[it.Cid]++
		return rec.Input(it.Cid, uid[it.Cid], it.Input)
	case ItemInputDiff:
		return rec.Input(it.Cid, uid[it.Cid], it.Input)
	case ItemMessage:
		return rec.Message(it.Cid, it.Data)
	case ItemJoin:
		return rec.Join(it.Cid)
	case ItemDrop:
		return drop(rec, it.Cid, it.Data)
	case ItemConsoleCommand:
		return consoleCommand(rec, it.Cid, it.Flags, it.Cmd, it.Args)
	case ItemEx:
		return rec.Ex(it.UUID, it.Data)
	}
	return nil
}
