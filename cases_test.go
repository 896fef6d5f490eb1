package replay_test

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
	"github.com/replayarchive/replay/internal/pgtest"
)

// openCasesArchive opens a fresh archive with one generated 20-second
// teehistorian recording (50 ticks a second) and returns both.
func openCasesArchive(t *testing.T) (*replay.Archive, uuid.UUID) {
	t.Helper()
	x, err := replay.Open(filepath.Join(t.TempDir(), "a"), replay.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	file := teehistoriangen.Must(t, teehistoriangen.Options{Seed: 7, Players: 3, Duration: 20 * time.Second})
	res, _, err := x.IngestStream(t.Context(), "game.teehistorian", bytes.NewReader(file), 0, replay.LocalActor())
	if err != nil || res.ID == uuid.Nil {
		t.Fatalf("ingest: %+v %v", res, err)
	}
	return x, res.ID
}

// TestFlagAt: a flag on a moment, given as offsets, minutes and seconds or
// ticks, keeps its ticks; flag:NAME finds the recording; a range past the
// end is cut, one starting past it or running backwards refused, one end
// alone refused; a flag without a range is the whole recording again.
func TestFlagAt(t *testing.T) {
	ctx := t.Context()
	x, id := openCasesArchive(t)
	mod := replay.Actor{Name: "vera", Role: replay.RoleModerator}
	rec, err := x.Recording(id.String())
	if err != nil {
		t.Fatal(err)
	}
	want := archive.TickRange{From: rec.TickAt(2 * time.Second), To: rec.TickAt(5 * time.Second)}
	for _, c := range []struct{ from, to string }{{"2s", "5s"}, {"0:02", "0:05"}, {"0:00:02", "0:00:05"}} {
		m, err := x.FlagAt(ctx, mod, id.String()[:8], "griefing", "spawn", c.from, c.to)
		if err != nil {
			t.Fatalf("%s-%s: %v", c.from, c.to, err)
		}
		if len(m.Flags) != 1 || m.Flags[0].Range == nil || *m.Flags[0].Range != want {
			t.Errorf("%s-%s: flags %+v, want range %+v", c.from, c.to, m.Flags, want)
		}
	}
	m, err := x.FlagAt(ctx, mod, id.String(), "griefing", "", "100", "150")
	if err != nil || *m.Flags[0].Range != (archive.TickRange{From: 100, To: 150}) {
		t.Fatalf("ticks: %+v %v", m.Flags, err)
	}
	res, err := x.Search(ctx, "flag:griefing", 0, 10)
	if err != nil || res.Total != 1 {
		t.Fatalf("flag:griefing: %+v %v", res, err)
	}
	last := rec.LastTick()
	if m, err = x.FlagAt(ctx, mod, id.String(), "late", "", "19s", "1h"); err != nil || m.Flags[1].Range.To != last {
		t.Errorf("a range past the end: %+v %v (last tick %d)", m.Flags, err, last)
	}
	for _, c := range []struct{ from, to string }{{"5s", "2s"}, {"1m", "2m"}, {"2s", ""}, {"", "2s"}, {"soon", "5s"}} {
		_, err := x.FlagAt(ctx, mod, id.String(), "bad", "", c.from, c.to)
		if !errors.Is(err, replay.ErrBadTick) && !errors.Is(err, replay.ErrEmptyRange) {
			t.Errorf("%q-%q: %v, want ErrBadTick or ErrEmptyRange", c.from, c.to, err)
		}
	}
	if m, err = x.Flag(ctx, mod, id.String(), "griefing", "whole"); err != nil || m.Flags[0].Range != nil {
		t.Errorf("a whole flag over the ranged: %+v %v", m.Flags, err)
	}
}

// TestCases: a flag opens a case (one, followed by later flags' notes); a
// moderator opens one by hand, adds notes, assigns it to a moderator (not
// to a viewer or an unknown name), resolves it; it is listed by status,
// assignee and recording; every change is audited, and none in the
// recording's own history.
func TestCases(t *testing.T) {
	ctx := t.Context()
	x, id := openCasesArchive(t)
	owner := replay.LocalActor()
	if _, err := x.CreateToken(owner, "kit", replay.RoleModerator); err != nil {
		t.Fatal(err)
	}
	if _, err := x.CreateToken(owner, "val", replay.RoleViewer); err != nil {
		t.Fatal(err)
	}
	mod := replay.Actor{Name: "vera", Role: replay.RoleModerator}
	before, err := x.Audit(id.String(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}

	if _, err := x.FlagAt(ctx, mod, id.String(), "griefing", "blocks the spawn", "2s", "5s"); err != nil {
		t.Fatal(err)
	}
	cs, err := x.Cases(replay.CaseFilter{Status: "open"})
	if err != nil || len(cs) != 1 {
		t.Fatalf("a flag's case: %+v %v", cs, err)
	}
	c := cs[0]
	if c.Recording != id || c.Flag != "griefing" || c.OpenedBy != "vera" || len(c.Notes) != 1 ||
		!strings.Contains(c.Notes[0].Text, "griefing") || !strings.Contains(c.Notes[0].Text, "blocks the spawn") {
		t.Fatalf("the flag's case: %+v", c)
	}
	if _, err := x.Flag(ctx, mod, id.String(), "cheating", ""); err != nil {
		t.Fatal(err)
	}
	if cs, _ = x.Cases(replay.CaseFilter{}); len(cs) != 1 || len(cs[0].Notes) != 2 {
		t.Fatalf("a second flag adds a note to the open case: %+v", cs)
	}

	byHand, err := x.OpenCase(ctx, mod, id.String()[:6], "reported in ticket 4711")
	if err != nil {
		t.Fatal(err)
	}
	if byHand.Flag != "" || len(byHand.Notes) != 1 || byHand.Status != "open" {
		t.Errorf("by hand: %+v", byHand)
	}
	if _, err := x.OpenCase(ctx, mod, id.String(), strings.Repeat("x", 5000)); !errors.Is(err, archive.ErrBadCaseNote) {
		t.Errorf("a long note: %v", err)
	}
	if _, err := x.OpenCase(ctx, mod, "ffffffff", ""); !errors.Is(err, archive.ErrNotFound) {
		t.Errorf("no such recording: %v", err)
	}
	got, err := x.AddCaseNote(ctx, replay.Actor{Name: "kit", Role: replay.RoleModerator}, byHand.ID.String()[:8], "same player in 3 other games")
	if err != nil || len(got.Notes) != 2 || got.Notes[1].Who != "kit" {
		t.Fatalf("note: %+v %v", got, err)
	}
	if _, err := x.AddCaseNote(ctx, mod, byHand.ID.String(), "  "); !errors.Is(err, archive.ErrBadCaseNote) {
		t.Errorf("empty note: %v", err)
	}
	if _, err := x.AddCaseNote(ctx, mod, uuid.NewString(), "x"); !errors.Is(err, archive.ErrNoCase) {
		t.Errorf("note on no case: %v", err)
	}

	str := func(s string) *string { return &s }
	for _, who := range []string{"val", "nobody-here"} {
		if _, err := x.UpdateCase(ctx, mod, byHand.ID.String(), replay.CaseChange{Assignee: str(who)}); !errors.Is(err, replay.ErrNotModerator) {
			t.Errorf("assign to %s: %v", who, err)
		}
	}
	if _, err := x.UpdateCase(ctx, mod, byHand.ID.String(), replay.CaseChange{Status: str("closed")}); !errors.Is(err, archive.ErrBadCaseStatus) {
		t.Errorf("bad status: %v", err)
	}
	got, err = x.UpdateCase(ctx, mod, byHand.ID.String(), replay.CaseChange{Assignee: str("kit")})
	if err != nil || got.Assignee != "kit" {
		t.Fatalf("assign: %+v %v", got, err)
	}
	if cs, _ := x.Cases(replay.CaseFilter{Assignee: "kit"}); len(cs) != 1 || cs[0].ID != byHand.ID {
		t.Errorf("kit's cases: %+v", cs)
	}
	got, err = x.UpdateCase(ctx, mod, byHand.ID.String(), replay.CaseChange{Status: str("resolved"), Assignee: str("vera")})
	if err != nil || got.Status != "resolved" || got.Assignee != "vera" {
		t.Fatalf("resolve: %+v %v", got, err)
	}
	if cs, _ := x.Cases(replay.CaseFilter{Status: "open"}); len(cs) != 1 || cs[0].ID != c.ID {
		t.Errorf("open cases after the resolve: %+v", cs)
	}
	if cs, _ := x.Cases(replay.CaseFilter{Recording: id.String()[:8]}); len(cs) != 2 {
		t.Errorf("the recording's cases: %d", len(cs))
	}
	if _, err := x.Cases(replay.CaseFilter{Status: "later"}); !errors.Is(err, archive.ErrBadCaseStatus) {
		t.Errorf("list by a bad status: %v", err)
	}

	// The archive's audit log has every case change; the recording's
	// history has the flags only.
	all, err := x.Audit("", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, e := range all {
		count[e.Action]++
	}
	if count[replay.AuditCaseOpen] != 2 || count[replay.AuditCaseNote] != 2 || count[replay.AuditCaseAssign] != 2 || count[replay.AuditCaseStatus] != 1 {
		t.Errorf("audit counts: %v", count)
	}
	after, err := x.Audit(id.String(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range after[:len(after)-len(before)] {
		if strings.HasPrefix(e.Action, "case-") {
			t.Errorf("the recording's history holds %s", e.Action)
		}
	}
}

// TestSharedCases: with two nodes on one PostgreSQL catalog, a case opened
// on one (by a flag, with its note), a note added on the other and a
// status set on the first are on both within 2 s, and a ranged flag's
// range travels with it.
func TestSharedCases(t *testing.T) {
	ctx := t.Context()
	pg := pgtest.Start(t).NewDatabase(t)
	open := func(name string) *replay.Archive { return openNode(t, pg, filepath.Join(t.TempDir(), name)) }
	a, b := open("a"), open("b")
	file := teehistoriangen.Must(t, teehistoriangen.Options{Seed: 3, Players: 4, Duration: 20 * time.Second})
	// The same bytes on both nodes: one recording id.
	var id uuid.UUID
	for _, x := range []*replay.Archive{a, b} {
		res, _, err := x.IngestStream(ctx, "g.teehistorian", bytes.NewReader(file), 0, replay.LocalActor())
		if err != nil {
			t.Fatal(err)
		}
		id = res.ID
	}
	mod := replay.Actor{Name: "vera", Role: replay.RoleModerator}
	if _, err := a.FlagAt(ctx, mod, id.String(), "griefing", "spawn", "100", "200"); err != nil {
		t.Fatal(err)
	}
	var c archive.Case
	eventually(t, 2*time.Second, "a's flag and case on b", func() bool {
		m, err := b.Manifest(id.String())
		cs, cerr := b.Cases(replay.CaseFilter{Status: "open"})
		if err != nil || cerr != nil || len(m.Flags) != 1 || m.Flags[0].Range == nil || len(cs) != 1 || len(cs[0].Notes) != 1 {
			return false
		}
		c = cs[0]
		return *m.Flags[0].Range == archive.TickRange{From: 100, To: 200}
	})
	if _, err := b.AddCaseNote(ctx, mod, c.ID.String(), "seen on b"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.AddCaseNote(ctx, mod, c.ID.String(), "seen on a"); err != nil {
		t.Fatal(err)
	}
	resolved := "resolved"
	if _, err := a.UpdateCase(ctx, mod, c.ID.String(), replay.CaseChange{Status: &resolved}); err != nil {
		t.Fatal(err)
	}
	for name, x := range map[string]*replay.Archive{"a": a, "b": b} {
		eventually(t, 2*time.Second, "the thread and status on "+name, func() bool {
			got, err := x.Case(c.ID.String())
			return err == nil && got.Status == "resolved" && len(got.Notes) == 3
		})
	}
}
