package server_test

import (
	"bytes"
	"net/http"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/replayarchive/replay/formats/formatstest"
	"github.com/replayarchive/replay/server"
)

// tracksAnswer is the answer of the tracks endpoint as a client reads it.
type tracksAnswer struct {
	From   int64 `json:"from"`
	To     int64 `json:"to"`
	Tracks []struct {
		Track  string      `json:"track"`
		Label  string      `json:"label"`
		Points [][]float64 `json:"points"`
	} `json:"tracks"`
}

// TestTracks: a recording's positions by track, for a tick range or a
// window around a tick; bounded; none for a format without positions.
func TestTracks(t *testing.T) {
	ts := start(t, server.Config{})
	upload := func(path string) string { return "/api/v1/recordings/" + ts.uploadFile(path) + "/tracks" }
	th := upload(filepath.Join(formatstest.CorpusDir(t, "teehistorian"), "7cee836b-aec8-44d9-9083-94d07d88bc05.teehistorian"))
	sc2 := upload(filepath.Join(formatstest.CorpusDir(t, "sc2replay"), "wol-1.0.0.16117-froadac-vs-jdorty.SC2Replay"))

	tests := []struct {
		name     string
		path     string
		from, to int64
		label    string // a label the answer must hold ("" for no tracks)
	}{
		{"a tick range", th + "?from=350&to=400", 350, 400, "samii"},
		{"an offset range", th + "?from=7s&to=8s", 350, 400, "samii"},
		{"a window around a tick", th + "?at=400&before=3s&after=500ms", 250, 425, "samii"},
		{"no end: to the last tick", th + "?from=1000", 1000, 1230, "samii"},
		{"no positions", sc2 + "?from=0&to=100", 0, 100, ""},
		{"a long range is cut", sc2 + "?from=0&to=99999", 0, 4999, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a tracksAnswer
			body := ts.want(http.StatusOK, "GET", tt.path, ts.owner, nil, &a)
			if a.From != tt.from || a.To != tt.to {
				t.Errorf("range %d-%d, want %d-%d", a.From, a.To, tt.from, tt.to)
			}
			if tt.label == "" {
				if len(a.Tracks) != 0 {
					t.Errorf("tracks from a format without positions: %.200s", body)
				}
				return
			}
			found := false
			for _, tr := range a.Tracks {
				found = found || tr.Label == tt.label
				for _, p := range tr.Points {
					if n := len(p); n != 1 && n != 3 || int64(p[0]) < a.From || int64(p[0]) > a.To {
						t.Fatalf("track %s: point %v", tr.Track, p)
					}
				}
			}
			if !found {
				t.Errorf("no track labelled %q: %.300s", tt.label, body)
			}
		})
	}
	for _, q := range []string{"?at=400&before=soon", "?from=400&to=300"} {
		ts.want(http.StatusBadRequest, "GET", th+q, ts.owner, nil, nil)
	}

	// The first tick at which anything is placed: the teehistorian
	// game's first position, none for the WoL replay (no tracker events).
	var first struct {
		First     int64 `json:"first"`
		Positions bool  `json:"positions"`
	}
	ts.want(http.StatusOK, "GET", th+"?first=1", ts.owner, nil, &first)
	if !first.Positions || first.First <= 0 {
		t.Fatalf("first position of the teehistorian game: %+v", first)
	}
	var at, before tracksAnswer
	ts.want(http.StatusOK, "GET", th+"?from="+strconv.FormatInt(first.First, 10)+"&to="+strconv.FormatInt(first.First, 10), ts.owner, nil, &at)
	ts.want(http.StatusOK, "GET", th+"?from=0&to="+strconv.FormatInt(first.First-1, 10), ts.owner, nil, &before)
	placed := func(a tracksAnswer) bool {
		for _, tr := range a.Tracks {
			for _, p := range tr.Points {
				if len(p) == 3 {
					return true
				}
			}
		}
		return false
	}
	if !placed(at) || placed(before) {
		t.Errorf("first position %d: placed there %v, before it %v", first.First, placed(at), placed(before))
	}
	ts.want(http.StatusOK, "GET", sc2+"?first=1", ts.owner, nil, &first)
	if first.Positions || first.First != -1 {
		t.Errorf("first position of a replay without positions: %+v", first)
	}
}

// TestTracksField: field=1 adds the ground the positions lie on: an SC2
// replay's map box (the size s2prot decodes from the file's initData,
// TestFieldAgainstRep), the Echo Arena with its goals for a .milk
// capture; none for a format that knows no ground, and none without
// field=1 (the answers the page asks for every piece stay as they were).
func TestTracksField(t *testing.T) {
	ts := start(t, server.Config{})
	upload := func(path string) string { return "/api/v1/recordings/" + ts.uploadFile(path) + "/tracks" }
	type fieldAnswer struct {
		Field *struct {
			Box    [4]float64 `json:"box"`
			Shapes []struct {
				Kind   string       `json:"kind"`
				Label  string       `json:"label"`
				Color  string       `json:"color"`
				Points [][2]float64 `json:"points"`
			} `json:"shapes"`
			Note string `json:"note"`
		} `json:"field"`
	}
	sc2 := upload(filepath.Join(formatstest.CorpusDir(t, "sc2replay"), "lotv-4.7.1.70326-iaguz-vs-luneth.SC2Replay"))
	milk := upload(filepath.Join(formatstest.CorpusDir(t, "butter"), "example.milk"))
	th := upload(filepath.Join(formatstest.CorpusDir(t, "teehistorian"), "7cee836b-aec8-44d9-9083-94d07d88bc05.teehistorian"))

	var a fieldAnswer
	ts.want(http.StatusOK, "GET", sc2+"?from=0&to=100&field=1", ts.owner, nil, &a)
	if a.Field == nil || a.Field.Box != [4]float64{0, 0, 168, 168} || len(a.Field.Shapes) != 1 || a.Field.Shapes[0].Kind != "outline" || a.Field.Note == "" {
		t.Errorf("SC2 field %+v, want the 168×168 box of Lost and Found LE outlined", a.Field)
	}
	a = fieldAnswer{}
	ts.want(http.StatusOK, "GET", milk+"?from=0&to=100&field=1", ts.owner, nil, &a)
	goals := 0
	if a.Field != nil {
		for _, s := range a.Field.Shapes {
			if s.Kind == "goal" {
				goals++
			}
		}
	}
	if a.Field == nil || a.Field.Box != [4]float64{-40, -15, 40, 15} || goals != 2 {
		t.Errorf("Echo VR field %+v, want the arena and its two goals", a.Field)
	}
	for _, path := range []string{th + "?from=0&to=100&field=1", sc2 + "?from=0&to=100"} {
		body := ts.want(http.StatusOK, "GET", path, ts.owner, nil, nil)
		if bytes.Contains(body, []byte(`"field"`)) {
			t.Errorf("%s: a field in %.200s", path, body)
		}
	}
}
