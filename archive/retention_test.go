package archive

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/formatstest"
)

// pruneNow is the clock of the retention tests: recordings start during
// 2025, one shard per month.
var pruneNow = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// pruneClock is the retention tests' Options.Now.
func pruneClock() time.Time { return pruneNow }

// genStart is when generated recording i of n starts: spread evenly over 2025.
func genStart(i, n int) time.Time {
	year := 365 * 24 * time.Hour
	return time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(int64(year) / int64(n) * int64(i)))
}

// genFormat is the format of generated recording i: every third is "other".
func genFormat(i int) string {
	if i%3 == 2 {
		return "other"
	}
	return "lines"
}

// buildArchive fills dir with n generated recordings of ticks ticks each,
// spread over the twelve months of 2025, committed in groups of 250.
// mutate, if set, may change each recording's metadata.
func buildArchive(tb testing.TB, dir string, n, ticks int, mutate func(i int, m *formats.Metadata)) {
	tb.Helper()
	a, err := Open(dir, Options{NoSync: true, Now: pruneClock})
	if err != nil {
		tb.Fatal(err)
	}
	defer a.Close()
	codec := formatstest.Lines{ChunkLines: 32}
	ctx := context.Background()
	var group []*Pending
	flush := func() {
		if _, err := a.Commit(ctx, group); err != nil {
			tb.Fatal(err)
		}
		group = group[:0]
	}
	for i := 0; i < n; i++ {
		p := a.NewPending(genFormat(i), fmt.Sprintf("r%05d.lines", i))
		meta, err := codec.Split(ctx, bytes.NewReader(formatstest.LinesFile(fmt.Sprintf("s%05d", i), ticks)), p)
		if err != nil {
			tb.Fatal(err)
		}
		meta.Start = genStart(i, n)
		if mutate != nil {
			mutate(i, meta)
		}
		if _, err := p.Finish(meta); err != nil {
			tb.Fatal(err)
		}
		if group = append(group, p); len(group) == 250 {
			flush()
		}
	}
	if len(group) > 0 {
		flush()
	}
}

func manifests(tb testing.TB, a *Archive) map[uuid.UUID]*Manifest {
	tb.Helper()
	out := map[uuid.UUID]*Manifest{}
	if err := a.List(context.Background(), func(m *Manifest) error { out[m.ID] = m; return nil }); err != nil {
		tb.Fatal(err)
	}
	return out
}

// pruneSetup builds an archive of n recordings and pins a few old ones:
// recordings 1..3 are held and 4..6 flagged by a moderator.
func pruneSetup(tb testing.TB, n int) (*Archive, []uuid.UUID, []uuid.UUID) {
	tb.Helper()
	dir := tb.TempDir()
	buildArchive(tb, dir, n, 128, nil)
	a := openTest(tb, dir, Options{Now: pruneClock})
	var held, flagged []uuid.UUID
	all := manifests(tb, a)
	for id, m := range all {
		switch m.SourceName {
		case "r00001.lines", "r00002.lines", "r00003.lines":
			if _, err := a.SetHold(id, "legal"); err != nil {
				tb.Fatal(err)
			}
			held = append(held, id)
		case "r00004.lines", "r00005.lines", "r00006.lines":
			if _, err := a.SetFlag(id, "cheat", ""); err != nil {
				tb.Fatal(err)
			}
			flagged = append(flagged, id)
		}
	}
	return a, held, flagged
}

// checkPrune checks what every prune test expects: the check is clean, the
// disk gave back at least 95% of the stored bytes removed, and exactly the
// recordings not planned remain.
func checkPrune(t *testing.T, a *Archive, before map[uuid.UUID]*Manifest, plan *Plan, rep *PruneReport) {
	t.Helper()
	ctx := context.Background()
	if len(rep.Removed) != len(plan.Remove) || rep.StoredBytes != plan.StoredBytes {
		t.Errorf("removed %d recordings (%d bytes), plan said %d (%d bytes)", len(rep.Removed), rep.StoredBytes, len(plan.Remove), plan.StoredBytes)
	}
	if float64(rep.BytesReturned) < 0.95*float64(rep.StoredBytes) {
		t.Errorf("disk gave back %d bytes for %d stored bytes removed (< 95%%)", rep.BytesReturned, rep.StoredBytes)
	}
	if est := plan.EstimatedReturn + plan.EstimatedCatalogReturn; est < rep.BytesReturned/2 || est > rep.BytesReturned*2 {
		t.Errorf("dry-run estimate %d bytes, %d returned", est, rep.BytesReturned)
	}
	du, err := DiskUsage(a.Dir())
	if err != nil || du != rep.DiskAfter {
		t.Errorf("DiskUsage now %d, report says %d (%v)", du, rep.DiskAfter, err)
	}
	gone := map[uuid.UUID]bool{}
	for _, c := range plan.Remove {
		gone[c.ID] = true
	}
	after := manifests(t, a)
	for id := range before {
		if _, ok := after[id]; ok == gone[id] {
			t.Fatalf("recording %s: present %v after prune, planned for removal %v", id, ok, gone[id])
		}
	}
	if len(after) != len(before)-len(gone) {
		t.Fatalf("%d recordings after prune, want %d", len(after), len(before)-len(gone))
	}
	crep, err := a.Check(ctx, CheckOptions{ReadData: true})
	if err != nil || !crep.OK() {
		t.Fatalf("check after prune: %+v %v", crep, err)
	}
	t.Logf("pruned %d of %d recordings, %d stored bytes; disk %d -> %d (returned %d, %.0f%% of stored; estimated %d + %d for the catalog); shards removed %v, compacted %v",
		len(rep.Removed), len(before), rep.StoredBytes, rep.DiskBefore, rep.DiskAfter, rep.BytesReturned,
		100*float64(rep.BytesReturned)/float64(max(rep.StoredBytes, 1)), plan.EstimatedReturn, plan.EstimatedCatalogReturn, rep.ShardsRemoved, rep.ShardsCompacted)
}

// testRecordings is how many recordings the prune tests generate; the
// benchmark uses 10,000 (generating them takes about 6 s here).
const testRecordings = 10000

func TestPruneByAge(t *testing.T) {
	ctx := context.Background()
	a, held, flagged := pruneSetup(t, testRecordings)
	before := manifests(t, a)
	// Recordings started before 2025-06-30 go: Jan..May whole, most of June.
	pol := Policy{MaxAge: 185 * 24 * time.Hour}
	plan, err := a.Plan(ctx, pol, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cut := pruneNow.Add(-pol.MaxAge)
	want := 0
	for _, m := range before {
		if m.Meta.Start.Before(cut) && m.Hold == nil && !m.Flagged() {
			want++
		}
	}
	if len(plan.Remove) != want || plan.KeptHeld != 3 || plan.KeptFlagged != 3 {
		t.Fatalf("plan removes %d (want %d), keeps %d held and %d flagged (want 3, 3)", len(plan.Remove), want, plan.KeptHeld, plan.KeptFlagged)
	}
	for _, c := range plan.Remove {
		if c.Reason != ReasonAge || !c.Start.Before(cut) {
			t.Fatalf("candidate %+v", c)
		}
	}
	rep, err := a.Prune(ctx, plan, PruneOptions{CompactCatalog: true})
	if err != nil {
		t.Fatal(err)
	}
	checkPrune(t, a, before, plan, rep)
	for _, id := range append(held, flagged...) {
		if _, err := a.Manifest(id); err != nil {
			t.Errorf("held or flagged %s: %v", id, err)
		}
	}
	// The old shards, but for the one keeping the pinned recordings, are gone.
	names, _ := a.Shards()
	if !slices.Equal(names, []string{"2025-01", "2025-06", "2025-07", "2025-08", "2025-09", "2025-10", "2025-11", "2025-12"}) {
		t.Errorf("shards after prune: %v", names)
	}

	// With IncludeFlagged the flagged ones go too; the held ones never.
	plan, err = a.Plan(ctx, pol, PlanOptions{IncludeFlagged: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Remove) != 3 || plan.KeptHeld != 3 || plan.KeptFlagged != 0 {
		t.Fatalf("plan with flagged: removes %d, keeps %d held, %d flagged", len(plan.Remove), plan.KeptHeld, plan.KeptFlagged)
	}
	if _, err := a.Prune(ctx, plan, PruneOptions{CompactCatalog: true}); err != nil {
		t.Fatal(err)
	}
	for _, id := range flagged {
		if _, err := a.Manifest(id); err == nil {
			t.Errorf("flagged %s survived --include-flagged", id)
		}
	}
	for _, id := range held {
		if _, err := a.Manifest(id); err != nil {
			t.Errorf("held %s: %v", id, err)
		}
	}
}

func TestPruneBySize(t *testing.T) {
	ctx := context.Background()
	a, held, flagged := pruneSetup(t, testRecordings)
	before := manifests(t, a)
	var total int64
	for _, m := range before {
		total += m.StoredBytes
	}
	pol := Policy{MaxBytes: total * 4 / 10}
	plan, err := a.Plan(ctx, pol, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !plan.BudgetMet || plan.ScopeBytes != total || plan.ScopeBytes-plan.StoredBytes > pol.MaxBytes {
		t.Fatalf("plan: budget met %v, %d of %d bytes go, budget %d", plan.BudgetMet, plan.StoredBytes, total, pol.MaxBytes)
	}
	// The oldest eligible go first: every survivor that could have gone is
	// younger than every recording removed.
	var newestGone time.Time
	gone := map[uuid.UUID]bool{}
	for _, c := range plan.Remove {
		if c.Reason != ReasonSize {
			t.Fatalf("candidate %+v", c)
		}
		gone[c.ID] = true
		if c.Start.After(newestGone) {
			newestGone = c.Start
		}
	}
	for id, m := range before {
		if !gone[id] && m.Hold == nil && !m.Flagged() && m.Meta.Start.Before(newestGone) {
			t.Fatalf("%s (start %s) kept while a younger one (%s) goes", id, m.Meta.Start, newestGone)
		}
	}
	rep, err := a.Prune(ctx, plan, PruneOptions{CompactCatalog: true})
	if err != nil {
		t.Fatal(err)
	}
	checkPrune(t, a, before, plan, rep)
	for _, id := range append(held, flagged...) {
		if _, err := a.Manifest(id); err != nil {
			t.Errorf("held or flagged %s: %v", id, err)
		}
	}
}

// A budget that only the pinned recordings already exceed cannot be met:
// the plan says so, removes every other recording in scope, and the
// recordings of other formats are left alone.
func TestPruneBudgetNotMet(t *testing.T) {
	ctx := context.Background()
	a, _, _ := pruneSetup(t, 60)
	pol := Policy{MaxBytes: 1, Formats: []string{"lines"}}
	plan, err := a.Plan(ctx, pol, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Of the six pinned recordings, four are "lines" (see genFormat).
	if plan.BudgetMet || plan.KeptHeld != 2 || plan.KeptFlagged != 2 {
		t.Fatalf("plan: budget met %v, kept %d held, %d flagged", plan.BudgetMet, plan.KeptHeld, plan.KeptFlagged)
	}
	if _, err := a.Prune(ctx, plan, PruneOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, m := range manifests(t, a) {
		if m.Format == "lines" && m.Hold == nil && !m.Flagged() {
			t.Errorf("%s survived a budget of one byte", m.ID)
		}
	}
	if n := len(manifests(t, a)); n != 20+4 {
		t.Errorf("%d recordings left, want the 20 others and the 4 pinned lines", n)
	}
}

func TestPolicyStored(t *testing.T) {
	a := openTest(t, "", Options{})
	if p, err := a.Policy(); p != nil || err != nil {
		t.Fatalf("fresh archive: policy %+v, %v", p, err)
	}
	want := &Policy{MaxAge: 90 * 24 * time.Hour, MaxBytes: 2 << 30, Formats: []string{"teehistorian"}}
	if err := a.SetPolicy(want); err != nil {
		t.Fatal(err)
	}
	got, err := a.Policy()
	if err != nil || got.MaxAge != want.MaxAge || got.MaxBytes != want.MaxBytes || !slices.Equal(got.Formats, want.Formats) {
		t.Fatalf("policy = %+v, %v", got, err)
	}
	if err := a.SetPolicy(&Policy{}); err != nil {
		t.Fatal(err)
	}
	if p, err := a.Policy(); p != nil || err != nil {
		t.Fatalf("cleared: policy %+v, %v", p, err)
	}
	if err := a.SetPolicy(&Policy{MaxAge: -1}); err == nil {
		t.Error("negative max age accepted")
	}
}

// A plan made before a recording was held does not remove it.
func TestPruneHonoursLateHold(t *testing.T) {
	ctx := context.Background()
	a, _, _ := pruneSetup(t, 60)
	plan, err := a.Plan(ctx, Policy{MaxAge: time.Hour}, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	late := plan.Remove[10].ID
	if _, err := a.SetHold(late, "subpoena"); err != nil {
		t.Fatal(err)
	}
	rep, err := a.Prune(ctx, plan, PruneOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Skipped) != 1 || rep.Skipped[0] != late || len(rep.Removed) != len(plan.Remove)-1 {
		t.Fatalf("skipped %v, removed %d of %d", rep.Skipped, len(rep.Removed), len(plan.Remove))
	}
	if _, err := a.Manifest(late); err != nil {
		t.Fatal(err)
	}
	if crep, err := a.Check(ctx, CheckOptions{ReadData: true}); err != nil || !crep.OK() {
		t.Fatalf("check: %+v %v", crep, err)
	}
}

// Compacting old shards does not stop commits into the current one, nor
// reads from the shard being compacted.
func TestPruneWhileCommitting(t *testing.T) {
	ctx := context.Background()
	a, _, _ := pruneSetup(t, 600)
	plan, err := a.Plan(ctx, Policy{MaxAge: 185 * 24 * time.Hour, Formats: []string{"lines"}}, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var survivors []uuid.UUID
	for id, m := range manifests(t, a) {
		if m.Format == "other" {
			survivors = append(survivors, id)
		}
	}
	done := make(chan struct{})
	errs := make(chan error, 2)
	committed := 0
	go func() { // commits into the current month's shard
		for i := 0; ; i++ {
			select {
			case <-done:
				errs <- nil
				return
			default:
			}
			p := a.NewPending("lines", "new")
			meta, err := formatstest.Lines{}.Split(ctx, bytes.NewReader(formatstest.LinesFile(fmt.Sprintf("new%d", i), 40)), p)
			if err == nil {
				_, err = p.Finish(meta)
			}
			if err == nil {
				_, err = a.Commit(ctx, []*Pending{p})
			}
			if err != nil {
				errs <- err
				return
			}
			committed++
		}
	}()
	go func() { // reads recordings kept in the shards being compacted
		for i := 0; ; i++ {
			select {
			case <-done:
				errs <- nil
				return
			default:
			}
			r, err := a.Open(survivors[i%len(survivors)])
			if err == nil {
				err = r.Verify(ctx)
			}
			if err != nil {
				errs <- err
				return
			}
		}
	}()
	rep, err := a.Prune(ctx, plan, PruneOptions{})
	close(done)
	for range 2 {
		if e := <-errs; e != nil {
			t.Error(e)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.ShardsCompacted) == 0 {
		t.Errorf("no shard was compacted: %+v", rep)
	}
	crep, err := a.Check(ctx, CheckOptions{ReadData: true})
	if err != nil || !crep.OK() || crep.Recordings != 600-len(rep.Removed)+committed {
		t.Fatalf("check: %+v %v (committed %d meanwhile)", crep, err, committed)
	}
	t.Logf("%d commits during the prune; compacted %v", committed, rep.ShardsCompacted)
}

// BenchmarkPrune prunes 10,000 generated recordings in 12 monthly shards
// (about half of them, by age or by size budget) with fsync on, and reports
// the bytes returned to the file system, measured with DiskUsage.
func BenchmarkPrune(b *testing.B) {
	template := b.TempDir()
	buildArchive(b, template, 10000, 128, nil)
	total := int64(0)
	{
		a := openTest(b, template, Options{Now: pruneClock})
		for _, m := range manifests(b, a) {
			total += m.StoredBytes
		}
		a.Close()
	}
	for _, bc := range []struct {
		name        string
		pol         Policy
		keepCatalog bool
	}{
		{"age", Policy{MaxAge: 185 * 24 * time.Hour}, false},
		{"size", Policy{MaxBytes: total / 2}, false},
		// Shards only: the catalog is not compacted.
		{"age-shards-only", Policy{MaxAge: 185 * 24 * time.Hour}, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var returned, pruned, removed, before int64
			for b.Loop() {
				b.StopTimer()
				dir := filepath.Join(b.TempDir(), "a")
				copyDir(b, template, dir)
				a, err := Open(dir, Options{Now: pruneClock})
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				ctx := context.Background()
				plan, err := a.Plan(ctx, bc.pol, PlanOptions{})
				if err != nil {
					b.Fatal(err)
				}
				rep, err := a.Prune(ctx, plan, PruneOptions{CompactCatalog: !bc.keepCatalog})
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if removed == 0 {
					b.Logf("%s: shards removed %v, compacted %v, catalog compacted %v", bc.name, rep.ShardsRemoved, rep.ShardsCompacted, rep.CatalogCompacted)
				}
				returned += rep.BytesReturned
				pruned += rep.StoredBytes
				removed += int64(len(rep.Removed))
				before += rep.DiskBefore
				a.Close()
				os.RemoveAll(dir)
				b.StartTimer()
			}
			n := float64(b.N)
			b.ReportMetric(float64(removed)/n, "recordings/op")
			b.ReportMetric(float64(pruned)/n, "pruned-stored-B/op")
			b.ReportMetric(float64(returned)/n, "returned-B/op")
			b.ReportMetric(float64(before)/n, "disk-before-B/op")
			b.ReportMetric(float64(returned)/float64(max(pruned, 1)), "returned/stored")
		})
	}
}

// Re-ingesting the bytes of a recording whose delete was marked but not
// swept (a crash in between) must not lose the new copy to the old sweep.
func TestReingestAfterUnsweptMark(t *testing.T) {
	ctx := context.Background()
	a := openTest(t, "", Options{})
	native := formatstest.LinesFile("again", 40)
	res := ingest(t, a, native, nil)
	if _, err := a.Mark(ctx, []uuid.UUID{res.ID}, false); err != nil {
		t.Fatal(err)
	}
	again := ingest(t, a, native, nil)
	if again.ID != res.ID || again.Outcome != Ingested {
		t.Fatalf("re-ingest: %s %v", again.ID, again.Outcome)
	}
	if _, err := a.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if got := export(t, a, again.ID); !bytes.Equal(got, native) {
		t.Fatal("re-ingested recording lost its chunks to the pending sweep")
	}
	if rep, err := a.Check(ctx, CheckOptions{ReadData: true}); err != nil || !rep.OK() {
		t.Fatalf("check: %+v %v", rep, err)
	}
}
