// archivectl retention: store or show the retention policy, and the parsing
// of the durations and sizes retention and prune take.

package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/internal/units"
	"github.com/replayarchive/replay/wire"
)

// retentionOptions are the flags of archivectl retention.
type retentionOptions struct {
	maxAge   string
	maxBytes string
	formats  stringList
	json     bool
}

// AddFlags declares the flags on fs.
func (o *retentionOptions) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.maxAge, "max-age", "", "remove recordings older than `DUR` (e.g. 90d)")
	fs.StringVar(&o.maxBytes, "max-bytes", "", "keep the recordings in scope under `SIZE` (e.g. 500GB)")
	fs.Var(&o.formats, "format", "apply the policy only to this `format` (repeatable)")
	fs.BoolVar(&o.json, "json", false, "print JSON (show)")
}

func cmdRetention() *command {
	o := new(retentionOptions)
	return &command{
		name: "retention", args: "set [--max-age DUR] [--max-bytes SIZE] [--format F]... | show [--json]",
		summary: "store or show the retention policy",
		access:  writeAccess,
		help: `'retention set' stores the policy that 'prune' applies: recordings older
than --max-age go (age counts from the recording's start, else from when
it was ingested), and while the recordings in scope take more than
--max-bytes of storage, the oldest go first. --format (repeatable) limits
the policy, and the byte budget, to those formats. 'retention set' with no
limit clears the policy. Held recordings are never removed; flagged ones
only by 'prune --include-flagged'.

Durations are Go durations (36h) or a number of days, weeks or years
(90d, 2w, 1y = 365d). Sizes are bytes with an optional unit: 500MB,
2GiB, 1.5TB (KB/MB/GB/TB count in 1000s, KiB/MiB/GiB/TiB in 1024s).`,
		flags: o.AddFlags,
		run:   func(ctx context.Context, e *env, args []string) error { return runRetention(ctx, e, o, args) },
	}
}

func runRetention(ctx context.Context, e *env, o *retentionOptions, args []string) error {
	if len(args) != 1 || (args[0] != "set" && args[0] != "show") {
		return usagef("retention takes 'set' or 'show'")
	}
	if args[0] == "show" && (o.maxAge != "" || o.maxBytes != "" || len(o.formats) > 0) {
		return usagef("'retention show' takes only --json")
	}
	if err := replay.CheckFormats(o.formats); err != nil {
		return usagef("--format: %v", err)
	}
	x, err := e.lib()
	if err != nil {
		return err
	}
	if args[0] == "show" {
		p, err := x.Policy()
		if err != nil {
			return err
		}
		if o.json {
			return writeJSON(e, wire.PolicyOf(p))
		}
		fmt.Fprintln(e.stdout, describePolicy(p))
		return nil
	}
	var p archive.Policy
	if p.MaxAge, err = parseAge(o.maxAge); err != nil {
		return usagef("--max-age: %v", err)
	}
	if p.MaxBytes, err = parseSize(o.maxBytes); err != nil {
		return usagef("--max-bytes: %v", err)
	}
	p.Formats = o.formats
	if p.IsZero() {
		if len(p.Formats) > 0 {
			return usagef("--format needs --max-age or --max-bytes")
		}
		if err := x.SetPolicy(e.who, nil); err != nil {
			return err
		}
		fmt.Fprintln(e.stdout, "retention policy cleared: prune removes nothing unless given limits")
		return nil
	}
	if err := x.SetPolicy(e.who, &p); err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, "retention policy set: "+describePolicy(&p))
	return nil
}

// describePolicy is replay.DescribePolicy, pointing at how to set a
// policy where there is none.
func describePolicy(p *archive.Policy) string {
	if p.IsZero() {
		return replay.DescribePolicy(p) + " (set one with 'archivectl retention set')"
	}
	return replay.DescribePolicy(p)
}

// parseAge parses a retention age; the empty string is zero: no limit.
func parseAge(s string) (time.Duration, error) {
	if strings.TrimSpace(s) == "" {
		return 0, nil
	}
	d, err := units.ParseDuration(s)
	if err == nil && d == 0 {
		err = fmt.Errorf("%q: must be positive", s)
	}
	return d, err
}

// parseDuration parses a duration flag.
func parseDuration(s string) (time.Duration, error) { return units.ParseDuration(s) }

// parseSize parses a size flag; the empty string is zero: no limit.
func parseSize(s string) (int64, error) {
	if strings.TrimSpace(s) == "" {
		return 0, nil
	}
	return units.ParseSize(s)
}
