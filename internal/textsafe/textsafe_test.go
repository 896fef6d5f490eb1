package textsafe

import "testing"

func TestLine(t *testing.T) {
	for in, want := range map[string]string{
		"nameless tee":     "nameless tee",
		"\x1b]0;pwned\x07": `\x1b]0;pwned\a`,
		"\x1b[2J\x1b[H":    `\x1b[2J\x1b[H`,
		"tab\there":        `tab\there`,
		"line\nbreak":      `line\nbreak`,
		"c1 \u009b31m":     `c1 \u009b31m`,
		"bad \xff byte":    `bad \xff byte`,
		"한국어 채팅 中文":        "한국어 채팅 中文",
		"rtl \u202eevil":   `rtl \u202eevil`,
		"del \x7f":         `del \x7f`,
		"emoji 🎮 ok":       "emoji 🎮 ok",
		"":                 "",
	} {
		if got := Line(in); got != want {
			t.Errorf("Line(%q) = %q, want %q", in, got, want)
		}
	}
}
