package query

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/formats/all"
	"github.com/replayarchive/replay/ingest"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
)

// TestGrowRewritesOpenBlock grows a live recording in several steps,
// syncing the index after each, with blocks of 5 events so that grows end
// inside blocks (the last, partial block is written again with the new
// events): the index must then hold every event once, and answer as an
// index rebuilt from the catalog does.
func TestGrowRewritesOpenBlock(t *testing.T) {
	dir := t.TempDir()
	a, err := archive.Open(dir, archive.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx := context.Background()
	open := func(name string) *Index {
		ix, err := OpenWith(filepath.Join(dir, name), Options{NoSync: true, MaxEvents: 1000})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ix.Close() })
		ix.blockEvents = 5
		return ix
	}
	ix := open("live")
	game := teehistoriangen.Must(t, teehistoriangen.Options{Duration: 60 * time.Second, Players: 6, Seed: 9, CommandsPerHour: 3600})
	file := game
	path := filepath.Join(t.TempDir(), "game.teehistorian")
	p := &ingest.Pipeline{Archive: a, Codecs: all.Codecs()}
	var id string
	for i := 1; i <= 7; i++ {
		if err := os.WriteFile(path, file[:len(file)*i/7], 0o644); err != nil {
			t.Fatal(err)
		}
		g, err := p.Grow(ctx, path, i == 7)
		if err != nil {
			t.Fatal(err)
		}
		if g.ID != (uuid.UUID{}) {
			id = g.ID.String()
		}
		if _, err := Sync(ctx, ix, a); err != nil {
			t.Fatal(err)
		}
	}
	if id == "" {
		t.Fatal("no recording grew")
	}
	rb := open("rebuilt")
	if _, err := rebuildInto(ctx, rb, a); err != nil {
		t.Fatal(err)
	}
	want, _ := rb.DocCount()
	if n, err := ix.DocCount(); err != nil || n != want || want < 20 {
		t.Errorf("DocCount %d (%v) after grows, %d rebuilt", n, err, want)
	}
	for _, q := range []string{"kind:join", "kind:command", "kind:chat", "kind:drop", "kind:finish", "client"} {
		got, err := ix.Search(ctx, q, 10)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := rb.Search(ctx, q, 10)
		if err != nil {
			t.Fatal(err)
		}
		got.Took, ref.Took = 0, 0
		if !reflect.DeepEqual(got, ref) {
			t.Errorf("%s: after grows %s, rebuilt %s", q, summary(got), summary(ref))
		}
	}
}
