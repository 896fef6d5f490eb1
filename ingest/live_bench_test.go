package ingest

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/formats/all"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
	"github.com/replayarchive/replay/internal/memtest"
	"github.com/replayarchive/replay/query"
)

// BenchmarkLiveGrowSteps grows a live recording from the teehistorian file
// named by LIVE_GROW_FILE (default: the 16-hour file below, generated) in
// LIVE_GROW_STEPS equal steps (default 40),
// each grow followed by the search index update, as serve --watch does,
// and logs each step's archived events, and the time and bytes allocated
// (memtest.Allocated, which counts the index's background merges too) of
// the grow and of the index update. Run once:
//
//	go test ./ingest -run '^$' -bench LiveGrowSteps -benchtime=1x -v
//
// The default file is what
// `go run ./internal/cmd/thgen -dur 16h -players 2 -cmds 8000 -idle 0.95` writes.
//
// docs/live.md has the figures.
func BenchmarkLiveGrowSteps(b *testing.B) {
	var file []byte
	if path := os.Getenv("LIVE_GROW_FILE"); path != "" {
		var err error
		if file, err = os.ReadFile(path); err != nil {
			b.Fatal(err)
		}
	} else {
		var buf bytes.Buffer
		opts := teehistoriangen.Options{Duration: 16 * time.Hour, Players: 2, CommandsPerHour: 8000, Idle: 0.95, Seed: 1}
		if err := teehistoriangen.Generate(&buf, opts); err != nil {
			b.Fatal(err)
		}
		file = buf.Bytes()
	}
	steps := 40
	if s := os.Getenv("LIVE_GROW_STEPS"); s != "" {
		if n, err := strconv.Atoi(s); err != nil || n < 1 {
			b.Fatalf("LIVE_GROW_STEPS=%q", s)
		} else {
			steps = n
		}
	}
	ctx := context.Background()
	for range b.N {
		dir := b.TempDir()
		a, err := archive.Open(filepath.Join(dir, "archive"), archive.Options{NoSync: true})
		if err != nil {
			b.Fatal(err)
		}
		ix, err := query.Open(filepath.Join(dir, "index"))
		if err != nil {
			b.Fatal(err)
		}
		p := &Pipeline{Archive: a, Codecs: all.Codecs()}
		grown := filepath.Join(dir, "game.teehistorian")
		for i := 1; i <= steps; i++ {
			if err := os.WriteFile(grown, file[:len(file)*i/steps], 0o644); err != nil {
				b.Fatal(err)
			}
			var g *Grown
			var d0, d1 time.Duration
			grew := memtest.Allocated(func() {
				t0 := time.Now()
				g, err = p.Grow(ctx, grown, false)
				d0 = time.Since(t0)
			})
			if err != nil {
				b.Fatal(err)
			}
			indexed := memtest.Allocated(func() {
				t1 := time.Now()
				_, err = query.Sync(ctx, ix, a)
				d1 = time.Since(t1)
			})
			if err != nil {
				b.Fatal(err)
			}
			events := 0
			if g.Manifest != nil {
				events = g.Manifest.EventCount
			}
			mib := func(n uint64) float64 { return float64(n) / (1 << 20) }
			b.Logf("step %2d: %-6s %7d events; grow %5.2f s %6.1f MiB; index %5.2f s %6.1f MiB",
				i, g.Action, events, d0.Seconds(), mib(grew), d1.Seconds(), mib(indexed))
		}
		ix.Close()
		a.Close()
	}
}
