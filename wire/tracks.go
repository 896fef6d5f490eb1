package wire

import (
	"math"
	"strconv"

	"github.com/replayarchive/replay/formats"
)

// Tracks is the answer of GET /api/v1/recordings/{id}/tracks: the
// positions of a tick range, by track, in order of first appearance. Add
// takes a codec's points (formats.Tracker) as they come.
type Tracks struct {
	From   int64   `json:"from"`
	To     int64   `json:"to"`
	Tracks []Track `json:"tracks"`
	// Field is the ground the positions lie on, answered with field=1
	// where the codec knows it (formats.Fielder), so a page asks once.
	Field *Field `json:"field,omitempty"`

	byTrack map[string]int
}

// Field is a recording's ground (formats.Field): the page draws its box
// and shapes under the trails, and shows the whole box.
type Field struct {
	// Box is [minX, minY, maxX, maxY] in the tracks' coordinates.
	Box    [4]float64 `json:"box"`
	Shapes []Shape    `json:"shapes"`
	Note   string     `json:"note,omitempty"`
}

// Shape is one outline, line or goal of a Field.
type Shape struct {
	Kind   string       `json:"kind"`
	Label  string       `json:"label,omitempty"`
	Color  string       `json:"color,omitempty"`
	Points [][2]float64 `json:"points"`
}

// NewField is the answer's form of f; nil for nil.
func NewField(f *formats.Field) *Field {
	if f == nil {
		return nil
	}
	out := &Field{Box: [4]float64{f.MinX, f.MinY, f.MaxX, f.MaxY}, Shapes: make([]Shape, 0, len(f.Shapes)), Note: f.Note}
	for _, s := range f.Shapes {
		out.Shapes = append(out.Shapes, Shape{Kind: s.Kind, Label: s.Label, Color: s.Color, Points: s.Points})
	}
	return out
}

// TracksFirst is the answer of GET /api/v1/recordings/{id}/tracks?first=1:
// the first tick at which anything is placed (Positions false when
// nothing ever is, or the format records no positions; First is then -1).
type TracksFirst struct {
	First     int64 `json:"first"`
	Positions bool  `json:"positions"`
}

// Track is one tracked thing's points: each [tick, x, y] or [tick, x, y,
// z] (x and y seen from above, z the height), or [tick] where it left (no
// line joins across it). Label is its last name in the range, else its
// track id.
type Track struct {
	Track  string     `json:"track"`
	Label  string     `json:"label"`
	Team   string     `json:"team,omitempty"`
	Points []PointRow `json:"points"`
}

// PointRow is one point written as a JSON array, numbers to 7 significant
// digits (a picture's precision, a third of the bytes of full floats).
type PointRow struct {
	tick    int64
	x, y, z float64
	n       int // numbers after the tick: 0 (a gap), 2 or 3
}

// MarshalJSON writes the row as an array.
func (p PointRow) MarshalJSON() ([]byte, error) {
	b := append(make([]byte, 0, 48), '[')
	b = strconv.AppendInt(b, p.tick, 10)
	for _, v := range []float64{p.x, p.y, p.z}[:p.n] {
		b = append(b, ',')
		b = strconv.AppendFloat(b, v, 'g', 7, 64)
	}
	return append(b, ']'), nil
}

// NewTracks returns an empty answer for the ticks of span.
func NewTracks(span formats.Range) *Tracks {
	return &Tracks{From: span.From, To: span.To, Tracks: []Track{}, byTrack: map[string]int{}}
}

// Add appends p to its track; a point with a coordinate that is not a
// finite number is dropped.
func (t *Tracks) Add(p formats.Point) {
	row := PointRow{tick: p.Tick, x: p.X, y: p.Y, z: p.Z, n: 2}
	if p.HasZ {
		row.n = 3
	}
	if p.Gap {
		row.n = 0
	} else if !finite(p.X) || !finite(p.Y) || p.HasZ && !finite(p.Z) {
		return
	}
	i, ok := t.byTrack[p.Track]
	if !ok {
		i = len(t.Tracks)
		t.byTrack[p.Track] = i
		t.Tracks = append(t.Tracks, Track{Track: p.Track, Label: p.Track})
	}
	tr := &t.Tracks[i]
	if p.Label != "" {
		tr.Label = p.Label
	}
	if p.Team != "" {
		tr.Team = p.Team
	}
	tr.Points = append(tr.Points, row)
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
