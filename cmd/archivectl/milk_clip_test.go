package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/replayarchive/replay/formats/butter"
	"github.com/replayarchive/replay/formats/formatstest"
)

// TestMilkClipByOffset: the corpus .milk capture is 18.244 s at 45 Hz, so
// a clip from 1m is refused naming the end (it wrote ticks 810..810 and
// exited 0 when .milk recordings had no times), and a clip by offsets
// inside it holds the samples of those seconds.
func TestMilkClipByOffset(t *testing.T) {
	corpus := formatstest.CorpusDir(t, "butter")
	c := newCLI(t)
	got := strings.Fields(c.ok("ingest", filepath.Join(corpus, "example.milk")))
	if len(got) < 2 || got[0] != "ingested" {
		t.Fatalf("ingest said %q", got)
	}
	id := got[1]
	out := filepath.Join(t.TempDir(), "clip.milk")
	_, errs, code := c.run("export", id, "--from", "1m", "--to", "2m", "-o", out)
	if code == 0 || !strings.Contains(errs, "past the recording's end (18.244s") {
		t.Errorf("export --from 1m --to 2m of an 18 s recording: exit %d, %q; want a refusal naming the end", code, errs)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("the refused export wrote %s", out)
	}
	_, errs, code = c.run("export", id, "--from", "2s", "--to", "4s", "-o", out)
	if code != 0 || !strings.Contains(errs, "ticks 90..180") {
		t.Fatalf("export --from 2s --to 4s: exit %d, %q; want ticks 90..180", code, errs)
	}
	clip, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	m := formatstest.Split(t, butter.NewMilk(), clip).Metadata
	if m.Ticks != 91 || m.TickRate != 45 {
		t.Errorf("the clip has %d ticks at %v/s, want 91 at 45/s", m.Ticks, m.TickRate)
	}
}
