// Tests of the format version 1 and 2 frame layouts on hand-built files
// (no v1/v2 file exists in the corpus).

package butter

import (
	"context"
	"encoding/binary"
	"math"
	"testing"
)

// oldFile builds a version 1 or 2 file: one player "p" (userid 7) on blue,
// a keyframe with every section and a delta frame with none.
func oldFile(version byte) []byte {
	h := []byte{version, 30, 0, 0, 'c', 0}
	h = append(h, make([]byte, 16)...) // session id
	h = append(h, 1, 2, 3, 4)          // ip
	h = append(h, 1, 'p', 0)           // one player
	h = binary.LittleEndian.AppendUint64(h, 7)
	h = append(h, 9, 20)           // number, level
	h = append(h, 3, 0x21, 2<<1|1) // rounds, scores, private arena
	var p []byte
	// keyframe
	p = append(p, 0xFC, 0xFE)
	p = binary.LittleEndian.AppendUint64(p, 1637382000000)
	p = binary.LittleEndian.AppendUint32(p, math.Float32bits(300))
	p = append(p, 0xFF)
	p = append(p, 4)                      // playing
	p = append(p, 5, 6)                   // points
	p = append(p, 1|1<<2|3<<4|1<<6)       // blue restart, paused by orange, unpaused none, paused
	p = appendHalf(appendHalf(p, 1.5), 0) // timers
	p = append(p, 0b0101)                 // inputs
	p = append(p, 0|1<<2|4<<3, 1, 0)      // last score: blue, 3 points, LONG SHOT, by p
	p = appendHalf(appendHalf(p, 20), 10)
	for i := 0; i < 13; i++ {
		p = appendHalf(p, float32(i))
	}
	p = appendPose(p, vec3{1, 2, 3}, quatIdentity)                              // VR player
	p = appendHalves(appendPose(p, vec3{4, 5, 6}, quatIdentity), vec3{1, 0, 0}) // disc
	p = append(p, 1|1<<2)                                                       // blue possession, blue stats
	p = statsBytes(p, &Stats{Points: 3, Goals: 1}, nil)
	p = append(p, 1) // one player
	p = append(p, 1, 0, 1|1<<4|1<<5|1<<6|1<<7)
	p = statsBytes(p, &Stats{Points: 3}, nil)
	p = binary.LittleEndian.AppendUint16(p, 40)
	p = appendHalf(p, 0.5)
	p = append(p, 253, 255) // holding disc, none
	p = appendHalves(p, vec3{0, 1, 0})
	p = append(p, 0xFF)
	for k := 0; k < 4; k++ {
		p = appendPose(p, vec3{float32(k), 1, 0}, quatIdentity)
	}
	p = append(p, 0, 0, 0) // orange, spectators: no players; bones: none
	// delta frame: nothing changes but the clock and the ping
	p = append(p, 0xFE, 0xFE, 33, 0)
	p = binary.LittleEndian.AppendUint32(p, math.Float32bits(-0.5))
	p = append(p, 0, 0, 1, 1, 0, 1<<5)
	p = binary.LittleEndian.AppendUint16(p, 2)
	p = appendHalf(p, 0)
	p = append(p, 0, 0, 0, 0)
	h = binary.LittleEndian.AppendUint32(h, 1)
	h = binary.LittleEndian.AppendUint32(h, uint32(len(p)))
	return append(h, p...)
}

func TestVersion1And2(t *testing.T) {
	for _, v := range []byte{1, 2} {
		dec, err := Decode(context.Background(), oldFile(v), DecodeOptions{})
		if err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		if len(dec.Frames) != 2 {
			t.Fatalf("v%d: %d frames", v, len(dec.Frames))
		}
		f, g := dec.Frames[0], dec.Frames[1]
		p := f.Teams[0].Players[0]
		switch {
		case *f.GameStatus != "playing" || f.BluePoints != 5 || f.OrangePoints != 6:
			t.Fatalf("v%d: status/points %v %v %v", v, *f.GameStatus, f.BluePoints, f.OrangePoints)
		case f.Pause.PausedState != "paused" || f.Pause.PausedRequestedTeam != "orange" || f.Pause.UnpausedTeam != "none" || f.Pause.PausedTimer != 1.5 || !bool(f.BlueTeamRestartRequest):
			t.Fatalf("v%d: pause %+v", v, f.Pause)
		case !bool(f.LeftShoulderPressed) || !bool(f.LeftShoulderPressed2) || bool(f.RightShoulderPressed):
			t.Fatalf("v%d: inputs", v)
		case f.LastScore.GoalType != "LONG SHOT" || f.LastScore.PointAmount != 3 || f.LastScore.PersonScored != "p" || f.LastThrow.TotalSpeed != 1:
			t.Fatalf("v%d: last score %+v", v, f.LastScore)
		case f.Disc.Position[2] != 6 || f.Disc.Velocity[0] != 1 || f.Player.VRPosition[1] != 2:
			t.Fatalf("v%d: disc %+v", v, f.Disc)
		case p.Name != "p" || p.UserID != 7 || p.Number != 9 || p.Level != 20 || p.Stats.Points != 3 || p.Ping != 40 || *p.HoldingLeft != "disc" || p.Velocity[1] != 1 || p.LHand.Pos[0] != 2:
			t.Fatalf("v%d: player %+v", v, p)
		case !bool(p.Possession) || f.Teams[0].Stats.Goals != 1 || !bool(f.Teams[0].Possession):
			t.Fatalf("v%d: flags", v)
		case g.GameClock != 299.5 || g.RecordedTime.Sub(f.RecordedTime).Milliseconds() != 33 || g.Teams[0].Players[0].Ping != 42 || g.Disc != f.Disc:
			t.Fatalf("v%d: delta frame %v %v %v", v, g.GameClock, g.RecordedTime, g.Teams[0].Players[0].Ping)
		}
	}
}
