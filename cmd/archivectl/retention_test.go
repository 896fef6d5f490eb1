package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/formats/formatstest"
	"github.com/replayarchive/replay/wire"
)

func TestParseAge(t *testing.T) {
	day := 24 * time.Hour
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"", 0, true},
		{"90d", 90 * day, true},
		{"2w", 14 * day, true},
		{"1y", 365 * day, true},
		{"1.5d", 36 * time.Hour, true},
		{"36h", 36 * time.Hour, true},
		{"90m", 90 * time.Minute, true},
		{"0d", 0, false},
		{"-3d", 0, false},
		{"d", 0, false},
		{"3x", 0, false},
		{"1e300y", 0, false},
		{"NaNd", 0, false},
	} {
		got, err := parseAge(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseAge(%q) = %v, %v; want %v (ok %v)", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"", 0, true},
		{"1234", 1234, true},
		{"500MB", 500e6, true},
		{"500mb", 500e6, true},
		{"2GiB", 2 << 30, true},
		{"2G", 2 << 30, true},
		{"1.5TB", 1.5e12, true},
		{"10 KiB", 10 << 10, true},
		{"0", 0, false},
		{"MB", 0, false},
		{"5XB", 0, false},
		{"-5MB", 0, false},
		{"1e30TB", 0, false},
	} {
		got, err := parseSize(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseSize(%q) = %d, %v; want %d (ok %v)", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// retCLI runs archivectl in-process on the archive in dir.
func retCLI(t *testing.T, dir string, wantCode int, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), append([]string{"--archive", dir}, args...), strings.NewReader(""), &out, &errb)
	if code != wantCode {
		t.Fatalf("archivectl %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, wantCode, out.String(), errb.String())
	}
	return out.String()
}

func TestRetentionAndPrune(t *testing.T) {
	corpus := formatstest.CorpusDir(t, "teehistorian")
	dir := filepath.Join(t.TempDir(), "archive")
	retCLI(t, dir, 0, "ingest", corpus)
	var recs []struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(retCLI(t, dir, 0, "ls", "--json")), &recs); err != nil || len(recs) < 3 {
		t.Fatalf("ls: %d recordings, %v", len(recs), err)
	}
	retCLI(t, dir, 0, "hold", recs[0].ID, "--reason", "appeal")
	retCLI(t, dir, 0, "flag", recs[1].ID, "cheat")

	// Policy: set, show, clear, usage errors.
	if out := retCLI(t, dir, 0, "retention", "show"); !strings.Contains(out, "no retention policy") {
		t.Errorf("show without policy: %q", out)
	}
	retCLI(t, dir, 2, "prune")
	retCLI(t, dir, 2, "retention", "set", "--max-age", "soon")
	retCLI(t, dir, 2, "retention", "set", "--format", "teehistorian")
	retCLI(t, dir, 0, "retention", "set", "--max-age", "1d", "--format", "teehistorian")
	var pol wire.Policy
	if err := json.Unmarshal([]byte(retCLI(t, dir, 0, "retention", "show", "--json")), &pol); err != nil ||
		!pol.Set || pol.MaxAge != "1d" || pol.MaxAgeSeconds != 86400 || len(pol.Formats) != 1 || pol.Text != replay.DescribePolicy(&archive.Policy{MaxAge: 24 * time.Hour, Formats: []string{"teehistorian"}}) {
		t.Fatalf("retention show --json: %+v %v", pol, err)
	}

	// Dry run: everything but the held and the flagged one would go
	// (the corpus recordings are years old), and nothing changes.
	var dry wire.Prune
	if err := json.Unmarshal([]byte(retCLI(t, dir, 0, "prune", "--dry-run", "--json")), &dry); err != nil {
		t.Fatal(err)
	}
	if plan := dry.Plan; !dry.DryRun || plan == nil || len(plan.Remove) != len(recs)-2 || plan.KeptHeld != 1 || plan.KeptFlagged != 1 ||
		plan.EstimatedReturn <= 0 || dry.Report != nil || dry.PolicySource != "stored policy" {
		t.Fatalf("dry run: %+v", dry)
	}
	if out := retCLI(t, dir, 0, "prune", "--dry-run"); !strings.Contains(out, "would remove") || !strings.Contains(out, "age") {
		t.Errorf("dry run text: %q", out)
	}
	if n := strings.Count(retCLI(t, dir, 0, "ls"), "\n") - 1; n != len(recs) {
		t.Fatalf("dry run changed the archive: %d recordings", n)
	}

	// The real run.
	var pruned wire.Prune
	if err := json.Unmarshal([]byte(retCLI(t, dir, 0, "prune", "--json")), &pruned); err != nil {
		t.Fatal(err)
	}
	// The shard that held only pruned games goes (its 32 KiB may come
	// back as the catalog's growth: in an archive this small, the pages
	// bbolt adds to catalog.db for the prune's own writes and the flag's
	// case weigh as much).
	if rep := pruned.Report; pruned.DryRun || rep == nil || len(rep.Removed) != len(recs)-2 || !slices.Contains(rep.ShardsRemoved, "2023-11") ||
		rep.BytesReturned < 0 || rep.DiskBefore-rep.DiskAfter != rep.BytesReturned {
		t.Fatalf("prune: %+v, report %+v", pruned, pruned.Report)
	}
	retCLI(t, dir, 0, "check", "--read-data")
	out := retCLI(t, dir, 0, "ls")
	if !strings.Contains(out, recs[0].ID) || !strings.Contains(out, recs[1].ID) || strings.Count(out, "\n") != 3 {
		t.Fatalf("after prune:\n%s", out)
	}

	// --include-flagged takes the flagged one; the held one stays.
	out = retCLI(t, dir, 0, "prune", "--include-flagged", "--older-than", "1d")
	if !strings.Contains(out, "removed 1 recording,") || !strings.Contains(out, "kept 1 held") {
		t.Errorf("prune --include-flagged:\n%s", out)
	}
	retCLI(t, dir, 0, "check", "--read-data")
	if out := retCLI(t, dir, 0, "retention", "set"); !strings.Contains(out, "cleared") {
		t.Errorf("retention set without limits: %q", out)
	}
}
