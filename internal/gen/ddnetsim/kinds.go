// This file defines the kinds of data: named presets of what real servers
// vary, each a range of parameters drawn per server and per file.

package ddnetsim

import (
	"fmt"
	"time"
)

// Kind is a named preset of a kind of server and its files. Every range is
// drawn per file (or per server) from the session's seed, so the files of
// one kind vary among themselves as real ones do.
type Kind struct {
	Name string
	Doc  string
	// BenchFiles is how many files docs/bench/run.sh's kinds step writes,
	// chosen so that each kind is a few to a few tens of MB.
	BenchFiles int
	// Players is the range of concurrent players while the server is busy.
	Players [2]int
	// Minutes is the range of one file's length (one map load).
	Minutes [2]float64
	// FilesPerServer is the range of files one server process writes in a
	// row (map changes; players carried over, prev_game_uuid).
	FilesPerServer [2]int
	// Busy is the share of time the server has players at all; below 1
	// the server alternates empty stretches with visits of BusyMinutes.
	Busy        float64
	BusyMinutes float64
	// Rates: chat lines (only the chatting flag is recorded) and chat
	// commands per player and minute; votes and rcon sessions per hour of
	// a busy server; player changes (a leave and a later join) per player
	// and hour; emoticons per player and minute.
	ChatPerMin, CmdPerMin, EmotePerMin float64
	VotesPerHour, RconPerHour          float64
	ChurnPerHour                       float64
	// AFK is the share of time a player is away (no input at all), Spec
	// the share spent spectating; Activity scales mouse and key use.
	AFK, Spec, Activity float64
	// Crash is the share of files that end without FINISH.
	Crash float64
	// Legacy restricts servers to releases before the version_minor key
	// (version 1 files without EX records, and early version 2 files
	// without JOINVER/DDNETVER/PLAYER_READY).
	Legacy bool
	modes  []gameMode
}

func (k *Kind) versions() []serverVersion {
	if k.Legacy {
		// Version 1 (11.0-11.0.2, no EX at all) as often as the five
		// early version 2 releases together.
		out := append([]serverVersion(nil), serverVersions[:6]...)
		for range 4 {
			out = append(out, serverVersions[0])
		}
		return out
	}
	// Modern servers, recent releases more often.
	var out []serverVersion
	for _, v := range serverVersions[6:] {
		n := 1
		if v.num >= 19000 {
			n = 3
		} else if v.num >= 17040 {
			n = 2
		}
		for range n {
			out = append(out, v)
		}
	}
	return out
}

// Kinds returns the presets. The sizes follow the corpus: real DDNet files
// are mostly 3-70 KB, busy official servers write about 150 MB an hour.
func Kinds() []Kind {
	race := []gameMode{modeDDRace, modeDDRace, modeGores}
	return []Kind{
		{Name: "solo-race", Doc: "1 player on a long race map, 10-60 min, few inputs: long holds, waits and AFK stretches; finishes",
			BenchFiles: 24, Players: [2]int{1, 1}, Minutes: [2]float64{10, 60}, FilesPerServer: [2]int{1, 3}, Busy: 1,
			ChatPerMin: 0.1, CmdPerMin: 0.05, EmotePerMin: 0.05, ChurnPerHour: 0.3, AFK: 0.25, Spec: 0.02, Activity: 0.35, Crash: 0.3, modes: race},
		{Name: "small", Doc: "2-6 players on race servers, 1-10 min per map, some joins and leaves",
			BenchFiles: 120, Players: [2]int{2, 6}, Minutes: [2]float64{1, 10}, FilesPerServer: [2]int{1, 8}, Busy: 1,
			ChatPerMin: 0.5, CmdPerMin: 0.15, EmotePerMin: 0.2, VotesPerHour: 4, RconPerHour: 0.5, ChurnPerHour: 2, AFK: 0.1, Spec: 0.05, Activity: 0.7, Crash: 0.3, modes: race},
		{Name: "full", Doc: "16-32 players on a race or block server for about an hour",
			BenchFiles: 3, Players: [2]int{16, 32}, Minutes: [2]float64{45, 65}, FilesPerServer: [2]int{1, 2}, Busy: 1,
			ChatPerMin: 0.5, CmdPerMin: 0.1, EmotePerMin: 0.2, VotesPerHour: 8, RconPerHour: 2, ChurnPerHour: 1.5, AFK: 0.15, Spec: 0.08, Activity: 0.7, Crash: 0.2,
			modes: []gameMode{modeDDRace, modeBlock, modeGores}},
		{Name: "crowd", Doc: "48-64 players (an event or a fng/ctf crowd), 15-30 min",
			BenchFiles: 2, Players: [2]int{48, 64}, Minutes: [2]float64{15, 30}, FilesPerServer: [2]int{1, 1}, Busy: 1,
			ChatPerMin: 0.4, CmdPerMin: 0.08, EmotePerMin: 0.3, VotesPerHour: 10, RconPerHour: 3, ChurnPerHour: 2, AFK: 0.2, Spec: 0.1, Activity: 0.8, Crash: 0.2,
			modes: []gameMode{modeDDRace, modeCTF, modeBlock}},
		{Name: "idle", Doc: "a server mostly empty for 1-12 hours: TICK_SKIPs, an occasional visitor for a few minutes",
			BenchFiles: 30, Players: [2]int{1, 3}, Minutes: [2]float64{60, 720}, FilesPerServer: [2]int{1, 2}, Busy: 0.04, BusyMinutes: 4,
			ChatPerMin: 0.2, CmdPerMin: 0.1, EmotePerMin: 0.1, ChurnPerHour: 0, AFK: 0.2, Spec: 0.05, Activity: 0.5, Crash: 0.5, modes: race},
		{Name: "chatty", Doc: "4-16 players, 5-20 min: chat, chat commands, emoticons, votes (0.7 clients' recorded) and rcon",
			BenchFiles: 30, Players: [2]int{4, 16}, Minutes: [2]float64{5, 20}, FilesPerServer: [2]int{1, 4}, Busy: 1,
			ChatPerMin: 4, CmdPerMin: 1.5, EmotePerMin: 2, VotesPerHour: 60, RconPerHour: 12, ChurnPerHour: 3, AFK: 0.15, Spec: 0.1, Activity: 0.6, Crash: 0.2,
			modes: []gameMode{modeDDRace, modeBlock, modeCTF}},
		{Name: "rounds", Doc: "many short rounds (0.5-4 min files) of ctf/dm/race, chained by map changes, players carried over, frequent joins and leaves",
			BenchFiles: 200, Players: [2]int{2, 10}, Minutes: [2]float64{0.5, 4}, FilesPerServer: [2]int{5, 40}, Busy: 1,
			ChatPerMin: 0.6, CmdPerMin: 0.2, EmotePerMin: 0.5, VotesPerHour: 20, RconPerHour: 1, ChurnPerHour: 6, AFK: 0.05, Spec: 0.05, Activity: 0.9, Crash: 0.1,
			modes: []gameMode{modeCTF, modeDM, modeDDRace}},
		{Name: "legacy", Doc: "old releases (11.0-15.5): version 1 files without EX records, version 2 without version_minor, JOINVER, DDNETVER or PLAYER_READY; 1-12 players, 2-15 min",
			BenchFiles: 80, Players: [2]int{1, 12}, Minutes: [2]float64{2, 15}, FilesPerServer: [2]int{1, 6}, Busy: 1,
			ChatPerMin: 0.5, CmdPerMin: 0.15, EmotePerMin: 0.3, VotesPerHour: 6, RconPerHour: 1, ChurnPerHour: 2, AFK: 0.1, Spec: 0.05, Activity: 0.7, Crash: 0.4, Legacy: true,
			modes: []gameMode{modeDDRace, modeDDRace, modeCTF, modeDM}},
	}
}

// Lookup returns the kind named name.
func Lookup(name string) (Kind, error) {
	for _, k := range Kinds() {
		if k.Name == name {
			return k, nil
		}
	}
	return Kind{}, fmt.Errorf("ddnetsim: no kind %q (see Kinds)", name)
}

// Scaled returns k with file lengths multiplied by f (tests use small
// sizes; 1 keeps the preset).
func (k Kind) Scaled(f float64) Kind {
	k.Minutes[0] *= f
	k.Minutes[1] *= f
	if k.BusyMinutes > 0 {
		k.BusyMinutes *= f
	}
	return k
}

func (k *Kind) fileLength(u float64) time.Duration {
	m := k.Minutes[0] + u*(k.Minutes[1]-k.Minutes[0])
	return time.Duration(m * float64(time.Minute))
}
