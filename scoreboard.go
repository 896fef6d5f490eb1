package replay

import (
	"context"
	"fmt"

	"github.com/replayarchive/replay/formats"
)

// Scoreboard returns rec's scoreboard from its codec's formats.Scorer,
// which reads what ingest stored (and may read the recording's events,
// which x serves): the page shows it without decoding the recording. A
// format without a score gives nil and no error.
func (x *Archive) Scoreboard(ctx context.Context, rec *Recording) (*formats.Scoreboard, error) {
	s, ok := rec.codec.(formats.Scorer)
	if !ok {
		return nil, nil
	}
	sb, err := s.Scoreboard(ctx, eventSource{rec, x})
	if err != nil {
		return nil, fmt.Errorf("recording %s: %w", rec.Manifest().ID, err)
	}
	return sb, nil
}
