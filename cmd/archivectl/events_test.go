// Tests for archivectl events.

package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/replayarchive/replay/wire"
)

// TestEventsCommand: events lists a recording's searchable events in
// tick order with the offset and wall-clock time search prints, keeps
// those of --kind and of the --from/--to range (ticks or offsets), says
// how many on stderr, and --json gives the API's answer.
func TestEventsCommand(t *testing.T) {
	c := newCLI(t)
	c.ok("ingest", generatedGame(t, 30*time.Second))
	var recs []wire.Recording
	json.Unmarshal([]byte(c.ok("ls", "--json")), &recs)
	if len(recs) != 1 {
		t.Fatalf("%d recordings", len(recs))
	}
	id := recs[0].ID

	var all wire.Events
	if err := json.Unmarshal([]byte(c.ok("events", id[:8], "--json")), &all); err != nil {
		t.Fatal(err)
	}
	if all.Total != recs[0].EventCount || len(all.Events) != all.Total || all.Total < 10 {
		t.Fatalf("events --json: %d events, total %d; the recording has %d", len(all.Events), all.Total, recs[0].EventCount)
	}
	kinds := map[string]int{}
	for i, ev := range all.Events {
		kinds[ev.Kind]++
		if i > 0 && ev.Tick < all.Events[i-1].Tick {
			t.Errorf("event %d at tick %d after tick %d", i, ev.Tick, all.Events[i-1].Tick)
		}
		if want := tickClock(ev.Tick); ev.At != want {
			t.Errorf("event at tick %d: at %s, want %s", ev.Tick, ev.At, want)
		}
	}
	if kinds["command"] < 5 {
		t.Fatalf("kinds %v: want the generated commands", kinds)
	}

	out, errs, code := c.run("events", id, "--kind", "COMMAND")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != kinds["command"] || strings.TrimSpace(errs) != fmt.Sprintf("%d events", kinds["command"]) {
		t.Fatalf("events --kind COMMAND: exit %d, %d lines (want %d)\n%s%s", code, len(lines), kinds["command"], out, errs)
	}
	line := regexp.MustCompile(`^tick (\d+) +(\d:\d\d:\d\d) +(\S+) +command +\S.* \S`)
	for _, l := range lines {
		m := line.FindStringSubmatch(l)
		if m == nil {
			t.Errorf("line %q", l)
			continue
		}
		var tick int64
		fmt.Sscan(m[1], &tick)
		if m[3] != tickClock(tick) {
			t.Errorf("line %q: time %s, want %s", l, m[3], tickClock(tick))
		}
	}

	// A range by offsets and by ticks: 10 s to 20 s is ticks 500 to 1000.
	var want []wire.Event
	for _, ev := range all.Events {
		if ev.Tick >= 500 && ev.Tick <= 1000 {
			want = append(want, ev)
		}
	}
	for _, args := range [][]string{{"--from", "10s", "--to", "20s"}, {"--from", "500", "--to", "1000"}} {
		var got wire.Events
		json.Unmarshal([]byte(c.ok(append([]string{"events", id, "--json"}, args...)...)), &got)
		if got.Total != len(want) || len(got.Events) != len(want) || len(want) > 0 && got.Events[0] != want[0] {
			t.Errorf("events %s: %d events, want %d", strings.Join(args, " "), got.Total, len(want))
		}
	}
	out, errs, _ = c.run("events", id, "--limit", "1")
	if n := strings.Count(out, "\n"); n != 1 || !strings.Contains(errs, fmt.Sprintf("1 of %d events (--limit 1)", all.Total)) {
		t.Errorf("events --limit 1: %d lines, %q", n, errs)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"events"}, exitUsage, "events takes one recording ID"},
		{[]string{"events", id, "--from", "20", "--to", "10"}, exitUsage, "--to 10 is before --from 20"},
		{[]string{"events", id, "--from", "soon"}, exitUsage, "--from"},
		{[]string{"events", "deadbeef"}, exitNotFound, "not found"},
	} {
		if _, errs, code := c.run(tc.args...); code != tc.code || !strings.Contains(errs, tc.want) {
			t.Errorf("%s: exit %d, %q; want %d and %q", strings.Join(tc.args, " "), code, errs, tc.code, tc.want)
		}
	}
	if _, errs, code := c.run("events", id, "--kind", "nosuchkind"); code != 0 || strings.TrimSpace(errs) != "0 events" {
		t.Errorf("events --kind nosuchkind: exit %d, %q", code, errs)
	}
}
