// This file steps two recordings of the same world side by side, tick by
// tick, for ghost races: where the other run's players are, how far apart
// the two runners are, and how their checkpoint splits compare.

package hcrp

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/replayarchive/replay/formats"
)

// Ghost steps two recordings together. Both are aligned at tick 0 (a
// recording starts when its run starts). Entity 0 of each is its runner.
type Ghost struct {
	ctx   context.Context
	a, b  *ghostRun
	tick  int64
	end   int64
	err   error
	ents  []Entity
	sum   GhostSummary
	total float64
}

// GhostSummary sums up a ghost race.
type GhostSummary struct {
	// Ticks is how many ticks were stepped; Both how many of them lie in
	// both recordings (the gap statistics cover those).
	Ticks, Both int64
	// MaxGap, MeanGap and FinalGap are distances in blocks between the two
	// runners; MaxGapTick is where the largest gap was.
	MaxGap, MeanGap, FinalGap float64
	MaxGapTick                int64
	// Splits compares checkpoint run times reached in both runs, in a's
	// order; AFinish and BFinish are the finish run times in ms (-1: none).
	Splits           []Split
	AFinish, BFinish int64
}

// Split is one checkpoint's run time (ms) in both runs; Delta = A - B, so a
// negative Delta means run a was ahead.
type Split struct {
	Checkpoint string
	A, B       int64
	Delta      int64
}

type ghostRun struct {
	rd      *Reader
	st      *State
	sc      scanner
	chunk   int
	pending bool
	splits  map[string]int64
	order   []string
	finish  int64
}

// NewGhost starts a ghost race between recordings a and b. They must be of
// the same world.
func NewGhost(ctx context.Context, a, b formats.Source) (*Ghost, error) {
	ra, err := sourceReader(a)
	if err != nil {
		return nil, fmt.Errorf("hcrp: ghost run a: %w", err)
	}
	rb, err := sourceReader(b)
	if err != nil {
		ra.Close()
		return nil, fmt.Errorf("hcrp: ghost run b: %w", err)
	}
	return newGhost(ctx, ra, rb)
}

func newGhost(ctx context.Context, ra, rb *Reader) (*Ghost, error) {
	if ra.Header.WorldID != rb.Header.WorldID {
		ra.Close()
		rb.Close()
		return nil, fmt.Errorf("hcrp: ghost runs are of different worlds (%s, %s)", ra.Header.WorldID, rb.Header.WorldID)
	}
	run := func(r *Reader) *ghostRun {
		return &ghostRun{rd: r, st: NewState(), splits: map[string]int64{}, finish: -1}
	}
	g := &Ghost{ctx: ctx, a: run(ra), b: run(rb), tick: -1, end: max(ra.Ticks(), rb.Ticks())}
	g.sum.MaxGapTick = -1
	return g, nil
}

// advance applies every event of the run up to tick t.
func (r *ghostRun) advance(ctx context.Context, t int64) error {
	for {
		if r.pending {
			if r.sc.tick > t {
				return nil
			}
			r.apply(&r.sc.Event)
			r.pending = false
		}
		if r.sc.next() {
			r.pending = true
			continue
		}
		if r.sc.err != nil {
			return chunkError(r.chunk-1, &r.rd.Index[r.chunk-1], &r.sc)
		}
		if r.chunk >= len(r.rd.Index) {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		raw, err := r.rd.Chunk(ctx, r.chunk)
		if err != nil {
			return err
		}
		r.sc.reset(raw, &r.rd.Index[r.chunk])
		r.chunk++
	}
}

func (r *ghostRun) apply(e *Event) {
	r.st.Apply(e)
	switch e.Type {
	case CheckpointReached:
		if _, ok := r.splits[e.Checkpoint]; !ok {
			r.splits[e.Checkpoint] = e.RunTime
			r.order = append(r.order, e.Checkpoint)
		}
	case RunEnd:
		if e.End == EndFinish {
			r.finish = e.RunTime
		}
	}
}

// Next steps to the next tick; it returns false at the end of the longer
// recording or on an error (see Err).
func (g *Ghost) Next() bool {
	if g.err != nil || g.tick+1 >= g.end {
		return false
	}
	g.tick++
	if err := g.a.advance(g.ctx, g.tick); err != nil {
		g.err = fmt.Errorf("hcrp: ghost run a: %w", err)
		return false
	}
	if err := g.b.advance(g.ctx, g.tick); err != nil {
		g.err = fmt.Errorf("hcrp: ghost run b: %w", err)
		return false
	}
	g.sum.Ticks++
	if g.tick < g.a.rd.Ticks() && g.tick < g.b.rd.Ticks() {
		d := g.Gap()
		g.sum.Both++
		g.total += d
		g.sum.FinalGap = d
		if d > g.sum.MaxGap || g.sum.MaxGapTick < 0 {
			g.sum.MaxGap, g.sum.MaxGapTick = d, g.tick
		}
	}
	return true
}

// Err returns the error that stopped Next, if any.
func (g *Ghost) Err() error { return g.err }

// Tick returns the current tick.
func (g *Ghost) Tick() int64 { return g.tick }

// Runners returns the positions of both runners (entity 0) at this tick.
func (g *Ghost) Runners() (a, b Pos) {
	return g.a.st.entity(0).Pos, g.b.st.entity(0).Pos
}

// Positions returns the other run's (b's) entities at this tick, by id. The
// slice is reused by the next call.
func (g *Ghost) Positions() []Entity {
	g.ents = g.ents[:0]
	for _, e := range g.b.st.Entities {
		g.ents = append(g.ents, *e)
	}
	sort.Slice(g.ents, func(i, j int) bool { return g.ents[i].ID < g.ents[j].ID })
	return g.ents
}

// Gap returns the distance in blocks between the two runners.
func (g *Ghost) Gap() float64 {
	a, b := g.Runners()
	return math.Sqrt((a.X-b.X)*(a.X-b.X) + (a.Y-b.Y)*(a.Y-b.Y) + (a.Z-b.Z)*(a.Z-b.Z))
}

// Summary returns the race so far: gap statistics and checkpoint splits.
func (g *Ghost) Summary() GhostSummary {
	s := g.sum
	if s.Both > 0 {
		s.MeanGap = g.total / float64(s.Both)
	}
	s.Splits = nil
	for _, cp := range g.a.order {
		if bt, ok := g.b.splits[cp]; ok {
			at := g.a.splits[cp]
			s.Splits = append(s.Splits, Split{Checkpoint: cp, A: at, B: bt, Delta: at - bt})
		}
	}
	s.AFinish, s.BFinish = g.a.finish, g.b.finish
	return s
}

// String prints the summary as lines for a terminal: the gap statistics,
// then one line per split and the finish times.
func (s GhostSummary) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "ticks %d (both runs %d)\n", s.Ticks, s.Both)
	fmt.Fprintf(&b, "gap: mean %.2f blocks, max %.2f at tick %d (%s), final %.2f\n",
		s.MeanGap, s.MaxGap, s.MaxGapTick, time.Duration(max(s.MaxGapTick, 0))*TickDuration, s.FinalGap)
	for _, sp := range s.Splits {
		fmt.Fprintf(&b, "split %-12s a %s  b %s  %+.3fs\n", sp.Checkpoint, runTime(sp.A), runTime(sp.B), float64(sp.Delta)/1000)
	}
	fin := func(ms int64) string {
		if ms < 0 {
			return "-"
		}
		return runTime(ms)
	}
	fmt.Fprintf(&b, "finish a %s  b %s", fin(s.AFinish), fin(s.BFinish))
	if s.AFinish >= 0 && s.BFinish >= 0 {
		fmt.Fprintf(&b, "  %+.3fs", float64(s.AFinish-s.BFinish)/1000)
	}
	b.WriteString("\n")
	return b.String()
}

// Run steps to the end and returns the summary.
func (g *Ghost) Run() (GhostSummary, error) {
	for g.Next() {
	}
	return g.Summary(), g.err
}

// Close releases both recordings' readers.
func (g *Ghost) Close() error {
	g.a.rd.Close()
	return g.b.rd.Close()
}
