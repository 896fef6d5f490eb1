package archive

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/formatstest"
)

// ingestGrowing is ingest for a recording split to replace its earlier
// copy (Pending.MayReplace), as ingest does for live directories.
func ingestGrowing(t *testing.T, a *Archive, native []byte, mutate func(*formats.Metadata)) Result {
	t.Helper()
	p := a.NewPending("lines", "test.lines")
	p.MayReplace()
	meta, err := formatstest.Lines{}.Split(context.Background(), bytes.NewReader(native), p)
	if err != nil {
		t.Fatal(err)
	}
	mutate(meta)
	if _, err := p.Finish(meta); err != nil {
		t.Fatal(err)
	}
	res, err := a.Commit(context.Background(), []*Pending{p})
	if err != nil {
		t.Fatal(err)
	}
	return res[0]
}

// A grown copy whose chunks match the archived ones in tick, length and
// CRC-32C but not in bytes (a forged CRC) is refused: the bytes are
// compared by sha256 against the chunks read back.
func TestReplaceComparesBytes(t *testing.T) {
	a := openTest(t, "", Options{})
	own := uuid.MustParse("11111111-2222-3333-4444-555555555555")
	grow := func(m *formats.Metadata) { m.ID, m.Growing = own, true }
	ingestGrowing(t, a, formatstest.LinesFile("w", 28), grow)

	p := a.NewPending("lines", "test.lines")
	p.MayReplace()
	meta, err := formatstest.Lines{}.Split(context.Background(), bytes.NewReader(formatstest.LinesFile("w", 48)), p)
	if err != nil {
		t.Fatal(err)
	}
	grow(meta)
	if _, err := p.Finish(meta); err != nil {
		t.Fatal(err)
	}
	p.chunkSums[3][0] ^= 1 // what a CRC collision with other bytes looks like
	res, err := a.Commit(context.Background(), []*Pending{p})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Outcome != Refused || !strings.Contains(res[0].Err.Error(), "chunk 3") {
		t.Fatalf("outcome %v, err %v", res[0].Outcome, res[0].Err)
	}
	if got := export(t, a, own); !bytes.Equal(got, formatstest.LinesFile("w", 28)) {
		t.Error("the archived copy changed")
	}
	rep, err := a.Check(context.Background(), CheckOptions{ReadData: true})
	if err != nil || !rep.OK() || rep.Recordings != 1 {
		t.Fatalf("check: %+v %v", rep, err)
	}
}

// A takedown remembers the bytes: Commit refuses them, saying who, when
// and why, until an admin lifts it. A prune is not a takedown.
func TestTakedown(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	a := openTest(t, "", Options{Now: func() time.Time { return at }})
	ctx := context.Background()
	file := formatstest.LinesFile("td", 30)
	first := ingest(t, a, file, nil)
	m, err := a.TakeDown(ctx, first.ID, DeleteOptions{By: "mod-anna", Reason: "doxxing in chat"})
	if err != nil || m.ID != first.ID {
		t.Fatalf("take down: %v", err)
	}
	again := ingest(t, a, file, nil)
	var td *TakenDownError
	if again.Outcome != TakenDown || !errors.As(again.Err, &td) || again.ID != first.ID || again.Manifest != nil {
		t.Fatalf("re-ingest: %+v", again)
	}
	for _, want := range []string{"mod-anna", "doxxing in chat", "2026-03-04T05:06:07Z", first.ID.String()} {
		if !strings.Contains(td.Error(), want) {
			t.Errorf("%q does not say %q", td.Error(), want)
		}
	}
	sum := sha256.Sum256(file)
	if got, err := a.TakenDown(sum[:]); err != nil || got == nil || got.Reason != "doxxing in chat" {
		t.Errorf("TakenDown: %+v %v", got, err)
	}
	list, err := a.Takedowns()
	if err != nil || len(list) != 1 || list[0].ID != first.ID || list[0].By != "mod-anna" || !list[0].At.Equal(at) {
		t.Fatalf("takedowns: %+v %v", list, err)
	}
	rep, err := a.Check(ctx, CheckOptions{ReadData: true})
	if err != nil || !rep.OK() || rep.Recordings != 0 {
		t.Fatalf("check: %+v %v", rep, err)
	}

	if _, err := a.LiftTakedown(t.Context(), strings.Repeat("0", 64)); !errors.Is(err, ErrNoTakedown) {
		t.Errorf("lifting nothing: %v", err)
	}
	if _, err := a.LiftTakedown(t.Context(), "not hex"); err == nil {
		t.Error("a bad sha256 was accepted")
	}
	if _, err := a.LiftTakedown(t.Context(), list[0].SHA256); err != nil {
		t.Fatal(err)
	}
	if back := ingest(t, a, file, nil); back.Outcome != Ingested || back.ID != first.ID {
		t.Fatalf("after the lift: %+v", back)
	}

	// Removed by a prune (Mark), the bytes may come back.
	if _, err := a.Mark(ctx, []uuid.UUID{first.ID}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if back := ingest(t, a, file, nil); back.Outcome != Ingested {
		t.Fatalf("after a prune: %+v", back)
	}
	if list, _ := a.Takedowns(); len(list) != 0 {
		t.Fatalf("a prune recorded takedowns: %+v", list)
	}
}

// At commit, a recording that started longer ago than the stored policy's
// MaxAge (for its format) is not archived.
func TestCommitExpired(t *testing.T) {
	a := openTest(t, "", Options{})
	if err := a.SetPolicy(&Policy{MaxAge: 48 * time.Hour, Formats: []string{"lines"}}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	old := ingest(t, a, formatstest.LinesFile("old", 10), func(m *formats.Metadata) { m.Start = now.Add(-72 * time.Hour) })
	if old.Outcome != Expired || !strings.Contains(old.Note, "older than the retention policy") || old.Manifest != nil {
		t.Fatalf("old: %+v", old)
	}
	young := ingest(t, a, formatstest.LinesFile("young", 10), func(m *formats.Metadata) { m.Start = now.Add(-24 * time.Hour) })
	unknown := ingest(t, a, formatstest.LinesFile("unknown", 10), nil)
	if young.Outcome != Ingested || unknown.Outcome != Ingested {
		t.Fatalf("young %v, no start %v", young.Outcome, unknown.Outcome)
	}
	if err := a.SetPolicy(&Policy{MaxAge: 48 * time.Hour, Formats: []string{"other"}}); err != nil {
		t.Fatal(err)
	}
	if r := ingest(t, a, formatstest.LinesFile("old", 10), func(m *formats.Metadata) { m.Start = now.Add(-72 * time.Hour) }); r.Outcome != Ingested {
		t.Fatalf("out of the policy's scope: %v", r.Outcome)
	}
}

func TestOutcomeString(t *testing.T) {
	want := map[Outcome]string{Ingested: "ingested", Duplicate: "already archived", Replaced: "replaced",
		TakenDown: "taken down", Refused: "refused", Expired: "expired", Outcome(42): "Outcome(42)"}
	for o, w := range want {
		if o.String() != w {
			t.Errorf("%d: %q, want %q", int(o), o.String(), w)
		}
	}
}

// A sweep that fails after the delete committed says the delete took
// effect, and that a repairing Check finishes it.
func TestTakeDownSweepFails(t *testing.T) {
	dir := t.TempDir()
	a, err := Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	res := ingest(t, a, formatstest.LinesFile("full", 40), nil)
	a.Close()
	if a, err = Open(dir, Options{NoSync: true}); err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	// The shard cannot be opened: its path is a directory now.
	shard := filepath.Join(dir, "shards", res.Manifest.Shard+".db")
	if err := os.Rename(shard, shard+".away"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(shard, 0o700); err != nil {
		t.Fatal(err)
	}
	_, err = a.TakeDown(ctx, res.ID, DeleteOptions{By: "admin"})
	var se *SweepError
	if !errors.As(err, &se) || len(se.IDs) != 1 || se.IDs[0] != res.ID || !strings.Contains(err.Error(), "the delete took effect") || !strings.Contains(err.Error(), "repairing Check") {
		t.Fatalf("take down: %v", err)
	}
	if _, err := a.Manifest(res.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the recording is still there: %v", err)
	}
	if err := os.Remove(shard); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(shard+".away", shard); err != nil {
		t.Fatal(err)
	}
	rep, err := a.Check(ctx, CheckOptions{Repair: true})
	if err != nil || rep.Recordings != 0 {
		t.Fatalf("repair: %+v %v", rep, err)
	}
	if rep, err = a.Check(ctx, CheckOptions{}); err != nil || !rep.OK() {
		t.Fatalf("after repair: %+v %v", rep, err)
	}
}

// Catalog compaction swaps the catalog handle while readers use the
// archive (run with -race): no reader fails or sees a closed database.
func TestCompactCatalogWhileReading(t *testing.T) {
	dir := t.TempDir()
	buildArchive(t, dir, 150, 16, nil)
	a := openTest(t, dir, Options{Now: pruneClock})
	ctx := context.Background()
	all := manifests(t, a)
	var keep uuid.UUID
	plan := &Plan{}
	for id := range all {
		if keep == uuid.Nil {
			keep = id
			continue
		}
		plan.Remove = append(plan.Remove, Candidate{ID: id})
	}

	stop := make(chan struct{})
	var reads atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	reader := func(fn func() error) {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := fn(); err != nil {
				errs <- err
				return
			}
			reads.Add(1)
			time.Sleep(100 * time.Microsecond) // bounds the race detector's history
		}
	}
	wg.Add(3)
	go reader(func() error {
		_, err := a.Manifest(keep)
		return err
	})
	go reader(func() error {
		n := 0
		err := a.List(ctx, func(*Manifest) error { n++; return nil })
		if err == nil && n == 0 {
			err = errors.New("list saw no recording")
		}
		return err
	})
	go reader(func() error {
		r, err := a.Open(keep)
		if err != nil {
			return err
		}
		_, _, err = r.ReadChunk(ctx, 0)
		return err
	})
	rep, err := a.Prune(ctx, plan, PruneOptions{CompactCatalog: true})
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err != nil || !rep.CatalogCompacted || len(rep.Removed) != len(all)-1 {
		t.Fatalf("prune: compacted %v, removed %d: %v", rep != nil && rep.CatalogCompacted, len(rep.Removed), err)
	}
	if reads.Load() == 0 {
		t.Fatal("no read ran during the prune")
	}
	m, err := a.SetFlag(keep, "after", "")
	if err != nil || len(m.Flags) != 1 {
		t.Fatalf("write after the compaction: %v", err)
	}
	check, err := a.Check(ctx, CheckOptions{ReadData: true})
	if err != nil || !check.OK() || check.Recordings != 1 {
		t.Fatalf("check: %+v %v", check, err)
	}
}

// A small archive takes a little room: bbolt's allocation step was 16 MiB
// past the data of every file.
func TestSmallArchiveFiles(t *testing.T) {
	dir := t.TempDir()
	a, err := Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	res := ingest(t, a, formatstest.LinesFile("small", 50), nil)
	a.Close()
	for _, p := range []string{"catalog.db", filepath.Join("shards", res.Manifest.Shard+".db")} {
		info, err := os.Stat(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		if info.Size() > 2<<20 {
			t.Errorf("%s: %d bytes for one small recording", p, info.Size())
		}
	}
}

func TestOptionsModes(t *testing.T) {
	for _, tt := range []struct {
		group     bool
		file, dir os.FileMode
	}{{false, 0o600, 0o700}, {true, 0o640, 0o750}} {
		o := Options{GroupAccess: tt.group}
		if o.fileMode() != tt.file || o.dirMode() != tt.dir {
			t.Errorf("GroupAccess %v: %v %v", tt.group, o.fileMode(), o.dirMode())
		}
	}
}
