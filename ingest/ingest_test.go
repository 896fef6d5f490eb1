package ingest

import (
	"context"
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
