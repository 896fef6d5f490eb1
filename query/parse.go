// This file parses the moderator query language into a Query: terms that
// AND together, each naming a recording-level or event-level condition.

package query

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"
	"github.com/replayarchive/replay/internal/units"
)

// ParseError says which term of a query is malformed and why.
type ParseError struct {
	Pos  int    // byte offset of the term in the query
	Term string // the offending term as typed
	Msg  string // what is wrong, e.g. "after: not a date"
}

// Error points at the term and its position in the query.
func (e *ParseError) Error() string {
	return fmt.Sprintf("query: position %d: %q: %s", e.Pos, e.Term, e.Msg)
}

// Level says whether a term filters recordings or matches events.
type Level int

// Term levels.
const (
	// RecordingLevel terms (player:, map:, after:, ...) filter recordings.
	RecordingLevel Level = iota
	// EventLevel terms (cmd:, chat:, kind:) match events; a recording
	// matches when at least one of its events does, and the matching
	// events are shown under it.
	EventLevel
	// FreeLevel terms (free words and quoted phrases) match recordings by
	// player name, map, server and attributes, or by any event's text; the
	// events they hit are shown.
	FreeLevel
)

// Term is one condition of a query.
type Term struct {
	Pos    int    // byte offset in the query
	Raw    string // the term as typed, including a leading '-'
	Op     string // operator ("player", "cmd", ...); "" for a free word or phrase
	Neg    bool   // "-term": exclude recordings that match
	Value  string // the value as typed, unquoted (lower-cased for keyword operators)
	Prefix bool   // value ended in '*': match values (or words) starting with Value
	Quoted bool   // value was a quoted phrase
	// Words are the analysed words of a text value (cmd:, chat:, free words):
	// lower-cased, split on word boundaries. More than one word is a phrase.
	Words []string
	// Time is the bound of after: and before:, and the (inclusive) start
	// of the window of at: and during: (zero: unbounded).
	Time time.Time
	// Until is the exclusive end of the window of at: and during: (zero:
	// unbounded).
	Until time.Time
	// Dur is the bound of longer: and shorter:.
	Dur time.Duration
	// Bool is the value of held:.
	Bool bool
}

// Level reports which level the term works at.
func (t *Term) Level() Level {
	op, _ := lookup(t.Op)
	switch {
	case t.Op == "":
		return FreeLevel
	case op.event != nil:
		return EventLevel
	}
	return RecordingLevel
}

// Query is a parsed query: all its terms must hold.
type Query struct {
	Terms []Term
}

// textAnalyzer splits text into lower-cased words. It is used for event text
// and free text both when indexing and when parsing queries.
func textAnalyzer() *analysis.DefaultAnalyzer {
	return &analysis.DefaultAnalyzer{
		Tokenizer:    unicode.NewUnicodeTokenizer(),
		TokenFilters: []analysis.TokenFilter{lowercase.NewLowerCaseFilter()},
	}
}

// words returns the analysed words of s.
func words(a analysis.Analyzer, s string) []string {
	toks := a.Analyze([]byte(s))
	out := make([]string, 0, len(toks))
	for _, t := range toks {
		out = append(out, string(t.Term))
	}
	return out
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// The bounds of one query. Each term becomes an index query and a prefix
// term (`kit*`) one per matching word of each field it searches, so an
// unbounded query is unbounded work: 20,000 terms `*e*` (80 KB) took 11.5 s
// over 106 recordings. Parse refuses a query past them.
const (
	// MaxQueryBytes bounds the length of a query.
	MaxQueryBytes = 2048
	// MaxTerms bounds the number of terms.
	MaxTerms = 32
	// MaxPrefixTerms bounds the number of prefix terms (`word*`, `id:`).
	MaxPrefixTerms = 8
)

// Parse parses a query. An empty query matches every recording. Errors are
// *ParseError values that point at the offending term; a query longer than
// MaxQueryBytes, or with more than MaxTerms terms or MaxPrefixTerms prefix
// terms, is refused.
func Parse(q string) (*Query, error) {
	if len(q) > MaxQueryBytes {
		return nil, &ParseError{Pos: MaxQueryBytes, Term: termAt(q, MaxQueryBytes),
			Msg: fmt.Sprintf("the query is %d bytes; at most %d", len(q), MaxQueryBytes)}
	}
	a := textAnalyzer()
	out := &Query{}
	prefixes := 0
	i := 0
	for {
		for i < len(q) && isSpace(q[i]) {
			i++
		}
		if i >= len(q) {
			break
		}
		start := i
		t := Term{Pos: start}
		fail := func(msg string, args ...any) error {
			end := i
			for end < len(q) && !isSpace(q[end]) {
				end++
			}
			if end < i {
				end = i
			}
			return &ParseError{Pos: start, Term: q[start:end], Msg: fmt.Sprintf(msg, args...)}
		}
		if q[i] == '-' {
			t.Neg = true
			i++
			if i >= len(q) || isSpace(q[i]) {
				return nil, fail("'-' must be followed by a term")
			}
		}
		// An operator is a run of letters and '-' followed by ':'.
		j := i
		for j < len(q) && (q[j] >= 'a' && q[j] <= 'z' || q[j] >= 'A' && q[j] <= 'Z' || q[j] == '-') {
			j++
		}
		if j < len(q) && q[j] == ':' && j > i {
			t.Op = strings.ToLower(q[i:j])
			if _, ok := operators[t.Op]; !ok {
				i = j + 1
				return nil, fail("unknown operator %q (quote the term to search for it as text)", t.Op+":")
			}
			i = j + 1
		}
		// The value: quoted or up to the next space.
		if i < len(q) && q[i] == '"' {
			v, n, ok := unquote(q[i:])
			if !ok {
				i = len(q)
				return nil, fail("unterminated quote")
			}
			i += n
			if i < len(q) && !isSpace(q[i]) {
				return nil, fail("expected a space after the closing quote")
			}
			t.Value, t.Quoted = v, true
		} else {
			j := i
			for j < len(q) && !isSpace(q[j]) {
				if q[j] == '"' {
					i = j
					return nil, fail("unexpected quote inside a term")
				}
				j++
			}
			t.Value = q[i:j]
			i = j
			if strings.HasSuffix(t.Value, "*") {
				t.Prefix = true
				t.Value = strings.TrimSuffix(t.Value, "*")
			}
		}
		t.Raw = q[start:i]
		if !t.Quoted && t.Op == "" {
			switch v := t.Value; {
			case v == "OR" || v == "AND" || v == "NOT" || v == "||" || v == "&&":
				return nil, fail("%s is not supported: terms always AND together; run one search per alternative, or quote \"%s\" to search for the word", v, v)
			case strings.HasPrefix(v, "(") || strings.HasSuffix(v, ")"):
				return nil, fail("parentheses are not supported: terms always AND together; quote the term to search for it as text")
			}
		}
		if t.Op == "id" && !t.Quoted {
			// Ids are matched by prefix, as every command takes them.
			t.Value, t.Prefix = strings.ToLower(strings.TrimSuffix(t.Value, "*")), true
		}
		if err := t.check(a); err != nil {
			return nil, &ParseError{Pos: start, Term: t.Raw, Msg: err.Error()}
		}
		if t.Op == "flagged" && !t.Bool {
			// flagged:false is "not flagged": one query, negated.
			t.Neg, t.Bool = !t.Neg, true
		}
		if len(out.Terms) == MaxTerms {
			return nil, &ParseError{Pos: start, Term: t.Raw, Msg: fmt.Sprintf("more than %d terms", MaxTerms)}
		}
		if t.Prefix {
			if prefixes++; prefixes > MaxPrefixTerms {
				return nil, &ParseError{Pos: start, Term: t.Raw,
					Msg: fmt.Sprintf("more than %d prefix terms (word*, id:); spell some out", MaxPrefixTerms)}
			}
		}
		out.Terms = append(out.Terms, t)
	}
	return out, nil
}

// termAt returns the term of q around byte offset pos (the run of
// non-space bytes holding it), cut to 64 bytes.
func termAt(q string, pos int) string {
	lo, hi := pos, pos
	for lo > 0 && !isSpace(q[lo-1]) && pos-lo < 32 {
		lo--
	}
	for hi < len(q) && !isSpace(q[hi]) && hi-pos < 32 {
		hi++
	}
	return strings.ToValidUTF8(q[lo:hi], "")
}

// unquote reads a double-quoted string at the start of s (backslash escapes
// '"' and '\'). It returns the value and the bytes consumed.
func unquote(s string) (string, int, bool) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if i+1 < len(s) {
				i++
				b.WriteByte(s[i])
			}
		case '"':
			return b.String(), i + 1, true
		default:
			b.WriteByte(s[i])
		}
	}
	return "", 0, false
}

// check validates the term's value and fills its typed fields.
func (t *Term) check(a analysis.Analyzer) error {
	name := t.Op
	if name == "" {
		name = "word"
	}
	if t.Value == "" {
		if t.Prefix {
			return fmt.Errorf("%s: empty prefix", name)
		}
		return fmt.Errorf("%s: empty value", name)
	}
	if !utf8.ValidString(t.Value) {
		return fmt.Errorf("%s: not valid UTF-8", name)
	}
	op, _ := lookup(t.Op)
	kind := op.kind
	if t.Prefix && kind != opKeyword && kind != opText {
		return fmt.Errorf("%s: prefix '*' is not allowed here", name)
	}
	switch kind {
	case opKeyword:
		if t.Op != "id" { // recording ids are matched exactly
			t.Value = strings.ToLower(t.Value)
		}
	case opText:
		t.Words = words(a, t.Value)
		if len(t.Words) == 0 {
			return fmt.Errorf("%s: no searchable words", name)
		}
		if t.Prefix && len(t.Words) > 1 {
			return fmt.Errorf("%s: a prefix must be a single word", name)
		}
	case opDate:
		tm, err := parseDate(t.Value)
		if err != nil {
			return fmt.Errorf("%s: not a date (want RFC 3339 or YYYY-MM-DD)", name)
		}
		if tm.Year() < 1700 || tm.Year() > 2200 {
			return fmt.Errorf("%s: date out of range (years 1700 to 2200)", name)
		}
		t.Time = tm
	case opWindow:
		from, until, err := parseWindow(t.Value, t.Op == "during")
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		t.Time, t.Until = from, until
	case opDuration:
		d, err := units.ParseDuration(t.Value)
		if err != nil {
			return fmt.Errorf("%s: not a duration (want e.g. 90s, 5m, 2h, 1d)", name)
		}
		t.Dur = d
	case opBool:
		switch strings.ToLower(t.Value) {
		case "true", "yes", "1":
			t.Bool = true
		case "false", "no", "0":
			t.Bool = false
		default:
			return fmt.Errorf("%s: want true or false", name)
		}
	}
	return nil
}

// parseDate reads RFC 3339 (with or without fractional seconds) or a
// YYYY-MM-DD date, which means midnight UTC of that day.
func parseDate(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	return time.Parse(time.DateOnly, s)
}

// windowLayouts are the forms a time of at: and during: may take, each
// with the span it means: a minute-precision value is the whole minute.
var windowLayouts = []struct {
	layout string
	span   time.Duration
}{
	{time.RFC3339Nano, 0}, // an instant
	{"2006-01-02T15:04:05Z07:00", time.Second},
	{"2006-01-02T15:04:05", time.Second},
	{"2006-01-02T15:04Z07:00", time.Minute},
	{"2006-01-02T15:04", time.Minute},
	{"2006-01-02T15Z07:00", time.Hour},
	{"2006-01-02T15", time.Hour},
	{time.DateOnly, 24 * time.Hour},
}

// parseSpan reads one time of at: or during: as the window [from, until)
// it means: a whole day, hour, minute or second as precise as it is
// written (UTC unless it has a zone), or an instant (until = from + 1ns).
func parseSpan(s string) (from, until time.Time, err error) {
	for _, l := range windowLayouts {
		t, err := time.Parse(l.layout, s)
		if err != nil || (l.span == 0 && !strings.Contains(s, ".")) {
			continue // whole seconds mean the whole second, below
		}
		if l.span == 0 {
			return t, t.Add(time.Nanosecond), nil
		}
		return t, t.Add(l.span), nil
	}
	return time.Time{}, time.Time{}, errors.New("not a time (want RFC 3339, YYYY-MM-DDThh:mm or YYYY-MM-DD)")
}

// parseWindow reads the value of at: (one time, the window it means) or
// during: (also FROM..TO, either side optional: from FROM's start to TO's
// start, exclusive).
func parseWindow(s string, ranged bool) (from, until time.Time, err error) {
	a, b, isRange := strings.Cut(s, "..")
	if !isRange {
		from, until, err = parseSpan(s)
	} else if !ranged {
		return from, until, errors.New("a range FROM..TO is for the during operator only")
	} else {
		if a == "" && b == "" {
			return from, until, errors.New("want FROM..TO, FROM.. or ..TO")
		}
		if a != "" {
			if from, _, err = parseSpan(a); err != nil {
				return from, until, err
			}
		}
		if b != "" {
			if until, _, err = parseSpan(b); err != nil {
				return from, until, err
			}
		}
		if !from.IsZero() && !until.IsZero() && !until.After(from) {
			return from, until, errors.New("TO is not after FROM")
		}
	}
	if err != nil {
		return from, until, err
	}
	for _, t := range []time.Time{from, until} {
		if !t.IsZero() && (t.Year() < 1700 || t.Year() > 2200) {
			return from, until, errors.New("date out of range (years 1700 to 2200)")
		}
	}
	return from, until, nil
}
