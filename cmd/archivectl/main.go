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
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/google/uuid"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/query"
)

// command is one subcommand; each lives in its own file.
type command struct {
	name    string
	args    string // synopsis of the arguments
	summary string // one line for the command list
	help    string // longer help shown by `archivectl COMMAND --help`
	// flags declares the command's flags on fs; run does the work.
	flags func(fs *flag.FlagSet, o *opts)
	run   func(ctx context.Context, env *env, o *opts, args []string) error
}

// opts holds every flag a command may declare; each command uses its own.
type opts struct {
	json, dryRun, readData, repair, includeFlagged, stats  bool
	from, to                                               int64
	out, format, note, reason, olderThan, maxBytes, maxAge string
	limit                                                  int
	formats                                                stringList
	exportOpts                                             stringList
}

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// env is what a command runs with.
type env struct {
	archiveDir     string
	stdin          io.Reader
	stdout, stderr io.Writer
	archive        *archive.Archive
	index          *query.Index
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
		cmdIngest(), cmdLs(), cmdShow(), cmdExport(), cmdFrames(), cmdSearch(), cmdReindex(),
		cmdFlag(), cmdUnflag(), cmdHold(), cmdRelease(), cmdDelete(),
		cmdRetention(), cmdPrune(), cmdCheck(), cmdStats(), cmdGhost(), cmdDemo(),
	}
	return cmds
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is main without the process: it returns the exit status.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr}
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
				return 2
			}
			e.archiveDir, args = args[1], args[2:]
		case strings.HasPrefix(a, "--archive=") || strings.HasPrefix(a, "-archive="):
			e.archiveDir, args = a[strings.Index(a, "=")+1:], args[1:]
		case a == "-h" || a == "--help" || a == "-help":
			printHelp(stdout)
			return 0
		default:
			fmt.Fprintf(stderr, "archivectl: unknown global flag %s (see archivectl help)\n", a)
			return 2
		}
	}
	if len(args) == 0 {
		printHelp(stderr)
		return 2
	}
	name, args := args[0], args[1:]
	if name == "help" {
		if len(args) > 0 {
			if c := findCommand(args[0]); c != nil {
				printCommandHelp(stdout, c, newFlagSet(c, &opts{}, e))
				return 0
			}
		}
		printHelp(stdout)
		return 0
	}
	c := findCommand(name)
	if c == nil {
		fmt.Fprintf(stderr, "archivectl: unknown command %q (see archivectl help)\n", name)
		return 2
	}
	var o opts
	fs := newFlagSet(c, &o, e)
	pos, err := parseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		printCommandHelp(stdout, c, fs)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "archivectl %s: %v\nusage: archivectl %s %s\n", c.name, err, c.name, c.args)
		return 2
	}
	err = c.run(ctx, e, &o, pos)
	if e.index != nil {
		if cerr := e.index.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}
	if e.archive != nil {
		if cerr := e.archive.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}
	var ue errUsage
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "archivectl %s: %v\nusage: archivectl %s %s\n", c.name, err, c.name, c.args)
		return 2
	case errors.Is(err, errSilent):
		return 1
	default:
		fmt.Fprintf(stderr, "archivectl %s: %v\n", c.name, err)
		return 1
	}
}

func findCommand(name string) *command {
	for _, c := range commands() {
		if c.name == name {
			return c
		}
	}
	return nil
}

func newFlagSet(c *command, o *opts, e *env) *flag.FlagSet {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&e.archiveDir, "archive", e.archiveDir, "archive `DIR` (default $REPLAY_ARCHIVE, else ./replays.archive)")
	if c.flags != nil {
		c.flags(fs, o)
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

// resolve opens the archive and resolves a recording id or unique prefix.
func (e *env) resolve(ref string) (*archive.Archive, uuid.UUID, error) {
	a, err := e.open()
	if err != nil {
		return nil, uuid.Nil, err
	}
	id, err := a.Resolve(ref)
	return a, id, err
}

// recording opens the recording that ref names, for reading.
func (e *env) recording(ref string) (*archive.Recording, error) {
	a, id, err := e.resolve(ref)
	if err != nil {
		return nil, err
	}
	return a.Open(id)
}

// open opens the archive for a command that needs it.
func (e *env) open() (*archive.Archive, error) {
	if e.archive != nil {
		return e.archive, nil
	}
	a, err := archive.Open(e.archiveDir, archive.Options{})
	if err != nil {
		return nil, err
	}
	e.archive = a
	return a, nil
}
