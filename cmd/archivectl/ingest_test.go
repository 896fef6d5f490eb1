// Tests for the summary archivectl ingest ends with.

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestIngestSummary: a run ends with one line on stderr counting what
// became of the inputs, with their bytes and the time taken ("1
// recording" at one), and --json gives it as one JSON object there, stdout
// keeping one JSON line per input.
func TestIngestSummary(t *testing.T) {
	base := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	dir := gameDir(t, gameSpec{base, 10 * time.Second, 2}, gameSpec{base.Add(time.Hour), 10 * time.Second, 2})
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not a recording"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := newCLI(t)
	summary := regexp.MustCompile(`(?m)^ingested (\d+) (recordings?) \((\d+) already archived, (\d+) skipped, (\d+) failed\), [\d.]+ (B|kB|MB) in [\d.]+s$`)
	check := func(errs, want string) {
		t.Helper()
		m := summary.FindStringSubmatch(errs)
		if m == nil {
			t.Fatalf("no summary line in stderr:\n%s", errs)
		}
		if got := strings.Join(m[1:6], " "); got != want {
			t.Errorf("summary %q: counts %s, want %s", m[0], got, want)
		}
	}
	out, errs, code := c.run("ingest", dir)
	if code != 0 || strings.Count(out, "ingested ") != 2 {
		t.Fatalf("ingest: exit %d\n%s%s", code, out, errs)
	}
	check(errs, "2 recordings 0 1 0")
	if strings.Contains(out, "recordings (") {
		t.Errorf("the summary is on stdout:\n%s", out)
	}
	_, errs, _ = c.run("ingest", dir)
	check(errs, "0 recordings 2 1 0")

	one := gameDir(t, gameSpec{base.Add(2 * time.Hour), 10 * time.Second, 2})
	bad := filepath.Join(t.TempDir(), "cut.teehistorian")
	whole, _ := os.ReadFile(filepath.Join(one, "g0.teehistorian"))
	os.WriteFile(bad, whole[:17], 0o644)
	_, errs, code = c.run("ingest", one, bad)
	if code != exitPartial {
		t.Errorf("ingest with a bad file: exit %d, want %d", code, exitPartial)
	}
	check(errs, "1 recording 0 0 1")

	out, errs, code = newCLI(t).run("ingest", "--json", dir)
	if code != 0 {
		t.Fatalf("ingest --json: exit %d\n%s", code, errs)
	}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var m struct {
			MessageType string `json:"message_type"`
		}
		if err := json.Unmarshal([]byte(l), &m); err != nil || m.MessageType != "ingest" && m.MessageType != "status" {
			t.Errorf("stdout line %q: %v", l, err)
		}
	}
	var s struct {
		MessageType string   `json:"message_type"`
		Ingested    *int     `json:"ingested"`
		Dups        *int     `json:"already_archived"`
		Skipped     *int     `json:"skipped"`
		Failed      *int     `json:"failed"`
		Bytes       int64    `json:"bytes"`
		Elapsed     *float64 `json:"seconds_elapsed"`
	}
	lines := strings.Split(strings.TrimSpace(errs), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &s); err != nil {
		t.Fatalf("the last line of stderr is not the JSON summary: %v\n%s", err, errs)
	}
	var size int64
	for _, n := range []string{"g0.teehistorian", "g1.teehistorian"} {
		st, _ := os.Stat(filepath.Join(dir, n))
		size += st.Size()
	}
	if s.MessageType != "summary" || s.Ingested == nil || *s.Ingested != 2 || *s.Dups != 0 || *s.Skipped != 1 || *s.Failed != 0 ||
		s.Bytes < size || s.Elapsed == nil {
		t.Errorf("JSON summary %s; want 2 ingested, 1 skipped, at least %d bytes", lines[len(lines)-1], size)
	}
}
