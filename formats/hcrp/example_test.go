// Examples: embedding the recorder in a server loop, and a ghost race
// between two archived runs.

package hcrp_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/uuid"
	"github.com/replayarchive/replay/formats/formatstest"
	"github.com/replayarchive/replay/formats/hcrp"
	"github.com/replayarchive/replay/internal/gen/hcrpgen"
)

// A server records into a replay directory: one StartTick per game tick,
// the events of that tick, and a snapshot callback for every new chunk.
func ExampleCreate() {
	root, err := os.MkdirTemp("", "replays")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(root)

	player := hcrp.Pos{X: 0.5, Y: 64, Z: 0.5}
	opts := hcrp.Options{
		WorldID: uuid.MustParse("6f1c4a8e-2b7d-4c1e-9a5f-3d8b0e7c1a24"),
		Meta:    &hcrp.Meta{Map: "spire", Players: []hcrp.MetaPlayer{{UUID: "0d7e…", Name: "Alice", Entity: 0}}},
		Snapshot: func(r *hcrp.Recorder, tick int64) error {
			return r.Add(&hcrp.Event{Type: hcrp.SpawnEntity, Entity: 0, EntityType: 149, Pos: player})
		},
	}
	id := uuid.MustParse("2f0b8f55-2a52-4d6e-8d0c-6c1c2d3e4f50")
	rec, err := hcrp.Create(root, id, opts)
	if err != nil {
		panic(err)
	}
	move := hcrp.Event{Type: hcrp.DeltaMove, Entity: 0, Pos: hcrp.Pos{X: 0.25}}
	for range 250 {
		if err := rec.StartTick(); err != nil {
			panic(err)
		}
		if err := rec.Add(&move); err != nil {
			panic(err)
		}
		player.X += 0.25
	}
	if err := rec.Close(); err != nil {
		panic(err)
	}

	dir := filepath.Join(root, id.String())
	r, err := hcrp.OpenDir(dir)
	if err != nil {
		panic(err)
	}
	defer r.Close()
	st, err := r.Seek(context.Background(), 249)
	if err != nil {
		panic(err)
	}
	fmt.Println(hcrp.IsSegmentSet(dir), r.Ticks(), len(r.Index), st.Entities[0].Pos.X)
	// Output: true 250 3 63
}

// Two runs of the same map, archived, raced against each other.
func ExampleNewGhost() {
	fast, _ := hcrpgen.Generate(hcrpgen.Config{Seed: 1, Ticks: 600, Pace: 1.2}, nil)
	slow, _ := hcrpgen.Generate(hcrpgen.Config{Seed: 2, Ticks: 700}, nil)
	a, err := formatstest.TrySplit(hcrp.Codec{}, fast) // the archive's stored pieces
	if err != nil {
		panic(err)
	}
	b, err := formatstest.TrySplit(hcrp.Codec{}, slow)
	if err != nil {
		panic(err)
	}
	g, err := hcrp.NewGhost(context.Background(), a.Source(), b.Source())
	if err != nil {
		panic(err)
	}
	defer g.Close()
	sum, err := g.Run()
	if err != nil {
		panic(err)
	}
	fmt.Print(sum)
	// Output:
	// ticks 700 (both runs 600)
	// gap: mean 14.64 blocks, max 27.62 at tick 599 (29.95s), final 27.62
	// split cp-1         a 0:08.150  b 0:10.000  -1.850s
	// split cp-2         a 0:16.300  b 0:20.050  -3.750s
	// split cp-3         a 0:24.450  b 0:30.100  -5.650s
	// finish a 0:30.000  b 0:35.000  -5.000s
}
