package replay

import (
	"context"
	"fmt"

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
	return res, nil
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
