// Command archivectl runs the replay archive: ingest native recordings,
// list and show them, search, seek, export them back (whole or clipped),
// apply retention, and check the archive's consistency.
//
// Usage:
//
//	archivectl [--archive DIR] COMMAND [flags] [args]
//
// The archive directory is --archive, else $REPLAY_ARCHIVE, else
// ./replays.archive. Run `archivectl help` for the commands.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/internal/textsafe"
	"github.com/replayarchive/replay/internal/units"
)

// command is one subcommand; each lives in its own file.
type command struct {
	name    string
	args    string // synopsis of the arguments
	summary string // one line for the command list
	help    string // longer help shown by `archivectl COMMAND --help`
	// access says how the command opens the archive.
	access access
	// flags declares the command's flags on fs: the AddFlags of the
	// command's own options (ingestOptions, ...), which run reads.
	flags func(fs *flag.FlagSet)
	run   func(ctx context.Context, env *env, args []string) error
}

// access is how a command uses the archive.
type access int

const (
	// readAccess opens an existing archive read-only: read commands
	// never block each other, and never create an archive.
	readAccess access = iota
	// writeAccess opens an existing archive for writing.
	writeAccess
	// createAccess opens for writing, creating the archive if needed.
	createAccess
	// noAccess: the command opens nothing itself (help, version, demo,
	// serve), and is never forwarded to a running server.
	noAccess
)

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// env is what a command runs with.
type env struct {
	archiveDir     string
	stdin          io.Reader
	stdout, stderr io.Writer
	// wait is how long to wait for another process's lock (--wait).
	wait time.Duration
	// cwd resolves relative paths: the caller's working directory when a
	// server runs a command forwarded to it.
	cwd string
	// who makes the changes, for the audit log.
	who replay.Actor
	// x is the open archive; shared is set when it belongs to a server
	// that runs this command, which must not close it.
	x      *replay.Archive
	shared bool
	access access
}

// errUsage marks errors caused by how the command was called (exit 2).
type errUsage struct{ msg string }

func (e errUsage) Error() string { return e.msg }

func usagef(format string, args ...any) error { return errUsage{fmt.Sprintf(format, args...)} }

// errSilent is returned when the command has already reported its failure
// and only the exit status remains to be set.
var errSilent = errors.New("")

func commands() []*command {
	cmds := []*command{
		cmdIngest(), cmdLs(), cmdShow(), cmdExport(), cmdFrames(), cmdEvents(), cmdSearch(), cmdReindex(),
		cmdFlag(), cmdUnflag(), cmdHold(), cmdRelease(), cmdDelete(), cmdTakedowns(),
		cmdCases(),
		cmdRetention(), cmdPrune(), cmdRecompress(), cmdRemote(), cmdCheck(), cmdStats(), cmdAudit(), cmdToken(), cmdMaps(), cmdServe(), cmdPush(), cmdLogin(),
		cmdShare(),
		cmdInit(), cmdGhost(), cmdDemo(), cmdVersion(),
	}
	return cmds
}

func main() {
	// The search library reports housekeeping through the standard logger
	// (e.g. "got err removing file: ….zap"): it is debug output, shown
	// only with ARCHIVECTL_DEBUG=1, never mixed into a command's output.
	log.SetFlags(log.LstdFlags)
	log.SetPrefix("debug: ")
	if os.Getenv("ARCHIVECTL_DEBUG") == "" {
		log.SetOutput(io.Discard)
	}
	setMemoryLimit(os.Args[1:])
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	stopProfile := startProfile(os.Getenv("ARCHIVECTL_CPUPROFILE"), os.Stderr)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stopProfile()
	stop()
	os.Exit(code)
}

// startProfile writes a CPU profile of the command to path, when set (the
// ARCHIVECTL_CPUPROFILE variable: how docs/PERFORMANCE.md's breakdowns are
// taken), and returns what ends it.
func startProfile(path string, stderr io.Writer) func() {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintf(stderr, "archivectl: ARCHIVECTL_CPUPROFILE: %v\n", err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

// run is main without the process: it returns the exit status.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr, who: replay.LocalActor()}
	e.archiveDir = os.Getenv("REPLAY_ARCHIVE")
	if e.archiveDir == "" {
		e.archiveDir = "replays.archive"
	}
	// Global flags before the command.
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		a := args[0]
		switch {
		case a == "--archive" || a == "-archive":
			if len(args) < 2 {
				fmt.Fprintln(stderr, "archivectl: --archive needs a directory")
				return exitUsage
			}
			e.archiveDir, args = args[1], args[2:]
		case strings.HasPrefix(a, "--archive=") || strings.HasPrefix(a, "-archive="):
			e.archiveDir, args = a[strings.Index(a, "=")+1:], args[1:]
		case a == "--wait" || a == "-wait":
			if len(args) < 2 {
				fmt.Fprintln(stderr, "archivectl: --wait needs a duration")
				return exitUsage
			}
			d, err := units.ParseDuration(args[1])
			if err != nil {
				fmt.Fprintf(stderr, "archivectl: --wait: %v\n", err)
				return exitUsage
			}
			e.wait, args = d, args[2:]
		case a == "-h" || a == "--help" || a == "-help":
			printHelp(stdout)
			return 0
		default:
			fmt.Fprintf(stderr, "archivectl: unknown global flag %s (see archivectl help)\n", a)
			return exitUsage
		}
	}
	if len(args) == 0 {
		printHelp(stderr)
		return exitUsage
	}
	return runCommand(ctx, e, args)
}

// runCommand runs one command (args[0]) with its arguments in e: from the
// command line, or in a server for a command forwarded to it.
func runCommand(ctx context.Context, e *env, args []string) int {
	stdout, stderr := e.stdout, e.stderr
	name, args := args[0], args[1:]
	if name == "help" {
		if len(args) > 0 {
			if c := findCommand(args[0]); c != nil {
				printCommandHelp(stdout, c, newFlagSet(c, e))
				return 0
			}
		}
		printHelp(stdout)
		return 0
	}
	c := findCommand(name)
	if c == nil {
		fmt.Fprintf(stderr, "archivectl: unknown command %q (see archivectl help)\n", name)
		return exitUsage
	}
	fs := newFlagSet(c, e)
	pos, err := parseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		printCommandHelp(stdout, c, fs)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "archivectl %s: %v\nusage: archivectl %s %s\n", c.name, err, c.name, c.args)
		return exitUsage
	}
	if c.access != noAccess && e.x == nil {
		if code, ok := forward(ctx, e, c, fs, pos, append([]string{name}, args...)); ok {
			return code
		}
	}
	e.access = c.access
	err = c.run(ctx, e, pos)
	if e.x != nil && !e.shared {
		if cerr := e.x.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}
	return exitCode(stderr, c, err)
}

// Exit codes, documented in the help text.
const (
	exitOK       = 0
	exitFailure  = 1 // the command failed
	exitUsage    = 2 // how it was called is wrong
	exitNoRepo   = 3 // no archive at --archive
	exitLocked   = 4 // another process holds the archive
	exitPartial  = 5 // some inputs failed, the others were done
	exitNotFound = 6 // the recording named does not exist
)

// errPartial is returned when some inputs failed and the rest were done.
var errPartial = errors.New("")

// exitCode reports err and returns the exit status it calls for.
func exitCode(stderr io.Writer, c *command, err error) int {
	var ue errUsage
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "archivectl %s: %v\nusage: archivectl %s %s\n", c.name, err, c.name, c.args)
		return exitUsage
	case errors.Is(err, errPartial):
		return exitPartial
	case errors.Is(err, errSilent):
		return exitFailure
	}
	fmt.Fprintf(stderr, "archivectl %s: %s\n", c.name, textsafe.Line(err.Error()+advice(err)))
	switch {
	case errors.Is(err, replay.ErrNoArchive):
		return exitNoRepo
	case errors.Is(err, replay.ErrLocked):
		return exitLocked
	case errors.Is(err, archive.ErrNotFound):
		return exitNotFound
	}
	return exitFailure
}

func findCommand(name string) *command {
	for _, c := range commands() {
		if c.name == name {
			return c
		}
	}
	return nil
}

// newFlagSet declares the command's flags and --archive.
func newFlagSet(c *command, e *env) *flag.FlagSet {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&e.archiveDir, "archive", e.archiveDir, "archive `DIR` (default $REPLAY_ARCHIVE, else ./replays.archive)")
	if c.flags != nil {
		c.flags(fs)
	}
	return fs
}

// parseInterspersed parses flags that may come before, between or after
// the positional arguments; "--" ends flag parsing.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		// flag stops at the first non-flag, or after "--".
		consumed := len(args) - len(rest)
		if consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

func printHelp(w io.Writer) {
	fmt.Fprint(w, `archivectl keeps game recordings in one archive: it ingests native replay
files (DDNet teehistorian, Echo VR .butter/.echoreplay/.milk, StarCraft II
.SC2Replay, VTX, HCRP), finds them by player, map, flag or typed command,
seeks to any tick, exports them back byte for byte or as a clip, and prunes
old ones under a retention policy without touching held or flagged ones.

usage: archivectl [--archive DIR] COMMAND [flags] [args]

The archive directory is --archive, else $REPLAY_ARCHIVE, else ./replays.archive.
--wait DUR waits that long for another process's lock. ARCHIVECTL_DEBUG=1
shows the search library's debug messages on stderr.
IDs may be given as any unique prefix. Most commands take --json for scripts.

commands:
`)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, `
Retention: 'retention set' stores a policy (max age, max total bytes, per
format); 'prune' applies it in two phases (mark in the catalog and index,
then sweep chunks and give disk space back), never removing a held recording
and removing flagged ones only with --include-flagged. 'prune --dry-run' says
exactly what would go and how many bytes would come back.

Exit codes: 0 ok, 1 failure, 2 usage error, 3 no archive at --archive
(read commands never create one: 'archivectl init' does), 4 locked by
another process (the error names it), 5 some inputs failed and the rest
were done, 6 the recording does not exist.

Run 'archivectl COMMAND --help' for a command's flags.
`)
}

func printCommandHelp(w io.Writer, c *command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "usage: archivectl %s %s\n\n%s\n", c.name, c.args, c.summary)
	if c.help != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(c.help))
	}
	fmt.Fprintln(w, "\nflags:")
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// lib opens the archive the way the command needs it (once).
func (e *env) lib() (*replay.Archive, error) {
	if e.x != nil {
		return e.x, nil
	}
	if e.access == noAccess {
		return nil, errors.New("internal error: this command opens no archive")
	}
	x, err := replay.Open(e.archiveDir, replay.Options{
		Create:   e.access == createAccess,
		ReadOnly: e.access == readAccess,
		Wait:     e.wait,
		Command:  "archivectl " + strings.Join(os.Args[1:], " "),
		// A command has the machine to itself: an ingest splits and
		// compresses on its cores (serve keeps the default of one).
		Archive: archive.Options{CompressWorkers: min(runtime.GOMAXPROCS(0), maxCompressWorkers)},
	})
	if err != nil {
		return nil, err
	}
	e.x = x
	return x, nil
}

// recording opens the recording that ref names, for reading.
func (e *env) recording(ref string) (*replay.Recording, error) {
	x, err := e.lib()
	if err != nil {
		return nil, err
	}
	return x.Recording(ref)
}

// path resolves a path the user gave against their working directory.
func (e *env) path(p string) string {
	if p == "-" || p == "" || filepath.IsAbs(p) || e.cwd == "" {
		return p
	}
	return filepath.Join(e.cwd, p)
}

// defaultMemoryLimit is the soft memory limit (runtime/debug.SetMemoryLimit)
// of every command but serve, unless GOMEMLIMIT says otherwise. A command's
// live heap stays well below it (ingest of a 1 GB file: about 30 MiB), but
// Go's collector lets the heap grow to twice the live heap before it runs
// (GOGC=100): the limit makes it collect sooner when a long ingest's
// garbage would otherwise take the process past it (the aim: peak memory
// under 64 MiB over the process's baseline). It is soft: a command that
// needs more gets more, at the cost of more frequent collections.
const defaultMemoryLimit = 48 << 20

// recompressMemoryLimit is recompress's soft memory limit: zstd's best
// level holds about 40 MiB of match tables, and under defaultMemoryLimit
// the collector would run without pause (an ingest at that level took 8x
// the CPU).
const recompressMemoryLimit = 128 << 20

// maxCompressWorkers bounds an ingest's compressor workers (each holds
// its encoders, a few MiB): past two or three the codec's parse of a file,
// which is sequential, is the ingest's longest path.
const maxCompressWorkers = 4

// reindexMemoryLimit is reindex's soft memory limit: bleve analyses a
// batch of documents into an in-memory segment and merges segments while
// the next batches come (a live heap of about 90 MiB), and under
// defaultMemoryLimit the collector ran without pause (10,000 recordings:
// 63 s instead of 12 s; a million would take hours). At 192 MiB the heap
// and the mapped pages of the segments being merged passed reindex's
// 256 MiB goal at a million recordings, and at 160 MiB still did (by 6-11
// MiB); at 144 MiB a million peaked 245-250 MiB over in about as much
// time, at 128 MiB it took 27 min instead of 15-17 (docs/PERFORMANCE.md).
const reindexMemoryLimit = 144 << 20

// defaultGCPercent is the collector's GOGC for the commands that run under
// defaultMemoryLimit, unless GOGC says otherwise. The limit already bounds
// their heap, so collecting at twice the live heap (GOGC=100) buys nothing
// but collections: a short command such as frames ran one 15 ms collection
// when opening a 67-hour recording (its chunk table) and none for a one-hour
// one, which made opening a recording look length-bound.
const defaultGCPercent = 200

// serveGCPercent is serve's GOGC unless GOGC says otherwise. serve has
// no memory limit (its heap is sized by its clients and caches). Taking
// 256 growing files, a grow cost 8.0-8.4 ms of its CPU at GOGC=100 and
// 6.4-7.2 ms at 200, for a peak RSS of 81-84 MiB instead of 71-73
// (BenchmarkFleet, docs/PERFORMANCE.md "The fleet").
const serveGCPercent = 200

// setMemoryLimit applies defaultMemoryLimit (recompressMemoryLimit to
// recompress, reindexMemoryLimit to reindex), and defaultGCPercent unless
// GOGC is set, to the command in args. serve gets serveGCPercent unless
// GOGC is set, and no limit; any command when GOMEMLIMIT is set is left
// to the environment.
func setMemoryLimit(args []string) {
	if slices.Contains(args, "serve") {
		if os.Getenv("GOGC") == "" {
			debug.SetGCPercent(serveGCPercent)
		}
		return
	}
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	limit := int64(defaultMemoryLimit)
	if slices.Contains(args, "recompress") {
		limit = recompressMemoryLimit
	}
	if slices.Contains(args, "reindex") {
		limit = reindexMemoryLimit
	}
	debug.SetMemoryLimit(limit)
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGCPercent)
	}
}
