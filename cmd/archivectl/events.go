// archivectl events: the searchable events of one recording (commands,
// chat, joins, votes...), in tick order, filtered by kind and tick range.

package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/internal/textsafe"
	"github.com/replayarchive/replay/wire"
)

// eventsOptions are the flags of archivectl events.
type eventsOptions struct {
	json  bool
	kinds stringList
	from  string
	to    string
	limit int
}

// AddFlags declares the flags on fs.
func (o *eventsOptions) AddFlags(fs *flag.FlagSet) {
	fs.BoolVar(&o.json, "json", false, "print JSON: the API's events answer ({\"events\": [...], \"total\": N})")
	fs.Var(&o.kinds, "kind", "only events of this `kind` (command, chat, join, vote...; case-insensitive; repeatable)")
	fs.StringVar(&o.from, "from", "", "first `TICK` (or offset like 1m04s)")
	fs.StringVar(&o.to, "to", "", "last `TICK` (inclusive; default: the end)")
	fs.IntVar(&o.limit, "limit", 0, "print at most `N` events (0: all); the total still counts all")
}

func cmdEvents() *command {
	o := new(eventsOptions)
	return &command{
		name:    "events",
		args:    "ID [--kind K] [--from T] [--to T] [--limit N] [--json]",
		summary: "list a recording's searchable events (commands, chat, joins, votes...)",
		help: `One line per event, in tick order: the tick, the offset from the start
(h:mm:ss), the wall-clock time in UTC where the start is known (RFC 3339, as
search prints it, "-" otherwise), the kind, who and what. The count goes to
stderr. --from and --to take ticks or offsets from the start (1m04s), as
frames and export do; --kind keeps the events of that kind (repeat it for
several). --json prints what GET /api/v1/recordings/ID/events answers:
{"events": [{"tick", "time_ms", "at", "kind", "player", "player_id", "text"}],
"total"}. These are the events search finds; frames decodes everything the
file holds.`,
		flags: o.AddFlags,
		run:   func(ctx context.Context, e *env, args []string) error { return runEvents(ctx, e, o, args) },
	}
}

func runEvents(ctx context.Context, e *env, o *eventsOptions, args []string) error {
	if len(args) != 1 {
		return usagef("events takes one recording ID")
	}
	if o.limit < 0 {
		return usagef("--limit: want 0 (all) or more")
	}
	rec, err := e.recording(args[0])
	if err != nil {
		return err
	}
	from, to, err := tickRange(rec, o.from, o.to)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	m := rec.Manifest()
	x, err := e.lib()
	if err != nil {
		return err
	}
	evs, err := x.Events(m.ID)
	if err != nil {
		return fmt.Errorf("events of %s: %w", m.ID, err)
	}
	if len(o.kinds) > 0 {
		kept := evs[:0]
		for _, ev := range evs {
			for _, k := range o.kinds {
				if strings.EqualFold(ev.Kind, k) {
					kept = append(kept, ev)
					break
				}
			}
		}
		evs = kept
	}
	limit := o.limit
	if limit == 0 {
		limit = len(evs)
	}
	out := wire.EventsOf(m, evs, formats.Ticks(from, to), limit)
	if o.json {
		return writeJSON(e, out)
	}
	w := bufio.NewWriterSize(e.stdout, 64<<10)
	for _, ev := range out.Events {
		who, at := ev.Player, ev.At
		if who == "" {
			who = "-"
		}
		if at == "" {
			at = "-"
		}
		fmt.Fprintln(w, textsafe.Line(fmt.Sprintf("tick %-8d %-9s %-20s %-8s %-16s %s", ev.Tick, fmtOffset(ev.TimeMS), at, ev.Kind, who, ev.Text)))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if len(out.Events) < out.Total {
		fmt.Fprintf(e.stderr, "%d of %s (--limit %d)\n", len(out.Events), plural(out.Total, "event", ""), o.limit)
	} else {
		fmt.Fprintln(e.stderr, plural(out.Total, "event", ""))
	}
	return nil
}
