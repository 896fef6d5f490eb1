// Retention's plan: what a policy removes, decided from the manifests and
// the space the archive's files take, without the archive (Archive.Plan,
// in retention.go, reads them and calls planRetention).

package archive

import (
	"errors"
	"sort"
	"time"

	"github.com/google/uuid"
)

// Reasons a recording is in a plan.
const (
	ReasonAge  = "age"  // older than MaxAge
	ReasonSize = "size" // among the oldest while over MaxBytes
)

// Candidate is one recording a plan removes.
type Candidate struct {
	ID     uuid.UUID `json:"id"`
	Format string    `json:"format"`
	// Start is when the recording's age counts from (Manifest.AgeFrom):
	// its start, else its ingest time when it has none or a later one.
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

// recAge is the instant Manifest.Age measures from (Manifest.AgeFrom).
func recAge(m *Manifest) time.Time { return m.AgeFrom() }

// planRetention works out what policy p removes from the recordings that
// manifests yields (each once, in any order), at opts.Now: by age, then the
// oldest while over MaxBytes, never a held one, a flagged one only with
// opts.IncludeFlagged. space (every shard's) and catalog (nil when
// unknown) are what the files take now, from which it estimates the bytes
// a prune gives back.
func planRetention(manifests func(fn func(*Manifest) error) error, space []ShardSpace, catalog *ShardSpace, p Policy, opts PlanOptions) (*Plan, error) {
	if p.MaxAge < 0 || p.MaxBytes < 0 {
		return nil, errors.New("archive: plan: negative limit")
	}
	now := opts.Now
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
	err := manifests(func(m *Manifest) error {
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
	if cat := catalog; cat != nil && total > 0 {
		after := *cat
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
