// Tests of .echoreplay reading and writing, the echoreplay codec, and the
// .echoreplay → .butter → .echoreplay round trip.

package butter

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/formatstest"
)

// inputText returns the first n lines of an input set as .echoreplay text.
func inputText(t testing.TB, set string, n int) []byte {
	b := readZst(t, filepath.Join(corpusDir(t), "reference", "input", set+".echoreplay.zst"))
	end := 0
	for i := 0; i < n && end < len(b); i++ {
		j := bytes.IndexByte(b[end:], '\n')
		if j < 0 {
			end = len(b)
			break
		}
		end += j + 1
	}
	return b[:end]
}

func zipped(t testing.TB, text []byte) []byte {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	w, err := zw.Create("rec_2021-11-20_04-20-00.echoreplay")
	if err != nil {
		t.Fatal(err)
	}
	w.Write(text)
	zw.Close()
	return b.Bytes()
}

func TestEchoReplayBadInput(t *testing.T) {
	var text []byte
	for _, fr := range exampleFrames(t, 3) {
		text, _ = AppendLine(text, fr)
	}
	n := formatstest.CheckBadInput(t, &EchoReplayCodec{ChunkSize: 1 << 10}, text, 97)
	t.Logf("%d variants errored", n)
	z := zipped(t, text)
	formatstest.CheckBadInput(t, NewEchoReplay(), z, 13)
	_, err := formatstest.TrySplit(NewEchoReplay(), append(bytes.Clone(text), "2021/13/45 xx\t{}\n"...))
	if err == nil {
		t.Fatal("bad timestamp accepted")
	}
	t.Log(err)
}

func TestEchoReplayCodec(t *testing.T) {
	c := &EchoReplayCodec{ChunkSize: 64 << 10}
	for _, set := range []string{"milk_2020-09-07", "synthetic_bones"} {
		text := inputText(t, set, 120)
		for _, native := range [][]byte{text, zipped(t, text)} {
			if !c.Detect(native[:min(len(native), formats.DetectSize)]) {
				t.Fatalf("%s: Detect = false", set)
			}
			if New().Detect(native[:min(len(native), formats.DetectSize)]) || NewMilk().Detect(native[:min(len(native), formats.DetectSize)]) {
				t.Fatalf("%s: another codec claims an .echoreplay", set)
			}
			rec := formatstest.Split(t, c, native)
			if rec.Metadata.Ticks != 120 || rec.Metadata.Session == "" || len(rec.Metadata.Players) == 0 {
				t.Fatalf("%s: metadata %+v", set, rec.Metadata)
			}
			if !isZip(native) && len(rec.ChunkIndex) < 2 {
				t.Fatalf("%s: %d chunks", set, len(rec.ChunkIndex))
			}
			frames := framesOf(t, c, rec.Source(), 10, 12)
			if len(frames) != 3 || frames[0].Tick != 10 {
				t.Fatalf("%s: frames %v", set, len(frames))
			}
			var m map[string]any
			if err := json.Unmarshal(mustJSON(t, frames[0].Data), &m); err != nil || m["sessionid"] == nil || m["recorded_time"] == nil {
				t.Fatalf("%s: frame JSON: %v %v", set, err, m["recorded_time"])
			}
			var clip bytes.Buffer
			if err := c.Clip(context.Background(), rec.Source(), formats.Ticks(5, 9), &clip); err != nil {
				t.Fatal(err)
			}
			got, err := ReadEchoReplay(clip.Bytes())
			if err != nil || len(got) != 5 {
				t.Fatalf("%s: clip: %v, %d frames", set, err, len(got))
			}
			// export to butter equals our writer on the same frames
			var out bytes.Buffer
			if err := c.Export(context.Background(), rec.Source(), "butter", formats.All(), map[string]string{"keyframe-interval": "30", "compression": "none"}, &out); err != nil {
				t.Fatal(err)
			}
			all, err := ReadEchoReplay(native)
			if err != nil {
				t.Fatal(err)
			}
			w, _ := NewWriter(WriterOptions{KeyframeInterval: 30})
			for _, f := range all {
				w.Add(f)
			}
			want, _ := w.Bytes()
			if !bytes.Equal(out.Bytes(), want) {
				t.Fatalf("%s: export differs from the writer", set)
			}
		}
	}
}

func near(a, b, tol float32) bool {
	return float32(math.Abs(float64(a-b))) <= tol
}

func nearVec(a, b []float32, tol float32) bool {
	if len(a) != 3 || len(b) != 3 {
		return len(a) == len(b)
	}
	for i := range a {
		if !near(a[i], b[i], tol) {
			return false
		}
	}
	return true
}

// checkStored compares a frame decoded from .butter with its source on
// every field .butter stores, within the format's quantization.
func checkStored(got, want *Frame) error {
	const pos, dir = 0.2, 0.02
	switch {
	case !got.RecordedTime.Equal(want.RecordedTime):
		return fmt.Errorf("time %v, want %v", got.RecordedTime, want.RecordedTime)
	case !near(got.GameClock, want.GameClock, 1e-3):
		return fmt.Errorf("game_clock %v, want %v", got.GameClock, want.GameClock)
	case !strEq(got.GameStatus, want.GameStatus):
		return fmt.Errorf("game_status")
	case got.BluePoints != want.BluePoints || got.OrangePoints != want.OrangePoints:
		return fmt.Errorf("points")
	case got.LeftShoulderPressed != want.LeftShoulderPressed || got.RightShoulderPressed != want.RightShoulderPressed ||
		got.LeftShoulderPressed2 != want.LeftShoulderPressed2 || got.RightShoulderPressed2 != want.RightShoulderPressed2:
		return fmt.Errorf("inputs")
	case got.BlueTeamRestartRequest != want.BlueTeamRestartRequest || got.OrangeTeamRestartRequest != want.OrangeTeamRestartRequest:
		return fmt.Errorf("restart requests")
	case got.Pause.PausedState != want.Pause.PausedState || got.Pause.PausedRequestedTeam != want.Pause.PausedRequestedTeam || got.Pause.UnpausedTeam != want.Pause.UnpausedTeam:
		return fmt.Errorf("pause %+v, want %+v", got.Pause, want.Pause)
	case got.SessionID != want.SessionID || got.ClientName != want.ClientName || got.MapName != want.MapName || got.PrivateMatch != want.PrivateMatch:
		return fmt.Errorf("header fields")
	case !nearVec(got.Disc.Position, want.Disc.Position, pos) || !nearVec(got.Disc.Velocity, want.Disc.Velocity, pos) ||
		!nearVec(got.Disc.Forward, want.Disc.Forward, dir) || !nearVec(got.Disc.Up, want.Disc.Up, dir):
		return fmt.Errorf("disc %+v, want %+v", got.Disc, want.Disc)
	case !nearVec(got.Player.VRPosition, want.Player.VRPosition, pos) || !nearVec(got.Player.VRForward, want.Player.VRForward, dir):
		return fmt.Errorf("vr player")
	}
	if (want.LastScore != nil) && (got.LastScore.GoalType != spaced(want.LastScore.GoalType) || got.LastScore.PersonScored != want.LastScore.PersonScored ||
		!near(got.LastScore.DiscSpeed, want.LastScore.DiscSpeed, 0.1)) {
		return fmt.Errorf("last score %+v, want %+v", got.LastScore, want.LastScore)
	}
	if want.LastThrow != nil && !near(got.LastThrow.TotalSpeed, want.LastThrow.TotalSpeed, 0.05) {
		return fmt.Errorf("last throw")
	}
	if want.RulesChangedBy != nil && want.PrivateMatch && (got.RulesChangedBy == nil || *got.RulesChangedBy != *want.RulesChangedBy || got.RulesChangedAt != want.RulesChangedAt) {
		return fmt.Errorf("rules changed")
	}
	for ti := 0; ti < 3; ti++ {
		gt, wt := got.team(ti), want.team(ti)
		if wt == nil {
			continue
		}
		if ti < 2 && gt.Possession != wt.Possession {
			return fmt.Errorf("team %d possession", ti)
		}
		if wt.Stats != nil && !sameStatsApprox(gt.Stats, wt.Stats) {
			return fmt.Errorf("team %d stats %+v, want %+v", ti, gt.Stats, wt.Stats)
		}
		if len(gt.Players) != len(wt.Players) {
			return fmt.Errorf("team %d: %d players, want %d", ti, len(gt.Players), len(wt.Players))
		}
		for pi, wp := range wt.Players {
			gp := gt.Players[pi]
			switch {
			case gp.Name != wp.Name || gp.UserID != wp.UserID || gp.PlayerID != wp.PlayerID:
				return fmt.Errorf("player %s identity", wp.Name)
			case gp.Ping != wp.Ping || !near(gp.PacketLossRatio, wp.PacketLossRatio, 1e-3):
				return fmt.Errorf("player %s ping/loss", wp.Name)
			case gp.Possession != wp.Possession || gp.Blocking != wp.Blocking || gp.Stunned != wp.Stunned || gp.Invulnerable != wp.Invulnerable || gp.IsEmotePlaying != wp.IsEmotePlaying:
				return fmt.Errorf("player %s state", wp.Name)
			case want.inArena() && (!strEq(gp.HoldingLeft, wp.HoldingLeft) || !strEq(gp.HoldingRight, wp.HoldingRight)):
				return fmt.Errorf("player %s holding", wp.Name)
			case !nearVec(gp.Velocity, wp.Velocity, 0.4): // changes under 0.01 m/s per frame are dropped
				return fmt.Errorf("player %s velocity %v, want %v", wp.Name, gp.Velocity, wp.Velocity)
			case !sameStatsApprox(gp.Stats, wp.Stats):
				return fmt.Errorf("player %s stats %+v, want %+v", wp.Name, gp.Stats, wp.Stats)
			}
			for k, pair := range [4][2]*Transform{{gp.Head, wp.Head}, {gp.Body, wp.Body}, {gp.LHand, wp.LHand}, {gp.RHand, wp.RHand}} {
				g, w := pair[0], pair[1]
				if !nearVec(g.position().list(), w.position().list(), pos) || !nearVec(g.Forward, w.Forward, dir) || !nearVec(g.Up, w.Up, dir) {
					return fmt.Errorf("player %s pose %d: %+v, want %+v", wp.Name, k, g, w)
				}
			}
		}
	}
	if (got.Bones == nil) != (want.Bones == nil) {
		return fmt.Errorf("bones present %v, want %v", got.Bones != nil, want.Bones != nil)
	}
	if want.Bones != nil {
		for pi := range want.Bones.UserBones {
			for i := 0; i < numBones; i++ {
				gp, gq := bonePose(&got.Bones.UserBones[pi], i)
				wp, wq := bonePose(&want.Bones.UserBones[pi], i)
				// below-threshold changes (1 mm, 1°) are dropped and add up,
				// and the truncating smallest-three of small rotation deltas
				// drifts: the reference reader's own output is up to 52° off
				// in the first chunk of this set. Check positions, and that
				// rotations stay unit quaternions.
				if gp.sub(wp).length() > 0.05 || math.Abs(float64(gq.dot(gq))-1) > 0.01 {
					return fmt.Errorf("bone player %d bone %d: %v %v, want %v %v", pi, i, gp, gq, wp, wq)
				}
			}
		}
	}
	return nil
}

func sameStatsApprox(a, b *Stats) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	x, y := *a, *b
	if !near(x.PossessionTime, y.PossessionTime, 1.5) {
		return false
	}
	x.PossessionTime, y.PossessionTime = 0, 0
	return x == y
}

// TestEchoReplayButterRoundTrip: .echoreplay → .butter → .echoreplay keeps
// every field .butter stores (within its quantization).
func TestEchoReplayButterRoundTrip(t *testing.T) {
	for _, set := range []string{"example_2021-11-20", "milk_2020-09-07", "synthetic_bones", "synthetic_bones_join"} {
		t.Run(set, func(t *testing.T) {
			in, err := ReadEchoReplay(inputText(t, set, 400))
			if err != nil {
				t.Fatal(err)
			}
			w, _ := NewWriter(WriterOptions{KeyframeInterval: 30, Compression: CompressGzip})
			for _, f := range in {
				if err := w.Add(f); err != nil {
					t.Fatal(err)
				}
			}
			b, err := w.Bytes()
			if err != nil {
				t.Fatal(err)
			}
			dec, err := Decode(context.Background(), b, DecodeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			// through .echoreplay text and back
			var text bytes.Buffer
			ew, _ := NewEchoReplayWriter(&text, false, "")
			for _, f := range dec.Frames {
				if err := ew.Write(f); err != nil {
					t.Fatal(err)
				}
			}
			back, err := ReadEchoReplay(text.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			if len(back) != len(in) {
				t.Fatalf("%d frames, want %d", len(back), len(in))
			}
			for i := range in {
				if err := checkStored(back[i], in[i]); err != nil {
					t.Fatalf("frame %d: %v", i, err)
				}
			}
		})
	}
}

func TestParseTime(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string
		ok   bool
	}{
		{"2021/11/20 04:20:00.033", "2021-11-20T04:20:00.033Z", true},
		{"2021/11/20 04.20.00.033", "2021-11-20T04:20:00.033Z", true},
		{"2021/11/20 04:20:00", "2021-11-20T04:20:00Z", true},
		{"2021/11/20 04:20:00.1234567", "2021-11-20T04:20:00.1234567Z", true},
		{"2021-11-20 04:20:00.000", "", false},
		{"", "", false},
	} {
		got, err := ParseTime(c.in)
		if (err == nil) != c.ok || (c.ok && got.Format("2006-01-02T15:04:05.999999999Z07:00") != c.want) {
			t.Errorf("ParseTime(%q) = %v, %v", c.in, got, err)
		}
	}
}
