// This file is the DDNet scoreboard, read from the recording's events:
// finishes with their race times (PLAYER_FINISH and TEAM_FINISH, DDNet
// 18.3 on), team changes (PLAYER_TEAM) and self-kills (the console
// command "kill", which /kill runs). Teehistorian records no kill or
// death as such: a character's removal (PLAYER_OLD) is also a move to the
// spectators or a drop, so deaths are not counted.

package teehistorian

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/replayarchive/replay/formats"
)

// maxFinishes bounds the finishes a scoreboard lists; the rows still count
// them all.
const maxFinishes = 1000

var scoreColumns = []formats.ScoreColumn{
	{Key: "finishes", Label: "Finishes", Help: "PLAYER_FINISH records: finishes saved by the server"},
	{Key: "best", Label: "Best time", Unit: "s", Help: "the fastest of the player's finishes (race time)"},
	{Key: "team_changes", Label: "Team changes", Help: "PLAYER_TEAM records: moves to another DDNet team"},
	{Key: "kills", Label: "Self-kills", Help: "console command kill (/kill): teehistorian records no other kill, and no death"},
}

// parseRaceTime reads raceTime's "M:SS.cc" back into seconds.
func parseRaceTime(s string) (float64, bool) {
	m, rest, ok := strings.Cut(s, ":")
	if !ok {
		return 0, false
	}
	mins, err := strconv.ParseUint(m, 10, 31)
	if err != nil {
		return 0, false
	}
	secs, err := strconv.ParseFloat(rest, 64)
	if err != nil || secs < 0 || secs >= 60 || math.IsNaN(secs) {
		return 0, false
	}
	return float64(mins)*60 + secs, true
}

// Scoreboard implements formats.Scorer from the events ingest recorded
// (through the source's formats.EventSource when it is one, else
// Metadata.Events), one row per player of the metadata, matched by name.
func (c *Codec) Scoreboard(ctx context.Context, src formats.Source) (*formats.Scoreboard, error) {
	m := src.Meta()
	sb := &formats.Scoreboard{Columns: scoreColumns}
	byName := map[string]int{}
	for _, p := range m.Players {
		if _, dup := byName[p.Name]; dup {
			continue
		}
		byName[p.Name] = len(sb.Players)
		sb.Players = append(sb.Players, formats.ScoreRow{Name: p.Name, ID: p.ID, Team: p.Team, Stats: map[string]float64{"finishes": 0, "team_changes": 0, "kills": 0}})
	}
	row := func(name string) *formats.ScoreRow {
		if i, ok := byName[name]; ok && name != "" {
			return &sb.Players[i]
		}
		return nil
	}
	total, n := 0, 0
	fn := func(e *formats.Event) error {
		if n++; n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		switch e.Kind {
		case formats.EventFinish:
			f := formats.Finish{Tick: e.Tick, Time: e.Time.Milliseconds(), Player: e.Player, PlayerID: e.PlayerID}
			text := e.Text
			if rest, ok := strings.CutPrefix(text, "team "); ok {
				num, after, _ := strings.Cut(rest, " ")
				t, err := strconv.Atoi(num)
				if err != nil {
					return nil
				}
				f.Team, text = t, after
			}
			secs, ok := parseRaceTime(strings.TrimPrefix(text, "finish in "))
			if !ok {
				return nil
			}
			f.Seconds = secs
			if r := row(e.Player); r != nil && f.Team == 0 {
				r.Stats["finishes"]++
				if b, ok := r.Stats["best"]; !ok || secs < b {
					r.Stats["best"] = secs
				}
			}
			total++
			if len(sb.Finishes) < maxFinishes {
				sb.Finishes = append(sb.Finishes, f)
			}
		case formats.EventTeam:
			if r := row(e.Player); r != nil {
				r.Stats["team_changes"]++
			}
		case formats.EventCommand:
			if strings.TrimSpace(e.Text) == "kill" {
				if r := row(e.Player); r != nil {
					r.Stats["kills"]++
				}
			}
		}
		return nil
	}
	var err error
	if es, ok := src.(formats.EventSource); ok {
		err = es.EachEvent(fn)
	} else {
		for i := range m.Events {
			if err = fn(&m.Events[i]); err != nil {
				break
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("teehistorian: scoreboard: reading events: %w", err)
	}
	if total > len(sb.Finishes) {
		sb.Notes = append(sb.Notes, fmt.Sprintf("%d finishes; the first %d are listed.", total, len(sb.Finishes)))
	}
	sb.Notes = append(sb.Notes, "Finishes are recorded from DDNet 18.3 (PLAYER_FINISH, TEAM_FINISH); older servers' files hold none. Teehistorian records no kills or deaths, only /kill.")
	return sb, nil
}

var _ formats.Scorer = (*Codec)(nil)
