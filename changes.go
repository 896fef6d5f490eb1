package replay

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/catalog"
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
	done := x.change()
	m, err := fn(id)
	done()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", id, err)
	}
	e.Recording = id
	x.audit(e)
	return m, x.sync(ctx)
}

// Flag adds a moderator's flag on the whole recording (searchable at once
// as flag:NAME), or gives an existing one a new note; the audit log keeps
// the old note. The flag opens a case on the recording (Cases), or adds a
// note to the one open already, so that someone follows it up.
//
// With a shared catalog, each mark is made there first (after the checks
// that refuse it here), then here: every other node applies it too.
func (x *Archive) Flag(ctx context.Context, by Actor, ref, name, note string) (*archive.Manifest, error) {
	return x.flag(ctx, by, ref, name, note, nil)
}

// FlagAt is Flag on a moment of the recording ("griefing at 0:42-0:50"):
// from and to are ticks, offsets from the start (1m04s) or minutes and
// seconds (0:42), read as export's --from and --to are. Both empty flag
// the whole recording; one without the other is refused (ErrBadTick). A
// range running past the end is cut there; one starting past it, or
// ending before it starts, is refused. The range is the flag's: a second
// flag of the name replaces it.
func (x *Archive) FlagAt(ctx context.Context, by Actor, ref, name, note, from, to string) (*archive.Manifest, error) {
	if from == "" && to == "" {
		return x.flag(ctx, by, ref, name, note, nil)
	}
	span, err := x.FlagRange(ref, from, to)
	if err != nil {
		return nil, err
	}
	return x.flag(ctx, by, ref, name, note, span)
}

// FlagRange reads a flag's range on recording ref as FlagAt does.
func (x *Archive) FlagRange(ref, from, to string) (*archive.TickRange, error) {
	if from == "" || to == "" {
		return nil, fmt.Errorf("a flag's range takes both from and to (neither: the whole recording): %w", ErrBadTick)
	}
	r, err := x.Recording(ref)
	if err != nil {
		return nil, err
	}
	a, err := r.ParseFrom(clockOffset(from))
	if err != nil {
		return nil, fmt.Errorf("from: %w", err)
	}
	b, err := r.ParseTick(clockOffset(to))
	if err != nil {
		return nil, fmt.Errorf("to: %w", err)
	}
	last := r.LastTick()
	if a > last {
		return nil, fmt.Errorf("from: tick %d is past the recording's last tick %d: %w", a, last, ErrBadTick)
	}
	if b < a {
		return nil, fmt.Errorf("flag range %s to %s (ticks %d to %d): %w", from, to, a, b, ErrEmptyRange)
	}
	return &archive.TickRange{From: a, To: min(b, last)}, nil
}

// clockOffset turns minutes and seconds ("0:42", "1:02:03", "0:42.5")
// into the offset ParseTick reads ("0h0m42s"); anything else is left as
// it is.
func clockOffset(v string) string {
	parts := strings.Split(strings.TrimSpace(v), ":")
	if len(parts) < 2 || len(parts) > 3 {
		return v
	}
	for len(parts) < 3 {
		parts = append([]string{"0"}, parts...)
	}
	for i, p := range parts {
		if p == "" || strings.Trim(p, "0123456789.") != "" || (i < 2 && strings.Contains(p, ".")) {
			return v
		}
	}
	return parts[0] + "h" + parts[1] + "m" + parts[2] + "s"
}

// flag sets flag name (on span, nil: the whole recording) and opens or
// follows up the recording's case.
func (x *Archive) flag(ctx context.Context, by Actor, ref, name, note string, span *archive.TickRange) (*archive.Manifest, error) {
	detail := name
	if span != nil {
		detail = fmt.Sprintf("%s at ticks %d-%d", name, span.From, span.To)
	}
	m, err := x.mark(ctx, ref, archive.AuditEntry{Who: by.Name, Action: archive.AuditFlag, Detail: detail, Reason: note},
		func(id uuid.UUID) (*archive.Manifest, error) {
			name, err := archive.FlagName(name)
			if err == nil {
				err = x.publish(ctx, catalog.KindFlag, flagKey(id, name), sharedFlag{Note: note, Range: span})
			}
			if err != nil {
				return nil, err
			}
			return x.a.SetFlagAt(id, name, note, span)
		})
	if err != nil {
		return m, err
	}
	if err := x.flagCase(ctx, by, m, name, note, span); err != nil {
		return m, fmt.Errorf("flagged %s, but its case: %w", name, err)
	}
	return m, nil
}

// Unflag removes a moderator's flag.
func (x *Archive) Unflag(ctx context.Context, by Actor, ref, name, reason string) (*archive.Manifest, error) {
	return x.mark(ctx, ref, archive.AuditEntry{Who: by.Name, Action: archive.AuditUnflag, Detail: name, Reason: reason},
		func(id uuid.UUID) (*archive.Manifest, error) {
			if m, err := x.a.Manifest(id); err != nil {
				return nil, err
			} else if !slices.ContainsFunc(m.Flags, func(f archive.Flag) bool { return f.Name == name }) {
				return x.a.Unflag(id, name) // its error says why
			}
			if err := x.unpublish(ctx, catalog.KindFlag, flagKey(id, name)); err != nil {
				return nil, err
			}
			return x.a.Unflag(id, name)
		})
}

// Hold pins a recording against retention and takedowns.
func (x *Archive) Hold(ctx context.Context, by Actor, ref, reason string) (*archive.Manifest, error) {
	return x.mark(ctx, ref, archive.AuditEntry{Who: by.Name, Action: archive.AuditHold, Reason: reason},
		func(id uuid.UUID) (*archive.Manifest, error) {
			if strings.TrimSpace(reason) == "" {
				return x.a.SetHold(id, reason) // its error says why
			}
			if err := x.publish(ctx, catalog.KindHold, id.String(), sharedHold{Reason: reason}); err != nil {
				return nil, err
			}
			return x.a.SetHold(id, reason)
		})
}

// Release removes a hold.
func (x *Archive) Release(ctx context.Context, by Actor, ref, reason string) (*archive.Manifest, error) {
	return x.mark(ctx, ref, archive.AuditEntry{Who: by.Name, Action: archive.AuditRelease, Reason: reason},
		func(id uuid.UUID) (*archive.Manifest, error) {
			if m, err := x.a.Manifest(id); err != nil || m.Hold == nil {
				return x.a.Release(id) // its error says why
			}
			if err := x.unpublish(ctx, catalog.KindHold, id.String()); err != nil {
				return nil, err
			}
			return x.a.Release(id)
		})
}

// Takedown hides a recording from every read and search at once and
// remembers its file and identity: the same bytes, the id the file names
// and its session are refused at ingest, saying who took them down, when
// and why. Its bytes are kept for grace (UndoTakedown restores it until
// then; PurgeTakedowns deletes them after); a grace of 0 deletes them now.
// A held recording is refused. It returns the recording and the takedown.
func (x *Archive) Takedown(ctx context.Context, by Actor, ref, reason string, grace time.Duration) (*archive.Manifest, *archive.Takedown, error) {
	if x.opts.ReadOnly {
		return nil, nil, ErrReadOnly
	}
	if strings.TrimSpace(reason) == "" {
		return nil, nil, fmt.Errorf("a takedown needs a reason")
	}
	if grace < 0 {
		return nil, nil, fmt.Errorf("a takedown's grace period must not be negative, got %s", grace)
	}
	id, err := x.a.Resolve(ref)
	if err != nil {
		return nil, nil, err
	}
	defer x.change()()
	opts := archive.DeleteOptions{By: by.Name, Reason: reason, Grace: grace}
	if x.shared != nil {
		opts.Publish = func(ctx context.Context, t *archive.Takedown) error {
			return x.publish(ctx, catalog.KindTakedown, t.SHA256, t)
		}
	}
	m, err := x.a.TakeDown(ctx, id, opts)
	if m == nil {
		return nil, nil, err
	}
	// The recording is gone from the catalog even when the sweep
	// failed: log and index what took effect.
	sum, _ := hex.DecodeString(m.SHA256)
	t, terr := x.a.TakenDown(sum)
	if terr == nil && t == nil {
		terr = fmt.Errorf("takedown of %s: no record after it committed", id)
	}
	if terr != nil {
		return m, nil, errors.Join(err, terr)
	}
	detail := "sha256 " + m.SHA256 + "; purged at once"
	if t.State == archive.TakedownPending {
		detail = fmt.Sprintf("sha256 %s; kept for undo until %s", m.SHA256, t.PurgeAt.Format(time.RFC3339))
	}
	x.audit(archive.AuditEntry{Who: by.Name, Action: archive.AuditTakedown, Recording: id, Reason: reason, Detail: detail})
	if serr := x.sync(ctx); err == nil {
		err = serr
	}
	return m, t, err
}

// UndoTakedown restores a recording taken down within its grace period
// (named by its id, a prefix of it, or its file's hex sha256): listed,
// searchable and readable again, its bytes and identity no longer refused.
func (x *Archive) UndoTakedown(ctx context.Context, by Actor, ref, reason string) (*archive.Manifest, *archive.Takedown, error) {
	if x.opts.ReadOnly {
		return nil, nil, ErrReadOnly
	}
	found, err := x.findTakedown(ref)
	if err != nil {
		return nil, nil, err
	}
	defer x.change()()
	if found.State == archive.TakedownPending {
		// Lifted everywhere first: a node that kept no bytes lifts it and
		// catches the recording up from the bucket again.
		if err := x.unpublish(ctx, catalog.KindTakedown, found.SHA256); err != nil {
			return nil, nil, err
		}
	}
	m, t, err := x.a.UndoTakedown(ctx, found.ID)
	if err != nil {
		return nil, nil, err
	}
	x.audit(archive.AuditEntry{Who: by.Name, Action: archive.AuditUndoTakedown, Recording: t.ID, Reason: reason,
		Detail: "sha256 " + t.SHA256 + "; taken down by " + t.By + " at " + t.At.Format(time.RFC3339)})
	return m, t, x.sync(ctx)
}

// PurgeTakedowns deletes the bytes of takedowns whose grace period is over,
// or with refs (ids, prefixes or sha256s) of those takedowns at once: the
// janitor's pass (serve, prune, takedowns purge). Each purge is audited.
func (x *Archive) PurgeTakedowns(ctx context.Context, by Actor, refs ...string) ([]archive.Takedown, error) {
	if x.opts.ReadOnly {
		return nil, ErrReadOnly
	}
	var ids []uuid.UUID
	for _, ref := range refs {
		t, err := x.findTakedown(ref)
		if err != nil {
			return nil, err
		}
		ids = append(ids, t.ID)
	}
	return x.purgeTakedowns(ctx, by, ids)
}

// purgeTakedowns purges takedowns by id. It needs no janitor's lease: a
// node purges only what it took down itself (its bytes, and the bucket's
// copy of what it took down).
func (x *Archive) purgeTakedowns(ctx context.Context, by Actor, ids []uuid.UUID) ([]archive.Takedown, error) {
	purged, err := x.a.PurgeTakedowns(ctx, ids...)
	for _, t := range purged {
		x.audit(archive.AuditEntry{Who: by.Name, Action: archive.AuditPurgeTakedown, Recording: t.ID,
			Detail: "sha256 " + t.SHA256 + "; taken down by " + t.By + " at " + t.At.Format(time.RFC3339)})
	}
	return purged, err
}

// findTakedown returns the takedown that ref names: a file's hex sha256,
// or a recording id or a unique prefix of one.
func (x *Archive) findTakedown(ref string) (*archive.Takedown, error) {
	want := strings.ToLower(strings.TrimSpace(ref))
	ts, err := x.a.Takedowns()
	if err != nil {
		return nil, err
	}
	var found []archive.Takedown
	for _, t := range ts {
		if len(want) == 64 && t.SHA256 == want ||
			len(want) < 64 && want != "" && (strings.HasPrefix(t.ID.String(), want) || strings.HasPrefix(strings.ReplaceAll(t.ID.String(), "-", ""), want)) {
			found = append(found, t)
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("no takedown of a recording or file %q: %w", ref, archive.ErrNotFound)
	case 1:
		return &found[0], nil
	default:
		amb := &archive.AmbiguousError{Ref: ref}
		for _, t := range found {
			if len(amb.Matches) == archive.MaxAmbiguous {
				amb.More = true
				break
			}
			amb.Matches = append(amb.Matches, t.ID)
		}
		return nil, fmt.Errorf("takedowns: %w (give more of the id, or the sha256)", amb)
	}
}

// LiftTakedown lets the bytes and identity of a taken-down recording
// (named by its recording id or its file's hex sha256) be ingested again,
// once its bytes are purged: an admin's decision.
func (x *Archive) LiftTakedown(ctx context.Context, by Actor, ref, reason string) (*archive.Takedown, error) {
	if x.opts.ReadOnly {
		return nil, ErrReadOnly
	}
	found, err := x.findTakedown(ref)
	if err != nil {
		return nil, err
	}
	defer x.change()()
	if found.State != archive.TakedownPending {
		if err := x.unpublish(ctx, catalog.KindTakedown, found.SHA256); err != nil {
			return nil, err
		}
	}
	t, err := x.a.LiftTakedown(ctx, found.SHA256)
	if err != nil {
		return nil, err
	}
	x.audit(archive.AuditEntry{Who: by.Name, Action: archive.AuditLiftTakedown, Recording: t.ID, Reason: reason,
		Detail: "sha256 " + t.SHA256})
	return t, nil
}

// Takedowns lists every takedown: the files and identities refused at
// ingest, each pending purge (State, PurgeAt) or purged.
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
	defer x.change()()
	var err error
	if p.IsZero() {
		err = x.unpublish(context.Background(), catalog.KindSetting, settingPolicy)
	} else {
		err = x.publish(context.Background(), catalog.KindSetting, settingPolicy, p)
	}
	if err != nil {
		return err
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

// DescribePolicy says in one line what a policy removes and what it
// leaves: the command line, the API's policy text and the audit log all
// say it in these words.
func DescribePolicy(p *archive.Policy) string {
	if p.IsZero() {
		return "no retention policy"
	}
	var parts []string
	if p.MaxAge > 0 {
		parts = append(parts, "remove recordings older than "+units.FormatDuration(p.MaxAge))
	}
	if p.MaxBytes > 0 {
		parts = append(parts, fmt.Sprintf("keep at most %s stored (%d bytes), oldest removed first", units.FormatBytes(p.MaxBytes), p.MaxBytes))
	}
	scope := "all formats"
	if len(p.Formats) > 0 {
		scope = "formats " + strings.Join(p.Formats, ", ")
	}
	return strings.Join(parts, "; ") + " (" + scope + "; held recordings never, flagged ones only when the prune includes them)"
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
	release, err := x.janitor(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
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
	// The janitor's other half: takedowns past their grace period.
	if _, err := x.purgeTakedowns(ctx, by, nil); err != nil {
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
