package hcrp

import (
	"context"
	"slices"
	"strconv"

	"github.com/replayarchive/replay/formats"
)

// The HCRP codec is a formats.Tracker: spawns and moves place entities,
// DestroyEntity removes them.
var _ formats.Tracker = Codec{}

// Track implements formats.Tracker. Decoding starts at the nearest
// snapshot chunk, as Frames does; where the range starts after it, every
// entity's position at the range's first tick comes first. A point's
// track is "e" and the entity id; X and Y are the entity's x and z (seen
// from above), Z its height (y). Its label is the recording's player of
// that index (entity 0 is the recorded player), else "entity N".
func (Codec) Track(ctx context.Context, src formats.Source, r formats.Range, emit func(formats.Point) error) error {
	return withReader(src, r, func(rd *Reader, r formats.Range) error {
		players := src.Meta().Players
		point := func(tick int64, id int32, p Pos) formats.Point {
			label := "entity " + strconv.Itoa(int(id))
			if id >= 0 && int(id) < len(players) && players[id].Name != "" {
				label = players[id].Name
			}
			return formats.Point{Tick: tick, Track: "e" + strconv.Itoa(int(id)), Label: label, X: p.X, Y: p.Z, Z: p.Y, HasZ: true}
		}
		st := NewState()
		applied := false
		// where emits every entity the state holds at tick, in id order.
		where := func(tick int64) error {
			ids := make([]int32, 0, len(st.Entities))
			for id := range st.Entities {
				ids = append(ids, id)
			}
			slices.Sort(ids)
			for _, id := range ids {
				if err := emit(point(tick, id, st.Entities[id].Pos)); err != nil {
					return err
				}
			}
			return nil
		}
		start := int64(rd.Index[snapshotBefore(rd.Index, findChunk(rd.Index, r.From))].StartTick)
		err := rd.Events(ctx, formats.Ticks(start, r.To), func(tick int64, e *Event) error {
			if tick < r.From {
				st.Apply(e)
				applied = true
				return nil
			}
			if applied {
				applied = false
				if err := where(r.From); err != nil {
					return err
				}
			}
			st.Apply(e)
			switch e.Type {
			case SpawnEntity, AbsoluteMove, DeltaMove:
				if en := st.Entities[e.Entity]; en != nil {
					return emit(point(tick, e.Entity, en.Pos))
				}
			case DestroyEntity:
				p := point(tick, e.Entity, Pos{})
				p.Gap = true
				return emit(p)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if applied {
			return where(r.From)
		}
		return nil
	})
}
