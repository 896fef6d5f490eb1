// This file implements formats.Codec for teehistorian: detection, Split into
// a header piece and tick-aligned chunks with resume states, and the metadata
// (players, logins, commands, joins, drops, finishes, teams) gathered while
// splitting.

package teehistorian

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/replayarchive/replay/formats"
)

// TickRate is the DDNet server tick rate.
const TickRate = 50

// TickDuration is the real time of one tick.
const TickDuration = time.Second / TickRate

// DefaultChunkSize is the target native size of a chunk.
const DefaultChunkSize = 64 << 10

// MaxChunkBytes bounds one chunk: Split can cut only between ticks, so it
// refuses a file whose ticks hold more than this (no real server writes
// more than a few hundred KiB in one tick).
const MaxChunkBytes = 64 << 20

// maxTrailing bounds the bytes kept after FINISH.
const maxTrailing = 16 << 20

// DefaultMaxEvents bounds Metadata.Events of one recording where Split
// holds the events in memory: when its Writer is not a formats.EventWriter.
// The archive's Pending is an EventWriter, and a live recording
// (SplitTail) keeps every event: there every event is searchable.
const DefaultMaxEvents = 100_000

// maxQueued bounds the events held back behind a JOIN that waits for its
// player's name (see metaBuilder.queue): past it, the JOIN goes out
// without one. A server names a player in the ticks after the join.
const maxQueued = 4096

// maxNameWait is how many ticks (one second at DDNet's 50 a second) a JOIN
// waits for its player's name: a server names a player in the ticks after
// the join. Past it the JOIN goes out without a name, and so do the events
// queued behind it, which a moderator waits for (a live recording's events
// are searchable once sent). A name that comes later does not rename the
// JOIN, with or without a sink, so that both give the same events.
const maxNameWait = 50

// Bounds on the rest of the metadata, so that its memory does not grow with
// a hostile file's size: an event's text is cut after maxEventText bytes
// (DDNet's console lines are at most 512), a player name after maxName bytes
// (DDNet's are at most 15), and players beyond maxPlayers are counted in a
// warning instead of listed.
const (
	maxEventText = 512
	maxName      = 64
	maxPlayers   = 100_000
)

// Codec is the teehistorian formats.Codec. The zero value is usable.
type Codec struct {
	// ChunkSize is the native size after which Split cuts a chunk at the
	// next tick boundary; 0 means DefaultChunkSize.
	ChunkSize int
	// MaxEvents bounds Metadata.Events where Split holds the events in
	// memory (a server running for days records many commands); later
	// events are counted in a warning. 0 means DefaultMaxEvents. It does
	// not apply when Split's Writer takes the events as they come
	// (formats.EventWriter, as the archive does), nor to SplitTail: a live
	// recording keeps every event, so nothing is left out.
	MaxEvents int

	// noSkim reads every record one by one (skimCommon's tests compare).
	noSkim bool
}

// New returns a Codec with the default chunk size.
func New() *Codec { return &Codec{ChunkSize: DefaultChunkSize} }

var _ formats.Codec = (*Codec)(nil)

// Name implements formats.Codec.
func (*Codec) Name() string { return Name }

// Detect implements formats.Codec: the file starts with the teehistorian
// magic UUID.
func (*Codec) Detect(head []byte) bool {
	return len(head) >= len(Magic) && bytes.Equal(head[:len(Magic)], Magic[:])
}

func (c *Codec) chunkSize() int {
	if c == nil || c.ChunkSize <= 0 {
		return DefaultChunkSize
	}
	return c.ChunkSize
}

// TickTime returns the offset of tick from the start of the recording.
func TickTime(tick int64) time.Duration { return time.Duration(tick) * TickDuration }

// Split implements formats.Codec. It streams: it holds one chunk (plus one
// record) in memory at a time, and when w is a formats.EventWriter, hands it
// every event as it is found instead of collecting them in Metadata.Events.
func (c *Codec) Split(ctx context.Context, r io.Reader, w formats.Writer) (*formats.Metadata, error) {
	rd, err := NewReader(r)
	if err != nil {
		return nil, err
	}
	hdr := rd.Header()
	if err := w.Header(hdr.Raw); err != nil {
		return nil, fmt.Errorf("teehistorian: write header: %w", err)
	}
	mb := newMetaBuilder(hdr)
	mb.maxEvents = DefaultMaxEvents
	if c != nil && c.MaxEvents > 0 {
		mb.maxEvents = c.MaxEvents
	}
	mb.sink, _ = w.(formats.EventWriter)
	rd.keep = rd.pos
	records, err := c.splitRecords(ctx, rd, mb, w, 0, appendResume(nil, &rd.st), 0, false)
	if err == nil {
		err = mb.flush(0)
	}
	if err != nil {
		return nil, err
	}
	if !rd.finished {
		mb.meta.Warnings = append(mb.meta.Warnings, fmt.Sprintf("file ends without FINISH at tick %d", rd.st.Tick))
	}
	return mb.finish(rd.st.Tick, records > 0, rd.finished), nil
}

// splitRecords reads the records from rd's position (rd.keep, whose
// state resume holds, starting the chunk of tick startTick), hands the
// chunks to w and observes the records at file offsets from observeFrom
// on. It returns how many records it read. With live set, a record cut
// short by the end of the input ends the split at the last complete
// record instead of failing (a growing file, live.go).
func (c *Codec) splitRecords(ctx context.Context, rd *Reader, mb *metaBuilder, w formats.Writer, startTick int64, resume []byte, observeFrom int64, live bool) (int, error) {
	target := c.chunkSize()
	emit := func(end int, ticks int64) error {
		ch := formats.Chunk{StartTick: startTick, Ticks: ticks, Time: TickTime(startTick), Resume: resume}
		if err := w.Chunk(ch, rd.buf[rd.keep:end]); err != nil {
			return fmt.Errorf("teehistorian: write chunk at tick %d: %w", startTick, err)
		}
		return nil
	}
	records, checkAt := 0, 0 // ctx is checked every 4096 records or so
	for {
		if records >= checkAt {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
			checkAt = records + 4096
		}
		it, err := rd.peek()
		if err != nil {
			if errIsEOF(err) || (live && rd.short) {
				break
			}
			return 0, err
		}
		if it.Tick > rd.st.Tick && rd.pos-rd.keep >= target {
			if err := emit(rd.pos, it.Tick-startTick); err != nil {
				return 0, err
			}
			rd.keep = rd.pos
			startTick = it.Tick
			resume = appendResume(resume[:0:0], &rd.st)
		}
		if rd.pos+it.Size-rd.keep > MaxChunkBytes {
			return 0, formats.Errorf(Name, it.Offset, "expected a tick boundary within %d bytes (tick %d is longer)", MaxChunkBytes, it.Tick)
		}
		if it.Offset >= observeFrom {
			mb.observe(it, &rd.st)
			if mb.err != nil {
				return 0, fmt.Errorf("teehistorian: event at tick %d: %w", it.Tick, mb.err)
			}
		}
		rd.commit()
		records++
		if !c.noSkim && !rd.finished {
			n, err := skimCommon(rd, mb, target, observeFrom)
			if err != nil {
				return 0, err
			}
			records += n
		}
		if rd.finished {
			tail, err := rd.rest(maxTrailing)
			if err != nil {
				return 0, err
			}
			if len(tail) > 0 {
				mb.meta.Warnings = append(mb.meta.Warnings, fmt.Sprintf("%d bytes after FINISH kept as they are", len(tail)))
			}
			break
		}
	}
	if rd.pos > rd.keep {
		if err := emit(rd.pos, rd.st.Tick+1-startTick); err != nil {
			return 0, err
		}
	}
	return records, nil
}

// skimCommon applies the run of records at rd's position that parseCommon
// decodes (a PLAYER_DIFF of a present player, an INPUT_DIFF of a client
// with an input, each field one byte) straight to rd's state: as
// splitRecords would, but without an Item, a peek and an apply each. Most
// of a file is such runs (the 200 five-minute games: 0.96 s of 3.8 s of
// CPU went to reading them one by one). They name no player and make no
// event; of the metadata only the expiry of a JOIN's wait for its
// player's name (metaBuilder.expire) moves with their ticks. It stops
// before a record it does not take, and before a PLAYER_DIFF whose new
// tick may start a chunk (target bytes reached) or would pass
// MaxChunkBytes: splitRecords decides those. It returns how many records
// it applied.
func skimCommon(rd *Reader, mb *metaBuilder, target int, observeFrom int64) (int, error) {
	st := &rd.st
	b := rd.buf[:rd.end]
	p, n := rd.pos, 0
	limit := rd.keep + MaxChunkBytes
	for {
		rest := b[p:]
		if len(rest) >= 3 && rest[0] < 0x40 && rest[1] < 0x80 && rest[2] < 0x80 {
			cid := int32(rest[0])
			c := &st.Clients[cid]
			if !c.Alive || p+3 > limit {
				break
			}
			if cid <= st.LastCid {
				// The record starts the next tick.
				if p-rd.keep >= target || st.Tick+1 > maxTick {
					break
				}
				st.Tick++
				if rd.base+int64(p) >= observeFrom {
					mb.expire(st.Tick)
				}
			}
			c.X += oneByteVarint(rest[1])
			c.Y += oneByteVarint(rest[2])
			st.LastCid = cid
			p += 3
			n++
			continue
		}
		if len(rest) >= inputRecordLen && rest[0] == inputDiffByte && rest[1] < 0x40 &&
			binary.LittleEndian.Uint64(rest[2:])&0x8080808080808080 == 0 && (rest[10]|rest[11])&0x80 == 0 {
			c := &st.Clients[rest[1]]
			if !c.HasInput || p+inputRecordLen > limit {
				break
			}
			for i := range c.Input {
				c.Input[i] += oneByteVarint(rest[2+i])
			}
			p += inputRecordLen
			n++
			continue
		}
		break
	}
	rd.pos = p
	return n, mb.err
}

// metaBuilder gathers metadata from the records.
type metaBuilder struct {
	meta    *formats.Metadata
	names   [MaxClients]string // current name per client
	auth    [MaxClients]string // current auth account per client
	players map[string]int     // name -> index in meta.Players
	join    [MaxClients]int    // index+1 of the client's JOIN event while it has no name

	maxEvents int
	// sink, when set, takes the events instead of meta.Events, in order
	// and without a bound. Events wait in queue behind the oldest JOIN
	// whose player is not named yet (join then holds qbase+index+1), so
	// that the JOIN goes out with the name; err is sink's first error.
	sink     formats.EventWriter
	queue    []queuedEvent
	qbase    int
	err      error
	dropped  int // events left out beyond maxEvents
	unlisted int // players left out beyond maxPlayers
	// msgNames says names come from start-info/change-info messages too:
	// files before version_minor 8 (DDNet 18.3) have no PLAYER_NAME. Later
	// files name players only by PLAYER_NAME, the server-side name.
	msgNames bool
}

func newMetaBuilder(h *Header) *metaBuilder {
	m := &formats.Metadata{
		Session:  h.GameUUID,
		TickRate: TickRate,
		Map:      h.MapName,
		Server:   h.ServerName,
		Attrs:    map[string]string{},
	}
	if id, err := uuid.Parse(h.GameUUID); err == nil {
		m.ID = id
	} else {
		m.Warnings = append(m.Warnings, fmt.Sprintf("header game_uuid %q is not a UUID", h.GameUUID))
	}
	if t, err := h.Start(); err == nil {
		m.Start = t
	} else if h.StartTime != "" {
		m.Warnings = append(m.Warnings, err.Error())
	}
	set := func(k, v string) {
		if v != "" {
			m.Attrs[k] = v
		}
	}
	set("version", strconv.Itoa(h.Version))
	if h.VersionMinor > 0 {
		set("version_minor", strconv.Itoa(h.VersionMinor))
	}
	set("server_version", h.ServerVersion)
	set("server_port", h.ServerPort)
	set("game_type", h.GameType)
	set("start_time", h.StartTime)
	set("prev_game_uuid", h.PrevGameUUID)
	set("map_size", h.MapSize)
	set("map_sha256", h.MapSHA256)
	set("map_crc", h.MapCRC)
	set("prng_description", h.PrngDescription)
	return &metaBuilder{meta: m, players: map[string]int{}, msgNames: h.VersionMinor < 8}
}

// queuedEvent is an event held back in metaBuilder.queue; wait marks a
// JOIN whose player has no name yet.
type queuedEvent struct {
	e    formats.Event
	wait bool
}

// full reports whether the events are at their bound; a caller that builds
// an expensive text asks first and counts the event as left out, so a long
// recording costs no formatting for the events it drops. With a sink there
// is no bound.
func (mb *metaBuilder) full() bool {
	return mb.sink == nil && len(mb.meta.Events) >= mb.maxEvents
}

// event appends an event, or counts it as left out when the events are at
// their bound. Its text is cut at maxEventText bytes.
func (mb *metaBuilder) event(tick int64, kind string, cid int32, text string) {
	mb.add(tick, kind, cid, text, false)
}

// joinEvent adds client cid's JOIN event: its player is named later
// (setName fills the name in).
func (mb *metaBuilder) joinEvent(tick int64, cid int32, text string) {
	if cid >= 0 && cid < MaxClients && mb.join[cid] > 0 && mb.sink != nil {
		mb.resolve(cid, "") // joined again before it had a name
	}
	if !mb.add(tick, formats.EventJoin, cid, text, cid >= 0 && cid < MaxClients) {
		return
	}
	if cid >= 0 && cid < MaxClients {
		if mb.sink == nil {
			mb.join[cid] = len(mb.meta.Events)
		} else {
			mb.join[cid] = mb.qbase + len(mb.queue)
		}
	}
}

// add is event; with a sink, wait holds the event (and every later one)
// back until resolve. It reports whether the event was kept.
func (mb *metaBuilder) add(tick int64, kind string, cid int32, text string, wait bool) bool {
	if mb.full() {
		mb.dropped++
		return false
	}
	e := formats.Event{Tick: tick, Time: TickTime(tick), Kind: kind, Text: truncate(text, maxEventText)}
	if cid >= 0 && cid < MaxClients {
		e.Player = mb.names[cid]
		e.PlayerID = mb.auth[cid]
	}
	switch {
	case mb.sink == nil:
		mb.meta.Events = append(mb.meta.Events, e)
	case len(mb.queue) == 0 && !wait:
		mb.send(e)
	default:
		mb.queue = append(mb.queue, queuedEvent{e: e, wait: wait})
		mb.flush(maxQueued)
	}
	return true
}

// send hands e to the sink.
func (mb *metaBuilder) send(e formats.Event) {
	if mb.err == nil {
		mb.err = mb.sink.Event(e)
	}
}

// resolve marks client cid's waiting JOIN as ready to go, named name when
// name is not empty, and sends what no longer waits.
func (mb *metaBuilder) resolve(cid int32, name string) {
	j := mb.join[cid] - 1 - mb.qbase
	mb.join[cid] = 0
	if j < 0 || j >= len(mb.queue) {
		return
	}
	if name != "" {
		mb.queue[j].e.Player = name
	}
	mb.queue[j].wait = false
	mb.flush(maxQueued)
}

// expire lets the JOINs queued more than maxNameWait ticks before tick go
// out without a name, with the events behind them.
func (mb *metaBuilder) expire(tick int64) {
	if len(mb.queue) == 0 || !mb.queue[0].wait || mb.queue[0].e.Tick+maxNameWait >= tick {
		return
	}
	for i := range mb.queue {
		q := &mb.queue[i]
		if q.e.Tick+maxNameWait >= tick {
			break
		}
		if q.wait {
			q.wait = false
			for cid, j := range mb.join {
				if j == mb.qbase+i+1 {
					mb.join[cid] = 0
				}
			}
		}
	}
	mb.flush(maxQueued)
}

// flush sends the queued events up to the first that waits, and beyond it
// while more than keep are queued (a JOIN then goes out without a name).
func (mb *metaBuilder) flush(keep int) error {
	if mb.sink == nil {
		return nil
	}
	n := 0
	for n < len(mb.queue) && (!mb.queue[n].wait || len(mb.queue)-n > keep) {
		mb.send(mb.queue[n].e)
		n++
	}
	if n > 0 {
		mb.qbase += n
		mb.queue = append(mb.queue[:0], mb.queue[n:]...)
	}
	return mb.err
}

func (mb *metaBuilder) setName(tick int64, cid int32, name string) {
	if cid < 0 || cid >= MaxClients || name == "" {
		return
	}
	name = truncate(name, maxName)
	mb.names[cid] = name
	if j := mb.join[cid]; j > 0 && mb.sink != nil {
		mb.resolve(cid, name) // expire let go of a JOIN that waited too long
	} else if j > 0 {
		if mb.meta.Events[j-1].Tick+maxNameWait >= tick {
			mb.meta.Events[j-1].Player = name
		}
		mb.join[cid] = 0
	}
	if _, ok := mb.players[name]; !ok {
		if len(mb.meta.Players) >= maxPlayers {
			mb.unlisted++
			return
		}
		mb.players[name] = len(mb.meta.Players)
		mb.meta.Players = append(mb.meta.Players, formats.Player{Name: name, ID: mb.auth[cid]})
	}
}

func (mb *metaBuilder) player(cid int32) *formats.Player {
	if cid < 0 || cid >= MaxClients || mb.names[cid] == "" {
		return nil
	}
	i, ok := mb.players[mb.names[cid]]
	if !ok {
		return nil
	}
	return &mb.meta.Players[i]
}

// truncate cuts s to at most n bytes on a UTF-8 boundary, marking the cut
// with an ellipsis.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// observe looks at one record before it is applied to st.
func (mb *metaBuilder) observe(it *Item, st *State) {
	mb.expire(it.Tick)
	switch it.Type {
	case ItemMessage:
		if mb.msgNames && it.Cid >= 0 && it.Cid < MaxClients {
			if name, ok := MessageName(it.Data, st.Clients[it.Cid].Proto7); ok {
				mb.setName(it.Tick, it.Cid, name)
			}
		}
	case ItemJoin:
		proto := "0.6"
		if it.Cid >= 0 && it.Cid < MaxClients && st.Clients[it.Cid].Proto7 {
			proto = "0.7"
		}
		if it.Cid >= 0 && it.Cid < MaxClients {
			mb.names[it.Cid], mb.auth[it.Cid] = "", ""
		}
		if mb.full() {
			mb.dropped++
		} else {
			mb.joinEvent(it.Tick, it.Cid, fmt.Sprintf("client %d joined (%s)", it.Cid, proto))
		}
	case ItemDrop:
		if mb.full() {
			mb.dropped++
		} else {
			text := fmt.Sprintf("client %d left", it.Cid)
			if len(it.Data) > 0 {
				text += ": " + string(bytes.ToValidUTF8(it.Data[:min(len(it.Data), maxEventText)], []byte("\uFFFD")))
			}
			mb.event(it.Tick, formats.EventDrop, it.Cid, text)
		}
		if it.Cid >= 0 && it.Cid < MaxClients && mb.sink != nil {
			mb.resolve(it.Cid, "")
		} else if it.Cid >= 0 && it.Cid < MaxClients {
			mb.join[it.Cid] = 0
		}
	case ItemConsoleCommand:
		if mb.full() {
			mb.dropped++
		} else {
			mb.event(it.Tick, formats.EventCommand, it.Cid, CommandText(it.Cmd, it.Args))
		}
	case ItemEx:
		f, ok := ParseEx(it.Ex, it.Data)
		if !ok {
			return
		}
		switch it.Ex {
		case ExPlayerName:
			mb.setName(it.Tick, f.Cid, f.Name)
		case ExAuthInit, ExAuthLogin, ExAuthInitRole:
			if f.Cid >= 0 && f.Cid < MaxClients {
				mb.auth[f.Cid] = f.Name
				if p := mb.player(f.Cid); p != nil && p.ID == "" {
					p.ID = f.Name
				}
			}
			mb.event(it.Tick, formats.EventLogin, f.Cid, fmt.Sprintf("rcon login as %s (%s)", f.Name, authLevel(f.Level, f.Role)))
		case ExAuthLogout:
			mb.event(it.Tick, "logout", f.Cid, "rcon logout")
			if f.Cid >= 0 && f.Cid < MaxClients {
				mb.auth[f.Cid] = ""
			}
		case ExPlayerFinish:
			mb.event(it.Tick, formats.EventFinish, f.Cid, "finish in "+raceTime(f.TimeTicks))
		case ExTeamFinish:
			mb.event(it.Tick, formats.EventFinish, -1, fmt.Sprintf("team %d finish in %s", f.Team, raceTime(f.TimeTicks)))
		case ExPlayerTeam:
			mb.event(it.Tick, formats.EventTeam, f.Cid, fmt.Sprintf("team %d", f.Team))
			if p := mb.player(f.Cid); p != nil {
				p.Team = ""
				if f.Team != 0 {
					p.Team = strconv.Itoa(int(f.Team))
				}
			}
		case ExDDNetVersion:
			mb.event(it.Tick, "client", f.Cid, fmt.Sprintf("%s (%d)", f.Name, f.Version))
		case ExSaveSuccess:
			mb.event(it.Tick, "save", -1, fmt.Sprintf("team %d saved (save id %s)", f.Team, f.SaveID))
		case ExLoadSuccess:
			mb.event(it.Tick, "load", -1, fmt.Sprintf("team %d loaded (save id %s)", f.Team, f.SaveID))
		case ExPlayerSwap:
			mb.event(it.Tick, "swap", f.Cid, fmt.Sprintf("client %d swapped with client %d", f.Cid, f.Cid2))
		}
	}
}

func (mb *metaBuilder) finish(lastTick int64, records, finished bool) *formats.Metadata {
	m := mb.meta
	if records {
		m.Ticks = lastTick + 1
	}
	m.Duration = TickTime(lastTick)
	m.Attrs["finished"] = strconv.FormatBool(finished)
	switch {
	case mb.dropped > 0 && mb.maxEvents == math.MaxInt:
		// A live recording grown by an older version, which capped.
		m.Warnings = append(m.Warnings, fmt.Sprintf("%d events left out of the metadata", mb.dropped))
	case mb.dropped > 0:
		m.Warnings = append(m.Warnings, fmt.Sprintf("%d events after the first %d left out of the metadata", mb.dropped, mb.maxEvents))
	}
	if mb.unlisted > 0 {
		m.Warnings = append(m.Warnings, fmt.Sprintf("%d players after the first %d left out of the metadata", mb.unlisted, maxPlayers))
	}
	return m
}

func authLevel(l int32, role string) string {
	if role != "" {
		return role
	}
	switch l {
	case 1:
		return "helper"
	case 2:
		return "moderator"
	case 3:
		return "admin"
	}
	return "level " + strconv.Itoa(int(l))
}

// raceTime formats a race time in ticks as m:ss.cc.
func raceTime(ticks int32) string {
	cs := int64(ticks) * 100 / TickRate
	return fmt.Sprintf("%d:%02d.%02d", cs/6000, cs/100%60, cs%100)
}
