package ingest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/replayarchive/replay/formats/all"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
)

// TestProgressDuringInput checks that a long input reports progress while
// it is read, not only once done: Progress names it and counts the bytes
// read of it every progressStep. A file of a size no archived file has is
// read once, by the split.
func TestProgressDuringInput(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.teehistorian")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	err = teehistoriangen.Generate(f, teehistoriangen.Options{Duration: 60 * time.Minute, Players: 16, Seed: 4})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(path)
	size := st.Size()
	if size < progressStep {
		t.Fatalf("the file has %d bytes, want more than %d", size, progressStep)
	}
	var calls []Progress
	p := &Pipeline{Archive: newArchive(t), Codecs: all.Codecs(), Progress: func(pr Progress) { calls = append(calls, pr) }}
	if err := p.Run(context.Background(), []string{path}, func(FileResult) {}); err != nil {
		t.Fatal(err)
	}
	var during int
	var last int64
	for _, pr := range calls {
		if pr.Current == "" {
			continue
		}
		if pr.Current != path || pr.Done != 0 || pr.CurrentRead < last || pr.CurrentRead > size {
			t.Fatalf("progress during the input: %+v (file of %d bytes)", pr, size)
		}
		if pr.CurrentRead > 0 {
			during++
		}
		last = pr.CurrentRead
	}
	// Read once: a report every progressStep.
	if want := int(size / progressStep); during < want || want < 2 {
		t.Errorf("%d progress reports while reading %d bytes, want at least %d (and 2)", during, size, want)
	}
	if end := calls[len(calls)-1]; end.Done != 1 || end.Current != "" || end.BytesDone != size {
		t.Errorf("last progress %+v", end)
	}
}
