package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/formats/hcrp"
	"github.com/replayarchive/replay/internal/gen/hcrpgen"
	"github.com/replayarchive/replay/server"
	"github.com/replayarchive/replay/wire"
)

// BenchmarkPlayerPage measures GET /api/v1/players/{name} over HTTP on a
// real server on 127.0.0.1, as a moderator (the summary, the aliases and
// the first page of 20), on an archive of REPLAY_BENCH_RUNS (default
// 3000) generated HCRP runs of 2 to 6 players from a pool of 400 (names
// and uuids; every tenth uuid also plays under a second name, so names
// have aliases), and reports the requests' p50 and p99 (each iteration
// asks for the next of 50 players, about 35 recordings each). Run it with
//
//	go test ./server -run '^$' -bench PlayerPage -benchtime 500x
func BenchmarkPlayerPage(b *testing.B) {
	runs := 3000
	if v, err := strconv.Atoi(os.Getenv("REPLAY_BENCH_RUNS")); err == nil && v > 0 {
		runs = v
	}
	x, err := replay.Open(filepath.Join(b.TempDir(), "archive"), replay.Options{Create: true, Archive: archive.Options{NoSync: true}})
	if err != nil {
		b.Fatal(err)
	}
	defer x.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	secret := replay.NewSecret()
	ready, done := make(chan string, 1), make(chan error, 1)
	go func() {
		done <- server.New(x, server.Config{LocalSecret: secret}).ListenAndServe(ctx, "127.0.0.1:0", "", "", 5*time.Second, func(u string) { ready <- u })
	}()
	var base string
	select {
	case base = <-ready:
	case err := <-done:
		b.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	began := time.Now()
	for i := range runs {
		n := 2 + i%5
		data, err := hcrpgen.Generate(hcrpgen.Config{Seed: uint64(i), Ticks: 40 + i%100, Players: n, Start: t0.Add(time.Duration(i) * 17 * time.Minute)}, func(o *hcrp.Options) {
			ps := slices.Clone(o.Meta.Players)
			for k := range ps {
				p := (i*7 + k*53) % 400
				ps[k].Name, ps[k].UUID = fmt.Sprintf("Runner%d", p), fmt.Sprintf("00000000-0000-4000-8000-%012d", p)
				if p%10 == 0 && i%2 == 0 {
					ps[k].Name = fmt.Sprintf("Alt%d", p)
				}
			}
			o.Meta.Players = ps
		})
		if err != nil {
			b.Fatal(err)
		}
		res, _, err := x.IngestStream(ctx, fmt.Sprintf("run-%d.hcrp", i), bytes.NewReader(data), 0, replay.LocalActor())
		if err != nil || res.Err != "" {
			b.Fatalf("ingest: %v %s", err, res.Err)
		}
	}
	b.Logf("%d runs ingested in %v", runs, time.Since(began).Round(time.Millisecond))
	mod, err := x.CreateToken(replay.LocalActor(), "mia", replay.RoleModerator)
	if err != nil {
		b.Fatal(err)
	}
	get := func(path string) (wire.Player, error) {
		var p wire.Player
		req, _ := http.NewRequest("GET", base+path, nil)
		req.Header.Set("Authorization", "Bearer "+mod)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return p, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return p, fmt.Errorf("%s: %s", path, resp.Status)
		}
		return p, json.NewDecoder(resp.Body).Decode(&p)
	}
	if _, err := get("/api/v1/players/Runner1"); err != nil { // the index's first open
		b.Fatal(err)
	}
	var lat []time.Duration
	total, aliases := 0, 0
	b.ResetTimer()
	for i := range b.N {
		t := time.Now()
		p, err := get(fmt.Sprintf("/api/v1/players/Runner%d", 10*(i%40)+(i/40)%10))
		lat = append(lat, time.Since(t))
		if err != nil {
			b.Fatal(err)
		}
		total += p.Total
		aliases += len(p.Aliases)
	}
	b.StopTimer()
	slices.Sort(lat)
	q := func(f float64) float64 { return float64(lat[int(f*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(q(0.5), "p50_ms")
	b.ReportMetric(q(0.99), "p99_ms")
	b.ReportMetric(float64(total)/float64(b.N), "recordings/player")
	b.ReportMetric(float64(aliases)/float64(b.N), "aliases/player")
	cancel()
	<-done
}
