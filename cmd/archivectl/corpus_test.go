package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/replayarchive/replay/formats/formatstest"
	"github.com/replayarchive/replay/wire"
)

// Every real file of every format ingests through archivectl, exports
// byte for byte, and (where the format has clips) clips to a file that
// ingests again as a valid recording of the same format.
func TestCorpusEveryFormat(t *testing.T) {
	tests := []struct {
		dir     string
		format  string
		files   int  // recordings expected from the directory
		clips   bool // whether the format supports clips
		pattern string
	}{
		{"teehistorian", "teehistorian", 6, true, "*.teehistorian"},
		{"sc2replay", "sc2replay", 10, false, "*.SC2Replay"},
		{"vtx", "vtx", 4, true, "*.vtx"},
		{"butter/reference/butter", "butter", 0, true, "*.butter"},
	}
	for _, tt := range tests {
		t.Run(tt.format, func(t *testing.T) {
			dir := formatstest.CorpusDir(t, tt.dir)
			files, _ := filepath.Glob(filepath.Join(dir, tt.pattern))
			if tt.files > 0 && len(files) != tt.files {
				t.Fatalf("%d files in %s, want %d", len(files), dir, tt.files)
			}
			if len(files) == 0 {
				t.Fatalf("no %s files in %s", tt.pattern, dir)
			}
			c := newCLI(t)
			out, errs, code := c.run(append([]string{"ingest", "--json"}, files...)...)
			if code != 0 {
				t.Fatalf("ingest: exit %d\n%s%s", code, out, errs)
			}
			tmp := t.TempDir()
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				var r struct{ Path, Outcome, ID, Format string }
				if err := json.Unmarshal([]byte(line), &r); err != nil {
					t.Fatal(err)
				}
				if r.Format != tt.format {
					t.Errorf("%s detected as %q, want %q", r.Path, r.Format, tt.format)
				}
				if r.Outcome != "ingested" && r.Outcome != "already archived" {
					t.Errorf("%s: %s", r.Path, r.Outcome)
					continue
				}
				want, _ := os.ReadFile(r.Path)
				if got := c.ok("export", r.ID, "-o", "-"); !bytes.Equal([]byte(got), want) {
					t.Errorf("%s: export differs from the file", filepath.Base(r.Path))
				}
				var show wire.Recording
				json.Unmarshal([]byte(c.ok("show", r.ID, "--json")), &show)
				clip := filepath.Join(tmp, r.ID+".clip")
				from, to := show.Ticks/3, show.Ticks/3+show.Ticks/4
				out, errs, code := c.run("export", r.ID, "--from", itoa(from), "--to", itoa(to), "-o", clip)
				if !tt.clips {
					if code == 0 || !strings.Contains(errs, "not supported") {
						t.Errorf("%s: clip of a format without clips: exit %d %s", r.Path, code, errs)
					}
					continue
				}
				if code != 0 {
					t.Errorf("%s: clip %d..%d: exit %d %s%s", filepath.Base(r.Path), from, to, code, out, errs)
					continue
				}
				var again struct{ Outcome, Format, Err string }
				json.Unmarshal([]byte(c.ok("ingest", "--json", clip)), &again)
				if again.Format != tt.format || (again.Outcome != "ingested" && again.Outcome != "already archived") {
					t.Errorf("%s: clip does not ingest as %s: %+v", filepath.Base(r.Path), tt.format, again)
				}
			}
			if out := c.ok("check", "--read-data"); !strings.HasSuffix(out, "ok\n") {
				t.Errorf("check:\n%s", out)
			}
		})
	}
}

func itoa(n int64) string { return fmt.Sprint(n) }
