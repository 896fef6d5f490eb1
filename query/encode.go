// This file encodes the stored field of each document: the little a search
// hit shows, in a compact varint form rather than one stored field per value.

package query

import (
	"encoding/binary"
	"errors"
	"time"

	"github.com/replayarchive/replay/formats"
)

// Format of the stored data (all integers varints, strings length-prefixed):
//
//	recording: version(1) format session map server start-unix-nanos(0 = unknown)
//	           duration players(count, names) flags(count, names)
//	           player-ids(count, ids: one per player, "" for none)
//	           flag-moments (the count; absent in records of older builds)
//	event:     version(1) tick time kind player text
const dataVersion = 1

var errData = errors.New("query: corrupt stored hit data")

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func encodeRec(r *RecordingDoc) []byte {
	b := make([]byte, 0, 64)
	b = append(b, dataVersion)
	b = appendStr(b, r.Format)
	b = appendStr(b, r.Session)
	b = appendStr(b, r.Map)
	b = appendStr(b, r.Server)
	var start int64
	if !r.Start.IsZero() {
		start = r.Start.UnixNano()
	}
	b = binary.AppendVarint(b, start)
	b = binary.AppendVarint(b, int64(r.Duration))
	b = binary.AppendUvarint(b, uint64(len(r.Players)))
	for _, p := range r.Players {
		b = appendStr(b, p.Name)
	}
	b = binary.AppendUvarint(b, uint64(len(r.Flags)))
	for _, f := range r.Flags {
		b = appendStr(b, f)
	}
	// The players' ids, one per name above, for the player page
	// (Index.EachHit); a search hit's JSON never carries them.
	b = binary.AppendUvarint(b, uint64(len(r.Players)))
	for _, p := range r.Players {
		b = appendStr(b, p.ID)
	}
	// How many flags are on a moment (Hit.FlagMoments): an addition at
	// the end, so that a record without it (an index built before) still
	// reads, as unknown.
	b = binary.AppendUvarint(b, uint64(r.FlagMoments))
	return b
}

func encodeEvent(e *formats.Event) []byte {
	b := make([]byte, 0, 16+len(e.Kind)+len(e.Player)+len(e.Text))
	b = append(b, dataVersion)
	b = binary.AppendVarint(b, e.Tick)
	b = binary.AppendVarint(b, int64(e.Time))
	b = appendStr(b, e.Kind)
	b = appendStr(b, e.Player)
	b = appendStr(b, e.Text)
	return b
}

// decoder reads the stored form; the first error sticks.
type decoder struct {
	b   []byte
	err error
	// src, when set, is the whole stored form as a string (b its tail):
	// str then returns substrings of it instead of copies, one
	// allocation per record instead of one per name (a hit of 64
	// players, and the player page reads thousands of hits).
	src string
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errData
		return 0
	}
	d.b = d.b[n:]
	return v
}

// varint reads a zig-zag signed varint (binary.AppendVarint's encoding).
func (d *decoder) varint() int64 {
	u := d.uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

func (d *decoder) str() string {
	n := d.uvarint()
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.b)) {
		d.err = errData
		return ""
	}
	var s string
	if d.src != "" {
		at := len(d.src) - len(d.b)
		s = d.src[at : at+int(n)]
	} else {
		s = string(d.b[:n])
	}
	d.b = d.b[n:]
	return s
}

// strs reads a count and that many strings; the count is checked against the
// bytes left (every string takes at least one byte).
func (d *decoder) strs() []string {
	n := d.uvarint()
	if d.err != nil || n == 0 {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.err = errData
		return nil
	}
	out := make([]string, 0, n)
	for i := uint64(0); i < n && d.err == nil; i++ {
		out = append(out, d.str())
	}
	return out
}

// ids reads a count, which must be n, and that many strings, each
// possibly empty.
func (d *decoder) ids(n int) []string {
	if c := d.uvarint(); d.err != nil || c != uint64(n) {
		if d.err == nil {
			d.err = errData
		}
		return nil
	}
	if n == 0 {
		return nil
	}
	out := make([]string, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		out = append(out, d.str())
	}
	return out
}

func (d *decoder) version() {
	if len(d.b) == 0 || d.b[0] != dataVersion {
		d.err = errData
		return
	}
	d.b = d.b[1:]
}

func decodeRec(id string, b []byte, h *Hit) error {
	d := decoder{b: b, src: string(b)}
	d.version()
	h.ID = id
	h.Format = d.str()
	h.Session = d.str()
	h.Map = d.str()
	h.Server = d.str()
	if ns := d.varint(); ns != 0 {
		h.Start = time.Unix(0, ns).UTC()
	}
	h.Duration = time.Duration(d.varint())
	h.Players = d.strs()
	h.Flags = d.strs()
	h.PlayerIDs = d.ids(len(h.Players))
	h.FlagMoments = -1
	if d.err == nil && len(d.b) > 0 {
		h.FlagMoments = int(d.uvarint())
	}
	return d.err
}

func decodeEvent(b []byte, e *EventHit) error {
	d := decoder{b: b}
	d.version()
	e.Tick = d.varint()
	e.Time = time.Duration(d.varint())
	e.Kind = d.str()
	e.Player = d.str()
	e.Text = d.str()
	return d.err
}
