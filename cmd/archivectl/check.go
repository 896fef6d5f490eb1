// archivectl check: verify the archive's consistency, and repair it.

package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"

	"github.com/replayarchive/replay/archive"
)

// checkOptions are the flags of archivectl check.
type checkOptions struct {
	readData    bool
	repair      bool
	json        bool
	orphanGrace string
}

// AddFlags declares the flags on fs.
func (o *checkOptions) AddFlags(fs *flag.FlagSet) {
	fs.BoolVar(&o.readData, "read-data", false, "decompress and verify every chunk and sha256")
	fs.BoolVar(&o.repair, "repair", false, "remove orphans and dangling entries, finish interrupted deletes")
	fs.BoolVar(&o.json, "json", false, "print the report as JSON")
	fs.StringVar(&o.orphanGrace, "orphan-grace", "24h", "with a remote store, --repair deletes bucket objects no manifest names only past this age (at least 12h)")
}

func cmdCheck() *command {
	o := new(checkOptions)
	return &command{
		name:    "check",
		args:    "[--read-data] [--repair [--orphan-grace 24h]] [--json]",
		summary: "verify manifests, chunks and catalog; --repair removes orphans",
		help: `Without flags, check proves that every manifest has its header and all its
chunks, that no chunk in any shard is without a manifest, and that the
catalog's side tables point at live recordings (and its index of the
sources' sizes matches them). --read-data also
decompresses every chunk, checks its CRC-32C and each recording's sha256.
--repair finishes interrupted deletes, removes orphaned chunks (left by a
crash during ingest or prune) and dangling catalog entries, rebuilds the
reference counts of shared blobs from the chunks that refer to them and
the index of sizes from the sources and takedowns, removes the upload spools
(<archive>/tmp/upload-*) a process killed mid-upload left (any command that
opens the archive for writing removes them too), then checks again. With a
remote store it also deletes bucket objects no manifest names and manifests
whose object is gone, once older than --orphan-grace (24h, at least 12h):
younger ones may be another writer's upload in flight, and are listed as
young. Exit status 1 when problems remain.`,
		flags: o.AddFlags,
		run:   func(ctx context.Context, e *env, args []string) error { return runCheck(ctx, e, o, args) },
	}
}

func runCheck(ctx context.Context, e *env, o *checkOptions, args []string) error {
	if len(args) > 0 {
		return usagef("check takes no arguments")
	}
	if o.repair && e.access != writeAccess {
		// Repairs write: open the archive for writing.
		e.access = writeAccess
	}
	opening := e.x == nil // not a server's archive, run there for us
	x, err := e.lib()
	if err != nil {
		return err
	}
	prog := newProgress(e.stderr, "check")
	grace, err := parseDurationFlag("--orphan-grace", o.orphanGrace)
	if err != nil {
		return err
	}
	copts := archive.CheckOptions{ReadData: o.readData, Repair: o.repair, OrphanGrace: grace, Progress: func(done, total int) {
		prog.update(func() string { return fmt.Sprintf("%d/%d recordings", done, total) })
	}}
	rep, err := x.Check(ctx, copts)
	prog.clear()
	if err != nil {
		return err
	}
	if o.repair && opening {
		// Opening the archive for the repair removed leftover spools
		// before the check saw them: they are part of what was repaired.
		at := x.SpoolsRemovedAtOpen()
		rep.Spools.Count += at.Count
		rep.Spools.Bytes += at.Bytes
	}
	final := rep
	if o.repair {
		copts.Repair = false
		if final, err = x.Check(ctx, copts); err != nil {
			return err
		}
	}
	if o.json {
		out := struct {
			*archive.CheckReport
			OK        bool                 `json:"ok"`
			BeforeFix *archive.CheckReport `json:"before_repair,omitempty"`
		}{final, final.OK(), nil}
		if o.repair {
			out.BeforeFix = rep
		}
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		enc.Encode(out)
	} else {
		if o.repair {
			fmt.Fprintf(e.stdout, "repaired: %d orphaned chunks (%s), %d dangling catalog entries, %d unfinished deletes, %d miscounted references, %d miscounted sizes, %d leftover upload spools (%s)\n",
				rep.Orphans, humanBytes(rep.OrphanBytes), len(rep.Dangling), rep.PendingDeletes, rep.Miscounted, rep.MiscountedSizes, rep.Spools.Count, humanBytes(rep.Spools.Bytes))
			if rc := rep.Remote; rc != nil && rc.Repaired {
				fmt.Fprintf(e.stdout, "repaired remote: %d orphan objects (%s), %d manifests without objects\n", len(rc.Orphans), humanBytes(rc.OrphanBytes), len(rc.Missing))
			}
		}
		printCheck(e, final, o.readData)
	}
	if !final.OK() {
		return errSilent
	}
	return nil
}

func printCheck(e *env, r *archive.CheckReport, readData bool) {
	depth := "chunks present"
	if readData {
		depth = "all data read and verified"
	}
	fmt.Fprintf(e.stdout, "%s, %s (%s)\n", plural(r.Recordings, "recording", ""), plural(r.Chunks, "chunk", ""), depth)
	for _, p := range r.Problems {
		fmt.Fprintf(e.stdout, "problem: %s\n", p)
	}
	if r.Orphans > 0 {
		fmt.Fprintf(e.stdout, "orphans: %d chunks without a manifest (%s); run check --repair\n", r.Orphans, humanBytes(r.OrphanBytes))
	}
	if r.MiscountedSizes > 0 {
		fmt.Fprintf(e.stdout, "sizes: the index of the sources' sizes has %d entries missing or extra; run check --repair\n", r.MiscountedSizes)
	}
	if r.Miscounted > 0 {
		fmt.Fprintf(e.stdout, "shared blobs: %d reference entries do not match the chunks; run check --repair\n", r.Miscounted)
	}
	for _, d := range r.Dangling {
		fmt.Fprintf(e.stdout, "dangling: %s; run check --repair\n", d)
	}
	if r.Spools.Count > 0 {
		fmt.Fprintf(e.stdout, "upload spools: %d left by a killed upload (%s); run check --repair\n", r.Spools.Count, humanBytes(r.Spools.Bytes))
	}
	if r.PendingDeletes > 0 {
		fmt.Fprintf(e.stdout, "unfinished deletes: %d; run check --repair or prune\n", r.PendingDeletes)
	}
	if rc := r.Remote; rc != nil {
		fmt.Fprintf(e.stdout, "remote: %d objects, %d manifests\n", rc.Objects, rc.Manifests)
		for _, k := range rc.Orphans {
			fmt.Fprintf(e.stdout, "remote orphan: %s has no manifest; run check --repair\n", k)
		}
		for _, k := range rc.Missing {
			fmt.Fprintf(e.stdout, "remote manifest without its object: %s; run check --repair\n", k)
		}
		for _, k := range rc.Unreadable {
			fmt.Fprintf(e.stdout, "remote manifest unreadable: %s\n", k)
		}
		if len(rc.Young) > 0 {
			fmt.Fprintf(e.stdout, "remote: %d objects or manifests younger than the orphan grace left alone (uploads or deletes in flight)\n", len(rc.Young))
		}
	}
	if r.OK() {
		fmt.Fprintln(e.stdout, "ok")
	}
}
