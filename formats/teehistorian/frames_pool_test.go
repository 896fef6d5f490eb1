package teehistorian_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/formatstest"
	"github.com/replayarchive/replay/formats/teehistorian"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
)

// lockedSource serialises the reads of a split recording, which counts
// them without a lock.
type lockedSource struct {
	formats.Source
	mu *sync.Mutex
}

func (s lockedSource) ReadChunk(ctx context.Context, i int) ([]byte, []byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.Source.ReadChunk(ctx, i)
}

// intoSource is a split recording that decodes chunks into the caller's
// buffer, as the archive's recordings do (formats.ChunkReaderInto).
type intoSource struct{ lockedSource }

func (s intoSource) ReadChunkInto(ctx context.Context, i int, dst []byte) ([]byte, []byte, error) {
	native, resume, err := s.ReadChunk(ctx, i)
	return append(dst[:0], native...), resume, err
}

// TestFramesPooledWalkers: Frames with pooled walkers (their readers,
// state, header and chunk buffer reused from call to call) gives what a
// fresh walker gives, for random ranges of two recordings with different
// headers and players, from several goroutines at once.
func TestFramesPooledWalkers(t *testing.T) {
	c := &teehistorian.Codec{ChunkSize: 8 << 10} // small chunks: ranges cross them
	var srcs []formats.Source
	for i, opt := range []teehistoriangen.Options{
		{Duration: 90 * time.Second, Players: 12, Seed: 4, Messages: true},
		{Duration: 60 * time.Second, Players: 5, Seed: 5, MapName: "Kobra 4"},
	} {
		rec := formatstest.Split(t, c, teehistoriangen.Must(t, opt))
		if len(rec.ChunkIndex) < 3 {
			t.Fatalf("recording %d: %d chunks, want several", i, len(rec.ChunkIndex))
		}
		locked := lockedSource{rec.Source(), new(sync.Mutex)}
		srcs = append(srcs, intoSource{locked}, locked)
	}
	collect := func(src formats.Source, r formats.Range, pooled bool) string {
		var out []byte
		emit := func(f formats.Frame) error {
			b, err := json.Marshal(f)
			out = append(append(out, b...), '\n')
			return err
		}
		var err error
		if pooled {
			err = c.Frames(context.Background(), src, r, emit)
		} else {
			err = teehistorian.FramesFresh(context.Background(), src, r, emit)
		}
		if err != nil {
			return "error: " + err.Error()
		}
		return string(out)
	}
	var wg sync.WaitGroup
	var nonEmpty atomic.Int64
	for g := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			for range 60 {
				src := srcs[rng.IntN(len(srcs))]
				last := src.Chunks()[len(src.Chunks())-1].EndTick()
				from := rng.Int64N(last)
				r := formats.Ticks(from, from+rng.Int64N(200))
				want, got := collect(src, r, false), collect(src, r, true)
				if got != want {
					t.Errorf("%v of %s: pooled Frames gave %d bytes, a fresh walker %d", r, fmt.Sprint(src.Meta().Map), len(got), len(want))
					return
				}
				if want != "" {
					nonEmpty.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if n := nonEmpty.Load(); n < 120 {
		t.Errorf("only %d of 240 ranges held frames: the comparison saw too little", n)
	}
}
