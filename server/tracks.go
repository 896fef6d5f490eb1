package server

import (
	"bufio"
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/internal/units"
)

// maxTrackTicks bounds one tracks answer: a longer range is cut to its
// first maxTrackTicks ticks (the answer's "to" says where it ends), so an
// answer is held in memory whatever the range asked.
const maxTrackTicks = 5000

// TracksJSON is the answer of GET /api/v1/recordings/{id}/tracks: the
// positions of a tick range, by track, in order of first appearance.
type TracksJSON struct {
	From   int64       `json:"from"`
	To     int64       `json:"to"`
	Tracks []TrackJSON `json:"tracks"`
}

// TrackJSON is one tracked thing's points: each [tick, x, y] or [tick, x,
// y, z] (x and y seen from above, z the height), or [tick] where it left
// (no line joins across it). Label is its last name in the range.
type TrackJSON struct {
	Track  string     `json:"track"`
	Label  string     `json:"label"`
	Team   string     `json:"team,omitempty"`
	Points []pointRow `json:"points"`
}

// pointRow is one point as a JSON array, numbers to 7 significant digits
// (a picture's precision, a third of the bytes of full floats).
type pointRow struct {
	tick    int64
	x, y, z float64
	n       int // numbers after the tick: 0 (a gap), 2 or 3
}

// MarshalJSON writes the row as an array.
func (p pointRow) MarshalJSON() ([]byte, error) {
	b := append(make([]byte, 0, 48), '[')
	b = strconv.AppendInt(b, p.tick, 10)
	for _, v := range []float64{p.x, p.y, p.z}[:p.n] {
		b = append(b, ',')
		b = strconv.AppendFloat(b, v, 'g', 7, 64)
	}
	return append(b, ']'), nil
}

// tracks answers the positions of a range: from and to (ticks or offsets,
// as for clips), or at=TICK with before= and after= durations around it
// (the page asks that way before it knows the recording's tick rate).
func (s *Server) tracks(w http.ResponseWriter, r *http.Request) {
	rec, err := s.open(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	span, err := trackRange(r, rec)
	if err != nil {
		s.fail(w, err)
		return
	}
	out := TracksJSON{From: span.From, To: span.To, Tracks: []TrackJSON{}}
	byTrack := map[string]int{}
	err = s.x.Tracks(r.Context(), rec, span.From, span.To, func(p formats.Point) error {
		row := pointRow{tick: p.Tick, x: p.X, y: p.Y, z: p.Z, n: 2}
		if p.HasZ {
			row.n = 3
		}
		if p.Gap {
			row.n = 0
		} else if !finite(p.X) || !finite(p.Y) || p.HasZ && !finite(p.Z) {
			return nil
		}
		i, ok := byTrack[p.Track]
		if !ok {
			i = len(out.Tracks)
			byTrack[p.Track] = i
			out.Tracks = append(out.Tracks, TrackJSON{Track: p.Track})
		}
		t := &out.Tracks[i]
		if p.Label != "" {
			t.Label = p.Label
		}
		if p.Team != "" {
			t.Team = p.Team
		}
		t.Points = append(t.Points, row)
		return nil
	})
	if err != nil {
		s.fail(w, err)
		return
	}
	for i := range out.Tracks {
		if out.Tracks[i].Label == "" {
			out.Tracks[i].Label = out.Tracks[i].Track
		}
	}
	w.Header().Set("Content-Type", "application/json")
	bw := bufio.NewWriterSize(w, 64<<10)
	json.NewEncoder(bw).Encode(out)
	bw.Flush()
}

// trackRange reads the range a tracks request asks for, cut to
// maxTrackTicks.
func trackRange(r *http.Request, rec *replay.Recording) (formats.Range, error) {
	q := r.URL.Query()
	var span formats.Range
	if q.Get("at") != "" {
		at, err := tickParam(r, "at", rec, 0)
		if err != nil {
			return span, err
		}
		var before, after time.Duration
		for _, d := range []struct {
			name string
			to   *time.Duration
		}{{"before", &before}, {"after", &after}} {
			if v := q.Get(d.name); v != "" {
				if *d.to, err = units.ParseDuration(v); err != nil || *d.to < 0 {
					return span, badRequest("%s: %q: want a duration like 3s or 500ms", d.name, v)
				}
			}
		}
		t := rec.TimeAt(at)
		span = formats.Ticks(min(at, rec.TickAt(t-before)), max(at, rec.TickAt(t+after)))
	} else {
		var err error
		if span, err = rangeParams(r, rec); err != nil {
			return span, err
		}
	}
	if span.To < 0 || span.To-span.From >= maxTrackTicks {
		span.To = span.From + maxTrackTicks - 1
	}
	if last := rec.LastTick(); span.To > last && span.From <= last {
		span.To = last
	}
	return span, nil
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
