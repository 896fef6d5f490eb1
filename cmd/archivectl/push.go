// archivectl push --follow DIR... --to URL: the agent that runs on each
// game server's host and streams the recordings its game servers write,
// as they grow, to an archive on another host (the push API,
// /api/v1/push/{source...}). It follows the directories with the same
// watcher as ingest --follow (ingest/watch); the server holds the truth
// of what it has of each file. While the archive is away, the bytes it
// lacks are copied to a bounded spool on local disk (spool), so that a
// file the game server deletes or rotates meanwhile is not lost.

package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/all"
	"github.com/replayarchive/replay/ingest/watch"
	"github.com/replayarchive/replay/internal/textsafe"
	"github.com/replayarchive/replay/wire"
)

// Bounds of the push protocol and of the agent.
const (
	// pushChunk is the most the agent sends in one request (the server
	// takes up to 16 MiB), and the size of its one read buffer; minChunk
	// the least it goes down to when requests are refused as too large.
	pushChunk = 4 << 20
	minChunk  = 64 << 10
	// maxSourceSegments and maxSegmentLen bound a source name.
	maxSourceSegments = 8
	maxSegmentLen     = 128
	// pushConflicts bounds the conflicts (409) one push of a file meets
	// before it gives up until its next retry: a server and an agent that
	// disagree do not loop.
	pushConflicts = 16
	// pushIdle is how long a request may go without progress (no body
	// byte taken, no answer byte read) before it is abandoned.
	pushIdle = 60 * time.Second
	// pushAnswerWait is how long the server may take to answer once the
	// body is sent: a final call may ingest a whole file first.
	pushAnswerWait = 5 * time.Minute
	// pushConnect bounds a connection's set-up (TCP and TLS).
	pushConnect = 15 * time.Second
)

// pushRetryMin and pushRetryMax bound the backoff after the archive could
// not be reached (and the watcher's per-file backoff); tests shorten them.
var (
	pushRetryMin = time.Second
	pushRetryMax = watch.DefaultRetryMax
)

// pushOptions are the flags of archivectl push.
type pushOptions struct {
	follow    stringList
	to        string
	tokenFile string
	token     refusedFlag // a token on the command line would show in ps
	host      string
	settle    string
	ca        string
	json      bool
	spool     string
	spoolMax  string
}

// AddFlags declares the flags on fs.
func (o *pushOptions) AddFlags(fs *flag.FlagSet) {
	fs.Var(&o.follow, "follow", "follow `DIR` (repeatable, required): push each file in it and below as it grows")
	fs.StringVar(&o.to, "to", "", "the archive's `URL` (http:// or https://, as serve or its reverse proxy answers; required)")
	fs.StringVar(&o.tokenFile, "token-file", "", "read the token (role pusher, or admin) from `FILE` (default: $REPLAY_TOKEN)")
	fs.Var(&o.token, "token", "refused: a `TOKEN` on the command line shows in ps; use --token-file or $REPLAY_TOKEN")
	fs.StringVar(&o.host, "host", "", "this host's `NAME`, the first part of every source name (default: the host name, sanitized)")
	fs.StringVar(&o.settle, "settle", "10m", "a file unchanged for `DUR` is complete even without an end marker: its last bytes go with final=1")
	fs.StringVar(&o.ca, "ca", "", "also trust the CA certificate(s) in PEM `FILE` (an archive with a self-signed certificate)")
	fs.StringVar(&o.spool, "spool", "", "keep the bytes the archive has not acknowledged, while it is away, in `DIR` (default: the user's cache directory/archivectl-push/HOST)")
	fs.StringVar(&o.spoolMax, "spool-max", "1GiB", "keep at most `SIZE` in the spool (0: no spool; the files on disk are the only copy)")
	fs.BoolVar(&o.json, "json", false, "print JSON lines (message_type push, live, warning, notice, status) on stdout")
}

func cmdPush() *command {
	o := new(pushOptions)
	return &command{
		name:    "push",
		args:    "--follow DIR... --to URL [--token-file FILE] [--host NAME] [--settle DUR] [--ca FILE] [--spool DIR] [--spool-max SIZE] [--json]",
		summary: "stream a game server's recordings, as they grow, to an archive on another host",
		help: `The agent of a fleet of game servers: run one on each game-server host, and
one archive ('archivectl serve') takes every host's recordings live. It
follows the directories given with --follow, as 'ingest --follow' does, and
sends each file's new bytes to the archive at --to as the file grows (about
once a second), so a game is searchable on the archive while it runs. A
file is final once complete (a teehistorian file ending with FINISH) or
unchanged for --settle: the archive then seals its live recording, or
ingests it whole (formats that cannot grow), and the agent prints one line
for it as ingest does ("sealed ID PATH", "ingested", "already archived",
"taken down", "failed").

Setting up: on the archive's host, make one token per game-server host
with the pusher role, which may push and do nothing else:

    archivectl token create --name gs1 --role pusher

and on gs1, with the token in a file only the agent's user can read:

    archivectl push --follow /srv/ddnet/teehistorian \
        --to https://archive.example.org --token-file /etc/replay/push.token

The token comes from --token-file, else $REPLAY_TOKEN; it is never taken
from the command line, where ps would show it. Every file is sent under a
source name HOST/DIR/PATH: --host (default this machine's host name), the
base name of the followed directory and the file's path below it; names
are 1-128 bytes of letters, digits and . _ ~ - (not starting with a dot),
8 parts at most: a file or directory whose name does not fit is skipped
with a warning. Two --follow directories may not have the same base name.

When the archive is away (restarting, unreachable, answering 5xx), the
agent goes on following and retries with a backoff of up to 30 s between
tries; it never gives up on a file, and the other files go on. Meanwhile
(and after any failed send) it copies each growing file's bytes that the
archive has not acknowledged to a spool on local disk, --spool (default
the user's cache directory/archivectl-push/HOST), at most --spool-max
(1GiB; 0: no spool): a game server that deletes or rotates a file loses
nothing the spool holds, and such a file is sent from the spool when the
archive returns, then made final; a restarted agent sends what its spool
holds of files that are gone. A spool is deleted once the archive
acknowledges its bytes. A full spool takes no more and never drops a byte:
a warning (once a minute) names the files, oldest first, whose missing
bytes are then only on disk. The archive says how much of each file it
holds, so a restarted agent (or archive) resumes exactly where the
archive stopped. A file that the archive holds more of than there is on
disk, or whose earlier bytes changed, or that grew after it was sealed,
is sent anew under the source name with ~2 (~3, ...) appended, with a
warning, and what the archive holds under the old name is sealed as it
is. A recording directory (an HCRP segment set: segment-NNN.dat,
preamble.dat, finished) is pushed as one recording, its files by what the
codec says they are: segments' new bytes, the preamble whole when it
changed, finished last; it is reported in one line, and spooled as its
files are (a set deleted while the archive is away is sent from the
spool). A taken-down file is refused by the archive: it is reported and not
sent again. A token the archive refuses, or one without the pusher role,
stops the agent with a message saying so (exit 1).

Over plain http:// the token and the recordings cross the network in
clear: use https:// (serve --tls-cert/--tls-key, or a reverse proxy: see
docs/live.md, "Game servers on other hosts"); --ca trusts a self-signed
certificate.

Output: one line per file on stdout, warnings and a status line (after
every rescan, 30 s, and every 10 s while a file is being sent) on stderr;
with --json, JSON lines on stdout with "message_type" "push" (path,
source, outcome, id, bytes, error), "live" (a live recording started),
"warning", "notice" (the archive is reachable again) and "status".
It runs until interrupted: exit 0, or 5 when the archive refused some
file (taken down, not a recording); files it retries are not failures.`,
		access: noAccess,
		flags:  o.AddFlags,
		run:    func(ctx context.Context, e *env, args []string) error { return runPush(ctx, e, o, args) },
	}
}

// refusedFlag is a flag that is refused whatever its value (which is
// neither kept nor repeated in the error: it may be a secret).
type refusedFlag bool

func (f *refusedFlag) String() string     { return "" }
func (f *refusedFlag) Set(v string) error { *f = true; return nil }

// pushRoot is a followed directory and the source segment it stands for.
type pushRoot struct {
	dir, base string
}

// runPush is archivectl push: it runs until ctx is done, or until the
// archive refuses the token.
func runPush(ctx context.Context, e *env, o *pushOptions, args []string) error {
	if len(args) > 0 {
		return usagef("push takes no arguments: name the directories with --follow DIR")
	}
	if o.token {
		return usagef("--token: refused: a token on the command line shows in ps; put it in a file for --token-file, or in $REPLAY_TOKEN")
	}
	if len(o.follow) == 0 {
		return usagef("--follow DIR is required")
	}
	if o.to == "" {
		return usagef("--to URL is required (the archive's address, e.g. https://archive.example.org)")
	}
	to, err := parsePushURL(o.to)
	if err != nil {
		return usagef("--to: %v", err)
	}
	settle, err := parseSettle(o.settle)
	if err != nil {
		return err
	}
	var spoolMax int64 // 0: no spool
	if v := strings.TrimSpace(o.spoolMax); v != "0" {
		if spoolMax, err = parseSizeFlag("--spool-max", v); err != nil {
			return err
		}
	}
	token, err := pushToken(e, o.tokenFile)
	if err != nil {
		return err
	}
	host := o.host
	if host == "" {
		name, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("the host name (give --host NAME): %w", err)
		}
		if host = sanitizeSegment(name); host == "" {
			return usagef("the host name %q makes no source name: give --host NAME", name)
		}
	} else if !validSegment(host) {
		return usagef("--host %q: a name is 1-128 bytes of letters, digits and . _ ~ - not starting with a dot", host)
	}
	roots, err := pushRoots(e, o.follow)
	if err != nil {
		return err
	}
	c, err := newPushClient(to, token, e.path(o.ca))
	if err != nil {
		return err
	}
	p := &pusher{c: c, host: host, roots: roots, settle: settle, complete: watch.CodecComplete(all.Codecs())}
	if spoolMax > 0 {
		dir := e.path(o.spool)
		if o.spool == "" {
			cache, err := os.UserCacheDir()
			if err != nil {
				return usagef("--spool: no default directory (%v): give --spool DIR, or --spool-max 0 for no spool", err)
			}
			dir = filepath.Join(cache, "archivectl-push", host)
		}
		if p.spool, err = openSpool(dir, spoolMax); err != nil {
			return err
		}
	}
	var mu sync.Mutex // lines are whole
	enc := json.NewEncoder(e.stdout)
	emit := func(v any, text func()) {
		mu.Lock()
		defer mu.Unlock()
		if o.json {
			enc.Encode(v)
			return
		}
		text()
	}
	p.result = func(r pushResult) { emit(r, func() { r.print(e.stdout, e.stderr) }) }
	p.warn = func(path, msg string) {
		emit(map[string]string{"message_type": "warning", "path": path, "message": msg}, func() {
			fmt.Fprintf(e.stderr, "warning: %s\n", textsafe.Line(strings.TrimPrefix(path+": "+msg, ": ")))
		})
	}
	p.note = func(msg string) {
		emit(map[string]string{"message_type": "notice", "message": msg}, func() {
			fmt.Fprintf(e.stderr, "note: %s\n", textsafe.Line(msg))
		})
	}
	p.status = func(s pushStatus) { emit(s, func() { fmt.Fprintln(e.stderr, textsafe.Line(s.line())) }) }
	if to.Scheme == "http" && !isLoopbackHost(to.Hostname()) {
		p.warn("", fmt.Sprintf("%s is plain http: the token and the recordings cross the network in clear (use https://)", to.Redacted()))
	}
	if !o.json {
		dirs := make([]string, len(roots))
		for i, r := range roots {
			dirs[i] = r.dir
		}
		fmt.Fprintf(e.stderr, "pushing %s to %s as %s (final when complete or idle for %v; Ctrl-C stops)\n",
			strings.Join(dirs, ", "), to.Redacted(), host, settle)
	}
	return p.run(ctx)
}

// parsePushURL reads --to: an http:// or https:// URL with a host, and
// perhaps a path prefix (a proxy that serves the archive below a path).
func parsePushURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("%q: want http:// or https://", s)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("%q: no host", s)
	}
	if u.User != nil {
		return nil, fmt.Errorf("%q: no user or password in the URL: the token goes in --token-file", u.Redacted())
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("%q: no query or fragment", s)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	return u, nil
}

// isLoopbackHost reports whether host names this machine.
func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// pushToken reads the token from file, else $REPLAY_TOKEN.
func pushToken(e *env, file string) (string, error) {
	if file != "" {
		b, err := os.ReadFile(e.path(file))
		if err != nil {
			return "", usagef("--token-file: %v", err)
		}
		tok := strings.TrimSpace(string(b))
		if tok == "" || strings.ContainsAny(tok, " \t\r\n") {
			return "", usagef("--token-file %s: want one token (from 'archivectl token create --role pusher')", file)
		}
		return tok, nil
	}
	tok := strings.TrimSpace(os.Getenv("REPLAY_TOKEN"))
	if tok == "" {
		return "", usagef("no token: give --token-file FILE or set REPLAY_TOKEN (a token from 'archivectl token create --name NAME --role pusher' on the archive)")
	}
	return tok, nil
}

// pushRoots checks the followed directories and gives each its source
// segment, its base name; two with the same one would mix their files.
func pushRoots(e *env, follow []string) ([]pushRoot, error) {
	var roots []pushRoot
	seen := map[string]string{}
	for _, d := range follow {
		dir, err := filepath.Abs(e.path(d))
		if err != nil {
			return nil, usagef("--follow %s: %v", d, err)
		}
		if err := checkDirs("--follow", []string{dir}); err != nil {
			return nil, err
		}
		base := filepath.Base(dir)
		if !validSegment(base) {
			return nil, usagef("--follow %s: its name %q cannot be part of a source name (1-128 bytes of letters, digits and . _ ~ - not starting with a dot): follow it through a link with such a name", d, base)
		}
		if other, ok := seen[base]; ok {
			return nil, usagef("--follow %s and %s have the same name %q: their files would have the same source names; follow one through a link with another name", other, d, base)
		}
		seen[base] = d
		roots = append(roots, pushRoot{dir: dir, base: base})
	}
	return roots, nil
}

// validSegment reports whether s may be one segment of a source name:
// 1-128 bytes of [A-Za-z0-9._~-], not "." or "..", not starting with ".".
func validSegment(s string) bool {
	if len(s) == 0 || len(s) > maxSegmentLen || s[0] == '.' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !segmentByte(s[i]) {
			return false
		}
	}
	return true
}

func segmentByte(b byte) bool {
	return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || b == '.' || b == '_' || b == '~' || b == '-'
}

// sanitizeSegment makes a host name a source segment: other bytes become
// "-", leading dots go, and it is cut to 128 bytes; "" when nothing is left.
func sanitizeSegment(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !segmentByte(c) {
			b[i] = '-'
		}
	}
	out := strings.TrimLeft(string(b), ".")
	if len(out) > maxSegmentLen {
		out = out[:maxSegmentLen]
	}
	return out
}

// sourceOf is the source name of a file at rel (a slash-separated path
// below the followed directory whose source segment is base), or an error
// saying which part does not fit.
func sourceOf(host, base, rel string) (string, error) {
	parts := strings.Split(rel, "/")
	if 2+len(parts) > maxSourceSegments {
		return "", fmt.Errorf("%d directories deep: a source name has at most %d parts (host, directory, %d below it)", len(parts)-1, maxSourceSegments, maxSourceSegments-2)
	}
	for _, s := range parts {
		if !validSegment(s) {
			return "", fmt.Errorf("the name %q cannot be part of a source name (1-128 bytes of letters, digits and . _ ~ - not starting with a dot)", s)
		}
	}
	return host + "/" + base + "/" + rel, nil
}

// renamed is source with "~n" appended to its last segment (n ≥ 2: a file
// started over), the segment cut short to stay within 128 bytes.
func renamed(source string, n int) string {
	if n < 2 {
		return source
	}
	suffix := "~" + strconv.Itoa(n)
	i := strings.LastIndexByte(source, '/')
	last := source[i+1:]
	if len(last)+len(suffix) > maxSegmentLen {
		last = last[:maxSegmentLen-len(suffix)]
	}
	return source[:i+1] + last + suffix
}

// pushFile is what the agent knows of one file: the archive's answers.
type pushFile struct {
	base string // source name of generation 1
	gen  int    // 1, then 2, 3, ... each time the file starts over
	// have is how many bytes the archive holds (-1: not asked yet), state
	// and id what it last said of the source.
	have  int64
	state string
	id    string
	// State "taken_down": the archive refused the file for good; it is
	// not sent again while the agent runs.
	// liveSaid: the live recording's start was reported; note is the
	// archive's last note (why the bytes are not a live recording).
	liveSaid bool
	note     string
	// check is the resend that checks what the archive learned from a
	// GET holds is this file's bytes.
	check pushCheck
	// spoolKey is the source whose spool a file that is gone is sent
	// from (it stays when the file is sent anew under another name).
	spoolKey string
	// set: the file is a piece of a recording directory (pushset.go),
	// which is reported as one; it is never sent anew under ~2.
	set bool
}

// pushCheck is what is left to check of the bytes a GET says the archive
// holds of a file.
type pushCheck int8

const (
	checkNone pushCheck = iota
	checkHead           // resend the first verifyBytes
	checkTail           // resend the verifyBytes before what is held with the new bytes
)

// verifyBytes is how much of the start and of the end of what the archive
// holds is resent to check it (the watcher samples as much).
const verifyBytes = 4096

func (f *pushFile) source() string { return renamed(f.base, f.gen) }

// finished reports whether the archive took the source for good.
func (f *pushFile) finished() bool { return f.state == "sealed" || f.state == "ingested" }

// pusher sends the files a watcher follows to the archive. Its file
// methods run in the watcher's goroutine only; mu guards the counts that
// the busy-status ticker reads.
type pusher struct {
	c        *pushClient
	host     string
	roots    []pushRoot
	settle   time.Duration
	complete func(ctx context.Context, path string) (bool, error)
	// result, warn, note and status report.
	result func(pushResult)
	warn   func(path, msg string)
	note   func(msg string)
	status func(pushStatus)
	// every is how often a status is reported while a file is being sent
	// and the watcher reports none (default 10 s); rescan is the
	// watcher's (tests shorten it).
	every, rescan time.Duration

	files   map[string]*pushFile
	skipped map[string]bool // warned of: a name that makes no source
	buf     []byte
	cancel  context.CancelCauseFunc
	// spool holds the bytes the archive has not acknowledged while it is
	// away (nil: no spool); unspooled are the files whose bytes it could
	// not take all of (full), by when the first was missed, and fullSaid
	// when that was last warned of. orphanBuf is the buffer of the
	// goroutine that sends what the spool holds of files that are gone,
	// orphans what it knows of their sources.
	spool     *spool
	unspooled map[string]time.Time
	fullSaid  time.Time
	orphanBuf []byte
	orphans   map[string]*pushOrphan
	// sets are the recording directories being pushed (by path), and
	// pieces the codecs that say what their files are.
	sets   map[string]*pushSet
	pieces []formats.DirPieces
	// orphanSets are the recording directories that are gone, sent from
	// the spool (by set source; sendOrphans' goroutine only).
	orphanSets map[string]*orphanSet

	mu         sync.Mutex
	chunk      int64           // the most a request carries (0: pushChunk), after a 413
	orphaned   map[string]bool // sources sent from the spool alone, now
	start      time.Time
	fatal      error
	back       backoff
	awaySince  time.Time
	archived   int
	dups       int
	failed     int
	sent       int64
	last       watch.Status
	lastAt     time.Time
	scanned    bool
	current    string
	currentOff int64
}

// run follows the directories until ctx is done (nil, or errPartial if a
// file failed), or until the archive refuses the token (that error).
func (p *pusher) run(ctx context.Context) error {
	p.files, p.skipped = map[string]*pushFile{}, map[string]bool{}
	p.sets, p.orphanSets = map[string]*pushSet{}, map[string]*orphanSet{}
	for _, c := range all.Codecs() {
		if d, ok := c.(formats.DirPieces); ok {
			p.pieces = append(p.pieces, d)
		}
	}
	p.unspooled, p.orphans, p.orphaned = map[string]time.Time{}, map[string]*pushOrphan{}, map[string]bool{}
	p.back = backoff{min: pushRetryMin, max: pushRetryMax}
	p.start, p.lastAt = time.Now(), time.Now()
	p.last = watch.Status{Dirs: len(p.roots)}
	ctx, p.cancel = context.WithCancelCause(ctx)
	defer p.cancel(nil)
	if err := p.probe(ctx); err != nil {
		return err
	}
	stop, stopped := make(chan struct{}), make(chan struct{})
	go p.busyStatus(stop, stopped)
	ostop, ostopped := make(chan struct{}), make(chan struct{})
	go ticks(ostop, ostopped, min(pushRetryMin, time.Second), func() { p.sendOrphans(ctx) })
	dirs := make([]string, len(p.roots))
	for i, r := range p.roots {
		dirs[i] = r.dir
	}
	err := watch.Run(ctx, watch.Options{
		Dirs:      dirs,
		Settle:    p.settle,
		Rescan:    p.rescan,
		GrowEvery: min(pushRetryMin, watch.DefaultGrowEvery),
		RetryMax:  pushRetryMax,
		Warn:      p.warn,
		Grew:      p.grew,
		Ready:     p.ready,
		Complete:  p.markerComplete,
		Status: func(s watch.Status) {
			p.forget()
			p.mu.Lock()
			p.last, p.lastAt, p.scanned = s, time.Now(), true
			st := p.statusLocked()
			p.mu.Unlock()
			p.status(st)
		},
	})
	close(stop)
	close(ostop)
	<-stopped
	<-ostopped
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fatal != nil {
		return p.fatal
	}
	if err != nil {
		return err
	}
	if p.failed > 0 {
		return errPartial
	}
	return nil
}

// probe asks the archive once before following, so that a token it
// refuses stops the agent at once, not at the first file. An archive that
// cannot be reached is only warned of: the agent follows and retries.
func (p *pusher) probe(ctx context.Context) error {
	pctx, cancel := context.WithTimeout(ctx, 2*pushConnect)
	defer cancel()
	_, err := p.c.get(pctx, p.host+"/"+p.roots[0].base)
	var pe *pushError
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return nil
	case errors.As(err, &pe) && pe.fatal():
		return pe.fatalError(p.c)
	case pe != nil && !pe.away() && pe.Status < 500:
		return nil // the archive answers; the files will say the rest
	}
	p.unreachable(err)
	return nil
}

// grew sends a growing file's new bytes (watch.Options.Grew). The file is
// live for the watcher whatever the archive makes of it: every grow sends
// the new bytes. A file the codec says is complete goes with final=1.
func (p *pusher) grew(ctx context.Context, file watch.File) (live, done bool, err error) {
	if s, piece := p.setFor(file.Path); piece {
		return p.grewSet(ctx, s, file)
	}
	done, err = p.push(ctx, file.Path, file.Size, p.completeAt(ctx, file))
	if err != nil {
		p.retried(ctx, file.Path, err)
		p.spoolFile(file.Path, file.Size)
		return false, false, err
	}
	delete(p.unspooled, file.Path)
	return true, done, nil
}

// errAway marks the errors of files not sent because the archive is away
// (warned of once, when it went).
var errAway = errors.New("the archive is away")

// errSpoolFirst marks a file not sent while what the spool holds of its
// source (the bytes of a file since deleted or rotated) is being sent.
var errSpoolFirst = errors.New("the spool's bytes of its source go first")

// retried warns of a file whose grow or seal failed and is retried by the
// watcher, unless the archive is away (warned of once) or the agent stops.
func (p *pusher) retried(ctx context.Context, path string, err error) {
	if ctx.Err() == nil && !errors.Is(err, errAway) && !errors.Is(err, errSpoolFirst) {
		p.warn(path, err.Error()+" (retried)")
	}
}

// completeAt reports whether the file is complete at file.Size, asking
// the codec only when the file did not change meanwhile: a file that
// grew while it was read is not complete at the size it had.
func (p *pusher) completeAt(ctx context.Context, file watch.File) bool {
	if p.complete == nil || file.Size == 0 {
		return false
	}
	if ok, err := p.complete(ctx, file.Path); err != nil || !ok {
		return false
	}
	st, err := os.Stat(file.Path)
	return err == nil && st.Size() == file.Size && st.ModTime().Equal(file.ModTime)
}

// ready sends the rest of a file that is complete or idle, with final=1
// (watch.Options.Ready). A file that changed since the watcher looked at
// it is not final: its bytes go, and the watcher offers it again.
func (p *pusher) ready(ctx context.Context, file watch.File) error {
	if s, piece := p.setFor(file.Path); piece && (s != nil || file.Size == 0) {
		return p.readySet(ctx, s, file)
	}
	if file.Size == 0 {
		p.warnOnce(file.Path, "an empty file: nothing to push")
		return nil
	}
	final := true
	if st, err := os.Stat(file.Path); err != nil || st.Size() != file.Size || !st.ModTime().Equal(file.ModTime) {
		final = false
	}
	_, err := p.push(ctx, file.Path, file.Size, final)
	if err != nil {
		p.retried(ctx, file.Path, err)
		p.spoolFile(file.Path, file.Size)
		return err
	}
	delete(p.unspooled, file.Path)
	return nil
}

// forget drops what is known of files that are gone (after each rescan).
func (p *pusher) forget() {
	for path := range p.files {
		if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
			delete(p.files, path)
			delete(p.unspooled, path)
		}
	}
	for path := range p.skipped {
		if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
			delete(p.skipped, path)
		}
	}
	for dir := range p.sets {
		if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
			delete(p.sets, dir)
		}
	}
}

// warnOnce warns of path once a run.
func (p *pusher) warnOnce(path, msg string) {
	if !p.skipped[path] {
		p.skipped[path] = true
		p.warn(path, msg)
	}
}

// fileFor returns what is known of the file at path, starting it at its
// source name; nil when its name makes no source (warned of once).
func (p *pusher) fileFor(path string) *pushFile {
	if f := p.files[path]; f != nil {
		return f
	}
	for _, r := range p.roots {
		rel, err := filepath.Rel(r.dir, path)
		if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
			continue
		}
		src, err := sourceOf(p.host, r.base, filepath.ToSlash(rel))
		if err != nil {
			p.warnOnce(path, "skipped: "+err.Error())
			return nil
		}
		f := &pushFile{base: src, gen: 1, have: -1}
		p.files[path] = f
		return f
	}
	p.warnOnce(path, "skipped: not below a followed directory")
	return nil
}

// push brings the archive's copy of the file at path up to size bytes,
// with final=1 on the last request when final. done says the file needs
// nothing more until it changes (sealed, ingested, already archived,
// taken down, refused); an error says it must be offered again (the
// archive is away): what the archive acknowledged is kept.
//
// The archive compares the bytes a request resends with those it holds
// (409 rewrite when they differ), so the first request after learning
// what it holds from a GET resends some: the first verifyBytes, and the
// verifyBytes before what it holds. A file replaced under the same name
// is found so, as the watcher's own samples find it.
func (p *pusher) push(ctx context.Context, path string, size int64, final bool) (done bool, err error) {
	f := p.fileFor(path)
	if f == nil || f.state == "taken_down" {
		return true, nil // skipped, or refused for good (reported)
	}
	if e, ok := p.spool.get(f.source()); ok && size < e.end() {
		// Rotated: the spool holds more of the source than the file has
		// now. The spool's bytes go first (sendOrphans), then the file's
		// anew.
		p.mu.Lock()
		p.orphaned[e.Source] = true
		p.mu.Unlock()
	}
	if p.isOrphaned(f.source()) {
		return false, fmt.Errorf("push %s: %w", path, errSpoolFirst)
	}
	if p.buf == nil {
		p.buf = make([]byte, pushChunk)
	}
	return p.send(ctx, path, f, size, final, p.buf, false)
}

// send brings the archive's copy of f's source up to size bytes (push),
// reading through buf: from the file at path, or when the file is gone or
// shorter (deleted or rotated) from the spool; spoolOnly reads from the
// spool alone.
func (p *pusher) send(ctx context.Context, path string, f *pushFile, size int64, final bool, buf []byte, spoolOnly bool) (done bool, err error) {
	p.working(path, 0)
	defer p.working("", 0)
	var file *os.File
	defer func() {
		if file != nil {
			file.Close()
		}
	}()
	conflicts := 0
	for {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		if err := p.away(); err != nil {
			return false, err
		}
		src := f.source()
		if f.have < 0 {
			a, err := p.c.get(ctx, src)
			if err != nil {
				return p.failure(ctx, path, f, size, err)
			}
			p.reached()
			p.learn(path, f, a, true)
			f.check = checkNone
			if f.have > 0 && !f.finished() {
				f.check = checkTail
				if f.have > 2*verifyBytes {
					f.check = checkHead
				}
			}
			if spoolOnly {
				f.check = p.spoolCheck(src, f)
			}
		}
		if spoolOnly && size < f.have {
			// The archive acknowledged more than the spool holds (before
			// the agent stopped): only the final request is left.
			size = f.have
		}
		switch {
		case f.set && (size < f.have || f.finished()):
			// A piece of a recording directory is never sent anew: the
			// set is reported as one (pushset.go).
			if size < f.have {
				p.warn(path, fmt.Sprintf("%d bytes, fewer than the %d the archive holds of %s: a piece of a recording directory was rewritten; not sent again", size, f.have, src))
				f.state = "failed"
			}
			return true, nil
		case size < f.have:
			p.startOver(ctx, path, f, f.have, fmt.Sprintf("%d bytes, fewer than the %d the archive holds of %s: the file was replaced", size, f.have, src))
			continue
		case f.finished() && size == f.have:
			// Sealed or ingested already (by an earlier run, or the answer
			// to this run's final request was lost): nothing to send.
			p.report(path, f, "already archived", size, nil)
			return true, nil
		case f.finished():
			p.startOver(ctx, path, f, -1, fmt.Sprintf("grew to %d bytes after the archive %s %s at %d", size, f.state, src, f.have))
			continue
		case f.have == size && !final:
			return false, nil
		}
		off, n, last := f.have, int64(0), false
		switch {
		case f.check == checkHead:
			// What the archive holds starts as the file does?
			off, n = 0, verifyBytes
		case f.check == checkTail:
			// …and ends as it does: resend its last bytes with the new.
			if f.have <= 2*verifyBytes {
				off = 0
			} else {
				off = f.have - verifyBytes
			}
			fallthrough
		default:
			n = min(p.chunkSize(), size-off)
			last = off+n == size
		}
		body, err := p.read(path, cmp.Or(f.spoolKey, src), &file, buf, off, n, spoolOnly)
		if err != nil {
			return false, fmt.Errorf("push %s: %w", path, err)
		}
		p.working(path, off)
		before := f.have
		a, err := p.c.put(ctx, src, off, body, final && last)
		if err != nil {
			var pe *pushError
			if errors.As(err, &pe) && pe.Status == http.StatusRequestEntityTooLarge && p.smaller(n) {
				continue
			}
			if !errors.As(err, &pe) || pe.Status != http.StatusConflict {
				return p.failure(ctx, path, f, size, err)
			}
			p.reached()
			if conflicts++; conflicts > pushConflicts {
				return false, fmt.Errorf("push %s as %s: %d conflicts in a row, the last %w; retried", path, src, conflicts, err)
			}
			switch pe.Code {
			case "offset_gap":
				f.have = pe.Have
			case "rewrite":
				if f.set {
					p.warn(path, fmt.Sprintf("its first %d bytes are not those the archive holds of %s: a piece of a recording directory was rewritten; not sent again", pe.Have, src))
					f.state = "failed"
					return true, nil
				}
				p.startOver(ctx, path, f, pe.Have, fmt.Sprintf("its first %d bytes are not those the archive holds of %s: the file was rewritten", pe.Have, src))
			case "sealed":
				f.have, f.state = pe.Have, "sealed"
			default: // refused, source_conflict
				return p.failure(ctx, path, f, size, err)
			}
			continue
		}
		p.reached()
		conflicts = 0
		if f.check == checkHead {
			f.check = checkTail
			p.learn(path, f, a, false)
			continue
		}
		f.check = checkNone
		if a.Have <= before && off+n > before {
			return false, fmt.Errorf("push %s as %s: the archive took none of the %d bytes past offset %d; retried", path, src, off+n-before, before)
		}
		p.mu.Lock()
		p.sent += max(0, a.Have-before)
		p.mu.Unlock()
		p.learn(path, f, a, false)
		switch {
		case f.set && f.finished():
			return true, nil // the set is reported as one
		case f.finished() && f.have == size:
			p.report(path, f, f.state, size, nil)
			return true, nil
		case final && last && f.have == size:
			// The archive took the final request without sealing or
			// ingesting: ask again after a backoff.
			return false, fmt.Errorf("push %s as %s: the archive answered %q to final=1; retried", path, src, f.state)
		case !final && f.have >= size:
			return false, nil
		}
	}
}

// spoolFile copies to the spool the bytes of the file at path, of size
// bytes now, that the archive has not acknowledged and the spool does not
// hold yet (after a failed send). A full spool takes what fits, and the
// file is named in the warning of files not spooled.
func (p *pusher) spoolFile(path string, size int64) {
	f := p.files[path]
	if p.spool == nil || f == nil || f.state == "taken_down" || f.finished() || p.isOrphaned(f.source()) {
		return
	}
	file, err := os.Open(path)
	if err != nil {
		return // gone: the spool has what it has
	}
	defer file.Close()
	if p.buf == nil {
		p.buf = make([]byte, pushChunk)
	}
	src := f.source()
	_, err = p.spool.add(src, "", path, file, max(f.have, 0), size, p.buf)
	switch {
	case errors.Is(err, errSpoolFull):
		if _, ok := p.unspooled[path]; !ok {
			since := time.Now()
			if e, ok := p.spool.get(src); ok {
				since = e.Since
			}
			p.unspooled[path] = since
		}
		p.warnFull()
	case err != nil:
		p.warn(path, fmt.Sprintf("not spooled: %v", err))
	default:
		delete(p.unspooled, path)
	}
}

// warnFull warns, once a minute at most, that the spool is full, naming
// the files (oldest first) whose unacknowledged bytes it does not all hold.
func (p *pusher) warnFull() {
	if time.Since(p.fullSaid) < time.Minute {
		return
	}
	p.fullSaid = time.Now()
	paths := make([]string, 0, len(p.unspooled))
	for path := range p.unspooled {
		paths = append(paths, path)
	}
	slices.SortFunc(paths, func(a, b string) int { return cmp.Or(p.unspooled[a].Compare(p.unspooled[b]), cmp.Compare(a, b)) })
	more := ""
	if len(paths) > 5 {
		more = fmt.Sprintf(" and %d more", len(paths)-5)
		paths = paths[:5]
	}
	b, _ := p.spool.counts()
	p.warn("", fmt.Sprintf("the spool %s is full (%s of --spool-max %s): it takes no more, and drops nothing; the bytes the archive lacks of these files, oldest first, are only in the game server's files: %s%s",
		p.spool.dir, humanBytes(b), humanBytes(p.spool.max), strings.Join(paths, ", "), more))
}

// isOrphaned reports whether source is being sent from the spool alone.
func (p *pusher) isOrphaned(source string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.orphaned[source]
}

// sendOrphans sends what the spool holds of files that are gone or
// shorter than it (deleted or rotated: they will not grow again), to the
// spool's end and with final=1, unless the archive is away; it runs in
// its own goroutine, with its own buffer and pushFiles.
func (p *pusher) sendOrphans(ctx context.Context) {
	sets := map[string][]spoolEntry{}
	var order []string
	defer func() {
		for _, set := range order {
			if ctx.Err() != nil || p.away() != nil {
				return
			}
			p.sendSetOrphan(ctx, set, sets[set])
		}
	}()
	for _, e := range p.spool.list() {
		if ctx.Err() != nil || p.away() != nil {
			return
		}
		if e.Set != "" {
			// A piece of a recording directory: the set goes as one.
			if sets[e.Set] == nil {
				order = append(order, e.Set)
			}
			sets[e.Set] = append(sets[e.Set], e)
			continue
		}
		if !p.isOrphaned(e.Source) {
			st, err := os.Stat(e.Path)
			if !errors.Is(err, fs.ErrNotExist) && (err != nil || st.Size() >= e.end()) {
				continue // still there: sent from the file as it grows
			}
			p.mu.Lock()
			p.orphaned[e.Source] = true
			p.mu.Unlock()
		}
		o := p.orphans[e.Source]
		if o == nil {
			o = &pushOrphan{f: &pushFile{base: e.Source, gen: 1, have: -1, spoolKey: e.Source},
				back: backoff{min: pushRetryMin, max: pushRetryMax}}
			p.orphans[e.Source] = o
		}
		if o.back.wait(time.Now()) > 0 {
			continue
		}
		if p.orphanBuf == nil {
			p.orphanBuf = make([]byte, pushChunk)
		}
		f := o.f
		done, err := p.send(ctx, e.Path, f, e.end(), true, p.orphanBuf, true)
		if err != nil {
			if !errors.Is(err, errAway) {
				o.back.fail(time.Now()) // this file's trouble: tried again after a backoff
			}
			p.retried(ctx, e.Path, err)
			continue
		}
		o.back.reset()
		if done || f.finished() {
			p.spool.acked(e.Source, 0, true)
			delete(p.orphans, e.Source)
			p.mu.Lock()
			delete(p.orphaned, e.Source)
			p.mu.Unlock()
		}
	}
}

// pushOrphan is a source sent from the spool alone, and its backoff.
type pushOrphan struct {
	f    *pushFile
	back backoff
}

// spoolCheck is the check of what a GET says the archive holds of source
// that the spool's bytes allow (it may not hold the file's first bytes).
func (p *pusher) spoolCheck(source string, f *pushFile) pushCheck {
	e, ok := p.spool.get(source)
	if !ok || f.check == checkNone {
		return checkNone
	}
	tail := int64(0)
	if f.have > 2*verifyBytes {
		tail = f.have - verifyBytes
	}
	switch {
	case f.check == checkHead && e.Base == 0:
		return checkHead
	case e.Base <= tail && f.have <= e.end():
		return checkTail
	}
	return checkNone
}

// chunkSize is the most one request carries now: pushChunk, unless the
// archive (or a proxy before it) refused that much.
func (p *pusher) chunkSize() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.chunk == 0 {
		return pushChunk
	}
	return p.chunk
}

// smaller halves the requests after one of n bytes was refused as too
// large (413), down to minChunk; it reports whether they are smaller now.
// A proxy's limit on bodies (nginx's client_max_body_size is 1 MiB by
// default) costs more requests, not the file.
func (p *pusher) smaller(n int64) bool {
	if n <= minChunk {
		return false
	}
	c := p.chunkSize() / 2
	for c >= n {
		c /= 2
	}
	c = max(minChunk, c)
	p.mu.Lock()
	p.chunk = c
	p.mu.Unlock()
	p.warn("", fmt.Sprintf("the archive, or a proxy before it, refuses a request of %d bytes (413): sending at most %d bytes a request (a proxy should let 16 MiB through: nginx's client_max_body_size)", n, c))
	return true
}

// read reads n bytes of source at off into buf: from the file at path
// (opened in *file once), or from the spool when the file is gone or
// shorter (or spoolOnly).
func (p *pusher) read(path, source string, file **os.File, buf []byte, off, n int64, spoolOnly bool) ([]byte, error) {
	if n == 0 {
		return buf[:0], nil
	}
	var ferr error
	if !spoolOnly {
		if *file == nil {
			f, err := os.Open(path)
			if err != nil {
				ferr = err
			} else {
				*file = f
			}
		}
		if *file != nil {
			b, err := readChunk(*file, buf, off, n)
			if err == nil {
				return b, nil
			}
			ferr = err
		}
	}
	b, ok, err := p.spool.readAt(source, buf, off, n)
	switch {
	case err != nil:
		return nil, err
	case ok:
		return b, nil
	case ferr == nil:
		return nil, fmt.Errorf("the spool does not hold the %d bytes at %d of %s", n, off, source)
	}
	return nil, ferr
}

// readChunk reads n bytes at off into buf (n ≤ len(buf)): a file cut
// shorter meanwhile is an error.
func readChunk(r io.ReaderAt, buf []byte, off, n int64) ([]byte, error) {
	if n > int64(len(buf)) {
		return nil, fmt.Errorf("internal error: a chunk of %d bytes in a buffer of %d", n, len(buf))
	}
	k, err := r.ReadAt(buf[:n], off)
	if int64(k) == n {
		return buf[:n], nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		err = fmt.Errorf("the file ends at %d bytes, before %d (cut short while read)", off+int64(k), off+n)
	}
	return nil, fmt.Errorf("read at %d: %w", off, err)
}

// learn takes what the archive says of f's source, and reports a live
// recording that started, or that this run resumes (found by a GET).
func (p *pusher) learn(path string, f *pushFile, a wire.Push, found bool) {
	f.have, f.state = a.Have, a.State
	if f.spoolKey == "" {
		p.spool.acked(f.source(), f.have, f.finished())
	}
	if a.ID != "" {
		f.id = a.ID
	}
	if a.Note != "" && a.Note != f.note && !(f.set && strings.HasPrefix(a.Note, "waiting: ")) {
		p.warn(path, fmt.Sprintf("the archive does not grow a live recording from %s: %s", f.source(), a.Note))
	}
	f.note = a.Note
	if f.state == "live" && f.id != "" && !f.liveSaid && !f.set {
		f.liveSaid = true
		what := "live started"
		if found {
			what = "live resumed"
		}
		p.result(pushResult{MessageType: "live", Path: path, Source: f.source(), Outcome: what, ID: f.id, Bytes: f.have})
	}
}

// startOver sends the file anew under its next source name. The source
// it leaves, of which the archive holds have bytes (-1: it is sealed or
// ingested), would stay live on the archive for want of a final push:
// what it holds is sealed (or ingested) as it is, once, if the archive
// takes it.
func (p *pusher) startOver(ctx context.Context, path string, f *pushFile, have int64, why string) {
	old := f.source()
	if f.spoolKey != old {
		p.spool.acked(old, 0, true) // the bytes of a file that was replaced
	}
	f.gen++
	f.have, f.state, f.id, f.liveSaid, f.check = -1, "", "", false, checkNone
	p.warn(path, fmt.Sprintf("%s; sent anew as %s", why, f.source()))
	if have <= 0 {
		return
	}
	a, err := p.c.put(ctx, old, have, nil, true)
	if err != nil {
		if ctx.Err() == nil {
			p.warn(path, fmt.Sprintf("the %d bytes the archive holds of %s are left live, not sealed: %v", have, old, err))
		}
		return
	}
	p.mu.Lock()
	p.archived++
	p.mu.Unlock()
	p.result(pushResult{MessageType: "push", Path: path, Source: old, Outcome: a.State, ID: a.ID, Bytes: a.Have})
}

// failure handles a request for f that failed with err: a file the
// archive refuses is reported and done; a token it refuses stops the
// agent; anything else is retried after a backoff (the archive away for
// every file, or this file's trouble alone).
func (p *pusher) failure(ctx context.Context, path string, f *pushFile, size int64, err error) (bool, error) {
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	var pe *pushError
	if !errors.As(err, &pe) {
		return false, p.unreachable(err)
	}
	switch {
	case pe.fatal():
		ferr := pe.fatalError(p.c)
		p.mu.Lock()
		if p.fatal == nil {
			p.fatal = ferr
		}
		p.mu.Unlock()
		p.cancel(ferr)
		return false, ferr
	case pe.Status == http.StatusGone:
		p.reached()
		f.id = cmpOr(pe.ID, f.id)
		if pe.Takedown != nil && f.id == "" {
			f.id = pe.Takedown.ID.String()
		}
		f.state = "taken_down"
		p.spool.acked(f.source(), 0, true)
		p.report(path, f, "taken down", size, pe)
		return true, nil
	case pe.away():
		return false, p.unreachable(err)
	case pe.Status >= 500 || pe.Status == http.StatusTooManyRequests || pe.Status == http.StatusRequestTimeout:
		p.reached()
		return false, err
	}
	// 413, 400, 422...: the archive will not take this file as it is.
	p.reached()
	p.report(path, f, "failed", size, pe)
	f.have, f.state = -1, "" // asked again when the file changes
	return true, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// report gives one file's outcome to result, and counts it.
func (p *pusher) report(path string, f *pushFile, outcome string, size int64, pe *pushError) {
	r := pushResult{MessageType: "push", Path: path, Source: f.source(), Outcome: outcome, ID: f.id, Bytes: size}
	if pe != nil {
		r.Error, r.Code, r.Takedown = pe.Msg, pe.Code, pe.Takedown
	}
	p.mu.Lock()
	switch outcome {
	case "sealed", "ingested":
		p.archived++
	case "already archived":
		p.dups++
	default:
		p.failed++
	}
	p.mu.Unlock()
	p.result(r)
}

// away returns an error while the archive is in its backoff after it
// could not be reached: the watcher offers the file again later, and no
// request is made meanwhile.
func (p *pusher) away() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if wait := p.back.wait(time.Now()); wait > 0 {
		return fmt.Errorf("%w (since %s); next try in %v", errAway, p.awaySince.Format(time.TimeOnly), wait.Round(100*time.Millisecond))
	}
	return nil
}

// unreachable notes that the archive could not be reached (err), warning
// once, and starts or lengthens the backoff. It returns err for the
// watcher, which offers the file again.
func (p *pusher) unreachable(err error) error {
	p.mu.Lock()
	first := p.awaySince.IsZero()
	if first {
		p.awaySince = time.Now()
	}
	d := p.back.fail(time.Now())
	p.mu.Unlock()
	if first {
		where := "the files on disk are the only copy (no spool)"
		if p.spool != nil {
			where = "spooling what it lacks to " + p.spool.dir
		}
		p.warn("", fmt.Sprintf("the archive is away: %v; following on and retrying (every %v at most): %s", err, pushRetryMax, where))
	}
	return fmt.Errorf("%w: %w (next try in %v)", errAway, err, d)
}

// reached notes an answer from the archive: the backoff ends.
func (p *pusher) reached() {
	p.mu.Lock()
	since := p.awaySince
	p.awaySince = time.Time{}
	p.back.reset()
	p.mu.Unlock()
	if !since.IsZero() {
		p.note(fmt.Sprintf("the archive answers again (away for %v)", time.Since(since).Round(time.Second)))
	}
}

// working records the file being sent and its offset ("" when none).
func (p *pusher) working(path string, off int64) {
	p.mu.Lock()
	p.current, p.currentOff = path, off
	p.mu.Unlock()
}

// busyStatus reports a status every p.every while the watcher, busy
// sending a file, reports none. It returns when stop is closed, closing
// stopped.
func (p *pusher) busyStatus(stop <-chan struct{}, stopped chan<- struct{}) {
	every := cmp.Or(p.every, 10*time.Second)
	ticks(stop, stopped, every, func() {
		p.mu.Lock()
		if p.current == "" || time.Since(p.lastAt) < every {
			p.mu.Unlock()
			return
		}
		p.lastAt = time.Now()
		st := p.statusLocked()
		st.CurrentFiles = []string{p.current}
		st.CurrentOffset = p.currentOff
		p.mu.Unlock()
		p.status(st)
	})
}

// statusLocked is the status to report now; p.mu is held.
func (p *pusher) statusLocked() pushStatus {
	s := p.last
	st := pushStatus{MessageType: "status", Dirs: s.Dirs, Files: s.Files, Waiting: s.Waiting, Bytes: s.Bytes,
		Sent: p.sent, Archived: p.archived, Duplicates: p.dups, Failed: p.failed + s.Failing, Retrying: s.Failing,
		Elapsed: time.Since(p.start).Seconds(), FirstScan: !p.scanned}
	if !p.awaySince.IsZero() {
		st.Away = time.Since(p.awaySince).Seconds()
	}
	st.SpoolBytes, st.SpoolFiles = p.spool.counts()
	return st
}

// pushStatus is one periodic status report (restic's "status" messages
// are the model for its JSON).
type pushStatus struct {
	MessageType string `json:"message_type"` // "status"
	Dirs        int    `json:"dirs"`
	Files       int    `json:"files"`
	Waiting     int    `json:"waiting"`
	Bytes       int64  `json:"bytes"`
	// Sent counts the bytes the archive acknowledged in this run.
	Sent int64 `json:"bytes_sent"`
	// Archived counts the files sealed or ingested in this run.
	Archived   int `json:"archived"`
	Duplicates int `json:"already_archived"`
	// Failed counts the files refused (taken down, bad input, too large)
	// and those whose last try failed (Retrying, also in Failed).
	Failed   int `json:"failed"`
	Retrying int `json:"retrying,omitempty"`
	// Away is how long the archive has not been reached, in seconds.
	Away float64 `json:"archive_away_seconds,omitempty"`
	// SpoolBytes and SpoolFiles are what the spool holds: bytes the
	// archive has not acknowledged, of so many sources.
	SpoolBytes int64   `json:"spool_bytes"`
	SpoolFiles int     `json:"spool_files"`
	Elapsed    float64 `json:"seconds_elapsed"`
	// CurrentFiles is the file being sent, and CurrentOffset where, in a
	// status reported while the watcher is busy with it.
	CurrentFiles  []string `json:"current_files,omitempty"`
	CurrentOffset int64    `json:"current_offset,omitempty"`
	FirstScan     bool     `json:"first_scan,omitempty"`
}

// line is a status report for people.
func (s pushStatus) line() string {
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
	l := fmt.Sprintf("following %d %s: %s; %s sent, %d archived, %d already archived, %s; up %v",
		s.Dirs, dirs, files, humanBytes(s.Sent), s.Archived, s.Duplicates, failed, time.Duration(s.Elapsed*float64(time.Second)).Round(time.Second))
	if s.Away > 0 {
		l += fmt.Sprintf("; the archive away for %v (retrying)", time.Duration(s.Away*float64(time.Second)).Round(time.Second))
	}
	if s.SpoolFiles > 0 {
		l += fmt.Sprintf("; spool %s in %d files", humanBytes(s.SpoolBytes), s.SpoolFiles)
	}
	if len(s.CurrentFiles) > 0 {
		l += fmt.Sprintf("; sending %s at %s", strings.Join(s.CurrentFiles, ", "), humanBytes(s.CurrentOffset))
	}
	return l
}

// pushResult is one file's outcome ("push"), or a live recording that
// started ("live"), as a JSON line.
type pushResult struct {
	MessageType string `json:"message_type"`
	Path        string `json:"path"`
	Source      string `json:"source"`
	// Outcome: sealed, ingested, already archived, taken down, failed;
	// "live started" or "live resumed" (by an agent started again) for a
	// "live" line.
	Outcome string `json:"outcome"`
	ID      string `json:"id,omitempty"`
	Bytes   int64  `json:"bytes"`
	// Error and Code are the archive's answer to a file it refused.
	Error    string            `json:"error,omitempty"`
	Code     string            `json:"code,omitempty"`
	Takedown *archive.Takedown `json:"takedown,omitempty"`
}

// print writes the result as a line for people, as ingest does.
func (r pushResult) print(stdout, stderr io.Writer) {
	line := r.Outcome
	if r.ID != "" {
		line += " " + r.ID
	}
	line += " " + r.Path + " as " + r.Source
	if r.Error != "" {
		line += ": " + r.Error
	} else {
		line += fmt.Sprintf(" (%d bytes)", r.Bytes)
	}
	fmt.Fprintln(stdout, textsafe.Line(line))
}

// backoff is the wait after the archive could not be reached: it doubles
// from min up to max with each failure in a row, and ends at an answer.
type backoff struct {
	min, max time.Duration
	cur      time.Duration
	until    time.Time
}

// fail notes a failure at now and returns the wait before the next try.
func (b *backoff) fail(now time.Time) time.Duration {
	b.cur = min(max(2*b.cur, b.min), b.max)
	b.until = now.Add(b.cur)
	return b.cur
}

// reset ends the backoff.
func (b *backoff) reset() { b.cur, b.until = 0, time.Time{} }

// wait is how long to wait at now before the next try (0: try).
func (b *backoff) wait(now time.Time) time.Duration { return max(0, b.until.Sub(now)) }
