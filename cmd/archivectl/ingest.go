// archivectl ingest: add native recordings to the archive.

package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/ingest"
	"github.com/replayarchive/replay/internal/textsafe"
	"github.com/replayarchive/replay/internal/units"
)

// ingestOptions are the flags of archivectl ingest.
type ingestOptions struct {
	json        bool
	followLinks bool
	follow      bool
	settle      string
}

// AddFlags declares the flags on fs.
func (o *ingestOptions) AddFlags(fs *flag.FlagSet) {
	fs.BoolVar(&o.json, "json", false, "print one JSON object per input")
	fs.BoolVar(&o.followLinks, "follow-links", false, "follow symbolic links that lead out of the directories given")
	fs.BoolVar(&o.follow, "follow", false, "follow the directories given: ingest each file once complete or idle for --settle, until interrupted")
	fs.StringVar(&o.settle, "settle", "10m", "with --follow, a file unchanged for `DUR` is ready even if not complete")
}

func cmdIngest() *command {
	o := new(ingestOptions)
	return &command{
		name:    "ingest",
		args:    "[--json] [--follow [--settle DUR]] PATH...",
		summary: "add recordings (files, or directories walked recursively)",
		help: `Each file's format is detected from its content, not its name. Per input one
line pairing it with its id: "ingested <id> <path>", "already archived <id>
<path>" (same sha256), "replaced <id> <path>" (a live recording that grew),
"skipped <path>: <why>" (a file of no known format inside a directory, a
link loop or a link out of the tree), "expired <path>" (older than the
retention policy's max age), "taken down <id> <path>: who, when, why",
"refused <path>: why" (it names a recording it may not replace) or
"failed <path>: <reason>". PATH "-" reads one file from standard input;
a named pipe is read. Warnings (a file cut short, a missing footer) follow
on stderr. The exit status is 5 when some inputs failed (the others are
still ingested). Progress goes to stderr when it runs long.

With --follow, the paths are directories to follow (recursively) until
interrupted, as a game server writes into them: each file is ingested once
it is complete (a teehistorian file ending with FINISH) or has not changed
for --settle (a server killed mid-game, other formats); .xz, .gz and .zst
files are looked through. One line per file as above, and a status line
on stderr at the start and every 30 s even when it is not a terminal;
with --json, JSON lines with "message_type" "ingest", "warning" and
"status" on stdout. See docs/live.md.`,
		access: createAccess,
		flags:  o.AddFlags,
		run:    func(ctx context.Context, e *env, args []string) error { return runIngest(ctx, e, o, args) },
	}
}

func runIngest(ctx context.Context, e *env, o *ingestOptions, args []string) error {
	if len(args) == 0 {
		return usagef("no paths given")
	}
	if o.follow {
		return runFollow(ctx, e, o, args) // follow.go
	}
	x, err := e.lib()
	if err != nil {
		return err
	}
	paths := make([]string, len(args))
	for i, a := range args {
		paths[i] = e.path(a)
	}
	prog := newProgress(e.stderr, "ingest")
	opts := replay.IngestOptions{By: e.who, Stdin: e.stdin, FollowOutside: o.followLinks, Progress: func(pr ingest.Progress) {
		prog.update(func() string {
			rate := float64(pr.BytesDone) / 1e6 / max(pr.Elapsed.Seconds(), 1e-9)
			return fmt.Sprintf("%d/%d inputs, %s/%s, %.1f MB/s", pr.Done, pr.Files, humanBytes(pr.BytesDone), humanBytes(pr.Bytes), rate)
		})
	}}
	failed := 0
	enc := json.NewEncoder(e.stdout)
	err = x.Ingest(ctx, paths, opts, func(r ingest.FileResult) {
		prog.clear()
		switch r.Outcome {
		case ingest.OutcomeFailed, ingest.OutcomeTakenDown, ingest.OutcomeRefused:
			failed++
		}
		if o.json {
			enc.Encode(r)
			return
		}
		line := r.Outcome.String()
		if r.ID != [16]byte{} {
			line += " " + r.ID.String()
		}
		line += " " + r.Path
		if r.Err != "" {
			line += ": " + strings.TrimPrefix(r.Err, r.Path+": ")
		}
		fmt.Fprintln(e.stdout, textsafe.Line(line))
		if r.Note != "" {
			fmt.Fprintf(e.stderr, "note: %s: %s\n", r.Path, textsafe.Line(r.Note))
		}
		for _, w := range r.Warnings {
			fmt.Fprintf(e.stderr, "warning: %s: %s\n", r.Path, textsafe.Line(w))
		}
	})
	prog.clear()
	if err != nil {
		return err
	}
	if failed > 0 {
		fmt.Fprintf(e.stderr, "%d of the inputs failed\n", failed)
		return errPartial
	}
	return nil
}

// progress prints a status line to stderr once work has run for a while,
// at most once a second.
type progress struct {
	w     interface{ Write([]byte) (int, error) }
	what  string
	start time.Time
	last  time.Time
	shown bool
}

func newProgress(w interface{ Write([]byte) (int, error) }, what string) *progress {
	return &progress{w: w, what: what, start: time.Now()}
}

// isTerminal reports whether w is a terminal; progress lines are only
// drawn there, so logs and pipes stay clean.
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func (p *progress) update(line func() string) {
	if !isTerminal(p.w) {
		return
	}
	now := time.Now()
	if now.Sub(p.start) < 2*time.Second || now.Sub(p.last) < time.Second {
		return
	}
	p.last = now
	p.shown = true
	fmt.Fprintf(p.w, "\r%s: %s\033[K", p.what, line())
}

func (p *progress) clear() {
	if p.shown {
		fmt.Fprint(p.w, "\r\033[K")
		p.shown = false
	}
}

// humanBytes prints n in binary units.
func humanBytes(n int64) string { return units.FormatBytes(n) }
