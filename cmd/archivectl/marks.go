// archivectl flag, unflag, hold, release, delete: a moderator's marks on a
// recording, and the takedown of one.

package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/internal/textsafe"
	"github.com/replayarchive/replay/internal/units"
	"github.com/replayarchive/replay/wire"
)

// flagOptions are the flags of archivectl flag.
type flagOptions struct {
	note     string
	from, to string
}

// AddFlags declares the flags on fs.
func (o *flagOptions) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.note, "note", "", "why it was flagged")
	fs.StringVar(&o.from, "from", "", "flag a moment from this tick, offset (1m04s) or m:ss (with --to)")
	fs.StringVar(&o.to, "to", "", "to this tick, offset or m:ss (with --from)")
}

func cmdFlag() *command {
	o := new(flagOptions)
	return &command{
		name: "flag", args: "ID NAME [--note TEXT] [--from T --to T]",
		summary: "flag a recording or a moment of it (searchable at once with flag:NAME)",
		help: `Flags the whole recording, or with --from and --to the moment between
them ("griefing at 0:42-0:50": --from 0:42 --to 0:50); each is a tick
(1500), an offset from the start (42s, 1m04s) or minutes and seconds
(0:42, 1:02:03). A range running past the end is cut there. The web
page marks the moment on the timeline and opens the recording there.
A second flag of the same name replaces the note and the range (none:
the whole recording again); the audit log keeps both. The flag opens a
case on the recording, or adds a note to its open case ('archivectl
cases').`,
		access: writeAccess,
		flags:  o.AddFlags,
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) != 2 {
				return usagef("flag takes a recording ID and a flag name")
			}
			x, err := e.lib()
			if err != nil {
				return err
			}
			if (o.from == "") != (o.to == "") {
				return usagef("--from and --to go together (neither: the whole recording)")
			}
			m, err := x.FlagAt(ctx, e.who, args[0], args[1], o.note, o.from, o.to)
			if errors.Is(err, replay.ErrBadTick) || errors.Is(err, replay.ErrEmptyRange) {
				return usagef("%v", err)
			}
			what := args[1]
			if err == nil {
				for _, f := range m.Flags {
					if f.Name == strings.TrimSpace(args[1]) && f.Range != nil {
						what += fmt.Sprintf(" at ticks %d-%d", f.Range.From, f.Range.To)
					}
				}
			}
			return printMark(e, m, err, "flagged %s: %s", what)
		},
	}
}

// unflagOptions are the flags of archivectl unflag.
type unflagOptions struct {
	reason string
}

// AddFlags declares the flags on fs.
func (o *unflagOptions) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.reason, "reason", "", "why (for the audit log)")
}

func cmdUnflag() *command {
	o := new(unflagOptions)
	return &command{
		name: "unflag", args: "ID NAME [--reason TEXT]", summary: "remove a moderator's flag",
		access: writeAccess,
		flags:  o.AddFlags,
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) != 2 {
				return usagef("unflag takes a recording ID and a flag name")
			}
			x, err := e.lib()
			if err != nil {
				return err
			}
			m, err := x.Unflag(ctx, e.who, args[0], args[1], o.reason)
			return printMark(e, m, err, "unflagged %s: %s", args[1])
		},
	}
}

// holdOptions are the flags of archivectl hold.
type holdOptions struct {
	reason string
}

// AddFlags declares the flags on fs.
func (o *holdOptions) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.reason, "reason", "", "why it is held (required)")
}

func cmdHold() *command {
	o := new(holdOptions)
	return &command{
		name: "hold", args: "ID --reason TEXT",
		summary: "pin a recording: retention and takedowns leave it alone",
		access:  writeAccess,
		flags:   o.AddFlags,
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) != 1 {
				return usagef("hold takes one recording ID")
			}
			if o.reason == "" {
				return usagef("--reason is required")
			}
			x, err := e.lib()
			if err != nil {
				return err
			}
			m, err := x.Hold(ctx, e.who, args[0], o.reason)
			return printMark(e, m, err, "held %s: %s", o.reason)
		},
	}
}

// releaseOptions are the flags of archivectl release.
type releaseOptions struct {
	reason string
}

// AddFlags declares the flags on fs.
func (o *releaseOptions) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.reason, "reason", "", "why (for the audit log)")
}

func cmdRelease() *command {
	o := new(releaseOptions)
	return &command{
		name: "release", args: "ID [--reason TEXT]", summary: "remove a hold",
		access: writeAccess,
		flags:  o.AddFlags,
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) != 1 {
				return usagef("release takes one recording ID")
			}
			x, err := e.lib()
			if err != nil {
				return err
			}
			m, err := x.Release(ctx, e.who, args[0], o.reason)
			return printMark(e, m, err, "released %s%s", "")
		},
	}
}

// printMark reports a mark, or its error.
func printMark(e *env, m *archive.Manifest, err error, done, what string) error {
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, textsafe.Line(fmt.Sprintf(done, m.ID, what)))
	return nil
}

// deleteOptions are the flags of archivectl delete.
type deleteOptions struct {
	reason string
	grace  string
	now    bool
	yes    bool
	json   bool
}

// AddFlags declares the flags on fs.
func (o *deleteOptions) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.reason, "reason", "", "why it is taken down (required)")
	fs.StringVar(&o.grace, "grace", units.FormatDuration(archive.DefaultGrace), "keep its bytes this long for 'takedowns undo' (e.g. 7d, 12h)")
	fs.BoolVar(&o.now, "now", false, "purge its bytes at once (a legal order): no undo")
	fs.BoolVar(&o.yes, "yes", false, "do not ask for confirmation (required when stdin is not a terminal)")
	fs.BoolVar(&o.json, "json", false, "print JSON")
}

func cmdDelete() *command {
	o := new(deleteOptions)
	return &command{
		name: "delete", args: "ID --reason TEXT [--grace DUR | --now] [--yes] [--json]",
		summary: "take a recording down: hidden at once, its bytes and identity refused at ingest",
		help: `Takes the recording down: it is gone at once from every list, search, show,
frames, file and export, and the search index drops it. Its file's bytes
and its identity (the recording id, the id the file names, its session)
are refused at ingest from then on, saying who took it down, when and why.
Its bytes are kept for --grace (default 7d): 'archivectl takedowns undo ID'
restores it until then, and the janitor (serve, prune, 'takedowns purge')
deletes them after. --now deletes them at once (a legal order), as
'takedowns purge ID' does later. On a terminal it asks first, naming the
recording; elsewhere pass --yes. A held recording is refused: release it
first. After the purge, only an admin's 'takedowns lift' lets the bytes in
again.`,
		access: writeAccess,
		flags:  o.AddFlags,
		run:    func(ctx context.Context, e *env, args []string) error { return runDelete(ctx, e, o, args) },
	}
}

func runDelete(ctx context.Context, e *env, o *deleteOptions, args []string) error {
	if len(args) != 1 {
		return usagef("delete takes one recording ID")
	}
	if o.reason == "" {
		return usagef("--reason is required: a takedown says why")
	}
	grace, err := parseDuration(o.grace)
	if err != nil || grace <= 0 {
		return usagef("--grace %q: want a positive duration such as 7d or 12h (or --now)", o.grace)
	}
	if o.now {
		grace = 0
	}
	if !o.yes && !isTerminal(e.stdin) {
		return usagef("delete asks before taking a recording down, and stdin is not a terminal: pass --yes to take %s down", args[0])
	}
	x, err := e.lib()
	if err != nil {
		return err
	}
	if !o.yes {
		m, err := x.Manifest(args[0])
		if err != nil {
			return err
		}
		players := make([]string, len(m.Meta.Players))
		for i, p := range m.Meta.Players {
			players[i] = p.Name
		}
		if !confirmTakedown(e, m.ID.String(), m.Format, players, fmtTime(m.Meta.Start)) {
			fmt.Fprintln(e.stderr, "not taken down")
			return errSilent
		}
	}
	m, t, err := x.Takedown(ctx, e.who, args[0], o.reason, grace)
	var sweep *archive.SweepError
	if err != nil && !errors.As(err, &sweep) {
		return err
	}
	if o.json {
		var warning error
		if sweep != nil {
			warning = sweep
		}
		if jerr := writeJSON(e, wire.TakenDownOf(m, t, warning)); jerr != nil {
			return jerr
		}
	} else if t != nil && t.State == archive.TakedownPending {
		fmt.Fprintf(e.stdout, "took down %s (%s stored): hidden now, its bytes and identity refused; kept until %s ('archivectl takedowns undo %s' restores it)\n",
			m.ID, humanBytes(m.StoredBytes), fmtTime(t.PurgeAt), m.ID.String()[:8])
	} else {
		fmt.Fprintf(e.stdout, "took down and purged %s (%s stored); its bytes and identity are refused from now on\n", m.ID, humanBytes(m.StoredBytes))
	}
	if sweep != nil {
		fmt.Fprintf(e.stderr, "warning: %v\n", sweep)
		return errSilent
	}
	return nil
}

// confirmTakedown asks on the terminal whether to take down recording id
// (of format, with players, started at start); only "y" or "yes" says so.
func confirmTakedown(e *env, id, format string, players []string, start string) bool {
	who := "no players"
	if len(players) > 0 {
		who = trunc(strings.Join(players, ", "), 60)
	}
	fmt.Fprintf(e.stderr, "take down %s (%s, %s, %s)? [y/N] ", id, format, textsafe.Line(who), start)
	answer, _ := bufio.NewReader(e.stdin).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
		return true
	}
	return false
}
