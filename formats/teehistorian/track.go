package teehistorian

import (
	"context"
	"fmt"
	"strconv"

	"github.com/replayarchive/replay/formats"
)

// The teehistorian codec is a formats.Tracker: PLAYER_NEW and
// PLAYER_DIFF place a client's character, PLAYER_OLD removes it.
var _ formats.Tracker = (*Codec)(nil)

// Track implements formats.Tracker. A point's track is "c" and the client
// id; its position is the character's (world units, y down); its team the
// DDNet team when not 0. Its label is the client's name: the last
// PLAYER_NAME, a start-info message in the range, else (when src is a
// formats.EventSource) the player of the join and drop events around the
// tick, else "client N".
func (c *Codec) Track(ctx context.Context, src formats.Source, r formats.Range, emit func(formats.Point) error) error {
	w, err := pooledWalker(src, r)
	if err != nil {
		return err
	}
	defer w.release()
	var pts []formats.Point
	var names [MaxClients]string // a client's name as the range tells it
	unnamed := false
	for {
		it, err := w.peek(ctx)
		if errIsEOF(err) {
			break
		}
		if err != nil {
			return err
		}
		if r.Past(it.Tick) {
			break
		}
		cid := it.Cid
		if r.Contains(it.Tick) && cid >= 0 && cid < MaxClients {
			cl := &w.rd.State().Clients[cid]
			switch it.Type {
			case ItemJoin:
				names[cid] = ""
			case ItemMessage:
				if n, ok := MessageName(it.Data, cl.Proto7); ok {
					names[cid] = n
				}
			case ItemPlayerNew, ItemPlayerDiff, ItemPlayerOld:
				p := formats.Point{Tick: it.Tick, Track: "c" + strconv.Itoa(int(cid)), Label: names[cid], X: float64(it.X), Y: float64(it.Y)}
				if p.Label == "" {
					p.Label = string(cl.Name)
				}
				if cl.Team != 0 {
					p.Team = strconv.Itoa(int(cl.Team))
				}
				unnamed = unnamed || p.Label == ""
				pts = append(pts, p)
				if it.Type == ItemPlayerOld {
					p.Gap, p.X, p.Y = true, 0, 0
					pts = append(pts, p)
				}
			}
		}
		w.commit()
	}
	if unnamed {
		nameFromEvents(pts, src)
	}
	for _, p := range pts {
		if p.Label == "" {
			p.Label = "client " + p.Track[1:]
		}
		if err := emit(p); err != nil {
			return err
		}
	}
	return nil
}

// nameFromEvents labels the unnamed points from the recording's join and
// drop events ("client N joined", named by the server in the ticks after
// it; "client N left"): the name of whoever held the client id at the
// point's tick, or else the last one to join before it.
func nameFromEvents(pts []formats.Point, src formats.Source) {
	es, ok := src.(formats.EventSource)
	if !ok {
		return
	}
	type stint struct {
		name     string
		from, to int64 // -1: open
	}
	held := map[string][]stint{} // track → who held it when
	es.EachEvent(func(e *formats.Event) error {
		if e.Kind != formats.EventJoin && e.Kind != formats.EventDrop {
			return nil
		}
		var cid int
		if _, err := fmt.Sscanf(e.Text, "client %d", &cid); err != nil {
			return nil
		}
		track := "c" + strconv.Itoa(cid)
		list := held[track]
		var open *stint
		if n := len(list); n > 0 && list[n-1].to < 0 {
			open = &list[n-1]
		}
		switch {
		case e.Kind == formats.EventJoin:
			if open != nil {
				open.to = e.Tick
			}
			list = append(list, stint{name: e.Player, from: e.Tick, to: -1})
		case open != nil:
			open.to = e.Tick
			if open.name == "" {
				open.name = e.Player
			}
		default:
			list = append(list, stint{name: e.Player, from: -1, to: e.Tick})
		}
		held[track] = list
		return nil
	})
	for i := range pts {
		if pts[i].Label != "" {
			continue
		}
		best := ""
		for _, s := range held[pts[i].Track] {
			if (s.from < 0 || s.from <= pts[i].Tick) && (s.to < 0 || pts[i].Tick <= s.to) {
				best = s.name
				break
			}
			if s.from >= 0 && s.from <= pts[i].Tick {
				best = s.name
			}
		}
		pts[i].Label = best
	}
}
