package butter

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/formatstest"
)

// refStats is a player's stats read straight from session JSON with
// encoding/json: the expected values, by another path than the codecs'.
type refStats struct {
	Name  string `json:"name"`
	User  int64  `json:"userid"`
	Stats *struct {
		Points     float64 `json:"points"`
		Goals      float64 `json:"goals"`
		Assists    float64 `json:"assists"`
		Saves      float64 `json:"saves"`
		Stuns      float64 `json:"stuns"`
		Steals     float64 `json:"steals"`
		Shots      float64 `json:"shots_taken"`
		Possession float64 `json:"possession_time"`
	} `json:"stats"`
}

func (r refStats) want() map[string]float64 {
	s := r.Stats
	return map[string]float64{"points": s.Points, "goals": s.Goals, "assists": s.Assists, "saves": s.Saves,
		"stuns": s.Stuns, "steals": s.Steals, "shots": s.Shots, "possession": s.Possession}
}

// lastStats returns, per player name, the stats of the last session JSON
// in lines where the player is present.
func lastStats(t *testing.T, sessions [][]byte) map[string]map[string]float64 {
	t.Helper()
	out := map[string]map[string]float64{}
	for i, s := range sessions {
		var f struct {
			Teams []struct {
				Players []refStats `json:"players"`
			} `json:"teams"`
		}
		if err := json.Unmarshal(s, &f); err != nil {
			t.Fatalf("session %d: %v", i, err)
		}
		for _, tm := range f.Teams {
			for _, p := range tm.Players {
				if p.Stats != nil {
					out[p.Name] = p.want()
				}
			}
		}
	}
	return out
}

// sessionsOf returns the session JSON of each line of an .echoreplay.
func sessionsOf(t *testing.T, text []byte) [][]byte {
	t.Helper()
	var sessions [][]byte
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		line := bytes.TrimRight(sc.Bytes(), "\r\n")
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		l, err := SplitLine(line)
		if err != nil {
			t.Fatal(err)
		}
		sessions = append(sessions, bytes.Clone(l.Session))
	}
	return sessions
}

// checkRows compares the scoreboard's player rows with want; possession
// within tol seconds (.butter stores it as a half float), the counts
// exactly.
func checkRows(t *testing.T, sb *formats.Scoreboard, want map[string]map[string]float64, tol float64) {
	t.Helper()
	if len(sb.Players) != len(want) {
		t.Errorf("%d player rows, want %d", len(sb.Players), len(want))
	}
	for _, r := range sb.Players {
		w, ok := want[r.Name]
		if !ok {
			t.Errorf("row %q: not a player of the frames", r.Name)
			continue
		}
		for k, v := range w {
			got, ok := r.Stats[k]
			if !ok {
				t.Errorf("%s: no %s", r.Name, k)
				continue
			}
			lim := 0.0
			if k == "possession" {
				lim = tol
			}
			if math.Abs(got-v) > lim {
				t.Errorf("%s %s = %v, want %v (±%v)", r.Name, k, got, v, lim)
			}
		}
	}
}

// TestScoreboardExampleFrame: the real 2021 session frame, as a one-line
// .echoreplay, gives each player the stats the frame holds (NtsFranz: 6
// points, 2 assists, 2 saves, 41 stuns, 2 steals, 4 shots, 150.8 s with
// the disc), the teams
// theirs, and no result (the frame is round_over, not post_match).
func TestScoreboardExampleFrame(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(corpusDir(t), "example_frame_2021-11-20.json"))
	if err != nil {
		t.Fatal(err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		t.Fatal(err)
	}
	file := append([]byte("2021/11/20 04:20:00.000\t"), compact.Bytes()...)
	file = append(file, '\n')
	rec := formatstest.Split(t, NewEchoReplay(), file)
	sb, err := NewEchoReplay().Scoreboard(context.Background(), rec.Source())
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, sb, lastStats(t, [][]byte{raw}), 0.051)
	for _, r := range sb.Players {
		if r.Name == "NtsFranz" {
			want := map[string]float64{"points": 6, "goals": 0, "assists": 2, "saves": 2, "stuns": 41, "steals": 2, "shots": 4, "possession": 150.8}
			for k, v := range want {
				if r.Stats[k] != v {
					t.Errorf("NtsFranz %s = %v, want %v", k, r.Stats[k], v)
				}
			}
			if r.Team != "orange" || r.Text["result"] != "" {
				t.Errorf("NtsFranz team %q result %q, want orange and none", r.Team, r.Text["result"])
			}
		}
	}
	if len(sb.Teams) != 2 || sb.Teams[0].Name != "blue" || sb.Teams[0].Stats["points"] != 42 || sb.Teams[1].Stats["stuns"] != 169 || sb.Teams[1].Stats["possession"] != 561.9 {
		t.Errorf("teams %+v, want blue (42 points) and orange (169 stuns, 561.9 s)", sb.Teams)
	}
	if rec.Metadata.Attrs[formats.ScoreKey(0)] == "" {
		t.Errorf("Split stored no score in attrs: %v", rec.Metadata.Attrs)
	}
}

// TestScoreboardLastFramePresent: in the 1500 frames derived from the
// real frame, Cruisen leaves at frame 1000 and late_joiner joins at 400;
// each player's row is their stats at the last frame they are in, read
// here from every line's JSON. The reference writer's .butter of those
// frames stores possession time as half-float deltas, which drift (1.9 s
// for SputnikKobra): its rows are checked against the reference reader's
// own decoding of it (reference/decoded), within 0.05 s (the stored tenth).
func TestScoreboardLastFramePresent(t *testing.T) {
	text := readZst(t, filepath.Join(corpusDir(t), "reference", "input", "example_2021-11-20.echoreplay.zst"))
	want := lastStats(t, sessionsOf(t, text))
	if _, ok := want["late_joiner"]; !ok || len(want) != 11 {
		t.Fatalf("the frames hold %d players (%v), want the 10 and late_joiner", len(want), want)
	}

	rec := formatstest.Split(t, NewEchoReplay(), text)
	sb, err := NewEchoReplay().Scoreboard(context.Background(), rec.Source())
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, sb, want, 0.051)

	b, err := os.ReadFile(filepath.Join(corpusDir(t), "reference", "butter", "example_2021-11-20.none.k300.butter"))
	if err != nil {
		t.Fatal(err)
	}
	brec := formatstest.Split(t, New(), b)
	bsb, err := New().Scoreboard(context.Background(), brec.Source())
	if err != nil {
		t.Fatal(err)
	}
	want = lastStats(t, sessionsOf(t, readZst(t, filepath.Join(corpusDir(t), "reference", "decoded", "example_2021-11-20.none.k300.decoded.echoreplay.zst"))))
	checkRows(t, bsb, want, 0.051)

	// Without the stored score (a recording ingested before
	// scoreboards), the frames are read and give the same.
	for k := range brec.Metadata.Attrs {
		if len(k) > 6 && (k[len(k)-6:] == ".score" || k[len(k)-7:] == ".result") {
			delete(brec.Metadata.Attrs, k)
		}
	}
	again, err := New().Scoreboard(context.Background(), brec.Source())
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, again, want, 0.051)
}

// TestScoreboardMilk: the real .milk capture's scoreboard is its last
// sample's stats (read from its last chunk), which the corpus's own
// conversion of the capture to session frames also holds in its last
// line.
func TestScoreboardMilk(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(corpusDir(t), "example.milk"))
	if err != nil {
		t.Fatal(err)
	}
	rec := formatstest.Split(t, NewMilk(), b)
	rec.Reads = 0
	sb, err := NewMilk().Scoreboard(context.Background(), rec.Source())
	if err != nil {
		t.Fatal(err)
	}
	if rec.Reads != 1 {
		t.Errorf("read %d chunks, want the last one only", rec.Reads)
	}
	text := readZst(t, filepath.Join(corpusDir(t), "reference", "input", "milk_2020-09-07.echoreplay.zst"))
	lines := bytes.Split(bytes.TrimSpace(text), []byte("\n"))
	l, err := SplitLine(lines[len(lines)-1])
	if err != nil {
		t.Fatal(err)
	}
	want := lastStats(t, [][]byte{l.Session})
	checkRows(t, sb, want, 0.5)
	if w := want["Badboys12"]; w["points"] != 3 || w["shots"] != 1 {
		t.Errorf("Badboys12 %v: the corpus notes 3 points and 1 shot", w)
	}
	for _, r := range sb.Players {
		if strconv.Itoa(len(r.Stats)) != strconv.Itoa(len(scoreKeys)) {
			t.Errorf("%s: %d stats, want %d", r.Name, len(r.Stats), len(scoreKeys))
		}
	}
}

// TestScoreResult: a match over (post_match) gives the team with more
// points (or round wins) its win.
func TestScoreResult(t *testing.T) {
	post, playing := "post_match", "playing"
	for _, c := range []struct {
		status         *string
		blue, orange   float32
		rb, ro, rounds int
		want           int
	}{
		{&post, 3, 1, 0, 0, 1, 0},
		{&post, 1, 3, 0, 0, 1, 1},
		{&post, 2, 2, 0, 0, 1, -1},
		{&post, 9, 1, 1, 2, 3, 1},
		{&playing, 3, 1, 0, 0, 1, -2},
		{nil, 3, 1, 0, 0, 1, -2},
	} {
		var s scoreState
		s.add(&Frame{GameStatus: c.status, BluePoints: c.blue, OrangePoints: c.orange, BlueRoundScore: c.rb, OrangeRoundScore: c.ro, TotalRoundCount: c.rounds})
		if got := s.winner(); got != c.want {
			t.Errorf("%+v: winner %d, want %d", c, got, c.want)
		}
	}
	if resultOf("blue", 0) != formats.ResultWin || resultOf("orange", 0) != formats.ResultLoss || resultOf("spectator", 0) != "" || resultOf("blue", -2) != "" {
		t.Error("resultOf")
	}
}
