package formats

import "context"

// Tracker is implemented by codecs whose frames hold positions: it turns
// the frames of a tick range into positioned points, so that a client
// (the web page's trails) draws any format the same way and a new codec
// is drawn as soon as it implements Tracker. A codec without positions
// (sc2replay) does not implement it.
type Tracker interface {
	// Track calls emit for every position in r, in tick order: each
	// tracked thing's position where a record places or moves it, and
	// where the range starts inside a run of deltas, its position then.
	// It must not panic on any frames.
	Track(ctx context.Context, src Source, r Range, emit func(Point) error) error
}

// Point is one tracked thing (a player, an entity, the ball) at one tick.
type Point struct {
	Tick int64
	// Track names the thing, stable within the recording ("c3" a
	// teehistorian client id, "e0" an HCRP entity, a VTX entity id).
	Track string
	// Label is the name to show for it (a player's name); empty when the
	// codec knows none, and then Track is shown.
	Label string
	// Team is its team where the format has teams.
	Team string
	// X and Y place it seen from above, in the format's own units (Y
	// grows downwards on a picture); Z is its height where the format
	// has one (HasZ).
	X, Y, Z float64
	HasZ    bool
	// Gap says the thing left (died, was removed) at Tick: X, Y and Z
	// mean nothing, and no line joins the points before and after.
	Gap bool
}

// EventSource is implemented by Sources that read back the recording's
// searchable events (the archive's recordings): a Tracker names from them
// what the frames of a range do not (a teehistorian client is named at
// its join, often long before the range).
type EventSource interface {
	// EachEvent calls fn for every event, in tick order; fn must not
	// keep e past its return.
	EachEvent(fn func(e *Event) error) error
}
