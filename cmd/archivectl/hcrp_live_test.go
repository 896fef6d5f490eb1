package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/replayarchive/replay/formats/hcrp"
)

// hcrpServer records an HCRP segment set the way a Hollow Cube server
// does: ticks go to the recorder, and every commit writes a new segment
// file, then replaces preamble.dat.
type hcrpServer struct {
	t    *testing.T
	id   uuid.UUID
	dir  string
	rec  *hcrp.Recorder
	tick int64
}

func newHCRPServer(t *testing.T, root string, seed int) *hcrpServer {
	t.Helper()
	s := &hcrpServer{t: t, id: uuid.NewSHA1(uuid.NameSpaceOID, fmt.Appendf(nil, "hcrp-live-%d", seed))}
	s.dir = filepath.Join(root, s.id.String())
	player := uuid.NewSHA1(uuid.NameSpaceOID, fmt.Appendf(nil, "runner-%d", seed))
	var err error
	s.rec, err = hcrp.Create(root, s.id, hcrp.Options{
		WorldID: uuid.NewSHA1(uuid.NameSpaceOID, fmt.Appendf(nil, "world-%d", seed)), WorldVersion: make([]byte, 16), DataVersion: 4671,
		Start: time.Now().Add(-time.Minute).UTC().Truncate(time.Millisecond),
		Meta: &hcrp.Meta{Map: "parkour-spire", Server: "hc-eu-1",
			Players: []hcrp.MetaPlayer{{UUID: player.String(), Name: fmt.Sprintf("Runner%d", seed), Entity: 0}}},
		SegmentChunks: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.rec.Close() })
	return s
}

// play records n ticks of a runner moving.
func (s *hcrpServer) play(n int) {
	for range n {
		s.must(s.rec.StartTick())
		s.must(s.rec.Add(&hcrp.Event{Type: hcrp.AbsoluteMove, Entity: 0, Pos: hcrp.Pos{X: float64(s.tick) / 10, Y: 64, Z: 0.5}}))
		s.tick++
	}
}

// checkpoint records a checkpoint named mark (searchable as a word).
func (s *hcrpServer) checkpoint(mark string) {
	s.must(s.rec.StartTick())
	s.must(s.rec.Add(&hcrp.Event{Type: hcrp.CheckpointReached, Checkpoint: mark, RunTime: s.tick * 50}))
	s.tick++
}

func (s *hcrpServer) must(err error) {
	if err != nil {
		s.t.Helper()
		s.t.Fatal(err)
	}
}

// stream is the compacted stream the set stands for: what a
// whole-directory ingest archives.
func (s *hcrpServer) stream() []byte {
	s.t.Helper()
	set, err := hcrp.OpenSegmentSet(s.dir)
	s.must(err)
	defer set.Close()
	b, err := io.ReadAll(set)
	s.must(err)
	return b
}

// TestLiveHCRPSet is the live-recording promise for HCRP segment sets,
// through serve --watch: a set written commit by commit into the watched
// directory is one live recording from its first commit, each commit's
// checkpoint is found by the search API while the set grows, and the set
// is sealed once finished (or, for a server that stopped without
// finishing, once idle for --settle) as exactly one recording, whose
// export is byte-identical to a whole-directory ingest's.
func TestLiveHCRPSet(t *testing.T) {
	c := newCLI(t)
	dir := t.TempDir()
	const settle = 3 * time.Second
	base, serveErr := serveWatch(t, c, dir, settle)
	sets := []*hcrpServer{newHCRPServer(t, dir, 1), newHCRPServer(t, dir, 2)}
	var worst time.Duration
	for i := range 4 {
		for k, s := range sets {
			mark := fmt.Sprintf("hcrpmark%dx%d", k, i)
			s.play(120)
			s.checkpoint(mark)
			s.play(90)
			s.must(s.rec.Flush()) // a commit: new segments, then the preamble
			written := time.Now()
			for !searchFinds(t, base, mark, s.id, mark) {
				if time.Since(written) > 8*time.Second {
					t.Fatalf("%s not found 8 s after its commit:\n%s", mark, serveErr.String())
				}
				time.Sleep(20 * time.Millisecond)
			}
			worst = max(worst, time.Since(written))
		}
	}
	t.Logf("slowest checkpoint: searchable %v after its commit", worst)
	if n := strings.Count(serveErr.String(), "live recording\" path="); n != 2 {
		t.Errorf("%d live recordings started, want 2:\n%s", n, serveErr.String())
	}
	// Set 0 is finished; set 1's server stops without finishing.
	sets[0].play(30)
	sets[0].must(sets[0].rec.Close())
	sets[1].play(30)
	sets[1].must(sets[1].rec.Flush())
	stopped := time.Now()
	waitSealed(t, serveErr, 2, settle+15*time.Second)
	if since := time.Since(stopped); since < settle {
		t.Errorf("the unfinished set was sealed %v after its last commit, before --settle %v", since, settle)
	}
	ls := c.ok("ls")
	if n := strings.Count(strings.TrimSpace(ls), "\n"); n != 2 { // a heading and one line each
		t.Errorf("ls lists %d lines, want one per set:\n%s", n, ls)
	}
	whole := newCLI(t)
	for _, s := range sets {
		if !strings.Contains(ls, s.id.String()) {
			t.Errorf("ls does not list %s:\n%s", s.id, ls)
		}
		got := exportFile(t, c, s.id)
		if want := s.stream(); !bytes.Equal(got, want) {
			t.Errorf("%s: export is %d bytes, the set's stream %d: not byte-identical", s.id, len(got), len(want))
		}
		whole.ok("ingest", s.dir)
		if want := exportFile(t, whole, s.id); !bytes.Equal(got, want) {
			t.Errorf("%s: export is %d bytes, a whole-directory ingest's %d: not byte-identical", s.id, len(got), len(want))
		}
	}
	if t.Failed() {
		t.Log(serveErr.String())
	}
}

// exportFile exports recording id from c's archive and returns its bytes.
func exportFile(t *testing.T, c cli, id uuid.UUID) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), "export.hcrp")
	c.ok("export", id.String(), "-o", out)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
