package ingest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/formatstest"
)

func TestRunMixedInputs(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("a/one.bin", formatstest.LinesFile("s1", 30))
	write("a/b/two.bin", formatstest.LinesFile("s2", 30))
	write("a/notes.md", []byte("# not a replay\n"))
	broken := write("broken.bin", []byte("LINES s3\n1 a\n0 backwards\n"))
	unknown := write("unknown.bin", []byte("hello"))

	a, err := archive.Open(filepath.Join(dir, "archive"), archive.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	p := &Pipeline{Archive: a, Codecs: []formats.Codec{formatstest.Lines{}}, GroupFiles: 2}
	got := map[string]FileResult{}
	run := func(paths ...string) {
		err := p.Run(context.Background(), paths, func(r FileResult) { got[filepath.Base(r.Path)] = r })
		if err != nil {
			t.Fatal(err)
		}
	}
	run(filepath.Join(dir, "a"), broken, unknown)
	want := map[string]Outcome{
		"one.bin": OutcomeIngested, "two.bin": OutcomeIngested, "notes.md": OutcomeSkipped,
		"broken.bin": OutcomeFailed, "unknown.bin": OutcomeFailed,
	}
	for name, outcome := range want {
		if got[name].Outcome != outcome {
			t.Errorf("%s: outcome %q (%s), want %q", name, got[name].Outcome, got[name].Err, outcome)
		}
	}
	if e := got["broken.bin"].Err; !strings.Contains(e, "broken.bin") || !strings.Contains(e, "byte offset 13") {
		t.Errorf("broken.bin error %q should name the file and the offset", e)
	}
	// Nothing of the broken file reached the archive.
	rep, err := a.Check(context.Background(), archive.CheckOptions{})
	if err != nil || !rep.OK() || rep.Recordings != 2 {
		t.Fatalf("check: %+v %v", rep, err)
	}
	// Again: already archived, same ids.
	first := got["one.bin"].ID
	got = map[string]FileResult{}
	run(good)
	if r := got["one.bin"]; r.Outcome != OutcomeDup || r.ID != first {
		t.Errorf("re-ingest: %+v", r)
	}
}

func TestDetectBytes(t *testing.T) {
	codecs := []formats.Codec{formatstest.Lines{}}
	if c, err := DetectBytes(codecs, []byte("LINES x\n")); err != nil || c.Name() != "lines" {
		t.Errorf("DetectBytes: %v %v", c, err)
	}
	if _, err := DetectBytes(codecs, []byte("nope")); err != ErrUnknownFormat {
		t.Errorf("unknown: %v", err)
	}
	if _, err := DetectBytes(codecs, nil); err == nil {
		t.Error("empty accepted")
	}
}

// A file is hashed before its parse only when an archived source has its
// size; either way a duplicate is found and a file of the same size but
// other bytes is ingested.
func TestSameSizeOtherBytes(t *testing.T) {
	dir := t.TempDir()
	files := map[string][]byte{"a": formatstest.LinesFile("a", 30), "b": formatstest.LinesFile("b", 30), "c": formatstest.LinesFile("c", 31)}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if len(files["a"]) != len(files["b"]) || len(files["a"]) == len(files["c"]) {
		t.Fatalf("sizes %d %d %d: want a and b alike, c apart", len(files["a"]), len(files["b"]), len(files["c"]))
	}
	p := &Pipeline{Archive: newArchive(t), Codecs: []formats.Codec{formatstest.Lines{}}}
	path := func(name string) string { return filepath.Join(dir, name) }
	first := runAll(t, p, path("a"))["a"]
	if first.Outcome != OutcomeIngested {
		t.Fatalf("a: %+v", first)
	}
	for _, step := range []struct {
		name string
		want Outcome
	}{{"b", OutcomeIngested}, {"c", OutcomeIngested}, {"a", OutcomeDup}, {"b", OutcomeDup}, {"c", OutcomeDup}} {
		if got := runAll(t, p, path(step.name))[step.name]; got.Outcome != step.want || got.NativeBytes != int64(len(files[step.name])) {
			t.Errorf("%s again: %v, %d bytes; want %v, %d", step.name, got.Outcome, got.NativeBytes, step.want, len(files[step.name]))
		}
	}
}

// TestGroupsCommitBehind ingests files in groups of two, each committed
// while the next is read: every input is reported once, in input order;
// a file that repeats one of the group being committed is a duplicate of
// it; and a run cancelled mid-way leaves every reported recording
// committed and nothing else behind.
func TestGroupsCommitBehind(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for i := range 9 {
		name := fmt.Sprintf("f%d.bin", i)
		body := formatstest.LinesFile(fmt.Sprintf("s%d", i), 40)
		if i == 3 {
			body = formatstest.LinesFile("s1", 40) // the same bytes as f1
		}
		paths = append(paths, filepath.Join(dir, name))
		if err := os.WriteFile(paths[i], body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	a, err := archive.Open(filepath.Join(dir, "archive"), archive.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	p := &Pipeline{Archive: a, Codecs: []formats.Codec{formatstest.Lines{}}, GroupFiles: 2}
	var got []FileResult
	if err := p.Run(context.Background(), paths, func(r FileResult) { got = append(got, r) }); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(paths) {
		t.Fatalf("%d reports for %d inputs", len(got), len(paths))
	}
	for i, r := range got {
		if r.Path != paths[i] {
			t.Fatalf("report %d is of %s, want %s: reports out of input order", i, r.Path, paths[i])
		}
		want := OutcomeIngested
		if i == 3 {
			want = OutcomeDup
		}
		if r.Outcome != want {
			t.Errorf("%s: %s (%s), want %s", r.Path, r.Outcome, r.Err, want)
		}
	}
	if got[3].ID != got[1].ID {
		t.Errorf("f3 is a duplicate of %s, want f1's %s", got[3].ID, got[1].ID)
	}

	// Cancelled after the fifth report: what was reported is archived,
	// and the archive checks clean (no chunks of an uncommitted group).
	b, err := archive.Open(filepath.Join(dir, "second"), archive.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p.Archive = b
	var reported []FileResult
	err = p.Run(ctx, paths, func(r FileResult) {
		if reported = append(reported, r); len(reported) == 5 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled run: %v", err)
	}
	ingested := 0
	for _, r := range reported {
		if r.Outcome == OutcomeIngested {
			ingested++
			if _, err := b.Manifest(r.ID); err != nil {
				t.Errorf("%s reported %s, but: %v", r.Path, r.Outcome, err)
			}
		}
	}
	rep, err := b.Check(context.Background(), archive.CheckOptions{})
	if err != nil || !rep.OK() || rep.Orphans != 0 || rep.Recordings != ingested {
		t.Fatalf("check after a cancelled run: %+v %v; %d reported ingested", rep, err, ingested)
	}

	// Cancelled once the last file is read: the last group's commit
	// starts under a cancelled context. Its recordings are not reported,
	// nor archived, nor left behind.
	c, err := archive.Open(filepath.Join(dir, "third"), archive.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	p.Archive = c
	p.Progress = func(pr Progress) {
		if pr.Done == len(paths) && pr.Current == "" {
			cancel()
		}
	}
	reported = nil
	err = p.Run(ctx, paths, func(r FileResult) { reported = append(reported, r) })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("run cancelled after its last file: %v", err)
	}
	if len(reported) != len(paths)-1 {
		t.Errorf("%d reports, want the %d of the groups before the last", len(reported), len(paths)-1)
	}
	rep, err = c.Check(context.Background(), archive.CheckOptions{})
	if err != nil || !rep.OK() || rep.Orphans != 0 || rep.Recordings != len(paths)-2 {
		t.Fatalf("check after a run cancelled after its last file: %+v %v; want the %d distinct recordings reported", rep, err, len(paths)-2)
	}
}
