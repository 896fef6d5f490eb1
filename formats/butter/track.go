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
// head) and the disc, seen from above with the arena's length across
// (at). A player's
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

// at is the point of an arena position [x, y, z]: y is up and z runs
// the arena's length, from the blue end (negative) to the orange one
// (the Echo VR API's axes, see arenaField). The point's X is z, so the
// arena lies across a wide picture, and its Y is -x, so the picture is
// the arena seen from above, not its mirror image (x is to the left of
// a player facing +z).
func at(tick int64, track, label, team string, pos []float32) formats.Point {
	return formats.Point{Tick: tick, Track: track, Label: label, Team: team,
		X: float64(pos[2]), Y: -float64(pos[0]), Z: float64(pos[1]), HasZ: true}
}

// The arena's size and goals, from public descriptions of Echo VR's API
// (the game publishes no geometry):
//   - Ajedi32/echovr_api_docs, README.md, "Vectors" (commit 0226997d):
//     the origin is the arena's centre, where the disc spawns; +z points to
//     the orange side and -z to the blue side; the arena is 80 m long
//     (between the orange and blue launch tube exits) and 30 m wide at
//     its widest point of the side walls.
//   - NtsFranz/Spark, Program.cs, WasStealNearGoal (commit a1f2de11): the
//     goals' centres are at (0, 0, ±36), the blue team's at z = -36.
//
// The corpus's real capture (example.milk) agrees: the disc stays within
// |x| ≤ 6 and |z| ≤ 35.2, short of the goals; players outside |z| = 40
// are in the launch tubes before the round (TestArenaField).
const (
	arenaHalfLength = 40.0 // m, z of the launch tube exits
	arenaHalfWidth  = 15.0 // m, |x| of the side walls at their widest
	arenaGoalZ      = 36.0 // m, |z| of the goals' centres
	arenaMap        = "mpl_arena_a"
)

// arenaField is the Echo Arena in at's coordinates: its extent outlined,
// the half-way line, and the two goals.
func arenaField() *formats.Field {
	l, w := arenaHalfLength, arenaHalfWidth
	return &formats.Field{MinX: -l, MinY: -w, MaxX: l, MaxY: w,
		Shapes: []formats.Shape{
			{Kind: "outline", Label: "arena 80 m × 30 m", Points: [][2]float64{{-l, -w}, {l, -w}, {l, w}, {-l, w}}},
			{Kind: "line", Points: [][2]float64{{0, -w}, {0, w}}},
			{Kind: "goal", Label: "blue goal", Color: "#3b82f6", Points: [][2]float64{{-arenaGoalZ, 0}}},
			{Kind: "goal", Label: "orange goal", Color: "#f97316", Points: [][2]float64{{arenaGoalZ, 0}}},
		},
		Note: "the Echo Arena: 80 m between the launch tube exits and 30 m at its widest (Ajedi32/echovr_api_docs), goals at z = ±36 m, blue at -36 (NtsFranz/Spark); positions seen from above, the arena's length across"}
}

// The three Echo VR codecs know their arena.
var (
	_ formats.Fielder = (*Codec)(nil)
	_ formats.Fielder = (*EchoReplayCodec)(nil)
	_ formats.Fielder = (*MilkCodec)(nil)
)

// Field implements formats.Fielder: a recording on the Echo Arena's map
// (mpl_arena_a) has arenaField; other maps (Echo Combat's, the lobby)
// have no geometry here, and nil.
func (c *Codec) Field(_ context.Context, src formats.Source) (*formats.Field, error) {
	return fieldOf(src), nil
}

// Field implements formats.Fielder as Codec.Field does.
func (c *EchoReplayCodec) Field(_ context.Context, src formats.Source) (*formats.Field, error) {
	return fieldOf(src), nil
}

// Field implements formats.Fielder as Codec.Field does (a .milk capture
// is always of the arena).
func (c *MilkCodec) Field(_ context.Context, src formats.Source) (*formats.Field, error) {
	return fieldOf(src), nil
}

// fieldOf is the arena for a recording of its map, else nil.
func fieldOf(src formats.Source) *formats.Field {
	if m := src.Meta(); m == nil || m.Map != arenaMap {
		return nil
	}
	return arenaField()
}
