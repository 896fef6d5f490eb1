package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/replayarchive/replay/formats/hcrp"
	"github.com/replayarchive/replay/internal/gen/hcrpgen"
	"github.com/replayarchive/replay/wire"
)

// A live HCRP recording directory is ingested while it grows: each ingest
// of the grown directory replaces the same recording, which stays
// searchable by its anticheat flags and exports as the compacted stream.
func TestHCRPLiveSegmentSet(t *testing.T) {
	c := newCLI(t)
	root := t.TempDir()
	replayID := uuid.MustParse("0b9f6c1e-5b7a-4c8e-9a1d-2f3e4d5c6b7a")
	sess := hcrpgen.NewSession(hcrpgen.Config{Seed: 7, Ticks: 3000, Players: 4})
	opts := sess.Options()
	opts.SegmentChunks = 5
	rec, err := hcrp.Create(root, replayID, opts)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, replayID.String())
	step := func(n int) {
		for i := 0; i < n; i++ {
			if ok, err := sess.Step(rec); err != nil || !ok {
				t.Fatalf("step: %v %v", ok, err)
			}
		}
		if err := rec.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	ingest := func(want string) {
		t.Helper()
		out := c.ok("ingest", "--json", root)
		var r struct{ Outcome, ID, Err string }
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("ingest output %q: %v", out, err)
		}
		if r.Outcome != want || r.ID != replayID.String() {
			t.Fatalf("ingest: %s %s %s, want %s %s", r.Outcome, r.ID, r.Err, want, replayID)
		}
	}
	step(1000)
	ingest("ingested")
	ingest("already archived")
	step(1000)
	ingest("replaced")
	for {
		ok, err := sess.Step(rec)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	ingest("replaced")

	var show wire.Recording
	json.Unmarshal([]byte(c.ok("show", replayID.String(), "--json")), &show)
	if show.Ticks != 3000 || show.Format != "hcrp" {
		t.Fatalf("show: %d ticks, format %s", show.Ticks, show.Format)
	}
	if len(show.FileFlags) == 0 {
		t.Fatal("the generated session carries no anticheat flags")
	}
	if out := c.ok("search", "flag:"+show.FileFlags[0]); !strings.Contains(out, replayID.String()) {
		t.Errorf("search flag:%s does not find the recording:\n%s", show.FileFlags[0], out)
	}
	set, err := hcrp.OpenSegmentSet(dir)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := io.ReadAll(set)
	set.Close()
	got := c.ok("export", replayID.String()[:8], "-o", "-")
	if !bytes.Equal([]byte(got), want) {
		t.Error("export differs from the segment set's compacted stream")
	}
	clip := filepath.Join(t.TempDir(), "clip.hcrp")
	c.ok("export", replayID.String()[:8], "--from", "1500", "--to", "1700", "-o", clip)
	if b, err := os.ReadFile(clip); err != nil || !(hcrp.Codec{}).Detect(b) {
		t.Errorf("clip is not an HCRP file: %v", err)
	}
	if out := c.ok("check", "--read-data"); !strings.HasSuffix(out, "ok\n") {
		t.Errorf("check:\n%s", out)
	}
	var list []wire.Recording
	json.Unmarshal([]byte(c.ok("ls", "--json")), &list)
	if len(list) != 1 {
		t.Errorf("%d recordings after three ingests of one growing set, want 1", len(list))
	}
}

// Two generated runs of the same world at different paces race: the
// slower one falls behind, and the command says by how much.
func TestGhost(t *testing.T) {
	c := newCLI(t)
	dir := t.TempDir()
	for i, pace := range []float64{1, 0.8} {
		b, err := hcrpgen.Generate(hcrpgen.Config{Seed: uint64(10 + i), Ticks: 1200, Players: 2, Pace: pace}, nil)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("run%d.hcrp", i)), b, 0o644)
	}
	var ids []string
	for _, line := range strings.Split(strings.TrimSpace(c.ok("ingest", dir)), "\n") {
		ids = append(ids, strings.Fields(line)[1])
	}
	var out struct {
		Summary hcrp.GhostSummary
	}
	if err := json.Unmarshal([]byte(c.ok("ghost", ids[0], ids[1], "--json")), &out); err != nil {
		t.Fatal(err)
	}
	s := out.Summary
	if s.Both != 1200 || s.MaxGap <= 0 || s.FinalGap <= 0 || s.MeanGap > s.MaxGap {
		t.Errorf("ghost summary: %+v", s)
	}
	if text := c.ok("ghost", ids[0], ids[1]); !strings.Contains(text, "gap:   max") {
		t.Errorf("ghost text:\n%s", text)
	}
	if _, errs, code := c.run("ghost", ids[0]); code != 2 || !strings.Contains(errs, "two recording IDs") {
		t.Errorf("ghost with one id: exit %d %s", code, errs)
	}
}
