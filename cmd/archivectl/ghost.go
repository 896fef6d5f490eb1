// archivectl ghost: race two HCRP recordings of the same world tick by
// tick and show the gap between the runners.

package main

import (
	"context"
	"flag"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/formats/hcrp"
)

// ghostOptions are the flags of archivectl ghost.
type ghostOptions struct {
	json bool
}

// AddFlags declares the flags on fs.
func (o *ghostOptions) AddFlags(fs *flag.FlagSet) {
	fs.BoolVar(&o.json, "json", false, "print JSON")
}

func cmdGhost() *command {
	o := new(ghostOptions)
	return &command{
		name:    "ghost",
		args:    "ID1 ID2 [--json]",
		summary: "race two HCRP runs of the same world: the gap between the runners, splits",
		help: `Steps both recordings from tick 0 (a run starts when its recording starts),
following each recording's runner (entity 0), and reports the largest, mean
and final distance between them in blocks, checkpoint splits (negative: the
first run was ahead) and finish times.`,
		flags: o.AddFlags,
		run:   func(ctx context.Context, e *env, args []string) error { return runGhost(ctx, e, o, args) },
	}
}

func runGhost(ctx context.Context, e *env, o *ghostOptions, args []string) error {
	if len(args) != 2 {
		return usagef("ghost takes two recording IDs")
	}
	var recs [2]*archive.Recording
	var ids [2]string
	for i, ref := range args {
		r, err := e.recording(ref)
		if err != nil {
			return err
		}
		id := r.Manifest().ID
		if f := r.Manifest().Format; f != "hcrp" {
			return fmt.Errorf("%s is a %s recording; ghost races compare HCRP runs", id, f)
		}
		recs[i], ids[i] = r.Recording, id.String()
	}
	if wa, wb := recs[0].Meta().Session, recs[1].Meta().Session; wa != wb {
		fmt.Fprintf(e.stderr, "warning: the runs are of different worlds (%s, %s)\n", wa, wb)
	}
	g, err := hcrp.NewGhost(ctx, recs[0], recs[1])
	if err != nil {
		return err
	}
	defer g.Close()
	sum, err := g.Run()
	if err != nil {
		return err
	}
	if o.json {
		return writeJSON(e, map[string]any{"a": ids[0], "b": ids[1], "summary": sum})
	}
	w := e.stdout
	fmt.Fprintf(w, "run a: %s\nrun b: %s\n", ids[0], ids[1])
	fmt.Fprintf(w, "ticks: %d stepped, %d in both runs\n", sum.Ticks, sum.Both)
	fmt.Fprintf(w, "gap:   max %.2f blocks at tick %d, mean %.2f, final %.2f\n", sum.MaxGap, sum.MaxGapTick, sum.MeanGap, sum.FinalGap)
	fmt.Fprintf(w, "finish: a %s, b %s\n", runTime(sum.AFinish), runTime(sum.BFinish))
	if len(sum.Splits) > 0 {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "CHECKPOINT\tA\tB\tA-B")
		for _, s := range sum.Splits {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%+.3fs\n", s.Checkpoint, runTime(s.A), runTime(s.B), float64(s.Delta)/1000)
		}
		tw.Flush()
	}
	return nil
}

func runTime(ms int64) string {
	if ms < 0 {
		return "-"
	}
	return (time.Duration(ms) * time.Millisecond).String()
}
