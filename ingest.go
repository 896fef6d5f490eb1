package replay

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/uuid"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/ingest"
)

// IngestOptions tune Ingest.
type IngestOptions struct {
	// By is who ingests, for the audit log.
	By Actor
	// Progress, if set, is called before and after each input.
	Progress func(ingest.Progress)
	// Stdin is read for the path "-".
	Stdin io.Reader
	// FollowOutside follows symbolic links that lead out of the walked
	// directories (by default they are skipped).
	FollowOutside bool
}

// Ingest archives the files and directories at paths (directories are
// walked; a live HCRP segment set is one recording), calls report once per
// input, brings the search index up to date, records every new recording
// in the audit log and compacts the catalog if the commits left it
// sparse. A bad file is reported and the others go on; the error is for
// what stops the whole run.
func (x *Archive) Ingest(ctx context.Context, paths []string, opts IngestOptions, report func(ingest.FileResult)) error {
	if x.opts.ReadOnly {
		return ErrReadOnly
	}
	p := &ingest.Pipeline{Archive: x.a, Codecs: x.codecs, Progress: opts.Progress, Stdin: opts.Stdin, FollowOutside: opts.FollowOutside}
	var audit []archive.AuditEntry
	kick, synced := x.syncBehind(ctx)
	err := p.Run(ctx, paths, func(r ingest.FileResult) {
		switch r.Outcome {
		case ingest.OutcomeIngested, ingest.OutcomeReplaced:
			audit = append(audit, archive.AuditEntry{Who: opts.By.Name, Action: archive.AuditIngest,
				Recording: r.ID, Detail: r.Outcome.String() + " " + filepath.Base(r.Path)})
			kick()
		}
		if report != nil {
			report(r)
		}
	})
	synced()
	x.audit(audit...)
	if err != nil {
		return err
	}
	if err := x.sync(ctx); err != nil {
		return fmt.Errorf("archived, but %w", err)
	}
	if len(audit) > 0 {
		if _, err := x.a.TidyCatalog(); err != nil {
			return fmt.Errorf("archived, but %w", err)
		}
	}
	return nil
}

// syncBehind brings the search index up to date behind an ingest's
// commits: a commit group's recordings are indexed, and searchable, while
// the next groups are read and committed, instead of all of them after
// the last (200 five-minute games: 0.94x the wall time; before commits
// ran behind the reading too, it gained nothing for 6% more CPU). kick
// asks for an update after a commit, never blocking; kicks while one runs
// make one more. synced waits for the update under way. The caller's own
// sync afterwards indexes what is left and reports any error.
func (x *Archive) syncBehind(ctx context.Context) (kick, synced func()) {
	want := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range want {
			if x.sync(ctx) != nil {
				return // the caller's sync reports it
			}
		}
	}()
	kick = func() {
		select {
		case want <- struct{}{}:
		default:
		}
	}
	return kick, func() {
		close(want)
		<-done
	}
}

// ErrTooLarge is returned by IngestStream when the stream exceeds its limit.
var ErrTooLarge = errors.New("upload exceeds the size limit")

// IngestStream archives one native file read from r (an HTTP upload, a
// pipe), spooled to a private temporary file in the archive directory so
// that memory stays bounded whatever its size. name is the file's name for
// show and ls; limit (> 0) bounds its size. The result says what happened
// as Ingest's report does, and the stream's sha256 (hex); the error is for
// what stops the run.
func (x *Archive) IngestStream(ctx context.Context, name string, r io.Reader, limit int64, by Actor) (ingest.FileResult, string, error) {
	if x.opts.ReadOnly {
		return ingest.FileResult{}, "", ErrReadOnly
	}
	name = filepath.Base(strings.TrimSpace(name))
	if name == "" || name == "." || name == "/" || strings.HasPrefix(name, ".") {
		name = "upload"
	}
	// A directory per upload keeps the file's own name, which the
	// recording's source name comes from. One a killed process leaves is
	// removed by the next writable open (archive/spool.go).
	dir, done, err := x.a.NewSpool()
	if err != nil {
		return ingest.FileResult{}, "", err
	}
	defer func() {
		if err := done(); err != nil {
			x.log.Warn("upload", "err", err)
		}
	}()
	path := filepath.Join(dir, name)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return ingest.FileResult{}, "", fmt.Errorf("spool upload: %w", err)
	}
	h := sha256.New()
	src := r
	if limit > 0 {
		src = io.LimitReader(r, limit+1)
	}
	// The receipt, hashed and spooled, gives way to a server's requests
	// as the ingest after it does.
	n, err := io.Copy(io.MultiWriter(f, h), &pacedReader{r: contextReader{ctx, src}, turn: func() func() { return x.a.Background(ctx) }})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return ingest.FileResult{}, "", fmt.Errorf("receive upload: %w", err)
	}
	if limit > 0 && n > limit {
		return ingest.FileResult{}, "", fmt.Errorf("%s: %w (%d bytes)", name, ErrTooLarge, limit)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	var res ingest.FileResult
	err = x.Ingest(ctx, []string{path}, IngestOptions{By: by}, func(r ingest.FileResult) {
		r.Path = name
		r.Err = strings.ReplaceAll(r.Err, path, name)
		res = r
	})
	return res, sum, err
}

// contextReader stops a long copy when ctx is done.
type contextReader struct {
	ctx context.Context
	r   io.Reader
}

func (c contextReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// pacedReader takes a background turn (archive.Archive.Background) each
// time another pacedPiece bytes were read through it.
type pacedReader struct {
	r     io.Reader
	turn  func() (end func())
	since int // bytes read since the last turn
}

// pacedPiece is how many bytes of an upload are received between two
// background turns.
const pacedPiece = 256 << 10

func (p *pacedReader) Read(b []byte) (int, error) {
	if p.since >= pacedPiece {
		p.turn()()
		p.since = 0
	}
	n, err := p.r.Read(b)
	p.since += n
	return n, err
}

// audit appends entries to the audit log. The change they record has
// committed already; a failure to log is reported, not returned, so that
// the caller does not retry a change that took effect.
func (x *Archive) audit(entries ...archive.AuditEntry) {
	if err := x.a.AppendAudit(entries...); err != nil {
		x.log.Error("audit log", "err", err)
	}
	x.publishAudit(entries)
}

// Audit returns the audit history newest first: of recording ref, or of
// the whole archive when ref is empty. See archive.Archive.Audit for
// before and limit.
func (x *Archive) Audit(ref string, before uint64, limit int) ([]archive.AuditEntry, error) {
	id := uuid.Nil
	if ref != "" {
		var err error
		if id, err = x.a.Resolve(ref); err != nil {
			return nil, err
		}
	}
	return x.a.Audit(id, before, limit)
}
