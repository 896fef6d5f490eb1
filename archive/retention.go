// Retention: the stored policy (max age, max total bytes, per format), the
// plan of what it removes, and Prune, which removes it in two phases and
// gives the disk space back.
//
// Plan never picks a held recording, and picks a flagged one only when told
// to. Prune marks the plan in one catalog commit (manifests out, tombstones
// and change-log entries in), then sweeps the chunks, unlinks shards left
// empty and compacts sparse ones (compact.go). Killed at any point, running
// Prune again (with any plan, even an empty one) finishes the job: the
// tombstones say which chunks still have to go, and every shard is looked at
// again for emptiness and sparseness.

package archive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/google/uuid"
	bolt "go.etcd.io/bbolt"
)

// Policy is a retention policy. A zero limit is no limit.
type Policy struct {
	// MaxAge removes recordings older than this (Manifest.Age).
	MaxAge time.Duration `json:"max_age,omitempty"`
	// MaxBytes caps the total stored bytes of the recordings in scope: the
	// oldest eligible ones go until the total is at most MaxBytes.
	MaxBytes int64 `json:"max_bytes,omitempty"`
	// Formats restricts the policy to recordings of these formats (all
	// formats when empty); MaxBytes then counts only those.
	Formats []string `json:"formats,omitempty"`
}

// IsZero reports whether the policy removes nothing.
func (p *Policy) IsZero() bool { return p == nil || (p.MaxAge <= 0 && p.MaxBytes <= 0) }

// inScope reports whether the policy applies to a recording of format.
func (p *Policy) inScope(format string) bool {
	return len(p.Formats) == 0 || slices.Contains(p.Formats, format)
}

// Policy returns the stored retention policy, or nil if there is none.
func (a *Archive) Policy() (*Policy, error) {
	p := new(Policy)
	if ok, err := a.getSetting(settingPolicy, p); !ok || err != nil {
		return nil, err
	}
	return p, nil
}

// SetPolicy stores the retention policy. A nil or zero policy clears it.
func (a *Archive) SetPolicy(p *Policy) error {
	if p != nil && (p.MaxAge < 0 || p.MaxBytes < 0) {
		return errors.New("archive: retention policy: negative limit")
	}
	err := a.catalog.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSettings)
		if p.IsZero() {
			return b.Delete(settingPolicy)
		}
		v, err := json.Marshal(p)
		if err != nil {
			return err
		}
		return b.Put(settingPolicy, v)
	})
	if err != nil {
		return fmt.Errorf("archive: set retention policy: %w", err)
	}
	return nil
}

// PlanOptions tune Plan.
type PlanOptions struct {
	// IncludeFlagged lets the plan remove flagged recordings.
	IncludeFlagged bool
	// Now is the time ages are measured at (default: the archive's clock).
	Now time.Time
}

// Reasons a recording is in a plan.
const (
	ReasonAge  = "age"  // older than MaxAge
	ReasonSize = "size" // among the oldest while over MaxBytes
)

// Candidate is one recording a plan removes.
type Candidate struct {
	ID     uuid.UUID `json:"id"`
	Format string    `json:"format"`
	// Start is the recording's start, else its ingest time (what Age uses).
	Start       time.Time `json:"start"`
	Shard       string    `json:"shard"`
	Reason      string    `json:"reason"`
	StoredBytes int64     `json:"stored_bytes"`
}

// Plan is what a policy removes from the archive as it is now.
type Plan struct {
	Policy         Policy    `json:"policy"`
	Now            time.Time `json:"now"`
	IncludeFlagged bool      `json:"include_flagged"`
	// Remove lists the recordings to remove, oldest first.
	Remove []Candidate `json:"remove"`
	// StoredBytes is the total stored bytes of Remove.
	StoredBytes int64 `json:"stored_bytes"`
	// ScopeBytes is the total stored bytes of the recordings in scope
	// before the prune, ScopeRecordings their number.
	ScopeRecordings int   `json:"scope_recordings"`
	ScopeBytes      int64 `json:"scope_bytes"`
	// KeptHeld and KeptFlagged count recordings the policy would have
	// removed but that are held, or flagged without IncludeFlagged.
	KeptHeld    int `json:"kept_held"`
	KeptFlagged int `json:"kept_flagged"`
	// BudgetMet is false when MaxBytes is set and the recordings in scope
	// still exceed it after the plan, because the rest are held or flagged.
	BudgetMet bool `json:"budget_met"`
	// EstimatedReturn is about how many bytes the prune gives back to the
	// file system: whole shard files that empty out (or are already
	// empty), and what compacting the shards left sparse wins.
	EstimatedReturn int64 `json:"estimated_return_bytes"`
	// EstimatedCatalogReturn is about how many more bytes compacting the
	// catalog gives back (Prune with CompactCatalog, as archivectl does).
	EstimatedCatalogReturn int64 `json:"estimated_catalog_return_bytes"`
}

// recAge is the instant Manifest.Age measures from.
func recAge(m *Manifest) time.Time {
	if m.Meta.Start.IsZero() {
		return m.Ingested
	}
	return m.Meta.Start
}

// Plan works out what policy p removes, without changing anything.
func (a *Archive) Plan(ctx context.Context, p Policy, opts PlanOptions) (*Plan, error) {
	if p.MaxAge < 0 || p.MaxBytes < 0 {
		return nil, errors.New("archive: plan: negative limit")
	}
	now := opts.Now
	if now.IsZero() {
		now = a.opts.Now()
	}
	plan := &Plan{Policy: p, Now: now.UTC(), IncludeFlagged: opts.IncludeFlagged, Remove: []Candidate{}, BudgetMet: true}

	// Per shard: recordings and chunk bytes, and how many the plan removes.
	type shardUse struct {
		n, removedN   int
		live, removed int64
	}
	shards := map[string]*shardUse{}
	chunkBytes := map[uuid.UUID]int64{}
	total := 0
	var rest []*Manifest   // in scope, removable, not removed by age
	var pinned []*Manifest // in scope, young, held or flagged
	err := a.List(ctx, func(m *Manifest) error {
		total++
		su := shards[m.Shard]
		if su == nil {
			su = &shardUse{}
			shards[m.Shard] = su
		}
		su.n++
		for _, c := range m.Chunks {
			su.live += c.Stored
			chunkBytes[m.ID] += c.Stored
		}
		if !p.inScope(m.Format) {
			return nil
		}
		plan.ScopeRecordings++
		plan.ScopeBytes += m.StoredBytes
		removable := m.Hold == nil && (opts.IncludeFlagged || !m.Flagged())
		old := p.MaxAge > 0 && m.Age(now) > p.MaxAge
		switch {
		case old && removable:
			plan.add(m, ReasonAge)
		case old:
			plan.kept(m)
		case removable:
			rest = append(rest, m)
		default:
			pinned = append(pinned, m)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if p.MaxBytes > 0 {
		left := plan.ScopeBytes - plan.StoredBytes
		if left > p.MaxBytes {
			sort.Slice(rest, func(i, j int) bool {
				ti, tj := recAge(rest[i]), recAge(rest[j])
				if !ti.Equal(tj) {
					return ti.Before(tj)
				}
				return string(rest[i].ID[:]) < string(rest[j].ID[:])
			})
			for _, m := range rest {
				if left <= p.MaxBytes {
					break
				}
				plan.add(m, ReasonSize)
				left -= m.StoredBytes
			}
		}
		if left > p.MaxBytes {
			// The held and flagged ones stand in the way.
			plan.BudgetMet = false
			for _, m := range pinned {
				plan.kept(m)
			}
		}
	}
	sort.SliceStable(plan.Remove, func(i, j int) bool { return plan.Remove[i].Start.Before(plan.Remove[j].Start) })

	// Estimate what comes back: shard files that empty out are unlinked,
	// sparse ones compacted to about their live pages.
	for _, c := range plan.Remove {
		su := shards[c.Shard]
		su.removedN++
		su.removed += chunkBytes[c.ID]
	}
	space, err := a.ShardSpace()
	if err != nil {
		return nil, err
	}
	for _, sp := range space {
		su := shards[sp.Name]
		switch {
		case sp.Empty || (su != nil && su.removedN == su.n):
			plan.EstimatedReturn += sp.DiskBytes
		default:
			after := sp
			if su != nil && su.live > 0 {
				after.LiveBytes = int64(float64(sp.LiveBytes) * (1 - float64(su.removed)/float64(su.live)))
			}
			if after.sparse() {
				plan.EstimatedReturn += max(sp.DiskBytes-after.LiveBytes, 0)
			}
		}
	}
	// The catalog: its live pages shrink about with the share of
	// recordings removed.
	if cat, err := a.catalogSpace(); err == nil && total > 0 {
		after := cat
		after.LiveBytes = int64(float64(cat.LiveBytes) * (1 - float64(len(plan.Remove))/float64(total)))
		if after.sparse() {
			plan.EstimatedCatalogReturn = max(cat.DiskBytes-after.LiveBytes, 0)
		}
	}
	return plan, nil
}

func (p *Plan) add(m *Manifest, reason string) {
	p.Remove = append(p.Remove, Candidate{
		ID: m.ID, Format: m.Format, Start: recAge(m).UTC(), Shard: m.Shard,
		Reason: reason, StoredBytes: m.StoredBytes,
	})
	p.StoredBytes += m.StoredBytes
}

func (p *Plan) kept(m *Manifest) {
	if m.Hold != nil {
		p.KeptHeld++
	} else {
		p.KeptFlagged++
	}
}

// PruneOptions tune Prune.
type PruneOptions struct {
	// AfterMark, if set, runs once the mark phase has committed and before
	// the sweep (archivectl brings the search index up to date there).
	AfterMark func(ctx context.Context) error
	// CompactCatalog also rewrites catalog.db when it is sparse (a mark of
	// many recordings leaves most of its pages free, and bbolt never
	// shrinks a file). The caller must not use the archive from other
	// goroutines while Prune runs with it.
	CompactCatalog bool
}

// PruneReport says what Prune did.
type PruneReport struct {
	// Removed lists the recordings the mark phase removed from the catalog.
	Removed []Candidate `json:"removed"`
	// StoredBytes is their total stored bytes.
	StoredBytes int64 `json:"stored_bytes"`
	// Skipped lists planned recordings left alone because they were held,
	// flagged or gone by the time of the mark.
	Skipped []uuid.UUID `json:"skipped"`
	// Swept counts tombstones whose chunks were deleted, including ones
	// left by an earlier, interrupted prune or delete.
	Swept int `json:"swept"`
	// ShardsRemoved and ShardsCompacted name the shard files unlinked and
	// rewritten.
	ShardsRemoved   []string `json:"shards_removed"`
	ShardsCompacted []string `json:"shards_compacted"`
	// CatalogCompacted is set when catalog.db was rewritten.
	CatalogCompacted bool `json:"catalog_compacted"`
	// DiskBefore and DiskAfter are the disk usage of the archive directory,
	// its search index left out (storedUsage), before the mark and after the
	// last shard was tidied; BytesReturned is their difference.
	DiskBefore    int64         `json:"disk_before"`
	DiskAfter     int64         `json:"disk_after"`
	BytesReturned int64         `json:"bytes_returned"`
	Elapsed       time.Duration `json:"elapsed_ns"`
}

// Prune carries out plan: it removes the planned recordings from the
// catalog in one commit (skipping any that have been held, flagged or
// deleted since the plan was made), sweeps their chunks and those of any
// earlier unfinished delete, unlinks shards left empty and compacts sparse
// ones. It measures the bytes returned with storedUsage. A nil plan only
// finishes earlier work.
func (a *Archive) Prune(ctx context.Context, plan *Plan, opts PruneOptions) (*PruneReport, error) {
	a.pruneMu.Lock()
	defer a.pruneMu.Unlock()
	start := time.Now()
	rep := &PruneReport{Removed: []Candidate{}, Skipped: []uuid.UUID{}, ShardsRemoved: []string{}, ShardsCompacted: []string{}}
	var err error
	if rep.DiskBefore, err = storedUsage(a.dir); err != nil {
		return nil, fmt.Errorf("archive: prune: %w", err)
	}

	// Mark: one catalog commit.
	if plan != nil && len(plan.Remove) > 0 {
		if err := a.markPlan(ctx, plan, rep); err != nil {
			return nil, err
		}
	}
	if opts.AfterMark != nil {
		if err := opts.AfterMark(ctx); err != nil {
			return rep, fmt.Errorf("archive: prune: after mark: %w", err)
		}
	}

	// Sweep: chunks of every tombstone, then the shards.
	if err := a.catalog.View(func(tx *bolt.Tx) error {
		rep.Swept = tx.Bucket(bucketTombstones).Stats().KeyN
		return nil
	}); err != nil {
		return rep, fmt.Errorf("archive: prune: %w", err)
	}
	if _, err := a.Sweep(ctx); err != nil {
		return rep, err
	}
	names, err := a.Shards()
	if err != nil {
		return rep, err
	}
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		did, err := a.tidyShard(name, compactLiveRatio)
		if err != nil {
			return rep, err
		}
		switch did {
		case tidyRemoved:
			rep.ShardsRemoved = append(rep.ShardsRemoved, name)
		case tidyCompacted:
			rep.ShardsCompacted = append(rep.ShardsCompacted, name)
		}
	}
	if opts.CompactCatalog {
		if _, rep.CatalogCompacted, err = a.compactCatalog(compactLiveRatio); err != nil {
			return rep, err
		}
	}
	if rep.DiskAfter, err = storedUsage(a.dir); err != nil {
		return rep, fmt.Errorf("archive: prune: %w", err)
	}
	rep.BytesReturned = rep.DiskBefore - rep.DiskAfter
	rep.Elapsed = time.Since(start)
	return rep, nil
}

// markPlan removes the plan's recordings from the catalog in one
// transaction, re-checking each against its manifest as it is now.
func (a *Archive) markPlan(ctx context.Context, plan *Plan, rep *PruneReport) error {
	a.commitMu.Lock()
	defer a.commitMu.Unlock()
	var removed []Candidate
	var skipped []uuid.UUID
	var total int64
	err := a.catalog.Update(func(tx *bolt.Tx) error {
		removed, skipped, total = removed[:0], skipped[:0], 0
		for _, c := range plan.Remove {
			if err := ctx.Err(); err != nil {
				return err
			}
			m, err := getManifest(tx, c.ID)
			if errors.Is(err, ErrNotFound) {
				skipped = append(skipped, c.ID)
				continue
			}
			if err != nil {
				return err
			}
			if m.Hold != nil || (m.Flagged() && !plan.IncludeFlagged) {
				skipped = append(skipped, c.ID)
				continue
			}
			if err := markRemoved(tx, m); err != nil {
				return err
			}
			c.StoredBytes = m.StoredBytes
			removed = append(removed, c)
			total += m.StoredBytes
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("archive: prune: mark: %w", err)
	}
	rep.Removed = append(rep.Removed, removed...)
	rep.Skipped = append(rep.Skipped, skipped...)
	rep.StoredBytes += total
	return nil
}
