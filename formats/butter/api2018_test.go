// Tests of the 2018 session API shape: players with a top-level pose and
// [x, y, z] hands, a disc without orientation.

package butter

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/formatstest"
)

// to2018 rewrites a frame's JSON into the 2018 shape: each player's head
// pose moves to the top level, hands become bare positions, body goes,
// and the disc loses its orientation and the VR player object.
func to2018(t testing.TB, f *Frame) []byte {
	t.Helper()
	js, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(js, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "player")
	if d, ok := m["disc"].(map[string]any); ok {
		delete(d, "forward")
		delete(d, "left")
		delete(d, "up")
	}
	teams, _ := m["teams"].([]any)
	for _, tm := range teams {
		tmm, _ := tm.(map[string]any)
		players, _ := tmm["players"].([]any)
		for _, p := range players {
			pm := p.(map[string]any)
			head := pm["head"].(map[string]any)
			for _, k := range []string{"position", "forward", "left", "up"} {
				pm[k] = head[k]
			}
			pm["lhand"] = pm["lhand"].(map[string]any)["pos"]
			pm["rhand"] = pm["rhand"].(map[string]any)["pos"]
			delete(pm, "head")
			delete(pm, "body")
		}
	}
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out, []byte(`"rhand":[`)) || bytes.Contains(out, []byte(`"head"`)) {
		t.Fatalf("rewrite did not produce the 2018 shape: %.200s", out)
	}
	return out
}

// echoReplay2018 returns n frames (from the corpus frame) and the same
// frames as 2018-shape .echoreplay text.
func echoReplay2018(t testing.TB, n int) ([]*Frame, []byte) {
	frames := exampleFrames(t, n)
	var text []byte
	for _, f := range frames {
		text = f.RecordedTime.UTC().AppendFormat(text, TimeLayout)
		text = append(text, '\t')
		text = append(text, to2018(t, f)...)
		text = append(text, '\n')
	}
	return frames, text
}

// samePoses compares what the 2018 shape carries: head position and
// orientation, hand positions, disc position, within .butter's
// quantization (positions are stored as half-float deltas from a
// full-precision keyframe; directions as quantized quaternions).
func samePoses(got, want *Frame) error {
	const pos, dir = 0.05, 0.02
	if !nearVec(got.Disc.Position, want.Disc.Position, pos) {
		return fmt.Errorf("disc %v, want %v", got.Disc.Position, want.Disc.Position)
	}
	for ti := 0; ti < 2; ti++ {
		gt, wt := got.team(ti), want.team(ti)
		if wt == nil {
			continue
		}
		if gt == nil || len(gt.Players) != len(wt.Players) {
			return fmt.Errorf("team %d players differ", ti)
		}
		for i, wp := range wt.Players {
			gp := gt.Players[i]
			switch {
			case gp.Name != wp.Name:
				return fmt.Errorf("player %q, want %q", gp.Name, wp.Name)
			case gp.Head == nil || !nearVec(gp.Head.Position, wp.Head.Position, pos):
				return fmt.Errorf("%s: head %+v, want %v", wp.Name, gp.Head, wp.Head.Position)
			case !nearVec(gp.Head.Forward, wp.Head.Forward, dir) || !nearVec(gp.Head.Up, wp.Head.Up, dir):
				return fmt.Errorf("%s: head orientation %v %v, want %v %v", wp.Name, gp.Head.Forward, gp.Head.Up, wp.Head.Forward, wp.Head.Up)
			case gp.LHand == nil || !nearVec(gp.LHand.position().list(), wp.LHand.position().list(), pos):
				return fmt.Errorf("%s: lhand %+v, want %v", wp.Name, gp.LHand, wp.LHand.Pos)
			case gp.RHand == nil || !nearVec(gp.RHand.position().list(), wp.RHand.position().list(), pos):
				return fmt.Errorf("%s: rhand %+v, want %v", wp.Name, gp.RHand, wp.RHand.Pos)
			}
		}
	}
	return nil
}

func TestAPI2018ParseFrame(t *testing.T) {
	const js = `{"sessionid":"x","disc":{"position":[0,1,2],"velocity":[0,0,0]},"teams":[{"players":[
		{"name":"a","userid":7,"position":[1,2,3],"forward":[0,0,-1],"left":[-1,0,0],"up":[0,1,0],
		"lhand":[1.5,2,3],"rhand":[0.5,2,3.1000001],"velocity":[0,0,0]}]}]}`
	f, err := ParseFrame([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	p := f.Teams[0].Players[0]
	switch {
	case p.Name != "a" || p.UserID != 7 || f.SessionID != "x":
		t.Fatalf("plain fields lost: %+v", p)
	case p.Head == nil || !nearVec(p.Head.Position, []float32{1, 2, 3}, 0) || !nearVec(p.Head.Forward, []float32{0, 0, -1}, 0):
		t.Fatalf("head %+v", p.Head)
	case p.Body == nil || !nearVec(p.Body.Position, []float32{1, 2, 3}, 0) || &p.Body.Position[0] == &p.Head.Position[0]:
		t.Fatalf("body %+v (must not share the head's slices)", p.Body)
	case p.LHand == nil || !nearVec(p.LHand.Pos, []float32{1.5, 2, 3}, 0) || !nearVec(p.LHand.Up, []float32{0, 1, 0}, 0):
		t.Fatalf("lhand %+v", p.LHand)
	case p.RHand == nil || p.RHand.Position != nil || p.RHand.Pos[2] != float32(3.1000001):
		t.Fatalf("rhand %+v (numbers must keep their float32 value)", p.RHand)
	case !nearVec(f.Disc.Forward, []float32{0, 0, 1}, 0) || !nearVec(f.Disc.Up, []float32{0, 1, 0}, 0):
		t.Fatalf("disc orientation %+v", f.Disc)
	}
	// today's shape is untouched: objects, no top-level pose
	q, err := ParseFrame([]byte(`{"teams":[{"players":[{"name":"b","head":{"position":[4,5,6],"forward":[0,0,1],"left":[1,0,0],"up":[0,1,0]},"rhand":{"pos":[1,1,1],"forward":[0,0,1],"left":[1,0,0],"up":[0,1,0]}}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if qp := q.Teams[0].Players[0]; qp.Body != nil || qp.LHand != nil || qp.Head.Position[2] != 6 || qp.RHand.Pos[0] != 1 {
		t.Fatalf("current shape: %+v", qp)
	}
	for _, bad := range []string{`{"teams":[{"players":[{"rhand":[1,2]}]}]}`, `{"teams":[{"players":[{"head":"x"}]}]}`, `{"teams":[{"players":[{"lhand":[1,"a",3]}]}]}`} {
		if _, err := ParseFrame([]byte(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		} else if !strings.Contains(err.Error(), "hand") && !strings.Contains(err.Error(), "head") && !strings.Contains(err.Error(), "string") {
			t.Errorf("%s: error %q does not say what is wrong", bad, err)
		} else {
			t.Log(err)
		}
	}
}

// TestAPI2018EchoReplayToButterAndBack: a 2018-shape
// .echoreplay (plain and zipped) ingests, converts to .butter, and the
// .butter converts back, with every pose kept within quantization.
func TestAPI2018EchoReplayToButterAndBack(t *testing.T) {
	const n = 40
	want, text := echoReplay2018(t, n)
	for _, native := range [][]byte{text, zipped(t, text)} {
		rec := formatstest.Split(t, NewEchoReplay(), native)
		if rec.Metadata.Ticks != n || len(rec.Metadata.Players) == 0 {
			t.Fatalf("split: %d ticks, players %v", rec.Metadata.Ticks, rec.Metadata.Players)
		}
		var bt bytes.Buffer
		if err := NewEchoReplay().Export(context.Background(), rec.Source(), "butter", formats.All(),
			map[string]string{"keyframe-interval": "10", "compression": "zstd_3"}, &bt); err != nil {
			t.Fatal(err)
		}
		dec, err := Decode(context.Background(), bt.Bytes(), DecodeOptions{})
		if err != nil || len(dec.Frames) != n {
			t.Fatalf("decode: %v, %d frames", err, len(dec.Frames))
		}
		for i, f := range dec.Frames {
			if err := samePoses(f, want[i]); err != nil {
				t.Fatalf("butter frame %d: %v", i, err)
			}
		}
		// and back: .butter → .echoreplay (today's shape)
		brec := formatstest.Split(t, New(), bt.Bytes())
		var er bytes.Buffer
		if err := New().Export(context.Background(), brec.Source(), "echoreplay", formats.All(), nil, &er); err != nil {
			t.Fatal(err)
		}
		back, err := ReadEchoReplay(er.Bytes())
		if err != nil || len(back) != n {
			t.Fatalf("back: %v, %d frames", err, len(back))
		}
		for i, f := range back {
			if err := samePoses(f, want[i]); err != nil {
				t.Fatalf("echoreplay frame %d: %v", i, err)
			}
		}
	}
}
