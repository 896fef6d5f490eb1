package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/replayarchive/replay/formats/hcrp"
	"github.com/replayarchive/replay/internal/gen/hcrpgen"
	"github.com/replayarchive/replay/wire"
)

// pushSetFixture is a generated HCRP session recorded into a segment set
// below a followed directory, as the real recorder writes it.
type pushSetFixture struct {
	root, dir, source string // the followed directory, the set's, its source
	id                uuid.UUID
	s                 *hcrpgen.Session
	rec               *hcrp.Recorder
}

// newPushSet starts recording a generated session (seed, ticks, players)
// as set name's uuid below a new followed directory, 3 chunks a segment.
func newPushSet(t *testing.T, name string, seed uint64, ticks, players int) *pushSetFixture {
	t.Helper()
	root := filepath.Join(t.TempDir(), "hcrp")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	s := hcrpgen.NewSession(hcrpgen.Config{Seed: seed, Ticks: ticks, Players: players})
	id := uuid.NewSHA1(uuid.NameSpaceOID, []byte(name))
	o := s.Options()
	o.SegmentChunks = 3
	rec, err := hcrp.Create(root, id, o)
	if err != nil {
		t.Fatal(err)
	}
	return &pushSetFixture{root: root, dir: filepath.Join(root, id.String()), source: "gs1/hcrp/" + id.String(), id: id, s: s, rec: rec}
}

// commit records 100 more ticks and commits them (a segment, then the
// preamble); false when the session ended first (nothing committed).
func (f *pushSetFixture) commit(t *testing.T) bool {
	t.Helper()
	for range 100 {
		ok, err := f.s.Step(f.rec)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return false
		}
	}
	if err := f.rec.Flush(); err != nil {
		t.Fatal(err)
	}
	return true
}

// TestPushSetFollow: an HCRP segment set written on a game-server host
// commit by commit, as the recorder writes it (each commit a new
// segment-NNN.dat, then preamble.dat through a temporary file and a
// rename; "finished" at the end), is pushed by the agent to a real serve
// on 127.0.0.1 and ends one recording: serve is killed (SIGKILL) for 4 s
// mid-set and started again, the agent is killed (SIGKILL) and started
// again; the recording ends sealed, its file byte-identical to the
// set's stream and to a whole ingest's export of the finished
// directory, with the same event count; every source of the set ends
// sealed with its id, and the archive's mirror directory is gone.
func TestPushSetFollow(t *testing.T) {
	pushRetries(t, 250*time.Millisecond, 2*time.Second)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	c, n, url, tokens := pushArchive(t, ctx, map[string]string{"admin": "admin", "gs1": "pusher"})
	tokFile := pushTokenFile(t, tokens["gs1"])
	f := newPushSet(t, "pushset-follow", 11, 4800, 4)
	root, rec, id, setDir, setSource := f.root, f.rec, f.id, f.dir, f.source

	args := []string{"--json", "--follow", root, "--to", url, "--token-file", tokFile, "--host", "gs1", "--settle", "1m"}
	agents := []*pushAgent{startPushAgentProcess(t, ctx, args...)}
	defer stopAgents(t, &agents)

	// 48 commits of 100 ticks, one every 200 ms; serve is killed at
	// commit 6 and serves again 4 s later; the agent is killed at commit
	// 30 and started again.
	var restarted sync.WaitGroup
	began := time.Now()
	for commit := 0; f.commit(t); commit++ {
		switch commit {
		case 6:
			n.kill()
			t.Logf("commit %d (%v): the archive killed", commit, time.Since(began).Round(time.Millisecond))
			restarted.Go(func() {
				time.Sleep(4 * time.Second)
				n.start()
			})
		case 30:
			if !mnPoll(30*time.Second, func() bool { return len(agents[0].lines(t, "notice")) > 0 }) {
				t.Errorf("agent 1 did not see the archive answer again within 30 s")
			}
			agents[0].kill()
			t.Logf("commit %d (%v): the agent killed (SIGKILL) and started again", commit, time.Since(began).Round(time.Millisecond))
			agents = append(agents, startPushAgent(t, ctx, args...))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := rec.Close(); err != nil { // the last segment, preamble.dat, then finished
		t.Fatal(err)
	}
	finished := time.Now()
	restarted.Wait()
	if t.Failed() {
		t.FailNow()
	}

	// The set's every source ends sealed with the recording's id.
	ents, err := os.ReadDir(setDir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	var a wire.Push
	if !mnPoll(60*time.Second, func() bool {
		a, _ = pushSourceState(ctx, c, n, setSource+"/"+hcrp.FinishedFile)
		return a.State == "sealed"
	}) {
		t.Fatalf("the set's marker: %+v 60 s after the set was finished, want sealed", a)
	}
	t.Logf("sealed %v after finished was written (%d files in the set)", time.Since(finished).Round(time.Millisecond), len(names))
	if a.ID != id.String() {
		t.Errorf("the set is recording %s, want %s (its directory's name)", a.ID, id)
	}
	for _, name := range names {
		if st, code := pushSourceState(ctx, c, n, setSource+"/"+name); code != http.StatusOK || st.State != "sealed" || st.ID != id.String() {
			t.Errorf("%s: %d %+v, want sealed as %s", name, code, st, id)
		}
	}
	mirror := filepath.Join(n.dir, "push", "gs1", "hcrp", id.String())
	mnPoll(10*time.Second, func() bool { _, err := os.Stat(mirror); return err != nil })
	if left, err := os.ReadDir(mirror); err == nil {
		var names []string
		for _, e := range left {
			names = append(names, e.Name())
		}
		t.Errorf("the archive's mirror of the set is still there, holding %q", names)
	}

	// Byte-identical to the set's stream, the same events as a whole
	// ingest of the finished directory.
	set, err := hcrp.OpenSegmentSet(setDir)
	if err != nil {
		t.Fatal(err)
	}
	want, err := io.ReadAll(set)
	set.Close()
	if err != nil {
		t.Fatal(err)
	}
	resp, got, err := c.do(ctx, n, "GET", "/api/v1/recordings/"+id.String()+"/file", "", nil)
	if err != nil || resp.StatusCode != http.StatusOK || !bytes.Equal(got, want) {
		t.Errorf("the recording's file is not the set's stream (%v, %d of %d bytes)", err, len(got), len(want))
	}
	d2 := filepath.Join(t.TempDir(), "whole")
	if out, errs, code := mnCLI(ctx, d2, "ingest", setDir); code != 0 {
		t.Fatalf("whole ingest: exit %d\n%s%s", code, out, errs)
	}
	exported := filepath.Join(t.TempDir(), "whole.hcrp")
	if out, errs, code := mnCLI(ctx, d2, "export", id.String(), "-o", exported); code != 0 {
		t.Fatalf("export of the whole ingest: exit %d\n%s%s", code, out, errs)
	}
	if b, err := os.ReadFile(exported); err != nil || !bytes.Equal(b, got) {
		t.Errorf("the whole ingest's export is %d bytes, the pushed recording's %d: not byte-identical (%v)", len(b), len(got), err)
	}
	out, errs, code := mnCLI(ctx, d2, "show", "--json", id.String())
	var ref wire.Recording
	if code != 0 || json.Unmarshal([]byte(out), &ref) != nil {
		t.Fatalf("show in the whole-ingest archive: exit %d\n%s%s", code, out, errs)
	}
	pushed, status := c.show(ctx, n, id.String())
	if status != http.StatusOK || pushed.EventCount != ref.EventCount || ref.EventCount == 0 {
		t.Errorf("%d events pushed (status %d), %d ingested whole", pushed.EventCount, status, ref.EventCount)
	}
	t.Logf("%d bytes, %d events", len(got), pushed.EventCount)

	// The agent said it once: live, then sealed (or already archived).
	last := agents[len(agents)-1]
	mnPoll(5*time.Second, func() bool { return len(last.lines(t, "push")) >= 1 })
	if code := last.stop(t); code != 0 {
		t.Errorf("the agent's exit status: %d, want 0", code)
	}
	var outcomes []string
	for _, ag := range agents {
		for _, r := range ag.lines(t, "push") {
			outcomes = append(outcomes, fmt.Sprint(r["source"], " ", r["outcome"]))
		}
		for _, w := range ag.lines(t, "warning") {
			if msg := fmt.Sprint(w["message"]); strings.Contains(msg, "~2") {
				t.Errorf("a file of the set was sent anew: %s", msg)
			}
		}
	}
	if len(outcomes) != 1 || outcomes[0] != setSource+" sealed" {
		t.Errorf("the agents' outcomes: %q, want one: %s sealed", outcomes, setSource)
	}
}

// TestPushSetSpool: the archive is killed while an HCRP segment set is
// being written; the agent spools what the archive lacks of it (the new
// segments' bytes, the header and the marker whole), and the game
// server deletes the finished set's directory before the archive is
// back. When it serves again the set is sent from the spool alone and
// ends one sealed recording, byte-identical to the set's stream; the
// spool is then empty.
func TestPushSetSpool(t *testing.T) {
	pushRetries(t, 250*time.Millisecond, time.Second)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	c, n, url, tokens := pushArchive(t, ctx, map[string]string{"admin": "admin", "gs1": "pusher"})
	tokFile := pushTokenFile(t, tokens["gs1"])
	spoolDir := filepath.Join(t.TempDir(), "spool")
	f := newPushSet(t, "pushset-spool", 12, 1200, 3)
	root, rec, id, setDir, setSource := f.root, f.rec, f.id, f.dir, f.source
	args := []string{"--json", "--follow", root, "--to", url, "--token-file", tokFile, "--host", "gs1", "--settle", "1m",
		"--spool", spoolDir}
	agents := []*pushAgent{startPushAgent(t, ctx, args...)}
	defer stopAgents(t, &agents)

	commit := func() bool { return f.commit(t) }
	// The archive takes the first commits live, then goes.
	for range 3 {
		commit()
	}
	if !mnPoll(20*time.Second, func() bool {
		a, _ := pushSourceState(ctx, c, n, setSource+"/"+hcrp.PreambleFile)
		return a.State == "live"
	}) {
		t.Fatal("the set is not live on the archive 20 s after its first commits")
	}
	n.kill()
	for commit() {
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	marker := setSource + "/" + hcrp.FinishedFile
	if !mnPoll(30*time.Second, func() bool {
		recs := pushSpoolRecords(t, spoolDir)
		e, ok := recs[marker]
		return ok && e.Set == setSource && recs[setSource+"/"+hcrp.PreambleFile].Whole
	}) {
		t.Fatalf("the set's header and marker are not spooled 30 s after it finished: %+v", pushSpoolRecords(t, spoolDir))
	}
	set, err := hcrp.OpenSegmentSet(setDir)
	if err != nil {
		t.Fatal(err)
	}
	want, err := io.ReadAll(set)
	set.Close()
	if err != nil {
		t.Fatal(err)
	}
	// The game server deletes the set; then the archive serves again.
	if err := os.RemoveAll(setDir); err != nil {
		t.Fatal(err)
	}
	n.start()
	var a wire.Push
	if !mnPoll(60*time.Second, func() bool {
		a, _ = pushSourceState(ctx, c, n, marker)
		return a.State == "sealed"
	}) {
		for src, e := range pushSpoolRecords(t, spoolDir) {
			st, _ := pushSourceState(ctx, c, n, src)
			t.Logf("spooled %s: base %d length %d whole %v; the archive: %+v", src, e.Base, e.Length, e.Whole, st)
		}
		t.Fatalf("the set's marker: %+v 60 s after the archive returned, want sealed", a)
	}
	if a.ID != id.String() {
		t.Errorf("the set is recording %s, want %s", a.ID, id)
	}
	resp, got, err := c.do(ctx, n, "GET", "/api/v1/recordings/"+id.String()+"/file", "", nil)
	if err != nil || resp.StatusCode != http.StatusOK || !bytes.Equal(got, want) {
		t.Errorf("the recording's file is not the set's stream (%v, %d of %d bytes)", err, len(got), len(want))
	}
	if !mnPoll(10*time.Second, func() bool { return len(pushSpoolRecords(t, spoolDir)) == 0 }) {
		t.Errorf("the spool after the set was sealed: %+v", pushSpoolRecords(t, spoolDir))
	}
	// The agent said it once: sealed.
	mnPoll(5*time.Second, func() bool { return len(agents[0].lines(t, "push")) >= 1 })
	var outcomes []string
	for _, r := range agents[0].lines(t, "push") {
		outcomes = append(outcomes, fmt.Sprint(r["source"], " ", r["outcome"]))
	}
	if len(outcomes) != 1 || outcomes[0] != setSource+" sealed" {
		t.Errorf("the agent's outcomes: %q, want one: %s sealed", outcomes, setSource)
	}
}
