// Tests of the .milk codec on the real capture.

package butter

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/formatstest"
)

func TestMilkCodec(t *testing.T) {
	native := readFile(t, filepath.Join(corpusDir(t), "example.milk"))
	c := NewMilk()
	head := native[:formats.DetectSize]
	if !c.Detect(head) || New().Detect(head) || NewEchoReplay().Detect(head) {
		t.Fatal("detection")
	}
	rec := formatstest.Split(t, c, native)
	if rec.Metadata.Ticks != 822 || len(rec.ChunkIndex) != 19 || len(rec.Metadata.Players) != 6 {
		t.Fatalf("metadata %+v, %d chunks", rec.Metadata, len(rec.ChunkIndex))
	}
	// the samples match the positions of the input set made from them
	in := inputFrames(t, "milk_2020-09-07")
	var got []*Frame
	err := c.milkFrames(context.Background(), rec.Source(), formats.All(), func(_ int64, f *Frame) error {
		got = append(got, f)
		return nil
	})
	if err != nil || len(got) != 822 {
		t.Fatalf("%v, %d frames", err, len(got))
	}
	for _, i := range []int{0, 100, 500, 821} {
		g, w := got[i], in[i]
		if !nearVec(g.Disc.Position, w.Disc.Position, 1e-6) || *g.GameStatus != *w.GameStatus || g.BluePoints != w.BluePoints {
			t.Fatalf("frame %d: disc %v status %v, want %v %v", i, g.Disc.Position, *g.GameStatus, w.Disc.Position, *w.GameStatus)
		}
		for ti := 0; ti < 2; ti++ {
			for pi, wp := range w.Teams[ti].Players {
				gp := g.Teams[ti].Players[pi]
				if gp.Name != wp.Name || !nearVec(gp.Head.Position, wp.Head.Position, 1e-6) || !nearVec(gp.RHand.Pos, wp.RHand.Pos, 1e-6) ||
					gp.Possession != wp.Possession || gp.Stunned != wp.Stunned || gp.Stats.Points != wp.Stats.Points {
					t.Fatalf("frame %d player %s: %+v", i, wp.Name, gp)
				}
			}
		}
	}
	var clip bytes.Buffer
	if err := c.Clip(context.Background(), rec.Source(), formats.Ticks(40, 100), &clip); err != nil {
		t.Fatal(err)
	}
	crec := formatstest.Split(t, c, clip.Bytes())
	if crec.Metadata.Ticks != 61 {
		t.Fatalf("clip has %d ticks", crec.Metadata.Ticks)
	}
	var out bytes.Buffer
	if err := c.Export(context.Background(), rec.Source(), "butter", formats.All(), map[string]string{"compression": "zstd_3", "start": "2020-09-07T08:00:00Z"}, &out); err != nil {
		t.Fatal(err)
	}
	dec, err := Decode(context.Background(), out.Bytes(), DecodeOptions{})
	if err != nil || len(dec.Frames) != 822 || !dec.Frames[1].RecordedTime.Equal(in[1].RecordedTime) {
		t.Fatalf("export: %v, %d frames", err, len(dec.Frames))
	}
	formatstest.CheckBadInput(t, c, native[:20000], 211)
}

// .milk has no user ids; converting it to .butter (whose player table is
// keyed by userid) must still keep all six players apart.
func TestMilkToButterKeepsPlayers(t *testing.T) {
	native := readFile(t, filepath.Join(corpusDir(t), "example.milk"))
	rec := formatstest.Split(t, NewMilk(), native)
	var out bytes.Buffer
	if err := NewMilk().Export(context.Background(), rec.Source(), "butter", formats.All(), nil, &out); err != nil {
		t.Fatal(err)
	}
	conv := formatstest.Split(t, New(), out.Bytes())
	if got := len(conv.Metadata.Players); got != 6 {
		t.Fatalf("converted .butter has %d players, want the milk file's 6: %+v", got, conv.Metadata.Players)
	}
	names := map[string]bool{}
	for _, p := range conv.Metadata.Players {
		names[p.Name] = true
	}
	for _, want := range []string{"Badboys12", "JJMAYNEX", "AXZBeast", "zerocool59", "real_ang3l", "thebastians"} {
		if !names[want] {
			t.Errorf("player %s lost in conversion", want)
		}
	}
}

// .milk has no timestamps, but each group is one second of samples: the
// capture's 19 groups of 45 samples (the last of 12) give 45 Hz, chunk
// times a second apart and 821/45 s, as in the .butter made from it. A
// clip whose first group is cut keeps the rate in its header.
func TestMilkTimes(t *testing.T) {
	native := readFile(t, filepath.Join(corpusDir(t), "example.milk"))
	c := NewMilk()
	rec := formatstest.Split(t, c, native)
	m := rec.Metadata
	if m.TickRate != 45 || m.Duration != 18244*time.Millisecond {
		t.Fatalf("tick rate %v, duration %v; want 45 and 18.244s", m.TickRate, m.Duration)
	}
	for i, ch := range rec.ChunkIndex {
		if want := time.Duration(i) * time.Second; ch.Time != want {
			t.Errorf("chunk %d (tick %d) at %v, want %v", i, ch.StartTick, ch.Time, want)
		}
	}
	var clip bytes.Buffer
	if err := c.Clip(context.Background(), rec.Source(), formats.Ticks(40, 100), &clip); err != nil {
		t.Fatal(err)
	}
	if !c.Detect(clip.Bytes()[:min(clip.Len(), formats.DetectSize)]) {
		t.Fatal("the clip is not detected as .milk")
	}
	crec := formatstest.Split(t, c, clip.Bytes())
	cm := crec.Metadata
	if cm.Ticks != 61 || cm.TickRate != 45 || cm.Duration != 1333*time.Millisecond {
		t.Fatalf("clip: %d ticks at %v/s, %v; want 61 at 45/s, 1.333s", cm.Ticks, cm.TickRate, cm.Duration)
	}
	if got := crec.ChunkIndex[1]; got.StartTick != 5 || got.Time != 111*time.Millisecond {
		t.Errorf("the clip's second group starts at tick %d, %v; want 5, 111ms", got.StartTick, got.Time)
	}
	// A clip of the clip, inside its second group, says the same rate.
	var clip2 bytes.Buffer
	if err := c.Clip(context.Background(), crec.Source(), formats.Ticks(10, 20), &clip2); err != nil {
		t.Fatal(err)
	}
	if m2 := formatstest.Split(t, c, clip2.Bytes()).Metadata; m2.Ticks != 11 || m2.TickRate != 45 {
		t.Fatalf("clip of the clip: %d ticks at %v/s, want 11 at 45/s", m2.Ticks, m2.TickRate)
	}
	// One group without a rate says no rate rather than a wrong one.
	one := formatstest.Split(t, c, tinyMilk()).Metadata
	if one.TickRate != 0 || one.Duration != 0 {
		t.Errorf("one group: rate %v, duration %v; want both unknown", one.TickRate, one.Duration)
	}
}
