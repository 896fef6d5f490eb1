// archivectl flag, unflag, hold, release, delete: a moderator's marks on a
// recording, and the takedown of one.

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/internal/textsafe"
)

// flagOptions are the flags of archivectl flag.
type flagOptions struct {
	note string
}

// AddFlags declares the flags on fs.
func (o *flagOptions) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.note, "note", "", "why it was flagged")
}

func cmdFlag() *command {
	o := new(flagOptions)
	return &command{
		name: "flag", args: "ID NAME [--note TEXT]",
		summary: "flag a recording (searchable at once with flag:NAME)",
		help:    `A second flag of the same name with a new note replaces the note; the audit log keeps both.`,
		access:  writeAccess,
		flags:   o.AddFlags,
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) != 2 {
				return usagef("flag takes a recording ID and a flag name")
			}
			x, err := e.lib()
			if err != nil {
				return err
			}
			m, err := x.Flag(ctx, e.who, args[0], args[1], o.note)
			return printMark(e, m, err, "flagged %s: %s", args[1])
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
	json   bool
}

// AddFlags declares the flags on fs.
func (o *deleteOptions) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.reason, "reason", "", "why it is taken down (required)")
	fs.BoolVar(&o.json, "json", false, "print JSON")
}

func cmdDelete() *command {
	o := new(deleteOptions)
	return &command{
		name: "delete", args: "ID --reason TEXT [--json]",
		summary: "take a recording down now; its bytes are refused at ingest from then on",
		help: `Removes the recording from the catalog and the search index in one step,
then deletes its chunks, and remembers the file's sha256: ingesting the same
bytes again is refused, saying who took it down, when and why, until an
admin lifts it ('archivectl takedowns lift SHA256'). Killed in between,
'check --repair' or the next prune finishes the job. A held recording is
refused: release it first.`,
		access: writeAccess,
		flags:  o.AddFlags,
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) != 1 {
				return usagef("delete takes one recording ID")
			}
			if o.reason == "" {
				return usagef("--reason is required: a takedown says why")
			}
			x, err := e.lib()
			if err != nil {
				return err
			}
			m, err := x.Takedown(ctx, e.who, args[0], o.reason)
			var sweep *archive.SweepError
			if err != nil && !errors.As(err, &sweep) {
				return err
			}
			if o.json {
				out := map[string]any{"deleted": m.ID.String(), "stored_bytes": m.StoredBytes, "sha256": m.SHA256}
				if sweep != nil {
					out["warning"] = sweep.Error()
				}
				if jerr := writeJSON(e, out); jerr != nil {
					return jerr
				}
			} else {
				fmt.Fprintf(e.stdout, "deleted %s (%s stored); its bytes are refused from now on\n", m.ID, humanBytes(m.StoredBytes))
			}
			if sweep != nil {
				fmt.Fprintf(e.stderr, "warning: %v\n", sweep)
				return errSilent
			}
			return nil
		},
	}
}
