// This file decodes the event streams of an archived replay for Frames.

package sc2replay

import (
	"context"
	"fmt"
	"math"

	"github.com/icza/s2prot"
	"github.com/replayarchive/replay/formats"
)

// Frames implements formats.Codec. It decodes replay.game.events,
// replay.message.events and replay.tracker.events from the one chunk and
// emits every event with from <= loop <= to in loop order (game, then
// message, then tracker events within a loop). Type is the s2prot event name
// ("Cmd", "Chat", "UnitBorn", ...), Data the event's decoded fields (a
// map that also holds "loop", "id", "evtTypeName" and, for game and message
// events, "userid"). When a stream is corrupt the events decoded before the
// damage are emitted and the error is returned at the end.
func (c *Codec) Frames(ctx context.Context, src formats.Source, from, to int64, emit func(formats.Frame) error) error {
	if to < 0 {
		to = math.MaxInt64
	}
	from = max(from, 0)
	chunks := src.Chunks()
	// Events may sit on the final loop itself, so the range end is inclusive.
	if from > to || len(chunks) == 0 || from > chunks[len(chunks)-1].EndTick() {
		return nil
	}
	native, _, err := src.ReadChunk(ctx, 0)
	if err != nil {
		return fmt.Errorf("sc2replay: reading chunk 0: %w", err)
	}
	rep, err := openReplay(native)
	if err != nil {
		return err
	}
	if rep.proto == nil {
		return fmt.Errorf("sc2replay: no s2protocol table for base build %d: events cannot be decoded", rep.baseBuild)
	}
	var streams [3][]s2prot.Event
	var loops [3][]int64 // each event's loop, looked up once
	var firstErr error
	for i, name := range [3]string{fileGameEvents, fileMessageEvents, fileTrackerEvents} {
		if err := ctx.Err(); err != nil {
			return err
		}
		evs, err := rep.events(name)
		if err != nil && firstErr == nil {
			firstErr = err
		}
		streams[i] = evs
		loops[i] = make([]int64, len(evs))
		for j := range evs {
			loops[i][j] = evs[j].Loop()
		}
	}
	// Merge the three loop-ordered streams.
	var pos [3]int
	for n := 0; ; n++ {
		best, bestLoop := -1, int64(math.MaxInt64)
		for i := range streams {
			if pos[i] < len(streams[i]) {
				if l := loops[i][pos[i]]; l < bestLoop {
					best, bestLoop = i, l
				}
			}
		}
		if best < 0 || bestLoop > to {
			break
		}
		e := &streams[best][pos[best]]
		pos[best]++
		if bestLoop < from {
			continue
		}
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if err := emit(formats.Frame{Tick: bestLoop, Type: e.Name, Data: e.Struct}); err != nil {
			return err
		}
	}
	return firstErr
}
