// Tests for the query language parser.

package query

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	day := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		q    string
		want []Term
	}{
		{"", nil},
		{"player:Kitty", []Term{{Pos: 0, Raw: "player:Kitty", Op: "player", Value: "kitty"}}},
		{"  PLAYER:kit*", []Term{{Pos: 2, Raw: "PLAYER:kit*", Op: "player", Value: "kit", Prefix: true}}},
		{`player:"Kitty Cat"`, []Term{{Raw: `player:"Kitty Cat"`, Op: "player", Value: "kitty cat", Quoted: true}}},
		{"-flag:aimbot", []Term{{Raw: "-flag:aimbot", Op: "flag", Neg: true, Value: "aimbot"}}},
		{"cmd:Kick", []Term{{Raw: "cmd:Kick", Op: "cmd", Value: "Kick", Words: []string{"kick"}}}},
		{`cmd:"ban 3"`, []Term{{Raw: `cmd:"ban 3"`, Op: "cmd", Value: "ban 3", Quoted: true, Words: []string{"ban", "3"}}}},
		{`chat:"say \"hi\""`, []Term{{Raw: `chat:"say \"hi\""`, Op: "chat", Value: `say "hi"`, Quoted: true, Words: []string{"say", "hi"}}}},
		{"after:2024-05-01", []Term{{Raw: "after:2024-05-01", Op: "after", Value: "2024-05-01", Time: day}}},
		{"before:2024-05-01T00:00:00Z", []Term{{Raw: "before:2024-05-01T00:00:00Z", Op: "before", Value: "2024-05-01T00:00:00Z", Time: day}}},
		{"longer:90s", []Term{{Raw: "longer:90s", Op: "longer", Value: "90s", Dur: 90 * time.Second}}},
		{"shorter:2d", []Term{{Raw: "shorter:2d", Op: "shorter", Value: "2d", Dur: 48 * time.Hour}}},
		{"held:yes", []Term{{Raw: "held:yes", Op: "held", Value: "yes", Bool: true}}},
		{"Kick", []Term{{Raw: "Kick", Value: "Kick", Words: []string{"kick"}}}},
		{`"gg wp"`, []Term{{Raw: `"gg wp"`, Value: "gg wp", Quoted: true, Words: []string{"gg", "wp"}}}},
		{"id:ABC-1", []Term{{Raw: "id:ABC-1", Op: "id", Value: "abc-1", Prefix: true}}},
		{"longer:2w", []Term{{Raw: "longer:2w", Op: "longer", Value: "2w", Dur: 14 * 24 * time.Hour}}},
		{`"OR"`, []Term{{Raw: `"OR"`, Value: "OR", Quoted: true, Words: []string{"or"}}}},
		{"player:x map:y", []Term{
			{Pos: 0, Raw: "player:x", Op: "player", Value: "x"},
			{Pos: 9, Raw: "map:y", Op: "map", Value: "y"},
		}},
	}
	for _, tc := range tests {
		q, err := Parse(tc.q)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.q, err)
			continue
		}
		if !reflect.DeepEqual(q.Terms, tc.want) {
			t.Errorf("Parse(%q):\n got %+v\nwant %+v", tc.q, q.Terms, tc.want)
		}
	}
}

func TestParseLevels(t *testing.T) {
	q, err := Parse(`player:x cmd:kick chat:hi kind:vote word "a phrase" after:2024-01-01`)
	if err != nil {
		t.Fatal(err)
	}
	want := []Level{RecordingLevel, EventLevel, EventLevel, EventLevel, FreeLevel, FreeLevel, RecordingLevel}
	for i, tm := range q.Terms {
		if tm.Level() != want[i] {
			t.Errorf("%s: level %d, want %d", tm.Raw, tm.Level(), want[i])
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		q    string
		pos  int
		term string
		msg  string
	}{
		{"after:2024-13-99", 0, "after:2024-13-99", "after: not a date"},
		{"player:kitty before:yesterday", 13, "before:yesterday", "before: not a date"},
		{"after:1500-01-01", 0, "after:1500-01-01", "after: date out of range"},
		{"at:yesterday", 0, "at:yesterday", "at: not a time"},
		{"at:2024-01-01..2024-01-02", 0, "at:2024-01-01..2024-01-02", "at: a range FROM..TO is for the during operator only"},
		{"during:..", 0, "during:..", "during: want FROM..TO"},
		{"during:2024-01-02..2024-01-01", 0, "during:2024-01-02..2024-01-01", "during: TO is not after FROM"},
		{"during:1500-01-01..", 0, "during:1500-01-01..", "during: date out of range"},
		{"longer:5x", 0, "longer:5x", "longer: not a duration"},
		{"shorter:-5m", 0, "shorter:-5m", "shorter: not a duration"},
		{"shorter:1.5x", 0, "shorter:1.5x", "shorter: not a duration"},
		{"player:a NOT player:b", 9, "NOT", "NOT is not supported"},
		{"a || b", 2, "||", "|| is not supported"},
		{"a OR", 2, "OR", "OR needs a term or group on each side, not the end"},
		{"OR a", 0, "OR", "OR needs a term or group on each side"},
		{"a OR OR b", 2, "OR", "OR needs a term or group on each side, not OR"},
		{"a AND", 2, "AND", "AND needs a term or group on each side"},
		{"a AND OR b", 2, "AND", "AND needs a term or group on each side, not OR"},
		{"(a OR)", 3, "OR", "OR needs a term or group on each side, not ')'"},
		{"(a OR b", 0, "(a", "unbalanced '(': no ')' closes it"},
		{"x (a (b)", 2, "(a", "unbalanced '('"},
		{"a OR b)", 6, ")", "unbalanced ')'"},
		{")", 0, ")", "unbalanced ')'"},
		{"a) b", 1, ")", "unbalanced ')'"},
		{"()", 0, "()", "empty parentheses"},
		{"a -()", 2, "-()", "empty parentheses"},
		{"-OR", 0, "-OR", "'-' cannot exclude OR"},
		{"(-)", 1, "-)", "'-' must be followed by a term"},
		{"- (a)", 0, "-", "'-' must be followed by a term"},
		{"map:(a OR b)", 0, "map:(a", "map: a value cannot be a group"},
		{strings.Repeat("(", MaxDepth+1) + "a" + strings.Repeat(")", MaxDepth+1), MaxDepth, "(a" + strings.Repeat(")", MaxDepth+1), "groups nest more than 8 deep"},
		{strings.Repeat("(", MaxDepth) + "a" + strings.Repeat(")", MaxDepth), -1, "", ""}, // at the bound
		{`(cmd:"ban 3")`, -1, "", ""},
		{"(player:a OR player:b)", -1, "", ""},
		{"x foo:bar", 2, "foo:bar", `unknown operator "foo:"`},
		{"player:", 0, "player:", "player: empty value"},
		{"map:*", 0, "map:*", "map: empty prefix"},
		{`map:"dust`, 0, `map:"dust`, "unterminated quote"},
		{`cmd:"a"b c`, 0, `cmd:"a"b`, "expected a space after the closing quote"},
		{`ab"cd"`, 0, `ab"cd"`, "unexpected quote"},
		{"a - b", 2, "-", "'-' must be followed by a term"},
		{"after:2024*", 0, "after:2024*", "after: prefix '*' is not allowed"},
		{"held:maybe", 0, "held:maybe", "held: want true or false"},
		{"cmd:!!!", 0, "cmd:!!!", "cmd: no searchable words"},
		{`"kick 3"*`, 0, `"kick 3"*`, "expected a space"},
		{`chat:"a b"`, -1, "", ""}, // valid: control
	}
	for _, tc := range tests {
		_, err := Parse(tc.q)
		if tc.pos < 0 {
			if err != nil {
				t.Errorf("Parse(%q): %v", tc.q, err)
			}
			continue
		}
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("Parse(%q): err %v, want *ParseError", tc.q, err)
			continue
		}
		if pe.Pos != tc.pos || pe.Term != tc.term || !strings.HasPrefix(pe.Msg, tc.msg) {
			t.Errorf("Parse(%q): got {%d %q %q}, want {%d %q %q...}", tc.q, pe.Pos, pe.Term, pe.Msg, tc.pos, tc.term, tc.msg)
		}
		if !strings.Contains(pe.Error(), tc.msg) {
			t.Errorf("Parse(%q): Error() = %q lacks %q", tc.q, pe.Error(), tc.msg)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"", "player:kit*", `cmd:"ban 3" -flag:x`, "after:2024-01-01 longer:5m", `"a\"b"`, "a:b:c", "- -", "held:1",
		"a OR b", "(a OR b) c", "-(a OR -(b c)) OR d", "map:x(1) OR (kit*)", "a AND b OR (", "((a)) OR)", `("OR" or)`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q, err := Parse(s)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not a *ParseError", err)
			}
			if pe.Pos < 0 || pe.Pos > len(s) {
				t.Fatalf("position %d outside query of %d bytes", pe.Pos, len(s))
			}
			return
		}
		if len(q.Terms) > MaxTerms {
			t.Fatalf("%d terms", len(q.Terms))
		}
		// Every term stands in the tree exactly once, every group has
		// two operands or more.
		seen := make([]int, len(q.Terms))
		var walk func(n *Node, depth int)
		walk = func(n *Node, depth int) {
			if depth > MaxDepth+1 {
				t.Fatalf("tree deeper than %d", MaxDepth)
			}
			if n.Kind == TermNode {
				seen[n.Term]++
				return
			}
			if len(n.Nodes) < 2 {
				t.Fatalf("a group of %d operands", len(n.Nodes))
			}
			for _, c := range n.Nodes {
				walk(c, depth+1)
			}
		}
		if tree := q.Tree(); tree != nil {
			walk(tree, 0)
		}
		for i, n := range seen {
			if n != 1 {
				t.Fatalf("term %d (%q) is %d times in the tree", i, q.Terms[i].Raw, n)
			}
		}
		c := compiler{q: q}
		if _, err := c.root(); err != nil {
			t.Fatalf("compile: %v", err)
		}
		for _, tm := range q.Terms {
			op, ok := lookup(tm.Op)
			if !ok {
				t.Fatalf("Parse admitted operator %q that the search does not know", tm.Op)
			}
			op.rec(&tm) // must not panic
			if (op.event != nil) != (tm.Level() != RecordingLevel) {
				t.Fatalf("term %q: level %v, event query %v", tm.Raw, tm.Level(), op.event != nil)
			}
			if op.event != nil {
				op.event(&tm)
			}
		}
	})
}

// tree renders a query's tree for TestParseTree: terms as [-]op:value
// (the value as parsed), groups as AND(...) and OR(...), excluded ones
// with a '-'.
func tree(q *Query) string {
	var r func(n *Node) string
	r = func(n *Node) string {
		if n.Kind == TermNode {
			t := q.Terms[n.Term]
			s := t.Value
			if t.Op != "" {
				s = t.Op + ":" + s
			}
			if t.Prefix {
				s += "*"
			}
			if t.Neg {
				s = "-" + s
			}
			return s
		}
		var parts []string
		for _, c := range n.Nodes {
			parts = append(parts, r(c))
		}
		s := "AND("
		if n.Kind == OrNode {
			s = "OR("
		}
		s += strings.Join(parts, " ") + ")"
		if n.Neg {
			s = "-" + s
		}
		return s
	}
	if n := q.Tree(); n != nil {
		return r(n)
	}
	return ""
}

// TestParseTree: OR, AND and groups, with AND binding tighter than OR,
// groups of one kind merged, and exclusions of groups of one term moved
// onto the term. flat says the query is plain terms (Root nil).
func TestParseTree(t *testing.T) {
	for _, tc := range []struct {
		q, want string
		flat    bool
	}{
		{"a b", "AND(a b)", true},
		{"a AND b", "AND(a b)", true},
		{"a", "a", true},
		{"((a))", "a", true},
		{"-(a)", "-a", true},
		{"-(-a)", "a", true},
		{"-(-(a b))", "AND(a b)", true},
		{"(a b) (c)", "AND(a b c)", true},
		{"a or b", "AND(a or b)", true},   // lower-case: a word
		{`a "OR" b`, "AND(a OR b)", true}, // quoted: a word
		{"a OR* b", "AND(a OR* b)", true}, // a prefix, not the operator
		{"a OR b", "OR(a b)", false},
		{"a b OR c", "OR(AND(a b) c)", false},
		{"a OR b c", "OR(a AND(b c))", false},
		{"a AND b OR c", "OR(AND(a b) c)", false},
		{"(a OR b) c", "AND(OR(a b) c)", false},
		{"(a OR b) OR c", "OR(a b c)", false},
		{"a OR (b OR c)", "OR(a b c)", false},
		{"-(a OR b)", "-OR(a b)", false},
		{"-(a OR b) c", "AND(-OR(a b) c)", false},
		{"-(a b) OR c", "OR(-AND(a b) c)", false},
		{"(a (b OR (c d)))", "AND(a OR(b AND(c d)))", false},
		{"a OR -b", "OR(a -b)", false},
		{"player:Kit OR -flag:X", "OR(player:kit -flag:x)", false},
		{"(player:a OR player:b)cmd:kick", "AND(OR(player:a player:b) cmd:kick)", false},
		{"(kit* OR map:de_dust(2)) x", "AND(OR(kit* map:de_dust(2)) x)", false},
		{`(cmd:"ban 3" OR chat:hi)`, "OR(cmd:ban 3 chat:hi)", false},
		{"flagged:false OR -(flagged:false)", "OR(-flagged:false flagged:false)", false},
	} {
		q, err := Parse(tc.q)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.q, err)
			continue
		}
		if got := tree(q); got != tc.want {
			t.Errorf("Parse(%q): %s, want %s", tc.q, got, tc.want)
		}
		if (q.Root == nil) != tc.flat {
			t.Errorf("Parse(%q): Root %v, want flat %v", tc.q, q.Root, tc.flat)
		}
	}
}

// TestParseBoundsAcrossGroups: the bounds on terms and prefix terms count
// every term of the query, in groups or not.
func TestParseBoundsAcrossGroups(t *testing.T) {
	var q strings.Builder
	for i := 0; i < MaxTerms/2; i++ {
		fmt.Fprintf(&q, "(a%d OR -(b%d)) ", i, i)
	}
	if _, err := Parse(q.String()); err != nil {
		t.Fatalf("%d terms in groups: %v", MaxTerms, err)
	}
	over := q.String() + "(c OR d)"
	var pe *ParseError
	if _, err := Parse(over); !errors.As(err, &pe) || pe.Pos != len(q.String())+1 || !strings.Contains(pe.Msg, "more than 32 terms") {
		t.Errorf("%d terms in groups: %v", MaxTerms+1, err)
	}
	var p strings.Builder
	for i := range MaxPrefixTerms {
		fmt.Fprintf(&p, "-(p%d* OR x) ", i)
	}
	if _, err := Parse(p.String()); err != nil {
		t.Fatalf("%d prefix terms in groups: %v", MaxPrefixTerms, err)
	}
	if _, err := Parse(p.String() + "(x OR q*)"); !errors.As(err, &pe) || pe.Term != "q*" || !strings.Contains(pe.Msg, "prefix terms") {
		t.Errorf("%d prefix terms in groups: %v", MaxPrefixTerms+1, err)
	}
}
