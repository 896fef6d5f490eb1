package vtx

import (
	"context"
	"strconv"

	"github.com/replayarchive/replay/formats"
)

// The VTX codec is a formats.Tracker: entities whose schema has a
// "Position" vector are placed by it.
var _ formats.Tracker = Codec{}

// Track implements formats.Tracker. A point's track is "v" and the
// entity's unique id (its bucket and index when it has none), its label
// the entity's "Name" string, else its id. X and Y are the position's X
// and Z (seen from above), Z its Y.
func (c Codec) Track(ctx context.Context, src formats.Source, r formats.Range, emit func(formats.Point) error) error {
	s, err := c.open(src)
	if err != nil {
		return err
	}
	defer s.dec.Close()
	return s.each(ctx, r, func(tick int64, f *Frame) error {
		for i := range f.Buckets {
			bk := &f.Buckets[i]
			for j := range bk.Entities {
				p := &bk.Entities[j]
				st := s.schema.Struct(p.TypeID)
				k := positionSlot(st, len(p.Vectors))
				if k < 0 {
					continue
				}
				id := strconv.Itoa(i) + "." + strconv.Itoa(j)
				if j < len(bk.UniqueIDs) && bk.UniqueIDs[j] != "" {
					id = bk.UniqueIDs[j]
				}
				label := st.DisplayName(p)
				if label == "" {
					label = id
				}
				v := p.Vectors[k]
				if err := emit(formats.Point{Tick: tick, Track: "v" + id, Label: label, X: v.X, Y: v.Z, Z: v.Y, HasZ: true}); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// positionSlot returns the index among n vectors of the struct's
// "Position" field, or -1.
func positionSlot(st *Struct, n int) int {
	for k := range n {
		if st.SlotName(KindVector, k) == "Position" {
			return k
		}
	}
	return -1
}
