// archivectl retention: store or show the retention policy, and the parsing
// of the durations and sizes retention and prune take.

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/replayarchive/replay/archive"
)

func cmdRetention() *command {
	return &command{
		name: "retention", args: "set [--max-age DUR] [--max-bytes SIZE] [--format F]... | show [--json]",
		summary: "store or show the retention policy",
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
		flags: func(fs *flag.FlagSet, o *opts) {
			fs.StringVar(&o.maxAge, "max-age", "", "remove recordings older than `DUR` (e.g. 90d)")
			fs.StringVar(&o.maxBytes, "max-bytes", "", "keep the recordings in scope under `SIZE` (e.g. 500GB)")
			fs.Var(&o.formats, "format", "apply the policy only to this `format` (repeatable)")
			fs.BoolVar(&o.json, "json", false, "print JSON (show)")
		},
		run: runRetention,
	}
}

func runRetention(ctx context.Context, e *env, o *opts, args []string) error {
	if len(args) != 1 || (args[0] != "set" && args[0] != "show") {
		return usagef("retention takes 'set' or 'show'")
	}
	if args[0] == "show" && (o.maxAge != "" || o.maxBytes != "" || len(o.formats) > 0) {
		return usagef("'retention show' takes only --json")
	}
	a, err := e.open()
	if err != nil {
		return err
	}
	if args[0] == "show" {
		p, err := a.Policy()
		if err != nil {
			return err
		}
		if o.json {
			return writeJSON(e, policyToJSON(p))
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
		if err := a.SetPolicy(nil); err != nil {
			return err
		}
		fmt.Fprintln(e.stdout, "retention policy cleared: prune removes nothing unless given limits")
		return nil
	}
	if err := a.SetPolicy(&p); err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, "retention policy set: "+describePolicy(&p))
	return nil
}

// policyJSON is how retention show --json and prune --json print a policy.
type policyJSON struct {
	Set        bool     `json:"set"`
	MaxAge     string   `json:"max_age,omitempty"`
	MaxAgeSecs int64    `json:"max_age_seconds,omitempty"`
	MaxBytes   int64    `json:"max_bytes,omitempty"`
	Formats    []string `json:"formats"`
}

func policyToJSON(p *archive.Policy) policyJSON {
	out := policyJSON{Formats: []string{}}
	if p.IsZero() {
		return out
	}
	out.Set = true
	if p.MaxAge > 0 {
		out.MaxAge, out.MaxAgeSecs = fmtAge(p.MaxAge), int64(p.MaxAge/time.Second)
	}
	out.MaxBytes = p.MaxBytes
	out.Formats = append(out.Formats, p.Formats...)
	return out
}

// describePolicy says what a policy does, in one line.
func describePolicy(p *archive.Policy) string {
	if p.IsZero() {
		return "no retention policy (set one with 'archivectl retention set')"
	}
	var parts []string
	if p.MaxAge > 0 {
		parts = append(parts, "remove recordings older than "+fmtAge(p.MaxAge))
	}
	if p.MaxBytes > 0 {
		parts = append(parts, fmt.Sprintf("keep at most %s stored (%d bytes), oldest removed first", humanBytes(p.MaxBytes), p.MaxBytes))
	}
	scope := "all formats"
	if len(p.Formats) > 0 {
		scope = "formats " + strings.Join(p.Formats, ", ")
	}
	return strings.Join(parts, "; ") + " (" + scope + "; held recordings never, flagged ones only with --include-flagged)"
}

// fmtAge prints a duration in days when it is a whole number of them.
func fmtAge(d time.Duration) string {
	const day = 24 * time.Hour
	if d >= day && d%day == 0 {
		return strconv.FormatInt(int64(d/day), 10) + "d"
	}
	return d.String()
}

// parseAge parses a Go duration or a number of days (d), weeks (w) or
// years (y, 365 days). The empty string is zero: no limit.
func parseAge(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	units := map[byte]time.Duration{'d': 24 * time.Hour, 'w': 7 * 24 * time.Hour, 'y': 365 * 24 * time.Hour}
	var d time.Duration
	if unit, ok := units[s[len(s)-1]]; ok {
		n, err := strconv.ParseFloat(s[:len(s)-1], 64)
		if err != nil || math.IsNaN(n) || math.IsInf(n, 0) {
			return 0, fmt.Errorf("%q: want a duration like 90d, 2w, 1y or 36h", s)
		}
		f := n * float64(unit)
		if f > math.MaxInt64 || f < math.MinInt64 {
			return 0, fmt.Errorf("%q: too long", s)
		}
		d = time.Duration(f)
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, fmt.Errorf("%q: want a duration like 90d, 2w, 1y or 36h", s)
		}
	}
	if d <= 0 {
		return 0, fmt.Errorf("%q: must be positive", s)
	}
	return d, nil
}

// parseSize parses a byte count with an optional unit (B, KB, MB, GB, TB
// in powers of 1000; KiB, MiB, GiB, TiB in powers of 1024; K, M, G, T
// alone mean the binary ones). The empty string is zero: no limit.
func parseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	i := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := s, ""
	if i >= 0 {
		num, unit = s[:i], strings.ToLower(strings.TrimSpace(s[i:]))
	}
	mult := map[string]float64{
		"": 1, "b": 1,
		"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
		"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40,
		"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
	}[unit]
	n, err := strconv.ParseFloat(num, 64)
	if mult == 0 || err != nil {
		return 0, fmt.Errorf("%q: want a size like 500MB or 2GiB", s)
	}
	v := n * mult
	if v < 1 {
		return 0, fmt.Errorf("%q: must be at least one byte", s)
	}
	if v >= math.MaxInt64 {
		return 0, errors.New("size too large")
	}
	return int64(v), nil
}
