// archivectl takedowns: the takedowns (pending purge or purged), undoing
// one within its grace period, purging what is due, and lifting one.

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"text/tabwriter"

	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/internal/textsafe"
	"github.com/replayarchive/replay/wire"
)

// takedownsOptions are the flags of archivectl takedowns.
type takedownsOptions struct {
	json   bool
	reason string
}

// AddFlags declares the flags on fs.
func (o *takedownsOptions) AddFlags(fs *flag.FlagSet) {
	fs.BoolVar(&o.json, "json", false, "print JSON")
	fs.StringVar(&o.reason, "reason", "", "why (undo, lift; required for lift)")
}

func cmdTakedowns() *command {
	o := new(takedownsOptions)
	return &command{
		name: "takedowns", args: "[--json] | undo ID [--reason TEXT] | purge [ID...] | lift SHA256|ID --reason TEXT",
		summary: "list takedowns; undo one within its grace period, purge what is due, or lift one",
		help: `'archivectl delete ID --reason TEXT' takes a recording down: hidden at once,
its file's bytes and its identity refused at ingest, its bytes kept for the
grace period (--grace, default 7d). This lists the takedowns: who, when,
why, and their state (pending purge at a time, or purged).

  undo ID     restore a recording taken down within its grace period
              (a moderator's decision, in the audit log)
  purge       delete the bytes of takedowns whose grace period is over
              (serve and prune do it too); with IDs, of those at once
  lift ID     let a purged takedown's bytes and identity in again (an
              admin's decision, in the audit log)`,
		flags: o.AddFlags,
		run:   func(ctx context.Context, e *env, args []string) error { return runTakedowns(ctx, e, o, args) },
	}
}

func runTakedowns(ctx context.Context, e *env, o *takedownsOptions, args []string) error {
	if len(args) == 0 {
		return listTakedowns(e, o)
	}
	switch args[0] {
	case "undo":
		return undoTakedown(ctx, e, o, args[1:])
	case "purge":
		return purgeTakedowns(ctx, e, o, args[1:])
	case "lift":
		return liftTakedown(ctx, e, o, args[1:])
	}
	return usagef("takedowns takes no arguments, or undo ID, purge [ID...], lift SHA256|ID")
}

func listTakedowns(e *env, o *takedownsOptions) error {
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
	fmt.Fprintln(tw, "SHA256\tRECORDING\tFORMAT\tWHEN\tSTATE\tBY\tWHY")
	for _, t := range ts {
		fmt.Fprintf(tw, "%s…\t%s\t%s\t%s\t%s\t%s\t%s\n", t.SHA256[:16], t.ID.String()[:8], t.Format, fmtTime(t.At),
			takedownState(t), textsafe.Line(t.By), textsafe.Line(t.Reason))
	}
	return tw.Flush()
}

// takedownState says where a takedown stands, for the list.
func takedownState(t archive.Takedown) string {
	if t.State == archive.TakedownPending {
		return "pending purge at " + fmtTime(t.PurgeAt)
	}
	return "purged"
}

func undoTakedown(ctx context.Context, e *env, o *takedownsOptions, args []string) error {
	if len(args) != 1 {
		return usagef("takedowns undo takes one recording id")
	}
	e.access = writeAccess
	x, err := e.lib()
	if err != nil {
		return err
	}
	m, t, err := x.UndoTakedown(ctx, e.who, args[0], o.reason)
	if err != nil {
		return err
	}
	if o.json {
		return writeJSON(e, wire.Restored{Restored: m.ID.String(), Takedown: t})
	}
	fmt.Fprintf(e.stdout, "restored %s (taken down by %s at %s): listed, searchable and readable again\n",
		m.ID, textsafe.Line(t.By), fmtTime(t.At))
	return nil
}

func purgeTakedowns(ctx context.Context, e *env, o *takedownsOptions, refs []string) error {
	e.access = writeAccess
	x, err := e.lib()
	if err != nil {
		return err
	}
	purged, err := x.PurgeTakedowns(ctx, e.who, refs...)
	var sweep *archive.SweepError
	if err != nil && !errors.As(err, &sweep) {
		return err
	}
	if o.json {
		if purged == nil {
			purged = []archive.Takedown{}
		}
		if jerr := writeJSON(e, map[string]any{"purged": purged}); jerr != nil {
			return jerr
		}
	} else {
		for _, t := range purged {
			fmt.Fprintf(e.stdout, "purged %s (sha256 %s…): its bytes are gone, its takedown stays\n", t.ID, t.SHA256[:16])
		}
		if len(purged) == 0 {
			fmt.Fprintln(e.stdout, "no takedown is due for its purge")
		}
	}
	if sweep != nil {
		fmt.Fprintf(e.stderr, "warning: %v\n", sweep)
		return errSilent
	}
	return nil
}

func liftTakedown(ctx context.Context, e *env, o *takedownsOptions, args []string) error {
	if len(args) != 1 {
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
	t, err := x.LiftTakedown(ctx, e.who, args[0], o.reason)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "lifted the takedown of %s (sha256 %s…): its bytes and identity can be ingested again\n", t.ID, t.SHA256[:16])
	return nil
}
