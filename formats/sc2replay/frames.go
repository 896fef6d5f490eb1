// This file decodes the event streams of an archived replay for Frames.

package sc2replay

import (
	"context"
	"fmt"
	"math"

	"github.com/icza/s2prot"
	"github.com/replayarchive/replay/formats"
)

// openInRange opens the replay of src, its one chunk, when r reaches into
// it; nil (and no read) when it does not. Events may sit on the final
// loop itself, so the range end is inclusive.
func openInRange(ctx context.Context, src formats.Source, r formats.Range) (*replay, error) {
	chunks := src.Chunks()
	if r.Empty() || len(chunks) == 0 || r.From > chunks[len(chunks)-1].EndTick() {
		return nil, nil
	}
	native, _, err := src.ReadChunk(ctx, 0)
	if err != nil {
		return nil, fmt.Errorf("sc2replay: reading chunk 0: %w", err)
	}
	return openReplay(native)
}

// Frames implements formats.Codec. It decodes replay.game.events,
// replay.message.events and replay.tracker.events from the one chunk and
// emits every event whose loop is in r, in loop order (game, then
// message, then tracker events within a loop). Type is the s2prot event name
// ("Cmd", "Chat", "UnitBorn", ...), Data the event's decoded fields (a
// map that also holds "loop", "id", "evtTypeName" and, for game and message
// events, "userid"). When a stream is corrupt the events decoded before the
// damage are emitted and the error is returned at the end.
func (c *Codec) Frames(ctx context.Context, src formats.Source, r formats.Range, emit func(formats.Frame) error) error {
	rep, err := openInRange(ctx, src, r)
	if err != nil || rep == nil {
		return err
	}
	if rep.proto == nil {
		return fmt.Errorf("sc2replay: no protocol table decodes base build %d: events cannot be decoded", rep.baseBuild)
	}
	// Merge the three loop-ordered streams, decoding one event of each at
	// a time, so memory does not grow with the replay.
	var streams [3]*events
	var heads [3]s2prot.Event
	var live [3]bool
	for i, name := range [3]string{fileGameEvents, fileMessageEvents, fileTrackerEvents} {
		if streams[i], err = rep.events(name); err != nil {
			return err
		}
		heads[i], live[i] = streams[i].next()
	}
	for n := 0; ; n++ {
		best, bestLoop := -1, int64(math.MaxInt64)
		for i := range streams {
			if live[i] {
				if l := heads[i].Loop(); l < bestLoop {
					best, bestLoop = i, l
				}
			}
		}
		if best < 0 || r.Past(bestLoop) {
			break
		}
		e := heads[best]
		heads[best], live[best] = streams[best].next()
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if !r.Contains(bestLoop) {
			continue
		}
		if err := emit(formats.Frame{Tick: bestLoop, Type: e.Name, Data: e.Struct}); err != nil {
			return err
		}
	}
	for _, s := range streams {
		if err := s.Err(); err != nil {
			return err
		}
	}
	return nil
}
