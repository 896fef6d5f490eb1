package server

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/internal/units"
	"github.com/replayarchive/replay/wire"
)

// maxTrackTicks bounds one tracks answer: a longer range is cut to its
// first maxTrackTicks ticks (the answer's "to" says where it ends), so an
// answer is held in memory whatever the range asked.
const maxTrackTicks = 5000

// tracks answers the positions of a range: from and to (ticks or offsets,
// as for clips), or at=TICK with before= and after= durations around it
// (the page asks that way before it knows the recording's tick rate); or,
// with first=1, the first tick at which anything is placed. With field=1
// the answer also holds the ground the positions lie on, where the codec
// knows it.
func (s *Server) tracks(w http.ResponseWriter, r *http.Request) {
	rec, err := s.open(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	if r.URL.Query().Get("first") != "" {
		// It may decode the recording up to its first position: one of
		// the heavy slots, as a clip's decoding holds.
		release, err := s.acquireHeavy(r.Context())
		if err != nil {
			s.fail(w, fmt.Errorf("%w: %v", errClientGone, err))
			return
		}
		tick, ok, err := s.x.FirstPosition(r.Context(), rec)
		release()
		if err != nil {
			s.fail(w, err)
			return
		}
		out := wire.TracksFirst{First: -1, Positions: ok}
		if ok {
			out.First = tick
		}
		writeJSON(w, http.StatusOK, out)
		return
	}
	span, err := trackRange(r, rec)
	if err != nil {
		s.fail(w, err)
		return
	}
	out := wire.NewTracks(span)
	if r.URL.Query().Get("field") != "" {
		f, err := s.x.Field(r.Context(), rec)
		if err != nil {
			s.fail(w, err)
			return
		}
		out.Field = wire.NewField(f)
	}
	err = s.x.Tracks(r.Context(), rec, span.From, span.To, func(p formats.Point) error {
		out.Add(p)
		return nil
	})
	if err != nil {
		s.fail(w, err)
		return
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
