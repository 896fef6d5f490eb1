package formats

import (
	"errors"
	"fmt"
)

// Range is an inclusive range of ticks [From, To] of one recording. To < 0
// means "to the end", so the zero Range is not the whole recording: use All.
// Every codec reads a range through these methods instead of re-coding the
// "inclusive, negative means to the end" rule.
type Range struct {
	From int64 `json:"from"`
	To   int64 `json:"to"`
}

// All returns the range that holds every tick of a recording.
func All() Range { return Range{From: 0, To: -1} }

// Ticks returns the range [from, to] (to < 0: to the end).
func Ticks(from, to int64) Range { return Range{From: from, To: to} }

// empty is what Clamp returns when nothing of the recording is in range.
var empty = Range{From: 1, To: 0}

// Open reports whether the range runs to the end of the recording.
func (r Range) Open() bool { return r.To < 0 }

// IsAll reports whether the range holds every tick a recording can have.
func (r Range) IsAll() bool { return r.From <= 0 && r.To < 0 }

// Empty reports whether the range holds no tick at all (it ends before it
// starts).
func (r Range) Empty() bool { return r.To >= 0 && r.To < r.From }

// Contains reports whether tick is in the range.
func (r Range) Contains(tick int64) bool { return tick >= r.From && !r.Past(tick) }

// Past reports whether tick comes after the range's last tick, so a codec
// walking ticks in order can stop there.
func (r Range) Past(tick int64) bool { return r.To >= 0 && tick > r.To }

// Clamp returns the range cut to the ticks [0, last] a recording has: From
// no lower than 0, To no higher than last and never open. The result is
// Empty when nothing of r is in [0, last] (and always when last < 0).
func (r Range) Clamp(last int64) Range {
	if last < 0 {
		return empty
	}
	c := Range{From: max(r.From, 0), To: r.To}
	if c.To < 0 || c.To > last {
		c.To = last
	}
	if c.Empty() {
		return empty
	}
	return c
}

// String returns "from..to", or "from..end" for an open range.
func (r Range) String() string {
	if r.Open() {
		return fmt.Sprintf("%d..end", r.From)
	}
	return fmt.Sprintf("%d..%d", r.From, r.To)
}

// ErrStop ends a walk early without an error: EachChunk returns nil when fn
// returns it, so a codec that has seen the last tick it wants says so with
// ErrStop instead of a sentinel of its own.
var ErrStop = errors.New("formats: stop the walk")
