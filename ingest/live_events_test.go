package ingest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/all"
	"github.com/replayarchive/replay/formats/formatstest"
	"github.com/replayarchive/replay/formats/teehistorian"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
	"github.com/replayarchive/replay/internal/memtest"
	"github.com/replayarchive/replay/query"
)

// TestLiveEveryEventSearchable checks that "every event is
// searchable" on the live path: a live recording grown in many steps
// (cuts inside records) keeps every event, far past the codec's MaxEvents
// (the bound on events Split holds in memory, set to 40 here in place of
// the 100,000 of DefaultMaxEvents, which the live path used to cap at),
// and every console command is found by search, while it grows and once
// sealed.
func TestLiveEveryEventSearchable(t *testing.T) {
	ctx := context.Background()
	const knob = 40
	codecs := all.Codecs()
	for i, c := range codecs {
		if c.Name() == teehistorian.Name {
			codecs[i] = &teehistorian.Codec{ChunkSize: 16 << 10, MaxEvents: knob}
		}
	}
	a := newArchive(t)
	p := &Pipeline{Archive: a, Codecs: codecs}
	ix, err := query.Open(filepath.Join(t.TempDir(), "index"))
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()

	var game bytes.Buffer
	// A command every 10 ticks (0.2 s) of a 3-minute game: about 900.
	if err := teehistoriangen.Generate(&game, teehistoriangen.Options{Duration: 3 * time.Minute, Players: 4, Seed: 21, CommandsPerHour: 18000}); err != nil {
		t.Fatal(err)
	}
	file := game.Bytes()
	// What the file holds, from a whole-file split that keeps every event.
	md, err := (&teehistorian.Codec{MaxEvents: 1 << 30}).Split(ctx, bytes.NewReader(file), formatstest.Discard{})
	if err != nil {
		t.Fatal(err)
	}
	var ranks []formats.Event
	for _, e := range md.Events {
		if f := strings.Fields(e.Text); e.Kind == formats.EventCommand && len(f) > 0 && f[0] == "rank" {
			ranks = append(ranks, e)
		}
	}
	if len(md.Events) < 10*knob || len(ranks) < 10*knob {
		t.Fatalf("the generated game has %d events, %d rank commands: want far more than %d", len(md.Events), len(ranks), knob)
	}

	// found checks that every rank command up to tick upTo is found, and
	// each one of a sample by its own text.
	found := func(upTo int64, when string) {
		t.Helper()
		if _, err := query.Sync(ctx, ix, a); err != nil {
			t.Fatal(err)
		}
		want := 0
		for _, e := range ranks {
			if e.Tick <= upTo {
				want++
			}
		}
		res, err := ix.Search(ctx, "cmd:rank", 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Hits) != 1 || res.Hits[0].EventTotal < want || upTo == ranks[len(ranks)-1].Tick && res.Hits[0].EventTotal != want {
			t.Fatalf("%s: cmd:rank finds %d recordings, %v events; want 1 recording, at least %d events", when, len(res.Hits), eventTotals(res), want)
		}
		for i := 0; i < want; i = min(i+want/7+1, max(i+1, want-1)) {
			e := ranks[i]
			if e.Text == "rank" {
				continue // a player's own, not one of the numbered ones
			}
			res, err := ix.Search(ctx, fmt.Sprintf("cmd:%q", e.Text), 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Hits) != 1 || res.Hits[0].EventTotal != 1 || res.Hits[0].Events[0].Tick != e.Tick {
				t.Fatalf("%s: %q (tick %d) is not found once: %d hits, %v events", when, e.Text, e.Tick, len(res.Hits), eventTotals(res))
			}
		}
	}

	path := filepath.Join(t.TempDir(), "game.teehistorian")
	const steps = 37
	var id uuid.UUID
	for i := 1; i <= steps; i++ {
		n := len(file) * i / steps
		g := growTo(t, p, path, file[:n], false)
		switch {
		case i == steps && g.Action != GrowSealed:
			t.Fatalf("the whole file: %s %q", g.Action, g.Why)
		case g.Action != GrowStarted && g.Action != GrowGrew && g.Action != GrowWaiting && g.Action != GrowSealed:
			t.Fatalf("grow %d to %d bytes: %s %q", i, n, g.Action, g.Why)
		case g.Action == GrowStarted:
			id = g.ID
		}
		if i == steps/2 {
			// Every command in the chunks before the open tail (whose
			// last records may still be arriving).
			m, err := a.Manifest(id)
			if err != nil {
				t.Fatal(err)
			}
			found(m.Chunks[len(m.Chunks)-1].StartTick-1, "half-way")
		}
	}
	m, err := a.Manifest(id)
	if err != nil {
		t.Fatal(err)
	}
	if m.Live || m.EventCount != len(md.Events) {
		t.Errorf("sealed: live %v, %d events archived, the file has %d", m.Live, m.EventCount, len(md.Events))
	}
	for _, w := range m.Meta.Warnings {
		if strings.Contains(w, "left out") {
			t.Errorf("warning %q", w)
		}
	}
	// The events read back (from the pieces the grows appended) are the
	// whole file's.
	if evs, err := a.Events(id); err != nil || !reflect.DeepEqual(evs, md.Events) {
		t.Errorf("%d events read back (%v), the file has %d", len(evs), err, len(md.Events))
	}
	found(ranks[len(ranks)-1].Tick, "sealed")
}

// eventTotals lists the EventTotal of each hit.
func eventTotals(res *query.Results) []int {
	var n []int
	for _, h := range res.Hits {
		n = append(n, h.EventTotal)
	}
	return n
}

// TestLiveGrowCostBounded checks that a grow of a live recording costs in
// proportion to what it adds, not to what is archived: the
// same small grow (a few commands) of a recording holding 100,000 events
// allocates about what it does when the recording holds a thousand, in
// the archive (Grow) and in the search index (Sync), and the index's part
// stays small: the recording document of a live recording carries no
// event text (query/live.go), which took 16–22 MiB per grow to analyse
// again once a class held its 64 KiB.
func TestLiveGrowCostBounded(t *testing.T) {
	ctx := context.Background()
	var game bytes.Buffer
	// 2 mostly idle players and 108,000 commands in 36 minutes.
	if err := teehistoriangen.Generate(&game, teehistoriangen.Options{Duration: 36 * time.Minute, Players: 2, Seed: 3, CommandsPerHour: 180_000, Idle: 0.95}); err != nil {
		t.Fatal(err)
	}
	file := game.Bytes()
	type cost struct {
		events     int
		grow, sync uint64
	}
	// measure grows the recording to file[:at], then by step bytes, and
	// returns what the second grow allocated.
	measure := func(at, step int) cost {
		a := newArchive(t)
		p := &Pipeline{Archive: a, Codecs: all.Codecs()}
		ix, err := query.Open(filepath.Join(t.TempDir(), "index"))
		if err != nil {
			t.Fatal(err)
		}
		defer ix.Close()
		path := filepath.Join(t.TempDir(), "game.teehistorian")
		g := growTo(t, p, path, file[:at], false)
		if g.Action != GrowStarted {
			t.Fatalf("first grow: %s %q", g.Action, g.Why)
		}
		if _, err := query.Sync(ctx, ix, a); err != nil {
			t.Fatal(err)
		}
		// One index segment, as after a rebuild: the merges of the many
		// that indexing the first grow left run in the background and
		// would be counted with the second grow.
		if err := ix.Compact(ctx); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, file[:at+step], 0o644); err != nil {
			t.Fatal(err)
		}
		grew := memtest.Allocated(func() { g, err = p.Grow(ctx, path, false) })
		if err != nil || g.Action != GrowGrew {
			t.Fatalf("second grow: %v %s %q", err, g.Action, g.Why)
		}
		synced := memtest.Allocated(func() { _, err = query.Sync(ctx, ix, a) })
		if err != nil {
			t.Fatal(err)
		}
		n := g.Manifest.EventCount
		// The new commands are found.
		res, err := ix.Search(ctx, "cmd:rank", 0)
		if err != nil || len(res.Hits) != 1 || res.Hits[0].EventTotal < n*9/10 {
			t.Fatalf("after the grow: %v, %v events of %d found", err, eventTotals(res), n)
		}
		return cost{n, grew, synced}
	}
	// Past 10,000 events the recording document's texts are at their
	// bound (maxRecText), as they stay.
	small := measure(len(file)/10, 4<<10)
	large := measure(len(file)-8<<10, 4<<10)
	t.Logf("grow of 4 KiB at %d events: %d KiB, index %d KiB; at %d events: %d KiB, index %d KiB",
		small.events, small.grow>>10, small.sync>>10, large.events, large.grow>>10, large.sync>>10)
	if large.events < 100_000 || small.events > 15_000 {
		t.Fatalf("%d and %d events archived: want one recording with about 10,000, one with 100,000", small.events, large.events)
	}
	if large.grow > 2*small.grow+1<<20 || large.sync > 2*small.sync+4<<20 || max(small.sync, large.sync) > 6<<20 {
		t.Errorf("a 4 KiB grow allocates %d KiB and %d KiB in the index at %d events, %d KiB and %d KiB at %d events",
			large.grow>>10, large.sync>>10, large.events, small.grow>>10, small.sync>>10, small.events)
	}
}
