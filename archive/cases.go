// Cases: a moderator's work on one recording, from its opening (by a flag
// or by hand) to its resolution, with a thread of notes. They live in the
// catalog next to the flags so that they are as durable as the marks they
// explain; they are not searchable, so they write no change-log entry.

package archive

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"
	bolt "go.etcd.io/bbolt"
)

// Case statuses: a case is open until a moderator resolves it (the
// recording was dealt with) or dismisses it (nothing to do).
const (
	CaseOpen      = "open"
	CaseResolved  = "resolved"
	CaseDismissed = "dismissed"
)

// Bounds of what a case holds, so that a case stays one small catalog
// value and a shared catalog's entry.
const (
	// MaxCaseNote is the longest note, in bytes.
	MaxCaseNote = 4096
	// MaxCaseNotes is how many notes one case's thread holds.
	MaxCaseNotes = 500
	// maxAssignee bounds an assignee's name (a token's name or the owner's).
	maxAssignee = 128
)

// Errors of cases, each a caller's mistake.
var (
	ErrNoCase        = errors.New("no such case")
	ErrCaseExists    = errors.New("a case with that id exists")
	ErrBadCaseStatus = errors.New("a case's status is open, resolved or dismissed")
	ErrBadCaseNote   = errors.New("a note is 1 to 4096 bytes of text")
	ErrCaseFull      = errors.New("the case's thread is full (500 notes): open another case")
	ErrBadAssignee   = errors.New("an assignee is a moderator's name: printable, at most 128 bytes")
	ErrBadCaseID     = errors.New("not a case id or id prefix")
)

// Case is a moderator's case about one recording: why it was opened, who
// works on it, where it stands, and the thread of moderators' notes.
type Case struct {
	ID        uuid.UUID `json:"id"`
	Recording uuid.UUID `json:"recording"`
	// Status is CaseOpen, CaseResolved or CaseDismissed.
	Status string `json:"status"`
	// Assignee is the moderator working on it ("" for nobody yet).
	Assignee string `json:"assignee,omitempty"`
	// Flag names the flag that opened it ("" when opened by hand).
	Flag     string    `json:"flag,omitempty"`
	OpenedBy string    `json:"opened_by"`
	Opened   time.Time `json:"opened"`
	// Updated is when its status, assignee or thread last changed.
	Updated time.Time  `json:"updated"`
	Notes   []CaseNote `json:"notes"`
}

// CaseNote is one note of a case's thread. Its id makes adding it
// idempotent: a shared catalog's follower applies each note once.
type CaseNote struct {
	ID   uuid.UUID `json:"id"`
	Who  string    `json:"who"`
	At   time.Time `json:"at"`
	Text string    `json:"text"`
}

// LastNote returns the thread's newest note, or nil.
func (c *Case) LastNote() *CaseNote {
	if len(c.Notes) == 0 {
		return nil
	}
	return &c.Notes[len(c.Notes)-1]
}

// CaseStatus returns s as a status, or ErrBadCaseStatus.
func CaseStatus(s string) (string, error) {
	switch s = strings.ToLower(strings.TrimSpace(s)); s {
	case CaseOpen, CaseResolved, CaseDismissed:
		return s, nil
	}
	return "", fmt.Errorf("status %q: %w", s, ErrBadCaseStatus)
}

// CaseNoteText returns text as a note keeps it (spaces around it trimmed),
// or ErrBadCaseNote: empty, too long, not UTF-8 or holding control
// characters other than line breaks and tabs.
func CaseNoteText(text string) (string, error) {
	text = strings.TrimSpace(text)
	if text == "" || len(text) > MaxCaseNote || !utf8.ValidString(text) ||
		strings.ContainsFunc(text, func(r rune) bool { return unicode.IsControl(r) && r != '\n' && r != '\t' }) {
		return "", ErrBadCaseNote
	}
	return text, nil
}

// CaseAssignee returns name as an assignee is kept, or ErrBadAssignee; ""
// (nobody) is one.
func CaseAssignee(name string) (string, error) {
	name = strings.TrimSpace(name)
	if len(name) > maxAssignee || strings.ContainsFunc(name, func(r rune) bool { return !unicode.IsPrint(r) }) {
		return "", fmt.Errorf("assignee %q: %w", name, ErrBadAssignee)
	}
	return name, nil
}

// check refuses a case that is not one (from a caller or another node).
func (c *Case) check() error {
	if c.ID == uuid.Nil || c.Recording == uuid.Nil {
		return errors.New("a case needs an id and a recording")
	}
	if _, err := CaseStatus(c.Status); err != nil {
		return err
	}
	if _, err := CaseAssignee(c.Assignee); err != nil {
		return err
	}
	if len(c.Notes) > MaxCaseNotes {
		return ErrCaseFull
	}
	return nil
}

// CreateCase stores a new case (ErrCaseExists when its id is taken).
func (a *Archive) CreateCase(c Case) (*Case, error) {
	if err := c.check(); err != nil {
		return nil, fmt.Errorf("archive: case: %w", err)
	}
	if c.Notes == nil {
		c.Notes = []CaseNote{}
	}
	err := a.catalog.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketCases)
		if err != nil {
			return err
		}
		if b.Get(c.ID[:]) != nil {
			return fmt.Errorf("%s: %w", c.ID, ErrCaseExists)
		}
		return putCase(b, &c)
	})
	if err != nil {
		return nil, fmt.Errorf("archive: case: %w", err)
	}
	return &c, nil
}

// PutCase stores c's status, assignee and opening as they are, creating
// it if needed, and keeps the notes the stored case holds (adding c's
// notes it lacks): how a shared catalog's follower applies a case.
func (a *Archive) PutCase(c Case) (*Case, error) {
	if err := c.check(); err != nil {
		return nil, fmt.Errorf("archive: case: %w", err)
	}
	var out *Case
	err := a.catalog.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketCases)
		if err != nil {
			return err
		}
		have, err := getCase(b, c.ID)
		if err != nil && !errors.Is(err, ErrNoCase) {
			return err
		}
		if have != nil {
			notes := have.Notes
			for _, n := range c.Notes {
				notes = addNote(notes, n)
			}
			c.Notes = notes
		}
		if c.Notes == nil {
			c.Notes = []CaseNote{}
		}
		out = &c
		return putCase(b, &c)
	})
	if err != nil {
		return nil, fmt.Errorf("archive: case: %w", err)
	}
	return out, nil
}

// UpdateCase applies fn to case id in one transaction.
func (a *Archive) UpdateCase(id uuid.UUID, fn func(*Case) error) (*Case, error) {
	var c *Case
	err := a.catalog.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketCases)
		if b == nil {
			return fmt.Errorf("%s: %w", id, ErrNoCase)
		}
		var err error
		if c, err = getCase(b, id); err != nil {
			return err
		}
		if err := fn(c); err != nil {
			return err
		}
		if err := c.check(); err != nil {
			return err
		}
		return putCase(b, c)
	})
	if err != nil {
		return nil, fmt.Errorf("archive: case: %w", err)
	}
	return c, nil
}

// AddCaseNote adds note n to case id's thread (a note it holds already is
// not added twice) and marks the case updated at the note's time.
func (a *Archive) AddCaseNote(id uuid.UUID, n CaseNote) (*Case, error) {
	text, err := CaseNoteText(n.Text)
	if err != nil {
		return nil, fmt.Errorf("archive: case %s: %w", id, err)
	}
	n.Text = text
	if n.ID == uuid.Nil {
		n.ID = uuid.New()
	}
	if n.At.IsZero() {
		n.At = a.opts.Now().UTC()
	}
	return a.UpdateCase(id, func(c *Case) error {
		if slices.ContainsFunc(c.Notes, func(have CaseNote) bool { return have.ID == n.ID }) {
			return nil
		}
		if len(c.Notes) >= MaxCaseNotes {
			return fmt.Errorf("%s: %w", id, ErrCaseFull)
		}
		c.Notes = addNote(c.Notes, n)
		if n.At.After(c.Updated) {
			c.Updated = n.At
		}
		return nil
	})
}

// addNote inserts n into notes in time order unless a note has its id.
func addNote(notes []CaseNote, n CaseNote) []CaseNote {
	if slices.ContainsFunc(notes, func(have CaseNote) bool { return have.ID == n.ID }) {
		return notes
	}
	i := len(notes)
	for i > 0 && notes[i-1].At.After(n.At) {
		i--
	}
	return slices.Insert(notes, i, n)
}

// GetCase returns case id.
func (a *Archive) GetCase(id uuid.UUID) (*Case, error) {
	var c *Case
	err := a.catalog.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketCases)
		if b == nil {
			return fmt.Errorf("%s: %w", id, ErrNoCase)
		}
		var err error
		c, err = getCase(b, id)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("archive: case: %w", err)
	}
	return c, nil
}

// CaseFilter chooses cases: each field set must match ("" matches all).
type CaseFilter struct {
	Status    string
	Assignee  string
	Recording uuid.UUID
}

// Cases returns the cases f chooses, most recently updated first. Cases are
// few beside recordings (a moderator's work), so it reads them all.
func (a *Archive) Cases(f CaseFilter) ([]Case, error) {
	out := []Case{}
	err := a.catalog.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketCases)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			var c Case
			if err := json.Unmarshal(v, &c); err != nil {
				return fmt.Errorf("case %x: %w", k, err)
			}
			if (f.Status == "" || c.Status == f.Status) && (f.Assignee == "" || c.Assignee == f.Assignee) &&
				(f.Recording == uuid.Nil || c.Recording == f.Recording) {
				out = append(out, c)
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("archive: cases: %w", err)
	}
	slices.SortStableFunc(out, func(x, y Case) int {
		if c := y.Updated.Compare(x.Updated); c != 0 {
			return c
		}
		return bytes.Compare(x.ID[:], y.ID[:])
	})
	return out, nil
}

// ResolveCase finds the case ref names: its id, or a unique prefix of its
// hex digits (as recordings' ids are shortened).
func (a *Archive) ResolveCase(ref string) (uuid.UUID, error) {
	if id, err := uuid.Parse(ref); err == nil {
		_, err := a.GetCase(id)
		return id, err
	}
	hexRef := strings.ToLower(strings.ReplaceAll(ref, "-", ""))
	if hexRef == "" || len(hexRef) > 32 {
		return uuid.Nil, fmt.Errorf("case %q: %w (want 1 to 32 hex digits)", ref, ErrBadCaseID)
	}
	if _, err := hex.DecodeString(hexRef + strings.Repeat("0", len(hexRef)%2)); err != nil {
		return uuid.Nil, fmt.Errorf("case %q: %w (want hex digits)", ref, ErrBadCaseID)
	}
	prefix, _ := hex.DecodeString(hexRef[:len(hexRef)&^1])
	var found []uuid.UUID
	more := false
	err := a.catalog.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketCases)
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			if strings.HasPrefix(hex.EncodeToString(k), hexRef) {
				if len(found) == MaxAmbiguous {
					more = true
					break
				}
				found = append(found, uuid.UUID(k))
			}
		}
		return nil
	})
	switch {
	case err != nil:
		return uuid.Nil, fmt.Errorf("archive: cases: %w", err)
	case len(found) == 0:
		return uuid.Nil, fmt.Errorf("case %s: %w", ref, ErrNoCase)
	case len(found) > 1:
		return uuid.Nil, &AmbiguousError{Ref: ref, Matches: found, More: more}
	}
	return found[0], nil
}

func getCase(b *bolt.Bucket, id uuid.UUID) (*Case, error) {
	v := b.Get(id[:])
	if v == nil {
		return nil, fmt.Errorf("%s: %w", id, ErrNoCase)
	}
	c := new(Case)
	if err := json.Unmarshal(v, c); err != nil {
		return nil, fmt.Errorf("case %s: %w", id, err)
	}
	if c.Notes == nil {
		c.Notes = []CaseNote{}
	}
	return c, nil
}

func putCase(b *bolt.Bucket, c *Case) error {
	v, err := json.Marshal(c)
	if err != nil {
		return err
	}
	return b.Put(c.ID[:], v)
}
