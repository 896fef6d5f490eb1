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

// Fielder is implemented by Trackers that know the ground their positions
// lie on (a StarCraft II map's size, the Echo Arena's walls and goals), so
// that a client draws the positions against it instead of against their
// own extent: a unit in a corner is seen in the corner.
type Fielder interface {
	// Field returns the ground of src's recording in the Tracker's
	// coordinates, or nil when the codec cannot tell it for this
	// recording (a replay without the map's size).
	Field(ctx context.Context, src Source) (*Field, error)
}

// Field is the ground a recording's positions lie on, in the coordinates
// of its Tracker's Points (X, Y seen from above).
type Field struct {
	// MinX, MinY, MaxX and MaxY bound it: a picture shows all of it.
	MinX, MinY, MaxX, MaxY float64
	// Shapes are drawn under the positions.
	Shapes []Shape
	// Note says what the field is and where its numbers come from,
	// for a reader who doubts them.
	Note string
}

// Shape is one thing drawn on a Field.
type Shape struct {
	// Kind is "outline" (a closed line: a wall, the map's edge), "line"
	// (an open one) or "goal" (a marker at its one point).
	Kind string
	// Label names it ("blue goal"); empty for none.
	Label string
	// Color is the game's colour for it as a CSS colour name ("blue",
	// "orange"), empty for the picture's own.
	Color string
	// Points are its corners, or its one point.
	Points [][2]float64
}
