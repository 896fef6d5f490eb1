// This file is the StarCraft II scoreboard: each player's result, race and
// team from replay.details (metadata.go keeps them in attrs), observers
// (details or lobby observe Spectator or Referee), and actions per minute
// counted at ingest from replay.game.events.

package sc2replay

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/icza/s2prot"
	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/sc2replay/mpq"
)

// actionEvents are the game events counted as a player's actions: the
// commands a player gives (Cmd, and the retargets of a queued command,
// CmdUpdateTargetPoint and CmdUpdateTargetUnit), selections
// (SelectionDelta), control groups (ControlGroupUpdate) and resource
// trades; not camera moves, pings, trigger or sync events. These are
// sc2reader's "player actions" (its APM tracker's), which its tests and
// ours compare with.
var actionEvents = map[string]bool{
	"Cmd": true, "CmdUpdateTargetPoint": true, "CmdUpdateTargetUnit": true,
	"SelectionDelta": true, "ControlGroupUpdate": true, "ResourceTrade": true,
}

// maxGameEvents bounds the game events counted: a long real game holds a
// few hundred thousand.
const maxGameEvents = 1 << 22

// scoreKeys are what a player's stored score holds.
var scoreKeys = []string{"apm", "actions"}

// storeActions counts each player's actions in replay.game.events and
// stores them, with the actions per minute of the game's real-time length
// (m.Duration), under formats.ScoreKey. byPlayerID and byUserID name
// who an event's userid is, as for chat. A damaged stream keeps the counts
// read before the damage, with a warning.
func (r *replay) storeActions(m *formats.Metadata, byPlayerID, byUserID []player) {
	counts, err := r.countActions(m, byPlayerID, byUserID)
	if err != nil {
		m.Warnings = append(m.Warnings, fmt.Sprintf("actions per minute may be low: %v", err))
	}
	mins := m.Duration.Minutes()
	for i, n := range counts {
		if n == 0 && m.Attrs[fmt.Sprintf("player.%d.ai", i)] == "true" {
			continue // computers act without game events
		}
		st := map[string]float64{"actions": float64(n)}
		if mins > 0 {
			st["apm"] = math.Round(float64(n) / mins)
		}
		m.Attrs[formats.ScoreKey(i)] = formats.FormatScore(scoreKeys, st)
	}
}

// countActions returns the actions of each of m.Players. It walks the
// game events itself, decoding each one's user and type and skipping its
// body (skipBitPacked): decoding the bodies into values took ten times
// as long as the rest of the metadata.
func (r *replay) countActions(m *formats.Metadata, byPlayerID, byUserID []player) ([]int, error) {
	counts := make([]int, len(m.Players))
	b, off, err := r.stream(fileGameEvents)
	if errors.Is(err, mpq.ErrNotExist) {
		return counts, nil
	}
	if err != nil {
		return counts, err
	}
	es, ok := r.proto.stream(fileGameEvents)
	if !ok {
		return counts, nil
	}
	byToon := map[string]int{}
	for i, p := range m.Players {
		if p.ID != "" {
			if _, dup := byToon[p.ID]; !dup {
				byToon[p.ID] = i
			}
		}
	}
	// who maps a user id (or, before 2.0, a 1-based details player id) to
	// an index in m.Players, -1 for none; filled as ids are met.
	who := map[int64]int{}
	index := func(id int64) int {
		if i, ok := who[id]; ok {
			return i
		}
		i := -1
		if r.baseBuild < 24764 {
			if id >= 1 && id <= int64(len(byPlayerID)) && id <= int64(len(m.Players)) {
				i = int(id - 1)
			}
		} else if id >= 0 && id < int64(len(byUserID)) && byUserID[id].toon != "" {
			if j, ok := byToon[byUserID[id].toon]; ok {
				i = j
			}
		}
		who[id] = i
		return i
	}
	d := newDec(r.proto, b)
	bp := bitPacked{d}
	p := r.proto
	n := 0
	for !d.done() {
		if n >= maxGameEvents {
			return counts, formats.Errorf(Name, off, "expected at most %d events in %s", maxGameEvents, fileGameEvents)
		}
		var name string
		var id int64
		err := d.run(func() {
			d.root()
			start := d.idx
			skipBitPacked(bp, p.svarUint32, 0)
			user, _ := bp.instance(p.userID, 0).(s2prot.Struct)
			if r.baseBuild < 24764 {
				id = user.Int("playerId")
			} else {
				id = user.Int("userId")
			}
			eid, ok := bp.instance(es.idType, 0).(int64)
			if !ok {
				d.fail("expected an event id")
			}
			et, ok := es.types[eid]
			if !ok {
				d.fail("event id %d not in the table", eid)
			}
			skipBitPacked(bp, et.typeid, 0)
			d.byteAlign()
			if d.idx == start {
				d.fail("event used no bytes")
			}
			name = et.et.Name
		})
		if err != nil {
			return counts, &formats.Error{Format: Name, Offset: off, What: fmt.Sprintf("expected valid %s; read %d events before", fileGameEvents, n), Err: err}
		}
		n++
		if actionEvents[name] {
			if i := index(id); i >= 0 {
				counts[i]++
			}
		}
	}
	return counts, nil
}

// skipBitPacked reads past one bit-packed value of typeid as
// bitPacked.instance decodes it, under the same budget and bounds, without
// building it.
func skipBitPacked(d bitPacked, typeid, depth int) {
	d.spend(depth)
	t := &d.p.types[typeid]
	switch t.kind {
	case kInt:
		d.readBits(t.bits)
	case kStruct:
		for i := range t.fields {
			skipBitPacked(d, t.fields[i].typeid, depth+1)
		}
	case kChoice:
		tag := t.offset + int64(d.readBits(t.bits))
		f := t.choice(tag)
		if f == nil {
			d.fail("choice tag %d not in the table", tag)
		}
		skipBitPacked(d, f.typeid, depth+1)
	case kArray:
		n := t.offset + int64(d.readBits(t.bits))
		if mb := int64(d.p.minBits[t.elem]); n < 0 || mb > 0 && n > int64(d.leftBits())/mb {
			d.fail("array of %d elements in %d bits", n, d.leftBits())
		}
		for range n {
			skipBitPacked(d, t.elem, depth+1)
		}
	case kBitArray:
		n := t.offset + int64(d.readBits(t.bits))
		if n < 0 || n > int64(d.leftBits()) {
			d.fail("bit array of %d bits in %d bits", n, d.leftBits())
		}
		for n > 0 {
			c := min(n, 64)
			d.readBits(uint8(c))
			n -= c
		}
	case kBlob:
		d.aligned(t.offset + int64(d.readBits(t.bits)))
	case kOptional:
		if d.readBits(1) != 0 {
			skipBitPacked(d, t.elem, depth+1)
		}
	case kBool:
		d.readBits(1)
	case kFourCC:
		d.readBits(32)
	}
}

// scoreColumns describe the scoreboard's columns.
var scoreColumns = []formats.ScoreColumn{
	{Key: "result", Label: "Result", Unit: "text", Help: "replay.details m_result: win (Victory), loss (Defeat), tie"},
	{Key: "race", Label: "Race", Unit: "text", Help: "the race played (replay.details m_race, in English)"},
	{Key: "apm", Label: "APM", Help: "actions per minute of the game's real-time length"},
	{Key: "actions", Label: "Actions", Help: "game events of the player: Cmd, CmdUpdateTargetPoint, CmdUpdateTargetUnit, SelectionDelta, ControlGroupUpdate, ResourceTrade"},
}

// Scoreboard implements formats.Scorer: results, races and teams from the
// stored metadata, actions from the stored score; a replay ingested
// before scoreboards has its metadata decoded again from the file (one
// chunk, at most MaxSize bytes).
func (c *Codec) Scoreboard(ctx context.Context, src formats.Source) (*formats.Scoreboard, error) {
	m := src.Meta()
	if _, ok := formats.ScoreRows(m); !ok && len(src.Chunks()) > 0 && len(m.Players) > 0 {
		native, _, err := src.ReadChunk(ctx, 0)
		if err != nil {
			return nil, fmt.Errorf("sc2replay: scoreboard: reading chunk 0: %w", err)
		}
		if again, err := c.metadata(native); err == nil {
			m = again
		}
	}
	rows, _ := formats.ScoreRows(m)
	sb := &formats.Scoreboard{Columns: scoreColumns, Players: rows}
	teams := map[string]int{}
	for i := range sb.Players {
		r := &sb.Players[i]
		key := "player." + strconv.Itoa(i) + "."
		obs := m.Attrs[key+"observe"]
		r.Observer = r.Team == "observer" || obs == "Spectator" || obs == "Referee"
		r.Text = map[string]string{}
		if res := formats.NormalResult(m.Attrs[key+"result"]); res != "" {
			r.Text["result"] = res
		}
		if race := m.Attrs[key+"race"]; race != "" && !r.Observer {
			r.Text["race"] = race
		}
		if r.Observer {
			continue
		}
		ti, ok := teams[r.Team]
		if !ok {
			ti = len(sb.Teams)
			teams[r.Team] = ti
			sb.Teams = append(sb.Teams, formats.ScoreRow{Name: "team " + r.Team, Team: r.Team, Stats: map[string]float64{}, Text: map[string]string{}})
		}
		t := &sb.Teams[ti]
		if res := r.Text["result"]; res != "" && t.Text["result"] == "" {
			t.Text["result"] = res
		}
		if n, ok := r.Stats["actions"]; ok {
			t.Stats["actions"] += n
		}
	}
	sb.Notes = append(sb.Notes, "APM counts "+scoreColumns[3].Help+", over the game's real-time length ("+m.Attrs["game_speed"]+" speed); camera moves are not actions. The replay's own gamemetadata.json APM (4.x on) counts otherwise.")
	return sb, nil
}

var _ formats.Scorer = (*Codec)(nil)
