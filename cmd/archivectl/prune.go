// archivectl prune: apply the retention policy in two phases (mark in the
// catalog and the search index, then sweep chunks and give disk space back),
// or say with --dry-run what that would do.

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/wire"
)

// pruneOptions are the flags of archivectl prune.
type pruneOptions struct {
	dryRun         bool
	json           bool
	olderThan      string
	maxBytes       string
	includeFlagged bool
	formats        stringList
}

// AddFlags declares the flags on fs.
func (o *pruneOptions) AddFlags(fs *flag.FlagSet) {
	fs.BoolVar(&o.dryRun, "dry-run", false, "list what would go, change nothing")
	fs.BoolVar(&o.json, "json", false, "print JSON: what POST /api/v1/prune answers (dry_run, policy_source, policy, plan, report)")
	fs.StringVar(&o.olderThan, "older-than", "", "remove recordings older than `DUR` (e.g. 90d)")
	fs.StringVar(&o.maxBytes, "max-bytes", "", "remove the oldest until the recordings in scope take at most `SIZE`")
	fs.BoolVar(&o.includeFlagged, "include-flagged", false, "remove flagged recordings too")
	fs.Var(&o.formats, "format", "only recordings of this `format` (repeatable)")
}

func cmdPrune() *command {
	o := new(pruneOptions)
	return &command{
		name: "prune", args: "[--dry-run] [--json] [--older-than DUR] [--max-bytes SIZE] [--include-flagged] [--format F]...",
		summary: "apply retention: remove old recordings and give the disk space back",
		access:  writeAccess,
		help: `Applies the stored retention policy (see 'archivectl retention'), or the
limits given here: --older-than and --max-bytes together replace the
stored limits, --format replaces the stored formats. A held recording is
never removed; a flagged one only with --include-flagged.

First the recordings go from the catalog and the search index in one
commit; then their chunks are deleted, shard files left empty are
unlinked, sparse shards (live data under half the file) and a sparse
catalog are rewritten by copy-and-rename. The bytes reported as returned
are measured on disk before and after. --dry-run lists what would go and
estimates the bytes that would come back, changing nothing.

Killed at any point, running prune again finishes the job; 'check' is
clean after that run.`,
		flags: o.AddFlags,
		run:   func(ctx context.Context, e *env, args []string) error { return runPrune(ctx, e, o, args) },
	}
}

func runPrune(ctx context.Context, e *env, o *pruneOptions, args []string) error {
	if len(args) > 0 {
		return usagef("prune takes no arguments")
	}
	x, err := e.lib()
	if err != nil {
		return err
	}
	if err := replay.CheckFormats(o.formats); err != nil {
		return usagef("--format: %v", err)
	}
	pol, source, err := prunePolicy(x, o)
	if err != nil {
		return err
	}
	plan, err := x.Plan(ctx, pol, archive.PlanOptions{IncludeFlagged: o.includeFlagged})
	if err != nil {
		return err
	}
	if o.dryRun {
		if o.json {
			return writeJSON(e, wire.Prune{DryRun: true, PolicySource: source, Policy: wire.PolicyOf(&pol), Plan: plan})
		}
		printPlan(e, plan, source)
		return nil
	}

	if e.access == readAccess {
		return errors.New("internal error: prune opened the archive read-only")
	}
	rep, err := x.Prune(ctx, e.who, plan)
	if err != nil {
		return err
	}
	if o.json {
		return writeJSON(e, wire.Prune{PolicySource: source, Policy: wire.PolicyOf(&pol), Plan: plan, Report: rep})
	}
	printPruneReport(e, plan, rep, source)
	return nil
}

// prunePolicy returns the policy prune applies and where it comes from.
func prunePolicy(x *replay.Archive, o *pruneOptions) (archive.Policy, string, error) {
	var pol archive.Policy
	stored, err := x.Policy()
	if err != nil {
		return pol, "", err
	}
	source := "stored policy"
	if stored != nil {
		pol = *stored
	}
	if o.olderThan != "" || o.maxBytes != "" {
		source = "command line"
		if pol.MaxAge, err = parseAge(o.olderThan); err != nil {
			return pol, "", usagef("--older-than: %v", err)
		}
		if pol.MaxBytes, err = parseSize(o.maxBytes); err != nil {
			return pol, "", usagef("--max-bytes: %v", err)
		}
	}
	if len(o.formats) > 0 {
		pol.Formats = o.formats
		if source == "stored policy" {
			source = "stored limits, formats from the command line"
		}
	}
	if pol.IsZero() {
		return pol, "", usagef("no retention policy: set one with 'archivectl retention set', or give --older-than or --max-bytes")
	}
	return pol, source, nil
}

func printPlan(e *env, plan *archive.Plan, source string) {
	fmt.Fprintf(e.stdout, "policy (%s): %s\n", source, describePolicy(&plan.Policy))
	if len(plan.Remove) > 0 {
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tFORMAT\tSTART\tREASON\tSTORED")
		for _, c := range plan.Remove {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", c.ID, c.Format, fmtTime(c.Start), c.Reason, humanBytes(c.StoredBytes))
		}
		tw.Flush()
	}
	fmt.Fprintf(e.stdout, "would remove %d of %s in scope, %s stored (%d bytes)\n",
		len(plan.Remove), plural(plan.ScopeRecordings, "recording", ""), humanBytes(plan.StoredBytes), plan.StoredBytes)
	est := plan.EstimatedReturn + plan.EstimatedCatalogReturn
	fmt.Fprintf(e.stdout, "would give back about %s (%d bytes) to the file system (estimate: %s from shards unlinked or compacted, %s from compacting the catalog)\n",
		humanBytes(est), est, humanBytes(plan.EstimatedReturn), humanBytes(plan.EstimatedCatalogReturn))
	printKept(e, plan, "would")
}

func printPruneReport(e *env, plan *archive.Plan, rep *archive.PruneReport, source string) {
	fmt.Fprintf(e.stdout, "policy (%s): %s\n", source, describePolicy(&plan.Policy))
	fmt.Fprintf(e.stdout, "removed %s, %s stored (%d bytes)\n", plural(len(rep.Removed), "recording", ""), humanBytes(rep.StoredBytes), rep.StoredBytes)
	if len(rep.Skipped) > 0 {
		fmt.Fprintf(e.stdout, "left %s alone: held, flagged or deleted meanwhile\n", plural(len(rep.Skipped), "planned recording", ""))
	}
	if extra := rep.Swept - len(rep.Removed); extra > 0 {
		fmt.Fprintf(e.stdout, "finished %d deletes left by an earlier, interrupted run\n", extra)
	}
	if len(rep.ShardsRemoved) > 0 {
		fmt.Fprintf(e.stdout, "unlinked empty shards: %v\n", rep.ShardsRemoved)
	}
	if len(rep.ShardsCompacted) > 0 {
		fmt.Fprintf(e.stdout, "compacted shards: %v\n", rep.ShardsCompacted)
	}
	if rep.CatalogCompacted {
		fmt.Fprintln(e.stdout, "compacted the catalog")
	}
	fmt.Fprintf(e.stdout, "returned %s (%d bytes) to the file system: %s on disk before, %s after (%s)\n",
		humanBytes(rep.BytesReturned), rep.BytesReturned, humanBytes(rep.DiskBefore), humanBytes(rep.DiskAfter),
		rep.Elapsed.Round(time.Millisecond))
	printKept(e, plan, "would")
}

// printKept says which recordings the policy would have removed but that
// are pinned, and whether the byte budget can be met.
func printKept(e *env, plan *archive.Plan, verb string) {
	if plan.KeptHeld > 0 {
		fmt.Fprintf(e.stdout, "kept %d held recording(s) that %s otherwise go\n", plan.KeptHeld, verb)
	}
	if plan.KeptFlagged > 0 {
		fmt.Fprintf(e.stdout, "kept %d flagged recording(s) that %s otherwise go (--include-flagged removes them)\n", plan.KeptFlagged, verb)
	}
	if !plan.BudgetMet {
		left := plan.ScopeBytes - plan.StoredBytes
		fmt.Fprintf(e.stdout, "the budget of %s cannot be met: %s stay, held or flagged\n",
			humanBytes(plan.Policy.MaxBytes), humanBytes(left))
	}
}
