// archivectl ingest: add native recordings to the archive.

package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sync"
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
	statusEvery string
}

// AddFlags declares the flags on fs.
func (o *ingestOptions) AddFlags(fs *flag.FlagSet) {
	fs.BoolVar(&o.json, "json", false, "print JSON lines: one per input (message_type ingest), and status lines on long runs")
	fs.BoolVar(&o.followLinks, "follow-links", false, "follow symbolic links that lead out of the directories given")
	fs.BoolVar(&o.follow, "follow", false, "follow the directories given: ingest each file once complete or idle for --settle, until interrupted")
	fs.StringVar(&o.settle, "settle", "10m", "with --follow, a file unchanged for `DUR` is ready even if not complete")
	fs.StringVar(&o.statusEvery, "status-every", "10s", "a status line every `DUR` when stderr is not a terminal or with --json (with --follow: while a file is being ingested, besides each rescan's)")
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
on stderr. The run ends with one summary line on stderr: "ingested 12
recordings (3 already archived, 1 skipped, 0 failed), 41.2 MB in 3.1s"
(replaced counts as ingested; expired as skipped; refused and taken down
as failed; MB are 10^6 bytes of the inputs read). The exit status is 5
when some inputs failed (the others are still ingested). Progress goes to stderr when it runs long: on a terminal
one line redrawn every second, otherwise (a log, a pipe) a status line
every --status-every (10s) naming the input being read. With --json,
stdout carries JSON lines with a "message_type" as restic's --json does:
"ingest" per input (its result's fields), "status" every --status-every
(seconds_elapsed, percent_done, total_files, files_done, total_bytes,
bytes_done, ingested, already_archived, failed, current_files); the
summary is then one JSON object on stderr, message_type "summary"
(ingested, already_archived, skipped, failed, bytes, seconds_elapsed).

With --follow, the paths are directories to follow (recursively) until
interrupted, as a game server writes into them: each file is ingested once
it is complete (a teehistorian file ending with FINISH) or has not changed
for --settle (a server killed mid-game, other formats); .xz, .gz and .zst
files are looked through. One line per file as above, and a status line
on stderr at the start and every 30 s even when it is not a terminal
(and every --status-every while a file is being ingested, naming it);
with --json, JSON lines with "message_type" "ingest", "warning" and
"status" on stdout. A grow or seal that fails (the archive cannot be
written: a full disk) is retried after a backoff of up to 30 s, and the
file counts as failed ("1 failed (1 retrying)") until the archive takes
it. See docs/live.md.`,
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
	every, err := parseStatusEvery(o.statusEvery)
	if err != nil {
		return err
	}
	x, err := e.lib()
	if err != nil {
		return err
	}
	paths := make([]string, len(args))
	for i, a := range args {
		paths[i] = e.path(a)
	}
	var mu sync.Mutex // lines are whole; st is shared with the status ticker
	var st ingestStatus
	st.start = time.Now()
	prog := newProgress(e.stderr, "ingest")
	opts := replay.IngestOptions{By: e.who, Stdin: e.stdin, FollowOutside: o.followLinks, Progress: func(pr ingest.Progress) {
		mu.Lock()
		defer mu.Unlock()
		st.p = pr
		prog.update(func() string {
			rate := float64(pr.BytesDone) / 1e6 / max(pr.Elapsed.Seconds(), 1e-9)
			return fmt.Sprintf("%d/%d inputs, %s/%s, %.1f MB/s", pr.Done, pr.Files, humanBytes(pr.BytesDone), humanBytes(pr.Bytes), rate)
		})
	}}
	enc := json.NewEncoder(e.stdout)
	stopStatus := func() {}
	if o.json || !isTerminal(e.stderr) {
		stop, stopped := make(chan struct{}), make(chan struct{})
		stopStatus = func() { close(stop); <-stopped }
		go ticks(stop, stopped, every, func() {
			mu.Lock()
			if o.json {
				enc.Encode(st.json())
			} else {
				fmt.Fprintln(e.stderr, textsafe.Line(st.line()))
			}
			mu.Unlock()
		})
	}
	err = x.Ingest(ctx, paths, opts, func(r ingest.FileResult) {
		mu.Lock()
		defer mu.Unlock()
		prog.clear()
		st.count(r)
		if o.json {
			enc.Encode(followResult{"ingest", r})
			return
		}
		printResult(e.stdout, e.stderr, r)
	})
	stopStatus()
	mu.Lock()
	defer mu.Unlock()
	prog.clear()
	if err != nil {
		return err
	}
	if o.json {
		if err := json.NewEncoder(e.stderr).Encode(st.summary()); err != nil {
			return fmt.Errorf("ingest: the summary: %w", err)
		}
	} else {
		fmt.Fprintln(e.stderr, st.summaryLine())
	}
	if st.failed > 0 {
		return errPartial
	}
	return nil
}

// ingestSummaryJSON is the summary of a plain ingest with --json: one
// JSON object on stderr (stdout holds the lines of the inputs).
type ingestSummaryJSON struct {
	MessageType string  `json:"message_type"` // "summary"
	Ingested    int     `json:"ingested"`     // new or replaced recordings
	Duplicates  int     `json:"already_archived"`
	Skipped     int     `json:"skipped"` // no known format in a directory, not followed, or expired
	Failed      int     `json:"failed"`  // failed, refused or taken down
	Bytes       int64   `json:"bytes"`   // of the inputs read
	Elapsed     float64 `json:"seconds_elapsed"`
}

// summary is the run's summary for --json.
func (s *ingestStatus) summary() ingestSummaryJSON {
	return ingestSummaryJSON{MessageType: "summary", Ingested: s.ingested, Duplicates: s.dups, Skipped: s.skipped,
		Failed: s.failed, Bytes: max(s.p.BytesDone, s.bytes), Elapsed: time.Since(s.start).Seconds()}
}

// summaryLine is the run's summary for a person: "ingested 12 recordings
// (3 already archived, 1 skipped, 0 failed), 41.2 MB in 3.1s".
func (s *ingestStatus) summaryLine() string {
	j := s.summary()
	return fmt.Sprintf("ingested %s (%d already archived, %d skipped, %d failed), %s in %s",
		plural(j.Ingested, "recording", ""), j.Duplicates, j.Skipped, j.Failed, decimalBytes(j.Bytes), fmtSeconds(time.Since(s.start)))
}

// decimalBytes prints n in decimal units to one decimal: "41.2 MB".
func decimalBytes(n int64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n)/unit, 0
	for v >= unit && i < 4 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %cB", v, "kMGTP"[i])
}

// fmtSeconds prints d as seconds to one decimal ("3.1s"), or as a Go
// duration to the second past a minute ("2m5s").
func fmtSeconds(d time.Duration) string {
	if d < time.Minute {
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return d.Round(time.Second).String()
}

// parseStatusEvery reads --status-every.
func parseStatusEvery(v string) (time.Duration, error) {
	every, err := parseDurationFlag("--status-every", v)
	if err == nil && every <= 0 {
		err = usagef("--status-every: must be positive")
	}
	return every, err
}

// ingestStatus is what the status lines of a plain ingest say: the
// pipeline's last progress report and the outcomes so far.
type ingestStatus struct {
	start                           time.Time
	p                               ingest.Progress
	ingested, dups, skipped, failed int
	bytes                           int64 // the inputs' native bytes, as their results say
}

// count adds one input's outcome.
func (s *ingestStatus) count(r ingest.FileResult) {
	s.bytes += r.NativeBytes
	switch r.Outcome {
	case ingest.OutcomeIngested, ingest.OutcomeReplaced:
		s.ingested++
	case ingest.OutcomeDup:
		s.dups++
	case ingest.OutcomeSkipped, ingest.OutcomeExpired:
		s.skipped++
	case ingest.OutcomeFailed, ingest.OutcomeTakenDown, ingest.OutcomeRefused:
		s.failed++
	}
}

// ingestStatusJSON is a plain ingest's "status" line (restic's status
// message is the model).
type ingestStatusJSON struct {
	MessageType  string   `json:"message_type"` // "status"
	Elapsed      float64  `json:"seconds_elapsed"`
	PercentDone  float64  `json:"percent_done"` // of the bytes, 0 to 1
	TotalFiles   int      `json:"total_files"`
	FilesDone    int      `json:"files_done"`
	TotalBytes   int64    `json:"total_bytes"`
	BytesDone    int64    `json:"bytes_done"`
	Ingested     int      `json:"ingested"`
	Duplicates   int      `json:"already_archived"`
	Failed       int      `json:"failed"`
	CurrentFiles []string `json:"current_files,omitempty"`
	// CurrentRead is how many bytes of the current file were read (it is
	// read twice: hashed, then split).
	CurrentRead int64 `json:"current_bytes_read,omitempty"`
}

func (s *ingestStatus) json() ingestStatusJSON {
	j := ingestStatusJSON{MessageType: "status", Elapsed: time.Since(s.start).Seconds(), TotalFiles: s.p.Files,
		FilesDone: s.p.Done, TotalBytes: s.p.Bytes, BytesDone: s.p.BytesDone, Ingested: s.ingested, Duplicates: s.dups, Failed: s.failed}
	if s.p.Bytes > 0 {
		j.PercentDone = float64(s.p.BytesDone) / float64(s.p.Bytes)
	}
	if s.p.Current != "" {
		j.CurrentFiles, j.CurrentRead = []string{s.p.Current}, s.p.CurrentRead
	}
	return j
}

// line is the status for a log.
func (s *ingestStatus) line() string {
	l := fmt.Sprintf("ingest: %d/%d inputs, %s/%s; %d ingested, %d already archived, %d failed; %v",
		s.p.Done, s.p.Files, humanBytes(s.p.BytesDone), humanBytes(s.p.Bytes), s.ingested, s.dups, s.failed,
		time.Since(s.start).Round(time.Second))
	if s.p.Current != "" {
		l += fmt.Sprintf("; reading %s (%s read)", s.p.Current, humanBytes(s.p.CurrentRead))
	}
	return l
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
