// This file parses the moderator query language into a Query: terms, each
// naming a recording-level or event-level condition, combined by AND
// (a space), OR and parentheses.

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

// Query is a parsed query: its terms, and how they combine.
type Query struct {
	// Terms are every term of the query, in the order typed, wherever
	// they stand in the tree.
	Terms []Term
	// Root combines the terms with AND, OR and groups; nil means that
	// every term must hold (the query has no OR and no group). Tree
	// gives the tree either way.
	Root *Node
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
// terms (counted over the whole query, in every group), or groups nested
// deeper than MaxDepth, is refused.
//
// The grammar, AND binding tighter than OR (`a b OR c` is `(a b) OR c`):
//
//	query := or?
//	or    := and ("OR" and)*
//	and   := unary ("AND"? unary)*
//	unary := "-"? "(" or ")" | term
//
// OR and AND are operators only as bare upper-case words; `or`, `and` and
// `"OR"` are words to search for.
func Parse(q string) (*Query, error) {
	if len(q) > MaxQueryBytes {
		return nil, &ParseError{Pos: MaxQueryBytes, Term: termAt(q, MaxQueryBytes),
			Msg: fmt.Sprintf("the query is %d bytes; at most %d", len(q), MaxQueryBytes)}
	}
	p := &parser{q: q, a: textAnalyzer(), out: &Query{}}
	if err := p.advance(); err != nil {
		return nil, err
	}
	if p.tok.kind == tokEOF {
		return p.out, nil
	}
	root, err := p.or(0)
	if err != nil {
		return nil, err
	}
	switch p.tok.kind {
	case tokEOF:
	case tokRParen:
		return nil, &ParseError{Pos: p.tok.pos, Term: wordAt(q, p.tok.pos), Msg: "unbalanced ')': no '(' opens it (quote the value to search for it)"}
	default: // or() stops only at the end or at ')'
		return nil, &ParseError{Pos: p.tok.pos, Term: wordAt(q, p.tok.pos), Msg: "unexpected " + p.tok.kind.String()}
	}
	if root.Kind == TermNode || root.Kind == AndNode && !root.Neg && !hasGroups(root) {
		root = nil // the plain form: every term ANDs together
	}
	p.out.Root = root
	return p.out, nil
}

// MaxDepth bounds how deeply groups nest.
const MaxDepth = 8

// NodeKind says what a Node of a query's expression tree is.
type NodeKind int

// The kinds of node.
const (
	// TermNode is one term, Query.Terms[Node.Term]; its negation is the
	// term's Neg.
	TermNode NodeKind = iota
	// AndNode holds when all its Nodes hold.
	AndNode
	// OrNode holds when any of its Nodes holds.
	OrNode
)

// Node is one node of a query's expression tree: a term, or an AND or OR
// of nodes, so that the search can compile `(a OR b) -c` while the terms
// stay a flat list that checks (viewerQuery) and bounds read in one loop.
type Node struct {
	Kind  NodeKind
	Pos   int     // byte offset of the node in the query
	Neg   bool    // AndNode, OrNode: "-( ... )", the group excluded
	Term  int     // TermNode: the index of its term in Query.Terms
	Nodes []*Node // AndNode, OrNode: the operands, at least two
}

// hasGroups reports whether n holds anything but terms.
func hasGroups(n *Node) bool {
	for _, c := range n.Nodes {
		if c.Kind != TermNode {
			return true
		}
	}
	return false
}

// Tree returns the query's expression tree: Root, or, when Root is nil
// (a query of terms that all AND together, or a Query built by hand),
// an AND of every term. It is nil for the empty query.
func (q *Query) Tree() *Node {
	if q.Root != nil {
		return q.Root
	}
	switch len(q.Terms) {
	case 0:
		return nil
	case 1:
		return &Node{Kind: TermNode, Pos: q.Terms[0].Pos}
	}
	n := &Node{Kind: AndNode, Pos: q.Terms[0].Pos}
	for i := range q.Terms {
		n.Nodes = append(n.Nodes, &Node{Kind: TermNode, Pos: q.Terms[i].Pos, Term: i})
	}
	return n
}

// tokKind is the kind of a token of the query language.
type tokKind int

const (
	tokEOF tokKind = iota
	tokTerm
	tokLParen // "(" or "-(" (tok.neg)
	tokRParen
	tokOr
	tokAnd
)

func (k tokKind) String() string {
	return [...]string{"end of the query", "term", "'('", "')'", "OR", "AND"}[k]
}

// token is one token: a term (already checked and in parser.out.Terms at
// index term), a parenthesis or an operator word.
type token struct {
	kind tokKind
	pos  int
	neg  bool // tokLParen: "-("
	term int
}

// parser reads a query token by token (advance) into out.
type parser struct {
	q        string
	i        int // next byte to read
	a        analysis.Analyzer
	out      *Query
	prefixes int
	tok      token // the current token
}

// or parses `and ("OR" and)*` at the current token.
func (p *parser) or(depth int) (*Node, error) {
	first := p.tok
	n, err := p.and(depth)
	if err != nil {
		return nil, err
	}
	if p.tok.kind != tokOr {
		return n, nil
	}
	or := &Node{Kind: OrNode, Pos: first.pos}
	or.add(n)
	for p.tok.kind == tokOr {
		at := p.tok.pos
		if err := p.advance(); err != nil {
			return nil, err
		}
		if !p.operand() {
			return nil, p.dangling("OR", at)
		}
		n, err := p.and(depth)
		if err != nil {
			return nil, err
		}
		or.add(n)
	}
	return or, nil
}

// and parses `unary ("AND"? unary)*` at the current token.
func (p *parser) and(depth int) (*Node, error) {
	if !p.operand() {
		return nil, p.unexpected()
	}
	and := &Node{Kind: AndNode, Pos: p.tok.pos}
	for {
		n, err := p.unary(depth)
		if err != nil {
			return nil, err
		}
		and.add(n)
		if p.tok.kind == tokAnd {
			at := p.tok.pos
			if err := p.advance(); err != nil {
				return nil, err
			}
			if !p.operand() {
				return nil, p.dangling("AND", at)
			}
		}
		if !p.operand() {
			break
		}
	}
	if len(and.Nodes) == 1 {
		return and.Nodes[0], nil
	}
	return and, nil
}

// unary parses a term or a group at the current token.
func (p *parser) unary(depth int) (*Node, error) {
	t := p.tok
	if t.kind == tokTerm {
		if err := p.advance(); err != nil {
			return nil, err
		}
		return &Node{Kind: TermNode, Pos: t.pos, Term: t.term}, nil
	}
	// tokLParen
	if depth == MaxDepth {
		return nil, &ParseError{Pos: t.pos, Term: wordAt(p.q, t.pos), Msg: fmt.Sprintf("groups nest more than %d deep", MaxDepth)}
	}
	if err := p.advance(); err != nil {
		return nil, err
	}
	if p.tok.kind == tokRParen {
		return nil, &ParseError{Pos: t.pos, Term: p.q[t.pos : p.tok.pos+1], Msg: "empty parentheses"}
	}
	n, err := p.or(depth + 1)
	if err != nil {
		return nil, err
	}
	if p.tok.kind != tokRParen {
		return nil, &ParseError{Pos: t.pos, Term: wordAt(p.q, t.pos), Msg: "unbalanced '(': no ')' closes it"}
	}
	if err := p.advance(); err != nil {
		return nil, err
	}
	if t.neg {
		if n.Kind == TermNode {
			p.out.Terms[n.Term].Neg = !p.out.Terms[n.Term].Neg
		} else {
			n.Neg = !n.Neg
		}
	}
	n.Pos = t.pos
	return n, nil
}

// add appends c to n's operands, merging a group of n's own kind that is
// not negated: (a b) c is a b c, (a OR b) OR c is a OR b OR c.
func (n *Node) add(c *Node) {
	if c.Kind == n.Kind && !c.Neg {
		n.Nodes = append(n.Nodes, c.Nodes...)
		return
	}
	n.Nodes = append(n.Nodes, c)
}

// operand reports whether the current token starts an operand.
func (p *parser) operand() bool { return p.tok.kind == tokTerm || p.tok.kind == tokLParen }

// dangling is the error for an OR or AND at pos with no operand after it.
func (p *parser) dangling(word string, pos int) error {
	after := "the end of the query"
	if p.tok.kind != tokEOF {
		after = p.tok.kind.String()
	}
	return &ParseError{Pos: pos, Term: word, Msg: fmt.Sprintf("%s needs a term or group on each side, not %s (quote \"%s\" to search for the word)", word, after, word)}
}

// unexpected is the error for a token where an operand should start.
func (p *parser) unexpected() error {
	switch p.tok.kind {
	case tokOr, tokAnd:
		w := p.tok.kind.String()
		return &ParseError{Pos: p.tok.pos, Term: w, Msg: fmt.Sprintf("%s needs a term or group on each side (quote \"%s\" to search for the word)", w, w)}
	case tokRParen:
		return &ParseError{Pos: p.tok.pos, Term: wordAt(p.q, p.tok.pos), Msg: "unbalanced ')': no '(' opens it (quote the value to search for it)"}
	}
	return &ParseError{Pos: p.tok.pos, Term: wordAt(p.q, p.tok.pos), Msg: "expected a term"}
}

// advance reads the next token into p.tok; a term is checked and added to
// p.out.Terms.
func (p *parser) advance() error {
	q, i := p.q, p.i
	for i < len(q) && isSpace(q[i]) {
		i++
	}
	switch {
	case i >= len(q):
		p.i, p.tok = i, token{kind: tokEOF, pos: i}
		return nil
	case q[i] == '(':
		p.i, p.tok = i+1, token{kind: tokLParen, pos: i}
		return nil
	case q[i] == '-' && i+1 < len(q) && q[i+1] == '(':
		p.i, p.tok = i+2, token{kind: tokLParen, pos: i, neg: true}
		return nil
	case q[i] == ')':
		p.i, p.tok = i+1, token{kind: tokRParen, pos: i}
		return nil
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
		if i >= len(q) || isSpace(q[i]) || q[i] == ')' {
			return fail("'-' must be followed by a term")
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
			return fail("unknown operator %q (quote the term to search for it as text)", t.Op+":")
		}
		i = j + 1
	}
	// The value: quoted, or up to the next space or a ')' that no '(' of
	// the value opened (`de_dust(2)` is one value; `(map:x OR map:y)`
	// closes the group).
	if i < len(q) && q[i] == '"' {
		v, n, ok := unquote(q[i:])
		if !ok {
			i = len(q)
			return fail("unterminated quote")
		}
		i += n
		if i < len(q) && !isSpace(q[i]) && q[i] != ')' {
			return fail("expected a space after the closing quote")
		}
		t.Value, t.Quoted = v, true
	} else {
		if t.Op != "" && i < len(q) && q[i] == '(' {
			return fail("%s: a value cannot be a group; write (%s:a OR %s:b), or quote the value", t.Op, t.Op, t.Op)
		}
		j, open := i, 0
	value:
		for j < len(q) && !isSpace(q[j]) {
			switch q[j] {
			case '"':
				i = j
				return fail("unexpected quote inside a term")
			case '(':
				open++
			case ')':
				if open == 0 {
					break value
				}
				open--
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
		case (v == "OR" || v == "AND") && !t.Prefix:
			if t.Neg {
				return fail("'-' cannot exclude %s; quote \"%s\" to search for the word", v, v)
			}
			kind := tokOr
			if v == "AND" {
				kind = tokAnd
			}
			p.i, p.tok = i, token{kind: kind, pos: start}
			return nil
		case v == "NOT":
			return fail("NOT is not supported: write -term or -( ... ) to exclude, or quote \"NOT\" to search for the word")
		case v == "||" || v == "&&":
			return fail("%s is not supported: write OR or AND (upper-case), or quote \"%s\" to search for it", v, v)
		}
	}
	if t.Op == "id" && !t.Quoted {
		// Ids are matched by prefix, as every command takes them.
		t.Value, t.Prefix = strings.ToLower(strings.TrimSuffix(t.Value, "*")), true
	}
	if err := t.check(p.a); err != nil {
		return &ParseError{Pos: start, Term: t.Raw, Msg: err.Error()}
	}
	if t.Op == "flagged" && !t.Bool {
		// flagged:false is "not flagged": one query, negated.
		t.Neg, t.Bool = !t.Neg, true
	}
	if len(p.out.Terms) == MaxTerms {
		return &ParseError{Pos: start, Term: t.Raw, Msg: fmt.Sprintf("more than %d terms", MaxTerms)}
	}
	if t.Prefix {
		if p.prefixes++; p.prefixes > MaxPrefixTerms {
			return &ParseError{Pos: start, Term: t.Raw,
				Msg: fmt.Sprintf("more than %d prefix terms (word*, id:); spell some out", MaxPrefixTerms)}
		}
	}
	p.out.Terms = append(p.out.Terms, t)
	p.i, p.tok = i, token{kind: tokTerm, pos: start, term: len(p.out.Terms) - 1}
	return nil
}

// wordAt returns the run of non-space bytes of q from byte offset pos,
// cut to 64 bytes.
func wordAt(q string, pos int) string {
	hi := pos
	for hi < len(q) && !isSpace(q[hi]) && hi-pos < 64 {
		hi++
	}
	return strings.ToValidUTF8(q[pos:hi], "")
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
