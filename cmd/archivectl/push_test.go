package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
	"github.com/replayarchive/replay/wire"
)

func TestPushSourceNames(t *testing.T) {
	long := strings.Repeat("a", 128)
	for _, c := range []struct {
		rel, want, err string
	}{
		{rel: "game.teehistorian", want: "gs1/th/game.teehistorian"},
		{rel: "2026/01/x-y_z~1.teehistorian", want: "gs1/th/2026/01/x-y_z~1.teehistorian"},
		{rel: "a/b/c/d/e/f", want: "gs1/th/a/b/c/d/e/f"},
		{rel: "a/b/c/d/e/f/g", err: "at most 8 parts"},
		{rel: "with space.teehistorian", err: `"with space.teehistorian"`},
		{rel: "dir/.hidden", err: `".hidden"`},
		{rel: "ü.teehistorian", err: "cannot be part"},
		{rel: long, want: "gs1/th/" + long},
		{rel: long + "a", err: "cannot be part"},
		{rel: "..", err: "cannot be part"},
	} {
		got, err := sourceOf("gs1", "th", c.rel)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("sourceOf(%q): %q, %v; want an error with %q", c.rel, got, err, c.err)
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("sourceOf(%q): %q, %v; want %q", c.rel, got, err, c.want)
		}
	}
	for in, want := range map[string]string{
		"gs1":                       "gs1",
		"gs1.example.org":           "gs1.example.org",
		"Game Server #4":            "Game-Server--4",
		".hidden":                   "hidden",
		"...":                       "",
		"":                          "",
		"hôte":                      "h--te",
		strings.Repeat("h", 200):    strings.Repeat("h", 128),
		"under_score~tilde-dash.42": "under_score~tilde-dash.42",
	} {
		got := sanitizeSegment(in)
		if got != want {
			t.Errorf("sanitizeSegment(%q) = %q, want %q", in, got, want)
		}
		if got != "" && !validSegment(got) {
			t.Errorf("sanitizeSegment(%q) = %q, not a valid segment", in, got)
		}
	}
	for s, want := range map[string]bool{"a": true, ".": false, "..": false, ".a": false, "a.": true, "a/b": false, "": false, long: true, long + "b": false, "a b": false, "~": true} {
		if validSegment(s) != want {
			t.Errorf("validSegment(%q) = %v, want %v", s, !want, want)
		}
	}
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"gs1/th/game.teehistorian", 1, "gs1/th/game.teehistorian"},
		{"gs1/th/game.teehistorian", 2, "gs1/th/game.teehistorian~2"},
		{"gs1/th/a/game", 13, "gs1/th/a/game~13"},
		{"gs1/th/" + long, 2, "gs1/th/" + long[:126] + "~2"},
		{"gs1/th/" + long, 100, "gs1/th/" + long[:124] + "~100"},
	} {
		if got := renamed(c.in, c.n); got != c.want {
			t.Errorf("renamed(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
		if _, err := sourceOf("h", "d", strings.TrimPrefix(renamed(c.in, c.n), "gs1/th/")); err != nil {
			t.Errorf("renamed(%q, %d) is not a valid source: %v", c.in, c.n, err)
		}
	}
}

func TestPushBackoff(t *testing.T) {
	b := backoff{min: time.Second, max: 30 * time.Second}
	now := time.Unix(1000, 0)
	if w := b.wait(now); w != 0 {
		t.Fatalf("a fresh backoff waits %v", w)
	}
	var got []time.Duration
	for range 8 {
		got = append(got, b.fail(now))
	}
	want := []time.Duration{1, 2, 4, 8, 16, 30, 30, 30}
	for i := range want {
		if got[i] != want[i]*time.Second {
			t.Fatalf("waits %v, want %v seconds", got, want)
		}
	}
	if w := b.wait(now.Add(10 * time.Second)); w != 20*time.Second {
		t.Errorf("10 s into a 30 s wait: %v left, want 20s", w)
	}
	if w := b.wait(now.Add(time.Minute)); w != 0 {
		t.Errorf("after the wait: %v left", w)
	}
	b.reset()
	if w := b.wait(now); w != 0 {
		t.Errorf("after reset: %v left", w)
	}
	if d := b.fail(now); d != time.Second {
		t.Errorf("the first failure after reset waits %v, want 1s", d)
	}
}

// TestPushReadChunk: the file is read in pieces of at most the buffer's
// size, at any offset, and a file cut short while read is an error.
func TestPushReadChunk(t *testing.T) {
	data := make([]byte, 10<<10+7)
	for i := range data {
		data[i] = byte(i * 7)
	}
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4<<10)
	var got []byte
	for off := int64(0); off < int64(len(data)); {
		n := min(int64(len(buf)), int64(len(data))-off)
		b, err := readChunk(f, buf, off, n)
		if err != nil {
			t.Fatalf("at %d: %v", off, err)
		}
		if int64(len(b)) != n || &b[0] != &buf[0] {
			t.Fatalf("at %d: %d bytes (not in the buffer?), want %d", off, len(b), n)
		}
		got = append(got, b...)
		off += n
	}
	if !bytes.Equal(got, data) {
		t.Fatal("the pieces are not the file")
	}
	if _, err := readChunk(f, buf, int64(len(data))-10, 20); err == nil || !strings.Contains(err.Error(), "cut short") {
		t.Errorf("reading past the end: %v, want a cut-short error", err)
	}
	if _, err := readChunk(f, buf, 0, int64(len(buf))+1); err == nil {
		t.Error("a chunk larger than the buffer was read")
	}
	// The agent reads the file through its buffer; without a spool, a
	// file that is gone is an error.
	p := &pusher{}
	var file *os.File
	defer func() { file.Close() }()
	pbuf := make([]byte, pushChunk)
	if b, err := p.read(path, "h/d/f", &file, pbuf, 0, int64(len(data)), false); err != nil || !bytes.Equal(b, data) {
		t.Errorf("pusher.read: %d bytes, %v; want the file", len(b), err)
	}
	var none *os.File
	if _, err := p.read(path+".gone", "h/d/f", &none, pbuf, 0, 10, false); err == nil {
		t.Error("pusher.read of a file that is gone, without a spool: no error")
	}
}

// TestPushUsage: what push refuses before it starts, the token on the
// command line first (without repeating it).
func TestPushUsage(t *testing.T) {
	dir := t.TempDir()
	th := filepath.Join(dir, "a", "teehistorian")
	th2 := filepath.Join(dir, "b", "teehistorian")
	for _, d := range []string{th, th2} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tokFile := filepath.Join(dir, "tok")
	if err := os.WriteFile(tokFile, []byte("secret-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("REPLAY_TOKEN", "")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--follow", th, "--to", "http://127.0.0.1:1", "--token", "s3cr3t-value"}, "shows in ps"},
		{[]string{"--to", "http://127.0.0.1:1", "--token-file", tokFile}, "--follow DIR is required"},
		{[]string{"--follow", th, "--token-file", tokFile}, "--to URL is required"},
		{[]string{"--follow", th, "--to", "ftp://x", "--token-file", tokFile}, "http:// or https://"},
		{[]string{"--follow", th, "--to", "https://u:p@x", "--token-file", tokFile}, "no user or password"},
		{[]string{"--follow", th, "--to", "http://127.0.0.1:1"}, "REPLAY_TOKEN"},
		{[]string{"--follow", th, "--follow", th2, "--to", "http://127.0.0.1:1", "--token-file", tokFile}, "same name"},
		{[]string{"--follow", filepath.Join(dir, "nope"), "--to", "http://127.0.0.1:1", "--token-file", tokFile}, "--follow"},
		{[]string{"--follow", th, "--to", "http://127.0.0.1:1", "--token-file", tokFile, "--host", "a b"}, "--host"},
		{[]string{"--follow", th, "--to", "http://127.0.0.1:1", "--token-file", tokFile, "extra"}, "no arguments"},
		{[]string{"--follow", th, "--to", "http://127.0.0.1:1", "--token-file", tokFile, "--spool-max", "lots"}, "--spool-max"},
	} {
		var out, errb bytes.Buffer
		code := run(t.Context(), append([]string{"push"}, c.args...), strings.NewReader(""), &out, &errb)
		if code != exitUsage || !strings.Contains(errb.String(), c.want) {
			t.Errorf("push %q: exit %d, stderr %q; want exit 2 and %q", c.args, code, errb.String(), c.want)
		}
		if strings.Contains(errb.String(), "s3cr3t-value") {
			t.Errorf("push %q: the refused token is repeated: %q", c.args, errb.String())
		}
	}
	var out bytes.Buffer
	if code := run(t.Context(), []string{"push", "--help"}, strings.NewReader(""), &out, &out); code != 0 ||
		!strings.Contains(out.String(), "--role pusher") || !strings.Contains(out.String(), "spool") {
		t.Errorf("push --help: exit %d:\n%s", code, out.String())
	}
}

// pushFreePort returns a loopback port that was free a moment ago.
func pushFreePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// pushArchive makes an archive with tokens (role by name) and starts
// serve on it at a fixed loopback port, so that it can be killed and
// started again at the same URL. c.token is the admin's.
// pushRetries sets the agent's retry backoff for the test, restored when
// it ends.
func pushRetries(t *testing.T, lo, hi time.Duration) {
	was, wasMax := pushRetryMin, pushRetryMax
	t.Cleanup(func() { pushRetryMin, pushRetryMax = was, wasMax })
	pushRetryMin, pushRetryMax = lo, hi
}

// pushTokenFile writes token to a file of its own (0600), as an agent's
// --token-file, and returns its path.
func pushTokenFile(t *testing.T, token string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "push.token")
	if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func pushArchive(t *testing.T, ctx context.Context, roles map[string]string) (c *mnCluster, n *mnNode, url string, tokens map[string]string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "archive")
	if out, errs, code := mnCLI(ctx, dir, "init"); code != 0 {
		t.Fatalf("init: exit %d\n%s%s", code, out, errs)
	}
	tokens = map[string]string{}
	for name, role := range roles {
		out, errs, code := mnCLI(ctx, dir, "token", "create", "--name", name, "--role", role)
		if code != 0 {
			t.Fatalf("token create --role %s: exit %d\n%s%s", role, code, out, errs)
		}
		tokens[name] = strings.TrimSpace(out)
	}
	port := pushFreePort(t)
	c = &mnCluster{t: t, token: tokens["admin"]}
	n = c.node("archive", dir, []string{"--listen", "127.0.0.1:" + port})
	t.Cleanup(c.dumpLogs)
	t.Cleanup(c.stopAll)
	n.start()
	if t.Failed() {
		t.FailNow()
	}
	return c, n, "http://127.0.0.1:" + port, tokens
}

// pushAgent is archivectl push run in this process until stopped.
type pushAgent struct {
	cancel context.CancelFunc
	done   chan struct{}
	code   int
	out    syncBuffer
	errb   syncBuffer
	// kill ends an agent run as a process at once (SIGKILL), as a crash
	// of the game-server host would; nil for one run in a goroutine.
	kill func()
}

// pushSpools are the tests' spool directories, one per test and host:
// an agent started again finds its spool, as on a game-server host.
var pushSpools sync.Map // "test\x00host" → dir

// startPushAgent runs push with args in a goroutine, with a spool of the
// test's (unless args give --spool or --spool-max).
func startPushAgent(t *testing.T, ctx context.Context, args ...string) *pushAgent {
	args = withTestSpool(t, args)
	a := &pushAgent{done: make(chan struct{})}
	actx, cancel := context.WithCancel(ctx)
	a.cancel = cancel
	go func() {
		defer close(a.done)
		a.code = run(actx, append([]string{"push"}, args...), strings.NewReader(""), &a.out, &a.errb)
	}()
	return a
}

// startPushAgentProcess runs push with args as a child process (the test
// binary run as archivectl, see TestMain), with the spool startPushAgent
// would give it; its kill ends it with SIGKILL. Its backoff is the
// command's own (1 s to 30 s).
func startPushAgentProcess(t *testing.T, ctx context.Context, args ...string) *pushAgent {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	a := &pushAgent{done: make(chan struct{})}
	args = withTestSpool(t, args)
	cmd := exec.CommandContext(ctx, exe, append([]string{"push"}, args...)...)
	cmd.Env = append(os.Environ(), mnChildEnv+"=1")
	cmd.Stdout, cmd.Stderr = &a.out, &a.errb
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the agent: %v", err)
	}
	go func() {
		defer close(a.done)
		cmd.Wait()
		a.code = cmd.ProcessState.ExitCode()
	}()
	a.cancel = func() { cmd.Process.Signal(os.Interrupt) }
	a.kill = func() { cmd.Process.Kill(); <-a.done }
	return a
}

// withTestSpool adds the spool of the test and host (--host) to args
// unless they name one.
func withTestSpool(t *testing.T, args []string) []string {
	if slices.Contains(args, "--spool") || slices.Contains(args, "--spool-max") {
		return args
	}
	host := ""
	if i := slices.Index(args, "--host"); i >= 0 && i+1 < len(args) {
		host = args[i+1]
	}
	dir, _ := pushSpools.LoadOrStore(t.Name()+"\x00"+host, filepath.Join(t.TempDir(), "spool"))
	return append(slices.Clip(args), "--spool", dir.(string))
}

// stopAgents interrupts the agents (*agents, as the test left them) and
// waits for them; their output goes into the log when the test failed,
// or always with ARCHIVECTL_TEST_LOGS=1.
func stopAgents(t *testing.T, agents *[]*pushAgent) {
	for _, a := range *agents {
		a.cancel()
		<-a.done
	}
	if t.Failed() || os.Getenv("ARCHIVECTL_TEST_LOGS") != "" {
		for i, a := range *agents {
			t.Logf("agent %d: exit %d\nstdout:\n%s\nstderr:\n%s", i+1, a.code, a.out.String(), a.errb.String())
		}
	}
}

// stop interrupts the agent and returns its exit status.
func (a *pushAgent) stop(t *testing.T) int {
	t.Helper()
	a.cancel()
	select {
	case <-a.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the agent did not stop within 30 s of its interrupt")
	}
	return a.code
}

// lines returns the agent's JSON lines of a message type.
func (a *pushAgent) lines(t *testing.T, typ string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for l := range strings.Lines(a.out.String()) {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Errorf("agent output line %q: %v", l, err)
			continue
		}
		if m["message_type"] == typ {
			out = append(out, m)
		}
	}
	return out
}

// pushSourceState asks the archive, as admin, what it holds of source.
func pushSourceState(ctx context.Context, c *mnCluster, n *mnNode, source string) (wire.Push, int) {
	resp, b, err := c.do(ctx, n, "GET", "/api/v1/push/"+source, "", nil)
	if err != nil {
		return wire.Push{}, 0
	}
	var a wire.Push
	if resp.StatusCode == http.StatusOK {
		json.Unmarshal(b, &a)
	}
	return a, resp.StatusCode
}

// pushGame is a game server's file written in pieces.
type pushGame struct {
	path   string
	data   []byte
	cuts   []int // piece ends, increasing, the last len(data)
	pieces int   // written so far
	f      *os.File
}

// newPushGame generates a game and cuts it into n pieces at random
// offsets (inside records).
func newPushGame(t *testing.T, dir, name string, seed uint64, players int, d time.Duration, n int) *pushGame {
	data := teehistoriangen.Must(t, teehistoriangen.Options{Seed: seed, Players: players, Duration: d,
		Start: time.Now().Add(-time.Hour).Truncate(time.Second), MapName: fmt.Sprintf("Push %d", seed)})
	rng := rand.New(rand.NewPCG(seed, 7))
	cuts := map[int]bool{len(data): true}
	for len(cuts) < n {
		cuts[1+rng.IntN(len(data)-1)] = true
	}
	g := &pushGame{path: filepath.Join(dir, name), data: data}
	for c := range cuts {
		g.cuts = append(g.cuts, c)
	}
	slices.Sort(g.cuts)
	return g
}

// step writes the next piece; it reports whether the file is whole.
func (g *pushGame) step(t *testing.T) bool {
	if g.pieces == len(g.cuts) {
		return true
	}
	if g.f == nil {
		f, err := os.Create(g.path)
		if err != nil {
			t.Fatal(err)
		}
		g.f = f
	}
	from := 0
	if g.pieces > 0 {
		from = g.cuts[g.pieces-1]
	}
	if _, err := g.f.Write(g.data[from:g.cuts[g.pieces]]); err != nil {
		t.Fatal(err)
	}
	g.pieces++
	if g.pieces == len(g.cuts) {
		g.f.Close()
		return true
	}
	return false
}

// TestPushWrongRole: a token the archive refuses to let push stops the
// agent at once, saying why.
func TestPushWrongRole(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	_, _, url, tokens := pushArchive(t, ctx, map[string]string{"admin": "admin", "v1": "viewer"})
	dir := filepath.Join(t.TempDir(), "teehistorian")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ token, want string }{
		{tokens["v1"], "pusher role"},
		{"not-a-token-at-all", "refuses the token"},
	} {
		tokFile := filepath.Join(t.TempDir(), "token")
		if err := os.WriteFile(tokFile, []byte(c.token), 0o600); err != nil {
			t.Fatal(err)
		}
		var out, errb bytes.Buffer
		start := time.Now()
		code := run(ctx, []string{"push", "--follow", dir, "--to", url, "--token-file", tokFile, "--host", "gs1", "--spool", filepath.Join(t.TempDir(), "spool")}, strings.NewReader(""), &out, &errb)
		if code != exitFailure || !strings.Contains(errb.String(), c.want) || !strings.Contains(errb.String(), "archivectl token create") {
			t.Errorf("push with token %.6s…: exit %d, stderr %q; want exit 1 and %q", c.token, code, errb.String(), c.want)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("the agent took %v to stop", d)
		}
		t.Logf("exit %d: %s", code, strings.TrimSpace(errb.String()))
	}
}

// TestPushFollow is the agents of two hosts against a real serve: three
// games written as a game server writes them while host gs1's agent
// follows their directory, and one on host gs2; the archive killed for 10 s
// during the games and started again on the same port, gs1's agent
// killed (SIGKILL) and started again; every game ends
// sealed, byte-identical to its file, with the events a whole-file ingest
// of the same bytes finds.
func TestPushFollow(t *testing.T) {
	pushRetries(t, 250*time.Millisecond, 2*time.Second)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	c, n, url, tokens := pushArchive(t, ctx, map[string]string{"admin": "admin", "gs1": "pusher", "gs2": "pusher"})
	host := func(name string) (dir, tokFile string) {
		tokFile = filepath.Join(t.TempDir(), "push.token")
		if err := os.WriteFile(tokFile, []byte(tokens[name]+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		dir = filepath.Join(t.TempDir(), "teehistorian")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return dir, tokFile
	}
	dir, tokFile := host("gs1")
	games := []*pushGame{
		newPushGame(t, dir, "game-1.teehistorian", 1, 8, 3*time.Minute, 90),
		newPushGame(t, dir, "game-2.teehistorian", 2, 6, 2*time.Minute, 60),
		// Over one request's 4 MiB: sent in several.
		newPushGame(t, dir, "game-3.teehistorian", 3, 32, 11*time.Minute, 12),
	}
	// A second host, whose agent runs throughout.
	dir2, tokFile2 := host("gs2")
	game4 := newPushGame(t, dir2, "game-4.teehistorian", 4, 8, 2*time.Minute, 60)
	sourceOf := map[*pushGame]string{game4: "gs2/teehistorian/game-4.teehistorian"}
	for _, g := range games {
		sourceOf[g] = "gs1/teehistorian/" + filepath.Base(g.path)
	}
	agent2 := startPushAgent(t, ctx, "--json", "--follow", dir2, "--to", url, "--token-file", tokFile2, "--host", "gs2", "--settle", "1m")
	defer func() {
		if code := agent2.stop(t); code != 0 || t.Failed() {
			t.Logf("agent of gs2: exit %d\nstdout:\n%s\nstderr:\n%s", code, agent2.out.String(), agent2.errb.String())
		}
	}()
	for _, g := range games {
		t.Logf("%s: %d bytes in %d pieces", filepath.Base(g.path), len(g.data), len(g.cuts))
	}
	args := []string{"--json", "--follow", dir, "--to", url, "--token-file", tokFile, "--host", "gs1", "--settle", "1m"}
	// The first agent of gs1 is a process, killed mid-game.
	agents := []*pushAgent{startPushAgentProcess(t, ctx, args...)}
	defer stopAgents(t, &agents)

	// The games are written over about 18 s, a piece of each every 200 ms;
	// the archive is killed at step 8 and serves again 10 s later (the
	// games grow on meanwhile); the agent is killed at step 70 and
	// started again: game 3 (12 pieces) and game 2 (60) are whole by
	// then, game 1 (90) is not.
	var restarted sync.WaitGroup
	began := time.Now()
	for step := 0; ; step++ {
		whole := true
		for _, g := range append(games, game4) {
			if !g.step(t) {
				whole = false
			}
		}
		switch step {
		case 8:
			n.kill()
			t.Logf("step %d (%v): the archive killed", step, time.Since(began).Round(time.Millisecond))
			restarted.Go(func() {
				time.Sleep(10 * time.Second)
				n.start()
			})
		case 70:
			// Agent 1 saw the archive come back before it stops (the
			// game servers wait meanwhile if serve is slow to start).
			if !mnPoll(30*time.Second, func() bool { return len(agents[0].lines(t, "notice")) > 0 }) {
				t.Errorf("agent 1 did not see the archive answer again within 30 s")
			}
			agents[0].kill()
			t.Logf("step %d (%v): the agent killed (SIGKILL) and started again", step, time.Since(began).Round(time.Millisecond))
			agents = append(agents, startPushAgent(t, ctx, args...))
		}
		if whole && step >= 70 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	restarted.Wait()
	if t.Failed() {
		t.FailNow()
	}
	written := time.Now()
	t.Logf("the games are whole after %v", written.Sub(began).Round(time.Millisecond))

	// Every game ends sealed, byte-identical to its file.
	ids := map[string]string{}
	games = append(games, game4) // from here on, every game of both hosts
	for _, g := range games {
		src := sourceOf[g]
		var a wire.Push
		if !mnPoll(30*time.Second, func() bool {
			a, _ = pushSourceState(ctx, c, n, src)
			return a.State == "sealed"
		}) {
			t.Fatalf("%s: %+v 30 s after the game ended, want sealed", src, a)
		}
		if a.Have != int64(len(g.data)) || a.ID == "" {
			t.Errorf("%s: %+v, want sealed with %d bytes and an id", src, a, len(g.data))
		}
		ids[g.path] = a.ID
		resp, body, err := c.do(ctx, n, "GET", "/api/v1/recordings/"+a.ID+"/file", "", nil)
		if err != nil || resp.StatusCode != http.StatusOK || !bytes.Equal(body, g.data) {
			t.Errorf("%s: the recording's file is not the game's (%v, %d of %d bytes)", src, err, len(body), len(g.data))
		}
	}
	t.Logf("all sealed %v after the games ended", time.Since(written).Round(time.Millisecond))

	// The same events as a whole-file ingest of the same bytes.
	d2 := filepath.Join(t.TempDir(), "whole")
	var paths []string
	for _, g := range games {
		paths = append(paths, g.path)
	}
	out, errs, code := mnCLI(ctx, d2, append([]string{"ingest", "--json"}, paths...)...)
	if code != 0 {
		t.Fatalf("whole-file ingest: exit %d\n%s%s", code, out, errs)
	}
	whole := map[string]string{}
	for l := range strings.Lines(out) {
		var m map[string]any
		json.Unmarshal([]byte(l), &m)
		if m["message_type"] == "ingest" {
			whole[m["path"].(string)] = m["id"].(string)
		}
	}
	for _, g := range games {
		out, errs, code := mnCLI(ctx, d2, "show", "--json", whole[g.path])
		var want wire.Recording
		if code != 0 || json.Unmarshal([]byte(out), &want) != nil {
			t.Fatalf("show %s in the whole-file archive: exit %d\n%s%s", whole[g.path], code, out, errs)
		}
		got, status := c.show(ctx, n, ids[g.path])
		if status != http.StatusOK || got.EventCount != want.EventCount || want.EventCount == 0 {
			t.Errorf("%s: %d events pushed (status %d), %d ingested whole", filepath.Base(g.path), got.EventCount, status, want.EventCount)
		}
		if ids[g.path] != whole[g.path] {
			t.Logf("%s: pushed as %s, ingested whole as %s", filepath.Base(g.path), ids[g.path], whole[g.path])
		}
	}

	// What the agents said: the archive away and back, a line per game.
	last := agents[len(agents)-1]
	mnPoll(5*time.Second, func() bool { return len(last.lines(t, "push")) >= 1 })
	if code := last.stop(t); code != 0 {
		t.Errorf("the agent's exit status: %d, want 0", code)
	}
	outcomes := map[string][]string{}
	var away, back bool
	mnPoll(5*time.Second, func() bool { return len(agent2.lines(t, "push")) >= 1 })
	for _, a := range append(agents, agent2) {
		for _, r := range a.lines(t, "push") {
			src := fmt.Sprint(r["source"])
			outcomes[src] = append(outcomes[src], fmt.Sprint(r["outcome"]))
		}
		for _, w := range a.lines(t, "warning") {
			away = away || strings.Contains(fmt.Sprint(w["message"]), "the archive is away")
		}
		back = back || len(a.lines(t, "notice")) > 0
	}
	t.Logf("outcomes (gs1's agent 1, then 2; gs2's agent): %q", outcomes)
	for _, g := range games {
		// Sealed by one agent, or already archived for an agent that
		// finds it sealed (agent 2; or agent 1 was interrupted while the
		// archive sealed it), never anything else.
		src := sourceOf[g]
		o := outcomes[src]
		sealed := 0
		bad := len(o) == 0 || len(o) > 2
		for _, x := range o {
			bad = bad || x != "sealed" && x != "already archived"
			if x == "sealed" {
				sealed++
			}
		}
		bad = bad || sealed > 1
		if bad {
			t.Errorf("%s: outcomes %q, want sealed or already archived, once each at most", src, o)
		}
	}
	if !away || !back {
		t.Errorf("the agent did not say the archive went away (%v) and came back (%v)", away, back)
	}
}

// TestPushStartsOver: what makes the agent send a file anew under a new
// source name (~2), and a takedown. While the agent is stopped, a file
// the archive holds part of is replaced by another game (the resent
// first bytes differ: 409 rewrite), and another is cut shorter than what
// the archive holds; a sealed file that grows is sent anew; a live
// recording taken down while its file grows is reported and not sent
// again (exit 5). The agent prints text here: the lines people read.
func TestPushStartsOver(t *testing.T) {
	pushRetries(t, 250*time.Millisecond, 2*time.Second)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	c, n, url, tokens := pushArchive(t, ctx, map[string]string{"admin": "admin", "gs1": "pusher"})
	t.Setenv("REPLAY_TOKEN", tokens["gs1"])
	dir := filepath.Join(t.TempDir(), "th")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	args := []string{"--follow", dir, "--to", url, "--host", "gs1", "--settle", "2s"}
	src := func(name string) string { return "gs1/th/" + name }
	state := func(source string) wire.Push {
		a, _ := pushSourceState(ctx, c, n, source)
		return a
	}
	waitState := func(source string, have int, states ...string) wire.Push {
		t.Helper()
		var a wire.Push
		if !mnPoll(20*time.Second, func() bool {
			a = state(source)
			return slices.Contains(states, a.State) && a.Have == int64(have)
		}) {
			t.Fatalf("%s: %+v, want %v with %d bytes", source, a, states, have)
		}
		return a
	}
	write := func(name string, b []byte) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	appendTo := func(name string, b []byte) {
		t.Helper()
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	gen := func(seed uint64, players int) []byte {
		return teehistoriangen.Must(t, teehistoriangen.Options{Seed: seed, Players: players, Duration: 2 * time.Minute,
			Start: time.Now().Add(-time.Hour).Truncate(time.Second), MapName: fmt.Sprintf("Over %d", seed)})
	}
	b, b2, cgame, c2, d := gen(11, 6), gen(12, 10), gen(13, 6), gen(15, 6), gen(14, 6)
	if len(b2) <= len(b)*6/10 || len(c2)/2 >= len(cgame)*6/10 {
		t.Fatalf("the replacing games: %d bytes must be more than %d, %d fewer than %d", len(b2), len(b)*6/10, len(c2)/2, len(cgame)*6/10)
	}

	// Agent 1: b and c are live, 60% written.
	a1 := startPushAgent(t, ctx, args...)
	write("b.teehistorian", b[:len(b)*6/10])
	write("c.teehistorian", cgame[:len(cgame)*6/10])
	waitState(src("b.teehistorian"), len(b)*6/10, "live")
	waitState(src("c.teehistorian"), len(cgame)*6/10, "live")
	if code := a1.stop(t); code != 0 {
		t.Errorf("agent 1: exit %d\n%s%s", code, a1.out.String(), a1.errb.String())
	}

	// Meanwhile, b is replaced by another, longer game, whole, and c by
	// another game, half written, shorter than what the archive holds.
	write("b.teehistorian", b2)
	write("c.teehistorian", c2[:len(c2)/2])
	a2 := startPushAgent(t, ctx, args...)
	defer func() {
		a2.cancel()
		<-a2.done
		if t.Failed() || os.Getenv("ARCHIVECTL_TEST_LOGS") != "" {
			t.Logf("agent 1:\n%s%s\nagent 2:\n%s%s", a1.out.String(), a1.errb.String(), a2.out.String(), a2.errb.String())
		}
	}()
	// b~2 came whole and complete: ingested, never live.
	sb := waitState(src("b.teehistorian~2"), len(b2), "ingested", "sealed")
	resp, body, err := c.do(ctx, n, "GET", "/api/v1/recordings/"+sb.ID+"/file", "", nil)
	if err != nil || resp.StatusCode != http.StatusOK || !bytes.Equal(body, b2) {
		t.Errorf("b~2's recording is not the replacing game (%v, %d of %d bytes)", err, len(body), len(b2))
	}
	// c's new game is live under c~2, and goes on to its end.
	waitState(src("c.teehistorian~2"), len(c2)/2, "live")
	// What the archive holds of the first b and c is sealed as it is.
	for _, x := range []struct {
		name string
		have int
	}{{"b.teehistorian", len(b) * 6 / 10}, {"c.teehistorian", len(cgame) * 6 / 10}} {
		if got := state(src(x.name)); got.Have != int64(x.have) || got.State != "sealed" {
			t.Errorf("the first %s: %+v, want sealed with its %d bytes", x.name, got, x.have)
		}
	}
	appendTo("c.teehistorian", c2[len(c2)/2:])
	sc := waitState(src("c.teehistorian~2"), len(c2), "sealed")
	resp, body, err = c.do(ctx, n, "GET", "/api/v1/recordings/"+sc.ID+"/file", "", nil)
	if err != nil || resp.StatusCode != http.StatusOK || !bytes.Equal(body, c2) {
		t.Errorf("c~2's recording is not the game (%v, %d of %d bytes)", err, len(body), len(c2))
	}

	// A sealed file that grows is sent anew, whole, as b~3.
	appendTo("b.teehistorian", []byte("more bytes after FINISH"))
	waitState(src("b.teehistorian~3"), len(b2)+len("more bytes after FINISH"), "sealed", "ingested", "waiting", "live")

	// d is taken down while it grows.
	write("d.teehistorian", d[:len(d)/2])
	sd := waitState(src("d.teehistorian"), len(d)/2, "live")
	c.mustDo(ctx, n, "DELETE", "/api/v1/recordings/"+sd.ID, `{"reason":"push test"}`, http.StatusOK)
	appendTo("d.teehistorian", d[len(d)/2:])
	mnWait(t, 20*time.Second, "the agent reports d taken down", func() bool {
		return strings.Contains(a2.out.String(), "taken down")
	})
	appendTo("d.teehistorian", []byte("x")) // not sent again
	time.Sleep(1500 * time.Millisecond)
	if code := a2.stop(t); code != exitPartial {
		t.Errorf("agent 2: exit %d, want 5 (a file taken down)", code)
	}
	out, errs := a2.out.String(), a2.errb.String()
	if k := strings.Count("\n"+out, "\ntaken down "); k != 1 {
		t.Errorf("agent 2 reported a takedown %d times, want once", k)
	}
	for _, want := range []string{
		" " + sb.ID + " " + filepath.Join(dir, "b.teehistorian") + " as gs1/th/b.teehistorian~2 (",
		"sealed " + sc.ID + " " + filepath.Join(dir, "c.teehistorian") + " as gs1/th/c.teehistorian~2 (",
		"taken down",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("agent 2's output lacks %q:\n%s", want, out)
		}
	}
	for _, want := range []string{
		"are not those the archive holds of gs1/th/b.teehistorian: the file was rewritten; sent anew as gs1/th/b.teehistorian~2",
		strconv.Itoa(len(c2)/2) + " bytes, fewer than the " + strconv.Itoa(len(cgame)*6/10) + " the archive holds of gs1/th/c.teehistorian: the file was replaced; sent anew as gs1/th/c.teehistorian~2",
		"after the archive " + sb.State + " gs1/th/b.teehistorian~2 at " + strconv.Itoa(len(b2)) + "; sent anew as gs1/th/b.teehistorian~3",
		"following 1 directory",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("agent 2's stderr lacks %q:\n%s", want, errs)
		}
	}
}

// TestPushClient: what a request carries (token, agent, content type,
// offset and final), an https archive with a self-signed certificate
// trusted through --ca (and not without), and a request abandoned when
// its answer stalls.
func TestPushClient(t *testing.T) {
	type seen struct {
		method, path, query, auth, agent, ctype string
		body                                    []byte
	}
	got := make(chan seen, 4)
	stall := make(chan struct{})
	defer close(stall)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if strings.HasSuffix(r.URL.Path, "/stall") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			w.Write([]byte(`{"source":`))
			w.(http.Flusher).Flush()
			select {
			case <-stall:
			case <-r.Context().Done():
			}
			return
		}
		got <- seen{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Authorization"), r.Header.Get("User-Agent"), r.Header.Get("Content-Type"), b}
		if r.URL.Path == "/archive/api/v1/push/gs1/th/gone" {
			w.WriteHeader(http.StatusGone)
			w.Write([]byte(`{"error":"taken down","code":"taken_down","takedown":{"reason":"r"}}`))
			return
		}
		fmt.Fprintf(w, `{"source":"gs1/th/f","have":%d,"state":"live","id":"x"}`, len(b))
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake
	srv.StartTLS()
	defer srv.Close()
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	base, err := parsePushURL(srv.URL + "/archive/")
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()

	// Without --ca the certificate is not trusted.
	plain, err := newPushClient(base, "tok", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plain.get(ctx, "gs1/th/f"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("a self-signed archive without --ca: %v, want a certificate error", err)
	}
	c, err := newPushClient(base, "tok", caFile)
	if err != nil {
		t.Fatal(err)
	}
	a, err := c.put(ctx, "gs1/th/f", 42, []byte("hello"), true)
	if err != nil || a.Have != 5 || a.State != "live" {
		t.Fatalf("put: %+v, %v", a, err)
	}
	s := <-got
	want := seen{"PUT", "/archive/api/v1/push/gs1/th/f", "final=1&offset=42", "Bearer tok", "archivectl-push/" + buildVersion(), "application/octet-stream", []byte("hello")}
	if fmt.Sprint(s) != fmt.Sprint(want) {
		t.Errorf("the request: %+v\nwant %+v", s, want)
	}
	if _, err := c.put(ctx, "gs1/th/f", 0, nil, false); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s.query != "offset=0" || len(s.body) != 0 {
		t.Errorf("an empty put: %+v", s)
	}
	_, err = c.get(ctx, "gs1/th/gone")
	var pe *pushError
	if !errors.As(err, &pe) || pe.Status != http.StatusGone || pe.Code != "taken_down" || pe.Takedown == nil || pe.Takedown.Reason != "r" {
		t.Errorf("a 410: %v (%+v)", err, pe)
	}
	<-got

	// An answer that stalls is abandoned after the idle time.
	c.idle = 300 * time.Millisecond
	start := time.Now()
	_, err = c.get(ctx, "gs1/th/stall")
	if err == nil || !strings.Contains(err.Error(), "no progress") || time.Since(start) > 5*time.Second {
		t.Errorf("a stalled answer: %v after %v, want 'no progress' after 300ms", err, time.Since(start))
	}
	if _, err := newPushClient(base, "tok", filepath.Join(t.TempDir(), "none.pem")); err == nil {
		t.Error("--ca of a missing file was taken")
	}
	if err := os.WriteFile(caFile, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := newPushClient(base, "tok", caFile); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Errorf("--ca of a file without a certificate: %v", err)
	}
}

// pushFake is the push protocol in memory, behind a "proxy" that refuses
// bodies over limit (413) and answers 503 to the first busy requests.
type pushFake struct {
	mu      sync.Mutex
	files   map[string][]byte
	states  map[string]string
	limit   int
	busy    int
	largest int
	puts    int
}

func (f *pushFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	src, ok := strings.CutPrefix(r.URL.Path, "/api/v1/push/")
	if !ok || r.Header.Get("Authorization") != "Bearer tok" {
		http.Error(w, `{"code":"bad_token"}`, http.StatusUnauthorized)
		return
	}
	if f.busy > 0 {
		f.busy--
		http.Error(w, "<html>502 bad gateway</html>", http.StatusServiceUnavailable)
		return
	}
	if r.ContentLength > int64(f.limit) {
		http.Error(w, "<html>413 Request Entity Too Large</html>", http.StatusRequestEntityTooLarge)
		return
	}
	answer := func() {
		st := f.states[src]
		if st == "" {
			st = "new"
		}
		json.NewEncoder(w).Encode(wire.Push{Source: src, Have: int64(len(f.files[src])), State: st})
	}
	if r.Method == http.MethodGet {
		answer()
		return
	}
	body, _ := io.ReadAll(r.Body)
	off, _ := strconv.Atoi(r.URL.Query().Get("offset"))
	have := f.files[src]
	f.puts++
	f.largest = max(f.largest, len(body))
	switch {
	case off > len(have):
		w.WriteHeader(http.StatusConflict)
		fmt.Fprintf(w, `{"code":"offset_gap","have":%d}`, len(have))
		return
	case !bytes.HasPrefix(have[off:], body[:min(len(body), len(have)-off)]):
		w.WriteHeader(http.StatusConflict)
		fmt.Fprintf(w, `{"code":"rewrite","have":%d}`, len(have))
		return
	}
	if off+len(body) > len(have) {
		f.files[src] = append(have, body[len(have)-off:]...)
		f.states[src] = "waiting"
	}
	if r.URL.Query().Get("final") == "1" {
		f.states[src] = "ingested"
	}
	answer()
}

// TestPushFakeArchive: a proxy that takes at most 1 MiB a request makes
// the agent send smaller requests, not fail the file; 503s are the
// archive away, retried until it answers.
func TestPushFakeArchive(t *testing.T) {
	pushRetries(t, 50*time.Millisecond, 200*time.Millisecond)
	fake := &pushFake{files: map[string][]byte{}, states: map[string]string{}, limit: 1 << 20, busy: 3}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	dir := filepath.Join(t.TempDir(), "spool")
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 3<<20+12345)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	path := filepath.Join(dir, "sub", "big.bin")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour) // idle: final at once
	os.Chtimes(path, old, old)
	if err := os.WriteFile(filepath.Join(dir, "bad name.bin"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("REPLAY_TOKEN", "tok")
	a := startPushAgent(t, t.Context(), "--json", "--follow", dir, "--to", srv.URL, "--host", "h")
	if !mnPoll(20*time.Second, func() bool { return len(a.lines(t, "push")) > 0 }) {
		a.stop(t)
		t.Fatalf("no outcome within 20 s:\n%s%s", a.out.String(), a.errb.String())
	}
	if code := a.stop(t); code != 0 {
		t.Errorf("exit %d", code)
	}
	r := a.lines(t, "push")[0]
	fake.mu.Lock()
	defer fake.mu.Unlock()
	if r["outcome"] != "ingested" || r["source"] != "h/spool/sub/big.bin" || !bytes.Equal(fake.files["h/spool/sub/big.bin"], data) {
		t.Errorf("outcome %v; the fake holds %d of %d bytes", r, len(fake.files["h/spool/sub/big.bin"]), len(data))
	}
	if fake.largest > fake.limit {
		t.Errorf("a request of %d bytes was taken, over the limit", fake.largest)
	}
	var warned []string
	for _, w := range a.lines(t, "warning") {
		warned = append(warned, fmt.Sprint(w["message"]))
	}
	all := strings.Join(warned, "\n")
	for _, want := range []string{fmt.Sprintf("refuses a request of %d bytes (413): sending at most 2097152 ", len(data)), "refuses a request of 2097152 bytes (413): sending at most 1048576 ", "the archive is away", `"bad name.bin" cannot be part of a source name`} {
		if !strings.Contains(all, want) {
			t.Errorf("no warning with %q:\n%s", want, all)
		}
	}
	if len(a.lines(t, "notice")) != 1 {
		t.Errorf("notices: %v, want one (the archive answers again)", a.lines(t, "notice"))
	}
	t.Logf("%d requests; warnings:\n%s", fake.puts, all)
}

// TestPushSpoolUnit: the spool keeps a source's bytes from a base offset
// on, reads them back at any offset, drops them once the archive holds
// them, stays within its bound (refusing, not dropping), and is read
// again by the next agent; a corrupt record is an error that names it.
func TestPushSpoolUnit(t *testing.T) {
	data := make([]byte, 200)
	for i := range data {
		data[i] = byte(i*13 + 1)
	}
	dir := filepath.Join(t.TempDir(), "spool")
	s, err := openSpool(dir, 100)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 && os.PathSeparator == '/' {
		t.Errorf("the spool directory: %v, %v; want mode 0700", st, err)
	}
	buf := make([]byte, 16) // smaller than what is added: read in pieces
	r := bytes.NewReader(data)
	// Source a: the archive holds 0 bytes; 60 are spooled, in two adds.
	if n, err := s.add("h/d/a", "", "/g/a", r, 0, 40, buf); n != 40 || err != nil {
		t.Fatalf("add a [0,40): %d, %v", n, err)
	}
	if n, err := s.add("h/d/a", "", "/g/a", r, 0, 60, buf); n != 20 || err != nil {
		t.Fatalf("add a [40,60): %d, %v", n, err)
	}
	if n, err := s.add("h/d/a", "", "/g/a", r, 10, 60, buf); n != 0 || err != nil {
		t.Fatalf("add a again: %d, %v; want nothing added", n, err)
	}
	// Source b: the archive holds 20; 40 fit, of 60.
	n, err := s.add("h/d/b", "", "/g/b", r, 20, 80, buf)
	if n != 40 || !errors.Is(err, errSpoolFull) {
		t.Fatalf("add b [20,80) with 40 bytes of room: %d, %v; want 40 and errSpoolFull", n, err)
	}
	if n, err := s.add("h/d/b", "", "/g/b", r, 20, 80, buf); n != 0 || !errors.Is(err, errSpoolFull) {
		t.Fatalf("add b to a full spool: %d, %v; want 0 and errSpoolFull", n, err)
	}
	if b, files := s.counts(); b != 100 || files != 2 {
		t.Errorf("counts: %d bytes in %d files, want 100 in 2", b, files)
	}
	for _, c := range []struct {
		src     string
		off, n  int64
		ok      bool
		fromOff int64
	}{
		{"h/d/a", 0, 16, true, 0}, {"h/d/a", 44, 16, true, 44}, {"h/d/a", 50, 16, false, 0},
		{"h/d/b", 20, 16, true, 20}, {"h/d/b", 44, 16, true, 44}, {"h/d/b", 10, 16, false, 0}, {"h/d/b", 50, 11, false, 0},
		{"h/d/c", 0, 1, false, 0},
	} {
		b, ok, err := s.readAt(c.src, buf, c.off, c.n)
		if err != nil || ok != c.ok || ok && !bytes.Equal(b, data[c.off:c.off+c.n]) {
			t.Errorf("readAt(%s, %d, %d): %v, %v; want ok %v and the file's bytes", c.src, c.off, c.n, ok, err, c.ok)
		}
	}
	// The archive acknowledges a's bytes: below its end they stay, at it
	// they go, files and all.
	s.acked("h/d/a", 30, false)
	if _, ok := s.get("h/d/a"); !ok {
		t.Error("a dropped when the archive holds 30 of its 60 bytes")
	}
	s.acked("h/d/a", 60, false)
	if _, ok := s.get("h/d/a"); ok {
		t.Error("a kept when the archive holds all its bytes")
	}
	if _, err := os.Stat(s.data("h/d/a")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a's data file after it was dropped: %v", err)
	}
	if b, files := s.counts(); b != 40 || files != 1 {
		t.Errorf("counts after a was acknowledged: %d bytes in %d files, want 40 in 1", b, files)
	}
	// Room again: b's rest goes in.
	if n, err := s.add("h/d/b", "", "/g/b", r, 20, 80, buf); n != 20 || err != nil {
		t.Fatalf("add b's rest: %d, %v", n, err)
	}
	eb, _ := s.get("h/d/b")

	// The next agent reads the records.
	s2, err := openSpool(dir, 100)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := s2.get("h/d/b")
	if !ok || got.Base != 20 || got.Length != 60 || got.Path != "/g/b" || !got.Since.Equal(eb.Since) {
		t.Errorf("b after a restart: %+v, %v; want base 20, length 60, path /g/b, since %v", got, ok, eb.Since)
	}
	if b, ok, err := s2.readAt("h/d/b", buf, 64, 16); !ok || err != nil || !bytes.Equal(b, data[64:80]) {
		t.Errorf("readAt after a restart: %v, %v", ok, err)
	}
	if b, files := s2.counts(); b != 60 || files != 1 {
		t.Errorf("counts after a restart: %d bytes in %d files, want 60 in 1", b, files)
	}
	s2.acked("h/d/b", 0, true) // sealed
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("the spool after every source was dropped: %v", left)
	}

	// Corrupt records: an error naming the record, not a panic.
	for _, c := range []struct{ name, record string }{
		{"not json", "{"},
		{"another source's name", `{"source":"h/d/x","path":"/g/x","base":0,"length":0}`},
		{"more bytes than its data", `{"source":"h/d/a","path":"/g/a","base":0,"length":10}`},
		{"negative", `{"source":"h/d/a","path":"/g/a","base":-1,"length":0}`},
	} {
		d := t.TempDir()
		rec := filepath.Join(d, spoolName("h/d/a")+".json")
		if err := os.WriteFile(rec, []byte(c.record), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := openSpool(d, 100); err == nil || !strings.Contains(err.Error(), rec) {
			t.Errorf("a record %s: %v, want an error naming %s", c.name, err, rec)
		}
	}
}

// pushSpoolRecords reads the records in a spool directory.
func pushSpoolRecords(t *testing.T, dir string) map[string]spoolEntry {
	out := map[string]spoolEntry{}
	des, _ := os.ReadDir(dir)
	for _, de := range des {
		if !strings.HasSuffix(de.Name(), ".json") {
			continue
		}
		var e spoolEntry
		if b, err := os.ReadFile(filepath.Join(dir, de.Name())); err == nil && json.Unmarshal(b, &e) == nil {
			out[e.Source] = e
		}
	}
	return out
}

// TestPushSpool: the archive is killed while two games are written whole;
// the agent spools what the archive lacks of them until its --spool-max
// is reached, and warns naming the game it could not spool all of. The
// first game's file is deleted, as a game server may: when the archive
// serves again, the first game is sent from the spool, the second from
// its file, and both end sealed (or ingested), byte-identical; the spool
// is then empty. Then a third game, spooled while the archive is away
// again, is deleted while the agent is stopped: the agent started again
// sends it from the spool it finds.
func TestPushSpool(t *testing.T) {
	pushRetries(t, 250*time.Millisecond, time.Second)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	c, n, url, tokens := pushArchive(t, ctx, map[string]string{"admin": "admin", "gs1": "pusher"})
	tokFile := pushTokenFile(t, tokens["gs1"])
	dir := filepath.Join(t.TempDir(), "teehistorian")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	spoolDir := filepath.Join(t.TempDir(), "spool")
	a := newPushGame(t, dir, "game-a.teehistorian", 11, 8, 2*time.Minute, 10)
	b := newPushGame(t, dir, "game-b.teehistorian", 12, 8, 2*time.Minute, 10)
	srcA, srcB := "gs1/teehistorian/game-a.teehistorian", "gs1/teehistorian/game-b.teehistorian"
	// Room for all of a and half of b.
	max := len(a.data) + len(b.data)/2
	args := []string{"--json", "--follow", dir, "--to", url, "--token-file", tokFile, "--host", "gs1", "--settle", "1m",
		"--spool", spoolDir, "--spool-max", strconv.Itoa(max)}
	agents := []*pushAgent{startPushAgent(t, ctx, args...)}
	defer func() {
		for _, ag := range agents {
			ag.cancel()
			<-ag.done
		}
		if t.Failed() || os.Getenv("ARCHIVECTL_TEST_LOGS") != "" {
			for i, ag := range agents {
				t.Logf("agent %d: exit %d\nstdout:\n%s\nstderr:\n%s", i+1, ag.code, ag.out.String(), ag.errb.String())
			}
		}
	}()

	// The archive takes a's first pieces live, then goes.
	for range 3 {
		a.step(t)
	}
	var held wire.Push
	if !mnPoll(20*time.Second, func() bool { held, _ = pushSourceState(ctx, c, n, srcA); return held.Have > 0 }) {
		t.Fatalf("the archive holds nothing of %s", srcA)
	}
	n.kill()
	for !a.step(t) {
	}
	if !mnPoll(20*time.Second, func() bool {
		e, ok := pushSpoolRecords(t, spoolDir)[srcA]
		return ok && e.Base+e.Length == int64(len(a.data))
	}) {
		t.Fatalf("a's bytes not spooled: %+v", pushSpoolRecords(t, spoolDir))
	}
	for !b.step(t) {
	}
	full := func() bool {
		for _, w := range agents[0].lines(t, "warning") {
			m := fmt.Sprint(w["message"])
			if strings.Contains(m, "spool") && strings.Contains(m, "full") && strings.Contains(m, b.path) {
				return true
			}
		}
		return false
	}
	if !mnPoll(20*time.Second, full) {
		t.Fatalf("no warning that the spool is full naming %s", b.path)
	}
	recs := pushSpoolRecords(t, spoolDir)
	var total int64
	for _, e := range recs {
		total += e.Length
	}
	if total > int64(max) || recs[srcA].Base > held.Have {
		t.Errorf("the spool: %+v; want at most %d bytes, a's from %d on at most", recs, max, held.Have)
	}
	spooled := false
	for _, s := range agents[0].lines(t, "status") {
		spooled = spooled || s["spool_bytes"].(float64) > 0 && s["spool_files"].(float64) > 0
	}
	if !spooled {
		t.Log("no status line with the spool's bytes yet (statuses come every rescan)")
	}

	// The game server deletes a's file; the archive serves again.
	if err := os.Remove(a.path); err != nil {
		t.Fatal(err)
	}
	n.start()
	sealed := func(g *pushGame, src string) {
		t.Helper()
		var st wire.Push
		// b was never live: the archive ingests it whole.
		if !mnPoll(30*time.Second, func() bool {
			st, _ = pushSourceState(ctx, c, n, src)
			return st.State == "sealed" || st.State == "ingested"
		}) {
			t.Fatalf("%s: %+v, want sealed or ingested", src, st)
		}
		resp, body, err := c.do(ctx, n, "GET", "/api/v1/recordings/"+st.ID+"/file", "", nil)
		if err != nil || resp.StatusCode != http.StatusOK || !bytes.Equal(body, g.data) {
			t.Errorf("%s: the recording's file is not the game's (%v, %d of %d bytes)", src, err, len(body), len(g.data))
		}
	}
	sealed(a, srcA)
	sealed(b, srcB)
	empty := func() bool { return len(pushSpoolRecords(t, spoolDir)) == 0 }
	if !mnPoll(10*time.Second, empty) {
		t.Errorf("the spool once both games are sealed: %+v, want empty", pushSpoolRecords(t, spoolDir))
	}

	// Games c and d: spooled while the archive is away; while the agent
	// is stopped, c is deleted and d rotated (another, shorter game
	// written in its place). The agent started again finds them in its
	// spool: c and d as they were, then the new game as d's name ~2.
	cg := newPushGame(t, dir, "game-c.teehistorian", 13, 4, time.Minute, 4)
	dg := newPushGame(t, dir, "game-d.teehistorian", 14, 8, time.Minute, 4)
	srcC, srcD := "gs1/teehistorian/game-c.teehistorian", "gs1/teehistorian/game-d.teehistorian"
	n.kill()
	for !cg.step(t) || !dg.step(t) {
	}
	if !mnPoll(20*time.Second, func() bool {
		recs := pushSpoolRecords(t, spoolDir)
		c, d := recs[srcC], recs[srcD]
		return c.Base+c.Length == int64(len(cg.data)) && d.Base+d.Length == int64(len(dg.data))
	}) {
		t.Fatalf("c's and d's bytes not spooled: %+v", pushSpoolRecords(t, spoolDir))
	}
	if code := agents[0].stop(t); code != 0 {
		t.Errorf("agent 1's exit status: %d", code)
	}
	if err := os.Remove(cg.path); err != nil {
		t.Fatal(err)
	}
	eg := newPushGame(t, dir, "game-d.teehistorian", 15, 2, 20*time.Second, 1)
	if len(eg.data) >= len(dg.data) {
		t.Fatalf("the game that replaces d has %d bytes, not fewer than d's %d", len(eg.data), len(dg.data))
	}
	eg.step(t)
	agents = append(agents, startPushAgent(t, ctx, args...))
	n.start()
	sealed(cg, srcC)
	sealed(dg, srcD)
	sealed(eg, srcD+"~2")
	if !mnPoll(10*time.Second, empty) {
		t.Errorf("the spool once c is sealed: %+v, want empty", pushSpoolRecords(t, spoolDir))
	}
}
