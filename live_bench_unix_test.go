//go:build unix

package replay_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/formats/teehistorian"
	"github.com/replayarchive/replay/ingest/watch"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
)

// liveServer is one game server's file, generated ahead, with the offset
// each tick ends at and each console command's end offset.
type liveServer struct {
	file  []byte
	path  string
	ticks []int64 // ticks[i]: offset after the last record of the i-th tick
	cmds  []int64 // end offsets of CONSOLE_COMMAND records
	ranks int     // how many of them are "rank"
	warm  int     // how many were written before the clock started
	f     *os.File
	done  int // bytes written
	// Guarded by the benchmark's mutex: when each command's bytes were
	// written, and the next command not yet seen searchable.
	written []time.Time
	next    int
}

// BenchmarkLiveAppendLatency: 16 files grow at the rate of a
// full DDNet server (64 players, the generator's ~10 KB/s, written once per
// 20 ms tick with a cut inside the next record) in a directory that
// watch.Run follows, as serve --watch does, each grow going through
// Archive.Grow (new chunks, index synced). Reported: the time from a
// console command's bytes reaching the file to the grow that made it
// searchable returning, p50 and p99 over every command, and the process's
// CPU (getrusage user+system) per wall second, which includes the
// writers (a small share: one write per file per tick). At the end every
// "rank" command is found by search in its recording.
//
//	go test . -run '^$' -bench LiveAppendLatency -benchtime=1x
//
// LIVE_BENCH_SECONDS sets the game time written (default 20).
func BenchmarkLiveAppendLatency(b *testing.B) {
	const servers = 16
	game := 20 * time.Second
	if s := os.Getenv("LIVE_BENCH_SECONDS"); s != "" {
		d, err := time.ParseDuration(s + "s")
		if err != nil {
			b.Fatal(err)
		}
		game = d
	}
	for range b.N {
		dir := b.TempDir()
		live := filepath.Join(dir, "teehistorian")
		if err := os.Mkdir(live, 0o755); err != nil {
			b.Fatal(err)
		}
		srv := make([]*liveServer, servers)
		// The servers have been running for a minute (64 players have
		// joined): that part is in the files before the clock starts.
		const warmup = time.Minute
		warm := int(warmup / teehistorian.TickDuration)
		var bytesPerSec int64
		for i := range srv {
			s := newLiveServer(b, live, uint64(i+1), warmup+game, 64)
			srv[i] = s
			bytesPerSec += (int64(len(s.file)) - s.ticks[warm-1]) * int64(time.Second) / int64(game)
			s.writeTo(b, s.ticks[warm-1])
			for len(s.written) < len(s.cmds) && s.cmds[len(s.written)] <= s.ticks[warm-1] {
				s.written = append(s.written, time.Time{}) // not timed
				s.warm++
			}
		}
		// LIVE_BENCH_NOSYNC=1: no fsync per grow, to tell the disk's share.
		x, err := replay.Open(filepath.Join(dir, "a"), replay.Options{Create: true, Archive: archive.Options{NoSync: os.Getenv("LIVE_BENCH_NOSYNC") != ""}})
		if err != nil {
			b.Fatal(err)
		}
		var mu sync.Mutex
		var lat []time.Duration
		byPath := map[string]*liveServer{}
		for _, s := range srv {
			byPath[s.path] = s
		}
		ctx, cancel := context.WithCancel(context.Background())
		var grows, growErrs int
		lastGrown := map[string]int64{}
		watchDone := make(chan error, 1)
		go func() {
			watchDone <- watch.Run(ctx, watch.Options{
				Dirs:   []string{live},
				Settle: time.Hour,
				Grew: func(ctx context.Context, f watch.File) (bool, bool, error) {
					g, err := x.Grow(ctx, f.Path, false, replay.Actor{Name: "bench"}, nil)
					now := time.Now()
					if err != nil {
						b.Errorf("grow %s: %v", f.Path, err)
						growErrs++
						return false, false, err
					}
					grows++
					s := byPath[f.Path]
					mu.Lock()
					lastGrown[f.Path] = g.NativeBytes
					mu.Unlock()
					mu.Lock()
					for s.next < len(s.cmds) && s.cmds[s.next] <= g.NativeBytes && s.next < len(s.written) {
						if !s.written[s.next].IsZero() {
							lat = append(lat, now.Sub(s.written[s.next]))
						}
						s.next++
					}
					mu.Unlock()
					return true, g.Action == "sealed", nil
				},
				Ready: func(context.Context, watch.File) error { return nil },
			})
		}()
		// The first grows take the minute already written.
		for warmed := 0; warmed < servers; {
			time.Sleep(50 * time.Millisecond)
			mu.Lock()
			warmed = 0
			for _, s := range srv {
				if lastGrown[s.path] > 0 {
					warmed++
				}
			}
			mu.Unlock()
		}
		var before, after syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &before)
		start := time.Now()
		b.ResetTimer()
		play(b, srv, warm, start, &mu)
		// Let the last grows land.
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) && !b.Failed() {
			mu.Lock()
			n := len(lat)
			mu.Unlock()
			if n >= totalCmds(srv) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		wall := time.Since(start)
		syscall.Getrusage(syscall.RUSAGE_SELF, &after)
		b.StopTimer()
		cancel()
		if err := <-watchDone; err != nil {
			b.Fatal(err)
		}
		cpu := rusageDur(after.Utime) + rusageDur(after.Stime) - rusageDur(before.Utime) - rusageDur(before.Stime)
		mu.Lock()
		if len(lat) != totalCmds(srv) {
			for _, s := range srv {
				b.Logf("%s: %d commands, %d written, %d searchable; %d bytes written of %d, %d grown", s.path, len(s.cmds), len(s.written), s.next, s.done, len(s.file), lastGrown[s.path])
			}
			b.Fatalf("%d of %d commands became searchable (%d grows, %d failed)", len(lat), totalCmds(srv), grows, growErrs)
		}
		slices.Sort(lat)
		p50, p99 := lat[len(lat)/2], lat[len(lat)*99/100]
		mu.Unlock()
		for _, s := range srv {
			s.f.Close()
			id := s.id(b)
			res, err := x.Search(context.Background(), fmt.Sprintf("cmd:rank id:%s", id), 0, 10)
			if err != nil {
				b.Fatal(err)
			}
			if len(res.Hits) != 1 || res.Hits[0].EventTotal != s.ranks {
				b.Fatalf("%s: cmd:rank finds %d hits, want its %d rank commands", id, len(res.Hits), s.ranks)
			}
		}
		x.Close()
		b.ReportMetric(float64(p50.Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(p99.Microseconds())/1000, "p99-ms")
		b.ReportMetric(cpu.Seconds()/wall.Seconds(), "cpu-share")
		b.ReportMetric(float64(bytesPerSec), "B/s-written")
		b.ReportMetric(float64(len(lat)), "commands")
		b.ReportMetric(float64(grows)/wall.Seconds(), "grows/s")
	}
}

// play writes the servers' files tick by tick from tick warm on, in real
// time from start, each write ending at its tick's end plus up to 7 bytes
// (a cut inside the next record), and records under mu when each
// command's bytes were written.
func play(b *testing.B, srv []*liveServer, warm int, start time.Time, mu *sync.Mutex) {
	rng := rand.New(rand.NewPCG(1, 2))
	ticks := 0
	for _, s := range srv {
		ticks = max(ticks, len(s.ticks))
	}
	for tick := warm; tick < ticks; tick++ {
		time.Sleep(time.Until(start.Add(time.Duration(tick-warm) * teehistorian.TickDuration)))
		for _, s := range srv {
			if tick >= len(s.ticks) {
				continue
			}
			end := min(int64(len(s.file)), s.ticks[tick]+int64(rng.IntN(8)))
			if end <= int64(s.done) {
				continue
			}
			mu.Lock()
			s.writeTo(b, end)
			now := time.Now()
			for len(s.written) < len(s.cmds) && s.cmds[len(s.written)] <= end {
				s.written = append(s.written, now)
			}
			mu.Unlock()
		}
	}
}

func rusageDur(tv syscall.Timeval) time.Duration {
	return time.Duration(tv.Sec)*time.Second + time.Duration(tv.Usec)*time.Microsecond
}

func totalCmds(srv []*liveServer) int {
	n := 0
	for _, s := range srv {
		n += len(s.cmds) - s.warm
	}
	return n
}

// newLiveServer generates a game of the given length and players (no
// FINISH: the game is still running) and creates its file in dir, holding
// the header.
func newLiveServer(b *testing.B, dir string, seed uint64, game time.Duration, players int) *liveServer {
	buf := teehistoriangen.Must(b, teehistoriangen.Options{Duration: game, Players: players, Seed: seed, NoFinish: true, CommandsPerHour: 3600})
	s := &liveServer{file: buf}
	rd, err := teehistorian.NewReader(bytes.NewReader(s.file))
	if err != nil {
		b.Fatal(err)
	}
	s.path = filepath.Join(dir, rd.Header().GameUUID+".teehistorian")
	first := int64(-1)
	for {
		it, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
		if first < 0 {
			first = it.Tick
		}
		for int64(len(s.ticks)) <= it.Tick-first {
			s.ticks = append(s.ticks, it.Offset)
		}
		s.ticks[it.Tick-first] = it.Offset + int64(it.Size)
		if it.Type == teehistorian.ItemConsoleCommand {
			s.cmds = append(s.cmds, it.Offset+int64(it.Size))
			if string(it.Cmd) == "rank" {
				s.ranks++
			}
		}
	}
	if s.f, err = os.Create(s.path); err != nil {
		b.Fatal(err)
	}
	return s
}

// writeTo writes the file's bytes up to end, and counts the commands
// written before the clock starts as seen.
func (s *liveServer) writeTo(b *testing.B, end int64) {
	if _, err := s.f.Write(s.file[s.done:end]); err != nil {
		b.Fatal(err)
	}
	s.done = int(end)
}

func (s *liveServer) id(b *testing.B) string {
	return filepath.Base(s.path[:len(s.path)-len(".teehistorian")])
}
