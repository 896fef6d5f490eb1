package archive

import (
	"context"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
)

// killPolicy removes the "lines" recordings that started before
// 2025-06-29: shards January to May keep only their "other" recordings (and
// get compacted), and the catalog loses a third of its manifests.
var killPolicy = Policy{MaxAge: 185 * 24 * time.Hour, Formats: []string{"lines"}}

const helperEnv = "ARCHIVE_PRUNE_HELPER_DIR"

// TestPruneHelperProcess is not a test: TestPruneKilled runs the test binary
// again with only this test selected and helperEnv naming an archive, and
// kills it while it prunes.
func TestPruneHelperProcess(t *testing.T) {
	dir := os.Getenv(helperEnv)
	if dir == "" {
		t.Skip("helper process for TestPruneKilled")
	}
	if err := runPrune(dir); err != nil {
		t.Fatal(err)
	}
}

// runPrune plans killPolicy on the archive in dir and prunes it.
func runPrune(dir string) error {
	a, err := Open(dir, Options{NoSync: true, Now: pruneClock})
	if err != nil {
		return err
	}
	defer a.Close()
	ctx := context.Background()
	plan, err := a.Plan(ctx, killPolicy, PlanOptions{})
	if err != nil {
		return err
	}
	_, err = a.Prune(ctx, plan, PruneOptions{CompactCatalog: true})
	return err
}

// copyDir copies the regular files of src into dst.
func copyDir(tb testing.TB, src, dst string) {
	tb.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		tb.Fatal(err)
	}
}

// TestPruneKilled kills a prune at random moments (SIGKILL, fixed seed) and
// checks that the archive is consistent after every kill, and that running
// the prune again finishes the job: exactly the planned recordings are
// gone, Check is clean and no temporary file is left.
func TestPruneKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	template := t.TempDir()
	buildArchive(t, template, 600, 128, nil)

	// What the prune must leave, and how long it takes uninterrupted.
	want := map[uuid.UUID]bool{}
	gone := map[uuid.UUID]bool{}
	{
		a := openTest(t, template, Options{Now: pruneClock})
		plan, err := a.Plan(context.Background(), killPolicy, PlanOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range plan.Remove {
			gone[c.ID] = true
		}
		for id := range manifests(t, a) {
			if !gone[id] {
				want[id] = true
			}
		}
		a.Close()
	}
	ref := filepath.Join(t.TempDir(), "ref")
	copyDir(t, template, ref)
	start := time.Now()
	if out, err := helper(ref).CombinedOutput(); err != nil {
		t.Fatalf("uninterrupted prune: %v\n%s", err, out)
	}
	full := time.Since(start)
	refShards := shardFiles(t, ref)
	refDisk, err := DiskUsage(ref)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("uninterrupted prune in a child process: %v; %d of %d recordings go; shards left %v", full, len(gone), len(gone)+len(want), refShards)

	rng := rand.New(rand.NewPCG(1, 2))
	const runs = 10
	killedEarly := 0
	for i := range runs {
		dir := filepath.Join(t.TempDir(), "a")
		copyDir(t, template, dir)
		cmd := helper(dir)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		delay := time.Duration(rng.Int64N(int64(full)))
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		select {
		case err := <-exited:
			if err != nil {
				t.Fatalf("run %d: helper failed before the kill: %v", i, err)
			}
		case <-time.After(delay):
			cmd.Process.Signal(syscall.SIGKILL)
			if err := <-exited; err != nil {
				killedEarly++
			}
		}

		// The archive opens, and no planned survivor was lost.
		temps, _ := filepath.Glob(filepath.Join(dir, "*", "*"+tempSuffix))
		temps2, _ := filepath.Glob(filepath.Join(dir, "*"+tempSuffix))
		a := openTest(t, dir, Options{Now: pruneClock})
		if stale, _ := filepath.Glob(filepath.Join(dir, "shards", "*"+tempSuffix)); len(stale) > 0 {
			t.Errorf("run %d: stale temp files after open: %v", i, stale)
		}
		after := manifests(t, a)
		for id := range want {
			if after[id] == nil {
				t.Fatalf("run %d (killed after %v): survivor %s lost", i, delay, id)
			}
		}
		// Every recording still listed has all its chunks.
		crep, err := a.Check(context.Background(), CheckOptions{})
		if err != nil || len(crep.Problems) > 0 || len(crep.Dangling) > 0 {
			t.Fatalf("run %d (killed after %v): check before rerun: %+v %v", i, delay, crep, err)
		}
		t.Logf("run %d: killed after %v: %d recordings, %d pending deletes, %d orphan chunks, %d temp files",
			i, delay, len(after), crep.PendingDeletes, crep.Orphans, len(temps)+len(temps2))
		a.Close()

		// Running the prune again finishes the job.
		if err := runPrune(dir); err != nil {
			t.Fatalf("run %d: rerun: %v", i, err)
		}
		a = openTest(t, dir, Options{Now: pruneClock})
		after = manifests(t, a)
		if len(after) != len(want) {
			t.Fatalf("run %d: %d recordings after rerun, want %d", i, len(after), len(want))
		}
		crep, err = a.Check(context.Background(), CheckOptions{ReadData: true})
		if err != nil || !crep.OK() {
			t.Fatalf("run %d (killed after %v): check after rerun: %+v %v", i, delay, crep, err)
		}
		a.Close()
		if du, _ := DiskUsage(dir); du > refDisk+refDisk/10 {
			t.Errorf("run %d: %d bytes on disk after rerun, an uninterrupted prune left %d", i, du, refDisk)
		}
		if got := shardFiles(t, dir); strings.Join(got, " ") != strings.Join(refShards, " ") {
			t.Errorf("run %d: shards after rerun %v, want %v", i, got, refShards)
		}
		if stale, _ := filepath.Glob(filepath.Join(dir, "*", "*"+tempSuffix)); len(stale) > 0 {
			t.Errorf("run %d: temp files left: %v", i, stale)
		}
	}
	t.Logf("%d of %d runs were killed before they finished", killedEarly, runs)
}

// helper returns the command that runs runPrune on dir in a child process.
func helper(dir string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestPruneHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"="+dir)
	return cmd
}

// shardFiles lists the files in dir/shards.
func shardFiles(tb testing.TB, dir string) []string {
	ents, err := os.ReadDir(filepath.Join(dir, "shards"))
	if err != nil {
		tb.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}
