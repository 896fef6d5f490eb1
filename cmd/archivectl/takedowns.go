// archivectl takedowns: the files refused at ingest, and lifting a takedown.

package main

import (
	"context"
	"flag"
	"fmt"
	"text/tabwriter"

	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/internal/textsafe"
)

// takedownsOptions are the flags of archivectl takedowns.
type takedownsOptions struct {
	json   bool
	reason string
}

// AddFlags declares the flags on fs.
func (o *takedownsOptions) AddFlags(fs *flag.FlagSet) {
	fs.BoolVar(&o.json, "json", false, "print JSON")
	fs.StringVar(&o.reason, "reason", "", "why the takedown is lifted (lift; required)")
}

func cmdTakedowns() *command {
	o := new(takedownsOptions)
	return &command{
		name: "takedowns", args: "[--json] | lift SHA256|ID --reason TEXT",
		summary: "list taken-down files (refused at ingest), or lift a takedown",
		help: `'archivectl delete ID --reason TEXT' takes a recording down and remembers its
file's sha256: the same bytes are refused at ingest from then on. This
lists those takedowns (who, when, why); 'takedowns lift' lets the bytes in
again (an admin's decision, recorded in the audit log).`,
		flags: o.AddFlags,
		run:   func(ctx context.Context, e *env, args []string) error { return runTakedowns(ctx, e, o, args) },
	}
}

func runTakedowns(ctx context.Context, e *env, o *takedownsOptions, args []string) error {
	if len(args) > 0 && args[0] == "lift" {
		if len(args) != 2 {
			return usagef("takedowns lift takes a sha256 or a recording id")
		}
		if o.reason == "" {
			return usagef("--reason is required")
		}
		e.access = writeAccess
		x, err := e.lib()
		if err != nil {
			return err
		}
		t, err := x.LiftTakedown(ctx, e.who, args[1], o.reason)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "lifted the takedown of %s (sha256 %s…): its bytes can be ingested again\n", t.ID, t.SHA256[:16])
		return nil
	}
	if len(args) > 0 {
		return usagef("takedowns takes no arguments, or 'lift SHA256|ID'")
	}
	x, err := e.lib()
	if err != nil {
		return err
	}
	ts, err := x.Takedowns()
	if err != nil {
		return err
	}
	if o.json {
		if ts == nil {
			ts = []archive.Takedown{}
		}
		return writeJSON(e, ts)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SHA256\tRECORDING\tFORMAT\tWHEN\tBY\tWHY")
	for _, t := range ts {
		fmt.Fprintf(tw, "%s…\t%s\t%s\t%s\t%s\t%s\n", t.SHA256[:16], t.ID.String()[:8], t.Format, fmtTime(t.At),
			textsafe.Line(t.By), textsafe.Line(t.Reason))
	}
	return tw.Flush()
}
