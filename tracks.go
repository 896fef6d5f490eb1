package replay

import (
	"context"
	"errors"
	"fmt"

	"github.com/replayarchive/replay/formats"
)

// Tracks calls emit for the positions in [from, to] (to < 0: to the end)
// of rec, decoded by its codec's formats.Tracker, which may name what the
// range does not from the recording's events (x serves them). A format
// without positions emits nothing. The range is checked as Frames checks
// it.
func (x *Archive) Tracks(ctx context.Context, rec *Recording, from, to int64, emit func(formats.Point) error) error {
	span, err := rec.checkRange(from, to)
	if err != nil {
		return err
	}
	t, ok := rec.codec.(formats.Tracker)
	if !ok {
		return nil
	}
	return t.Track(ctx, eventSource{rec, x}, span, emit)
}

// Field returns the ground rec's positions lie on (formats.Fielder: an
// SC2 map's size, the Echo Arena's walls and goals), or nil when its
// codec does not know one.
func (x *Archive) Field(ctx context.Context, rec *Recording) (*formats.Field, error) {
	f, ok := rec.codec.(formats.Fielder)
	if !ok {
		return nil, nil
	}
	field, err := f.Field(ctx, eventSource{rec, x})
	if err != nil {
		return nil, fmt.Errorf("field of %s: %w", rec.Manifest().ID, err)
	}
	return field, nil
}

// eventSource is a recording that is also a formats.EventSource.
type eventSource struct {
	*Recording
	x *Archive
}

// EachEvent implements formats.EventSource.
func (s eventSource) EachEvent(fn func(e *formats.Event) error) error {
	return s.x.a.EachEvent(s.Manifest().ID, func(_ int, e *formats.Event) error { return fn(e) })
}

// firstPositionStep is how many ticks FirstPosition asks its codec for at
// a time: a range never holds many chunks' points in memory.
const firstPositionStep = 5000

// errPlaced stops FirstPosition's scan at its first point.
var errPlaced = errors.New("placed")

// FirstPosition returns the first tick at which rec's codec places
// anything (a player, a unit), so that a page opened on a recording
// starts where there is something to see; ok is false when nothing is
// ever placed, or the format records no positions. It reads the
// recording from its start until then: its cost is that of the positions
// before the first.
func (x *Archive) FirstPosition(ctx context.Context, rec *Recording) (tick int64, ok bool, err error) {
	t, isTracker := rec.codec.(formats.Tracker)
	if !isTracker {
		return 0, false, nil
	}
	last := rec.LastTick()
	for from := int64(0); from <= last; from += firstPositionStep {
		found := int64(-1)
		err := t.Track(ctx, eventSource{rec, x}, formats.Ticks(from, min(from+firstPositionStep-1, last)), func(p formats.Point) error {
			if p.Gap {
				return nil
			}
			found = p.Tick
			return errPlaced
		})
		if found >= 0 {
			return found, true, nil
		}
		if err != nil {
			return 0, false, err
		}
	}
	return 0, false, nil
}
