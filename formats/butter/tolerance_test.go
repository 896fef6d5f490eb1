// Tests of what our decoding tolerates or fixes where the reference reader
// fails: late joiners missing from the player table, signed stat deltas,
// decompression bombs, and of the small helpers (half floats, varints).

package butter

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/formatstest"
)

// exampleFrames returns n frames made from the real example frame, 33 ms
// apart, with the player's head moving.
func exampleFrames(t testing.TB, n int) []*Frame {
	var raw []byte
	if p := examplePath(); p != "" {
		raw, _ = os.ReadFile(p)
	}
	if raw == nil {
		raw = []byte(minimalFrameJSON)
	}
	var out []*Frame
	t0 := time.Date(2021, 11, 20, 4, 20, 0, 0, time.UTC)
	for i := 0; i < n; i++ {
		f := new(Frame)
		if err := json.Unmarshal(raw, f); err != nil {
			t.Fatal(err)
		}
		f.RecordedTime = t0.Add(time.Duration(i) * 33 * time.Millisecond)
		f.GameClock -= float32(i) * 0.033
		if p := f.Teams[0].Players; len(p) > 0 {
			p[0].Head.Position[0] += float32(i) * 0.05
		}
		out = append(out, f)
	}
	return out
}

func examplePath() string {
	root, err := os.Getwd()
	if err != nil {
		return ""
	}
	p := filepath.Join(root, "..", "..", "..", "shared", "corpus", "butter", "example_frame_2021-11-20.json")
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// minimalFrameJSON is a small hand-made frame for when the corpus is absent.
const minimalFrameJSON = `{"sessionid":"892E23E2-8272-4B07-85E8-5E291AC85F93","sessionip":"10.0.0.1","client_name":"me","map_name":"mpl_arena_a","private_match":true,"game_status":"playing","game_clock":300,
"disc":{"position":[0,1,2],"forward":[0,0,1],"left":[1,0,0],"up":[0,1,0],"velocity":[0,0,0]},
"player":{"vr_position":[0,1,0],"vr_forward":[0,0,1],"vr_left":[1,0,0],"vr_up":[0,1,0]},
"pause":{"paused_state":"unpaused","unpaused_team":"none","paused_requested_team":"none"},
"last_score":{"team":"blue","goal_type":"SLAM DUNK","point_amount":2,"person_scored":"a","assist_scored":"b"},
"rules_changed_by":"a","teams":[{"players":[{"name":"a","userid":1,"playerid":0,"head":{"position":[0,1,0],"forward":[0,0,1],"left":[1,0,0],"up":[0,1,0]},"body":{"position":[0,1,0],"forward":[0,0,1],"left":[1,0,0],"up":[0,1,0]},"lhand":{"pos":[0,1,0],"forward":[0,0,1],"left":[1,0,0],"up":[0,1,0]},"rhand":{"pos":[0,1,0],"forward":[0,0,1],"left":[1,0,0],"up":[0,1,0]},"velocity":[0,0,0],"stats":{"points":3},"holding_left":"none","holding_right":"none"}],"stats":{"points":3}},
{"players":[{"name":"b","userid":2,"playerid":1,"head":{"position":[0,1,0],"forward":[0,0,1],"left":[1,0,0],"up":[0,1,0]},"body":{"position":[0,1,0],"forward":[0,0,1],"left":[1,0,0],"up":[0,1,0]},"lhand":{"pos":[0,1,0],"forward":[0,0,1],"left":[1,0,0],"up":[0,1,0]},"rhand":{"pos":[0,1,0],"forward":[0,0,1],"left":[1,0,0],"up":[0,1,0]},"velocity":[0,0,0],"stats":{}}],"stats":{}},{}]}`

func writeFrames(t testing.TB, frames []*Frame, opts WriterOptions) []byte {
	w, err := NewWriter(opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range frames {
		if err := w.Add(f); err != nil {
			t.Fatal(err)
		}
	}
	b, err := w.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestLateJoinerBeyondPlayerTable(t *testing.T) {
	frames := exampleFrames(t, 6)
	w, _ := NewWriter(WriterOptions{KeyframeInterval: 4})
	for _, f := range frames {
		w.Add(f)
	}
	// what Spark's race produces: a header that misses the last player
	w.table.names = w.table.names[:len(w.table.names)-1]
	w.table.userids = w.table.userids[:len(w.table.userids)-1]
	w.table.numbers = w.table.numbers[:len(w.table.numbers)-1]
	w.table.levels = w.table.levels[:len(w.table.levels)-1]
	// (chunks were encoded with the full table; only the header shrinks)
	b, err := w.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	dec, err := Decode(context.Background(), b, DecodeOptions{})
	if err != nil || len(dec.Frames) != 6 || len(dec.Warnings) != 1 {
		t.Fatalf("%v, %d frames, warnings %v", err, len(dec.Frames), dec.Warnings)
	}
	rec := formatstest.Split(t, New(), b)
	if len(rec.Metadata.Warnings) != 1 {
		t.Fatalf("split warnings %v", rec.Metadata.Warnings)
	}
	found := false
	for _, p := range rec.Metadata.Players {
		found = found || p.Name == "[UNKNOWN "+itoa(len(w.table.names)+1)+"]"
	}
	if !found {
		t.Fatalf("players %v", rec.Metadata.Players)
	}
}

func TestSignedStatDeltas(t *testing.T) {
	frames := exampleFrames(t, 3)
	p := frames[2].Teams[0].Players[0]
	p.Stats.Points -= 1 // a stat that goes down (a rejoin, a reset)
	frames[2].Teams[0].Stats.Saves -= 2
	b := writeFrames(t, frames, WriterOptions{KeyframeInterval: 300})
	ours, err := Decode(context.Background(), b, DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := Decode(context.Background(), b, DecodeOptions{Reference: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := ours.Frames[2].Teams[0].Players[0].Stats.Points; got != p.Stats.Points {
		t.Fatalf("points %d, want %d", got, p.Stats.Points)
	}
	if got := ref.Frames[2].Teams[0].Players[0].Stats.Points; got != p.Stats.Points+256 {
		t.Fatalf("reference points %d, want %d (the -1 read as +255)", got, p.Stats.Points+256)
	}
	if got, want := ours.Frames[2].Teams[0].Stats.Saves, frames[2].Teams[0].Stats.Saves; got != want {
		t.Fatalf("team saves %d, want %d", got, want)
	}
	// the reference reads the team delta (-2 → 254) as the absolute value
	if got := ref.Frames[2].Teams[0].Stats.Saves; got != 254 {
		t.Fatalf("reference team saves %d, want 254", got)
	}
}

func TestDecompressionBounded(t *testing.T) {
	zeros := make([]byte, 4<<20)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(zeros)
	zw.Close()
	if _, err := decompressChunk(gz.Bytes(), CompressGzip, 1<<20); err == nil {
		t.Fatal("gzip bomb: no error")
	}
	enc, _ := zstd.NewWriter(nil)
	zb := enc.EncodeAll(make([]byte, 4<<20), nil)
	if _, err := decompressChunk(zb, CompressZstd3, 1<<20); err == nil {
		t.Fatal("zstd bomb: no error")
	}
	// a whole file whose chunk expands past maxChunkPayload
	frames := exampleFrames(t, 2)
	good := writeFrames(t, frames, WriterOptions{Compression: CompressZstd3})
	h, _ := ParseFileHeader(good)
	bomb := bytes.Clone(good[:h.HeaderLen])
	bomb = appendU32(bomb, 1)
	bomb = appendU32(bomb, uint32(len(zb)))
	bomb = append(bomb, zb...)
	_, err := formatstest.TrySplit(&Codec{Options: DecodeOptions{MaxChunkPayload: 1 << 20}}, bomb)
	var fe *formats.Error
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("more than")) || !errorsAs(err, &fe) {
		t.Fatalf("bomb file: %v", err)
	}
	t.Log(err)
}

func errorsAs(err error, fe **formats.Error) bool {
	e, ok := err.(*formats.Error)
	*fe = e
	return ok
}

func TestHalfTruncates(t *testing.T) {
	for _, c := range []struct {
		f    float32
		want uint16
	}{
		{0, 0}, {1, 0x3C00}, {-2, 0xC000}, {65504, 0x7BFF}, {65535, 0x7BFF}, {65536, 0x7C00},
		{1.0009765625 - 1e-7, 0x3C00}, // rounds up elsewhere; truncates here
		{0.33333334, 0x3555},          // 0x3555.5 truncated
		{5.9604645e-08, 0x0001}, {float32(math.Inf(-1)), 0xFC00},
	} {
		if got := toHalf(c.f); got != c.want {
			t.Errorf("toHalf(%v) = %#04x, want %#04x", c.f, got, c.want)
		}
	}
	for h := 0; h < 0x7C00; h++ {
		if got := toHalf(fromHalf(uint16(h))); got != uint16(h) {
			t.Fatalf("half %#x does not round-trip (%#x)", h, got)
		}
	}
}

func TestVarint(t *testing.T) {
	for _, v := range []uint64{0, 240, 241, 2287, 2288, 67823, 67824, 1<<24 - 1, 1 << 24, 1<<32 - 1, 1 << 40, math.MaxUint64} {
		b := appendVarUint(nil, v)
		c := &cursor{b: b}
		if got := c.varUint(); got != v || c.err != nil || c.pos != len(b) {
			t.Errorf("varint %d: got %d (%d of %d bytes, %v)", v, got, c.pos, len(b), c.err)
		}
	}
}

// TestOursCloserThanReference measures how far decoded head positions are
// from the frames that were encoded, for our decoding and the reference's.
func TestOursCloserThanReference(t *testing.T) {
	for _, name := range []string{"milk_2020-09-07.none.k300", "example_2021-11-20.none.k300"} {
		native := readFile(t, filepath.Join(corpusDir(t), "reference", "butter", name+".butter"))
		in := inputFrames(t, name[:len(name)-len(".none.k300")])
		var worst [2]float32
		for mi, opts := range []DecodeOptions{{}, {Reference: true}} {
			dec, err := Decode(context.Background(), native, opts)
			if err != nil {
				t.Fatal(err)
			}
			for i, f := range dec.Frames {
				for ti := 0; ti < 2; ti++ {
					for pi, p := range f.Teams[ti].Players {
						w := in[i].Teams[ti].Players[pi]
						worst[mi] = max(worst[mi], vecOf(p.Head.Position).sub(vecOf(w.Head.Position)).length())
					}
				}
			}
		}
		t.Logf("%s: max head position error: ours %.4f m, reference %.4f m", name, worst[0], worst[1])
		if worst[0] > worst[1] {
			t.Errorf("%s: our decoding is further from the input (%.4f m) than the reference's (%.4f m)", name, worst[0], worst[1])
		}
	}
}

// TestCombatRoundTrip: Combat frames (points as halves, payload, loadouts,
// no disc/last score/holding) written by our writer read back. (The
// reference corpus holds its Combat set back, so this checks our writer
// against our reader only.)
func TestCombatRoundTrip(t *testing.T) {
	frames := exampleFrames(t, 40)
	ws, os_, ts, as := []string{"rocket", "blaster", "scout", "assault"}, []string{"stun", "det", "burst", "arc"}, []string{"sensor", "wraith", "heal", "shield"}, []string{"Left", "Right"}
	for i, f := range frames {
		f.MapName, f.MatchType = "mpl_combat_dyson", "Echo_Combat_Private"
		f.BluePoints, f.OrangePoints = float32(i/8)*0.25, float32(i/10)*0.1
		f.Contested = i%7 < 3
		f.PayloadCheckpoint, f.PayloadDefenders = i/20, i%3
		f.PayloadDistance, f.PayloadSpeed = 120-0.21*float32(i), float32(i%5)*0.1
		for _, tm := range f.Teams[:2] {
			for j, p := range tm.Players {
				p.Weapon, p.Ordnance, p.TacMod, p.Arm = strPtr(ws[(i/10+j)%4]), strPtr(os_[j%4]), strPtr(ts[(i/13+j)%4]), strPtr(as[j%2])
			}
		}
	}
	b := writeFrames(t, frames, WriterOptions{KeyframeInterval: 16})
	dec, err := Decode(context.Background(), b, DecodeOptions{})
	if err != nil || len(dec.Frames) != len(frames) {
		t.Fatalf("%v, %d frames", err, len(dec.Frames))
	}
	for i, g := range dec.Frames {
		w := frames[i]
		if g.MatchType != "Echo_Combat_Private" || !near(g.BluePoints, w.BluePoints, 0.01) || !near(g.OrangePoints, w.OrangePoints, 0.01) ||
			g.Contested != w.Contested || g.PayloadCheckpoint != w.PayloadCheckpoint || g.PayloadDefenders != w.PayloadDefenders ||
			!near(g.PayloadDistance, w.PayloadDistance, 0.07) || !near(g.PayloadSpeed, w.PayloadSpeed, 0.001) || g.Disc != nil || g.LastScore != nil {
			t.Fatalf("frame %d: %+v", i, g)
		}
		for ti := 0; ti < 2; ti++ {
			for j, p := range g.Teams[ti].Players {
				wp := w.Teams[ti].Players[j]
				if *p.Weapon != *wp.Weapon || *p.Ordnance != *wp.Ordnance || *p.TacMod != *wp.TacMod || *p.Arm != *wp.Arm || p.HoldingLeft != nil {
					t.Fatalf("frame %d player %s: %v %v %v %v", i, p.Name, *p.Weapon, *p.Ordnance, *p.TacMod, *p.Arm)
				}
			}
		}
	}
}
