package query

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/replayarchive/replay/formats"
)

// TestSearchScore: race:, result:, team: and winner: over the players'
// attrs as codecs store them (SC2's player.<i>.race and .result, Echo
// VR's .result). result: matches a recording where some player has the
// result, so player:x result:win holds when x lost to a winner; winner:x
// is x's own win.
func TestSearchScore(t *testing.T) {
	const (
		idE = "00000000-0000-0000-0000-00000000000e"
		idF = "00000000-0000-0000-0000-00000000000f"
		idG = "00000000-0000-0000-0000-000000000010"
	)
	docs := []RecordingDoc{
		{ID: idE, Format: "sc2replay", Start: time.Date(2024, 1, 3, 0, 0, 0, 0, time.UTC),
			Players: []formats.Player{{Name: "Emperor", Team: "1"}, {Name: "Boom", Team: "2"}, {Name: "Obs", Team: "observer"}},
			Attrs: map[string]string{"player.0.race": "Protoss", "player.0.result": "Victory", "player.1.race": "Terran", "player.1.result": "Defeat",
				"player.2.race": "Unknown", "player.2.result": "Unknown"}},
		{ID: idF, Format: "sc2replay", Start: time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC),
			Players: []formats.Player{{Name: "Boom", Team: "1"}, {Name: "Zag", Team: "2"}},
			Attrs:   map[string]string{"player.0.race": "Terran", "player.0.result": "Victory", "player.1.race": "Zerg", "player.1.result": "Defeat"}},
		{ID: idG, Format: "butter", Start: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC),
			Players: []formats.Player{{Name: "NtsFranz", Team: "orange"}, {Name: "Cruisen", Team: "blue"}},
			Attrs:   map[string]string{"player.0.result": "loss", "player.1.result": "win", formats.ScoreKey(0): "points=6 stuns=41"}},
	}
	ix, err := Open(t.TempDir() + "/ix")
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if err := ix.Apply(context.Background(), 1, docs, nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		q    string
		want []string
	}{
		{"race:zerg", []string{idF}},
		{"race:Terran", []string{idE, idF}},
		{"race:unknown", nil},
		{"result:win", []string{idE, idF, idG}},
		{"result:victory", []string{idE, idF, idG}},
		{"result:defeat", []string{idE, idF, idG}},
		{"result:tie", nil},
		{"result:w*", []string{idE, idF, idG}},
		{"player:boom result:win", []string{idE, idF}}, // Boom lost idE: some player won
		{"winner:boom", []string{idF}},
		{"winner:emperor race:protoss", []string{idE}},
		{"team:observer", []string{idE}},
		{"team:blue", []string{idG}},
		{"-team:observer format:sc2replay", []string{idF}},
		{"winner:cruisen OR race:zerg", []string{idF, idG}},
	} {
		res, err := ix.Search(context.Background(), tc.q, 10)
		if err != nil {
			t.Errorf("%q: %v", tc.q, err)
			continue
		}
		got, _ := ids(res)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: hits %v, want %v", tc.q, got, tc.want)
		}
	}
}
