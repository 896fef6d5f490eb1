package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
	"github.com/replayarchive/replay/server"
)

// BenchmarkServeUnderUpload is the service's load benchmark: 32 clients
// search and download clips over loopback while one large teehistorian
// file is uploaded. It reports search p50/p99, clip p99 and errors.
//
//	go test ./server -run '^$' -bench ServeUnderUpload -benchtime 1x
//
// REPLAY_LOAD_HOURS sets the uploaded game's length (default 70 hours of
// 16 players, about 1 GB).
func BenchmarkServeUnderUpload(b *testing.B) {
	hours := 70.0
	if v := os.Getenv("REPLAY_LOAD_HOURS"); v != "" {
		h, err := strconv.ParseFloat(v, 64)
		if err != nil {
			b.Fatal(err)
		}
		hours = h
	}
	dir := b.TempDir()
	big := filepath.Join(dir, "big.teehistorian")
	f, err := os.Create(big)
	if err != nil {
		b.Fatal(err)
	}
	if err := teehistoriangen.Generate(f, teehistoriangen.Options{Duration: time.Duration(hours * float64(time.Hour)), Players: 16, Seed: 42}); err != nil {
		b.Fatal(err)
	}
	f.Close()
	st, _ := os.Stat(big)

	x, err := replay.Open(filepath.Join(dir, "archive"), replay.Options{Create: true, Archive: archive.Options{NoSync: true}})
	if err != nil {
		b.Fatal(err)
	}
	// What the clients search and clip: a few one-hour games.
	var seeds []string
	for i := range 4 {
		p := filepath.Join(dir, fmt.Sprintf("g%d.teehistorian", i))
		g, _ := os.Create(p)
		teehistoriangen.Generate(g, teehistoriangen.Options{Duration: time.Hour, Players: 16, Seed: uint64(i + 1),
			Start: time.Date(2026, 1, 1+i, 12, 0, 0, 0, time.UTC)})
		g.Close()
		seeds = append(seeds, p)
	}
	if err := x.Ingest(context.Background(), seeds, replay.IngestOptions{By: replay.LocalActor()}, nil); err != nil {
		b.Fatal(err)
	}
	res, err := x.Search(context.Background(), "format:teehistorian", 0, 10)
	if err != nil || len(res.Hits) == 0 {
		b.Fatalf("seed search: %v", err)
	}
	var ids []string
	for _, h := range res.Hits {
		ids = append(ids, h.ID)
	}

	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	s := server.New(x, server.Config{MaxUpload: 8 << 30})
	go func() {
		done <- s.ListenAndServe(ctx, "127.0.0.1:0", "", "", 30*time.Second, func(u string) { ready <- u })
	}()
	base := <-ready
	defer func() {
		cancel()
		<-done
		x.Close()
	}()
	token, err := x.CreateToken(replay.LocalActor(), "load-bench", replay.RoleModerator)
	if err != nil {
		b.Fatal(err)
	}
	client := &http.Client{Transport: bearerTransport{token, &http.Transport{MaxIdleConnsPerHost: 64}}}

	queries := []string{"player:nameless*", "cmd:kick", "format:teehistorian after:2026-01-02", "cmd:\"kick 3\"", "map:\"kobra 3 solo\""}
	b.ResetTimer()
	for range b.N {
		var uploadErr error
		uploadDone := make(chan struct{})
		// The process's peak heap while the upload and the clients run:
		// the upload must stream, whatever its size.
		var peakHeap atomic.Uint64
		go func() {
			var ms runtime.MemStats
			for {
				runtime.ReadMemStats(&ms)
				if ms.HeapInuse > peakHeap.Load() {
					peakHeap.Store(ms.HeapInuse)
				}
				select {
				case <-uploadDone:
					return
				case <-time.After(100 * time.Millisecond):
				}
			}
		}()
		upStart := time.Now()
		go func() {
			defer close(uploadDone)
			bf, err := os.Open(big)
			if err != nil {
				uploadErr = err
				return
			}
			defer bf.Close()
			resp, err := client.Post(base+"/api/v1/recordings?name=big.teehistorian", "application/octet-stream", bf)
			if err != nil {
				uploadErr = err
				return
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated {
				uploadErr = fmt.Errorf("upload: %s %s", resp.Status, body)
			}
		}()
		var mu sync.Mutex
		var searchLat, clipLat []time.Duration
		var searchAt []time.Duration // when each search began
		var errs atomic.Int64
		var wg sync.WaitGroup
		for c := range 32 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for n := 0; ; n++ {
					select {
					case <-uploadDone:
						return
					default:
					}
					q := queries[(c+n)%len(queries)]
					t0 := time.Now()
					code, _ := get(client, base+"/api/v1/recordings?q="+url.QueryEscape(q))
					d := time.Since(t0)
					if code != http.StatusOK {
						errs.Add(1)
					}
					id := ids[(c+n)%len(ids)]
					t1 := time.Now()
					ccode, _ := get(client, fmt.Sprintf("%s/api/v1/recordings/%s/clip?from=%ds&to=%ds", base, id, 60*(n%50), 60*(n%50)+10))
					cd := time.Since(t1)
					if ccode != http.StatusOK {
						errs.Add(1)
					}
					mu.Lock()
					searchLat = append(searchLat, d)
					searchAt = append(searchAt, t0.Sub(upStart))
					clipLat = append(clipLat, cd)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if uploadErr != nil {
			b.Fatal(uploadErr)
		}
		upTook := time.Since(upStart)
		b.Logf("the slowest 1%% of searches by tenth of the upload: %v", slowByTenth(searchLat, searchAt, upTook))
		slices.Sort(searchLat)
		slices.Sort(clipLat)
		pct := func(l []time.Duration, p float64) float64 {
			if len(l) == 0 {
				return 0
			}
			return float64(l[min(len(l)-1, int(p*float64(len(l))))].Microseconds()) / 1000
		}
		b.ReportMetric(pct(searchLat, .5), "search-p50-ms")
		b.ReportMetric(pct(searchLat, .99), "search-p99-ms")
		b.ReportMetric(pct(clipLat, .99), "clip-p99-ms")
		b.ReportMetric(float64(len(searchLat)), "searches")
		b.ReportMetric(float64(errs.Load()), "errors")
		b.ReportMetric(float64(st.Size())/1e6/upTook.Seconds(), "upload-MB/s")
		b.ReportMetric(float64(peakHeap.Load())/(1<<20), "peak-heap-MiB")
		b.Logf("uploaded %d MB in %s while 32 clients made %d searches and %d clips", st.Size()>>20, upTook.Round(time.Millisecond), len(searchLat), len(clipLat))
	}
}

// slowByTenth counts the searches at or over the 99th percentile by the
// tenth of the upload they began in: where the tail comes from (the
// upload's receipt, its ingest, the index update after its commit).
func slowByTenth(lat, at []time.Duration, took time.Duration) [10]int {
	var out [10]int
	if len(lat) == 0 {
		return out
	}
	p99 := slices.Sorted(slices.Values(lat))[len(lat)*99/100]
	for i, d := range lat {
		if d >= p99 {
			out[min(9, int(10*at[i]/took))]++
		}
	}
	return out
}

// bearerTransport sends every request with a moderator's token, as the
// moderators' page and the upload tools do.
type bearerTransport struct {
	token string
	next  http.RoundTripper
}

func (t bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+t.token)
	return t.next.RoundTrip(r)
}

func get(c *http.Client, u string) (int, error) {
	resp, err := c.Get(u)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}
