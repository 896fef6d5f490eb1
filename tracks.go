package replay

import (
	"context"

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

// eventSource is a recording that is also a formats.EventSource.
type eventSource struct {
	*Recording
	x *Archive
}

// EachEvent implements formats.EventSource.
func (s eventSource) EachEvent(fn func(e *formats.Event) error) error {
	return s.x.a.EachEvent(s.Manifest().ID, func(_ int, e *formats.Event) error { return fn(e) })
}
