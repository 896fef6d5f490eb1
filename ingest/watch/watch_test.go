package watch

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/google/uuid"

	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/teehistorian"
	"github.com/replayarchive/replay/ingest"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
)

// game generates a short teehistorian game and returns its bytes and
// game_uuid.
func game(t *testing.T, seed uint64, noFinish bool) ([]byte, uuid.UUID) {
	t.Helper()
	var buf bytes.Buffer
	err := teehistoriangen.Generate(&buf, teehistoriangen.Options{Duration: 30 * time.Second, Players: 6, Seed: seed, Messages: true, NoFinish: noFinish})
	if err != nil {
		t.Fatal(err)
	}
	rd, err := teehistorian.NewReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	id, err := uuid.Parse(rd.Header().GameUUID)
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), id
}

// writeLikeServer appends b to path the way a server does: pieces of
// random sizes (cutting records in the middle), with pauses.
func writeLikeServer(t *testing.T, path string, b []byte, seed uint64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		t.Error(err)
		return
	}
	defer f.Close()
	rng := rand.New(rand.NewPCG(seed, 1))
	for len(b) > 0 {
		n := min(len(b), 1+rng.IntN(800))
		if _, err := f.Write(b[:n]); err != nil {
			t.Error(err)
			return
		}
		b = b[n:]
		if len(b) > 0 {
			// Not after the last piece: a caller times the file's idle
			// span from when this returns.
			time.Sleep(time.Duration(rng.IntN(15)) * time.Millisecond)
		}
	}
}

// harness runs the watcher over dir, ingesting ready files into a new
// archive, until stop is called; stop fails the test if the watcher's
// goroutines outlive it.
type harness struct {
	a        *archive.Archive
	mu       sync.Mutex
	ready    []File
	results  []ingest.FileResult
	warnings []string
	stop     func()
}

func watchDir(t *testing.T, dir string, settle time.Duration) *harness {
	t.Helper()
	before := runtime.NumGoroutine()
	a, err := archive.Open(filepath.Join(t.TempDir(), "archive"), archive.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	codecs := []formats.Codec{teehistorian.New()}
	p := &ingest.Pipeline{Archive: a, Codecs: codecs}
	h := &harness{a: a}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{
			Dirs: []string{dir}, Settle: settle, Rescan: 300 * time.Millisecond, Check: 20 * time.Millisecond,
			Complete: CodecComplete(codecs),
			Ready: func(ctx context.Context, f File) error {
				h.mu.Lock()
				h.ready = append(h.ready, f)
				h.mu.Unlock()
				return p.Run(ctx, []string{f.Path}, func(r ingest.FileResult) {
					h.mu.Lock()
					h.results = append(h.results, r)
					h.mu.Unlock()
				})
			},
			Warn: func(path, msg string) {
				h.mu.Lock()
				h.warnings = append(h.warnings, path+": "+msg)
				h.mu.Unlock()
			},
		})
	}()
	h.stop = func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Run did not return within 5 s of cancel")
		}
		a.Close()
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > before {
			buf := make([]byte, 1<<16)
			t.Errorf("%d goroutines after stop, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
		}
	}
	return h
}

// waitFor polls cond for up to d.
func (h *harness) waitFor(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		h.mu.Lock()
		ok := cond()
		h.mu.Unlock()
		if ok {
			return true
		}
	}
	return false
}

// checkOne asserts exactly one recording, id, whose export is want.
func (h *harness) checkOne(t *testing.T, id uuid.UUID, want []byte) {
	t.Helper()
	var ids []uuid.UUID
	h.a.List(context.Background(), func(m *archive.Manifest) error {
		ids = append(ids, m.ID)
		return nil
	})
	if len(ids) != 1 || ids[0] != id {
		t.Fatalf("recordings %v, want exactly [%v]", ids, id)
	}
	rec, err := h.a.Open(id)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := rec.WriteTo(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Fatalf("export: %d bytes, differs from the %d written", out.Len(), len(want))
	}
}

// A file written the way a server writes it is ingested once, when FINISH
// arrives, as the game_uuid, byte for byte; the settle time (a minute)
// plays no part.
func TestGrowingFileIngestedOnFinish(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "teehistorian")
	os.Mkdir(dir, 0o755)
	b, id := game(t, 7, false)
	h := watchDir(t, dir, time.Minute)
	defer h.stop()
	// A subdirectory made after the watch started is followed too.
	sub := filepath.Join(dir, "srv2")
	os.Mkdir(sub, 0o755)
	time.Sleep(50 * time.Millisecond)
	path := filepath.Join(sub, id.String()+".teehistorian")
	start := time.Now()
	writeLikeServer(t, path, b, 7)
	wrote := time.Since(start)
	if !h.waitFor(10*time.Second, func() bool { return len(h.results) > 0 }) {
		t.Fatalf("nothing ingested within 10 s of FINISH (warnings %q)", h.warnings)
	}
	t.Logf("%d bytes written in %v; ingested %v after FINISH", len(b), wrote, time.Since(start)-wrote)
	time.Sleep(400 * time.Millisecond) // a rescan: nothing more
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.ready) != 1 || !h.ready[0].Complete || h.ready[0].Size != int64(len(b)) {
		t.Fatalf("ready %+v, want one complete file of %d bytes", h.ready, len(b))
	}
	if r := h.results[0]; len(h.results) != 1 || r.Outcome != ingest.OutcomeIngested || r.ID != id {
		t.Fatalf("results %+v", h.results)
	}
	h.checkOne(t, id, b)
}

// A server killed mid-game leaves a file without FINISH: ingested once it
// has been idle for the settle time, not before.
func TestKilledServerIngestedAfterSettle(t *testing.T) {
	dir := t.TempDir()
	b, id := game(t, 8, true)
	const settle = 700 * time.Millisecond
	h := watchDir(t, dir, settle)
	defer h.stop()
	writeLikeServer(t, filepath.Join(dir, id.String()+".teehistorian"), b, 8)
	last := time.Now()
	if !h.waitFor(10*time.Second, func() bool { return len(h.results) > 0 }) {
		t.Fatalf("nothing ingested within 10 s (warnings %q)", h.warnings)
	}
	if idle := time.Since(last); idle < settle {
		t.Errorf("ingested %v after the last write, before the settle time %v", idle, settle)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.ready) != 1 || h.ready[0].Complete {
		t.Fatalf("ready %+v, want one idle file", h.ready)
	}
	if r := h.results[0]; r.Outcome != ingest.OutcomeIngested || r.ID != id {
		t.Fatalf("results %+v", h.results)
	}
	h.checkOne(t, id, b)
}

// A handed-over file that shrinks, or whose start changes, is reported.
func TestShrunkAndRewrittenFilesWarn(t *testing.T) {
	dir := t.TempDir()
	h := watchDir(t, dir, 200*time.Millisecond)
	defer h.stop()
	path := filepath.Join(dir, "notes.txt")
	os.WriteFile(path, bytes.Repeat([]byte("a"), 10000), 0o644)
	if !h.waitFor(5*time.Second, func() bool { return len(h.ready) == 1 }) {
		t.Fatal("not handed over")
	}
	// Each new content replaces the file at once (a dot file renamed over
	// it): os.WriteFile truncates first, and a watcher looking between
	// the truncation and the write sees a file of 0 bytes.
	replace := func(b []byte) {
		tmp := filepath.Join(dir, ".notes.tmp")
		if err := os.WriteFile(tmp, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	replace(bytes.Repeat([]byte("b"), 20000)) // same name, new content
	if !h.waitFor(5*time.Second, func() bool { return len(h.ready) == 2 }) {
		t.Fatal("rewritten file not handed over again")
	}
	replace([]byte("short"))
	if !h.waitFor(5*time.Second, func() bool { return len(h.ready) == 3 }) {
		t.Fatal("shrunk file not handed over again")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	all := strings.Join(h.warnings, "\n")
	if !strings.Contains(all, "changed: watched as a new file") || !strings.Contains(all, "shrank from 20000 to 5 bytes") {
		t.Errorf("warnings %q", h.warnings)
	}
}

func TestRunErrors(t *testing.T) {
	ctx := context.Background()
	ready := func(context.Context, File) error { return nil }
	if Run(ctx, Options{Ready: ready}) == nil {
		t.Error("no directories accepted")
	}
	if Run(ctx, Options{Dirs: []string{filepath.Join(t.TempDir(), "missing")}, Ready: ready}) == nil {
		t.Error("missing directory accepted")
	}
	if Run(ctx, Options{Dirs: []string{t.TempDir()}}) == nil {
		t.Error("nil Ready accepted")
	}
}

// Files already idle when the watch starts (a server's history) are
// ready at once, without asking the codec; the rescan finds files whose
// events were lost.
func TestOldFilesReadyAtOnceAndRescan(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "old.teehistorian")
	b, _ := game(t, 9, false)
	os.WriteFile(old, b, 0o644)
	hour := time.Now().Add(-time.Hour)
	os.Chtimes(old, hour, hour)
	var asked []string
	var ready []File
	w := &watcher{o: Options{Dirs: []string{dir}, Settle: time.Minute, Rescan: time.Hour,
		Complete: func(_ context.Context, path string) (bool, error) { asked = append(asked, path); return false, nil },
		Ready:    func(_ context.Context, f File) error { ready = append(ready, f); return nil }},
		files: map[string]*state{}, dirs: map[string]bool{}, dirty: map[string]bool{}}
	var err error
	if w.fsw, err = fsnotify.NewWatcher(); err != nil {
		t.Fatal(err)
	}
	defer w.fsw.Close()
	w.rescan(context.Background())
	if len(ready) != 1 || ready[0].Path != old || ready[0].Complete || len(asked) != 0 {
		t.Fatalf("ready %+v, asked %q; want old.teehistorian at once, codec not asked", ready, asked)
	}
	// No event is read in this test: only the rescan can find this one.
	fresh := filepath.Join(dir, "fresh.teehistorian")
	os.WriteFile(fresh, b[:len(b)/2], 0o644)
	w.rescan(context.Background())
	if len(asked) != 1 || asked[0] != fresh || len(ready) != 1 {
		t.Fatalf("after rescan: asked %q, ready %+v; want fresh.teehistorian asked, not ready", asked, ready)
	}
}

// A grow that keeps failing is retried though the file does not change,
// after a backoff that doubles from GrowEvery and stays within RetryMax;
// the status counts the file as failing until a grow succeeds, and the
// file is then grown again as it changes.
func TestFailedGrowRetried(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "live.teehistorian")
	var mu sync.Mutex
	var calls []time.Time
	var sizes []int64
	var statuses []Status
	failUntil := 6
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{Dirs: []string{dir}, Settle: time.Hour, Rescan: 50 * time.Millisecond, Check: 10 * time.Millisecond,
			GrowEvery: 40 * time.Millisecond, RetryMax: 200 * time.Millisecond,
			Grew: func(_ context.Context, f File) (bool, bool, error) {
				mu.Lock()
				defer mu.Unlock()
				calls, sizes = append(calls, time.Now()), append(sizes, f.Size)
				if len(calls) <= failUntil {
					return false, false, errors.New("no space left on device")
				}
				return true, false, nil
			},
			Ready:  func(context.Context, File) error { t.Error("Ready called for a live file"); return nil },
			Status: func(s Status) { mu.Lock(); statuses = append(statuses, s); mu.Unlock() },
		})
	}()
	// A new file is offered at once; it does not change again.
	if err := os.WriteFile(path, []byte("first bytes, then more"), 0o644); err != nil {
		t.Fatal(err)
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(calls) }
	deadline := time.Now().Add(10 * time.Second)
	for count() < failUntil+1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	failing := 0
	for _, s := range statuses {
		failing = max(failing, s.Failing)
	}
	mu.Unlock()
	// It grows once more: offered at once, with no backoff left.
	if err := os.WriteFile(path, []byte("first bytes, then more, and more"), 0o644); err != nil {
		t.Fatal(err)
	}
	for count() < failUntil+2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(150 * time.Millisecond)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(calls) != failUntil+2 {
		t.Fatalf("Grew called %d times, want %d: %d failures, the success and the next grow", len(calls), failUntil+2, failUntil)
	}
	for i, s := range sizes[:failUntil+1] {
		if s != 22 {
			t.Errorf("offer %d has size %d, want the file's 22 bytes", i, s)
		}
	}
	// Waits after each failure: 40, 80, 160, then 200 ms (RetryMax).
	for i := 1; i <= failUntil; i++ {
		want := min(40*time.Millisecond<<(i-1), 200*time.Millisecond)
		if got := calls[i].Sub(calls[i-1]); got < want || got > want+150*time.Millisecond {
			t.Errorf("retry %d came %v after the failure, want %v", i, got, want)
		}
	}
	if failing != 1 {
		t.Errorf("statuses while failing count %d failing files, want 1", failing)
	}
	if last := statuses[len(statuses)-1]; last.Failing != 0 {
		t.Errorf("status after the grow succeeded: %+v, want none failing", last)
	}
}
