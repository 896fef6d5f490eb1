// This file sends downloads so that a client that stops reading costs the
// server one idle connection for a bounded time and nothing else: what
// takes decoding (clips, conversions, redacted files) is built into a spool
// file while one of the heavy slots is held, the slot is given back, and
// only then is the spool sent; every send extends a write deadline as it
// makes progress, so a stalled client is disconnected.

package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// stallPiece is the most one write sends under one deadline: a client must
// take this much per Config.WriteStall or be disconnected.
const stallPiece = 64 << 10

// maxRanges bounds the parts of a Range header served. RFC 9110 §14.2 lets
// a server ignore a Range header: one of more parts is answered with the
// whole content (200), since each part may decode a chunk of its own
// (50,000 one-byte ranges took 21 s).
const maxRanges = 16

// errSpoolFull is returned when a download outgrows Config.MaxSpool.
var errSpoolFull = errors.New("the download is larger than this server builds")

// spool is a download being built: a private temporary file in the
// archive's tmp directory, bounded by max bytes. The file is unlinked as
// soon as it is created (where the system allows it), so a process killed
// meanwhile leaves nothing behind.
type spool struct {
	f      *os.File
	n, max int64
}

// newSpool creates an empty spool; close it when the request ends.
func (s *Server) newSpool() (*spool, error) {
	dir := filepath.Join(s.x.Dir(), "tmp")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("spool download: %w", err)
	}
	f, err := os.CreateTemp(dir, "download-*")
	if err != nil {
		return nil, fmt.Errorf("spool download: %w", err)
	}
	os.Remove(f.Name())
	return &spool{f: f, max: s.cfg.MaxSpool}, nil
}

// Write appends p, refusing to grow past the bound.
func (sp *spool) Write(p []byte) (int, error) {
	if sp.n+int64(len(p)) > sp.max {
		return 0, fmt.Errorf("%w (%d bytes at most): ask for a shorter range", errSpoolFull, sp.max)
	}
	n, err := sp.f.Write(p)
	sp.n += int64(n)
	return n, err
}

// close removes the spool (if unlinking it at once failed, now).
func (sp *spool) close() {
	sp.f.Close()
	os.Remove(sp.f.Name())
}

// buildSpool runs build into a new spool while holding a heavy slot, and
// gives the slot back before returning: sending is not decoding work. build
// returns the download's file name.
func (s *Server) buildSpool(ctx context.Context, build func(io.Writer) (string, error)) (*spool, string, error) {
	release, err := s.acquireHeavy(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %v", errClientGone, err)
	}
	defer release()
	sp, err := s.newSpool()
	if err != nil {
		return nil, "", err
	}
	name, err := build(sp)
	if err != nil {
		sp.close()
		return nil, "", err
	}
	return sp, name, nil
}

// serveBuilt serves a file that build writes (a clip, a conversion, a
// redacted file): built into a spool first, so that a failure halfway is
// an error response and not a truncated download and a slow client holds
// no heavy slot, then sent with Range support under the name build
// returns.
func (s *Server) serveBuilt(w http.ResponseWriter, r *http.Request, build func(io.Writer) (string, error)) {
	sp, name, err := s.buildSpool(r.Context(), build)
	if err != nil {
		s.fail(w, err)
		return
	}
	defer sp.close()
	setDownload(w, name)
	s.serveContent(w, r, time.Time{}, sp.f)
}

// serveContent sends content as http.ServeContent does (Range,
// If-None-Match), with writes bounded by Config.WriteStall; a Range header
// of more than maxRanges parts is ignored.
func (s *Server) serveContent(w http.ResponseWriter, r *http.Request, modtime time.Time, content io.ReadSeeker) {
	if rangeParts(r.Header.Get("Range")) > maxRanges {
		r.Header.Del("Range")
	}
	gw, done := s.guardWrites(w)
	defer done()
	http.ServeContent(gw, r, "", modtime, content)
}

// rangeParts counts the parts of a Range header value.
func rangeParts(v string) int {
	if v == "" {
		return 0
	}
	return strings.Count(v, ",") + 1
}

// guardWrites returns w with a write deadline of Config.WriteStall set
// before each piece of at most stallPiece bytes, so that a client that
// stops reading is disconnected; done sends what is buffered under the
// same deadline and lifts it (the connection may serve another request).
func (s *Server) guardWrites(w http.ResponseWriter) (http.ResponseWriter, func()) {
	rc := http.NewResponseController(w)
	sw := &stallWriter{ResponseWriter: w, rc: rc, stall: s.cfg.WriteStall}
	return sw, func() {
		if sw.extend() == nil {
			rc.Flush()
		}
		rc.SetWriteDeadline(time.Time{})
	}
}

// stallWriter is guardWrites' writer.
type stallWriter struct {
	http.ResponseWriter
	rc    *http.ResponseController
	stall time.Duration
}

// extend moves the write deadline to WriteStall from now.
func (sw *stallWriter) extend() error {
	err := sw.rc.SetWriteDeadline(time.Now().Add(sw.stall))
	if errors.Is(err, http.ErrNotSupported) {
		return nil
	}
	return err
}

func (sw *stallWriter) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		if err := sw.extend(); err != nil {
			return written, err
		}
		n, err := sw.ResponseWriter.Write(p[:min(len(p), stallPiece)])
		written += n
		if err != nil {
			return written, err
		}
		p = p[n:]
	}
	return written, nil
}

// Unwrap lets http.ResponseController reach the connection.
func (sw *stallWriter) Unwrap() http.ResponseWriter { return sw.ResponseWriter }
