package replay

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/ingest"
)

// Grow extends the live recording of the file at path, which a game
// server is still writing, by the complete records that arrived (starting
// one from the file's first bytes), and brings the search index up to
// date, so that what the server wrote is searchable at once (docs/live.md;
// with Options.LiveIndexEvery, within about that long, after it returns). final says the file is complete or idle: the recording
// is sealed, byte-identical to the file, and a file that is not live is
// ingested whole as Ingest does, its result given to report. A live
// recording's start and seal are logged in the audit log; the grows
// between them are not.
func (x *Archive) Grow(ctx context.Context, path string, final bool, by Actor, report func(ingest.FileResult)) (*ingest.Grown, error) {
	if x.opts.ReadOnly {
		return nil, ErrReadOnly
	}
	p := &ingest.Pipeline{Archive: x.a, Codecs: x.codecs}
	g, err := p.Grow(ctx, path, final)
	if err != nil {
		return nil, err
	}
	switch g.Action {
	case ingest.GrowNotLive:
		if final {
			// g.Path: a file of a live recording directory stands for it.
			return g, x.Ingest(ctx, []string{g.Path}, IngestOptions{By: by}, report)
		}
		return g, nil
	case ingest.GrowWaiting, ingest.GrowDone:
		return g, nil
	case ingest.GrowStarted, ingest.GrowSealed:
		x.audit(archive.AuditEntry{Who: by.Name, Action: archive.AuditIngest, Recording: g.ID,
			Detail: fmt.Sprintf("live recording %s %s (%d bytes)", filepath.Base(g.Path), g.Action, g.NativeBytes)})
	default:
		if x.opts.LiveIndexEvery > 0 {
			x.syncSoon()
			return g, nil
		}
	}
	if err := x.sync(ctx); err != nil {
		return g, fmt.Errorf("archived, but %w", err)
	}
	return g, nil
}
