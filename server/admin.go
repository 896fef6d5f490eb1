// The admins' endpoints: retention, prune, stats, check, reindex, tokens
// and the whole audit log.

package server

import (
	"errors"
	"net/http"
	"time"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/wire"
)

func (s *Server) auditLog(w http.ResponseWriter, r *http.Request) { s.writeAudit(w, r, "") }

func (s *Server) getRetention(w http.ResponseWriter, r *http.Request) {
	p, err := s.x.Policy()
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.PolicyOf(p))
}

func (s *Server) putRetention(w http.ResponseWriter, r *http.Request) {
	var pj wire.Policy
	if err := decodeBody(r, &pj); err != nil {
		s.fail(w, err)
		return
	}
	p, err := pj.Policy()
	if err != nil {
		s.fail(w, badRequest("%v", err))
		return
	}
	if err := s.x.SetPolicy(actorOf(r), p); err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.PolicyOf(p))
}

func (s *Server) clearRetention(w http.ResponseWriter, r *http.Request) {
	if err := s.x.SetPolicy(actorOf(r), nil); err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.PolicyOf(nil))
}

func (s *Server) prune(w http.ResponseWriter, r *http.Request) {
	var req wire.PruneRequest
	if err := decodeBody(r, &req); err != nil {
		s.fail(w, err)
		return
	}
	dry := req.DryRun == nil || *req.DryRun
	var pol *archive.Policy
	var err error
	source := "stored policy"
	if req.Policy != nil {
		source = "request"
		if pol, err = req.Policy.Policy(); err != nil {
			s.fail(w, badRequest("%v", err))
			return
		}
	} else if pol, err = s.x.Policy(); err != nil {
		s.fail(w, err)
		return
	}
	if pol == nil || pol.IsZero() {
		s.fail(w, badRequest("no retention policy: store one (PUT /api/v1/retention) or send one"))
		return
	}
	plan, err := s.x.Plan(r.Context(), *pol, archive.PlanOptions{IncludeFlagged: req.IncludeFlagged})
	if err != nil {
		s.fail(w, err)
		return
	}
	out := wire.Prune{DryRun: dry, PolicySource: source, Policy: wire.PolicyOf(pol), Plan: plan}
	if !dry {
		rep, err := s.x.Prune(r.Context(), actorOf(r), plan)
		if rep != nil {
			s.metrics.prunes.Inc()
			s.metrics.pruned.Add(float64(len(rep.Removed)))
		}
		if err != nil {
			s.fail(w, err)
			return
		}
		out.Report = rep
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) stats(w http.ResponseWriter, r *http.Request) {
	st, err := s.x.Stats(r.Context())
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

func (s *Server) check(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ReadData bool `json:"read_data"`
		Repair   bool `json:"repair"`
	}
	if err := decodeBody(r, &req); err != nil {
		s.fail(w, err)
		return
	}
	rep, err := s.x.Check(r.Context(), archive.CheckOptions{ReadData: req.ReadData, Repair: req.Repair})
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, rep)
}

func (s *Server) reindex(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	n, err := s.x.Reindex(r.Context())
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"recordings": n, "took_ms": time.Since(start).Milliseconds()})
}

func (s *Server) listTokens(w http.ResponseWriter, r *http.Request) {
	ts, err := s.x.Tokens()
	if err != nil {
		s.fail(w, err)
		return
	}
	type tokenJSON struct {
		Name      string    `json:"name"`
		Role      string    `json:"role"`
		Created   time.Time `json:"created"`
		CreatedBy string    `json:"created_by,omitempty"`
	}
	out := []tokenJSON{}
	for _, t := range ts {
		out = append(out, tokenJSON{t.Name, t.Role, t.Created, t.CreatedBy})
	}
	writeJSON(w, http.StatusOK, map[string]any{"tokens": out})
}

func (s *Server) createToken(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name string `json:"name"`
		Role string `json:"role"`
	}
	if err := decodeBody(r, &req); err != nil {
		s.fail(w, err)
		return
	}
	role, err := replay.ParseRole(req.Role)
	if err != nil {
		s.fail(w, badRequest("%v", err))
		return
	}
	secret, err := s.x.CreateToken(actorOf(r), req.Name, role)
	if err != nil {
		if errors.Is(err, archive.ErrTokenExists) {
			s.fail(w, err)
		} else {
			s.fail(w, badRequest("%v", err))
		}
		return
	}
	writeJSON(w, http.StatusCreated, map[string]string{"name": req.Name, "role": role.String(), "token": secret})
}

func (s *Server) revokeToken(w http.ResponseWriter, r *http.Request) {
	if err := s.x.RevokeToken(actorOf(r), r.PathValue("name")); err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"revoked": r.PathValue("name")})
}
