package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/replayarchive/replay/formats/formatstest"
)

// TestOffersOnlyWhatWorks checks that the page offers only what works: a
// StarCraft II recording (no clips) is offered the whole file and its
// frames, never a clip command, by show and by a search hit, and the
// offered commands run; a teehistorian recording is offered a clip with
// its own extension, and a clip asked past its end says it was cut.
func TestOffersOnlyWhatWorks(t *testing.T) {
	sc2 := filepath.Join(formatstest.CorpusDir(t, "sc2replay"), "lotv-4.7.1.70326-iaguz-vs-luneth.SC2Replay")
	tee := filepath.Join(formatstest.CorpusDir(t, "teehistorian"), "Tutorial.teehistorian")
	c := newCLI(t)
	c.ok("ingest", sc2, tee)

	ids := map[string]string{}
	for _, line := range strings.Split(c.ok("ls"), "\n") {
		f := strings.Fields(line)
		for _, format := range []string{"sc2replay", "teehistorian"} {
			if len(f) > 0 && strings.Contains(line, format) {
				ids[format] = f[0]
			}
		}
	}
	if ids["sc2replay"] == "" || ids["teehistorian"] == "" {
		t.Fatalf("ls does not list both recordings: %v", ids)
	}

	show := c.ok("show", ids["sc2replay"])
	if strings.Contains(show, "--from 1m") || !strings.Contains(show, "cannot be clipped") || !strings.Contains(show, ".SC2Replay") {
		t.Errorf("show of a StarCraft II recording offers a clip or no whole file:\n%s", show)
	}
	chat := c.ok("search", "chat:gg")
	if !strings.Contains(chat, "sc2replay cannot be clipped") || regexp.MustCompile(`export \S+ --from`).MatchString(chat) {
		t.Errorf("a StarCraft II hit offers a clip:\n%s", chat)
	}

	show = c.ok("show", ids["teehistorian"])
	m := regexp.MustCompile(`clip:\s+archivectl (export \S+ --from \S+ --to \S+) -o (\S+)`).FindStringSubmatch(show)
	if m == nil || filepath.Ext(m[2]) != ".teehistorian" {
		t.Fatalf("show of a teehistorian recording offers no clip with the format's extension:\n%s", show)
	}
	// The offered clip runs and stays within the recording.
	offered := append(strings.Fields(m[1]), "-o", filepath.Join(t.TempDir(), m[2]))
	if _, errs, code := c.run(offered...); code != exitOK || strings.Contains(errs, "past the last tick") {
		t.Errorf("the offered %q: exit %d, %q", m[1], code, errs)
	}
	out := filepath.Join(t.TempDir(), "clip.teehistorian")
	_, errs, code := c.run("export", ids["teehistorian"], "--from", "0", "--to", "999999999", "-o", out)
	if code != exitOK || !strings.Contains(errs, "past the last tick, cut there") {
		t.Errorf("a clip past the end: exit %d, %q does not say it was cut", code, errs)
	}
}
