package replay_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
)

// TestParseFrom: a range may not start at an offset past the recording's
// end (it was taken as the last tick, and a clip "from 1m" of a shorter
// game was that tick alone); ticks and offsets inside it read as
// ParseTick reads them, and a range's end past the recording stays its
// last tick.
func TestParseFrom(t *testing.T) {
	dir := t.TempDir()
	game := filepath.Join(dir, "game.teehistorian")
	if err := os.WriteFile(game, teehistoriangen.Must(t, teehistoriangen.Options{Duration: 30 * time.Second, Players: 2, Seed: 1}), 0o644); err != nil {
		t.Fatal(err)
	}
	x, err := replay.Open(filepath.Join(dir, "archive"), replay.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if err := x.Ingest(context.Background(), []string{game}, replay.IngestOptions{}, nil); err != nil {
		t.Fatal(err)
	}
	res, err := x.Search(context.Background(), "", 0, 1)
	if err != nil || len(res.Hits) != 1 {
		t.Fatalf("search: %v %v", res, err)
	}
	rec, err := x.Recording(res.Hits[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	last := rec.LastTick()
	for _, c := range []struct {
		v       string
		want    int64
		refused bool
	}{
		{"0", 0, false},
		{"10s", 500, false},
		{"29s", 1450, false},
		{"1m", 0, true},
		{"31s", 0, true},
		{"999999", 999999, false}, // a tick number is the caller's to check
		{"-1", 0, true},
		{"soon", 0, true},
	} {
		got, err := rec.ParseFrom(c.v)
		if c.refused != (err != nil) || err != nil && !errors.Is(err, replay.ErrBadTick) || !c.refused && got != c.want {
			t.Errorf("ParseFrom(%q) = %d, %v; want %d, refused %v", c.v, got, err, c.want, c.refused)
		}
	}
	if got, err := rec.ParseTick("1m"); err != nil || got != last {
		t.Errorf("ParseTick(1m) = %d, %v; want the last tick %d", got, err, last)
	}
}
