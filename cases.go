// Cases: a moderator's work on a recording, opened by a flag or by hand,
// assigned, annotated and closed. Each change commits to the archive,
// is audited, and with a shared catalog is published there first (the
// case and each note as entries of their own, so notes two nodes add at
// once are both kept) and applied by every other node.
//
// Cases are moderators' data: the server gives them to moderators and
// admins only. Their audit entries are the archive's, not the
// recording's (Recording is zero, the case and recording named in
// Detail), so a viewer's view of a recording's history shows no case.

package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/catalog"
)

// Audit actions of cases.
const (
	AuditCaseOpen   = "case-open"
	AuditCaseNote   = "case-note"
	AuditCaseStatus = "case-status"
	AuditCaseAssign = "case-assign"
)

// Kinds of the shared catalog's case entries: kindCase's key is the case
// id, its value a sharedCase; kindCaseNote's key "<case id>/<note id>",
// its value an archive.CaseNote. Neither is ever deleted.
const (
	kindCase     catalog.Kind = "case"
	kindCaseNote catalog.Kind = "case-note"
)

// ErrNotModerator is returned for an assignee who is not a moderator: no
// moderator's or admin's token has the name, nor is it the caller's own.
var ErrNotModerator = errors.New("no moderator has that name")

// sharedCase is a case as the shared catalog holds it, without its notes.
type sharedCase struct {
	Recording uuid.UUID `json:"recording"`
	Status    string    `json:"status"`
	Assignee  string    `json:"assignee,omitempty"`
	Flag      string    `json:"flag,omitempty"`
	OpenedBy  string    `json:"opened_by"`
	Opened    time.Time `json:"opened"`
	Updated   time.Time `json:"updated"`
}

func sharedCaseOf(c *archive.Case) sharedCase {
	return sharedCase{Recording: c.Recording, Status: c.Status, Assignee: c.Assignee, Flag: c.Flag,
		OpenedBy: c.OpenedBy, Opened: c.Opened, Updated: c.Updated}
}

func caseNoteKey(c, n uuid.UUID) string { return c.String() + "/" + n.String() }

// CaseFilter chooses the cases Cases lists; fields left empty match all.
type CaseFilter struct {
	// Status is "open", "resolved" or "dismissed".
	Status string
	// Assignee is a moderator's name.
	Assignee string
	// Recording is a recording id or unique prefix.
	Recording string
	// Player, when it names one, keeps the cases of the recordings that
	// player is among (by name, case-insensitively as the player page
	// finds them, or by id): the player page's cases. A recording taken
	// down or gone no longer says who played, and its cases are left out.
	Player PlayerKey
}

// Cases lists the cases f chooses, most recently changed first.
func (x *Archive) Cases(f CaseFilter) ([]archive.Case, error) {
	af := archive.CaseFilter{Assignee: strings.TrimSpace(f.Assignee)}
	if f.Status != "" {
		s, err := archive.CaseStatus(f.Status)
		if err != nil {
			return nil, err
		}
		af.Status = s
	}
	if f.Recording != "" {
		id, err := x.a.Resolve(f.Recording)
		if err != nil && !errors.Is(err, archive.ErrNotFound) {
			return nil, err
		}
		if err != nil {
			// A recording taken down or gone keeps its cases: a full id
			// still finds them.
			if id, err = uuid.Parse(f.Recording); err != nil {
				return []archive.Case{}, nil
			}
		}
		af.Recording = id
	}
	cs, err := x.a.Cases(af)
	if err != nil || f.Player == (PlayerKey{}) {
		return cs, err
	}
	return x.playerCases(cs, f.Player)
}

// playerCases keeps the cases of cs whose recording k is among, reading
// each recording's manifest once.
func (x *Archive) playerCases(cs []archive.Case, k PlayerKey) ([]archive.Case, error) {
	in := map[uuid.UUID]bool{}
	out := cs[:0]
	for _, c := range cs {
		ok, seen := in[c.Recording]
		if !seen {
			m, err := x.a.Manifest(c.Recording)
			if err != nil && !errors.Is(err, archive.ErrNotFound) {
				return nil, fmt.Errorf("cases of player: recording %s: %w", c.Recording, err)
			}
			if err == nil {
				for _, p := range m.Meta.Players {
					if k.ID != "" && strings.EqualFold(p.ID, k.ID) || k.ID == "" && strings.EqualFold(p.Name, k.Name) {
						ok = true
						break
					}
				}
			}
			in[c.Recording] = ok
		}
		if ok {
			out = append(out, c)
		}
	}
	return out, nil
}

// Case returns the case ref (an id or a unique prefix) names.
func (x *Archive) Case(ref string) (*archive.Case, error) {
	id, err := x.a.ResolveCase(ref)
	if err != nil {
		return nil, err
	}
	return x.a.GetCase(id)
}

// OpenCase opens a case on recording ref by hand, with note (optional) as
// the first of its thread.
func (x *Archive) OpenCase(ctx context.Context, by Actor, ref, note string) (*archive.Case, error) {
	if x.opts.ReadOnly {
		return nil, ErrReadOnly
	}
	if note != "" {
		if _, err := archive.CaseNoteText(note); err != nil {
			return nil, err
		}
	}
	id, err := x.a.Resolve(ref)
	if err != nil {
		return nil, err
	}
	return x.openCase(ctx, by, id, "", note)
}

// openCase opens a case on recording id (flag names the flag that opened
// it, "" by hand) with note as its first, and audits it.
func (x *Archive) openCase(ctx context.Context, by Actor, id uuid.UUID, flag, note string) (*archive.Case, error) {
	now := x.now()
	c := archive.Case{ID: uuid.New(), Recording: id, Status: archive.CaseOpen, Flag: flag, OpenedBy: by.Name,
		Opened: now, Updated: now, Notes: []archive.CaseNote{}}
	var n *archive.CaseNote
	if note != "" {
		text, err := archive.CaseNoteText(note)
		if err != nil {
			return nil, err
		}
		n = &archive.CaseNote{ID: uuid.New(), Who: by.Name, At: now, Text: text}
		c.Notes = append(c.Notes, *n)
	}
	done := x.change()
	err := x.publish(ctx, kindCase, c.ID.String(), sharedCaseOf(&c))
	if err == nil && n != nil {
		err = x.publish(ctx, kindCaseNote, caseNoteKey(c.ID, n.ID), n)
	}
	var out *archive.Case
	if err == nil {
		out, err = x.a.CreateCase(c)
	}
	done()
	if err != nil {
		return nil, err
	}
	detail := fmt.Sprintf("case %s on %s", c.ID, id)
	if flag != "" {
		detail += " (flag " + flag + ")"
	}
	x.audit(archive.AuditEntry{Who: by.Name, Action: AuditCaseOpen, Detail: detail, Reason: note})
	return out, nil
}

// flagCase follows a flag up: a note on the recording's open case (the
// most recently changed one), or a new case when none is open.
func (x *Archive) flagCase(ctx context.Context, by Actor, m *archive.Manifest, name, note string, span *archive.TickRange) error {
	text := "Flagged " + name
	if span != nil {
		text += fmt.Sprintf(" at ticks %d-%d", span.From, span.To)
	}
	if note != "" {
		text += ": " + note
	}
	if len(text) > archive.MaxCaseNote {
		text = text[:archive.MaxCaseNote]
	}
	open, err := x.a.Cases(archive.CaseFilter{Status: archive.CaseOpen, Recording: m.ID})
	if err != nil {
		return err
	}
	if len(open) > 0 {
		_, err := x.AddCaseNote(ctx, by, open[0].ID.String(), text)
		return err
	}
	_, err = x.openCase(ctx, by, m.ID, name, text)
	return err
}

// AddCaseNote adds a note by by to case ref's thread.
func (x *Archive) AddCaseNote(ctx context.Context, by Actor, ref, text string) (*archive.Case, error) {
	if x.opts.ReadOnly {
		return nil, ErrReadOnly
	}
	text, err := archive.CaseNoteText(text)
	if err != nil {
		return nil, err
	}
	c, err := x.Case(ref)
	if err != nil {
		return nil, err
	}
	id := c.ID
	if len(c.Notes) >= archive.MaxCaseNotes {
		return nil, fmt.Errorf("case %s: %w", id, archive.ErrCaseFull)
	}
	n := archive.CaseNote{ID: uuid.New(), Who: by.Name, At: x.now(), Text: text}
	done := x.change()
	err = x.publish(ctx, kindCaseNote, caseNoteKey(id, n.ID), n)
	if err == nil {
		c, err = x.a.AddCaseNote(id, n)
	}
	done()
	if err != nil {
		return nil, err
	}
	x.audit(archive.AuditEntry{Who: by.Name, Action: AuditCaseNote, Detail: fmt.Sprintf("case %s on %s", id, c.Recording), Reason: text})
	return c, nil
}

// CaseChange is what UpdateCase changes: the fields that are set.
type CaseChange struct {
	// Status is "open", "resolved" or "dismissed".
	Status *string
	// Assignee is a moderator's name ("" for nobody).
	Assignee *string
}

// UpdateCase changes case ref's status or assignee. An assignee must be a
// moderator: the name of a moderator's or an admin's token, the owner, or
// by itself (ErrNotModerator).
func (x *Archive) UpdateCase(ctx context.Context, by Actor, ref string, ch CaseChange) (*archive.Case, error) {
	if x.opts.ReadOnly {
		return nil, ErrReadOnly
	}
	var status, assignee string
	if ch.Status != nil {
		s, err := archive.CaseStatus(*ch.Status)
		if err != nil {
			return nil, err
		}
		status = s
	}
	if ch.Assignee != nil {
		a, err := archive.CaseAssignee(*ch.Assignee)
		if err != nil {
			return nil, err
		}
		if err := x.checkModerator(by, a); err != nil {
			return nil, err
		}
		assignee = a
	}
	c, err := x.Case(ref)
	if err != nil {
		return nil, err
	}
	id := c.ID
	var entries []archive.AuditEntry
	detail := fmt.Sprintf("case %s on %s", id, c.Recording)
	want := *c
	if ch.Status != nil && status != c.Status {
		want.Status = status
		entries = append(entries, archive.AuditEntry{Who: by.Name, Action: AuditCaseStatus, Detail: detail + ": " + c.Status + " to " + status})
	}
	if ch.Assignee != nil && assignee != c.Assignee {
		want.Assignee = assignee
		to := assignee
		if to == "" {
			to = "nobody"
		}
		entries = append(entries, archive.AuditEntry{Who: by.Name, Action: AuditCaseAssign, Detail: detail + ": to " + to})
	}
	if len(entries) == 0 {
		return c, nil
	}
	want.Updated = x.now()
	done := x.change()
	err = x.publish(ctx, kindCase, id.String(), sharedCaseOf(&want))
	if err == nil {
		c, err = x.a.UpdateCase(id, func(c *archive.Case) error {
			c.Status, c.Assignee, c.Updated = want.Status, want.Assignee, want.Updated
			return nil
		})
	}
	done()
	if err != nil {
		return nil, err
	}
	x.audit(entries...)
	return c, nil
}

// checkModerator refuses an assignee who is not a moderator.
func (x *Archive) checkModerator(by Actor, name string) error {
	owner := LocalActor().Name
	if name == "" || name == by.Name || name == owner || name == owner+" (browser)" {
		return nil
	}
	toks, err := x.a.Tokens()
	if err != nil {
		return err
	}
	if slices.ContainsFunc(toks, func(t archive.Token) bool {
		return t.Name == name && (t.Role == RoleModerator.String() || t.Role == RoleAdmin.String())
	}) {
		return nil
	}
	return fmt.Errorf("assignee %q: %w (a moderator's or admin's token name)", name, ErrNotModerator)
}

// applyCase makes this archive's case agree with the shared catalog's
// entry: a case's status and assignee, or one note.
func (x *Archive) applyCase(e catalog.Entry) error {
	if e.Deleted {
		return nil // cases are never deleted
	}
	switch e.Kind {
	case kindCase:
		id, err := uuid.Parse(e.Key)
		if err != nil {
			return fmt.Errorf("not a case key")
		}
		var sc sharedCase
		if err := json.Unmarshal(e.Value, &sc); err != nil {
			return err
		}
		_, err = x.a.PutCase(archive.Case{ID: id, Recording: sc.Recording, Status: sc.Status, Assignee: sc.Assignee,
			Flag: sc.Flag, OpenedBy: sc.OpenedBy, Opened: sc.Opened, Updated: sc.Updated})
		return err
	case kindCaseNote:
		cs, _, _ := strings.Cut(e.Key, "/")
		id, err := uuid.Parse(cs)
		if err != nil {
			return fmt.Errorf("not a case note key")
		}
		var n archive.CaseNote
		if err := json.Unmarshal(e.Value, &n); err != nil {
			return err
		}
		_, err = x.a.AddCaseNote(id, n)
		return err
	}
	return nil
}

// seedCases gives a shared catalog the cases this archive held before it
// followed one (create: what the catalog holds wins).
func (x *Archive) seedCases(create func(kind catalog.Kind, key string, v any) error) error {
	cs, err := x.a.Cases(archive.CaseFilter{})
	if err != nil {
		return err
	}
	for i := range cs {
		c := &cs[i]
		if err := create(kindCase, c.ID.String(), sharedCaseOf(c)); err != nil {
			return err
		}
		for _, n := range c.Notes {
			if err := create(kindCaseNote, caseNoteKey(c.ID, n.ID), n); err != nil {
				return err
			}
		}
	}
	return nil
}
