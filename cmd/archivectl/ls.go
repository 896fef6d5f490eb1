// archivectl ls: list the archived recordings.

package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/internal/textsafe"
	"github.com/replayarchive/replay/wire"
)

// lsOptions are the flags of archivectl ls.
type lsOptions struct {
	json    bool
	formats stringList
}

// AddFlags declares the flags on fs.
func (o *lsOptions) AddFlags(fs *flag.FlagSet) {
	fs.BoolVar(&o.json, "json", false, "print a JSON array of recordings (same fields as show --json)")
	fs.Var(&o.formats, "format", "only recordings of this `format` (repeatable)")
}

func cmdLs() *command {
	o := new(lsOptions)
	return &command{
		name:    "ls",
		args:    "[--json] [--format F]",
		summary: "list recordings (id, format, start, duration, players, map, where, flags, hold)",
		help: `MARKS says first where the chunks are: local (on this disk alone, not
uploaded yet), remote (in the bucket) or both (in the bucket, and all of
it in the local chunk cache); then held and the flags. --json gives it as
"location".`,
		flags: o.AddFlags,
		run:   func(ctx context.Context, e *env, args []string) error { return runLs(ctx, e, o, args) },
	}
}

func runLs(ctx context.Context, e *env, o *lsOptions, args []string) error {
	if len(args) > 0 {
		return usagef("ls takes no arguments")
	}
	if err := replay.CheckFormats(o.formats); err != nil {
		return usagef("--format: %v", err)
	}
	x, err := e.lib()
	if err != nil {
		return err
	}
	var rows []*archive.Manifest
	err = x.List(ctx, func(m *archive.Manifest) error {
		if len(o.formats) == 0 || contains(o.formats, m.Format) {
			rows = append(rows, m)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if o.json {
		out := make([]wire.Recording, len(rows))
		for i, m := range rows {
			audit, err := x.Audit(m.ID.String(), 0, 100)
			if err != nil {
				return err
			}
			out[i] = wire.RecordingOf(x, m, audit)
		}
		return writeJSON(e, out)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tFORMAT\tSTART\tDURATION\tPLAYERS\tMAP\tSIZE\tMARKS")
	for _, m := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", m.ID, m.Format, fmtTime(m.Meta.Start),
			fmtDuration(m.Meta.Duration), len(m.Meta.Players), trunc(textsafe.Line(m.Meta.Map), 24), humanBytes(m.NativeBytes), textsafe.Line(strings.TrimSpace(x.Location(m)+" "+marks(m))))
	}
	tw.Flush()
	if len(rows) == 0 {
		fmt.Fprintf(e.stderr, "no recordings in %s\n", e.archiveDir)
	}
	return nil
}

func marks(m *archive.Manifest) string {
	var s []string
	if m.Hold != nil {
		s = append(s, "held")
	}
	if f := m.AllFlags(); len(f) > 0 {
		s = append(s, "flags:"+strings.Join(f, ","))
	}
	return strings.Join(s, " ")
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func fmtDuration(d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return d.Round(time.Second).String()
}

func trunc(s string, n int) string {
	if s == "" {
		return "-"
	}
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
