// archivectl recompress: re-encode sealed recordings at zstd's best level,
// once, and give the bytes it saves back to the file system.

package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/replayarchive/replay/archive"
)

// recompressOptions are the flags of archivectl recompress.
type recompressOptions struct {
	olderThan string
	dryRun    bool
	retrain   bool
	json      bool
}

// AddFlags declares the flags on fs.
func (o *recompressOptions) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.olderThan, "older-than", "", "only recordings older than `DUR` (e.g. 30d); default: every sealed one")
	fs.BoolVar(&o.dryRun, "dry-run", false, "count what would be re-encoded, change nothing")
	fs.BoolVar(&o.retrain, "retrain", false, "train every format's header dictionary again from the newest recordings")
	fs.BoolVar(&o.json, "json", false, "print JSON")
}

func cmdRecompress() *command {
	o := new(recompressOptions)
	return &command{
		name: "recompress", args: "[--older-than DUR] [--dry-run] [--retrain] [--json]",
		summary: "store sealed recordings smaller: re-encode them at zstd's best level",
		access:  writeAccess,
		help: `Ingest compresses at zstd's default level, which keeps its memory and
time low. A sealed recording (not live, not in the remote store) no longer
changes, so this pass encodes its chunks once more at zstd's best level:
simulated DDNet servers' files shrink by about 9% more, to 0.69x the size
of each file compressed with xz -9e (docs/PERFORMANCE.md). Each new chunk is decoded and checked against
the chunk's checksum before it replaces the old one: exports stay
byte-identical, and seeking still reads one chunk. A recording is done
once (show prints when); --older-than limits the pass to old recordings.

The pass also keeps each format's header dictionary: the headers of one
game server differ in a few fields, so a new recording's header is
compressed against a dictionary of headers the archive holds (the
corpus's real DDNet files, 3-73 KB each, are 0.78x the size of each file
compressed with xz -9e after this pass).
A format without one (or with one made from few recordings) gets one,
trained from the newest recordings, and every header that the dictionary
makes smaller is compressed again. --retrain trains every format's
dictionary again (after the servers changed); older dictionaries are
kept, so everything written with them stays readable. 'stats' lists the
dictionaries. An ingest trains a format's first dictionary by itself once
it has archived 4 recordings of it, and again each time their number
doubles, up to 64.

Afterwards the shards it wrote to, and the catalog, are rewritten by
copy-and-rename so the freed pages go back to the file system.

The pass runs on one core and holds about 40 MiB of encoder tables (its
soft memory limit is 128 MiB, not 48, unless GOMEMLIMIT is set). It takes
about a second per 8 to 12 MB of native recording on this project's
machine.
Interrupted, it leaves every recording readable; run it again to finish
('check' names chunks whose size the catalog does not yet record).`,
		flags: o.AddFlags,
		run:   func(ctx context.Context, e *env, args []string) error { return runRecompress(ctx, e, o, args) },
	}
}

func runRecompress(ctx context.Context, e *env, o *recompressOptions, args []string) error {
	if len(args) > 0 {
		return usagef("recompress takes no arguments")
	}
	older, err := parseAge(o.olderThan)
	if err != nil {
		return usagef("--older-than: %v", err)
	}
	x, err := e.lib()
	if err != nil {
		return err
	}
	prog := newProgress(e.stderr, "recompress")
	opts := archive.RecompressOptions{OlderThan: older, DryRun: o.dryRun, Retrain: o.retrain, Progress: func(p archive.RecompressProgress) {
		prog.update(func() string {
			return fmt.Sprintf("%d of %d recordings, %s -> %s stored, %s native in %s", p.Done, p.Total,
				humanBytes(p.StoredBefore), humanBytes(p.StoredAfter), humanBytes(p.NativeBytes), p.Elapsed.Round(time.Second))
		})
	}}
	rep, err := x.Recompress(ctx, e.who, opts)
	prog.clear()
	if err != nil {
		return err
	}
	if o.json {
		if err := writeJSON(e, struct {
			DryRun bool `json:"dry_run"`
			*archive.RecompressReport
		}{o.dryRun, rep}); err != nil {
			return err
		}
		return problemsErr(e, rep.Problems)
	}
	if o.dryRun {
		fmt.Fprintf(e.stdout, "would re-encode %s: %s, %s stored (%d bytes), %s native\n",
			plural(rep.Recordings, "recording", ""), plural(rep.Chunks, "chunk", ""), humanBytes(rep.StoredBefore), rep.StoredBefore, humanBytes(rep.NativeBytes))
	} else {
		saved := rep.StoredBefore - rep.StoredAfter
		pct := 0.0
		if rep.StoredBefore > 0 {
			pct = 100 * float64(saved) / float64(rep.StoredBefore)
		}
		fmt.Fprintf(e.stdout, "re-encoded %s (%d of %d chunks smaller): %s -> %s stored, %s (%.1f%%) saved, in %s\n",
			plural(rep.Recordings, "recording", ""), rep.ChunksWritten, rep.Chunks, humanBytes(rep.StoredBefore), humanBytes(rep.StoredAfter),
			humanBytes(saved), pct, rep.Elapsed.Round(time.Millisecond))
		if rep.EventsSaved > 0 {
			fmt.Fprintf(e.stdout, "events compressed again: %s of that saved\n", humanBytes(rep.EventsSaved))
		}
		if len(rep.DictsTrained) > 0 || rep.HeadsRewritten > 0 {
			fmt.Fprintf(e.stdout, "header dictionaries trained for %v; %s compressed again, %s saved\n",
				rep.DictsTrained, plural(rep.HeadsRewritten, "header", ""), humanBytes(rep.HeadsSaved))
		}
		if rep.Skipped > 0 {
			fmt.Fprintf(e.stdout, "left %s that changed during the pass (deleted, replaced or uploaded)\n", plural(rep.Skipped, "recording", ""))
		}
		if len(rep.ShardsCompacted) > 0 || rep.CatalogCompacted {
			fmt.Fprintf(e.stdout, "compacted shards %v, catalog %v\n", rep.ShardsCompacted, rep.CatalogCompacted)
		}
		fmt.Fprintf(e.stdout, "on disk: %s before, %s after\n", humanBytes(rep.DiskBefore), humanBytes(rep.DiskAfter))
	}
	if rep.AlreadyDone > 0 || rep.NotSealed > 0 {
		fmt.Fprintf(e.stdout, "not in this pass: %d already re-encoded, %d live or in the remote store\n", rep.AlreadyDone, rep.NotSealed)
	}
	return problemsErr(e, rep.Problems)
}

// problemsErr prints the damaged chunks a pass left alone to stderr and
// fails the command if there were any.
func problemsErr(e *env, problems []string) error {
	for _, p := range problems {
		fmt.Fprintf(e.stderr, "damaged, left as it is: %s\n", p)
	}
	if len(problems) > 0 {
		return fmt.Errorf("%d chunks could not be read back; 'archivectl check --read-data' lists every damaged recording", len(problems))
	}
	return nil
}
