package replay

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/internal/units"
)

// mark resolves ref, applies fn, brings the index up to date and logs the
// change: every moderator's mark goes through here.
func (x *Archive) mark(ctx context.Context, ref string, e archive.AuditEntry, fn func(uuid.UUID) (*archive.Manifest, error)) (*archive.Manifest, error) {
	if x.opts.ReadOnly {
		return nil, ErrReadOnly
	}
	id, err := x.a.Resolve(ref)
	if err != nil {
		return nil, err
	}
	m, err := fn(id)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", id, err)
	}
	e.Recording = id
	x.audit(e)
	return m, x.sync(ctx)
}

// Flag adds a moderator's flag (searchable at once as flag:NAME), or gives
// an existing one a new note; the audit log keeps the old note.
func (x *Archive) Flag(ctx context.Context, by Actor, ref, name, note string) (*archive.Manifest, error) {
	return x.mark(ctx, ref, archive.AuditEntry{Who: by.Name, Action: archive.AuditFlag, Detail: name, Reason: note},
		func(id uuid.UUID) (*archive.Manifest, error) { return x.a.SetFlag(id, name, note) })
}

// Unflag removes a moderator's flag.
func (x *Archive) Unflag(ctx context.Context, by Actor, ref, name, reason string) (*archive.Manifest, error) {
	return x.mark(ctx, ref, archive.AuditEntry{Who: by.Name, Action: archive.AuditUnflag, Detail: name, Reason: reason},
		func(id uuid.UUID) (*archive.Manifest, error) { return x.a.Unflag(id, name) })
}

// Hold pins a recording against retention and takedowns.
func (x *Archive) Hold(ctx context.Context, by Actor, ref, reason string) (*archive.Manifest, error) {
	return x.mark(ctx, ref, archive.AuditEntry{Who: by.Name, Action: archive.AuditHold, Reason: reason},
		func(id uuid.UUID) (*archive.Manifest, error) { return x.a.SetHold(id, reason) })
}

// Release removes a hold.
func (x *Archive) Release(ctx context.Context, by Actor, ref, reason string) (*archive.Manifest, error) {
	return x.mark(ctx, ref, archive.AuditEntry{Who: by.Name, Action: archive.AuditRelease, Reason: reason},
		func(id uuid.UUID) (*archive.Manifest, error) { return x.a.Release(id) })
}

// Takedown removes a recording now and remembers its file: the same bytes
// are refused at ingest, saying who took them down, when and why, until
// an admin lifts the takedown. A held recording is refused.
func (x *Archive) Takedown(ctx context.Context, by Actor, ref, reason string) (*archive.Manifest, error) {
	if x.opts.ReadOnly {
		return nil, ErrReadOnly
	}
	if strings.TrimSpace(reason) == "" {
		return nil, fmt.Errorf("a takedown needs a reason")
	}
	id, err := x.a.Resolve(ref)
	if err != nil {
		return nil, err
	}
	m, err := x.a.TakeDown(ctx, id, archive.DeleteOptions{By: by.Name, Reason: reason})
	if m != nil {
		// The recording is gone from the catalog even when the sweep
		// failed: log and index what took effect.
		x.audit(archive.AuditEntry{Who: by.Name, Action: archive.AuditTakedown, Recording: id, Reason: reason,
			Detail: "sha256 " + m.SHA256})
		if serr := x.sync(ctx); err == nil {
			err = serr
		}
	}
	return m, err
}

// LiftTakedown lets the bytes of a taken-down recording (named by its
// recording id or its file's hex sha256) be ingested again.
func (x *Archive) LiftTakedown(ctx context.Context, by Actor, ref, reason string) (*archive.Takedown, error) {
	if x.opts.ReadOnly {
		return nil, ErrReadOnly
	}
	sha := strings.ToLower(strings.TrimSpace(ref))
	if len(sha) != 64 {
		// A recording id or prefix: find its takedown.
		ts, err := x.a.Takedowns()
		if err != nil {
			return nil, err
		}
		var found []archive.Takedown
		for _, t := range ts {
			if strings.HasPrefix(t.ID.String(), sha) || strings.HasPrefix(strings.ReplaceAll(t.ID.String(), "-", ""), sha) {
				found = append(found, t)
			}
		}
		switch len(found) {
		case 0:
			return nil, fmt.Errorf("no takedown of a recording %q: %w", ref, archive.ErrNotFound)
		case 1:
			sha = found[0].SHA256
		default:
			return nil, fmt.Errorf("%q names %d taken-down recordings: give more of the id, or the sha256", ref, len(found))
		}
	}
	t, err := x.a.LiftTakedown(sha)
	if err != nil {
		return nil, err
	}
	x.audit(archive.AuditEntry{Who: by.Name, Action: archive.AuditLiftTakedown, Recording: t.ID, Reason: reason,
		Detail: "sha256 " + t.SHA256})
	return t, nil
}

// Takedowns lists the files refused at ingest because they were taken down.
func (x *Archive) Takedowns() ([]archive.Takedown, error) { return x.a.Takedowns() }

// Policy returns the stored retention policy (nil when there is none).
func (x *Archive) Policy() (*archive.Policy, error) { return x.a.Policy() }

// SetPolicy stores the retention policy (nil clears it).
func (x *Archive) SetPolicy(by Actor, p *archive.Policy) error {
	if x.opts.ReadOnly {
		return ErrReadOnly
	}
	if p != nil {
		if err := CheckFormats(p.Formats); err != nil {
			return err
		}
	}
	if err := x.a.SetPolicy(p); err != nil {
		return err
	}
	detail := "cleared"
	if p != nil && !p.IsZero() {
		detail = DescribePolicy(p)
	}
	x.audit(archive.AuditEntry{Who: by.Name, Action: archive.AuditPolicy, Detail: detail})
	return nil
}

// DescribePolicy says in words what a policy removes.
func DescribePolicy(p *archive.Policy) string {
	var parts []string
	if p.MaxAge > 0 {
		parts = append(parts, "older than "+units.FormatDuration(p.MaxAge))
	}
	if p.MaxBytes > 0 {
		parts = append(parts, "oldest beyond "+units.FormatBytes(p.MaxBytes))
	}
	if len(parts) == 0 {
		return "keeps everything"
	}
	s := "removes recordings " + strings.Join(parts, ", or ")
	if len(p.Formats) > 0 {
		s += " (formats " + strings.Join(p.Formats, ", ") + ")"
	}
	return s
}

// Plan works out what policy p removes, changing nothing.
func (x *Archive) Plan(ctx context.Context, p archive.Policy, opts archive.PlanOptions) (*archive.Plan, error) {
	if err := CheckFormats(p.Formats); err != nil {
		return nil, err
	}
	return x.a.Plan(ctx, p, opts)
}

// Prune carries out a plan: the recordings go from the catalog and then,
// once the search index no longer finds them, their chunks from the
// shards; the disk space comes back. A nil plan finishes earlier work.
func (x *Archive) Prune(ctx context.Context, by Actor, plan *archive.Plan) (*archive.PruneReport, error) {
	if x.opts.ReadOnly {
		return nil, ErrReadOnly
	}
	rep, err := x.a.Prune(ctx, plan, archive.PruneOptions{
		AfterMark:      x.sync,
		CompactCatalog: true,
	})
	if rep != nil && len(rep.Removed) > 0 {
		x.audit(archive.AuditEntry{Who: by.Name, Action: archive.AuditPrune,
			Detail: fmt.Sprintf("removed %d recordings, %d bytes stored; %s", len(rep.Removed), rep.StoredBytes, DescribePolicy(&plan.Policy))})
	}
	if err != nil {
		if rep != nil && len(rep.Removed) > 0 {
			return rep, fmt.Errorf("%w (%d recordings were already removed from the catalog; prune again to finish)", err, len(rep.Removed))
		}
		return rep, err
	}
	return rep, x.sync(ctx)
}

// Recompress re-encodes sealed recordings' chunks at zstd's best level and
// gives the freed pages back (archive.Archive.Recompress). The native bytes,
// and so the index, do not change.
func (x *Archive) Recompress(ctx context.Context, by Actor, opts archive.RecompressOptions) (*archive.RecompressReport, error) {
	if x.opts.ReadOnly && !opts.DryRun {
		return nil, ErrReadOnly
	}
	rep, err := x.a.Recompress(ctx, opts)
	if rep != nil && rep.Recordings > 0 && !opts.DryRun {
		x.audit(archive.AuditEntry{Who: by.Name, Action: archive.AuditRecompress,
			Detail: fmt.Sprintf("%d recordings, %s stored before, %s after", rep.Recordings,
				units.FormatBytes(rep.StoredBefore), units.FormatBytes(rep.StoredAfter))})
	}
	return rep, err
}
