// The takedown endpoints: taking a recording down (hidden at once, its
// bytes kept for a grace period), undoing one within it, the list of
// takedowns, lifting one, and the janitor's purge of what is due.

package server

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/internal/units"
	"github.com/replayarchive/replay/wire"
)

// purgeEvery is how often serve's janitor purges the takedowns whose grace
// period is over: a takedown's bytes outlive it by at most this.
const purgeEvery = 10 * time.Minute

// takedownBody is the body of a takedown: why (required), and how long its
// bytes are kept for an undo (Grace, e.g. "7d"; default
// archive.DefaultGrace) unless Now purges them at once.
type takedownBody struct {
	Reason string `json:"reason"`
	Grace  string `json:"grace"`
	Now    bool   `json:"now"`
}

// grace returns the grace period the body asks for.
func (b takedownBody) grace() (time.Duration, error) {
	if b.Now {
		return 0, nil
	}
	if strings.TrimSpace(b.Grace) == "" {
		return archive.DefaultGrace, nil
	}
	d, err := units.ParseDuration(b.Grace)
	if err != nil || d <= 0 {
		return 0, badRequest("grace %q: want a positive duration such as 7d or 12h, or \"now\": true", b.Grace)
	}
	return d, nil
}

func (s *Server) takedown(w http.ResponseWriter, r *http.Request) {
	var b takedownBody
	if err := decodeBody(r, &b); err != nil {
		s.fail(w, err)
		return
	}
	if b.Reason == "" {
		b.Reason = r.URL.Query().Get("reason")
	}
	if strings.TrimSpace(b.Reason) == "" {
		s.fail(w, badRequest("a takedown needs a reason"))
		return
	}
	grace, err := b.grace()
	if err != nil {
		s.fail(w, err)
		return
	}
	m, t, err := s.x.Takedown(r.Context(), actorOf(r), r.PathValue("id"), b.Reason, grace)
	var sweep *archive.SweepError
	if err != nil && !errors.As(err, &sweep) {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.TakenDownOf(m, t, err))
}

func (s *Server) undoTakedown(w http.ResponseWriter, r *http.Request) {
	b, err := s.markBody(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	m, t, err := s.x.UndoTakedown(r.Context(), actorOf(r), r.PathValue("id"), b.Reason)
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.Restored{Restored: m.ID.String(), Takedown: t})
}

func (s *Server) takedowns(w http.ResponseWriter, r *http.Request) {
	ts, err := s.x.Takedowns()
	if err != nil {
		s.fail(w, err)
		return
	}
	if ts == nil {
		ts = []archive.Takedown{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"takedowns": ts})
}

func (s *Server) liftTakedown(w http.ResponseWriter, r *http.Request) {
	b, err := s.markBody(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	t, err := s.x.LiftTakedown(r.Context(), actorOf(r), r.PathValue("sha256"), b.Reason)
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"lifted": t})
}

// PurgeTakedowns purges, once, the takedowns whose grace period is over,
// as serve's janitor does.
func (s *Server) PurgeTakedowns(ctx context.Context) ([]archive.Takedown, error) {
	return s.x.PurgeTakedowns(ctx, replay.Actor{Name: "scheduler", Role: replay.RoleAdmin})
}

// purgePass is one scheduled purge of takedowns, logged.
func (s *Server) purgePass(ctx context.Context) {
	purged, err := s.PurgeTakedowns(ctx)
	if errors.Is(err, replay.ErrJanitorElsewhere) {
		return // another node of the shared catalog purges
	}
	if err != nil && ctx.Err() == nil {
		s.metrics.errors.WithLabelValues("purge-takedowns").Inc()
		s.log.Error("scheduled takedown purge", "err", err)
	}
	if len(purged) > 0 {
		s.log.Info("scheduled takedown purge", "purged", len(purged))
	}
}
