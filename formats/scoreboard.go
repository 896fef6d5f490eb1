package formats

import (
	"context"
	"strconv"
	"strings"
)

// Scorer is implemented by codecs whose recordings have a score worth a
// table: who won, with which race, how many goals or finishes. The page
// and the API show it without decoding the recording, so a codec computes
// what needs the frames at ingest (Split) and keeps it in the metadata's
// Attrs under ScoreKey keys; Scoreboard then reads src.Meta() (and, where
// a codec says so, a bounded part of the recording: .milk reads its last
// chunk). A format without a score does not implement it.
type Scorer interface {
	// Scoreboard returns the recording's scoreboard. It must not panic on
	// any metadata or bytes; values it cannot read are left out.
	Scoreboard(ctx context.Context, src Source) (*Scoreboard, error)
}

// Scoreboard is a recording's score: one row per player (and per team
// where the format has teams), the columns the format fills, and for
// race formats the finishes in order.
type Scoreboard struct {
	// Columns are the stats shown, in order; each row's Stats (numbers)
	// or Text (words) holds them by key.
	Columns []ScoreColumn `json:"columns"`
	// Players are in the order of Metadata.Players (observers included,
	// marked).
	Players []ScoreRow `json:"players"`
	// Teams are the teams' own totals where the format records them
	// (Echo VR's team stats), else the sums of their players.
	Teams []ScoreRow `json:"teams,omitempty"`
	// Finishes are the race finishes, in tick order (DDNet).
	Finishes []Finish `json:"finishes,omitempty"`
	// Notes say what the numbers count and what is missing.
	Notes []string `json:"notes,omitempty"`
}

// ScoreColumn is one column of a scoreboard.
type ScoreColumn struct {
	// Key indexes ScoreRow.Stats or ScoreRow.Text.
	Key string `json:"key"`
	// Label is the column's heading.
	Label string `json:"label"`
	// Unit says how to show a value: "" a count, "s" seconds, "text" a
	// word from ScoreRow.Text.
	Unit string `json:"unit,omitempty"`
	// Help says what the column counts, for a tooltip.
	Help string `json:"help,omitempty"`
}

// ScoreRow is one player's or one team's line.
type ScoreRow struct {
	Name string `json:"name"`
	// ID is the player's id (Player.ID); the server shows viewers a
	// pseudonym instead.
	ID   string `json:"id,omitempty"`
	Team string `json:"team,omitempty"`
	// Observer marks a player who watched and did not play.
	Observer bool               `json:"observer,omitempty"`
	Stats    map[string]float64 `json:"stats,omitempty"`
	Text     map[string]string  `json:"text,omitempty"`
}

// Finish is one race finish.
type Finish struct {
	Tick int64 `json:"tick"`
	// Time is the finish's offset in the recording.
	Time     int64  `json:"time_ms"`
	Player   string `json:"player,omitempty"`
	PlayerID string `json:"player_id,omitempty"`
	// Team is the DDNet team number of a team finish, 0 for a player's.
	Team int `json:"team,omitempty"`
	// Seconds is the race time.
	Seconds float64 `json:"seconds"`
}

// Results a scoreboard's "result" text holds, the same for every format so
// that result: searches them alike.
const (
	ResultWin  = "win"
	ResultLoss = "loss"
	ResultTie  = "tie"
)

// NormalResult maps a format's word for a result (SC2's Victory, Defeat,
// Tie) and the words a user types (won, lost, draw) to ResultWin,
// ResultLoss or ResultTie; "" for anything else (SC2's Unknown).
func NormalResult(s string) string {
	switch strings.ToLower(s) {
	case "win", "won", "victory", "winner":
		return ResultWin
	case "loss", "lose", "lost", "defeat", "loser":
		return ResultLoss
	case "tie", "draw", "tied":
		return ResultTie
	}
	return ""
}

// ScoreKey is the Attrs key of player i's (i as in Metadata.Players)
// score: "player.<i>.score". Team scores are under TeamScoreKey.
func ScoreKey(i int) string { return "player." + strconv.Itoa(i) + ".score" }

// TeamScoreKey is the Attrs key of team's score: "team.<team>.score".
func TeamScoreKey(team string) string { return "team." + team + ".score" }

// maxScoreFields bounds what ParseScore reads of one value.
const maxScoreFields = 32

// FormatScore writes stats as "key=value key=value…" in the order of keys
// (keys stats lacks are left out): short in the manifest, readable where
// attrs are shown, and ParseScore reads it back.
func FormatScore(keys []string, stats map[string]float64) string {
	var b strings.Builder
	for _, k := range keys {
		v, ok := stats[k]
		if !ok {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(strconv.FormatFloat(v, 'f', -1, 64))
	}
	return b.String()
}

// ParseScore reads FormatScore's form; fields it cannot read are skipped,
// and at most maxScoreFields are read (the value comes from a manifest,
// but a manifest can hold an old or hand-made one).
func ParseScore(s string) map[string]float64 {
	out := map[string]float64{}
	for i, f := range strings.Fields(s) {
		if i >= maxScoreFields {
			break
		}
		k, v, ok := strings.Cut(f, "=")
		if !ok || k == "" {
			continue
		}
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			continue
		}
		out[k] = x
	}
	return out
}

// ScoreRows returns a row per player of m with the stats stored under
// ScoreKey, and whether any player had some: the part of a scoreboard
// every codec that stores scores at ingest shares.
func ScoreRows(m *Metadata) ([]ScoreRow, bool) {
	if m == nil {
		return nil, false
	}
	rows := make([]ScoreRow, len(m.Players))
	found := false
	for i, p := range m.Players {
		rows[i] = ScoreRow{Name: p.Name, ID: p.ID, Team: p.Team}
		if v, ok := m.Attrs[ScoreKey(i)]; ok {
			rows[i].Stats = ParseScore(v)
			found = true
		}
	}
	return rows, found
}

// SearchTerms are what a recording's search document says about its score:
// the races, results and teams of its players and the names of those who
// won. Computed from Metadata's players and attrs ("player.<i>.race",
// "player.<i>.result", Player.Team), so every codec that stores those
// keys is searched the same way.
type SearchTerms struct {
	Races, Results, Teams, Winners []string
}

// ScoreSearchTerms returns the search terms of players and attrs (as in
// Metadata), each value once, lower-cased by the index.
func ScoreSearchTerms(players []Player, attrs map[string]string) SearchTerms {
	var st SearchTerms
	seen := map[string]bool{}
	add := func(list *[]string, kind, v string) {
		if v == "" || seen[kind+v] {
			return
		}
		seen[kind+v] = true
		*list = append(*list, v)
	}
	for i, p := range players {
		key := "player." + strconv.Itoa(i) + "."
		if r := attrs[key+"race"]; r != "" && r != "Unknown" {
			add(&st.Races, "r", r)
		}
		res := NormalResult(attrs[key+"result"])
		add(&st.Results, "s", res)
		if res == ResultWin {
			add(&st.Winners, "w", p.Name)
		}
		add(&st.Teams, "t", p.Team)
	}
	return st
}
