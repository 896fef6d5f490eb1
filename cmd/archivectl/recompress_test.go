package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
)

// TestRecompressCommand: a dry run changes nothing; the pass makes the
// games smaller and exports stay byte-identical; show says when; a second
// pass has nothing to do; check is clean.
func TestRecompressCommand(t *testing.T) {
	src := t.TempDir()
	files := map[string][]byte{}
	for i, seed := range []uint64{3, 4} {
		b := teehistoriangen.Must(t, teehistoriangen.Options{Duration: time.Minute, Players: 6, Seed: seed})
		name := filepath.Join(src, "game"+string(rune('a'+i))+".teehistorian")
		if err := os.WriteFile(name, b, 0o644); err != nil {
			t.Fatal(err)
		}
		files[name] = b
	}
	dir := filepath.Join(t.TempDir(), "archive")
	retCLI(t, dir, 0, "ingest", src)
	retCLI(t, dir, 2, "recompress", "--older-than", "soon")
	retCLI(t, dir, 2, "recompress", "extra")

	type report struct {
		DryRun       bool  `json:"dry_run"`
		Recordings   int   `json:"recordings"`
		AlreadyDone  int   `json:"already_done"`
		StoredBefore int64 `json:"stored_before"`
		StoredAfter  int64 `json:"stored_after"`
		HeadsSaved   int64 `json:"heads_saved"`
	}
	var dry, done, again report
	if err := json.Unmarshal([]byte(retCLI(t, dir, 0, "recompress", "--dry-run", "--json")), &dry); err != nil {
		t.Fatal(err)
	}
	if !dry.DryRun || dry.Recordings != 2 || dry.StoredBefore <= 0 {
		t.Fatalf("dry run: %+v", dry)
	}
	if err := json.Unmarshal([]byte(retCLI(t, dir, 0, "recompress", "--json")), &done); err != nil {
		t.Fatal(err)
	}
	// The pass first compresses headers again with a new dictionary, then
	// the chunks.
	if done.Recordings != 2 || done.StoredBefore+done.HeadsSaved != dry.StoredBefore || done.StoredAfter >= done.StoredBefore {
		t.Fatalf("pass: %+v (dry run said %+v)", done, dry)
	}
	var recs []struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(retCLI(t, dir, 0, "ls", "--json")), &recs); err != nil || len(recs) != 2 {
		t.Fatalf("ls: %d recordings, %v", len(recs), err)
	}
	for _, r := range recs {
		var shown struct {
			Source       string `json:"source_name"`
			Recompressed string `json:"recompressed"`
		}
		if err := json.Unmarshal([]byte(retCLI(t, dir, 0, "show", r.ID, "--json")), &shown); err != nil || shown.Recompressed == "" {
			t.Errorf("show %s: %+v, %v: want when it was recompressed", r.ID, shown, err)
		}
		want := files[filepath.Join(src, shown.Source)]
		if got := retCLI(t, dir, 0, "export", r.ID, "-o", "-"); want == nil || got != string(want) {
			t.Errorf("export of %s (%s) after recompress differs from the file", r.ID, shown.Source)
		}
	}
	if out := retCLI(t, dir, 0, "recompress"); !strings.Contains(out, "re-encoded 0 recordings") || !strings.Contains(out, "2 already re-encoded") {
		t.Errorf("second pass: %q", out)
	}
	if err := json.Unmarshal([]byte(retCLI(t, dir, 0, "recompress", "--json")), &again); err != nil || again.Recordings != 0 || again.AlreadyDone != 2 {
		t.Errorf("second pass --json: %+v, %v", again, err)
	}
	if out := retCLI(t, dir, 0, "stats"); !strings.Contains(out, "2 recompressed") {
		t.Errorf("stats: %q, want 2 recompressed", out)
	}
	retCLI(t, dir, 0, "check")
}
