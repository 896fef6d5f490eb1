package ingest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/klauspost/compress/zstd"

	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/formatstest"
	"github.com/replayarchive/replay/formats/teehistorian"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
	"github.com/replayarchive/replay/internal/memtest"
)

// hourFile generates (once per test binary) a one-hour, 16-player
// teehistorian file with our own writer and returns its path.
var hourFile = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "replay-hour-")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "hour.teehistorian")
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	err = teehistoriangen.Generate(f, teehistoriangen.Options{Duration: time.Hour, Players: 16, Seed: 42, Messages: true})
	return path, err
})

func hourPath(tb testing.TB) string {
	tb.Helper()
	p, err := hourFile()
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// ingestFile ingests path into a new archive under dir, storing its chunks
// as record columns unless opts says otherwise (as replay.Open does), so
// that the seek, export and ingest benchmarks measure what users store.
func ingestFile(tb testing.TB, dir, path string, opts archive.Options) (*archive.Archive, uuid.UUID) {
	tb.Helper()
	if opts.Columns == nil {
		opts.Columns = map[string]formats.Columnar{teehistorian.Name: teehistorian.New()}
	}
	a, err := archive.Open(dir, opts)
	if err != nil {
		tb.Fatal(err)
	}
	p := &Pipeline{Archive: a, Codecs: []formats.Codec{teehistorian.New()}}
	var res FileResult
	if err := p.Run(context.Background(), []string{path}, func(r FileResult) { res = r }); err != nil {
		tb.Fatal(err)
	}
	if res.Outcome != OutcomeIngested {
		tb.Fatalf("ingest %s: %s %s", path, res.Outcome, res.Err)
	}
	return a, res.ID
}

// On the one-hour file, decoding a range deep inside it reads exactly the
// one chunk that holds the range, and the whole file exports byte for byte.
func TestHourFileSeekReadsOneChunk(t *testing.T) {
	path := hourPath(t)
	a, id := ingestFile(t, t.TempDir(), path, archive.Options{NoSync: true})
	defer a.Close()
	rec, err := a.Open(id)
	if err != nil {
		t.Fatal(err)
	}
	chunks := rec.Chunks()
	if len(chunks) < 20 {
		t.Fatalf("one hour split into only %d chunks", len(chunks))
	}
	mid := chunks[len(chunks)/2]
	from := mid.StartTick + mid.Ticks/2
	n := 0
	err = teehistorian.New().Frames(context.Background(), rec, formats.Ticks(from, from+10), func(f formats.Frame) error {
		if f.Tick < from || f.Tick > from+10 {
			t.Errorf("frame at tick %d outside [%d, %d]", f.Tick, from, from+10)
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 || rec.Reads() != 1 {
		t.Fatalf("frames %d..%d: %d frames from %d chunk reads (of %d chunks), want >0 frames from exactly 1", from, from+10, n, rec.Reads(), len(chunks))
	}
	var out bytes.Buffer
	if _, err := rec.WriteTo(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(path)
	if !bytes.Equal(out.Bytes(), want) {
		t.Fatal("export of the one-hour file differs from the original")
	}
}

// Every real teehistorian file ingests, exports byte-identically, and a
// flipped or truncated copy changes nothing in the archive.
func TestCorpusTeehistorianArchiveRoundTrip(t *testing.T) {
	dir := formatstest.CorpusDir(t, "teehistorian")
	files, _ := filepath.Glob(filepath.Join(dir, "*.teehistorian"))
	if len(files) != 6 {
		t.Fatalf("found %d teehistorian files, want 6", len(files))
	}
	a, err := archive.Open(t.TempDir(), archive.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	p := &Pipeline{Archive: a, Codecs: []formats.Codec{teehistorian.New()}}
	// Broken copies first: none may leave a trace.
	tmp := t.TempDir()
	orig, _ := os.ReadFile(files[0])
	var broken []string
	for i, cut := range []int{len(orig) / 3, len(orig) / 2} {
		b := bytes.Clone(orig[:cut])
		b[len(b)/2] ^= 0xff
		path := filepath.Join(tmp, "broken"+string(rune('a'+i))+".teehistorian")
		os.WriteFile(path, b, 0o644)
		broken = append(broken, path)
	}
	var results []FileResult
	if err := p.Run(context.Background(), append(broken, files...), func(r FileResult) { results = append(results, r) }); err != nil {
		t.Fatal(err)
	}
	ingested := 0
	for _, r := range results {
		switch {
		case r.Outcome == OutcomeIngested:
			ingested++
			rec, err := a.Open(r.ID)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if _, err := rec.WriteTo(context.Background(), &out); err != nil {
				t.Fatalf("%s: %v", r.Path, err)
			}
			want, _ := os.ReadFile(r.Path)
			if sha256.Sum256(out.Bytes()) != sha256.Sum256(want) {
				t.Errorf("%s: export differs", r.Path)
			}
		case r.Outcome == OutcomeFailed:
			t.Logf("%s", r.Err)
		}
	}
	// Broken copies either fail with an error or (a cut that lands on an
	// item boundary) ingest as shorter recordings; the six real ones must
	// all be there.
	if ingested < 6 {
		t.Errorf("ingested %d files, want at least the 6 real ones", ingested)
	}
	rep, err := a.Check(context.Background(), archive.CheckOptions{ReadData: true})
	if err != nil || !rep.OK() {
		t.Fatalf("check: %+v %v", rep, err)
	}
}

func BenchmarkIngestHour(b *testing.B) {
	path := hourPath(b)
	st, _ := os.Stat(path)
	b.SetBytes(st.Size())
	var stored int64
	for b.Loop() {
		dir := b.TempDir()
		a, id := ingestFile(b, dir, path, archive.Options{})
		m, _ := a.Manifest(id)
		stored = m.StoredBytes
		a.Close()
	}
	b.ReportMetric(float64(stored)/float64(st.Size())*100, "stored%")
	if zst, err := zstd19(path); err == nil {
		b.ReportMetric(float64(stored)/float64(zst), "stored/zstd19")
	}
}

// zstd19 returns the size of `zstd -19` of path, using the zstd command.
func zstd19(path string) (int64, error) {
	out, err := exec.Command("zstd", "-19", "-c", "-q", path).Output()
	return int64(len(out)), err
}

func BenchmarkSeekHour(b *testing.B) {
	path := hourPath(b)
	a, id := ingestFile(b, b.TempDir(), path, archive.Options{NoSync: true})
	defer a.Close()
	rec, err := a.Open(id)
	if err != nil {
		b.Fatal(err)
	}
	last := rec.Meta().Ticks
	codec := teehistorian.New()
	rng := rand.New(rand.NewPCG(1, 2))
	var lat []time.Duration
	for b.Loop() {
		tick := rng.Int64N(last)
		start := time.Now()
		err := codec.Frames(context.Background(), rec, formats.Ticks(tick, tick), func(formats.Frame) error { return nil })
		lat = append(lat, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

func BenchmarkExportHour(b *testing.B) {
	path := hourPath(b)
	a, id := ingestFile(b, b.TempDir(), path, archive.Options{NoSync: true})
	defer a.Close()
	st, _ := os.Stat(path)
	b.SetBytes(st.Size())
	for b.Loop() {
		rec, err := a.Open(id)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := rec.WriteTo(context.Background(), io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkIngestPeakMemory reports the peak heap while ingesting the
// one-hour file next to the file's size: ingest streams, so the peak is
// the compressed chunks awaiting their commit, not the file.
func BenchmarkIngestPeakMemory(b *testing.B) {
	path := hourPath(b)
	st, _ := os.Stat(path)
	var peak uint64
	for b.Loop() {
		var a *archive.Archive
		peak = max(peak, memtest.Peak(func() { a, _ = ingestFile(b, b.TempDir(), path, archive.Options{NoSync: true}) }))
		a.Close()
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(st.Size())/(1<<20), "file-MiB")
}

// Baselines run in the same process as the benchmarks above, so their
// ratios hold on a noisy machine: compressing the file in 128 KiB pieces
// at the archive's zstd level (what ingest cannot avoid doing), and
// reading plus hashing it (what a whole export cannot avoid doing).
func BenchmarkBaselineZstdHour(b *testing.B) {
	native, err := os.ReadFile(hourPath(b))
	if err != nil {
		b.Fatal(err)
	}
	enc, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBetterCompression), zstd.WithEncoderConcurrency(1))
	defer enc.Close()
	b.SetBytes(int64(len(native)))
	var dst []byte
	for b.Loop() {
		for off := 0; off < len(native); off += 128 << 10 {
			dst = enc.EncodeAll(native[off:min(off+128<<10, len(native))], dst[:0])
		}
	}
}

func BenchmarkBaselineReadHashHour(b *testing.B) {
	path := hourPath(b)
	st, _ := os.Stat(path)
	b.SetBytes(st.Size())
	for b.Loop() {
		b, _ := os.ReadFile(path)
		sha256.Sum256(b)
	}
}

// TestLongFileKeepsEveryEvent: a 16-hour server file of two
// mostly idle players and 7,000 console commands an hour holds more events
// than the in-memory bound (teehistorian.DefaultMaxEvents): the archive keeps
// every one, in order, equal to those the codec lists when nothing bounds it
// (JOIN events named by the players' later PLAYER_NAME included).
func TestLongFileKeepsEveryEvent(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "long.teehistorian")
	var file bytes.Buffer
	opt := teehistoriangen.Options{Duration: 16 * time.Hour, Players: 2, Seed: 5, CommandsPerHour: 7000, Idle: 0.95}
	if err := teehistoriangen.Generate(&file, opt); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, file.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	want := formatstest.Split(t, &teehistorian.Codec{MaxEvents: 1 << 30}, file.Bytes()).Metadata.Events
	ranks := 0
	for _, e := range want {
		if e.Kind == formats.EventCommand && len(e.Text) > 5 && e.Text[:5] == "rank " {
			ranks++
		}
	}
	if len(want) <= teehistorian.DefaultMaxEvents || ranks < 100_000 {
		t.Fatalf("the file holds %d events, %d of them generated commands: not past the old bound", len(want), ranks)
	}
	a, id := ingestFile(t, filepath.Join(dir, "a"), path, archive.Options{NoSync: true})
	defer a.Close()
	m, err := a.Manifest(id)
	if err != nil {
		t.Fatal(err)
	}
	if m.EventCount != len(want) {
		t.Errorf("manifest counts %d events, the file has %d", m.EventCount, len(want))
	}
	for _, w := range m.Meta.Warnings {
		t.Errorf("warning: %s", w)
	}
	n := 0
	err = a.EachEvent(id, func(i int, e *formats.Event) error {
		if i >= len(want) || *e != want[i] {
			return fmt.Errorf("event %d is %+v, want %+v", i, *e, want[min(i, len(want)-1)])
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != len(want) {
		t.Errorf("archived %d events, want %d", n, len(want))
	}
}
