// Tests for archivectl ls's order and pages.

package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
	"github.com/replayarchive/replay/wire"
)

// gameSpec is one generated game of gameDir.
type gameSpec struct {
	start   time.Time
	d       time.Duration
	players int
}

// gameDir writes generated teehistorian games into a new directory, one
// per spec, and returns it.
func gameDir(t *testing.T, specs ...gameSpec) string {
	t.Helper()
	dir := t.TempDir()
	for i, s := range specs {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("g%d.teehistorian", i)))
		if err != nil {
			t.Fatal(err)
		}
		err = teehistoriangen.Generate(f, teehistoriangen.Options{Duration: s.d, Players: s.players, Seed: uint64(i + 1), Start: s.start, CommandsPerHour: 600})
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// lsJSON runs ls --json with args and returns its recordings and stderr.
func lsJSON(t *testing.T, c cli, args ...string) ([]wire.Recording, string) {
	t.Helper()
	out, errs, code := c.run(append([]string{"ls", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("ls --json %s: exit %d\n%s", strings.Join(args, " "), code, errs)
	}
	var recs []wire.Recording
	if err := json.Unmarshal([]byte(out), &recs); err != nil {
		t.Fatalf("ls --json %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return recs, errs
}

func recIDs(recs []wire.Recording) []string {
	ids := make([]string, len(recs))
	for i, r := range recs {
		ids[i] = r.ID
	}
	return ids
}

// TestLsSortAndPages: ls lists newest first by default, orders by
// --sort's key largest first (ties by id) or smallest first with
// --reverse, and --limit's pages, walked by the cursors it prints, give
// the whole list once; a cursor of another order or a bad key is a usage
// error.
func TestLsSortAndPages(t *testing.T) {
	base := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	c := newCLI(t)
	c.ok("ingest", gameDir(t,
		gameSpec{base.Add(2 * time.Hour), 20 * time.Second, 2},
		gameSpec{base, 50 * time.Second, 3},
		gameSpec{base.Add(4 * time.Hour), 30 * time.Second, 1},
		gameSpec{base.Add(1 * time.Hour), 40 * time.Second, 4},
		gameSpec{base.Add(3 * time.Hour), 30 * time.Second, 2},
	))
	all, _ := lsJSON(t, c)
	if len(all) != 5 {
		t.Fatalf("ls lists %d recordings, want 5", len(all))
	}
	keys := map[string]func(r wire.Recording) int64{
		"start": func(r wire.Recording) int64 {
			s, _ := time.Parse(time.RFC3339, r.Start)
			return s.UnixNano()
		},
		"duration": func(r wire.Recording) int64 { return r.DurationMS },
		"players":  func(r wire.Recording) int64 { return int64(len(r.Players)) },
		"ingested": func(r wire.Recording) int64 { return r.Ingested.UnixNano() },
	}
	for name, key := range keys {
		for _, reverse := range []bool{false, true} {
			args := []string{"--sort", name}
			if reverse {
				args = append(args, "--reverse")
			}
			got, _ := lsJSON(t, c, args...)
			want := slices.Clone(got)
			slices.SortStableFunc(want, func(a, b wire.Recording) int {
				c := cmp.Compare(key(a), key(b))
				if c == 0 {
					c = strings.Compare(a.ID, b.ID)
				}
				if !reverse {
					c = -c
				}
				return c
			})
			if !slices.Equal(recIDs(got), recIDs(want)) {
				t.Errorf("ls %s: %v, want %v", strings.Join(args, " "), recIDs(got), recIDs(want))
			}
			if len(got) != 5 {
				t.Errorf("ls %s: %d recordings", strings.Join(args, " "), len(got))
			}
			// Pages of 2 walked by their cursors give the same list.
			var paged []string
			var after []string
			for range 5 {
				page, errs := lsJSON(t, c, append(append(args, "--limit", "2"), after...)...)
				paged = append(paged, recIDs(page)...)
				i := strings.Index(errs, "next page: --after ")
				if i < 0 {
					break
				}
				after = []string{"--after", strings.TrimSpace(errs[i+len("next page: --after "):])}
			}
			if !slices.Equal(paged, recIDs(got)) {
				t.Errorf("ls %s in pages of 2: %v, want %v", strings.Join(args, " "), paged, recIDs(got))
			}
		}
	}
	// The default is newest first, the start times as generated.
	def, _ := lsJSON(t, c)
	var starts []string
	for _, r := range def {
		starts = append(starts, r.Start[11:16])
	}
	if strings.Join(starts, " ") != "16:00 15:00 14:00 13:00 12:00" {
		t.Errorf("ls starts %v, want newest first", starts)
	}
	// The text listing in the same order, and its cursor on stderr.
	out, errs, code := c.run("ls", "--limit", "3")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 4 || !strings.Contains(errs, "next page: --after start:") {
		t.Fatalf("ls --limit 3: exit %d, %d lines\n%s%s", code, len(lines), out, errs)
	}
	for i, l := range lines[1:] {
		if !strings.HasPrefix(l, def[i].ID) {
			t.Errorf("ls line %d %q, want %s first", i, l, def[i].ID)
		}
	}
	cursor := strings.TrimSpace(errs[strings.Index(errs, "--after ")+len("--after "):])
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--sort", "size"}, `--sort "size": want start, duration, players or ingested`},
		{[]string{"--sort", "duration", "--after", cursor}, "the cursor is of --sort start, not duration"},
		{[]string{"--after", "nonsense"}, "not a cursor ls printed"},
		{[]string{"--limit", "-1"}, "--limit"},
	} {
		if _, errs, code := c.run(append([]string{"ls"}, tc.args...)...); code != exitUsage || !strings.Contains(errs, tc.want) {
			t.Errorf("ls %s: exit %d, %q; want exit %d and %q", strings.Join(tc.args, " "), code, errs, exitUsage, tc.want)
		}
	}
	// A cursor holds a place, not a count: the last page after the
	// recording it names is gone stays the same.
	last, _ := lsJSON(t, c, "--after", cursor)
	if !slices.Equal(recIDs(last), recIDs(def[3:])) {
		t.Errorf("ls --after %s: %v, want %v", cursor, recIDs(last), recIDs(def[3:]))
	}
	c.ok("delete", def[2].ID, "--reason", "test", "--yes", "--now")
	if again, _ := lsJSON(t, c, "--after", cursor); !slices.Equal(recIDs(again), recIDs(def[3:])) {
		t.Errorf("ls --after %s once its recording is deleted: %v, want %v", cursor, recIDs(again), recIDs(def[3:]))
	}
}
