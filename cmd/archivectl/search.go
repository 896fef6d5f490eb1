// archivectl search and reindex: find recordings and the moments in them.

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/replayarchive/replay/query"
)

// clipMargin is how many ticks before and after an event the suggested
// clip command covers.
const clipMargin = 250

func cmdSearch() *command {
	return &command{
		name:    "search",
		args:    "QUERY [--json] [--limit N]",
		summary: "find recordings and events (player:, map:, flag:, cmd:, after:, ...)",
		help: `Terms AND together:
  player:NAME        a player, case-insensitive exact; player:kit* for a prefix
  player-id:ID       a player's id (account, userid, toon handle)
  map:NAME  server:NAME  format:NAME  session:ID  flag:NAME
  cmd:WORDS          console command text, e.g. cmd:kick or cmd:"ban 3"
  chat:WORDS         chat text
  after:DATE  before:DATE     RFC 3339 or YYYY-MM-DD
  longer:DUR  shorter:DUR     e.g. 90s, 5m, 2h
  free words and "quoted phrases" match names, map, server, commands, chat
  -term              exclude
Each hit is a recording with the events that matched under it (tick, time,
who, what) and a ready-to-run export command for a clip around each event.`,
		flags: func(fs *flag.FlagSet, o *opts) {
			fs.BoolVar(&o.json, "json", false, "print JSON")
			fs.IntVar(&o.limit, "limit", 20, "at most `N` recordings")
		},
		run: runSearch,
	}
}

func cmdReindex() *command {
	return &command{
		name:    "reindex",
		args:    "[--json]",
		summary: "rebuild the search index from the catalog",
		help: `The index is derived: it is kept up to date from the catalog's change log
by every command that changes the archive. reindex throws it away and builds
it again from the manifests, e.g. after the index directory was lost.`,
		flags: func(fs *flag.FlagSet, o *opts) { fs.BoolVar(&o.json, "json", false, "print JSON") },
		run: func(ctx context.Context, e *env, o *opts, args []string) error {
			if len(args) > 0 {
				return usagef("reindex takes no arguments")
			}
			a, err := e.open()
			if err != nil {
				return err
			}
			start := time.Now()
			if e.index != nil {
				e.index.Close()
				e.index = nil
			}
			ix, n, err := query.Rebuild(ctx, indexDir(e), a, query.Options{})
			if err != nil {
				return err
			}
			e.index = ix
			took := time.Since(start)
			if o.json {
				return writeJSON(e, map[string]any{"recordings": n, "took_ms": took.Milliseconds()})
			}
			fmt.Fprintf(e.stdout, "indexed %d recordings in %s\n", n, took.Round(time.Millisecond))
			return nil
		},
	}
}

func indexDir(e *env) string { return filepath.Join(e.archiveDir, "index") }

// openIndex opens the search index and brings it up to date with the
// catalog, rebuilding it if it is stale.
func (e *env) openIndex(ctx context.Context) (*query.Index, error) {
	if e.index != nil {
		return e.index, nil
	}
	a, err := e.open()
	if err != nil {
		return nil, err
	}
	ix, err := query.Open(indexDir(e))
	if err == nil {
		_, err = query.Sync(ctx, ix, a)
		if err != nil {
			ix.Close()
		}
	}
	if errors.Is(err, query.ErrStale) || errors.Is(err, query.ErrOldLayout) {
		fmt.Fprintf(e.stderr, "rebuilding the search index: %v\n", err)
		ix, _, err = query.Rebuild(ctx, indexDir(e), a, query.Options{})
	}
	if err != nil {
		return nil, fmt.Errorf("search index: %w", err)
	}
	e.index = ix
	return ix, nil
}

// syncIndex brings the search index up to date after a catalog change.
func syncIndex(ctx context.Context, e *env) error {
	if e.index != nil {
		a, err := e.open()
		if err != nil {
			return err
		}
		_, err = query.Sync(ctx, e.index, a)
		return err
	}
	_, err := e.openIndex(ctx)
	return err
}

type eventJSON struct {
	Tick   int64  `json:"tick"`
	TimeMS int64  `json:"time_ms"`
	Kind   string `json:"kind"`
	Player string `json:"player,omitempty"`
	Text   string `json:"text,omitempty"`
	Export string `json:"export"`
}

type hitJSON struct {
	ID         string      `json:"id"`
	Format     string      `json:"format"`
	Session    string      `json:"session,omitempty"`
	Start      string      `json:"start,omitempty"`
	DurationMS int64       `json:"duration_ms"`
	Map        string      `json:"map,omitempty"`
	Server     string      `json:"server,omitempty"`
	Players    []string    `json:"players"`
	Flags      []string    `json:"flags"`
	Events     []eventJSON `json:"events"`
	EventTotal int         `json:"event_total"`
}

func runSearch(ctx context.Context, e *env, o *opts, args []string) error {
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
	ix, err := e.openIndex(ctx)
	if err != nil {
		return err
	}
	res, err := ix.Search(ctx, q, o.limit)
	if err != nil {
		return err
	}
	hits := make([]hitJSON, len(res.Hits))
	for i, h := range res.Hits {
		hj := hitJSON{ID: h.ID, Format: h.Format, Session: h.Session, DurationMS: h.Duration.Milliseconds(),
			Map: h.Map, Server: h.Server, Players: nonNil(h.Players), Flags: nonNil(h.Flags),
			Events: []eventJSON{}, EventTotal: h.EventTotal}
		if !h.Start.IsZero() {
			hj.Start = fmtTime(h.Start)
		}
		for _, ev := range h.Events {
			hj.Events = append(hj.Events, eventJSON{Tick: ev.Tick, TimeMS: ev.Time.Milliseconds(), Kind: ev.Kind,
				Player: ev.Player, Text: ev.Text, Export: clipCommand(h, ev.Tick)})
		}
		hits[i] = hj
	}
	if o.json {
		return writeJSON(e, map[string]any{"query": q, "total": res.Total, "took_ms": float64(res.Took.Microseconds()) / 1000, "hits": hits})
	}
	w := e.stdout
	for _, h := range hits {
		fmt.Fprintf(w, "%s  %s  %s  %s  %s\n", h.ID, h.Format, orDash(h.Start), orDash(h.Map), listHead(h.Players, 8))
		if len(h.Flags) > 0 {
			fmt.Fprintf(w, "    flags: %s\n", strings.Join(h.Flags, ", "))
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
			fmt.Fprintf(w, "    tick %-8d %-9s %-8s %-16s %s\n", ev.Tick, fmtOffset(ev.TimeMS), ev.Kind, who, ev.Text)
			fmt.Fprintf(w, "      %s\n", ev.Export)
		}
		if shown := min(len(h.Events), showEvents); h.EventTotal > shown {
			fmt.Fprintf(w, "    … %d more matching events (--json lists up to %d)\n", h.EventTotal-shown, len(h.Events))
		}
	}
	fmt.Fprintf(e.stderr, "%d recordings matched (%s)\n", res.Total, res.Took.Round(time.Microsecond))
	return nil
}

// clipCommand is the export command for a clip around tick.
func clipCommand(h query.Hit, tick int64) string {
	from := max(tick-clipMargin, 0)
	return fmt.Sprintf("archivectl export %s --from %d --to %d -o clip-%s-%d", h.ID[:8], from, tick+clipMargin, h.ID[:8], tick)
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
