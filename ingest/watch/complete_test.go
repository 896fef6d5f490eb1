package watch

import (
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/uuid"

	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/hcrp"
	"github.com/replayarchive/replay/formats/teehistorian"
	"github.com/replayarchive/replay/internal/gen/hcrpgen"
)

// TestCodecComplete: a file is complete only when its codec is a
// formats.Completer that says so (also through compression); a file of a
// codec without one (a compacted HCRP file) never is, and waits for
// Options.Settle; a segment set is complete when its formats.DirCompleter
// says so.
func TestCodecComplete(t *testing.T) {
	dir := t.TempDir()
	codecs := []formats.Codec{teehistorian.New(), hcrp.New()}
	complete := CodecComplete(codecs)
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	finished, _ := game(t, 1, false)
	unfinished, _ := game(t, 2, true)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(finished)
	zw.Close()
	compacted, err := hcrpgen.Generate(hcrpgen.Config{Seed: 1, Ticks: 40}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sess := hcrpgen.NewSession(hcrpgen.Config{Seed: 2, Ticks: 40})
	rec, err := hcrp.Create(dir, uuid.New(), sess.Options())
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		if ok, err := sess.Step(rec); err != nil || !ok {
			t.Fatalf("step: %v %v", ok, err)
		}
	}
	if err := rec.Flush(); err != nil {
		t.Fatal(err)
	}
	setDir := ""
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() {
			setDir = filepath.Join(dir, e.Name())
		}
	}
	segment := filepath.Join(setDir, "preamble.dat")

	tests := []struct {
		name string
		path string
		want bool
	}{
		{"finished teehistorian", write("a.teehistorian", finished), true},
		{"teehistorian without FINISH", write("b.teehistorian", unfinished), false},
		{"teehistorian cut in a record", write("c.teehistorian", finished[:len(finished)-3]), false},
		{"gzipped finished teehistorian", write("d.teehistorian.gz", gz.Bytes()), true},
		{"compacted HCRP (no Completer)", write("e.hcrp", compacted), false},
		{"open segment set", segment, false},
	}
	for _, tt := range tests {
		got, err := complete(context.Background(), tt.path)
		if err != nil || got != tt.want {
			t.Errorf("%s: complete = %v, %v; want %v", tt.name, got, err, tt.want)
		}
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	if got, err := complete(context.Background(), segment); err != nil || !got {
		t.Errorf("finished segment set: complete = %v, %v; want true", got, err)
	}
}
