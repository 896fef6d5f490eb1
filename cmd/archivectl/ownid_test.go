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

// A directory holding a whole DDNet game and a clip of it (the same
// game_uuid) ingested in one run keeps both, as two runs do: the game under
// its own id, the clip under the derived one with a note; check --read-data
// is clean.
func TestIngestGameAndItsClipInOneRun(t *testing.T) {
	dir := t.TempDir()
	game := teehistoriangen.Must(t, teehistoriangen.Options{Duration: 30 * time.Second, Players: 4, Seed: 29})
	gamePath := filepath.Join(dir, "a-game.teehistorian")
	if err := os.WriteFile(gamePath, game, 0o644); err != nil {
		t.Fatal(err)
	}
	// The clip is cut by archivectl itself, in a scratch archive.
	scratch := newCLI(t)
	gameID := ingestedID(t, scratch.ok("ingest", "--json", gamePath))
	scratch.ok("export", gameID, "--from", "100", "--to", "600", "-o", filepath.Join(dir, "b-clip.teehistorian"))

	c := newCLI(t)
	out := c.ok("ingest", "--json", dir)
	var ids []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if id := ingestedID(t, line); id != "" {
			ids = append(ids, id)
		}
	}
	if len(ids) != 2 || ids[0] == ids[1] {
		t.Fatalf("ingest of the game and its clip gave ids %v, want two different ids\n%s", ids, out)
	}
	if !strings.Contains(out, "holds other bytes") {
		t.Errorf("no note says the clip's own id was taken:\n%s", out)
	}
	c.ok("check", "--read-data")
	for _, id := range ids {
		c.ok("show", id)
	}
	if got := c.ok("ls"); !strings.Contains(got, gameID[:8]) {
		t.Errorf("ls does not list the whole game %s:\n%s", gameID, got)
	}
}

// ingestedID returns the id of an ingested file from one line of
// `ingest --json`, or "" for any other line.
func ingestedID(t *testing.T, line string) string {
	t.Helper()
	var r struct {
		MessageType string `json:"message_type"`
		ID          string `json:"id"`
		Outcome     string `json:"outcome"`
	}
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		t.Fatalf("ingest --json line %q: %v", line, err)
	}
	if r.MessageType != "ingest" || r.Outcome != "ingested" {
		return ""
	}
	return r.ID
}
