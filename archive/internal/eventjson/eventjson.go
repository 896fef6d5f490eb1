// Package eventjson writes and reads the JSON of a recording's stored
// events values: Append writes each event as encoding/json would, a line
// of its own, and Each reads them back, line by line where the value is
// laid out so and with encoding/json where it is not. The archive
// compresses and stores the values; nothing here needs it.
package eventjson

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/replayarchive/replay/formats"
)

// Append appends e as encoding/json's Marshal writes it: one event of a
// stored events value, which Each reads back. Only strings of printable
// ASCII that encoding/json writes as they are (plainASCII) are copied
// here; any other goes through json.Marshal, which stays the reference
// (FuzzAppendEvent compares the two).
func Append(b []byte, e *formats.Event) []byte {
	b = append(b, `{"tick":`...)
	b = strconv.AppendInt(b, e.Tick, 10)
	b = append(b, `,"time":`...)
	b = strconv.AppendInt(b, int64(e.Time), 10)
	b = appendField(b, `,"kind":`, e.Kind)
	if e.Player != "" {
		b = appendField(b, `,"player":`, e.Player)
	}
	if e.PlayerID != "" {
		b = appendField(b, `,"player_id":`, e.PlayerID)
	}
	if e.Text != "" {
		b = appendField(b, `,"text":`, e.Text)
	}
	return append(b, '}')
}

// appendField appends key (with its colon) and s as a JSON string.
func appendField(b []byte, key, s string) []byte {
	b = append(b, key...)
	if !plainASCII(s) {
		js, _ := json.Marshal(s) // a string always marshals
		return append(b, js...)
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// plainASCII reports whether encoding/json writes s between its quotes
// unchanged: printable ASCII without quotes, backslashes or the HTML
// characters it escapes.
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c >= 0x7f, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

// storedEvent decodes one event of a recording's events value. The value
// is written by Append, so almost every event is an
// object of known keys, integers and strings without escapes: those are
// read here directly, at a fraction of the reflection decoder's cost (see
// eventLines). Anything else
// (escapes, other keys, fractions, invalid UTF-8) goes to encoding/json,
// which stays the reference: FuzzStoredEvent compares the two.
type storedEvent formats.Event

// UnmarshalJSON implements json.Unmarshaler. Like encoding/json it leaves
// fields whose keys are missing as they were.
func (e *storedEvent) UnmarshalJSON(b []byte) error {
	if !e.fast(b) {
		return json.Unmarshal(b, (*formats.Event)(e))
	}
	return nil
}

// fast decodes b when it is an object of the event's own keys whose values
// are plain integers and strings, and reports whether it did; on false e
// is as it was.
func (e *storedEvent) fast(b []byte) bool {
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' {
		return false
	}
	v := *e
	p := b[1 : len(b)-1]
	for len(p) > 0 {
		key, rest, ok := plainString(p)
		if !ok || len(rest) == 0 || rest[0] != ':' {
			return false
		}
		rest = rest[1:]
		switch string(key) {
		case "tick", "time":
			end := 0
			for end < len(rest) && rest[end] != ',' {
				end++
			}
			digits := rest[:end]
			if len(digits) > 0 && digits[0] == '-' {
				digits = digits[1:]
			}
			if len(digits) == 0 || (len(digits) > 1 && digits[0] == '0') || bytes.ContainsFunc(digits, func(r rune) bool { return r < '0' || r > '9' }) {
				return false // not a plain integer (a fraction, an exponent, leading zeros)
			}
			n, err := strconv.ParseInt(string(rest[:end]), 10, 64)
			if err != nil {
				return false // out of range: encoding/json says so
			}
			if string(key) == "tick" {
				v.Tick = n
			} else {
				v.Time = time.Duration(n)
			}
			p = rest[end:]
		case "kind", "player", "player_id", "text":
			s, r, ok := plainString(rest)
			if !ok {
				return false
			}
			switch string(key) {
			case "kind":
				v.Kind = string(s)
			case "player":
				v.Player = string(s)
			case "player_id":
				v.PlayerID = string(s)
			default:
				v.Text = string(s)
			}
			p = r
		default:
			return false
		}
		if len(p) > 0 {
			if p[0] != ',' || len(p) == 1 {
				return false
			}
			p = p[1:]
		}
	}
	*e = v
	return true
}

// plainString reads a JSON string without escapes at the start of p: its
// contents and what follows it. It declines escapes and invalid UTF-8,
// which encoding/json decodes its own way.
func plainString(p []byte) (s, rest []byte, ok bool) {
	if len(p) < 2 || p[0] != '"' {
		return nil, nil, false
	}
	end := bytes.IndexByte(p[1:], '"')
	if end < 0 {
		return nil, nil, false
	}
	s = p[1 : 1+end]
	if bytes.IndexByte(s, '\\') >= 0 || !utf8.Valid(s) {
		return nil, nil, false
	}
	for _, c := range s {
		if c < 0x20 {
			return nil, nil, false
		}
	}
	return s, p[2+end:], true
}
