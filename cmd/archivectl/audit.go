// archivectl audit: who changed what, when and why.

package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/internal/textsafe"
)

// auditOptions are the flags of archivectl audit.
type auditOptions struct {
	limit int
	json  bool
}

// AddFlags declares the flags on fs.
func (o *auditOptions) AddFlags(fs *flag.FlagSet) {
	fs.IntVar(&o.limit, "limit", 50, "at most `N` entries")
	fs.BoolVar(&o.json, "json", false, "print JSON")
}

func cmdAudit() *command {
	o := new(auditOptions)
	return &command{
		name: "audit", args: "[ID] [--limit N] [--json]",
		summary: "show the audit log: every ingest, flag, hold, takedown, prune, policy and token change",
		help: `Newest first. With a recording ID (or prefix), only that recording's
history. Entries are never rewritten: a flag given a new note shows both.`,
		flags: o.AddFlags,
		run:   func(ctx context.Context, e *env, args []string) error { return runAudit(ctx, e, o, args) },
	}
}

func runAudit(ctx context.Context, e *env, o *auditOptions, args []string) error {
	if len(args) > 1 {
		return usagef("audit takes at most one recording ID")
	}
	x, err := e.lib()
	if err != nil {
		return err
	}
	ref := ""
	if len(args) == 1 {
		ref = args[0]
	}
	es, err := x.Audit(ref, 0, o.limit)
	if err != nil {
		return err
	}
	if o.json {
		if es == nil {
			es = []archive.AuditEntry{}
		}
		return writeJSON(e, es)
	}
	for _, a := range es {
		line := fmt.Sprintf("%s  %-14s %-20s", fmtTime(a.At), a.Action, a.Who)
		if a.Recording != [16]byte{} {
			line += " " + a.Recording.String()[:8]
		}
		if a.Detail != "" {
			line += " " + a.Detail
		}
		if a.Reason != "" {
			line += ": " + a.Reason
		}
		if a.Node != "" {
			line += " (on node " + a.Node + ")"
		}
		fmt.Fprintln(e.stdout, textsafe.Line(line))
	}
	if len(es) == 0 {
		fmt.Fprintln(e.stderr, "no audit entries")
	}
	return nil
}
