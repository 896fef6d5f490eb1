// archivectl search and reindex: find recordings and the moments in them.

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/internal/textsafe"
	"github.com/replayarchive/replay/internal/units"
	"github.com/replayarchive/replay/query"
	"github.com/replayarchive/replay/wire"
)

// searchOptions are the flags of archivectl search.
type searchOptions struct {
	json  bool
	limit int
}

// AddFlags declares the flags on fs.
func (o *searchOptions) AddFlags(fs *flag.FlagSet) {
	fs.BoolVar(&o.json, "json", false, "print JSON")
	fs.IntVar(&o.limit, "limit", 20, "at most `N` recordings")
}

func cmdSearch() *command {
	o := new(searchOptions)
	return &command{
		name:    "search",
		args:    "QUERY [--json] [--limit N]",
		summary: "find recordings and events (player:, map:, flag:, cmd:, after:, ...)",
		help: `Terms AND together (a space, or AND):
  player:NAME        a player, case-insensitive exact; player:kit* for a prefix
  player-id:ID       a player's id (account, userid, toon handle); moderators only
  map:NAME  server:NAME  format:NAME  session:ID  flag:NAME
  cmd:WORDS          console command text, e.g. cmd:kick or cmd:"ban 3"
  chat:WORDS         chat text
  after:DATE  before:DATE     started at/after, before; RFC 3339 or YYYY-MM-DD
  at:TIME            running then: at:2023-11-27T21:48 (the whole minute), UTC
                     unless zoned; a day, hour, minute or second as written
  during:FROM..TO    running at some time from FROM to TO (exclusive);
                     during:FROM.. (still running after), during:..TO
  longer:DUR  shorter:DUR     e.g. 90s, 5m, 2h, 2d, 2w
  held:true  flagged:true     held, or carrying any flag (false: not)
  id:PREFIX          a recording id or its prefix
  free words and "quoted phrases" match names, map, server, commands, chat
  -term              exclude
  a OR b             either; AND binds tighter: a b OR c is (a b) OR c
  ( )  -( )          group, exclude a group: (player:a OR player:b) -(cmd:kick OR cmd:ban)
OR and AND are operators as upper-case words only (or, "OR": words); groups
nest at most 8 deep. Quote the whole query for the shell.
A query has at most 2048 bytes, 32 terms and 8 prefix terms.
Each hit is a recording with the events that matched under it (tick, offset,
wall-clock time in UTC where the start is known, who, what) and a ready-to-run export command for a clip around each event.`,
		flags: o.AddFlags,
		run:   func(ctx context.Context, e *env, args []string) error { return runSearch(ctx, e, o, args) },
	}
}

// reindexOptions are the flags of archivectl reindex.
type reindexOptions struct {
	json bool
}

// AddFlags declares the flags on fs.
func (o *reindexOptions) AddFlags(fs *flag.FlagSet) {
	fs.BoolVar(&o.json, "json", false, "print JSON")
}

func cmdReindex() *command {
	o := new(reindexOptions)
	return &command{
		name:    "reindex",
		args:    "[--json]",
		summary: "rebuild the search index from the catalog",
		help: `The index is derived: it is kept up to date from the catalog's change log
by every command that changes the archive. reindex throws it away and builds
it again from the manifests, e.g. after the index directory was lost.`,
		flags:  o.AddFlags,
		access: writeAccess,
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) > 0 {
				return usagef("reindex takes no arguments")
			}
			x, err := e.lib()
			if err != nil {
				return err
			}
			start := time.Now()
			n, err := x.Reindex(ctx)
			if err != nil {
				return err
			}
			took := time.Since(start)
			if o.json {
				return writeJSON(e, map[string]any{"recordings": n, "took_ms": took.Milliseconds()})
			}
			fmt.Fprintf(e.stdout, "indexed %s in %s\n", plural(n, "recording", ""), took.Round(time.Millisecond))
			return nil
		},
	}
}

func runSearch(ctx context.Context, e *env, o *searchOptions, args []string) error {
	if len(args) == 0 {
		return usagef("no query given")
	}
	q := strings.Join(args, " ")
	if _, err := query.Parse(q); err != nil {
		var pe *query.ParseError
		if errors.As(err, &pe) {
			return usagef("%v\n  %s\n  %s^", err, q, strings.Repeat(" ", pe.Pos))
		}
		return usagef("%v", err)
	}
	x, err := e.lib()
	if err != nil {
		return err
	}
	res, err := x.Search(ctx, q, 0, o.limit)
	if err != nil {
		return err
	}
	if o.json {
		// The same shape as the HTTP API's search.
		return writeJSON(e, wire.SearchOf(x, q, res, ""))
	}
	w := e.stdout
	for _, h := range res.Hits {
		fmt.Fprintln(w, textsafe.Line(fmt.Sprintf("%s  %s  %s  %s  %s", h.ID, h.Format, fmtTime(h.Start), orDash(h.Map), listHead(h.Players, 8))))
		if len(h.Flags) > 0 {
			fmt.Fprintf(w, "    flags: %s\n", textsafe.Line(strings.Join(h.Flags, ", ")))
		}
		const showEvents = 5
		for i, ev := range h.Events {
			if i == showEvents {
				break
			}
			who := ev.Player
			if who == "" {
				who = "-"
			}
			fmt.Fprintln(w, textsafe.Line(fmt.Sprintf("    tick %-8d %-9s %-20s %-8s %-16s %s", ev.Tick, fmtOffset(ev.Time.Milliseconds()), eventAt(h.Start, ev.Time), ev.Kind, who, ev.Text)))
			fmt.Fprintf(w, "      %s\n", offerCommand(x, h, ev))
		}
		if shown := min(len(h.Events), showEvents); h.EventTotal > shown {
			fmt.Fprintf(w, "    … %s (--json lists up to %d)\n", plural(h.EventTotal-shown, "more matching event", ""), len(h.Events))
		}
	}
	fmt.Fprintf(e.stderr, "%s matched (%s)\n", plural(res.Total, "recording", ""), res.Took.Round(time.Microsecond))
	return nil
}

// offerCommand is what a hit suggests for an event: an export of a clip a
// few seconds either side of it where the format can clip (by offset,
// --to clamped to the recording's duration so it never runs past the
// end), else the frames around it.
func offerCommand(x *replay.Archive, h query.Hit, ev query.EventHit) string {
	id := h.ID[:8]
	from := max(ev.Time-replay.ClipMargin*time.Second, 0)
	to := ev.Time + replay.ClipMargin*time.Second
	if h.Duration > 0 {
		to = min(to, h.Duration.Truncate(time.Second))
		from = min(from, to)
	}
	if x.CanClip(h.Format) {
		return fmt.Sprintf("archivectl export %s --from %s --to %s -o clip-%s-%d%s", id, units.FormatDuration(from.Round(time.Second)),
			units.FormatDuration(to.Round(time.Second)), id, ev.Tick, replay.Extension(h.Format))
	}
	return fmt.Sprintf("archivectl frames %s --from %d --to %d   (%s cannot be clipped; export %s -o FILE gives the whole file)",
		id, ev.Tick, ev.Tick, h.Format, id)
}

// eventAt is the wall-clock time of an event at offset t of a recording
// that started at start, UTC to the second (RFC 3339) so a moderator can
// match it against a server's logs or a report; "-" when the start is not
// known.
func eventAt(start time.Time, t time.Duration) string {
	if start.IsZero() {
		return "-"
	}
	return start.Add(t).UTC().Format(time.RFC3339)
}

func fmtOffset(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	return fmt.Sprintf("%d:%02d:%02d", int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60)
}

// listHead joins the first n items, saying how many more there are.
func listHead(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s (+%d more)", strings.Join(items[:n], ", "), len(items)-n)
}
