package wire

import (
	"fmt"
	"time"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/internal/units"
)

// Policy is a retention policy as the API takes and gives it and
// `archivectl retention show --json` prints it.
type Policy struct {
	// Set is false when no policy is stored (or it has no limit).
	Set bool `json:"set"`
	// MaxAge is a duration such as "90d"; MaxAgeSeconds the same in
	// seconds, read only where MaxAge is absent.
	MaxAge        string   `json:"max_age,omitempty"`
	MaxAgeSeconds int64    `json:"max_age_seconds,omitempty"`
	MaxBytes      int64    `json:"max_bytes,omitempty"`
	Formats       []string `json:"formats"`
	// Text is replay.DescribePolicy's line; ignored when a policy is sent.
	Text string `json:"text,omitempty"`
}

// PolicyOf is the JSON form of p (nil: none stored).
func PolicyOf(p *archive.Policy) Policy {
	out := Policy{Formats: []string{}, Text: replay.DescribePolicy(p)}
	if p.IsZero() {
		return out
	}
	out.Set = true
	if p.MaxAge > 0 {
		out.MaxAge, out.MaxAgeSeconds = units.FormatDuration(p.MaxAge), int64(p.MaxAge/time.Second)
	}
	out.MaxBytes = p.MaxBytes
	out.Formats = append(out.Formats, p.Formats...)
	return out
}

// Policy turns the JSON form back into a policy. Its errors are the
// sender's mistakes: a bad duration, a negative size, an unknown format.
func (p Policy) Policy() (*archive.Policy, error) {
	pol := &archive.Policy{MaxBytes: p.MaxBytes, Formats: p.Formats}
	switch {
	case p.MaxAge != "":
		d, err := units.ParseDuration(p.MaxAge)
		if err != nil {
			return nil, fmt.Errorf("max_age: %v", err)
		}
		pol.MaxAge = d
	case p.MaxAgeSeconds < 0:
		return nil, fmt.Errorf("max_age_seconds: must not be negative")
	default:
		pol.MaxAge = time.Duration(p.MaxAgeSeconds) * time.Second
	}
	if p.MaxBytes < 0 {
		return nil, fmt.Errorf("max_bytes: must not be negative")
	}
	if err := replay.CheckFormats(p.Formats); err != nil {
		return nil, err
	}
	return pol, nil
}

// PruneRequest asks the API for a prune: by the stored policy unless a
// policy is given, and as a dry run unless DryRun is false.
type PruneRequest struct {
	DryRun         *bool   `json:"dry_run,omitempty"`
	Policy         *Policy `json:"policy,omitempty"`
	IncludeFlagged bool    `json:"include_flagged,omitempty"`
}

// Prune answers a prune, or says what one would do (DryRun): the policy
// applied and where it came from, the plan, and what the prune did.
type Prune struct {
	DryRun       bool                 `json:"dry_run"`
	PolicySource string               `json:"policy_source"`
	Policy       Policy               `json:"policy"`
	Plan         *archive.Plan        `json:"plan"`
	Report       *archive.PruneReport `json:"report,omitempty"`
}
