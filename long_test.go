package replay_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/formatstest"
	"github.com/replayarchive/replay/formats/teehistorian"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
	"github.com/replayarchive/replay/query"
)

// TestLongFileEveryCommandSearchable: in a 16-hour server file
// every console command is found by cmd:, however many events the file
// holds (the archive keeps them all: ingest's TestLongFileKeepsEveryEvent
// goes past the old 100,000-event bound; this one stays small enough to
// index in a test). The codec's in-memory bound is set below the file's
// event count, to show that the archive path is not bounded by it. The
// commands' text (80 KB) is more than a recording document carries
// (query's maxRecText): the last command is found through its event.
func TestLongFileEveryCommandSearchable(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "long.teehistorian")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	opt := teehistoriangen.Options{Duration: 16 * time.Hour, Players: 2, Seed: 9, CommandsPerHour: 500, Idle: 0.95}
	if err := teehistoriangen.Generate(f, opt); err != nil {
		t.Fatal(err)
	}
	f.Close()
	native, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	events := formatstest.Split(t, &teehistorian.Codec{MaxEvents: 1 << 30}, native).Metadata.Events
	want := map[string]int{} // "rank N" commands by text
	ranks := 0
	for _, e := range events {
		if e.Kind == formats.EventCommand && (e.Text == "rank" || strings.HasPrefix(e.Text, "rank ")) {
			want[e.Text]++
			ranks++
		}
	}
	if len(want) < 7800 {
		t.Fatalf("only %d distinct rank commands generated", len(want))
	}
	opts := replay.Options{Create: true, Archive: archive.Options{NoSync: true}, Index: query.Options{MaxEvents: ranks + 1}}
	x, err := replay.Open(filepath.Join(dir, "a"), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if err := x.Ingest(context.Background(), []string{path}, replay.IngestOptions{}, nil); err != nil {
		t.Fatal(err)
	}
	res, err := x.Search(context.Background(), "cmd:rank", 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Hits) != 1 {
		t.Fatalf("cmd:rank: %d hits, want 1", len(res.Hits))
	}
	h := res.Hits[0]
	if h.EventTotal != ranks || len(h.Events) != ranks {
		t.Errorf("cmd:rank: %d matching events (%d listed), the file has %d", h.EventTotal, len(h.Events), ranks)
	}
	for _, e := range h.Events {
		want[e.Text]--
	}
	for text, n := range want {
		if n != 0 {
			t.Errorf("%q: %d more in the file than found", text, n)
		}
	}
	// One command from the end of the file, by itself.
	last := ""
	for i := len(events) - 1; last == "" && i >= 0; i-- {
		if strings.HasPrefix(events[i].Text, "rank ") {
			last = events[i].Text
		}
	}
	if r, err := x.Search(context.Background(), `cmd:"`+last+`"`, 0, 10); err != nil || len(r.Hits) != 1 || r.Hits[0].EventTotal != 1 {
		t.Errorf("cmd:%q, the last generated command: %+v, %v", last, r, err)
	}
	if r, err := x.Search(context.Background(), `cmd:"rank 99999999"`, 0, 10); err != nil || len(r.Hits) != 0 || r.Total != 0 {
		t.Errorf("cmd:\"rank 99999999\", never typed: %+v, %v", r, err)
	}
	if r, err := x.Search(context.Background(), `-cmd:"`+last+`"`, 0, 10); err != nil || len(r.Hits) != 0 {
		t.Errorf("-cmd:%q: %+v, %v", last, r, err)
	}
}
