// This file turns a decoded replay into formats.Metadata: version, timing,
// map, players with clean names and clan tags, teams (from the lobby slots
// before 2.0), picked races, observers, and chat.

package sc2replay

import (
	"fmt"
	"html"
	"strconv"
	"strings"
	"time"

	"github.com/icza/s2prot"
	"github.com/replayarchive/replay/formats"
)

// LoopsPerGameSecond is the game-loop rate in game time (the WoL/HotS game
// clock). Real time runs speedFactor times faster: 22.4 loops/s at Faster,
// which is also the LotV clock.
const LoopsPerGameSecond = 16

// gameSpeeds pairs the game speeds (details m_gameSpeed 0..4) with their
// names and real-time factors.
var gameSpeeds = [...]struct {
	name   string
	factor float64
}{
	{"Slower", 0.6}, {"Slow", 0.8}, {"Normal", 1.0}, {"Fast", 1.2}, {"Faster", 1.4},
}

const speedFaster = 4

// races maps the localised race names found in details m_race (English,
// German, Spanish, Portuguese, Italian, Polish, Russian, Korean, Chinese) to
// the English name.
var races = map[string]string{
	"Terran": "Terran", "Terraner": "Terran", "Terrano": "Terran", "Terrani": "Terran", "Terrans": "Terran",
	"테란": "Terran", "人類": "Terran", "人类": "Terran", "Терран": "Terran", "Терраны": "Terran",
	"Zerg": "Zerg", "저그": "Zerg", "蟲族": "Zerg", "异虫": "Zerg", "Зерг": "Zerg", "Зерги": "Zerg", "Zergi": "Zerg",
	"Protoss": "Protoss", "프로토스": "Protoss", "神族": "Protoss", "星灵": "Protoss", "Протосс": "Protoss",
	"Протоссы": "Protoss", "Protosi": "Protoss",
}

// raceNames are the race ids of lobby slots (m_racePref.m_race).
var raceNames = [...]string{"Terran", "Zerg", "Protoss", "Random"}

var resultNames = [...]string{"Unknown", "Victory", "Defeat", "Tie"}
var controlNames = [...]string{"Open", "Closed", "Human", "Computer"}
var observeNames = [...]string{"Participant", "Spectator", "Referee"}

// regionNames maps toon regions to their short names.
var regionNames = map[int64]string{1: "us", 2: "eu", 3: "kr", 5: "cn", 6: "sea", 98: "local"}

// expansionDigests identify the expansion from the details cache handles
// (SHA-256 of the standard data mod), newest first.
var expansionDigests = [...]struct{ name, digest string }{
	{"LotV", "d92dfc48c484c59154270b924ad7d57484f2ab9a47621c7ab16431bf66c53b40"},
	{"HotS", "66093832128453efffbb787c80b7d3eec1ad81bde55c83c930dea79c4e505a04"},
	{"WoL", "421c8aa0f3619b652d23a2735dfee812ab644228235e7a797edecfe8b67da30e"},
}

// lotvBaseBuild is the first LotV-era base build (sc2reader uses it to switch
// its clock to real time).
const lotvBaseBuild = 34784

func enumName(names []string, i int64) string {
	if i >= 0 && i < int64(len(names)) {
		return names[i]
	}
	return "Unknown"
}

// headerMetadata fills what the replay header alone tells: version, loops,
// and timing assuming the given speed.
func (r *replay) headerMetadata(speed int64) *formats.Metadata {
	v := r.header.Structv("version")
	m := &formats.Metadata{Ticks: r.loops, Attrs: map[string]string{}}
	m.Attrs["version"] = fmt.Sprintf("%d.%d.%d.%d", v.Int("major"), v.Int("minor"), v.Int("revision"), v.Int("build"))
	m.Attrs["base_build"] = strconv.Itoa(r.baseBuild)
	if db := r.header.Int("dataBuildNum"); db != 0 {
		m.Attrs["data_build"] = strconv.FormatInt(db, 10)
	}
	m.Attrs["game_loops"] = strconv.FormatInt(r.loops, 10)
	setTiming(m, speed)
	h := r.arc.Header()
	m.Attrs["mpq.format_version"] = strconv.Itoa(int(h.FormatVersion))
	m.Attrs["mpq.sector_size"] = strconv.Itoa(r.arc.SectorSize())
	return m
}

// setTiming sets TickRate, Duration and the attrs that explain them.
func setTiming(m *formats.Metadata, speed int64) {
	if speed < 0 || speed >= int64(len(gameSpeeds)) {
		speed = speedFaster
	}
	gs := gameSpeeds[speed]
	m.TickRate = LoopsPerGameSecond * gs.factor
	m.Duration = loopTime(m.Ticks, m.TickRate)
	m.Attrs["game_speed"] = gs.name
	m.Attrs["duration_basis"] = fmt.Sprintf("real time: %g loops/s (%s, %d loops per game second × %g)",
		m.TickRate, gs.name, LoopsPerGameSecond, gs.factor)
	m.Attrs["game_seconds"] = strconv.FormatFloat(float64(m.Ticks)/LoopsPerGameSecond, 'f', 2, 64)
}

// loopTime converts a game loop to real time at rate loops per second.
func loopTime(loop int64, rate float64) time.Duration {
	if rate <= 0 {
		return 0
	}
	return time.Duration(float64(loop) / rate * float64(time.Second))
}

// player is what metadata needs to know about one participant.
type player struct {
	name, clan, toon string
}

// metadata decodes details, initData and message events into Metadata. The
// replay must have a protocol.
func (r *replay) metadata() (*formats.Metadata, error) {
	det, err := r.details()
	if err != nil {
		return nil, err
	}
	ini, err := r.initData()
	if err != nil {
		return nil, err
	}
	lobby := ini.Structv("syncLobbyState")
	m := r.headerMetadata(det.Int("gameSpeed"))

	m.Map = det.Stringv("title")
	end := fileTime(det.Int("timeUTC"))
	if !end.IsZero() {
		m.Attrs["end_time"] = end.Format(time.RFC3339)
		m.Start = end.Add(-m.Duration).Round(time.Second)
		m.Attrs["time_local_offset"] = time.Duration(det.Int("timeLocalOffset") * 100).String()
	}
	if exp := expansion(det); exp != "" {
		m.Attrs["expansion"] = exp
	}
	gd := lobby.Structv("gameDescription")
	if gd.Bool("isCoopMode") {
		m.Attrs["coop"] = "true" // also set below when a slot has a commander
	}
	if opts := gd.Structv("gameOptions"); opts != nil {
		if v, ok := opts["amm"].(bool); ok {
			m.Attrs["ladder"] = strconv.FormatBool(v)
		}
		if v, ok := opts["competitive"].(bool); ok {
			m.Attrs["competitive"] = strconv.FormatBool(v)
		}
	}
	if mf := gd.Stringv("mapFileName"); mf != "" {
		m.Attrs["map_file"] = mf
	}
	if det.Bool("isBlizzardMap") {
		m.Attrs["blizzard_map"] = "true"
	}

	users := lobby.Array("userInitialData")
	slots := lobby.Array("lobbyState", "slots")
	slotOf := detailsSlots(r.baseBuild, det.Array("playerList"), slots, users)
	picked := r.pickedRaces()

	// Participants in details order; byPlayerID maps the 1-based details
	// index (pre-24764 message events) to them.
	var byPlayerID []player
	seen := map[string]bool{}
	region := ""
	for di, pl := range det.Array("playerList") {
		p, ok := pl.(s2prot.Struct)
		if !ok {
			continue
		}
		raw := p.Stringv("name")
		name, clan := cleanName(raw)
		toon := toonString(p.Structv("toon"))
		if region == "" {
			region = regionNames[p.Int("toon", "region")]
		}
		var slot s2prot.Struct
		si := slotOf[di]
		if si >= 0 {
			slot, _ = slots[si].(s2prot.Struct)
		}
		if slot != nil {
			if uid, ok := slot["userId"].(int64); ok && uid >= 0 && uid < int64(len(users)) {
				if u, ok := users[uid].(s2prot.Struct); ok && u.Stringv("name") == name {
					if ct := u.Stringv("clanTag"); ct != "" {
						clan = ct
					}
				}
			}
		}
		idx := len(m.Players)
		key := fmt.Sprintf("player.%d.", idx)
		control, observe := p.Int("control"), p.Int("observe")
		if r.baseBuild < 24764 {
			// Pre-2.0 details carry no reliable control/observe; only humans
			// and computers (no toon) appear there.
			control, observe = 2, 0
			if p.Int("toon", "id") == 0 {
				control = 3
			}
		}
		team := p.Int("teamId")
		if r.baseBuild < 24764 {
			// details m_teamId does not give the teams before 2.0; the
			// lobby slot does.
			m.Attrs[key+"details_team_id"] = strconv.FormatInt(team, 10)
			if t, ok := slot["teamId"].(int64); ok {
				team = t
			} else {
				m.Warnings = append(m.Warnings, fmt.Sprintf("player %d (%s): no lobby slot found; team taken from details, which is unreliable before 2.0", idx, name))
			}
		}
		fp := formats.Player{Name: name, ID: toon, Team: strconv.FormatInt(team+1, 10)}
		if control == 3 {
			fp.ID = ""
		}
		if observe != 0 {
			fp.Team = "observer"
		}
		m.Players = append(m.Players, fp)
		if full := shownName(raw); full != name {
			m.Attrs[key+"name_full"] = full
		}
		if clan != "" {
			m.Attrs[key+"clan"] = clan
		}
		rl := p.Stringv("race")
		m.Attrs[key+"race"] = raceName(rl)
		if rl != m.Attrs[key+"race"] {
			m.Attrs[key+"race_local"] = rl
		}
		if pr, ok := picked[si]; ok && si >= 0 {
			m.Attrs[key+"race_picked"] = pr
		} else if slot != nil {
			if rp := slot.Structv("racePref"); rp != nil {
				if id, ok := rp["race"].(int64); ok {
					m.Attrs[key+"race_picked"] = enumName(raceNames[:], id)
				} else {
					m.Attrs[key+"race_picked"] = "Random"
				}
			}
		}
		if slot != nil {
			if c := slot.Stringv("commander"); c != "" {
				m.Attrs[key+"commander"] = c
				m.Attrs["coop"] = "true" // commanders exist only in co-op
			}
		}
		m.Attrs[key+"result"] = enumName(resultNames[:], p.Int("result"))
		m.Attrs[key+"control"] = enumName(controlNames[:], control)
		m.Attrs[key+"observe"] = enumName(observeNames[:], observe)
		if control == 3 {
			m.Attrs[key+"ai"] = "true"
		}
		m.Attrs[key+"team_id"] = strconv.FormatInt(team, 10)
		byPlayerID = append(byPlayerID, player{name: name, clan: clan, toon: fp.ID})
		if fp.ID != "" {
			seen[fp.ID] = true
		}
	}
	m.Warnings = append(m.Warnings, teamResultWarnings(m)...)
	if region != "" {
		m.Attrs["region"] = region
		m.Server = region
	}

	// Users by user id (message events from 24764 on), and observers who
	// are in the lobby but not in details.
	byUserID := make([]player, len(users))
	for uid, u := range users {
		us, ok := u.(s2prot.Struct)
		if !ok {
			continue
		}
		byUserID[uid].name = us.Stringv("name")
		byUserID[uid].clan = us.Stringv("clanTag")
	}
	for _, s := range slots {
		st, ok := s.(s2prot.Struct)
		if !ok {
			continue
		}
		uid, ok := st["userId"].(int64)
		if !ok || uid < 0 || uid >= int64(len(users)) {
			continue
		}
		toon := st.Stringv("toonHandle")
		byUserID[uid].toon = toon
		obs := st.Int("observe")
		if obs == 0 || st.Int("control") != 2 || toon == "" || seen[toon] || byUserID[uid].name == "" {
			continue
		}
		seen[toon] = true
		key := fmt.Sprintf("player.%d.", len(m.Players))
		m.Players = append(m.Players, formats.Player{Name: byUserID[uid].name, ID: toon, Team: "observer"})
		if c := byUserID[uid].clan; c != "" {
			m.Attrs[key+"clan"] = c
		}
		m.Attrs[key+"observe"] = enumName(observeNames[:], obs)
		m.Attrs[key+"control"] = "Human"
	}

	// Chat.
	chats, err := r.chat(m, byPlayerID, byUserID)
	if err != nil {
		m.Warnings = append(m.Warnings, fmt.Sprintf("chat may be incomplete: %v", err))
	}
	m.Attrs["chat_messages"] = strconv.Itoa(chats)
	r.storeActions(m, byPlayerID, byUserID) // the scoreboard's APM (scoreboard.go)
	return m, nil
}

// detailsSlots returns, per details player, the index of its lobby slot in
// slots, or -1. From 2.0 (base build 24764) details name the working-set
// slot; before that, details list the playing slots (humans and computers,
// not observers) in slot order, which is checked against the user names.
func detailsSlots(baseBuild int, players, slots, users []any) []int {
	out := make([]int, len(players))
	for i := range out {
		out[i] = -1
	}
	slotStruct := func(i int) s2prot.Struct {
		s, _ := slots[i].(s2prot.Struct)
		return s
	}
	if baseBuild >= 24764 {
		byWS := map[int64]int{}
		for i := range slots {
			if ws, ok := slotStruct(i)["workingSetSlotId"].(int64); ok {
				byWS[ws] = i
			}
		}
		for i, pl := range players {
			p, _ := pl.(s2prot.Struct)
			if ws, ok := p["workingSetSlotId"].(int64); ok {
				if si, ok := byWS[ws]; ok {
					out[i] = si
				}
			}
		}
		return out
	}
	var playing []int
	for i := range slots {
		s := slotStruct(i)
		if c := s.Int("control"); (c == 2 || c == 3) && s.Int("observe") == 0 {
			playing = append(playing, i)
		}
	}
	if len(playing) != len(players) {
		return out
	}
	for i, pl := range players {
		p, _ := pl.(s2prot.Struct)
		s := slotStruct(playing[i])
		if uid, ok := s["userId"].(int64); ok && uid >= 0 && uid < int64(len(users)) {
			u, _ := users[uid].(s2prot.Struct)
			if name, _ := cleanName(p.Stringv("name")); u.Stringv("name") != name {
				for j := range out {
					out[j] = -1 // the order does not hold: trust none of it
				}
				return out
			}
		}
		out[i] = playing[i]
	}
	return out
}

// pickedRaces returns the race picked in the lobby per slot index, from
// replay.attributes.events; nil when the replay has none or it is damaged.
func (r *replay) pickedRaces() map[int]string {
	b, _, err := r.stream(fileAttributes)
	if err != nil {
		return nil
	}
	attrs, err := parseAttributes(b, r.baseBuild)
	if err != nil {
		return nil
	}
	return pickedRaces(attrs)
}

// teamResultWarnings checks that the players of each team share one result
// (Victory, Defeat or Tie; Unknown is not compared).
func teamResultWarnings(m *formats.Metadata) []string {
	type seen struct{ result, player string }
	first := map[string]seen{}
	var out []string
	for i, p := range m.Players {
		res := m.Attrs[fmt.Sprintf("player.%d.result", i)]
		if p.Team == "observer" || res == "" || res == "Unknown" {
			continue
		}
		f, ok := first[p.Team]
		if !ok {
			first[p.Team] = seen{res, p.Name}
			continue
		}
		if f.result != res {
			out = append(out, fmt.Sprintf("team %s: %s has result %s but %s has %s", p.Team, f.player, f.result, p.Name, res))
		}
	}
	return out
}

// maxMessageEvents bounds the message events metadata reads for chat; real
// replays hold a few thousand (chat, pings, loading progress).
const maxMessageEvents = 1 << 15

// chat appends the chat messages of replay.message.events to m.Events and
// returns how many there were. It stops with an error after
// maxMessageEvents events, keeping what it read.
func (r *replay) chat(m *formats.Metadata, byPlayerID, byUserID []player) (int, error) {
	evs, err := r.events(fileMessageEvents)
	if err != nil {
		return 0, err
	}
	chats := 0
	for {
		e, ok := evs.next()
		if !ok {
			return chats, evs.Err()
		}
		if evs.n > maxMessageEvents {
			return chats, formats.Errorf(Name, evs.off, "expected at most %d events in %s", maxMessageEvents, fileMessageEvents)
		}
		if e.Name != "Chat" {
			continue
		}
		chats++
		ev := formats.Event{Tick: e.Loop(), Time: loopTime(e.Loop(), m.TickRate), Kind: formats.EventChat, Text: e.Stringv("string")}
		var who player
		if r.baseBuild < 24764 {
			if pid := e.Int("userid", "playerId"); pid >= 1 && pid <= int64(len(byPlayerID)) {
				who = byPlayerID[pid-1]
			}
		} else if uid := e.Int("userid", "userId"); uid >= 0 && uid < int64(len(byUserID)) {
			who = byUserID[uid]
		}
		ev.Player, ev.PlayerID = who.name, who.toon
		m.Events = append(m.Events, ev)
	}
}

// fileTime converts a Windows FILETIME (100 ns since 1601) to UTC; zero for
// zero.
func fileTime(ft int64) time.Time {
	if ft == 0 {
		return time.Time{}
	}
	const unixEpoch = 116444736000000000 // 1970-01-01 in FILETIME units
	return time.Unix(0, 0).Add(time.Duration(ft-unixEpoch) * 100).UTC()
}

// cleanName strips the markup SC2 puts in details names: "<sp/>" separators,
// HTML escapes (4.x), and a leading clan tag in [] (2.x) or <> (3.x, 4.x).
// Battle.net names are letters and digits only, so a leading bracket always
// starts a tag.
func cleanName(raw string) (name, clan string) {
	name = strings.ReplaceAll(raw, "<sp/>", "")
	if strings.Contains(name, "&") {
		name = html.UnescapeString(name)
	}
	if len(name) > 0 && (name[0] == '[' || name[0] == '<') {
		closer := byte(']')
		if name[0] == '<' {
			closer = '>'
		}
		if i := strings.IndexByte(name, closer); i > 0 && i < len(name)-1 {
			return name[i+1:], name[1:i]
		}
	}
	return name, ""
}

// shownName is a details name as the game shows it: "<sp/>" a space and
// HTML escapes decoded, the clan tag kept ("&lt;IDFI&gt;<sp/>Luneth" is
// "<IDFI> Luneth"). Its markup is the file's, not text to show or index.
func shownName(raw string) string {
	s := strings.ReplaceAll(raw, "<sp/>", " ")
	if strings.Contains(s, "&") {
		s = html.UnescapeString(s)
	}
	return s
}

// toonString formats a details toon as the handle "region-S2-realm-id".
func toonString(t s2prot.Struct) string {
	prog := strings.TrimLeft(t.Stringv("programId"), "\x00")
	return fmt.Sprintf("%d-%s-%d-%d", t.Int("region"), prog, t.Int("realm"), t.Int("id"))
}

// raceName returns the English race of a localised details race string; co-op
// variants like "Terran Tychus" keep their first word's race, unknown names
// come back as they are.
func raceName(local string) string {
	if r, ok := races[local]; ok {
		return r
	}
	switch {
	case strings.HasPrefix(local, "Te"):
		return "Terran"
	case strings.HasPrefix(local, "Ze"):
		return "Zerg"
	case strings.HasPrefix(local, "Pr"):
		return "Protoss"
	}
	if local == "" {
		return "Unknown"
	}
	return local
}

// expansion names the expansion whose standard-data digest appears in the
// details cache handles.
func expansion(det s2prot.Struct) string {
	var handles []string
	for _, h := range det.Array("cacheHandles") {
		if s, ok := h.(string); ok && len(s) == 40 {
			handles = append(handles, fmt.Sprintf("%x", s[8:]))
		}
	}
	for _, e := range expansionDigests {
		for _, h := range handles {
			if h == e.digest {
				return e.name
			}
		}
	}
	return ""
}
