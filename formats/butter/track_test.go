package butter

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/formatstest"
)

// TestTrack: each codec of the family places every player by body (else
// head) and the disc, players named and in their teams.
func TestTrack(t *testing.T) {
	dir := corpusDir(t)
	read := func(p string) []byte {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	echo := readZst(t, filepath.Join(dir, "reference", "input", "milk_2020-09-07.echoreplay.zst"))
	tests := []struct {
		name  string
		codec interface {
			formats.Codec
			formats.Tracker
		}
		file []byte
		r    formats.Range
	}{
		{"butter", New(), read(filepath.Join(dir, "reference", "butter", "milk_2020-09-07.zstd_22.k300.butter")), formats.Ticks(100, 130)},
		{"echoreplay", NewEchoReplay(), echo, formats.Ticks(100, 130)},
		{"milk", NewMilk(), read(filepath.Join(dir, "example.milk")), formats.Ticks(100, 130)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := formatstest.Split(t, tt.codec, tt.file)
			pts := formatstest.Tracks(t, tt.codec, rec.Source(), tt.r)
			labels := formatstest.Labels(pts)
			if len(labels) < 2 || !slices.Contains(labels, "disc") {
				t.Fatalf("labels %q: want players and the disc", labels)
			}
			teams := map[string]bool{}
			for _, p := range pts {
				teams[p.Team] = true
				if !p.HasZ {
					t.Fatalf("%+v has no height", p)
				}
			}
			t.Logf("%d points, labels %q, teams %v", len(pts), labels, teams)
		})
	}
}

// TestTrackBadChunks: damaged chunks give errors, never a panic.
func TestTrackBadChunks(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(corpusDir(t), "reference", "butter", "milk_2020-09-07.none.k30.butter"))
	if err != nil {
		t.Fatal(err)
	}
	c := New()
	rec := formatstest.Split(t, c, b)
	rec.ChunkBytes, rec.ChunkIndex = rec.ChunkBytes[:2], rec.ChunkIndex[:2]
	formatstest.CheckTrackBadChunks(t, c, rec, 997)
}
