// Benchmarks: index throughput and size, and query latency percentiles, over
// a generated corpus. Sizes come from the environment:
//
//	REPLAY_BENCH_RECS    recordings (default 2000)
//	REPLAY_BENCH_EVENTS  average events per recording (default 100)
//	REPLAY_BENCH_BATCH   recordings per Apply (default 100)
//	REPLAY_BENCH_DIR     keep the index here and reuse it for the query benchmarks
//	REPLAY_BENCH_NOSYNC  "1" to open with Options.NoSync
//	REPLAY_BENCH_COMPACT "1" to Compact after the build (not counted in docs/s)
//
// go test -run '^$' -bench . -benchtime=1x ./query/ builds once and queries.

package query

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func benchConfig() genConfig {
	return genConfig{
		Recordings: envInt("REPLAY_BENCH_RECS", 2000),
		Events:     envInt("REPLAY_BENCH_EVENTS", 100),
		Players:    5000,
		Seed:       1,
	}
}

// buildIndex indexes the corpus into dir and returns the number of documents
// and the time it took.
func buildIndex(tb testing.TB, dir string, c genConfig) (docs int, took time.Duration) {
	batch := envInt("REPLAY_BENCH_BATCH", 100)
	ix, err := OpenWith(dir, Options{NoSync: os.Getenv("REPLAY_BENCH_NOSYNC") == "1"})
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	var genTime time.Duration
	start := time.Now()
	puts := make([]RecordingDoc, 0, batch)
	for i := 0; i < c.Recordings; i++ {
		g := time.Now()
		r := genRecording(c, i)
		genTime += time.Since(g)
		docs += 1 + len(r.Events)
		puts = append(puts, r)
		if len(puts) == batch || i == c.Recordings-1 {
			if err := ix.Apply(ctx, uint64(i+1), puts, nil); err != nil {
				tb.Fatal(err)
			}
			puts = puts[:0]
			if (i+1)%(batch*100) == 0 {
				el := time.Since(start) - genTime
				tb.Logf("%d recordings, %d docs, %.0f docs/s", i+1, docs, float64(docs)/el.Seconds())
			}
		}
	}
	took = time.Since(start) - genTime
	if os.Getenv("REPLAY_BENCH_COMPACT") == "1" {
		tb.Logf("built %d docs in %v (%.0f docs/s), %d B/doc before compaction", docs, took, float64(docs)/took.Seconds(), dirSize(tb, dir)/int64(docs))
		t0 := time.Now()
		if err := ix.Compact(ctx); err != nil {
			tb.Fatal(err)
		}
		tb.Logf("compacted in %v", time.Since(t0))
	}
	if err := ix.Close(); err != nil {
		tb.Fatal(err)
	}
	// Files of merged-away segments can outlive Close; an open index removes
	// them in the background. Wait for that, so that the size measured
	// afterwards is what stays on disk.
	ix, err = Open(dir)
	if err != nil {
		tb.Fatal(err)
	}
	for last, i := int64(-1), 0; i < 50; i++ {
		n := dirSize(tb, dir)
		if n == last {
			break
		}
		last = n
		time.Sleep(500 * time.Millisecond)
	}
	if err := ix.Close(); err != nil {
		tb.Fatal(err)
	}
	return docs, took
}

func dirSize(tb testing.TB, dir string) int64 {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err == nil {
			n += fi.Size()
		}
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

func BenchmarkIndex(b *testing.B) {
	c := benchConfig()
	for b.Loop() {
		dir := filepath.Join(b.TempDir(), "ix")
		docs, took := buildIndex(b, dir, c)
		size := dirSize(b, dir)
		b.ReportMetric(float64(docs)/took.Seconds(), "docs/s")
		b.ReportMetric(float64(size)/float64(docs), "B/doc")
		b.ReportMetric(float64(size)/1e6, "MB")
		b.ReportMetric(float64(docs), "docs")
	}
}

// benchIndex opens the index for the query benchmarks, building it first
// when REPLAY_BENCH_DIR does not hold one.
func benchIndex(b *testing.B) *Index {
	c := benchConfig()
	dir := os.Getenv("REPLAY_BENCH_DIR")
	if dir == "" {
		dir = filepath.Join(b.TempDir(), "ix")
	}
	if _, err := os.Stat(filepath.Join(dir, "index_meta.json")); err != nil {
		docs, took := buildIndex(b, dir, c)
		b.Logf("built %d docs in %v (%.0f docs/s), %d B/doc", docs, took, float64(docs)/took.Seconds(), dirSize(b, dir)/int64(docs))
	}
	ix, err := Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	if seq, _ := ix.Seq(); seq != uint64(c.Recordings) {
		b.Fatalf("index in %s has seq %d, want %d (built with other sizes?)", dir, seq, c.Recordings)
	}
	return ix
}

func BenchmarkQuery(b *testing.B) {
	ix := benchIndex(b)
	defer ix.Close()
	c := benchConfig()
	queries := map[string]func(i int) string{
		"player":     func(i int) string { return "player:" + genName(i*7919%c.Players) },
		"cmd":        func(i int) string { return "cmd:" + genCommands[i%len(genCommands)] },
		"cmd-phrase": func(i int) string { return fmt.Sprintf(`cmd:"kick %d"`, i%64) },
		"flag+date": func(i int) string {
			d := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, i%11, 0)
			return fmt.Sprintf("flag:%s after:%s before:%s", genFlags[i%len(genFlags)], d.Format(time.DateOnly), d.AddDate(0, 1, 0).Format(time.DateOnly))
		},
		"player+cmd": func(i int) string { return "player:" + genName(i*7919%c.Players) + " cmd:kick" },
		"free-word":  func(i int) string { return genName(i * 31 % c.Players) },
	}
	ctx := context.Background()
	for _, name := range []string{"player", "cmd", "cmd-phrase", "flag+date", "player+cmd", "free-word"} {
		gen := queries[name]
		b.Run(name, func(b *testing.B) {
			var lat []time.Duration
			hits := 0
			i := 0
			for b.Loop() {
				t0 := time.Now()
				res, err := ix.Search(ctx, gen(i), 20)
				lat = append(lat, time.Since(t0))
				if err != nil {
					b.Fatal(err)
				}
				hits += res.Total
				i++
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(hits)/float64(len(lat)), "total/op")
		})
	}
}
