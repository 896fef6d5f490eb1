package butter

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/replayarchive/replay/formats"
)

// The three Echo VR codecs are formats.Trackers: every frame holds each
// player's and the disc's position.
var (
	_ formats.Tracker = (*Codec)(nil)
	_ formats.Tracker = (*EchoReplayCodec)(nil)
	_ formats.Tracker = (*MilkCodec)(nil)
)

// Track implements formats.Tracker with framePoints.
func (c *Codec) Track(ctx context.Context, src formats.Source, r formats.Range, emit func(formats.Point) error) error {
	_, err := c.rangeFrames(ctx, src, r, func(tick int64, f *Frame) error {
		return framePoints(tick, f.Teams, f.Disc, emit)
	})
	return err
}

// Track implements formats.Tracker with framePoints; a line whose session
// JSON does not decode places nobody.
func (c *EchoReplayCodec) Track(ctx context.Context, src formats.Source, r formats.Range, emit func(formats.Point) error) error {
	return c.rawLines(ctx, src, r, func(tick int64, l Line) error {
		var f struct {
			Disc  *Disc   `json:"disc"`
			Teams []*Team `json:"teams"`
		}
		if json.Unmarshal(l.Session, &f) != nil {
			return nil
		}
		return framePoints(tick, f.Teams, f.Disc, emit)
	})
}

// Track implements formats.Tracker with framePoints.
func (c *MilkCodec) Track(ctx context.Context, src formats.Source, r formats.Range, emit func(formats.Point) error) error {
	return c.milkFrames(ctx, src, r, func(tick int64, f *Frame) error {
		return framePoints(tick, f.Teams, f.Disc, emit)
	})
}

// framePoints emits the positions of one frame: each player's body (else
// head) and the disc. The arena's x and z lie flat, y is up. A player's
// track is "b" and the user id (its name when it has none), labelled with
// the name; the disc's track is "disc".
func framePoints(tick int64, teams []*Team, disc *Disc, emit func(formats.Point) error) error {
	for _, t := range teams {
		if t == nil {
			continue
		}
		for _, p := range t.Players {
			if p == nil {
				continue
			}
			var pos []float32
			if p.Body != nil && len(p.Body.Position) >= 3 {
				pos = p.Body.Position
			} else if p.Head != nil && len(p.Head.Position) >= 3 {
				pos = p.Head.Position
			} else {
				continue
			}
			track := "b" + p.Name
			if p.UserID != 0 {
				track = "b" + strconv.FormatInt(p.UserID, 10)
			}
			if err := emit(at(tick, track, p.Name, t.Team, pos)); err != nil {
				return err
			}
		}
	}
	if disc != nil && len(disc.Position) >= 3 {
		return emit(at(tick, "disc", "disc", "", disc.Position))
	}
	return nil
}

// at is the point of an arena position (x, y up, z).
func at(tick int64, track, label, team string, pos []float32) formats.Point {
	return formats.Point{Tick: tick, Track: track, Label: label, Team: team,
		X: float64(pos[0]), Y: float64(pos[2]), Z: float64(pos[1]), HasZ: true}
}
