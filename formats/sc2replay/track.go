// This file places a game's units from its tracker events, for the trails.

package sc2replay

import (
	"context"
	"slices"
	"strconv"

	"github.com/icza/s2prot"
	"github.com/replayarchive/replay/formats"
)

// A replay's tracker events (from 2.0.8 on) say where units are born and
// die and, every 15 game seconds, where the units that moved went: enough
// to draw a game's units on its map.
var _ formats.Tracker = (*Codec)(nil)

// maxTrackedUnits bounds the units Track keeps between events: a game
// holds a few hundred; a hostile file cannot make it hold more.
const maxTrackedUnits = 1 << 14

// unit is what Track knows of one player's unit.
type unit struct {
	recycle int64
	kind    string
	player  int64
	x, y    float64
}

// Track implements formats.Tracker from the tracker events: each player's
// unit is a track ("u" index "." recycle, the unit's tag) labelled with
// its type, its team the controlling player ("p1"). It is placed where it
// is born (or its building begun), moved where a UnitPositions event puts
// it, placed again where it changes type or owner (its label or team),
// and leaves (a gap) where it dies. Neutral units (minerals, rocks)
// are left out. Units alive when r starts are placed there, at their last
// known position. Y is flipped to grow downwards (the game's grows up),
// against the map's height when initData says it.
func (c *Codec) Track(ctx context.Context, src formats.Source, r formats.Range, emit func(formats.Point) error) error {
	rep, err := openInRange(ctx, src, r)
	if err != nil || rep == nil {
		return err
	}
	if rep.proto == nil || rep.proto.tracker == nil {
		return nil // no protocol table, or a replay from before tracker events
	}
	height := 0.0
	if ini, err := rep.initData(); err == nil {
		height = float64(ini.Int("syncLobbyState", "gameDescription", "mapSizeY"))
	}
	flipY := func(y float64) float64 {
		if height > 0 {
			return height - y
		}
		return -y
	}
	s, err := rep.events(fileTrackerEvents)
	if err != nil {
		return err
	}
	units := map[int64]*unit{}
	point := func(tick, idx int64, u *unit) formats.Point {
		return formats.Point{Tick: tick, Track: "u" + strconv.FormatInt(idx, 10) + "." + strconv.FormatInt(u.recycle, 10),
			Label: u.kind, Team: "p" + strconv.FormatInt(u.player, 10), X: u.x, Y: flipY(u.y)}
	}
	started := false
	// start places the units alive when the range starts, in tag order.
	start := func() error {
		started = true
		idx := make([]int64, 0, len(units))
		for i := range units {
			idx = append(idx, i)
		}
		slices.Sort(idx)
		for _, i := range idx {
			if err := emit(point(r.From, i, units[i])); err != nil {
				return err
			}
		}
		return nil
	}
	for n := 0; ; n++ {
		e, ok := s.next()
		if !ok {
			break
		}
		loop := e.Loop()
		if r.Past(loop) {
			break
		}
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if !started && loop >= r.From {
			if err := start(); err != nil {
				return err
			}
		}
		if err := trackEvent(&e, units, func(idx int64, u *unit, gone bool) error {
			if !started {
				return nil
			}
			p := point(loop, idx, u)
			p.Gap = gone
			return emit(p)
		}); err != nil {
			return err
		}
	}
	if err := s.Err(); err != nil {
		return err
	}
	if !started {
		return start()
	}
	return nil
}

// trackEvent applies one tracker event to units and calls moved for each
// unit it places, moves or removes (gone).
func trackEvent(e *s2prot.Event, units map[int64]*unit, moved func(idx int64, u *unit, gone bool) error) error {
	idx := e.Int("unitTagIndex")
	switch e.Name {
	case "UnitBorn", "UnitInit":
		player := e.Int("controlPlayerId")
		if player <= 0 || player > 16 {
			delete(units, idx)
			return nil
		}
		if _, ok := units[idx]; !ok && len(units) >= maxTrackedUnits {
			return nil
		}
		kind := e.Stringv("unitTypeName")
		if kind == "" {
			kind = "unit"
		}
		u := &unit{recycle: e.Int("unitTagRecycle"), kind: kind, player: player,
			x: float64(e.Int("x")), y: float64(e.Int("y"))}
		units[idx] = u
		return moved(idx, u, false)
	case "UnitDied":
		u, ok := units[idx]
		if !ok || u.recycle != e.Int("unitTagRecycle") {
			return nil
		}
		delete(units, idx)
		u.x, u.y = float64(e.Int("x")), float64(e.Int("y"))
		return moved(idx, u, true)
	case "UnitOwnerChange":
		if u, ok := units[idx]; ok {
			if p := e.Int("controlPlayerId"); p > 0 && p <= 16 {
				u.player = p
				return moved(idx, u, false)
			}
		}
	case "UnitTypeChange":
		if u, ok := units[idx]; ok {
			if k := e.Stringv("unitTypeName"); k != "" {
				u.kind = k
				return moved(idx, u, false)
			}
		}
	case "UnitPositions":
		// Items are (index delta, x, y) triples from firstUnitIndex.
		i := e.Int("firstUnitIndex")
		items := e.Array("items")
		for k := 0; k+2 < len(items); k += 3 {
			d, _ := items[k].(int64)
			x, _ := items[k+1].(int64)
			y, _ := items[k+2].(int64)
			i += d
			u, ok := units[i]
			if !ok {
				continue
			}
			u.x, u.y = float64(x), float64(y)
			if err := moved(i, u, false); err != nil {
				return err
			}
		}
	}
	return nil
}

// The map's size is in every replay's initData.
var _ formats.Fielder = (*Codec)(nil)

// Field implements formats.Fielder: the map's size from initData
// (m_syncLobbyState.m_gameDescription.m_mapSizeX and m_mapSizeY, in the
// tracker events' cells), a box from (0, 0) outlined, in Track's
// coordinates (its Y flipped against the same height). Nil for a replay
// without a protocol table or without the size.
func (c *Codec) Field(ctx context.Context, src formats.Source) (*formats.Field, error) {
	rep, err := openInRange(ctx, src, formats.Ticks(0, -1))
	if err != nil || rep == nil || rep.proto == nil {
		return nil, err
	}
	ini, err := rep.initData()
	if err != nil {
		return nil, err
	}
	w := float64(ini.Int("syncLobbyState", "gameDescription", "mapSizeX"))
	h := float64(ini.Int("syncLobbyState", "gameDescription", "mapSizeY"))
	if w <= 0 || h <= 0 || w > 1<<12 || h > 1<<12 {
		return nil, nil
	}
	return &formats.Field{MaxX: w, MaxY: h,
		Shapes: []formats.Shape{{Kind: "outline", Label: "map " + strconv.FormatFloat(w, 'f', -1, 64) + "×" + strconv.FormatFloat(h, 'f', -1, 64),
			Points: [][2]float64{{0, 0}, {w, 0}, {w, h}, {0, h}}}},
		Note: "the map's size from the replay's initData (gameDescription.mapSizeX × mapSizeY)"}, nil
}
