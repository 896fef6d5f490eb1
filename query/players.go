// A player's summary from the index's terms: the names, ids, flags and
// first and last start of every recording of one player, without
// reading their stored records. The player page read the record of each
// recording of its player (a player of 5,800 recordings at a million:
// about 25 ms of CPU at each first visit).

package query

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/RoaringBitmap/roaring/v2"
	index "github.com/blevesearch/bleve_index_api"
)

// The pseen terms of a recording document (fSeen), the values as
// written: "n" NAME-LOWER NAME ID for each player with a name, "i"
// ID-LOWER ID NAME for each with an id, "f" FLAG for each flag, the
// parts separated by seenSep.
const seenSep = "\x00"

// seenTerms returns r's pseen terms, each once.
func seenTerms(r *RecordingDoc) []string {
	var out []string
	add := func(parts ...string) {
		t := strings.Join(parts, seenSep)
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	for _, p := range r.Players {
		if p.Name != "" {
			add("n", strings.ToLower(p.Name), p.Name, p.ID)
		}
		if p.ID != "" {
			add("i", strings.ToLower(p.ID), p.ID, p.Name)
		}
	}
	for _, f := range r.Flags {
		add("f", f)
	}
	return out
}

// Seen is a name or an id seen with a player: in how many recordings,
// and their first and last start (zero when none has one).
type Seen struct {
	Value       string
	Recordings  int
	First, Last time.Time
}

// FlagCount is a flag and how many of a player's recordings carry it.
type FlagCount struct {
	Flag       string
	Recordings int
}

// FlagCounts lists the counts of flags, the most carried first (then by
// name): how the player page shows them.
func FlagCounts(flags map[string]int) []FlagCount {
	out := make([]FlagCount, 0, len(flags))
	for f, n := range flags {
		out = append(out, FlagCount{f, n})
	}
	slices.SortFunc(out, func(a, b FlagCount) int {
		if a.Recordings != b.Recordings {
			return b.Recordings - a.Recordings
		}
		return strings.Compare(a.Flag, b.Flag)
	})
	return out
}

// PlayerStats is what every recording of one player says about it.
type PlayerStats struct {
	// Total counts the player's recordings; First and Last are their
	// earliest and latest start.
	Total       int
	First, Last time.Time
	// Names are the names seen with the player (by name: the spellings
	// of it), IDs the ids (by id: the spellings of it), Aliases (by name)
	// the other names of the first aliasIDs of IDs: each most
	// recordings first, then by value.
	Names, IDs, Aliases []Seen
	// Flags are the flags of its recordings, most recordings first.
	Flags []FlagCount
}

// aliasIDs bounds how many of a name's ids its aliases are looked up for.
const aliasIDs = 16

// PlayerStats sums up every recording of the player with name (matched
// as player: matches it, lower-cased) or, when name is "", with id, from
// the index's pseen terms and sort numbers. ok is false when the index
// cannot say yet (its sort numbers are still being read): the caller
// then reads the recordings (EachHit).
func (ix *Index) PlayerStats(ctx context.Context, name, id string) (st *PlayerStats, ok bool, err error) {
	r, err := ix.reader()
	if err != nil {
		return nil, false, fmt.Errorf("query: player: %w", err)
	}
	defer r.Close()
	view, cached, err := ix.keys.view(r, fSort)
	if err != nil || !cached {
		return nil, false, err
	}
	for i := range view.segs.segs {
		if view.keys[i] == nil {
			return nil, false, nil
		}
	}
	sp := &seenPass{ctx: ctx, r: r, view: view}
	field, key, kind := fPlayer, strings.ToLower(name), "n"
	if name == "" {
		field, key, kind = fPID, strings.ToLower(id), "i"
	}
	all, err := sp.term(field, key)
	if err != nil {
		return nil, false, err
	}
	st = &PlayerStats{}
	st.Total, st.First, st.Last = sp.span(all)
	names, ids := map[string][]*roaring.Bitmap{}, map[string][]*roaring.Bitmap{}
	// n KEY NAME ID: the spelling is the name, the other the id; i KEY
	// ID NAME the other way round.
	err = sp.prefix(kind+seenSep+key+seenSep, func(rest string, bms []*roaring.Bitmap) {
		spelling, other, _ := strings.Cut(rest, seenSep)
		if kind == "i" {
			spelling, other = other, spelling
		}
		addSeen(names, spelling, bms)
		addSeen(ids, other, bms)
	})
	if err != nil {
		return nil, false, err
	}
	st.Names, st.IDs = sp.seen(names), sp.seen(ids)
	flags := map[string]int{}
	err = sp.prefix("f"+seenSep, func(flag string, bms []*roaring.Bitmap) {
		n := 0
		for i, bm := range bms {
			if bm != nil && all[i] != nil {
				n += int(bm.AndCardinality(all[i]))
			}
		}
		if n > 0 {
			flags[flag] += n
		}
	})
	if err != nil {
		return nil, false, err
	}
	st.Flags = FlagCounts(flags)
	if name != "" {
		aliases := map[string][]*roaring.Bitmap{}
		for _, s := range st.IDs[:min(len(st.IDs), aliasIDs)] {
			err := sp.prefix("i"+seenSep+strings.ToLower(s.Value)+seenSep, func(rest string, bms []*roaring.Bitmap) {
				_, n, _ := strings.Cut(rest, seenSep)
				if !strings.EqualFold(n, name) {
					addSeen(aliases, n, bms)
				}
			})
			if err != nil {
				return nil, false, err
			}
		}
		st.Aliases = sp.seen(aliases)
	}
	return st, true, nil
}

// addSeen ors bms (one per segment, nil for none) into m[v]; an empty v
// (no name, no id) is left out.
func addSeen(m map[string][]*roaring.Bitmap, v string, bms []*roaring.Bitmap) {
	if v == "" {
		return
	}
	acc := m[v]
	if acc == nil {
		acc = make([]*roaring.Bitmap, len(bms))
		m[v] = acc
	}
	for i, bm := range bms {
		switch {
		case bm == nil:
		case acc[i] == nil:
			acc[i] = bm.Clone()
		default:
			acc[i].Or(bm)
		}
	}
}

// seenPass reads terms of one index snapshot as bitmaps per segment.
type seenPass struct {
	ctx  context.Context
	r    index.IndexReader
	view *keyView
}

// term returns the live documents of each segment that hold term in
// field (nil for a segment with none).
func (sp *seenPass) term(field, term string) ([]*roaring.Bitmap, error) {
	out := make([]*roaring.Bitmap, len(sp.view.segs.segs))
	for i, ss := range sp.view.segs.segs {
		dict, err := ss.Segment().Dictionary(field)
		if err != nil {
			return nil, fmt.Errorf("query: player: %w", err)
		}
		pl, err := dict.PostingsList([]byte(term), ss.Deleted(), nil)
		if err != nil {
			return nil, fmt.Errorf("query: player: %w", err)
		}
		bo, ok := pl.(orInto)
		if !ok {
			return nil, fmt.Errorf("query: player: postings of %T offer no bitmap", ss.Segment())
		}
		bm := roaring.New()
		bo.OrInto(bm)
		if del := ss.Deleted(); del != nil {
			bm.AndNot(del)
		}
		if !bm.IsEmpty() {
			out[i] = bm
		}
	}
	return out, nil
}

// prefix calls fn with each pseen term that starts with p (without p)
// and its documents per segment.
func (sp *seenPass) prefix(p string, fn func(rest string, bms []*roaring.Bitmap)) error {
	fd, err := sp.r.FieldDictPrefix(fSeen, []byte(p))
	if err != nil {
		return fmt.Errorf("query: player: %w", err)
	}
	defer fd.Close()
	for {
		e, err := fd.Next()
		if err != nil {
			return fmt.Errorf("query: player: %w", err)
		}
		if e == nil {
			return nil
		}
		if err := sp.ctx.Err(); err != nil {
			return err
		}
		bms, err := sp.term(fSeen, e.Term)
		if err != nil {
			return err
		}
		fn(strings.TrimPrefix(e.Term, p), bms)
	}
}

// span returns how many documents bms hold and their earliest and latest
// start (from the sort numbers; a recording without a start has none).
func (sp *seenPass) span(bms []*roaring.Bitmap) (n int, first, last time.Time) {
	var lo, hi uint64
	for i, bm := range bms {
		if bm == nil {
			continue
		}
		n += int(bm.GetCardinality())
		keys := sp.view.keys[i]
		it := bm.Iterator()
		for it.HasNext() {
			k := keys[it.Next()]
			if k == 0 {
				continue // no start
			}
			if lo == 0 || k < lo {
				lo = k
			}
			hi = max(hi, k)
		}
	}
	at := func(k uint64) time.Time {
		if k == 0 {
			return time.Time{}
		}
		return time.Unix(0, int64(k^(1<<63))).UTC()
	}
	return n, at(lo), at(hi)
}

// seen turns values' documents into Seen, most recordings first, then
// by value.
func (sp *seenPass) seen(m map[string][]*roaring.Bitmap) []Seen {
	out := make([]Seen, 0, len(m))
	for v, bms := range m {
		s := Seen{Value: v}
		s.Recordings, s.First, s.Last = sp.span(bms)
		if s.Recordings > 0 {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b Seen) int {
		if a.Recordings != b.Recordings {
			return b.Recordings - a.Recordings
		}
		return cmp.Compare(a.Value, b.Value)
	})
	return out
}
