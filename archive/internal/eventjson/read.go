package eventjson

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"

	"github.com/replayarchive/replay/formats"
)

// Each calls fn for the events of one events value, numbered from n, from
// number from on, and returns how many the value holds. open gives the
// value's JSON from its start (it is called again if the value is not laid
// out as the archive writes it); br is a buffer to read it through. A
// fault in the value is an *Error; fn's own error comes back as it is.
func Each(br *bufio.Reader, open func() (io.Reader, error), n, from int, fn func(n int, e *formats.Event) error) (int, error) {
	r, err := open()
	if err != nil {
		return 0, &Error{err.Error()}
	}
	br.Reset(r)
	k, whole, err := eventLines(br, n, from, fn)
	if err != nil || whole {
		return k, err
	}
	// Not laid out as the archive writes: the general decoder, from the
	// start, past the k events already given.
	if r, err = open(); err != nil {
		return k, &Error{err.Error()}
	}
	return eventsJSON(r, n, from, k, fn)
}

// Error is a fault in a stored events value, so that a caller tells it
// from fn's error.
type Error struct{ msg string }

func (e *Error) Error() string { return e.msg }

// eventLines reads an events value laid out as the archive writes it, "["
// then one object a line, each line but the first after a ",", then "]",
// calling fn for the events numbered from from on (the
// first is number n). It returns how many events it read, and whether it
// read the whole value; where the layout differs it stops there, having
// given fn only whole events, and eventsJSON goes on. Reading lines spares
// encoding/json's two scans of each object and its reflection, 27% of the
// CPU of rebuilding the index of a 1 GB recording: that rebuild now takes
// 0.82× the time (docs/PERFORMANCE.md, "Index batches").
func eventLines(br *bufio.Reader, n, from int, fn func(n int, e *formats.Event) error) (int, bool, error) {
	if c, err := br.ReadByte(); err != nil || c != '[' {
		return 0, false, nil
	}
	var e storedEvent
	for k := 0; ; k++ {
		c, err := br.ReadByte()
		switch {
		case err != nil:
			return k, false, nil
		case c == ']':
			if _, err := br.ReadByte(); err != io.EOF {
				return k, false, nil
			}
			return k, true, nil
		case k > 0 && c != ',':
			return k, false, nil
		case k == 0:
			if err := br.UnreadByte(); err != nil {
				return k, false, nil
			}
		}
		line, err := br.ReadSlice('\n')
		if err != nil || len(line) < 3 || line[0] != '{' || line[len(line)-2] != '}' {
			return k, false, nil
		}
		e = storedEvent{}
		if err := e.UnmarshalJSON(line[:len(line)-1]); err != nil {
			return k, false, nil
		}
		if n+k < from {
			continue
		}
		if err := fn(n+k, (*formats.Event)(&e)); err != nil {
			return k, true, err
		}
	}
}

// eventsJSON reads an events value (a JSON array) from r with
// encoding/json, calling fn for the events numbered from from on (the
// first is number n) after the first skip. It returns how many it read.
func eventsJSON(r io.Reader, n, from, skip int, fn func(n int, e *formats.Event) error) (int, error) {
	d := json.NewDecoder(r)
	if t, err := d.Token(); err != nil || t != json.Delim('[') {
		return 0, &Error{fmt.Sprintf("from event %d: want a JSON array at offset 0: %v", n, err)}
	}
	k := 0
	var e formats.Event
	for ; d.More(); k++ {
		e = formats.Event{}
		if err := d.Decode((*storedEvent)(&e)); err != nil {
			return k, &Error{fmt.Sprintf("event %d (offset %d): %v", n+k, d.InputOffset(), err)}
		}
		if k < skip || n+k < from {
			continue
		}
		if err := fn(n+k, &e); err != nil {
			return k, err
		}
	}
	if _, err := d.Token(); err != nil {
		return k, &Error{fmt.Sprintf("end of array (offset %d): %v", d.InputOffset(), err)}
	}
	return k, nil
}
