// archivectl ingest --follow DIR... and serve --watch DIR: follow game
// servers' directories (ingest/watch) and ingest each file once it is
// complete or idle for --settle, through the same library call as a plain
// ingest.

package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/ingest"
	"github.com/replayarchive/replay/ingest/watch"
	"github.com/replayarchive/replay/internal/textsafe"
)

// follower ingests the files a watcher hands over and keeps counts for
// the status lines.
type follower struct {
	x      *replay.Archive
	who    replay.Actor
	dirs   []string
	settle time.Duration
	// result, warn and status report; each is called from the watcher's
	// goroutine only.
	result func(ingest.FileResult)
	live   func(*ingest.Grown) // a live recording started
	warn   func(path, msg string)
	status func(followStatus)

	// every is how often a status is reported while a file is being
	// ingested and the watcher, busy with it, reports none (default 10 s).
	every time.Duration
	// rescan and retryMax are the watcher's watch.Options.Rescan and
	// RetryMax (zero: its defaults); tests shorten them.
	rescan, retryMax time.Duration

	start time.Time
	// mu guards what follows: the watcher's goroutine changes it, the
	// busy-status ticker reads it.
	mu                 sync.Mutex
	ingested, failed   int
	dups, ingestedSize int64
	last               watch.Status // the watcher's last report
	lastAt             time.Time
	current            string // the file being ingested or grown
	scanned            bool   // the watcher has reported once
}

// followStatus is one periodic status report: restic's "status" messages
// are the model for its JSON.
type followStatus struct {
	MessageType string `json:"message_type"` // "status"
	Dirs        int    `json:"dirs"`
	Files       int    `json:"files"`
	Waiting     int    `json:"waiting"`
	Bytes       int64  `json:"bytes"`
	Ingested    int    `json:"ingested"`
	Duplicates  int64  `json:"already_archived"`
	Failed      int    `json:"failed"`
	// Retrying counts the failed files whose grow or seal the watcher
	// retries (the archive could not be written: watch.Status.Failing);
	// they are in Failed until the archive takes them.
	Retrying int     `json:"retrying,omitempty"`
	Elapsed  float64 `json:"seconds_elapsed"`
	// CurrentFiles is the file being ingested, in a status reported while
	// the watcher is busy with it.
	CurrentFiles []string `json:"current_files,omitempty"`
	// FirstScan says the first scan has not ended: files, waiting and
	// bytes are not known yet.
	FirstScan bool `json:"first_scan,omitempty"`
}

// followResult is one ingested (or failed) file as a JSON line.
type followResult struct {
	MessageType string `json:"message_type"` // "ingest"
	ingest.FileResult
}

// run watches until ctx is done.
func (f *follower) run(ctx context.Context) error {
	f.start = time.Now()
	f.lastAt = f.start
	f.last = watch.Status{Dirs: len(f.dirs)}
	f.scanned = false
	stop, stopped := make(chan struct{}), make(chan struct{})
	go f.busyStatus(stop, stopped)
	defer func() { close(stop); <-stopped }()
	return watch.Run(ctx, watch.Options{
		Dirs:     f.dirs,
		Settle:   f.settle,
		Rescan:   f.rescan,
		RetryMax: f.retryMax,
		Complete: watch.CodecComplete(codecsOf(f.x)),
		Warn:     f.warn,
		Grew:     f.grew,
		Ready: func(ctx context.Context, file watch.File) error {
			f.working(file.Path)
			defer f.working("")
			// A live recording is sealed; any other file is ingested whole.
			g, err := f.x.Grow(ctx, file.Path, true, f.who, func(r ingest.FileResult) {
				f.mu.Lock()
				defer f.mu.Unlock()
				switch r.Outcome {
				case ingest.OutcomeIngested, ingest.OutcomeReplaced:
					f.ingested++
					f.ingestedSize += r.NativeBytes
				case ingest.OutcomeDup:
					f.dups++
				case ingest.OutcomeFailed, ingest.OutcomeTakenDown, ingest.OutcomeRefused:
					f.failed++
				}
				f.result(r)
			})
			if err != nil {
				f.fail(ctx, file.Path, err)
				return err
			}
			f.grown(g)
			return nil
		},
		Status: func(s watch.Status) {
			f.mu.Lock()
			f.last, f.lastAt, f.scanned = s, time.Now(), true
			st := f.statusLocked()
			f.mu.Unlock()
			f.status(st)
		},
	})
}

// statusLocked is the status to report now; f.mu is held.
func (f *follower) statusLocked() followStatus {
	s := f.last
	return followStatus{MessageType: "status", Dirs: s.Dirs, Files: s.Files, Waiting: s.Waiting, Bytes: s.Bytes,
		Ingested: f.ingested, Duplicates: f.dups, Failed: f.failed + s.Failing, Retrying: s.Failing,
		Elapsed: time.Since(f.start).Seconds(), FirstScan: !f.scanned}
}

// fail warns of a grow or seal of path that failed. The watcher retries
// it and counts it as failing (watch.Status.Failing) until one succeeds.
func (f *follower) fail(ctx context.Context, path string, err error) {
	if ctx.Err() == nil { // else stopping: not the file's failure
		f.warn(path, err.Error()+" (retried; the recording catches up once the archive can be written)")
	}
}

// working records the file the watcher's goroutine is busy with ("" when
// done).
func (f *follower) working(path string) {
	f.mu.Lock()
	f.current = path
	f.mu.Unlock()
}

// busyStatus reports a status every f.every while the watcher, busy
// ingesting a file (a server's history of a thousand games is handed over
// by the first scan, before its first status), reports none, naming the
// file: long work shows progress in a log too. It returns when stop is
// closed, closing stopped.
func (f *follower) busyStatus(stop <-chan struct{}, stopped chan<- struct{}) {
	every := cmp.Or(f.every, 10*time.Second)
	ticks(stop, stopped, every, func() {
		f.mu.Lock()
		if f.current == "" || time.Since(f.lastAt) < every {
			f.mu.Unlock()
			return
		}
		f.lastAt = time.Now()
		st := f.statusLocked()
		st.CurrentFiles = []string{f.current}
		f.mu.Unlock()
		f.status(st)
	})
}

// ticks calls fn every d until stop is closed, then closes stopped.
func ticks(stop <-chan struct{}, stopped chan<- struct{}, d time.Duration, fn func()) {
	defer close(stopped)
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			fn()
		}
	}
}

// grew extends the live recording of a file that grew (watch.Options.Grew).
func (f *follower) grew(ctx context.Context, file watch.File) (live, done bool, err error) {
	f.working(file.Path)
	g, err := f.x.Grow(ctx, file.Path, false, f.who, nil)
	f.working("")
	if err != nil {
		f.fail(ctx, file.Path, err)
		return false, false, err
	}
	f.grown(g)
	switch g.Action {
	case ingest.GrowNotLive:
		return false, false, nil
	case ingest.GrowSealed, ingest.GrowDone:
		return true, true, nil
	}
	return true, false, nil
}

// grown reports a live recording that started or was sealed (as an
// ingest), and a file refused as live.
func (f *follower) grown(g *ingest.Grown) {
	if g == nil {
		return
	}
	switch g.Action {
	case ingest.GrowNotLive:
		if g.Warn {
			f.warn(g.Path, g.Why)
		}
	case ingest.GrowStarted:
		f.live(g)
	case ingest.GrowSealed:
		// Sealed is when the file is archived for good: reported as an
		// ingest, as a file that was never live is.
		f.mu.Lock()
		f.ingested++
		f.ingestedSize += g.NativeBytes
		f.mu.Unlock()
		r := ingest.FileResult{Path: g.Path, Outcome: ingest.OutcomeIngested, ID: g.ID, NativeBytes: g.NativeBytes,
			Warnings: g.Warnings, Note: "live recording sealed"}
		if g.Manifest != nil {
			r.Format, r.StoredBytes = g.Manifest.Format, g.Manifest.StoredBytes
		}
		f.result(r)
	}
}

// codecsOf lists the archive's codecs in detection order.
func codecsOf(x *replay.Archive) []formats.Codec {
	var cs []formats.Codec
	for _, name := range x.Formats() {
		if c := x.Codec(name); c != nil {
			cs = append(cs, c)
		}
	}
	return cs
}

// line is a status report for people.
func (s followStatus) line() string {
	dirs := "directories"
	if s.Dirs == 1 {
		dirs = "directory"
	}
	files := fmt.Sprintf("%d files (%s), %d waiting", s.Files, humanBytes(s.Bytes), s.Waiting)
	if s.FirstScan {
		files = "first scan"
	}
	failed := fmt.Sprintf("%d failed", s.Failed)
	if s.Retrying > 0 {
		failed += fmt.Sprintf(" (%d retrying)", s.Retrying)
	}
	l := fmt.Sprintf("following %d %s: %s; %d ingested, %d already archived, %s; up %v",
		s.Dirs, dirs, files, s.Ingested, s.Duplicates, failed, time.Duration(s.Elapsed*float64(time.Second)).Round(time.Second))
	if len(s.CurrentFiles) > 0 {
		l += "; ingesting " + strings.Join(s.CurrentFiles, ", ")
	}
	return l
}

// parseSettle reads --settle (default watch.DefaultSettle).
func parseSettle(v string) (time.Duration, error) {
	if v == "" {
		return watch.DefaultSettle, nil
	}
	d, err := parseDurationFlag("--settle", v)
	if err == nil && d <= 0 {
		err = usagef("--settle: must be positive")
	}
	return d, err
}

// checkDirs refuses what is not a directory before anything starts.
func checkDirs(flag string, dirs []string) error {
	for _, d := range dirs {
		st, err := os.Stat(d)
		if err != nil {
			return usagef("%s: %v", flag, err)
		}
		if !st.IsDir() {
			return usagef("%s: %s is not a directory", flag, d)
		}
	}
	return nil
}

// runFollow is archivectl ingest --follow DIR...: it runs until
// interrupted, one line per file on stdout and a status line every
// rescan on stderr (JSON lines on stdout with --json).
func runFollow(ctx context.Context, e *env, o *ingestOptions, args []string) error {
	settle, err := parseSettle(o.settle)
	if err != nil {
		return err
	}
	every, err := parseStatusEvery(o.statusEvery)
	if err != nil {
		return err
	}
	dirs := make([]string, len(args))
	for i, a := range args {
		dirs[i] = e.path(a)
	}
	if err := checkDirs("--follow", dirs); err != nil {
		return err
	}
	x, err := e.lib()
	if err != nil {
		return err
	}
	var mu sync.Mutex // JSON lines and text lines are whole
	enc := json.NewEncoder(e.stdout)
	f := &follower{x: x, who: e.who, dirs: dirs, settle: settle, every: every}
	f.result = func(r ingest.FileResult) {
		mu.Lock()
		defer mu.Unlock()
		if o.json {
			enc.Encode(followResult{"ingest", r})
			return
		}
		printResult(e.stdout, e.stderr, r)
	}
	f.live = func(g *ingest.Grown) {
		mu.Lock()
		defer mu.Unlock()
		if o.json {
			enc.Encode(followLive{"live", g.Action, g.ID, g.Path, g.NativeBytes, g.Warnings})
			return
		}
		printLive(e.stdout, g)
	}
	f.warn = func(path, msg string) {
		mu.Lock()
		defer mu.Unlock()
		if o.json {
			enc.Encode(map[string]string{"message_type": "warning", "path": path, "message": msg})
			return
		}
		fmt.Fprintf(e.stderr, "warning: %s\n", textsafe.Line(strings.TrimPrefix(path+": "+msg, ": ")))
	}
	f.status = func(s followStatus) {
		mu.Lock()
		defer mu.Unlock()
		if o.json {
			enc.Encode(s)
			return
		}
		fmt.Fprintln(e.stderr, s.line())
	}
	if !o.json {
		fmt.Fprintf(e.stderr, "following %s (ready when complete or idle for %v; Ctrl-C stops)\n", strings.Join(dirs, ", "), settle)
	}
	if err := f.run(ctx); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failed > 0 || f.last.Failing > 0 {
		return errPartial
	}
	return nil
}

// followLive is a live recording that started, as a JSON line.
type followLive struct {
	MessageType string            `json:"message_type"` // "live"
	Action      ingest.GrowAction `json:"action"`       // "started"
	ID          uuid.UUID         `json:"id"`
	Path        string            `json:"path"`
	NativeBytes int64             `json:"native_bytes"`
	Warnings    []string          `json:"warnings,omitempty"`
}

// printLive prints a live recording that started.
func printLive(stdout io.Writer, g *ingest.Grown) {
	fmt.Fprintln(stdout, textsafe.Line(fmt.Sprintf("live %s %s %s (%d bytes)", g.Action, g.ID, g.Path, g.NativeBytes)))
}

// printResult prints one input's outcome as plain ingest does.
func printResult(stdout, stderr io.Writer, r ingest.FileResult) {
	line := r.Outcome.String()
	if r.ID != [16]byte{} {
		line += " " + r.ID.String()
	}
	line += " " + r.Path
	if r.Err != "" {
		line += ": " + strings.TrimPrefix(r.Err, r.Path+": ")
	}
	fmt.Fprintln(stdout, textsafe.Line(line))
	if r.Note != "" {
		fmt.Fprintf(stderr, "note: %s: %s\n", r.Path, textsafe.Line(r.Note))
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(stderr, "warning: %s: %s\n", r.Path, textsafe.Line(w))
	}
}

// startWatch runs serve --watch's follower in the server's process until
// ctx is done, logging to log; the returned wait blocks until it stopped.
func startWatch(ctx context.Context, x *replay.Archive, dirs []string, settle time.Duration, log *slog.Logger) (wait func()) {
	f := &follower{x: x, who: replay.Actor{Name: "watch"}, dirs: dirs, settle: settle}
	f.result = func(r ingest.FileResult) {
		attrs := []any{"path", r.Path, "outcome", r.Outcome.String(), "id", r.ID, "bytes", r.NativeBytes}
		if r.Note != "" {
			attrs = append(attrs, "note", r.Note)
		}
		if r.Err != "" {
			log.Warn("watch: ingest", append(attrs, "err", r.Err)...)
		} else {
			log.Info("watch: ingest", attrs...)
		}
		for _, w := range r.Warnings {
			log.Warn("watch: ingest", "path", r.Path, "warning", w)
		}
	}
	f.live = func(g *ingest.Grown) {
		log.Info("watch: live recording", "path", g.Path, "action", string(g.Action), "id", g.ID, "bytes", g.NativeBytes)
	}
	f.warn = func(path, msg string) { log.Warn("watch", "path", path, "msg", msg) }
	f.status = func(s followStatus) {
		log.Info("watch: status", "dirs", s.Dirs, "files", s.Files, "waiting", s.Waiting, "bytes", s.Bytes,
			"ingested", s.Ingested, "already_archived", s.Duplicates, "failed", s.Failed, "retrying", s.Retrying, "current_files", s.CurrentFiles)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := f.run(ctx); err != nil {
			log.Error("watch", "err", err)
		}
	}()
	return func() { <-done }
}
