// Search at a million recordings: a generator of DDNet-like archives
// (catalog only: manifests and events, no chunks, which search never
// reads), the benchmark that measures the real HTTP API over such an
// archive under 32 concurrent clients, and a small test that checks what
// the same queries return, page by page.
//
//	REPLAY_BENCH_RECS=1000000 REPLAY_BENCH_DIR=/tmp/million \
//	  go test ./server -run '^$' -bench SearchAtScale -benchtime 1x -timeout 0
//
// REPLAY_BENCH_DIR keeps the archive (and its index) for the next run;
// REPLAY_BENCH_REQS sets the page pairs each client asks per query kind;
// REPLAY_BENCH_SETTLE_S (default 5) is the pause after the warm-up, while
// the index reads its sort keys in the background;
// REPLAY_BENCH_GENONLY=1 writes the catalog and stops (to time
// `archivectl reindex` on it); REPLAY_BENCH_KINDS=player,cmd,... measures
// only those kinds; REPLAY_BENCH_CPUPROFILE=FILE writes a CPU profile of
// the measured requests alone (not the open, warm-up and settle pause).

package server_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/server"
)

// The generated network: a year of games on scaleServers servers, on
// scaleMaps maps (a few popular, most rare), by three kinds of players:
// a few grinders who play all day, regulars, and a long tail of people
// who came a few times.
const (
	scaleMaps      = 1500
	scaleServers   = 300
	scaleGrinders  = 20
	scaleRegulars  = 20_000
	scaleCasuals   = 1_000_000
	scaleFlagShare = 50 // one recording in this many carries a flag
)

var (
	scaleSyllables = []string{"ka", "to", "ri", "mo", "zu", "ne", "shi", "ra", "ki", "lo", "ven", "dar", "xi", "po", "gal", "tor", "mi", "sa", "qu", "el"}
	scaleMapWords  = []string{"Kobra", "Sunny", "Multeasy", "Grass", "Cave", "Ice", "Jungle", "Space", "Lava", "Tropic"}
	scaleFlags     = []string{"aimbot", "speedhack", "wallhack", "macro", "report", "toxic", "desync", "teleport"}
	// scaleCommands are console commands and how many of 100 picks each
	// gets; the moderation ones are the rare ones.
	scaleCommands = []struct {
		verb   string
		weight int
	}{{"kill", 25}, {"vote", 15}, {"status", 10}, {"spec", 10}, {"pause", 8}, {"restart", 7}, {"change_map", 6}, {"mute", 6}, {"kick", 5}, {"ban", 3}, {"tune", 3}, {"timeout", 2}}
	scaleYear = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
)

func scaleWord(n int) string {
	s := ""
	for k := n; ; k /= len(scaleSyllables) {
		s += scaleSyllables[k%len(scaleSyllables)]
		if k < len(scaleSyllables) {
			return s
		}
	}
}

// scaleMap is map n: n small is popular (see scaleMeta).
func scaleMap(n int) string {
	return fmt.Sprintf("%s_%s%d", scaleMapWords[n%len(scaleMapWords)], scaleWord(n/len(scaleMapWords)), n%7)
}

// scalePlayer names player n of a kind: "g" grinders, "r" regulars, "c"
// the rest.
func scalePlayer(kind string, n int) string { return kind + scaleWord(n) + strconv.Itoa(n%97) }

// scaleID is the id of recording i.
func scaleID(i int) uuid.UUID {
	return uuid.MustParse(fmt.Sprintf("5ca1e000-0000-4000-8000-%012x", i))
}

// scaleMeta returns recording i of the generated network; the same i
// always gives the same recording.
func scaleMeta(i int) formats.Metadata {
	r := rand.New(rand.NewPCG(42, uint64(i)))
	dur := time.Minute + time.Duration(r.Float64()*r.Float64()*float64(time.Hour))
	m := formats.Metadata{
		ID:       scaleID(i),
		Start:    scaleYear.Add(time.Duration(r.Int64N(int64(365 * 24 * time.Hour)))).Truncate(time.Second),
		Duration: dur,
		TickRate: 50,
		Ticks:    int64(dur / (20 * time.Millisecond)),
		Map:      scaleMap(int(scaleMaps * r.Float64() * r.Float64())),
		Server:   fmt.Sprintf("DDNet %s%d", []string{"GER", "RUS", "USA", "CHN", "BRA"}[r.IntN(5)], r.IntN(scaleServers/5)),
		Attrs:    map[string]string{"version": fmt.Sprintf("0.6.%d", r.IntN(5)), "server_version": "DDNet 17." + strconv.Itoa(r.IntN(4))},
	}
	var np int
	switch x := r.IntN(100); {
	case x < 35:
		np = 1 + r.IntN(2)
	case x < 75:
		np = 3 + r.IntN(14)
	case x < 95:
		np = 17 + r.IntN(16)
	default:
		np = 33 + r.IntN(32)
	}
	seen := map[string]bool{}
	for len(m.Players) < np {
		var name string
		switch x := r.IntN(100); {
		case x < 1:
			name = scalePlayer("g", r.IntN(scaleGrinders))
		case x < 60:
			name = scalePlayer("r", r.IntN(scaleRegulars))
		default:
			name = scalePlayer("c", r.IntN(scaleCasuals))
		}
		if !seen[name] {
			seen[name] = true
			m.Players = append(m.Players, formats.Player{Name: name, Team: strconv.Itoa(r.IntN(3))})
		}
	}
	if r.IntN(scaleFlagShare) == 0 {
		m.Flags = []string{scaleFlags[r.IntN(len(scaleFlags))]}
	}
	// A few events: some console commands, a few chat lines, a finish.
	ev := func(kind, player, text string) {
		tick := r.Int64N(max(m.Ticks, 1))
		m.Events = append(m.Events, formats.Event{Tick: tick, Time: time.Duration(tick) * 20 * time.Millisecond, Kind: kind, Player: player, Text: text})
	}
	who := func() string { return m.Players[r.IntN(len(m.Players))].Name }
	for range r.IntN(6) {
		w := r.IntN(100)
		verb := ""
		for _, c := range scaleCommands {
			if w -= c.weight; w < 0 {
				verb = c.verb
				break
			}
		}
		text := verb
		switch verb {
		case "kick", "mute", "spec":
			text = fmt.Sprintf("%s %d", verb, r.IntN(64))
		case "ban", "timeout":
			text = fmt.Sprintf("%s %d %dm %s", verb, r.IntN(64), 1+r.IntN(60), scaleWord(400+r.IntN(400)))
		case "vote":
			text = "vote " + []string{"yes", "no"}[r.IntN(2)]
		case "change_map":
			text = "change_map " + m.Map
		case "tune":
			text = "tune gravity 0." + strconv.Itoa(r.IntN(10))
		}
		ev(formats.EventCommand, who(), text)
	}
	for range r.IntN(5) {
		words := make([]string, 1+r.IntN(5))
		for k := range words {
			words[k] = scaleWord(400 + r.IntN(400))
		}
		ev(formats.EventChat, who(), strings.Join(words, " "))
	}
	if r.IntN(3) == 0 {
		ev(formats.EventFinish, who(), "finished in "+strconv.Itoa(30+r.IntN(600))+"s")
	}
	slices.SortStableFunc(m.Events, func(a, b formats.Event) int { return int(a.Tick - b.Tick) })
	return m
}

// scaleCommit is how many recordings one catalog transaction commits.
const scaleCommit = 2000

// genScaleArchive writes the catalog of recordings [from, n) of the
// generated network into the archive in dir (header only: a recording's
// manifest and events, no chunks).
func genScaleArchive(ctx context.Context, dir string, from, n int, progress func(done int)) error {
	a, err := archive.Open(dir, archive.Options{NoSync: true})
	if err != nil {
		return err
	}
	defer a.Close()
	for lo := from; lo < n; lo += scaleCommit {
		hi := min(lo+scaleCommit, n)
		pend := make([]*archive.Pending, 0, hi-lo)
		for i := lo; i < hi; i++ {
			p := a.NewPending("teehistorian", fmt.Sprintf("game-%07d.teehistorian", i))
			if err := p.Header([]byte("generated recording " + strconv.Itoa(i))); err != nil {
				return err
			}
			meta := scaleMeta(i)
			if _, err := p.Finish(&meta); err != nil {
				return err
			}
			pend = append(pend, p)
		}
		res, err := a.Commit(ctx, pend)
		if err != nil {
			return fmt.Errorf("commit %d to %d: %w", lo, hi, err)
		}
		for k, r := range res {
			if r.Outcome != archive.Ingested {
				return fmt.Errorf("recording %d: %s %v", lo+k, r.Outcome, r.Err)
			}
		}
		if progress != nil {
			progress(hi)
		}
	}
	return nil
}

// scaleArchive returns the archive of n generated recordings in dir,
// generating what is missing (a marker file says how far an earlier run
// got) and building its index when there is none.
func scaleArchive(tb testing.TB, dir string, n int) *replay.Archive {
	tb.Helper()
	marker := filepath.Join(dir, "generated")
	have := 0
	if b, err := os.ReadFile(marker); err == nil {
		have, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	if have > n {
		tb.Fatalf("%s holds %d generated recordings, want %d: use another REPLAY_BENCH_DIR", dir, have, n)
	}
	ctx := context.Background()
	if have < n {
		began := time.Now()
		err := genScaleArchive(ctx, dir, have, n, func(done int) {
			os.WriteFile(marker, []byte(strconv.Itoa(done)), 0o600)
			if done%100_000 == 0 {
				tb.Logf("%d recordings generated, %v", done, time.Since(began).Round(time.Second))
			}
		})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Logf("catalog of %d recordings written in %v", n-have, time.Since(began).Round(time.Millisecond))
	}
	if os.Getenv("REPLAY_BENCH_GENONLY") == "1" {
		tb.Skip("REPLAY_BENCH_GENONLY: catalog written, no index")
	}
	x, err := replay.Open(dir, replay.Options{Archive: archive.Options{NoSync: true}})
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "index", "index_meta.json")); err != nil || have < n {
		began := time.Now()
		if _, err := x.Reindex(ctx); err != nil {
			tb.Fatal(err)
		}
		tb.Logf("index of %d recordings built in %v", n, time.Since(began).Round(time.Millisecond))
	}
	return x
}

// scaleServer serves x on 127.0.0.1 and returns its base URL and a
// moderator's token; the server stops at the test's end.
func scaleServer(tb testing.TB, x *replay.Archive) (base, token string) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan string, 1), make(chan error, 1)
	go func() {
		done <- server.New(x, server.Config{LocalSecret: replay.NewSecret()}).ListenAndServe(ctx, "127.0.0.1:0", "", "", 5*time.Second, func(u string) { ready <- u })
	}()
	select {
	case base = <-ready:
	case err := <-done:
		cancel()
		tb.Fatal(err)
	}
	tb.Cleanup(func() { cancel(); <-done })
	token, err := x.CreateToken(replay.LocalActor(), "scale-bench-"+strconv.FormatInt(time.Now().UnixNano(), 36), replay.RoleModerator)
	if err != nil {
		tb.Fatal(err)
	}
	return base, token
}

// scaleCursor is the cursor of the newest-first page at offset from, as
// the server writes it.
func scaleCursor(from int) string {
	return base64.RawURLEncoding.EncodeToString([]byte("o" + strconv.Itoa(from)))
}

// scalePage is one page of an answer: its total, ids and next cursor.
type scalePage struct {
	Total int
	IDs   []string
	Next  string
}

// scaleGet asks for one page: a search (path "" and q) or a player page
// (path the player's name).
func scaleGet(c *http.Client, base, token, q, player, cursor string) (scalePage, error) {
	u := base + "/api/v1/recordings?q=" + url.QueryEscape(q)
	if player != "" {
		u = base + "/api/v1/players/" + url.PathEscape(player) + "?"
	}
	if cursor != "" {
		u += "&cursor=" + cursor
	}
	req, err := http.NewRequest("GET", u, nil)
	if err != nil {
		return scalePage{}, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	if err != nil {
		return scalePage{}, err
	}
	// Read to the end (the encoder's last newline too): a body left
	// unread makes the transport close the connection, and every request
	// then dialled a new one.
	defer func() {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}()
	if resp.StatusCode != http.StatusOK {
		var e struct{ Message string }
		json.NewDecoder(resp.Body).Decode(&e)
		return scalePage{}, fmt.Errorf("%s: %s %s", u, resp.Status, e.Message)
	}
	// Only what the benchmark reads: decoding every hit and event into
	// wire's types took a fifth of the process's CPU, which the server
	// then lacked (real clients run elsewhere).
	var p scalePage
	type hit struct{ ID string }
	var body struct {
		Total      int
		NextCursor string `json:"next_cursor"`
		Hits       []hit  // a search
		Recordings []hit  // a player page
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return p, err
	}
	p.Total, p.Next = body.Total, body.NextCursor
	for _, h := range append(body.Hits, body.Recordings...) {
		p.IDs = append(p.IDs, h.ID)
	}
	return p, nil
}

// scaleDeep is the offset of the deep page asked after a first page of
// an answer of total recordings: page 51 (offset 1000), or the last page
// of a shorter answer.
func scaleDeep(total int) int {
	if total > 1020 {
		return 1000
	}
	return max(0, (total-1)/20*20)
}

// scaleKind is a kind of request the benchmark makes: the i-th query of
// the kind, or the i-th player of the player page.
type scaleKind struct {
	name   string
	query  func(i int) string
	player func(i int) string
}

// scalePickPlayer is the i-th player a request names: grinders (some
// thousands of recordings each at a million), regulars (hundreds) and
// casual players (a few).
func scalePickPlayer(i int) string {
	switch i % 10 {
	case 0:
		return scalePlayer("g", i/10%scaleGrinders)
	case 1, 2, 3, 4, 5, 6:
		return scalePlayer("r", i*7919%scaleRegulars)
	default:
		return scalePlayer("c", i*104729%scaleCasuals)
	}
}

var scaleKinds = []scaleKind{
	{name: "player", query: func(i int) string { return "player:" + scalePickPlayer(i) }},
	{name: "map", query: func(i int) string {
		return "map:" + scaleMap([]int{0, 1, 3, 10, 40, 200, 900}[i%7])
	}},
	{name: "flag", query: func(i int) string { return "flag:" + scaleFlags[i%len(scaleFlags)] }},
	{name: "cmd", query: func(i int) string {
		return []string{"cmd:kick", "cmd:ban", "cmd:mute", "cmd:timeout", "cmd:\"kick " + strconv.Itoa(i%64) + "\""}[i%5]
	}},
	{name: "time", query: func(i int) string {
		d := scaleYear.AddDate(0, 0, i*37%365)
		if i%2 == 1 {
			return "at:" + d.Add(time.Duration(i%24)*time.Hour).Format("2006-01-02T15")
		}
		return "after:" + d.Format(time.DateOnly) + " before:" + d.AddDate(0, 0, 1).Format(time.DateOnly)
	}},
	{name: "player-page", player: scalePickPlayer},
}

// scaleLatencies are the times of the first and the deep pages of one kind.
type scaleLatencies struct {
	first, deep []time.Duration
	totals      int
}

// runScaleKind has clients clients each ask reqs pairs of pages (the
// first, then a deep one) of kind k, and returns their times.
func runScaleKind(ctx context.Context, base, token string, k scaleKind, clients, reqs int) (*scaleLatencies, error) {
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	defer c.CloseIdleConnections()
	out := &scaleLatencies{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	errc := make(chan error, clients)
	for cl := range clients {
		wg.Go(func() {
			for n := range reqs {
				if ctx.Err() != nil {
					return
				}
				i := cl*reqs + n
				q, player := "", ""
				if k.query != nil {
					q = k.query(i)
				} else {
					player = k.player(i)
				}
				t0 := time.Now()
				p, err := scaleGet(c, base, token, q, player, "")
				d1 := time.Since(t0)
				if err != nil {
					errc <- err
					return
				}
				t1 := time.Now()
				_, err = scaleGet(c, base, token, q, player, scaleCursor(scaleDeep(p.Total)))
				d2 := time.Since(t1)
				if err != nil {
					errc <- err
					return
				}
				mu.Lock()
				out.first = append(out.first, d1)
				out.deep = append(out.deep, d2)
				out.totals += p.Total
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errc)
	if err := <-errc; err != nil {
		return nil, err
	}
	return out, nil
}

// pct is the p-th quantile of l in milliseconds (l sorted).
func pct(l []time.Duration, p float64) float64 {
	if len(l) == 0 {
		return 0
	}
	return float64(l[min(len(l)-1, int(p*float64(len(l))))].Microseconds()) / 1000
}

// BenchmarkSearchAtScale measures the search API and the player page
// over HTTP on an archive of REPLAY_BENCH_RECS generated recordings
// (default 20,000): for each kind of query, 32 clients each ask
// REPLAY_BENCH_REQS (default 20) pairs of pages, the first page and a
// deep one (offset 1000, or the last page of a shorter answer), and the
// p50/p99 of each are reported.
func BenchmarkSearchAtScale(b *testing.B) {
	n := envInt("REPLAY_BENCH_RECS", 20_000)
	reqs := envInt("REPLAY_BENCH_REQS", 20)
	dir := os.Getenv("REPLAY_BENCH_DIR")
	if dir == "" {
		dir = b.TempDir()
	}
	x := scaleArchive(b, dir, n)
	defer x.Close()
	base, token := scaleServer(b, x)
	ctx := context.Background()
	// The index's first open, and a warm-up of every kind.
	for _, k := range scaleKinds {
		if _, err := runScaleKind(ctx, base, token, k, 2, 2); err != nil {
			b.Fatal(err)
		}
	}
	// The index reads its sort keys' numbers in the background after
	// its first searches (query/sortkeys.go); a server that has run a
	// while has them. Measured: the steady state.
	time.Sleep(time.Duration(envInt("REPLAY_BENCH_SETTLE_S", 5)) * time.Second)
	kinds := scaleKinds
	if only := os.Getenv("REPLAY_BENCH_KINDS"); only != "" {
		kinds = slices.DeleteFunc(slices.Clone(kinds), func(k scaleKind) bool { return !slices.Contains(strings.Split(only, ","), k.name) })
	}
	if path := os.Getenv("REPLAY_BENCH_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			b.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	b.ResetTimer()
	for b.Loop() {
		for _, k := range kinds {
			cpu0 := processCPU()
			lat, err := runScaleKind(ctx, base, token, k, 32, reqs)
			if err != nil {
				b.Fatal(err)
			}
			// The process's CPU per request (server and clients): on
			// shared cores a steadier measure than the latencies.
			cpuMS := float64((processCPU() - cpu0).Microseconds()) / 1000 / float64(2*len(lat.first))
			b.ReportMetric(cpuMS, k.name+"-cpu-ms/req")
			slices.Sort(lat.first)
			slices.Sort(lat.deep)
			b.ReportMetric(pct(lat.first, .5), k.name+"-p50-ms")
			b.ReportMetric(pct(lat.first, .99), k.name+"-p99-ms")
			b.ReportMetric(pct(lat.deep, .5), k.name+"-deep-p50-ms")
			b.ReportMetric(pct(lat.deep, .99), k.name+"-deep-p99-ms")
			b.Logf("%-12s first page p50 %6.1f p99 %6.1f ms; deep page p50 %6.1f p99 %6.1f ms; %d requests, %.0f recordings per answer; CPU %.2f ms a request",
				k.name, pct(lat.first, .5), pct(lat.first, .99), pct(lat.deep, .5), pct(lat.deep, .99),
				2*len(lat.first), float64(lat.totals)/float64(len(lat.first)), cpuMS)
		}
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// scaleWant returns the ids of the generated recordings [0, n) that q
// matches (one of the forms scaleKinds asks, or "player page" for a
// player's name), newest first, as the API orders them.
func scaleWant(t *testing.T, n int, q, player string) []string {
	t.Helper()
	var match func(m *formats.Metadata) bool
	op, v, _ := strings.Cut(q, ":")
	hasPlayer := func(name string) func(m *formats.Metadata) bool {
		return func(m *formats.Metadata) bool {
			return slices.ContainsFunc(m.Players, func(p formats.Player) bool { return strings.EqualFold(p.Name, name) })
		}
	}
	switch {
	case player != "":
		match = hasPlayer(player)
	case op == "player":
		match = hasPlayer(v)
	case op == "map":
		match = func(m *formats.Metadata) bool { return strings.EqualFold(m.Map, v) }
	case op == "flag":
		match = func(m *formats.Metadata) bool { return slices.Contains(m.Flags, v) }
	case op == "cmd":
		phrase := strings.Trim(v, `"`)
		match = func(m *formats.Metadata) bool {
			return slices.ContainsFunc(m.Events, func(e formats.Event) bool {
				if e.Kind != formats.EventCommand {
					return false
				}
				if strings.Contains(phrase, " ") {
					return e.Text == phrase || strings.HasPrefix(e.Text, phrase+" ")
				}
				return slices.Contains(strings.Fields(e.Text), phrase)
			})
		}
	case op == "after":
		a, b, _ := strings.Cut(v, " before:")
		from, err1 := time.Parse(time.DateOnly, a)
		to, err2 := time.Parse(time.DateOnly, b)
		if err1 != nil || err2 != nil {
			t.Fatalf("%q: %v %v", q, err1, err2)
		}
		match = func(m *formats.Metadata) bool { return !m.Start.Before(from) && m.Start.Before(to) }
	case op == "at":
		from, err := time.Parse("2006-01-02T15", v)
		if err != nil {
			t.Fatal(err)
		}
		to := from.Add(time.Hour)
		match = func(m *formats.Metadata) bool { return m.Start.Before(to) && m.Start.Add(m.Duration).After(from) }
	default:
		t.Fatalf("scaleWant: no predicate for %q", q)
	}
	type rec struct {
		start time.Time
		id    string
	}
	var recs []rec
	for i := range n {
		if m := scaleMeta(i); match(&m) {
			recs = append(recs, rec{m.Start, m.ID.String()})
		}
	}
	slices.SortFunc(recs, func(a, b rec) int {
		if c := b.start.Compare(a.start); c != 0 {
			return c
		}
		return strings.Compare(b.id, a.id)
	})
	ids := make([]string, len(recs))
	for i, r := range recs {
		ids[i] = r.id
	}
	return ids
}

// TestSearchAtScaleSmall is BenchmarkSearchAtScale's small variant: over
// 2,000 generated recordings served on 127.0.0.1, every kind of query the
// benchmark asks (and the player page) returns the recordings it should,
// newest first: the first page, the next by its cursor, and the deep page
// the benchmark asks, with the right totals.
func TestSearchAtScaleSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an archive of 2,000 recordings")
	}
	const n = 2000
	x := scaleArchive(t, t.TempDir(), n)
	defer x.Close()
	base, token := scaleServer(t, x)
	c := &http.Client{}
	checked := 0
	for _, k := range scaleKinds {
		for i := range 12 {
			q, player := "", ""
			if k.query != nil {
				q = k.query(i)
			} else {
				player = k.player(i)
			}
			want := scaleWant(t, n, q, player)
			page := func(from int, cursor string) {
				t.Helper()
				got, err := scaleGet(c, base, token, q, player, cursor)
				if err != nil {
					t.Fatal(err)
				}
				w := want[min(from, len(want)):min(from+20, len(want))]
				if got.Total != len(want) || !slices.Equal(got.IDs, w) && len(got.IDs)+len(w) > 0 {
					t.Errorf("%s %q%s from %d: total %d, %v\nwant total %d, %v", k.name, q, player, from, got.Total, got.IDs, len(want), w)
				}
				if wantNext := from+20 < len(want); (got.Next != "") != wantNext {
					t.Errorf("%s %q%s from %d: next cursor %q, want one: %v", k.name, q, player, from, got.Next, wantNext)
				}
			}
			page(0, "")
			first, err := scaleGet(c, base, token, q, player, "")
			if err != nil {
				t.Fatal(err)
			}
			if first.Next != "" {
				page(20, first.Next)
			}
			page(scaleDeep(len(want)), scaleCursor(scaleDeep(len(want))))
			if len(want) > 40 {
				checked++
			}
		}
	}
	if checked < 10 {
		t.Errorf("only %d queries had more than two pages: the test pages too little", checked)
	}
}

// BenchmarkOpenAtScale times what opening the archive in REPLAY_BENCH_DIR
// costs, as serve and every command pay it: replay.Open, the first search
// (which opens the index and brings it up to date with the catalog) and
// Close, each reported on its own (ms, the mean of b.N rounds).
//
//	REPLAY_BENCH_DIR=/tmp/million go test ./server -run '^$' -bench OpenAtScale -benchtime 5x
func BenchmarkOpenAtScale(b *testing.B) {
	dir := os.Getenv("REPLAY_BENCH_DIR")
	if dir == "" {
		b.Skip("REPLAY_BENCH_DIR names no archive")
	}
	ctx := context.Background()
	var open, first, closing time.Duration
	for b.Loop() {
		t0 := time.Now()
		x, err := replay.Open(dir, replay.Options{})
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := x.Search(ctx, "player:"+scalePlayer("r", 1), 0, 20); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		if err := x.Close(); err != nil {
			b.Fatal(err)
		}
		open, first, closing = open+t1.Sub(t0), first+time.Since(t1)-time.Since(t2), closing+time.Since(t2)
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
	b.ReportMetric(ms(open), "open-ms")
	b.ReportMetric(ms(first), "first-search-ms")
	b.ReportMetric(ms(closing), "close-ms")
}
