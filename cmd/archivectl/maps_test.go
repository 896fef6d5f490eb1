package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/replayarchive/replay/formats/ddnetmap"
	"github.com/replayarchive/replay/formats/formatstest"
)

// TestMapsCommand: maps add takes files and directories and says of each
// file whether it was added, was there already or is not a map (and
// why); maps ls lists what was added.
func TestMapsCommand(t *testing.T) {
	c := newCLI(t)
	c.ok("init")
	src := t.TempDir()
	g := ddnetmap.GameLayer{Width: 4, Height: 3, Tiles: []byte{1, 1, 1, 1, 0, 33, 34, 0, 1, 1, 1, 1}}
	var mb bytes.Buffer
	if err := ddnetmap.Write(&mb, g); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(src, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"sub/a.map": mb.Bytes(), "broken.map": []byte("DATA but nothing after"), "notes.txt": []byte("not looked at")} {
		if err := os.WriteFile(filepath.Join(src, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, errs, code := c.run("maps", "add", src)
	if code == 0 || !strings.Contains(out, "added ") || !strings.Contains(out, "4×3") ||
		!strings.Contains(errs, "broken.map") || !strings.Contains(errs, "36-byte header") || strings.Contains(out+errs, "notes.txt") {
		t.Fatalf("maps add: exit %d\n%s%s", code, out, errs)
	}
	out, _, _ = c.run("maps", "add", "--json", filepath.Join(src, "sub", "a.map"), filepath.Join(src, "broken.map"))
	var res []struct {
		Path, Outcome, Error string
		Map                  *struct{ SHA256 string }
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res) != 2 || res[0].Outcome != "exists" || res[1].Outcome != "not_a_map" || res[1].Error == "" {
		t.Fatalf("maps add --json: %v\n%s", err, out)
	}
	ls := c.ok("maps", "ls")
	if !strings.Contains(ls, res[0].Map.SHA256) || !strings.Contains(ls, "4×3") {
		t.Errorf("maps ls:\n%s", ls)
	}
	if audit := c.ok("audit"); !strings.Contains(audit, "map-add") {
		t.Errorf("audit:\n%s", audit)
	}

	// The corpus's Tutorial map.
	tut := filepath.Join(formatstest.CorpusDir(t, "maps"), "Tutorial.map")
	out = c.ok("maps", "add", "--json", tut)
	if !strings.Contains(out, `"outcome": "added"`) || !strings.Contains(out, "796a3716fe64657bfb8bc6af5f9422b197278919a9d875e43b9bbbcb73262fc0") || !strings.Contains(out, `"crc": "801ce63d"`) {
		t.Errorf("maps add Tutorial.map:\n%s", out)
	}
}
