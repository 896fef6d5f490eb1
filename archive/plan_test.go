package archive

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/replayarchive/replay/formats"
)

// TestPlanRetention decides plans from manifests and file sizes alone,
// without an archive.
func TestPlanRetention(t *testing.T) {
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	// rec is a recording of format in shard, started age ago, with one
	// chunk of stored bytes.
	rec := func(n byte, format, shard string, age time.Duration, stored int64) *Manifest {
		return &Manifest{
			ID: uuid.UUID{n}, Format: format, Shard: shard, Meta: formats.Metadata{Start: now.Add(-age)},
			StoredBytes: stored, Chunks: []ChunkEntry{{Stored: stored}},
		}
	}
	held := func(m *Manifest) *Manifest { m.Hold = &Hold{Reason: "appeal"}; return m }
	flagged := func(m *Manifest) *Manifest { m.Flags = []Flag{{Name: "griefing"}}; return m }
	sp := func(name string, file, live int64) ShardSpace {
		return ShardSpace{Name: name, FileBytes: file, DiskBytes: file, LiveBytes: live}
	}

	type want struct {
		remove    []byte   // ids' first bytes, oldest first
		reasons   []string // per removed recording
		keptHeld  int
		keptFlag  int
		budgetMet bool
		estimate  int64 // EstimatedReturn
	}
	for _, c := range []struct {
		name    string
		recs    []*Manifest
		space   []ShardSpace
		policy  Policy
		flagged bool
		want    want
	}{
		{
			name: "age: old ones go, held and flagged stay",
			recs: []*Manifest{
				rec(1, "a", "s1", 100*day, 10), held(rec(2, "a", "s1", 100*day, 10)),
				flagged(rec(3, "a", "s1", 100*day, 10)), rec(4, "a", "s1", day, 10),
			},
			space:  []ShardSpace{sp("s1", 1<<20, 1<<20)},
			policy: Policy{MaxAge: 90 * day},
			want:   want{remove: []byte{1}, reasons: []string{ReasonAge}, keptHeld: 1, keptFlag: 1, budgetMet: true},
		},
		{
			name:    "age: flagged ones go when told",
			recs:    []*Manifest{flagged(rec(3, "a", "s1", 100*day, 10))},
			policy:  Policy{MaxAge: 90 * day},
			flagged: true,
			want:    want{remove: []byte{3}, reasons: []string{ReasonAge}, budgetMet: true},
		},
		{
			name: "size: oldest first until within the budget; a shard emptied comes back whole",
			recs: []*Manifest{
				rec(1, "a", "s1", 3*day, 100), rec(2, "a", "s2", 2*day, 100), rec(3, "a", "s2", day, 100),
			},
			space:  []ShardSpace{sp("s1", 4096, 4096), sp("s2", 8192, 8192)},
			policy: Policy{MaxBytes: 150},
			want:   want{remove: []byte{1, 2}, reasons: []string{ReasonSize, ReasonSize}, budgetMet: true, estimate: 4096},
		},
		{
			name: "size: the budget cannot be met past held recordings",
			recs: []*Manifest{
				held(rec(1, "a", "s1", 3*day, 100)), held(rec(2, "a", "s1", 2*day, 100)), rec(3, "a", "s1", day, 100),
			},
			policy: Policy{MaxBytes: 150},
			want:   want{remove: []byte{3}, reasons: []string{ReasonSize}, keptHeld: 2, budgetMet: false},
		},
		{
			name:   "scope: other formats neither go nor count",
			recs:   []*Manifest{rec(1, "a", "s1", 100*day, 100), rec(2, "b", "s1", 100*day, 100)},
			policy: Policy{MaxAge: 90 * day, MaxBytes: 1000, Formats: []string{"b"}},
			want:   want{remove: []byte{2}, reasons: []string{ReasonAge}, budgetMet: true},
		},
		{
			name:   "estimate: a sparse shard left behind is compacted",
			recs:   []*Manifest{rec(1, "a", "s1", 100*day, 300), rec(2, "a", "s1", day, 100)},
			space:  []ShardSpace{sp("s1", 1<<20, 1<<20)},
			policy: Policy{MaxAge: 90 * day},
			want:   want{remove: []byte{1}, reasons: []string{ReasonAge}, budgetMet: true, estimate: 1<<20 - 1<<18},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			plan, err := planRetention(manifestsOf(c.recs), c.space, nil, c.policy, PlanOptions{Now: now, IncludeFlagged: c.flagged})
			if err != nil {
				t.Fatal(err)
			}
			var ids []byte
			var reasons []string
			for _, r := range plan.Remove {
				ids, reasons = append(ids, r.ID[0]), append(reasons, r.Reason)
			}
			got := want{ids, reasons, plan.KeptHeld, plan.KeptFlagged, plan.BudgetMet, plan.EstimatedReturn}
			if !slices.Equal(got.remove, c.want.remove) || !slices.Equal(got.reasons, c.want.reasons) ||
				got.keptHeld != c.want.keptHeld || got.keptFlag != c.want.keptFlag ||
				got.budgetMet != c.want.budgetMet || got.estimate != c.want.estimate {
				t.Errorf("plan %+v\nwant %+v", got, c.want)
			}
		})
	}
}

// TestPlanRetentionRefuses: negative limits are refused, and an error
// reading the manifests is the plan's.
func TestPlanRetentionRefuses(t *testing.T) {
	if _, err := planRetention(manifestsOf(nil), nil, nil, Policy{MaxBytes: -1}, PlanOptions{Now: time.Now()}); err == nil {
		t.Error("a negative limit was planned")
	}
	bad := errors.New("catalog unreadable")
	list := func(func(*Manifest) error) error { return bad }
	if _, err := planRetention(list, nil, nil, Policy{MaxAge: time.Hour}, PlanOptions{Now: time.Now()}); !errors.Is(err, bad) {
		t.Errorf("plan over an unreadable catalog: %v", err)
	}
}

// TestPlanRetentionCatalogEstimate: the catalog's live pages shrink with
// the share of recordings removed (three of four: a quarter stays).
func TestPlanRetentionCatalogEstimate(t *testing.T) {
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	var recs []*Manifest
	for i, age := range []time.Duration{48 * time.Hour, 48 * time.Hour, 48 * time.Hour, 0} {
		recs = append(recs, &Manifest{ID: uuid.UUID{byte(i)}, Format: "a", Shard: "s", Meta: formats.Metadata{Start: now.Add(-age)}, StoredBytes: 1})
	}
	cat := ShardSpace{Name: "catalog", FileBytes: 1 << 20, DiskBytes: 1 << 20, LiveBytes: 1 << 20}
	plan, err := planRetention(manifestsOf(recs), nil, &cat, Policy{MaxAge: time.Hour}, PlanOptions{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(1<<20 - 1<<18); plan.EstimatedCatalogReturn != want {
		t.Errorf("catalog estimate %d, want %d", plan.EstimatedCatalogReturn, want)
	}
}

// manifestsOf yields recs as Archive.List would.
func manifestsOf(recs []*Manifest) func(func(*Manifest) error) error {
	return func(fn func(*Manifest) error) error {
		for _, m := range recs {
			if err := fn(m); err != nil {
				return err
			}
		}
		return nil
	}
}
