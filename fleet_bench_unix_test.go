//go:build unix

package replay_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/formats/teehistorian"
	"github.com/replayarchive/replay/ingest/watch"
)

// BenchmarkFleet: a fleet of game servers (FLEET_FILES teehistorian files,
// default 256: 16 hosts × 16 servers, FLEET_PLAYERS players each, default
// 16) grow for FLEET_SECONDS (default 20) of game time, written once per
// 20 ms tick with a cut inside the next record, into one archive by two
// paths in the same run:
//
//   - watch: one directory followed by watch.Run with Archive.Grow as its
//     hook (serve --watch);
//   - push: 16 hosts, each sending its 16 files' new bytes once a second
//     through Archive.Push (what serve does for `archivectl push`, without
//     HTTP), the hosts in parallel;
//   - http: the same sends as PUT /api/v1/push requests to `archivectl
//     serve` (built for the run, a process of its own, at nice -5: the
//     hosts would be other machines), whose CPU and peak RSS (VmHWM) are
//     reported, and whose index progress is read from its /metrics every
//     50 ms.
//
// Reported for each: the time from a console command's bytes reaching the
// file to the end of the index sync that makes them searchable (Options.LiveIndexEvery
// FLEET_INDEX_MS, default 250; 0 syncs in every grow), p50 and p99; the process's CPU (getrusage) per grow; and the
// most Go heap in use above what the generated files take before the clock
// starts (sampled every 100 ms).
//
// FLEET_SEARCHERS (default 0) moderators search the http path's serve
// meanwhile, each once every 100 ms, with a viewer's token: the index
// syncs then give way to their requests (archive/turns.go). Their p99 is
// reported too.
//
//	go test . -run '^$' -bench Fleet -benchtime=1x
func BenchmarkFleet(b *testing.B) {
	files := envInt(b, "FLEET_FILES", 256, 1)
	players := envInt(b, "FLEET_PLAYERS", 16, 1)
	game := time.Duration(envInt(b, "FLEET_SECONDS", 20, 1)) * time.Second
	every := time.Duration(envInt(b, "FLEET_INDEX_MS", 250, 0)) * time.Millisecond
	for _, path := range []string{"watch", "push", "http"} {
		b.Run(path, func(b *testing.B) {
			for range b.N {
				fleetRun(b, path, files, players, game, every)
			}
		})
	}
}

// envInt reads a number of at least least from the environment, or def.
func envInt(b *testing.B, name string, def, least int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < least {
		b.Fatalf("%s=%q: want a number of at least %d", name, v, least)
	}
	return n
}

// heapInUse is the Go heap's bytes in live and not yet swept objects.
func heapInUse() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func fleetRun(b *testing.B, path string, files, players int, game, indexEvery time.Duration) {
	dir := b.TempDir()
	live := filepath.Join(dir, "teehistorian")
	if err := os.Mkdir(live, 0o755); err != nil {
		b.Fatal(err)
	}
	const warmup = 10 * time.Second
	warm := int(warmup / teehistorian.TickDuration)
	srv := make([]*liveServer, files)
	for i := range srv {
		srv[i] = newLiveServer(b, live, uint64(i+1), warmup+game, players)
		// A game of few players has ticks without records at its end.
		warm = min(warm, len(srv[i].ticks)/2)
	}
	for _, s := range srv {
		s.writeTo(b, s.ticks[warm-1])
		for len(s.written) < len(s.cmds) && s.cmds[len(s.written)] <= s.ticks[warm-1] {
			s.written = append(s.written, time.Time{}) // not timed
			s.warm++
		}
	}
	// indexedAt is what the index reflects: the archive's, or serve's
	// (its /metrics) on the http path.
	var indexedAt func() time.Time
	var push func(ctx context.Context, source string, offset int64, data []byte) (int64, error)
	var x *replay.Archive
	var srvProc *fleetServe
	if path == "http" {
		srvProc = startFleetServe(b, filepath.Join(dir, "a"))
		defer srvProc.stop()
		indexedAt, push = srvProc.indexedAt, srvProc.push
	} else {
		var err error
		x, err = replay.Open(filepath.Join(dir, "a"), replay.Options{Create: true, LiveIndexEvery: indexEvery})
		if err != nil {
			b.Fatal(err)
		}
		defer x.Close()
		indexedAt = x.IndexedAt
		push = func(ctx context.Context, source string, offset int64, data []byte) (int64, error) {
			st, err := x.Push(ctx, source, offset, bytes.NewReader(data), false, replay.Actor{Name: "bench"})
			if err != nil {
				return 0, err
			}
			return st.Have, nil
		}
	}
	var mu sync.Mutex
	var lat []time.Duration
	grows, failed := 0, 0
	// heldCmd is a command the archive holds, written at written, whose
	// grow or push was asked for at asked and returned at returned: it is
	// searchable once an index sync began after asked (the sync may begin
	// before the call returns), or at returned when every grow syncs.
	type heldCmd struct{ written, asked, returned time.Time }
	var pending []heldCmd
	// seen records that the archive holds s's bytes up to n, from a call
	// asked for at asked that returned now.
	seen := func(s *liveServer, n int64, asked time.Time) {
		now := time.Now()
		mu.Lock()
		defer mu.Unlock()
		grows++
		for s.next < len(s.cmds) && s.cmds[s.next] <= n && s.next < len(s.written) {
			if !s.written[s.next].IsZero() {
				pending = append(pending, heldCmd{s.written[s.next], asked, now})
			}
			s.next++
		}
	}
	// The index's progress, every 10 ms (a grow that syncs before it
	// returns makes its bytes searchable at its return).
	searchable := make(chan struct{})
	stopWatch := make(chan struct{})
	go func() {
		defer close(searchable)
		// serve's /metrics costs a request: asked less often.
		t := time.NewTicker(map[bool]time.Duration{true: 50 * time.Millisecond, false: 10 * time.Millisecond}[path == "http"])
		defer t.Stop()
		for {
			select {
			case <-stopWatch:
				return
			case <-t.C:
			}
			ia, now := indexedAt(), time.Now()
			mu.Lock()
			rest := pending[:0]
			for _, c := range pending {
				switch {
				case indexEvery == 0 && path != "http":
					lat = append(lat, c.returned.Sub(c.written))
				case !ia.Before(c.asked):
					lat = append(lat, now.Sub(c.written))
				default:
					rest = append(rest, c)
				}
			}
			pending = rest
			mu.Unlock()
		}
	}()
	held := func() int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, s := range srv {
			if s.next >= s.warm {
				n++
			}
		}
		return n
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	by := replay.Actor{Name: "bench"}

	switch path {
	case "watch":
		byPath := map[string]*liveServer{}
		for _, s := range srv {
			byPath[s.path] = s
		}
		wg.Go(func() {
			err := watch.Run(ctx, watch.Options{
				Dirs:   []string{live},
				Settle: time.Hour,
				Grew: func(ctx context.Context, f watch.File) (bool, bool, error) {
					asked := time.Now()
					g, err := x.Grow(ctx, f.Path, false, by, nil)
					if err != nil {
						mu.Lock()
						failed++
						mu.Unlock()
						return false, false, err
					}
					seen(byPath[f.Path], g.NativeBytes, asked)
					return true, false, nil
				},
				Ready: func(context.Context, watch.File) error { return nil },
			})
			if err != nil && ctx.Err() == nil {
				b.Error(err)
			}
		})
	case "push", "http":
		const hosts = 16
		for h := range hosts {
			wg.Go(func() {
				sent := map[*liveServer]int64{}
				t := time.NewTicker(time.Second)
				defer t.Stop()
				for {
					for i := h; i < len(srv); i += hosts {
						s := srv[i]
						mu.Lock()
						n := int64(s.done)
						mu.Unlock()
						if n <= sent[s] {
							continue
						}
						// The index sync that takes a push may begin before
						// its answer arrives (serve's: before the answer has
						// crossed the socket): it counts from the request.
						asked := time.Now()
						have, err := push(ctx, fmt.Sprintf("host%02d/teehistorian/%s", h, filepath.Base(s.path)), sent[s], s.file[sent[s]:n])
						if err != nil {
							if ctx.Err() != nil {
								return
							}
							mu.Lock()
							failed++
							mu.Unlock()
							continue
						}
						sent[s] = have
						seen(s, have, asked)
					}
					select {
					case <-ctx.Done():
						return
					case <-t.C:
					}
				}
			})
		}
	}
	// The first grows take what was written before the clock.
	for deadline := time.Now().Add(5 * time.Minute); held() < files; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d files grown before the clock", held(), files)
		}
	}
	base := heapInUse()
	peak := base
	stopSample := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stopSample:
				return
			case <-t.C:
				peak = max(peak, heapInUse())
			}
		}
	}()
	mu.Lock()
	grows = 0
	mu.Unlock()
	var before, after syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	if srvProc != nil {
		srvProc.markCPU()
	}
	start := time.Now()
	var searchLat []time.Duration
	stopSearch := make(chan struct{})
	var searching sync.WaitGroup
	if srvProc != nil {
		for i := range envInt(b, "FLEET_SEARCHERS", 0, 0) {
			searching.Go(func() {
				queries := []string{"cmd:kick", "player:nameless*", "cmd:rank", "map:kobra*"}
				for n := 0; ; n++ {
					select {
					case <-stopSearch:
						return
					case <-time.After(100 * time.Millisecond):
					}
					t0 := time.Now()
					if err := srvProc.search(queries[(i+n)%len(queries)]); err != nil {
						b.Error(err)
						return
					}
					mu.Lock()
					searchLat = append(searchLat, time.Since(t0))
					mu.Unlock()
				}
			})
		}
	}
	b.ResetTimer()
	play(b, srv, warm, start, &mu)
	want := totalCmds(srv)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		mu.Lock()
		n := len(lat)
		mu.Unlock()
		if n >= want {
			break
		}
	}
	wall := time.Since(start)
	close(stopSearch)
	searching.Wait()
	syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	b.StopTimer()
	close(stopSample)
	<-sampled
	close(stopWatch)
	<-searchable
	cancel()
	wg.Wait()
	for _, s := range srv {
		s.f.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	if len(lat) < want {
		b.Fatalf("%s: %d of %d commands held within 30 s of the end (%d grows, %d failed)", path, len(lat), want, grows, failed)
	}
	cpu := rusageDur(after.Utime) + rusageDur(after.Stime) - rusageDur(before.Utime) - rusageDur(before.Stime)
	if srvProc == nil {
		b.ReportMetric(float64(cpu.Microseconds())/1000/float64(max(grows, 1)), "cpu-ms/grow")
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(grows)/wall.Seconds(), "grows/s")
	b.ReportMetric(cpu.Seconds()/wall.Seconds(), "cpu-share")
	if srvProc != nil {
		// serve's own CPU and peak RSS (the benchmark's process writes
		// the files and sends them; cpu-share above is its).
		scpu := srvProc.cpu()
		b.ReportMetric(float64(srvProc.peakRSS())/(1<<20), "serve-peak-RSS-MiB")
		b.ReportMetric(float64(scpu.Microseconds())/1000/float64(max(grows, 1)), "serve-cpu-ms/grow")
		b.ReportMetric(scpu.Seconds()/wall.Seconds(), "serve-cpu-share")
	} else {
		b.ReportMetric(float64(peak-base)/(1<<20), "heap-peak-MiB")
	}
	b.ReportMetric(float64(failed), "failed")
	if len(searchLat) > 0 {
		slices.Sort(searchLat)
		b.ReportMetric(float64(searchLat[len(searchLat)*99/100].Microseconds())/1000, "search-p99-ms")
	}
}

// fleetServe is `archivectl serve` as a process of its own, built for the
// benchmark, with a pusher token: the http path's archive.
type fleetServe struct {
	b     *testing.B
	cmd   *exec.Cmd
	url   string
	token string
	// viewToken is a viewer's, for the searches of FLEET_SEARCHERS.
	viewToken string
	hc        *http.Client
	cpuStart  time.Duration
}

func startFleetServe(b *testing.B, dir string) *fleetServe {
	bin := filepath.Join(b.TempDir(), "archivectl")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/archivectl").CombinedOutput(); err != nil {
		b.Fatalf("build archivectl: %v\n%s", err, out)
	}
	x, err := replay.Open(dir, replay.Options{Create: true})
	if err != nil {
		b.Fatal(err)
	}
	x.Close()
	out, err := exec.Command(bin, "--archive", dir, "token", "create", "--name", "fleet", "--role", "pusher").Output()
	if err != nil {
		b.Fatalf("token create: %v", err)
	}
	view, err := exec.Command(bin, "--archive", dir, "token", "create", "--name", "moderator", "--role", "viewer").Output()
	if err != nil {
		b.Fatalf("token create: %v", err)
	}
	fs := &fleetServe{b: b, token: strings.TrimSpace(string(out)), viewToken: strings.TrimSpace(string(view)),
		hc: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	fs.cmd = exec.Command(bin, "--archive", dir, "serve", "--listen", "127.0.0.1:0")
	stdout, err := fs.cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	fs.cmd.Stderr = io.Discard
	if err := fs.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "serving "); ok {
			if i := strings.LastIndex(rest, " at "); i >= 0 {
				fs.url = strings.TrimSpace(rest[i+len(" at "):])
				break
			}
		}
	}
	if fs.url == "" {
		fs.cmd.Process.Kill()
		b.Fatal("serve did not say where it serves")
	}
	go io.Copy(io.Discard, stdout)
	// The hosts are other machines: serve goes first on this one's CPUs.
	if err := syscall.Setpriority(syscall.PRIO_PROCESS, fs.cmd.Process.Pid, -5); err != nil {
		b.Logf("serve keeps the benchmark's priority: %v", err)
	}
	return fs
}

func (fs *fleetServe) stop() {
	fs.cmd.Process.Signal(os.Interrupt)
	fs.cmd.Wait()
}

func (fs *fleetServe) push(ctx context.Context, source string, offset int64, data []byte) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, fmt.Sprintf("%s/api/v1/push/%s?offset=%d", fs.url, source, offset), bytes.NewReader(data))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+fs.token)
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := fs.hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var a struct {
		Have int64 `json:"have"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &a) != nil {
		return 0, fmt.Errorf("push %s: %s: %s", source, resp.Status, body)
	}
	return a.Have, nil
}

// search asks serve for the first page of q, as a viewer.
func (fs *fleetServe) search(q string) error {
	req, err := http.NewRequest(http.MethodGet, fs.url+"/api/v1/recordings?q="+url.QueryEscape(q), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+fs.viewToken)
	resp, err := fs.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("search %q: %s", q, resp.Status)
	}
	return nil
}

// indexedAt reads serve's replay_index_synced_timestamp_seconds.
func (fs *fleetServe) indexedAt() time.Time {
	resp, err := fs.hc.Get(fs.url + "/metrics")
	if err != nil {
		return time.Time{}
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "replay_index_synced_timestamp_seconds "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return time.Time{}
			}
			return time.Unix(0, int64(f*1e9))
		}
	}
	return time.Time{}
}

// procCPU returns serve's user+system CPU (/proc/PID/stat, in clock
// ticks of 10 ms).
func (fs *fleetServe) procCPU() time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", fs.cmd.Process.Pid))
	if err != nil {
		fs.b.Fatal(err)
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

func (fs *fleetServe) markCPU()           { fs.cpuStart = fs.procCPU() }
func (fs *fleetServe) cpu() time.Duration { return fs.procCPU() - fs.cpuStart }

// peakRSS is serve's VmHWM.
func (fs *fleetServe) peakRSS() int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", fs.cmd.Process.Pid))
	if err != nil {
		fs.b.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
