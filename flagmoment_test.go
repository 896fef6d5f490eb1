package replay_test

import (
	"testing"

	"github.com/replayarchive/replay"
)

// TestFlagMomentInHits: a hit found by flag: points at the start of each
// flag on a moment it names (a "flag" event at that tick, among the
// events that matched), a whole-recording flag adds none, and a prefix
// term finds ranged flags too.
func TestFlagMomentInHits(t *testing.T) {
	ctx := t.Context()
	x, id := openCasesArchive(t)
	mod := replay.Actor{Name: "vera", Role: replay.RoleModerator}
	if _, err := x.FlagAt(ctx, mod, id.String(), "griefing", "spawn", "100", "150"); err != nil {
		t.Fatal(err)
	}
	if _, err := x.Flag(ctx, mod, id.String(), "review", ""); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		q    string
		want []int64 // ticks of flag events
	}{
		{"flag:griefing", []int64{100}},
		{"flag:grief*", []int64{100}},
		{"flag:review", nil},
		{"flag:review -flag:griefing", nil},
	} {
		res, err := x.Search(ctx, c.q, 0, 10)
		if err != nil {
			t.Fatalf("%s: %v", c.q, err)
		}
		var got []int64
		for _, h := range res.Hits {
			for _, e := range h.Events {
				if e.Kind == "flag" {
					got = append(got, e.Tick)
				}
			}
		}
		if len(got) != len(c.want) || len(got) > 0 && got[0] != c.want[0] {
			t.Errorf("%s: flag events at %v, want %v", c.q, got, c.want)
		}
	}
}
