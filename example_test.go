package replay_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
)

// A Go program embeds the archive: open (or create) it, ingest a file,
// search it, flag what it found and clip around the hit.
func Example() {
	dir, err := os.MkdirTemp("", "replay-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	// A recording to ingest, written by the module's teehistorian generator
	// (internal; a program of your own ingests its servers' files).
	game := filepath.Join(dir, "game.teehistorian")
	f, err := os.Create(game)
	if err != nil {
		log.Fatal(err)
	}
	if err := teehistoriangen.Generate(f, teehistoriangen.Options{Players: 4, Seed: 7}); err != nil {
		log.Fatal(err)
	}
	f.Close()

	ctx := context.Background()
	x, err := replay.Open(filepath.Join(dir, "archive"), replay.Options{Create: true})
	if err != nil {
		log.Fatal(err)
	}
	defer x.Close()
	bot := replay.Actor{Name: "ingest-bot", Role: replay.RoleAdmin}
	if err := x.Ingest(ctx, []string{game}, replay.IngestOptions{By: bot}, nil); err != nil {
		log.Fatal(err)
	}
	res, err := x.Search(ctx, "format:teehistorian map:\"kobra 3 solo\"", 0, 10)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("found", res.Total)
	id := res.Hits[0].ID
	if _, err := x.Flag(ctx, bot, id, "review", "example"); err != nil {
		log.Fatal(err)
	}
	rec, err := x.Recording(id)
	if err != nil {
		log.Fatal(err)
	}
	out, err := os.Create(filepath.Join(dir, "clip.teehistorian"))
	if err != nil {
		log.Fatal(err)
	}
	defer out.Close()
	from, to, err := rec.Clip(ctx, 100, 600, out, true)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("clip", from, to)
	hist, err := x.Audit(id, 0, 10)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(hist[0].Action, hist[0].Who, hist[1].Action)
	// Output:
	// found 1
	// clip 100 600
	// flag ingest-bot ingest
}
