package ingest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/formatstest"
	"github.com/replayarchive/replay/formats/hcrp"
	"github.com/replayarchive/replay/formats/teehistorian"
	"github.com/replayarchive/replay/internal/gen/hcrpgen"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
)

// Hostile input, as an attacker who can drop files into an ingested
// directory would try it: each attempt ends with a clear outcome and the
// archive exactly as it was.

// liveHCRP adds live recording directories to the HCRP codec, as the
// codec registry does.
type liveHCRP struct{ hcrp.Codec }

func (liveHCRP) IsDirInput(dir string) bool { return hcrp.IsSegmentSet(dir) }

func (liveHCRP) OpenDir(dir string) (io.ReadCloser, error) { return hcrp.OpenSegmentSet(dir) }

func (c liveHCRP) SplitDir(ctx context.Context, dir string, w formats.Writer) (*formats.Metadata, error) {
	return c.Codec.SplitSegmentSet(ctx, dir, w)
}

func hostileCodecs() []formats.Codec {
	return []formats.Codec{teehistorian.New(), liveHCRP{}, formatstest.Lines{}}
}

// archiveState is everything a hostile input must leave alone: every
// manifest as stored, the chunks Check finds, and the takedowns.
func archiveState(t *testing.T, a *archive.Archive) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	err := a.List(ctx, func(m *archive.Manifest) error {
		return json.NewEncoder(&b).Encode(m)
	})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := a.Check(ctx, archive.CheckOptions{ReadData: true})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("check: %+v", rep)
	}
	json.NewEncoder(&b).Encode(map[string]int{"recordings": rep.Recordings, "chunks": rep.Chunks, "orphans": rep.Orphans})
	tds, err := a.Takedowns()
	if err != nil {
		t.Fatal(err)
	}
	json.NewEncoder(&b).Encode(tds)
	return b.String()
}

// runAll ingests paths and returns the results by base name.
func runAll(t *testing.T, p *Pipeline, paths ...string) map[string]FileResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got := map[string]FileResult{}
	if err := p.Run(ctx, paths, func(r FileResult) { got[filepath.Base(r.Path)] = r }); err != nil {
		t.Fatal(err)
	}
	return got
}

func newArchive(t *testing.T) *archive.Archive {
	t.Helper()
	a, err := archive.Open(filepath.Join(t.TempDir(), "archive"), archive.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// writeTeehistorian writes a short generated game and returns its path.
func writeTeehistorian(t *testing.T, dir string, seed uint64) string {
	t.Helper()
	buf := teehistoriangen.Must(t, teehistoriangen.Options{Duration: 20 * time.Second, Players: 4, Seed: seed})
	path := filepath.Join(dir, "game.teehistorian")
	if err := os.WriteFile(path, buf, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// liveDir records ticks of a generated HCRP session into root/<id>/ and
// returns the directory, the recorder and its session (to record more).
func liveDir(t *testing.T, root string, id uuid.UUID, cfg hcrpgen.Config, ticks int) (string, *hcrp.Recorder, *hcrpgen.Session) {
	t.Helper()
	sess := hcrpgen.NewSession(cfg)
	opts := sess.Options()
	opts.SegmentChunks = 5
	rec, err := hcrp.Create(root, id, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rec.Close() })
	step(t, rec, sess, ticks)
	return filepath.Join(root, id.String()), rec, sess
}

func step(t *testing.T, rec *hcrp.Recorder, sess *hcrpgen.Session, ticks int) {
	t.Helper()
	for range ticks {
		if ok, err := sess.Step(rec); err != nil || !ok {
			t.Fatalf("step: %v %v", ok, err)
		}
	}
	if err := rec.Flush(); err != nil {
		t.Fatal(err)
	}
}

// The hijack: a live HCRP directory named with the id of a held
// teehistorian recording. It used to replace it (bytes gone, hold carried
// over, check ok); now it is refused and the recording is untouched.
func TestHostileDirectoryHijack(t *testing.T) {
	a := newArchive(t)
	p := &Pipeline{Archive: a, Codecs: hostileCodecs()}
	victim := runAll(t, p, writeTeehistorian(t, t.TempDir(), 1))["game.teehistorian"]
	if victim.Outcome != OutcomeIngested {
		t.Fatalf("victim: %+v", victim)
	}
	before, err := a.Manifest(victim.ID)
	if err != nil {
		t.Fatal(err)
	}

	hijack := func(t *testing.T, want string) {
		t.Helper()
		dir, _, _ := liveDir(t, t.TempDir(), victim.ID, hcrpgen.Config{Seed: 3, Ticks: 400}, 300)
		state := archiveState(t, a)
		r := runAll(t, p, dir)[victim.ID.String()]
		var re *archive.ReplaceError
		if r.Outcome != OutcomeRefused || !errors.As(r.Cause, &re) || re.ID != victim.ID || !strings.Contains(r.Err, want) {
			t.Fatalf("hijack: %s %q (cause %v), want refused saying %q", r.Outcome, r.Err, r.Cause, want)
		}
		if r.ID != victim.ID || !strings.Contains(r.Err, dir) {
			t.Errorf("result %+v should pair the directory with the id it named", r)
		}
		if after := archiveState(t, a); after != state {
			t.Fatalf("the archive changed:\n%s\nbecame\n%s", state, after)
		}
		m, err := a.Manifest(victim.ID)
		if err != nil || m.SHA256 != before.SHA256 || m.Format != "teehistorian" {
			t.Fatalf("victim now %+v %v", m, err)
		}
	}
	t.Run("held", func(t *testing.T) {
		if _, err := a.SetHold(victim.ID, "evidence in ban appeal"); err != nil {
			t.Fatal(err)
		}
		hijack(t, "held (evidence in ban appeal)")
		if _, err := a.Release(victim.ID); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("other format", func(t *testing.T) {
		hijack(t, "it is a teehistorian recording, the input is hcrp")
	})
}

// A live HCRP recording grows in place, but only by its own
// continuation: a directory of another world, or of the same world with
// other bytes, naming the same id does not extend it (a warning, nothing
// changed) and, ingested whole, becomes a recording of its own; a held
// recording is not extended.
func TestHostileLiveReplace(t *testing.T) {
	a := newArchive(t)
	p := &Pipeline{Archive: a, Codecs: hostileCodecs()}
	ctx := context.Background()
	id := uuid.MustParse("0b9f6c1e-5b7a-4c8e-9a1d-2f3e4d5c6b7a")
	dir, rec, sess := liveDir(t, t.TempDir(), id, hcrpgen.Config{Seed: 7, Ticks: 3000}, 1000)
	if g, err := p.Grow(ctx, dir, false); err != nil || g.Action != GrowStarted || g.ID != id {
		t.Fatalf("first grow: %+v %v", g, err)
	}

	refused := func(name string, cfg hcrpgen.Config, want string) {
		t.Run(name, func(t *testing.T) {
			other, _, _ := liveDir(t, t.TempDir(), id, cfg, 1500)
			state := archiveState(t, a)
			g, err := p.Grow(ctx, other, false)
			if err != nil || g.Action != GrowNotLive || !g.Warn || !strings.Contains(g.Why, want) {
				t.Fatalf("got %+v %v, want not live saying %q", g, err, want)
			}
			if after := archiveState(t, a); after != state {
				t.Fatalf("the archive changed:\n%s\nbecame\n%s", state, after)
			}
			r := runAll(t, p, other)[id.String()]
			if r.Outcome != OutcomeIngested || r.ID == id || !strings.Contains(r.Note, "live recording "+id.String()) {
				t.Fatalf("whole ingest: %+v, want a recording of its own", r)
			}
			if m, err := a.Manifest(id); err != nil || !m.Live || m.Meta.Ticks != 1000 {
				t.Fatalf("the live recording is now %+v %v", m, err)
			}
		})
	}
	refused("other world", hcrpgen.Config{Seed: 7, Ticks: 3000, WorldID: uuid.New()}, "names another recording")
	refused("same world, other bytes", hcrpgen.Config{Seed: 8, Ticks: 3000}, "names another recording")

	// A held recording is not extended.
	step(t, rec, sess, 500)
	if _, err := a.SetHold(id, "case 9"); err != nil {
		t.Fatal(err)
	}
	state := archiveState(t, a)
	if g, err := p.Grow(ctx, dir, false); err != nil || g.Action != GrowNotLive || !strings.Contains(g.Why, "held (case 9)") {
		t.Fatalf("held: %+v %v", g, err)
	}
	if after := archiveState(t, a); after != state {
		t.Fatalf("the archive changed:\n%s\nbecame\n%s", state, after)
	}
	if _, err := a.Release(id); err != nil {
		t.Fatal(err)
	}

	// The real continuation extends it, flags and all.
	if _, err := a.SetFlag(id, "review", "watch this one"); err != nil {
		t.Fatal(err)
	}
	step(t, rec, sess, 500)
	if g, err := p.Grow(ctx, dir, false); err != nil || g.Action != GrowGrew || g.ID != id {
		t.Fatalf("grown: %+v %v", g, err)
	}
	m, err := a.Manifest(id)
	if err != nil || len(m.Flags) != 1 || m.Meta.Ticks != 2000 || !m.Live {
		t.Fatalf("after the grow: %+v %v", m, err)
	}
	rep, err := a.Check(ctx, archive.CheckOptions{ReadData: true})
	if err != nil || !rep.OK() || rep.Recordings != 3 {
		t.Fatalf("check: %+v %v", rep, err)
	}
}

// Two links to "." made ingest run forever, memory growing; now each is
// reported as a loop and the walk ends.
func TestHostileSymlinkLoops(t *testing.T) {
	a := newArchive(t)
	p := &Pipeline{Archive: a, Codecs: hostileCodecs()}
	dir := t.TempDir()
	for _, name := range []string{"a", "b"} {
		if err := os.Symlink(".", filepath.Join(dir, name)); err != nil {
			t.Skipf("no symbolic links here: %v", err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("..", filepath.Join(dir, "sub", "up")); err != nil {
		t.Fatal(err)
	}
	state := archiveState(t, a)
	got := runAll(t, p, dir)
	for _, name := range []string{"a", "b", "up"} {
		if r := got[name]; r.Outcome != OutcomeSkipped || !strings.Contains(r.Err, "symbolic link loop") {
			t.Errorf("%s: %s %q, want skipped as a loop", name, r.Outcome, r.Err)
		}
	}
	if after := archiveState(t, a); after != state {
		t.Fatalf("the archive changed:\n%s\nbecame\n%s", state, after)
	}

	// With a recording inside, it is ingested once, not once per path.
	writeTeehistorian(t, dir, 2)
	n := 0
	ctx := context.Background()
	if err := p.Run(ctx, []string{dir}, func(r FileResult) {
		if r.Outcome == OutcomeIngested || r.Outcome == OutcomeDup {
			n++
		}
	}); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("the recording was reached %d times", n)
	}
}

// A link out of the tree is not followed unless the pipeline is told to.
func TestHostileSymlinkOutOfTree(t *testing.T) {
	a := newArchive(t)
	p := &Pipeline{Archive: a, Codecs: hostileCodecs()}
	outside := t.TempDir()
	writeTeehistorian(t, outside, 3)
	dir := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "elsewhere")); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}
	if err := os.Symlink(filepath.Join(outside, "game.teehistorian"), filepath.Join(dir, "file")); err != nil {
		t.Fatal(err)
	}
	state := archiveState(t, a)
	got := runAll(t, p, dir)
	for _, name := range []string{"elsewhere", "file"} {
		if r := got[name]; r.Outcome != OutcomeSkipped || !strings.Contains(r.Err, "leads out of") {
			t.Errorf("%s: %s %q, want skipped as leading out of the tree", name, r.Outcome, r.Err)
		}
	}
	if after := archiveState(t, a); after != state {
		t.Fatalf("the archive changed:\n%s\nbecame\n%s", state, after)
	}
	p.FollowOutside = true
	if r := runAll(t, p, dir)["game.teehistorian"]; r.Outcome != OutcomeIngested {
		t.Fatalf("with FollowOutside: %+v", r)
	}
}

// A taken-down file comes back neither through a directory re-scan nor
// through standard input, until an admin lifts the takedown.
func TestHostileTakenDownReingest(t *testing.T) {
	a := newArchive(t)
	p := &Pipeline{Archive: a, Codecs: hostileCodecs()}
	path := writeTeehistorian(t, t.TempDir(), 4)
	first := runAll(t, p, path)["game.teehistorian"]
	if first.Outcome != OutcomeIngested {
		t.Fatalf("ingest: %+v", first)
	}
	if _, err := a.TakeDown(context.Background(), first.ID, archive.DeleteOptions{By: "mod-anna", Reason: "doxxing in chat"}); err != nil {
		t.Fatal(err)
	}
	state := archiveState(t, a)
	check := func(r FileResult) {
		t.Helper()
		var td *archive.TakenDownError
		if r.Outcome != OutcomeTakenDown || !errors.As(r.Cause, &td) || td.Takedown.By != "mod-anna" || r.ID != first.ID {
			t.Fatalf("re-ingest: %s %q (%v), want taken down", r.Outcome, r.Err, r.Cause)
		}
		for _, want := range []string{"mod-anna", "doxxing in chat", first.ID.String()} {
			if !strings.Contains(r.Err, want) {
				t.Errorf("error %q does not say %q", r.Err, want)
			}
		}
		if after := archiveState(t, a); after != state {
			t.Fatalf("the archive changed:\n%s\nbecame\n%s", state, after)
		}
	}
	check(runAll(t, p, filepath.Dir(path))["game.teehistorian"])
	// Standard input is hashed by the split: the commit refuses it.
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p.Stdin = bytes.NewReader(raw)
	check(runAll(t, p, "-")["-"])

	sum := sha256.Sum256(raw)
	if _, err := a.LiftTakedown(t.Context(), hex.EncodeToString(sum[:])); err != nil {
		t.Fatal(err)
	}
	if r := runAll(t, p, path)["game.teehistorian"]; r.Outcome != OutcomeIngested || r.ID != first.ID {
		t.Fatalf("after the lift: %+v", r)
	}
}

// A recording older than the stored policy's max age is not archived: a
// re-scan of a server directory does not bring pruned games back.
func TestHostileExpiredByPolicy(t *testing.T) {
	a := newArchive(t)
	p := &Pipeline{Archive: a, Codecs: hostileCodecs()}
	if err := a.SetPolicy(&archive.Policy{MaxAge: 30 * 24 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	old := time.Now().Add(-60 * 24 * time.Hour)
	if err := teehistoriangen.Generate(&buf, teehistoriangen.Options{Duration: 10 * time.Second, Players: 2, Seed: 5, Start: old}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "old.teehistorian")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	state := archiveState(t, a)
	r := runAll(t, p, path)["old.teehistorian"]
	if r.Outcome != OutcomeExpired || r.ID == uuid.Nil || !strings.Contains(r.Note, "older than the retention policy") {
		t.Fatalf("got %+v, want expired", r)
	}
	if after := archiveState(t, a); after != state {
		t.Fatalf("the archive changed:\n%s\nbecame\n%s", state, after)
	}
}

// Standard input is read in one pass; what it holds is detected from its
// first bytes, and a stream with bytes after the recording fails.
func TestStdin(t *testing.T) {
	a := newArchive(t)
	file := formatstest.LinesFile("stdin-session", 40)
	p := &Pipeline{Archive: a, Codecs: hostileCodecs(), Stdin: bytes.NewReader(file)}
	r := runAll(t, p, "-")["-"]
	if r.Outcome != OutcomeIngested || r.Format != "lines" || r.NativeBytes != int64(len(file)) {
		t.Fatalf("stdin: %+v", r)
	}
	m, err := a.Manifest(r.ID)
	if err != nil || m.SourceName != "stdin" {
		t.Fatalf("manifest: %+v %v", m, err)
	}
	p.Stdin = bytes.NewReader(file)
	if again := runAll(t, p, "-")["-"]; again.Outcome != OutcomeDup || again.ID != r.ID {
		t.Fatalf("again: %+v", again)
	}
	p.Stdin = strings.NewReader("nothing we know")
	if bad := runAll(t, p, "-")["-"]; bad.Outcome != OutcomeFailed || !strings.Contains(bad.Err, "unknown format") {
		t.Fatalf("unknown: %+v", bad)
	}
	p.Stdin = nil
	if none := runAll(t, p, "-")["-"]; none.Outcome != OutcomeFailed || !strings.Contains(none.Err, "standard input") {
		t.Fatalf("no stdin: %+v", none)
	}
}

// Outcomes keep their words in JSON, both ways.
func TestOutcomeJSON(t *testing.T) {
	words := map[Outcome]string{OutcomeIngested: "ingested", OutcomeDup: "already archived", OutcomeReplaced: "replaced",
		OutcomeFailed: "failed", OutcomeSkipped: "skipped", OutcomeTakenDown: "taken down", OutcomeRefused: "refused", OutcomeExpired: "expired"}
	for o, w := range words {
		b, err := json.Marshal(FileResult{Outcome: o})
		if err != nil || !strings.Contains(string(b), `"outcome":"`+w+`"`) {
			t.Errorf("%v: %s %v", o, b, err)
		}
		var back FileResult
		if err := json.Unmarshal(b, &back); err != nil || back.Outcome != o {
			t.Errorf("%s: back %v %v", b, back.Outcome, err)
		}
	}
	if _, err := json.Marshal(FileResult{Outcome: 99}); err == nil {
		t.Error("an unknown outcome marshalled")
	}
}

// A live HCRP set whose files turn bad while it grows (a preamble cut
// short, an index naming a segment that is not there, a truncated
// segment, a new chunk that is not zstd) stops growing with a clear error
// or warning naming the file; the archive is left as it was.
func TestHostileLiveDirDamage(t *testing.T) {
	ctx := context.Background()
	damage := map[string]func(t *testing.T, dir string){
		"preamble cut short": func(t *testing.T, dir string) {
			truncate(t, filepath.Join(dir, hcrp.PreambleFile), 100)
		},
		"segment missing": func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, hcrp.SegmentName(segments(t, dir)-1))); err != nil {
				t.Fatal(err)
			}
		},
		"new segment truncated": func(t *testing.T, dir string) {
			truncate(t, filepath.Join(dir, hcrp.SegmentName(segments(t, dir)-1)), 10)
		},
		"new chunk not zstd": func(t *testing.T, dir string) {
			p := filepath.Join(dir, hcrp.SegmentName(segments(t, dir)-1))
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			copy(b, "not a zstd frame")
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		},
	}
	for name, spoil := range damage {
		t.Run(name, func(t *testing.T) {
			a := newArchive(t)
			p := &Pipeline{Archive: a, Codecs: hostileCodecs()}
			id := uuid.New()
			dir, rec, sess := liveDir(t, t.TempDir(), id, hcrpgen.Config{Seed: 5, Ticks: 2000}, 600)
			if g, err := p.Grow(ctx, dir, false); err != nil || g.Action != GrowStarted {
				t.Fatalf("start: %+v %v", g, err)
			}
			step(t, rec, sess, 600)
			spoil(t, dir)
			state := archiveState(t, a)
			for _, final := range []bool{false, true} {
				g, err := p.Grow(ctx, dir, final)
				if err == nil && g.Action != GrowNotLive {
					t.Fatalf("final=%v: %+v, want an error or not live", final, g)
				}
				msg := ""
				if err != nil {
					msg = err.Error()
				} else {
					msg = g.Why
				}
				if !strings.Contains(msg, "hcrp") || !strings.Contains(msg, ".dat") {
					t.Errorf("final=%v: %q names neither the format nor the file", final, msg)
				}
			}
			if after := archiveState(t, a); after != state {
				t.Fatalf("the archive changed:\n%s\nbecame\n%s", state, after)
			}
		})
	}
}

func truncate(t *testing.T, path string, size int64) {
	t.Helper()
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}
}
