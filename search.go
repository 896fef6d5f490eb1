package replay

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/query"
)

// ClipMargin is how far before and after a hit's tick a suggested clip
// reaches, in seconds of the recording.
const ClipMargin = 5

// Search runs a query in the moderator query language (see query.Parse) and
// returns the matching recordings from offset from on, at most limit of
// them, newest first, each with the events that matched. Parse errors are
// *query.ParseError values that point at the offending term.
func (x *Archive) Search(ctx context.Context, q string, from, limit int) (*query.Results, error) {
	pq, err := query.Parse(q)
	if err != nil {
		return nil, err
	}
	return x.SearchQuery(ctx, pq, from, limit)
}

// SearchQuery runs a parsed query as Search does, for a caller that
// checks the terms first (the server refuses viewers the operators of
// moderators' data).
func (x *Archive) SearchQuery(ctx context.Context, pq *query.Query, from, limit int) (*query.Results, error) {
	ix, err := x.index(ctx)
	if err != nil {
		return nil, err
	}
	res, err := ix.SearchQuery(ctx, pq, from, limit)
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	x.flagMoments(pq, res)
	return res, nil
}

// flagMoments adds to each hit a "flag" event at the start of each flag
// on a moment (archive.Flag.Range) that a positive flag: term of pq
// names, so that a hit found by its flag points at the tick, as one found
// by its events does. Flags live in the manifests, not the index: only
// the hits that carry such a flag are read.
func (x *Archive) flagMoments(pq *query.Query, res *query.Results) {
	var terms []*query.Term
	for i := range pq.Terms {
		if t := &pq.Terms[i]; t.Op == "flag" && !t.Neg {
			terms = append(terms, t)
		}
	}
	if len(terms) == 0 {
		return
	}
	names := func(name string) bool {
		name = strings.ToLower(name)
		for _, t := range terms {
			if name == t.Value || t.Prefix && strings.HasPrefix(name, t.Value) {
				return true
			}
		}
		return false
	}
	for i := range res.Hits {
		h := &res.Hits[i]
		if h.FlagMoments == 0 || !slices.ContainsFunc(h.Flags, names) {
			continue // no flag on a moment (the index knows), or none the terms name
		}
		rec, err := x.Recording(h.ID)
		if err != nil {
			continue // deleted since it was found: the hit stays as it is
		}
		added := false
		for _, f := range rec.Manifest().Flags {
			if f.Range == nil || !names(f.Name) {
				continue
			}
			h.Events = append(h.Events, query.EventHit{Tick: f.Range.From, Time: rec.TimeAt(f.Range.From), Kind: "flag",
				Text: fmt.Sprintf("%s (ticks %d to %d)", f.Name, f.Range.From, f.Range.To)})
			h.EventTotal++
			added = true
		}
		if added {
			slices.SortStableFunc(h.Events, func(a, b query.EventHit) int { return cmp.Compare(a.Tick, b.Tick) })
		}
	}
}

// CanClip reports whether recordings of format can be clipped, so that a
// hit offers a clip only where one can be made.
func (x *Archive) CanClip(format string) bool {
	c := x.Codec(format)
	return c != nil && formats.CanClip(c)
}

// ConvertFormats lists the formats recordings of format can be converted
// to (none when this build has no codec for it).
func (x *Archive) ConvertFormats(format string) []string {
	if ex, ok := x.Codec(format).(formats.Exporter); ok {
		return ex.ExportFormats()
	}
	return nil
}
