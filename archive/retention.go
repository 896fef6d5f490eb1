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

// Plan works out what policy p removes, without changing anything: it
// reads the manifests and the space the files take, and planRetention
// (plan.go) decides.
func (a *Archive) Plan(ctx context.Context, p Policy, opts PlanOptions) (*Plan, error) {
	if opts.Now.IsZero() {
		opts.Now = a.opts.Now()
	}
	shards, err := a.ShardSpace()
	if err != nil {
		return nil, err
	}
	var catalog *ShardSpace
	if cat, err := a.catalogSpace(); err == nil {
		catalog = &cat
	}
	return planRetention(func(fn func(*Manifest) error) error { return a.List(ctx, fn) }, shards, catalog, p, opts)
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
