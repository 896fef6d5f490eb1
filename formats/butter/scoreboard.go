// This file is the Echo VR scoreboard: each player's own stats (goals,
// assists, saves, stuns, points, possession time) as the game counts them
// in every frame's teams[].players[].stats, taken at the last frame where
// the player is present, and the teams' stats (teams[].stats) at the last
// frame that carries them. .butter and .echoreplay collect them while
// Split decodes every frame (metaBuilder) and keep them in the metadata's
// attrs; .milk, whose Split decodes no frame, and recordings ingested
// before scoreboards read them from the frames when asked.

package butter

import (
	"context"
	"fmt"
	"strconv"

	"github.com/replayarchive/replay/formats"
)

// scoreKeys are the stats a player's and a team's score holds, in the
// order they are stored and shown.
var scoreKeys = []string{"points", "goals", "assists", "saves", "stuns", "steals", "shots", "possession"}

// scoreColumns describe scoreKeys and the result.
var scoreColumns = []formats.ScoreColumn{
	{Key: "result", Label: "Result", Unit: "text", Help: "the team's result, when the last frame is after the match (post_match): more round wins, else more points"},
	{Key: "points", Label: "Points", Help: "stats.points: points scored"},
	{Key: "goals", Label: "Goals", Help: "stats.goals (the game counts some goals only as points)"},
	{Key: "assists", Label: "Assists", Help: "stats.assists"},
	{Key: "saves", Label: "Saves", Help: "stats.saves"},
	{Key: "stuns", Label: "Stuns", Help: "stats.stuns"},
	{Key: "steals", Label: "Steals", Help: "stats.steals"},
	{Key: "shots", Label: "Shots", Help: "stats.shots_taken"},
	{Key: "possession", Label: "Possession", Unit: "s", Help: "stats.possession_time: seconds holding the disc"},
}

func statsMap(s *Stats) map[string]float64 {
	return map[string]float64{
		"points": float64(s.Points), "goals": float64(s.Goals), "assists": float64(s.Assists),
		"saves": float64(s.Saves), "stuns": float64(s.Stuns), "steals": float64(s.Steals),
		"shots": float64(s.ShotsTaken),
		// to a tenth of a second: the game's float32 says no more
		"possession": float64(int64(float64(s.PossessionTime)*10+0.5)) / 10,
	}
}

// scoreState follows the stats through the frames of a recording.
type scoreState struct {
	players map[int64]Stats // userid → stats at the last frame with the player
	names   map[string]Stats
	teams   [2]*Stats
	status  string
	points  [2]float32
	rounds  [2]int
	nrounds int
	frames  int64
}

// add takes the stats f holds.
func (s *scoreState) add(f *Frame) {
	if s.players == nil {
		s.players, s.names = map[int64]Stats{}, map[string]Stats{}
	}
	s.frames++
	s.status = ""
	if f.GameStatus != nil {
		s.status = *f.GameStatus
	}
	s.points = [2]float32{f.BluePoints, f.OrangePoints}
	s.rounds = [2]int{f.BlueRoundScore, f.OrangeRoundScore}
	s.nrounds = f.TotalRoundCount
	for ti, t := range f.Teams {
		if t == nil {
			continue
		}
		if ti < 2 && t.Stats != nil {
			st := *t.Stats
			s.teams[ti] = &st
		}
		for _, p := range t.Players {
			if p == nil || p.Stats == nil {
				continue
			}
			// bounded: one entry per distinct player, and a frame holds
			// what the decoder bounds
			s.players[p.UserID] = *p.Stats
			s.names[p.Name] = *p.Stats
		}
	}
}

// winner returns the index of the winning team (0 blue, 1 orange), -1 for
// a tie, or -2 when the last frame is not after the match.
func (s *scoreState) winner() int {
	if s.status != "post_match" {
		return -2
	}
	a, b := float64(s.points[0]), float64(s.points[1])
	if s.nrounds > 1 && s.rounds[0] != s.rounds[1] {
		a, b = float64(s.rounds[0]), float64(s.rounds[1])
	}
	switch {
	case a > b:
		return 0
	case b > a:
		return 1
	}
	return -1
}

// resultOf is the result of team (blue, orange) given winner.
func resultOf(team string, winner int) string {
	ti := -1
	switch team {
	case "blue":
		ti = 0
	case "orange":
		ti = 1
	}
	switch {
	case ti < 0 || winner == -2:
		return ""
	case winner == -1:
		return formats.ResultTie
	case winner == ti:
		return formats.ResultWin
	}
	return formats.ResultLoss
}

// store writes the scores into m's attrs: ScoreKey per player (matched by
// user id, or by name where the metadata has no id: .milk), TeamScoreKey
// for blue and orange, "player.<i>.result" once the match is over.
func (s *scoreState) store(m *formats.Metadata) {
	if s.frames == 0 {
		return
	}
	if m.Attrs == nil {
		m.Attrs = map[string]string{}
	}
	w := s.winner()
	for i, p := range m.Players {
		st, ok := s.names[p.Name]
		if id, err := strconv.ParseInt(p.ID, 10, 64); err == nil {
			st, ok = s.players[id]
		}
		if ok {
			m.Attrs[formats.ScoreKey(i)] = formats.FormatScore(scoreKeys, statsMap(&st))
		}
		if r := resultOf(p.Team, w); r != "" {
			m.Attrs[fmt.Sprintf("player.%d.result", i)] = r
		}
	}
	for ti, t := range s.teams {
		if t != nil {
			m.Attrs[formats.TeamScoreKey(teamNames[ti])] = formats.FormatScore(scoreKeys, statsMap(t))
		}
	}
	if w != -2 {
		m.Attrs["result"] = map[int]string{0: "blue", 1: "orange", -1: "tie"}[w]
	}
}

// scoreboard builds the scoreboard of m from what store wrote.
func scoreboard(m *formats.Metadata) (*formats.Scoreboard, bool) {
	rows, ok := formats.ScoreRows(m)
	if !ok {
		return nil, false
	}
	sb := &formats.Scoreboard{Columns: scoreColumns, Players: rows}
	winner := -2
	switch m.Attrs["result"] {
	case "blue":
		winner = 0
	case "orange":
		winner = 1
	case "tie":
		winner = -1
	}
	for i := range sb.Players {
		r := &sb.Players[i]
		r.Observer = r.Team == "spectator"
		if res := resultOf(r.Team, winner); res != "" {
			r.Text = map[string]string{"result": res}
		}
	}
	for _, team := range teamNames[:2] {
		v, ok := m.Attrs[formats.TeamScoreKey(team)]
		if !ok {
			continue
		}
		row := formats.ScoreRow{Name: team, Team: team, Stats: formats.ParseScore(v)}
		if res := resultOf(team, winner); res != "" {
			row.Text = map[string]string{"result": res}
		}
		sb.Teams = append(sb.Teams, row)
	}
	sb.Notes = append(sb.Notes, "Each player's stats are the game's own (teams[].players[].stats) at the last frame where the player is present; the teams' are teams[].stats at the last frame that carries them.")
	if winner == -2 {
		sb.Notes = append(sb.Notes, "No result: the recording ends before the match is over (its last frame is not post_match).")
	}
	return sb, true
}

// fromFrames computes the scoreboard by reading frames (each calls emit
// for the frames it reads), for recordings whose metadata holds no score.
func fromFrames(src formats.Source, each func(emit func(f *Frame) error) error) (*formats.Scoreboard, error) {
	var s scoreState
	if err := each(func(f *Frame) error { s.add(f); return nil }); err != nil {
		return nil, err
	}
	m := *src.Meta()
	m.Attrs = map[string]string{}
	for k, v := range src.Meta().Attrs {
		m.Attrs[k] = v
	}
	s.store(&m)
	sb, ok := scoreboard(&m)
	if !ok {
		return &formats.Scoreboard{Columns: scoreColumns, Notes: []string{"No frame holds player stats."}}, nil
	}
	return sb, nil
}

// Scoreboard implements formats.Scorer from the scores Split stored; a
// recording ingested before scoreboards is read whole once.
func (c *Codec) Scoreboard(ctx context.Context, src formats.Source) (*formats.Scoreboard, error) {
	if sb, ok := scoreboard(src.Meta()); ok {
		return sb, nil
	}
	return fromFrames(src, func(emit func(*Frame) error) error {
		_, err := c.rangeFrames(ctx, src, formats.All(), func(_ int64, f *Frame) error { return emit(f) })
		if err != nil {
			return fmt.Errorf("butter: scoreboard: %w", err)
		}
		return nil
	})
}

// Scoreboard implements formats.Scorer from the scores Split stored; a
// recording ingested before scoreboards is read whole once.
func (c *EchoReplayCodec) Scoreboard(ctx context.Context, src formats.Source) (*formats.Scoreboard, error) {
	if sb, ok := scoreboard(src.Meta()); ok {
		return sb, nil
	}
	return fromFrames(src, func(emit func(*Frame) error) error {
		err := c.rawLines(ctx, src, formats.All(), func(tick int64, l Line) error {
			f, err := l.Frame()
			if err != nil {
				return fmt.Errorf("tick %d: %w", tick, err)
			}
			return emit(f)
		})
		if err != nil {
			return fmt.Errorf("%s: scoreboard: %w", EchoReplayName, err)
		}
		return nil
	})
}

// Scoreboard implements formats.Scorer. A .milk capture lists its players
// once in its header and every sample holds each one's stats, so the last
// sample says it all: Scoreboard decodes the last chunk only.
func (c *MilkCodec) Scoreboard(ctx context.Context, src formats.Source) (*formats.Scoreboard, error) {
	if sb, ok := scoreboard(src.Meta()); ok {
		return sb, nil
	}
	chunks := src.Chunks()
	if len(chunks) == 0 {
		return &formats.Scoreboard{Columns: scoreColumns}, nil
	}
	last := formats.Ticks(chunks[len(chunks)-1].StartTick, -1)
	return fromFrames(src, func(emit func(*Frame) error) error {
		if err := c.milkFrames(ctx, src, last, func(_ int64, f *Frame) error { return emit(f) }); err != nil {
			return fmt.Errorf("%s: scoreboard: %w", MilkName, err)
		}
		return nil
	})
}

var (
	_ formats.Scorer = (*Codec)(nil)
	_ formats.Scorer = (*EchoReplayCodec)(nil)
	_ formats.Scorer = (*MilkCodec)(nil)
)
