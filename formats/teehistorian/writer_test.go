// Round-trip tests of Recorder and Reader: random per-tick states written by
// the Recorder decode to the same positions and inputs at every tick, which
// shows that both sides agree on implicit and explicit ticks.

package teehistorian

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestRecorderRoundTrip(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 1))
		var buf bytes.Buffer
		hj, _ := testHeader().MarshalJSON()
		rec, err := NewRecorder(&buf, hj)
		if err != nil {
			t.Fatal(err)
		}
		const n = 8
		var alive [n]bool
		var pos [n][2]int32
		var hasIn [n]bool
		var in [n]Input
		var uid [n]uint64
		want := map[int64]string{}
		snap := func() string {
			var b strings.Builder
			for cid := 0; cid < n; cid++ {
				if alive[cid] {
					fmt.Fprintf(&b, "p%d=%d,%d ", cid, pos[cid][0], pos[cid][1])
				}
				if hasIn[cid] {
					fmt.Fprintf(&b, "i%d=%v ", cid, in[cid])
				}
			}
			return b.String()
		}
		// Records at tick 0 (before the first tick) sometimes.
		if rng.IntN(2) == 0 {
			rec.PlayerReady(0)
		}
		tick := int64(0)
		want[0] = snap()
		for step := 0; step < 400; step++ {
			gap := int64(1)
			if rng.IntN(5) == 0 {
				gap += int64(rng.IntN(30))
			}
			for k := int64(1); k < gap; k++ {
				want[tick+k] = want[tick]
			}
			tick += gap
			rec.BeginTick(tick)
			if rng.IntN(6) == 0 {
				// A non-player record before the players.
				rec.PlayerReady(int32(rng.IntN(n)))
			}
			for cid := 0; cid < n; cid++ {
				switch r := rng.IntN(10); {
				case r == 0:
					alive[cid] = false
					rec.DeadPlayer(int32(cid))
				case r < 4 && alive[cid]: // unchanged
					rec.Player(int32(cid), pos[cid][0], pos[cid][1])
				case r < 9 || alive[cid]:
					alive[cid] = true
					pos[cid][0] += int32(rng.IntN(201) - 100)
					pos[cid][1] += int32(rng.IntN(201) - 100)
					rec.Player(int32(cid), pos[cid][0], pos[cid][1])
				}
			}
			for k := rng.IntN(4); k > 0; k-- {
				cid := rng.IntN(n)
				if rng.IntN(10) == 0 {
					uid[cid]++
				}
				in[cid][rng.IntN(InputSize)] += int32(rng.IntN(100) - 50)
				hasIn[cid] = true
				rec.Input(int32(cid), uid[cid], in[cid])
			}
			if rng.IntN(8) == 0 {
				rec.ConsoleCommand(int32(rng.IntN(n)), 128, "team", "1")
			}
			want[tick] = snap()
		}
		if err := rec.Finish(); err != nil {
			t.Fatal(err)
		}
		got := tickStates(t, buf.Bytes(), 0, tick)
		for tk := int64(0); tk <= tick; tk++ {
			if g := stateAt(got, tk); g != want[tk] {
				t.Fatalf("seed %d tick %d:\n got %s\nwant %s", seed, tk, g, want[tk])
			}
		}
	}
}

func TestRecorderErrors(t *testing.T) {
	rec, _ := NewRecorder(&bytes.Buffer{}, []byte("{}"))
	rec.BeginTick(1)
	rec.Player(3, 0, 0)
	if err := rec.Player(2, 0, 0); err == nil || !strings.Contains(err.Error(), "out of order") {
		t.Errorf("out-of-order player: %v", err)
	}
	rec, _ = NewRecorder(&bytes.Buffer{}, []byte("{}"))
	rec.BeginTick(5)
	if err := rec.BeginTick(5); err == nil {
		t.Errorf("repeated tick accepted")
	}
	rec, _ = NewRecorder(&bytes.Buffer{}, []byte("{}"))
	if err := rec.Player(MaxClients, 0, 0); err == nil {
		t.Errorf("cid %d accepted", MaxClients)
	}
	var b bytes.Buffer
	rec, _ = NewRecorder(&b, []byte("{}"))
	rec.BeginTick(0)
	rec.PlayerReady(1)
	rec.Finish()
	if !bytes.HasPrefix(b.Bytes()[len(Magic)+3:], []byte{0x4a}) {
		t.Errorf("BeginTick(0) wrote a TICK_SKIP: % x", b.Bytes()[len(Magic)+3:])
	}
}
