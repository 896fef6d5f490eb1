// Tests for the query language parser.

package query

import (
	"errors"
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
		{"player:a OR player:b", 9, "OR", "OR is not supported"},
		{"(player:a player:b)", 0, "(player:a", "parentheses are not supported"},
		{"player:a AND map:b", 9, "AND", "AND is not supported"},
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
	for _, s := range []string{"", "player:kit*", `cmd:"ban 3" -flag:x`, "after:2024-01-01 longer:5m", `"a\"b"`, "a:b:c", "- -", "held:1"} {
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
