package teehistorian

import (
	"context"
	"testing"

	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/formatstest"
)

// TestScoreboardCorpus: Tutorial.teehistorian (DDNet 19.8.2) holds one
// PLAYER_FINISH, p'*mac's 4:55.68 at tick 15163 (SOURCES.md lists the
// record); a227b0a8 holds two PLAYER_TEAM records, both *lukure*'s
// (/team 3, then /team 0).
func TestScoreboardCorpus(t *testing.T) {
	files := formatstest.CorpusFiles(t, "teehistorian", "*.teehistorian")
	rec := formatstest.Split(t, New(), files["Tutorial.teehistorian"])
	sb, err := New().Scoreboard(context.Background(), rec.EventSource())
	if err != nil {
		t.Fatal(err)
	}
	if len(sb.Finishes) != 1 || sb.Finishes[0] != (formats.Finish{Tick: 15163, Time: 15163 * 20, Player: "p'*mac", Seconds: 295.68}) {
		t.Errorf("finishes %+v", sb.Finishes)
	}
	if len(sb.Players) != 1 || sb.Players[0].Stats["finishes"] != 1 || sb.Players[0].Stats["best"] != 295.68 {
		t.Errorf("players %+v", sb.Players)
	}
	// the finish cannot be longer than the player's time on the server
	if joined := int64(179); sb.Finishes[0].Seconds > float64(15163-joined)/TickRate {
		t.Errorf("race time %v longer than the %v s since the join", sb.Finishes[0].Seconds, float64(15163-joined)/TickRate)
	}

	rec = formatstest.Split(t, New(), files["a227b0a8-bc1a-4946-b1f0-e663e1d6c8c1.teehistorian"])
	sb, err = New().Scoreboard(context.Background(), rec.Source()) // Metadata.Events, no EventSource
	if err != nil {
		t.Fatal(err)
	}
	changes := map[string]float64{}
	for _, r := range sb.Players {
		changes[r.Name] = r.Stats["team_changes"]
	}
	if changes["*lukure*"] != 2 || changes["SpeedTime"] != 0 || len(sb.Finishes) != 0 {
		t.Errorf("team changes %v, finishes %v", changes, sb.Finishes)
	}
}

// TestScoreboardEvents: team finishes, /kill, and finish texts that do not
// parse (hostile or damaged events) are skipped.
func TestScoreboardEvents(t *testing.T) {
	rec := &formatstest.Recording{Metadata: &formats.Metadata{
		Players: []formats.Player{{Name: "a"}, {Name: "b"}, {Name: "a"}},
		Events: []formats.Event{
			{Tick: 10, Kind: formats.EventFinish, Player: "a", Text: "finish in 1:02.50"},
			{Tick: 20, Kind: formats.EventFinish, Player: "a", Text: "finish in 0:59.99"},
			{Tick: 30, Kind: formats.EventFinish, Text: "team 3 finish in 2:00.00"},
			{Tick: 40, Kind: formats.EventFinish, Player: "b", Text: "finish in 1:99.00"},
			{Tick: 41, Kind: formats.EventFinish, Player: "b", Text: "finish in x"},
			{Tick: 42, Kind: formats.EventFinish, Player: "b", Text: "team finish in 1:00.00"},
			{Tick: 50, Kind: formats.EventCommand, Player: "b", Text: "kill"},
			{Tick: 51, Kind: formats.EventCommand, Player: "b", Text: "killall"},
		},
	}}
	sb, err := New().Scoreboard(context.Background(), rec.Source())
	if err != nil {
		t.Fatal(err)
	}
	if len(sb.Players) != 2 || sb.Players[0].Stats["finishes"] != 2 || sb.Players[0].Stats["best"] != 59.99 || sb.Players[1].Stats["kills"] != 1 || sb.Players[1].Stats["finishes"] != 0 {
		t.Errorf("players %+v", sb.Players)
	}
	if len(sb.Finishes) != 3 || sb.Finishes[2].Team != 3 || sb.Finishes[2].Seconds != 120 {
		t.Errorf("finishes %+v", sb.Finishes)
	}
}
