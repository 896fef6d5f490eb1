package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/replayarchive/replay/formats/teehistorian"
)

// gameServer writes a teehistorian file the way a DDNet server does: the
// recorder's bytes go to the file in pieces as the game runs, a piece
// often ending in the middle of a record (a buffered write), with pauses.
type gameServer struct {
	t    *testing.T
	id   uuid.UUID
	path string
	f    *os.File
	buf  bytes.Buffer
	rec  *teehistorian.Recorder
	tick int64
	rng  *rand.Rand
	// written is how many bytes of buf are in the file.
	written int
}

func newGameServer(t *testing.T, dir string, seed uint64) *gameServer {
	t.Helper()
	s := &gameServer{t: t, rng: rand.New(rand.NewPCG(seed, 99))}
	var b [16]byte
	for i := range b {
		b[i] = byte(s.rng.Uint32())
	}
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	s.id = uuid.UUID(b)
	s.path = filepath.Join(dir, s.id.String()+".teehistorian")
	hj, err := teehistorian.HeaderInfo{GameUUID: s.id.String(), ServerVersion: "0.6.4, 19.8.2", StartTime: time.Now().Add(-time.Minute).UTC().Truncate(time.Second),
		ServerName: "live test", ServerPort: "8303", GameType: "DDraceNetwork", MapName: "Kobra 3 Solo", MapSize: "903514", MapCRC: "6252a38b"}.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if s.rec, err = teehistorian.NewRecorder(&s.buf, hj); err != nil {
		t.Fatal(err)
	}
	if s.f, err = os.Create(s.path); err != nil {
		t.Fatal(err)
	}
	s.must(s.rec.Flush())
	s.write(s.buf.Len() - 40) // the first write ends inside the header
	for cid := range int32(4) {
		s.must(s.rec.PlayerJoin(cid, false))
		s.must(s.rec.PlayerName(cid, fmt.Sprintf("tee%d", cid)))
	}
	return s
}

func (s *gameServer) must(err error) {
	if err != nil {
		s.t.Helper()
		s.t.Fatal(err)
	}
}

// play records n ticks of 4 players moving.
func (s *gameServer) play(n int) {
	for range n {
		s.tick++
		s.must(s.rec.BeginTick(s.tick))
		for cid := range int32(4) {
			s.must(s.rec.Player(cid, int32(s.tick)*3+cid*100, 500+cid))
		}
	}
	s.must(s.rec.Flush())
}

// command records a console command and returns the offset its record
// ends at.
func (s *gameServer) command(text string) int {
	s.must(s.rec.ConsoleCommand(int32(s.rng.IntN(4)), 0, "echo", text))
	s.must(s.rec.Flush())
	return s.buf.Len()
}

// write puts the recorded bytes up to end into the file.
func (s *gameServer) write(end int) {
	if end <= s.written {
		return
	}
	if _, err := s.f.Write(s.buf.Bytes()[s.written:end]); err != nil {
		s.t.Fatal(err)
	}
	s.written = end
}

// TestLiveRecording is the live-recording promise, through serve --watch: a game
// written as a server writes it is one live recording under its
// game_uuid, each console command is found by the server's search API
// (GET /api/v1/recordings, one hit, the command among its events) within 2 s of its
// bytes reaching the file, and once FINISH arrives (or, for a server
// killed mid-game, once the file has been idle for --settle) the
// recording is sealed, and its export is the file byte for byte.
func TestLiveRecording(t *testing.T) {
	c := newCLI(t)
	dir := t.TempDir()
	const settle = 3 * time.Second
	base, serveErr := serveWatch(t, c, dir, settle)
	games := []*gameServer{newGameServer(t, dir, 1), newGameServer(t, dir, 2)}
	var worst time.Duration
	for i := range 6 {
		for g, s := range games {
			mark := fmt.Sprintf("livemark%dx%d", g, i)
			s.play(20 + s.rng.IntN(40))
			end := s.command(mark)
			s.play(1 + s.rng.IntN(10))
			// Write through the command and part of what follows: the
			// piece ends inside a record most of the time.
			s.write(end + s.rng.IntN(s.buf.Len()-end))
			written := time.Now()
			for !searchFinds(t, base, "cmd:"+mark, s.id, mark) {
				if time.Since(written) > 5*time.Second {
					t.Fatalf("%s not found 5 s after it was written:\n%s", mark, serveErr.String())
				}
				time.Sleep(20 * time.Millisecond)
			}
			took := time.Since(written)
			worst = max(worst, took)
			if took > 2*time.Second {
				t.Errorf("%s found %v after it was written, want within 2 s", mark, took)
			}
			time.Sleep(time.Duration(50+s.rng.IntN(250)) * time.Millisecond)
		}
	}
	t.Logf("slowest command: searchable %v after its bytes were written", worst)
	// Game 0 ends with FINISH; game 1's server is killed in the middle of
	// a record.
	games[0].play(5)
	games[0].must(games[0].rec.Finish())
	games[0].write(games[0].buf.Len())
	games[1].play(5)
	games[1].write(games[1].buf.Len() - 3)
	killed := time.Now()
	for _, s := range games {
		s.f.Close()
	}
	waitSealed(t, serveErr, 2, settle+10*time.Second)
	if since := time.Since(killed); since < settle {
		t.Errorf("the killed game was sealed %v after its last write, before --settle %v", since, settle)
	}
	ls := c.ok("ls")
	if n := strings.Count(strings.TrimSpace(ls), "\n"); n != 2 { // a heading and one line each
		t.Errorf("ls lists %d lines, want one per game:\n%s", n, ls)
	}
	for _, s := range games {
		if !strings.Contains(ls, s.id.String()) {
			t.Errorf("ls does not list %s:\n%s", s.id, ls)
		}
		out := filepath.Join(t.TempDir(), "export.teehistorian")
		c.ok("export", s.id.String(), "-o", out)
		got, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := os.ReadFile(s.path)
		if !bytes.Equal(got, want) {
			t.Errorf("%s: export is %d bytes, the file %d: not byte-identical", s.id, len(got), len(want))
		}
	}
	if t.Failed() {
		t.Log(serveErr.String())
	}
}

// serveWatch runs serve --watch dir over c's archive until the test ends,
// and returns its login link and its log.
func serveWatch(t *testing.T, c cli, dir string, settle time.Duration) (string, *syncBuffer) {
	t.Helper()
	return serveArchive(t, c, "--watch", dir, "--settle", settle.String())
}

// serveArchive runs serve on 127.0.0.1:0 with extra arguments over c's
// archive until the test ends, and returns its login link (serveURL) and
// its log.
func serveArchive(t *testing.T, c cli, extra ...string) (string, *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var serveOut syncBuffer
	serveErr := new(syncBuffer)
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, append([]string{"--archive", c.dir, "serve", "--listen", "127.0.0.1:0"}, extra...), strings.NewReader(""), &serveOut, serveErr)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("serve did not stop within 10 s")
		}
	})
	return serveURL(t, &serveOut, serveErr), serveErr
}

// waitSealed waits until serve's log reports n live recordings sealed,
// and fails the test if that takes longer than timeout.
func waitSealed(t *testing.T, log *syncBuffer, n int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for strings.Count(log.String(), "live recording sealed") < n && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if got := strings.Count(log.String(), "live recording sealed"); got != n {
		t.Fatalf("%d live recordings sealed, want %d:\n%s", got, n, log.String())
	}
}

// serveURL waits for serve's login link ("sign in ... as the owner: URL")
// and returns it: the server's URL, "/#login=" and the owner's secret.
func serveURL(t *testing.T, out, errs *syncBuffer) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if _, rest, ok := strings.Cut(out.String(), "as the owner: "); ok {
			if u, _, ok := strings.Cut(rest, "\n"); ok {
				return u
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("serve did not print its login link:\n%s%s", out.String(), errs.String())
	return ""
}

// searchFinds asks the server at login (serveURL's link) for q and says whether the
// only hit is recording id with an event whose text holds text.
func searchFinds(t *testing.T, login, q string, id uuid.UUID, text string) bool {
	t.Helper()
	base, secret, _ := strings.Cut(login, "/#login=")
	req, err := http.NewRequest("GET", base+"/api/v1/recordings?q="+url.QueryEscape(q), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET /api/v1/recordings?q=%s: %s %s", q, resp.Status, b)
	}
	var r struct {
		Hits []struct {
			ID     string
			Events []struct{ Kind, Text string }
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatalf("search answer: %v", err)
	}
	if len(r.Hits) == 0 {
		return false
	}
	if len(r.Hits) != 1 || r.Hits[0].ID != id.String() {
		t.Fatalf("search %s: %d hits, first %s, want only %s", q, len(r.Hits), r.Hits[0].ID, id)
	}
	for _, e := range r.Hits[0].Events {
		if strings.Contains(e.Text, text) {
			return true
		}
	}
	t.Fatalf("search %s: hit %s shows no event with %q: %+v", q, id, text, r.Hits[0].Events)
	return false
}
