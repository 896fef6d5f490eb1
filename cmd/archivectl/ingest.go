// archivectl ingest: add native recordings to the archive.

package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/replayarchive/replay/ingest"
)

func cmdIngest() *command {
	return &command{
		name:    "ingest",
		args:    "[--json] PATH...",
		summary: "add recordings (files, or directories walked recursively)",
		help: `Each file's format is detected from its content, not its name. Per input one
line: "ingested <id>", "already archived <id>" (same sha256), "replaced <id>"
(a live recording that grew), "skipped <path>" (a file of no known format
inside a directory) or "failed <path>: <reason>". Warnings (a file cut short,
a missing footer) follow on stderr. The exit status is 1 if any input failed;
the others are still ingested. Progress goes to stderr when it runs long.`,
		flags: func(fs *flag.FlagSet, o *opts) {
			fs.BoolVar(&o.json, "json", false, "print one JSON object per input")
		},
		run: runIngest,
	}
}

func runIngest(ctx context.Context, e *env, o *opts, args []string) error {
	if len(args) == 0 {
		return usagef("no paths given")
	}
	a, err := e.open()
	if err != nil {
		return err
	}
	prog := newProgress(e.stderr, "ingest")
	p := &ingest.Pipeline{Archive: a, Codecs: codecs(), Progress: func(pr ingest.Progress) {
		prog.update(func() string {
			rate := float64(pr.BytesDone) / 1e6 / max(pr.Elapsed.Seconds(), 1e-9)
			return fmt.Sprintf("%d/%d inputs, %s/%s, %.1f MB/s", pr.Done, pr.Files, humanBytes(pr.BytesDone), humanBytes(pr.Bytes), rate)
		})
	}}
	failed := 0
	enc := json.NewEncoder(e.stdout)
	err = p.Run(ctx, args, func(r ingest.FileResult) {
		prog.clear()
		if r.Outcome == ingest.OutcomeFailed {
			failed++
		}
		if o.json {
			enc.Encode(r)
			return
		}
		switch r.Outcome {
		case ingest.OutcomeFailed:
			fmt.Fprintf(e.stdout, "failed %s\n", r.Err)
		case ingest.OutcomeSkipped:
			fmt.Fprintf(e.stdout, "skipped %s: %s\n", r.Path, r.Err)
		default:
			fmt.Fprintf(e.stdout, "%s %s\n", r.Outcome, r.ID)
		}
		if r.Note != "" {
			fmt.Fprintf(e.stderr, "note: %s: %s\n", r.Path, r.Note)
		}
		for _, w := range r.Warnings {
			fmt.Fprintf(e.stderr, "warning: %s: %s\n", r.Path, w)
		}
	})
	prog.clear()
	if err != nil {
		return err
	}
	if err := syncIndex(ctx, e); err != nil {
		return fmt.Errorf("archived, but the search index could not be updated (run reindex): %w", err)
	}
	if failed > 0 {
		return errSilent
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

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
