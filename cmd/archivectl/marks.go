// archivectl flag, unflag, hold, release, delete: a moderator's marks on a
// recording, and the takedown of one.

package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/google/uuid"
	"github.com/replayarchive/replay/archive"
)

func cmdFlag() *command {
	return &command{
		name: "flag", args: "ID NAME [--note TEXT]",
		summary: "flag a recording (searchable at once with flag:NAME)",
		flags:   func(fs *flag.FlagSet, o *opts) { fs.StringVar(&o.note, "note", "", "why it was flagged") },
		run: func(ctx context.Context, e *env, o *opts, args []string) error {
			if len(args) != 2 {
				return usagef("flag takes a recording ID and a flag name")
			}
			return mark(ctx, e, args[0], "flagged %s: %s", args[1], func(a *archive.Archive, id uuid.UUID) (*archive.Manifest, error) {
				return a.SetFlag(id, args[1], o.note)
			})
		},
	}
}

func cmdUnflag() *command {
	return &command{
		name: "unflag", args: "ID NAME", summary: "remove a moderator's flag",
		run: func(ctx context.Context, e *env, o *opts, args []string) error {
			if len(args) != 2 {
				return usagef("unflag takes a recording ID and a flag name")
			}
			return mark(ctx, e, args[0], "unflagged %s: %s", args[1], func(a *archive.Archive, id uuid.UUID) (*archive.Manifest, error) {
				return a.Unflag(id, args[1])
			})
		},
	}
}

func cmdHold() *command {
	return &command{
		name: "hold", args: "ID --reason TEXT",
		summary: "pin a recording: retention and delete leave it alone",
		flags:   func(fs *flag.FlagSet, o *opts) { fs.StringVar(&o.reason, "reason", "", "why it is held (required)") },
		run: func(ctx context.Context, e *env, o *opts, args []string) error {
			if len(args) != 1 {
				return usagef("hold takes one recording ID")
			}
			if o.reason == "" {
				return usagef("--reason is required")
			}
			return mark(ctx, e, args[0], "held %s: %s", o.reason, func(a *archive.Archive, id uuid.UUID) (*archive.Manifest, error) {
				return a.SetHold(id, o.reason)
			})
		},
	}
}

func cmdRelease() *command {
	return &command{
		name: "release", args: "ID", summary: "remove a hold",
		run: func(ctx context.Context, e *env, o *opts, args []string) error {
			if len(args) != 1 {
				return usagef("release takes one recording ID")
			}
			return mark(ctx, e, args[0], "released %s%s", "", func(a *archive.Archive, id uuid.UUID) (*archive.Manifest, error) {
				return a.Release(id)
			})
		},
	}
}

// mark resolves ref, applies fn, brings the search index up to date and
// prints what was done.
func mark(ctx context.Context, e *env, ref, done, what string, fn func(*archive.Archive, uuid.UUID) (*archive.Manifest, error)) error {
	a, id, err := e.resolve(ref)
	if err != nil {
		return err
	}
	if _, err := fn(a, id); err != nil {
		return fmt.Errorf("%s: %w", id, err)
	}
	if err := syncIndex(ctx, e); err != nil {
		return err
	}
	if what == "" {
		fmt.Fprintf(e.stdout, done+"\n", id, "")
	} else {
		fmt.Fprintf(e.stdout, done+"\n", id, what)
	}
	return nil
}

func cmdDelete() *command {
	return &command{
		name: "delete", args: "ID [--json]",
		summary: "remove one recording now (a takedown); refuses held ones",
		help: `Removes the recording from the catalog and the search index in one step,
then deletes its chunks. Killed in between, 'check --repair' or the next
prune finishes the job. A held recording is refused: release it first.`,
		flags: func(fs *flag.FlagSet, o *opts) { fs.BoolVar(&o.json, "json", false, "print JSON") },
		run: func(ctx context.Context, e *env, o *opts, args []string) error {
			if len(args) != 1 {
				return usagef("delete takes one recording ID")
			}
			a, id, err := e.resolve(args[0])
			if err != nil {
				return err
			}
			m, err := a.Delete(ctx, id)
			if err != nil {
				return err
			}
			if err := syncIndex(ctx, e); err != nil {
				return err
			}
			if o.json {
				return writeJSON(e, map[string]any{"deleted": id.String(), "stored_bytes": m.StoredBytes})
			}
			fmt.Fprintf(e.stdout, "deleted %s (%s stored)\n", id, humanBytes(m.StoredBytes))
			return nil
		},
	}
}
