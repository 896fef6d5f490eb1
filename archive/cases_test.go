package archive

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/formatstest"
)

// TestFlagRange: a flag carries a tick range, a second flag of the name
// replaces note and range (none: the whole recording again), a range that
// ends before it starts is refused, and the range survives a reopen.
func TestFlagRange(t *testing.T) {
	dir := t.TempDir()
	a := openTest(t, dir, Options{})
	res := ingest(t, a, formatstest.LinesFile("h", 5), func(m *formats.Metadata) {})
	m, err := a.SetFlagAt(res.ID, "griefing", "spawn blocked", &TickRange{From: 1, To: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Flags) != 1 || m.Flags[0].Range == nil || *m.Flags[0].Range != (TickRange{1, 3}) {
		t.Fatalf("flags = %+v", m.Flags)
	}
	if _, err := a.SetFlagAt(res.ID, "griefing", "", &TickRange{From: 3, To: 1}); !errors.Is(err, ErrBadFlagRange) {
		t.Errorf("backwards range: %v", err)
	}
	if _, err := a.SetFlagAt(res.ID, "other", "", &TickRange{From: -1, To: 1}); !errors.Is(err, ErrBadFlagRange) {
		t.Errorf("negative range: %v", err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	a = openTest(t, dir, Options{})
	m, err = a.Manifest(res.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Flags) != 1 || m.Flags[0].Range == nil || m.Flags[0].Range.To != 3 {
		t.Fatalf("after reopen: flags = %+v", m.Flags)
	}
	if m, err = a.SetFlag(res.ID, "griefing", "whole game"); err != nil || m.Flags[0].Range != nil || m.Flags[0].Note != "whole game" {
		t.Errorf("whole flag over a ranged one: %+v %v", m.Flags, err)
	}
}

// TestCases: a case is created, found by id and prefix, filtered by status,
// assignee and recording, gets notes (once each, in time order), changes
// status, survives a reopen; bad statuses, notes and ids are refused.
func TestCases(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	a := openTest(t, dir, Options{Now: clock})
	if cs, err := a.Cases(CaseFilter{}); err != nil || len(cs) != 0 {
		t.Fatalf("no cases yet: %v %v", cs, err)
	}
	if _, err := a.GetCase(uuid.New()); !errors.Is(err, ErrNoCase) {
		t.Errorf("unknown case: %v", err)
	}
	rec, rec2 := uuid.New(), uuid.New()
	c1, err := a.CreateCase(Case{ID: uuid.New(), Recording: rec, Status: CaseOpen, OpenedBy: "vera", Opened: now, Updated: now, Flag: "griefing"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.CreateCase(*c1); !errors.Is(err, ErrCaseExists) {
		t.Errorf("second create: %v", err)
	}
	if _, err := a.CreateCase(Case{ID: uuid.New(), Recording: rec, Status: "closed"}); !errors.Is(err, ErrBadCaseStatus) {
		t.Errorf("bad status: %v", err)
	}
	c2, err := a.CreateCase(Case{ID: uuid.New(), Recording: rec2, Status: CaseOpen, Assignee: "kit", OpenedBy: "kit", Opened: now.Add(time.Minute), Updated: now.Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}

	n1 := CaseNote{ID: uuid.New(), Who: "vera", At: now.Add(2 * time.Minute), Text: "  looked at the trails  "}
	got, err := a.AddCaseNote(c1.ID, n1)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Notes) != 1 || !got.Updated.Equal(n1.At) {
		t.Fatalf("after a note: %+v", got)
	}
	if got, err = a.AddCaseNote(c1.ID, n1); err != nil || len(got.Notes) != 1 {
		t.Errorf("the same note twice: %d notes, %v", len(got.Notes), err)
	}
	early := CaseNote{ID: uuid.New(), Who: "kit", At: now.Add(time.Minute), Text: "first look"}
	if got, err = a.AddCaseNote(c1.ID, early); err != nil || got.Notes[0].ID != early.ID {
		t.Errorf("a note made earlier goes first: %+v %v", got.Notes, err)
	}
	for _, bad := range []string{"", "   ", strings.Repeat("x", MaxCaseNote+1), "bell\a"} {
		if _, err := a.AddCaseNote(c1.ID, CaseNote{Who: "vera", Text: bad}); !errors.Is(err, ErrBadCaseNote) {
			t.Errorf("note %q: %v", bad, err)
		}
	}
	if _, err := a.AddCaseNote(uuid.New(), CaseNote{Who: "vera", Text: "x"}); !errors.Is(err, ErrNoCase) {
		t.Errorf("note on no case: %v", err)
	}

	// c1 was updated last: it comes first.
	cs, err := a.Cases(CaseFilter{Status: CaseOpen})
	if err != nil || len(cs) != 2 || cs[0].ID != c1.ID {
		t.Fatalf("open cases: %v %v", cs, err)
	}
	if cs, _ := a.Cases(CaseFilter{Assignee: "kit"}); len(cs) != 1 || cs[0].ID != c2.ID {
		t.Errorf("kit's cases: %v", cs)
	}
	if cs, _ := a.Cases(CaseFilter{Recording: rec}); len(cs) != 1 || cs[0].ID != c1.ID {
		t.Errorf("rec's cases: %v", cs)
	}
	if _, err := a.UpdateCase(c2.ID, func(c *Case) error { c.Status = CaseResolved; return nil }); err != nil {
		t.Fatal(err)
	}
	if cs, _ := a.Cases(CaseFilter{Status: CaseOpen}); len(cs) != 1 {
		t.Errorf("open after a resolve: %v", cs)
	}
	if _, err := a.UpdateCase(c2.ID, func(c *Case) error { c.Status = "later"; return nil }); !errors.Is(err, ErrBadCaseStatus) {
		t.Errorf("bad status update: %v", err)
	}

	if id, err := a.ResolveCase(c1.ID.String()[:8]); err != nil || id != c1.ID {
		t.Errorf("prefix: %v %v", id, err)
	}
	if _, err := a.ResolveCase("zz"); !errors.Is(err, ErrBadCaseID) {
		t.Errorf("not hex: %v", err)
	}
	var amb *AmbiguousError
	if _, err := a.ResolveCase(""); !errors.Is(err, ErrBadCaseID) {
		t.Errorf("empty: %v", err)
	}
	// Two cases whose ids share the first hex digit: "0" to "f" all but
	// surely name one of them; a digit naming both is ambiguous.
	if c1.ID.String()[0] == c2.ID.String()[0] {
		if _, err := a.ResolveCase(c1.ID.String()[:1]); !errors.As(err, &amb) {
			t.Errorf("shared prefix: %v", err)
		}
	}

	// PutCase (a follower's apply) keeps the notes it holds.
	put := *c1
	put.Status, put.Assignee, put.Notes = CaseDismissed, "kit", nil
	if got, err = a.PutCase(put); err != nil || len(got.Notes) != 2 || got.Status != CaseDismissed {
		t.Errorf("put: %+v %v", got, err)
	}

	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	a = openTest(t, dir, Options{Now: clock})
	got, err = a.GetCase(c1.ID)
	if err != nil || got.Status != CaseDismissed || got.Assignee != "kit" || len(got.Notes) != 2 || got.Notes[1].Text != "looked at the trails" {
		t.Errorf("after reopen: %+v %v", got, err)
	}
}
