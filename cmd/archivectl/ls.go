// archivectl ls: list the archived recordings.

package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"math"
	"slices"
	"strconv"
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
	sort    string
	reverse bool
	limit   int
	after   string
}

// AddFlags declares the flags on fs.
func (o *lsOptions) AddFlags(fs *flag.FlagSet) {
	fs.BoolVar(&o.json, "json", false, "print a JSON array of recordings (same fields as show --json)")
	fs.Var(&o.formats, "format", "only recordings of this `format` (repeatable)")
	fs.StringVar(&o.sort, "sort", "start", "order by `KEY`: start, duration, players or ingested, largest (newest) first")
	fs.BoolVar(&o.reverse, "reverse", false, "smallest (oldest) first")
	fs.BoolVar(&o.reverse, "r", false, "short for --reverse")
	fs.IntVar(&o.limit, "limit", 0, "at most `N` recordings (0: all); the cursor of the next page goes to stderr")
	fs.StringVar(&o.after, "after", "", "the page after `CURSOR`, as a previous ls --limit printed it (same --sort)")
}

func cmdLs() *command {
	o := new(lsOptions)
	return &command{
		name:    "ls",
		args:    "[--json] [--format F] [--sort KEY] [--reverse] [--limit N [--after CURSOR]]",
		summary: "list recordings (id, format, start, duration, players, map, where, flags, hold)",
		help: `Newest first by default. --sort orders by start, duration, players (how
many) or ingested (when it was archived), largest first; --reverse (-r)
gives smallest first. Ties go by id, so the order is total, and recordings
without a start time come last (first with --reverse) when sorted by start.

--limit N prints one page; when more follow, stderr ends with
"next page: --after CURSOR", to pass with the same --sort (and --reverse,
--format) for the next page. A cursor names the place of the last row
printed, not a count, so recordings archived or removed meanwhile do not
shift the pages. --json prints the page as a JSON array; the cursor goes
to stderr there too.

MARKS says first where the chunks are: local (on this disk alone, not
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
	key, ok := lsKeys[o.sort]
	if !ok {
		return usagef("--sort %q: want start, duration, players or ingested", o.sort)
	}
	if o.limit < 0 {
		return usagef("--limit: want 0 (all) or more")
	}
	var after *lsCursor
	if o.after != "" {
		c, err := parseLsCursor(o.after, o.sort)
		if err != nil {
			return usagef("--after: %v", err)
		}
		after = &c
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
	rows, next := lsPage(rows, key, o.reverse, after, o.limit)
	if next != nil {
		defer fmt.Fprintf(e.stderr, "next page: --after %s\n", next.String(o.sort))
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
	switch {
	case len(rows) == 0 && after != nil:
		fmt.Fprintf(e.stderr, "no recordings after that cursor\n")
	case len(rows) == 0:
		fmt.Fprintf(e.stderr, "no recordings in %s\n", e.archiveDir)
	}
	return nil
}

// lsKeys are ls's sort keys: each a recording's number to order by.
var lsKeys = map[string]func(m *archive.Manifest) int64{
	"start": func(m *archive.Manifest) int64 {
		if m.Meta.Start.IsZero() {
			return math.MinInt64 // no start: after every start, newest first
		}
		return m.Meta.Start.UnixNano()
	},
	"duration": func(m *archive.Manifest) int64 { return int64(m.Meta.Duration) },
	"players":  func(m *archive.Manifest) int64 { return int64(len(m.Meta.Players)) },
	"ingested": func(m *archive.Manifest) int64 { return m.Ingested.UnixNano() },
}

// lsCursor is a place in ls's order: the sort key's value and the id of
// the last row of a page.
type lsCursor struct {
	v  int64
	id string
}

// String is the cursor as --after takes it: KEY:VALUE:ID, so that a
// cursor of another order is refused rather than misread.
func (c lsCursor) String(key string) string { return fmt.Sprintf("%s:%d:%s", key, c.v, c.id) }

// parseLsCursor reads a cursor of the order key.
func parseLsCursor(s, key string) (lsCursor, error) {
	k, rest, ok := strings.Cut(s, ":")
	v, id, ok2 := strings.Cut(rest, ":")
	n, err := strconv.ParseInt(v, 10, 64)
	if !ok || !ok2 || err != nil || id == "" {
		return lsCursor{}, fmt.Errorf("%q is not a cursor ls printed (KEY:VALUE:ID)", s)
	}
	if k != key {
		return lsCursor{}, fmt.Errorf("the cursor is of --sort %s, not %s", k, key)
	}
	return lsCursor{n, id}, nil
}

// lsPage sorts rows by key (largest first, or smallest with reverse; ties
// by id the same way) and returns the page after the cursor (from the
// start without one) of at most limit rows (0: all), and the cursor of
// the next page when rows are left.
func lsPage(rows []*archive.Manifest, key func(*archive.Manifest) int64, reverse bool, after *lsCursor, limit int) ([]*archive.Manifest, *lsCursor) {
	order := func(a, b lsCursor) int {
		c := cmp.Compare(a.v, b.v)
		if c == 0 {
			c = strings.Compare(a.id, b.id)
		}
		if !reverse {
			c = -c
		}
		return c
	}
	at := func(m *archive.Manifest) lsCursor { return lsCursor{key(m), m.ID.String()} }
	slices.SortFunc(rows, func(a, b *archive.Manifest) int { return order(at(a), at(b)) })
	if after != nil {
		i, _ := slices.BinarySearchFunc(rows, *after, func(m *archive.Manifest, c lsCursor) int { return order(at(m), c) })
		if i < len(rows) && at(rows[i]) == *after {
			i++
		}
		rows = rows[i:]
	}
	if limit > 0 && len(rows) > limit {
		next := at(rows[limit-1])
		return rows[:limit], &next
	}
	return rows, nil
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
