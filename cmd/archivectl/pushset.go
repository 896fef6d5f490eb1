// The agent's side of recording directories (an HCRP segment set: a
// directory of pieces, formats.DirPieces says which file is which): the
// archive grows one live recording from them. Each file is a source of
// its own (HOST/DIR/SET/NAME), sent by its kind: an append-only piece's
// new bytes as any file's, the header piece whole with replace=1
// whenever its bytes changed, always after the directory's pending
// append-only bytes (which it may index), and the completion marker
// last, with final=1. The set is reported as one ("sealed ID DIR as
// SOURCE"), and nothing of it is ever sent anew under ~2.

package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/ingest/watch"
)

// pushSet is what the agent knows of one recording directory.
type pushSet struct {
	dir    string // its path
	source string // its source path: HOST/BASE/REL
	codec  formats.DirPieces
	// files are its append-only pieces and marker, by name.
	files map[string]*pushFile
	// header is its header piece; headerSHA the sha256 of the bytes the
	// archive holds of it ("" not known), known once asked.
	header    *pushFile
	headerSHA string
	// state and id are the set's as the archive last said; done that it
	// needs nothing more (sealed, ingested, refused); liveSaid that its
	// live recording's start was reported.
	state, id string
	done      bool
	liveSaid  bool
	// ended: this run's final request (the marker, or the header of an
	// idle set) was answered sealed or ingested.
	ended bool
}

// setFor returns the recording directory the file at path is a piece
// of; piece says a codec names the file a piece even when its directory
// is no recording directory yet (no header: s nil).
func (p *pusher) setFor(path string) (s *pushSet, piece bool) {
	dir, name := filepath.Split(path)
	dir = filepath.Clean(dir)
	if s := p.sets[dir]; s != nil {
		return s, true
	}
	for _, c := range p.pieces {
		kind := c.DirPiece(name)
		if !c.IsDirInput(dir) {
			if kind != formats.PieceNone {
				return nil, true
			}
			continue
		}
		src, ok := p.setSource(dir)
		if !ok {
			return nil, false
		}
		s := &pushSet{dir: dir, source: src, codec: c, files: map[string]*pushFile{}}
		p.sets[dir] = s
		return s, true
	}
	return nil, false
}

// setSource is the source path of the recording directory dir.
func (p *pusher) setSource(dir string) (string, bool) {
	for _, r := range p.roots {
		rel, err := filepath.Rel(r.dir, dir)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue
		}
		if rel == "." {
			return p.host + "/" + r.base, true
		}
		// A piece's name below it makes the source one part longer.
		src, err := sourceOf(p.host, r.base, filepath.ToSlash(rel)+"/x")
		if err != nil {
			p.warnOnce(dir, "skipped: "+err.Error())
			return "", false
		}
		return strings.TrimSuffix(src, "/x"), true
	}
	return "", false
}

// grewSet is grew for a piece of a recording directory: the directory's
// pending pieces are sent. A piece of a directory that is no recording
// directory yet waits for its header (or, idle, goes as any file).
func (p *pusher) grewSet(ctx context.Context, s *pushSet, file watch.File) (live, done bool, err error) {
	if s == nil {
		return true, false, nil
	}
	if s.codec.DirPiece(filepath.Base(file.Path)) == formats.PieceNone {
		return true, true, nil // a writer's temporary file: not sent
	}
	done, err = p.syncSet(ctx, s, false)
	if err != nil {
		p.retried(ctx, file.Path, err)
		return false, false, err
	}
	return true, done, nil
}

// markerComplete is the watcher's Complete: a recording directory's
// completion marker (an empty file, never offered as one that grew) is
// ready as soon as it is there, and the directory's last pieces and
// final request go then. Other files are complete only as their grows
// say (grew), as before.
func (p *pusher) markerComplete(_ context.Context, path string) (bool, error) {
	s, piece := p.setFor(path)
	return piece && s != nil && s.codec.DirPiece(filepath.Base(path)) == formats.PieceMarker, nil
}

// readySet is ready for a piece of a recording directory: the directory
// is final when its marker is there, or when none of its files changed
// for --settle (an idle piece of a directory that still changes is not).
func (p *pusher) readySet(ctx context.Context, s *pushSet, file watch.File) error {
	if s == nil {
		p.warnOnce(file.Path, "an empty file in a directory with no recording: nothing to push")
		return nil
	}
	if s.codec.DirPiece(filepath.Base(file.Path)) == formats.PieceNone {
		return nil
	}
	final := file.Complete || p.setIdle(s)
	if _, err := p.syncSet(ctx, s, final); err != nil {
		p.retried(ctx, file.Path, err)
		return err
	}
	return nil
}

// setIdle reports whether no file of s changed for --settle.
func (p *pusher) setIdle(s *pushSet) bool {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return false
	}
	for _, e := range ents {
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) < p.settle {
			return false
		}
	}
	return true
}

// syncSet brings the archive's copy of the recording directory s up to
// what is on disk: the append-only pieces' new bytes, then the header
// whole if it changed, then, once the directory is complete (its
// marker) or final (idle), the final request. done says the set needs
// nothing more.
func (p *pusher) syncSet(ctx context.Context, s *pushSet, final bool) (done bool, err error) {
	if s.done {
		return true, nil
	}
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return false, fmt.Errorf("push %s: %w", s.dir, err)
	}
	// The marker is looked for first: what is read after it is final.
	var appends []string
	var header, marker string
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		switch s.codec.DirPiece(e.Name()) {
		case formats.PieceAppend:
			appends = append(appends, e.Name())
		case formats.PieceHeader:
			header = e.Name()
		case formats.PieceMarker:
			marker = e.Name()
		}
	}
	slices.Sort(appends)
	if p.buf == nil {
		p.buf = make([]byte, pushChunk)
	}
	for _, name := range appends {
		path := filepath.Join(s.dir, name)
		st, err := os.Stat(path)
		if err != nil {
			return false, fmt.Errorf("push %s: %w", path, err)
		}
		f := s.file(name)
		if f.have >= 0 && st.Size() == f.have {
			continue
		}
		done, err := p.send(ctx, path, f, st.Size(), false, p.buf, false)
		if err != nil {
			return false, err
		}
		if p.setAnswer(s, f, done) {
			return true, nil
		}
	}
	if header == "" {
		return false, nil
	}
	if done, err := p.sendHeader(ctx, s, header, final && marker == ""); err != nil || done {
		return done, err
	}
	if marker == "" {
		if final {
			return false, fmt.Errorf("push %s as %s: the archive answered %q to final=1; retried", s.dir, s.source, s.state)
		}
		return false, nil
	}
	return p.sendMarker(ctx, s, marker)
}

// file is the pushFile of the piece name of s.
func (s *pushSet) file(name string) *pushFile {
	f := s.files[name]
	if f == nil {
		f = &pushFile{base: s.source + "/" + name, gen: 1, have: -1, set: true}
		s.files[name] = f
	}
	return f
}

// setAnswer takes what the archive said of a piece of s (done: the
// piece needs nothing more) and reports whether the set is done: sealed
// or ingested (reported as one), or refused (reported with the piece).
func (p *pusher) setAnswer(s *pushSet, f *pushFile, done bool) bool {
	if f.id != "" {
		s.id = f.id
	}
	if f.state != "" {
		s.state = f.state
	}
	if f.finished() {
		p.setEnded(s, f.state)
		return true
	}
	if done {
		s.done = true // refused: reported by failure
		return true
	}
	if s.state == "live" && s.id != "" && !s.liveSaid {
		s.liveSaid = true
		p.result(pushResult{MessageType: "live", Path: s.dir, Source: s.source, Outcome: "live started", ID: s.id, Bytes: f.have})
	}
	return false
}

// setEnded reports the set sealed or ingested, once.
func (p *pusher) setEnded(s *pushSet, state string) {
	if s.done {
		return
	}
	s.done = true
	var size int64
	if ents, err := os.ReadDir(s.dir); err == nil {
		for _, e := range ents {
			if info, err := e.Info(); err == nil && s.codec.DirPiece(e.Name()) != formats.PieceNone {
				size += info.Size()
			}
		}
	}
	outcome := state
	if !s.ended {
		// Found so, not made so by this run's final request.
		outcome = "already archived"
	}
	p.report(s.dir, &pushFile{base: s.source, gen: 1, id: s.id}, outcome, size, nil)
}

// sendHeader sends the header piece name of s whole (replace=1) unless
// the archive holds these bytes; with final, it goes with final=1 even
// then. done says the set is done.
func (p *pusher) sendHeader(ctx context.Context, s *pushSet, name string, final bool) (done bool, err error) {
	path := filepath.Join(s.dir, name)
	b, err := readWhole(path, replayMaxPush)
	if err != nil {
		return false, fmt.Errorf("push %s: %w", path, err)
	}
	sum := sha256.Sum256(b)
	h := hex.EncodeToString(sum[:])
	if s.header == nil {
		s.header = &pushFile{base: s.source + "/" + name, gen: 1, have: -1, set: true}
	}
	f := s.header
	if err := p.away(); err != nil {
		return false, err
	}
	if f.have < 0 {
		a, err := p.c.get(ctx, f.source())
		if err != nil {
			done, err := p.failure(ctx, path, f, int64(len(b)), err)
			s.done = s.done || done
			return done, err
		}
		p.reached()
		f.have, f.state, f.id = a.Have, a.State, a.ID
		s.headerSHA = a.ContentSHA256
		if p.setAnswer(s, f, false) {
			return true, nil
		}
	}
	if s.headerSHA == h && !final {
		return false, nil
	}
	p.working(path, 0)
	defer p.working("", 0)
	a, err := p.c.replace(ctx, f.source(), b, final)
	if err != nil {
		var pe *pushError
		if errors.As(err, &pe) && pe.Status == 409 && pe.Code == "sealed" {
			f.state = "sealed"
			return p.setAnswer(s, f, true), nil
		}
		done, err := p.failure(ctx, path, f, int64(len(b)), err)
		if done {
			s.done = true
		}
		return done, err
	}
	p.reached()
	p.mu.Lock()
	if a.ContentSHA256 != s.headerSHA {
		p.sent += int64(len(b))
	}
	p.mu.Unlock()
	f.have, f.state, f.id, s.headerSHA = a.Have, a.State, a.ID, a.ContentSHA256
	s.ended = final && f.finished()
	return p.setAnswer(s, f, false), nil
}

// sendMarker sends the completion marker name of s (its bytes, none for
// an HCRP set's "finished") with final=1: the archive seals the set once
// it holds every piece the header indexes.
func (p *pusher) sendMarker(ctx context.Context, s *pushSet, name string) (bool, error) {
	path := filepath.Join(s.dir, name)
	st, err := os.Stat(path)
	if err != nil {
		return false, fmt.Errorf("push %s: %w", path, err)
	}
	f := s.file(name)
	if !f.finished() {
		if _, err := p.send(ctx, path, f, st.Size(), true, p.buf, false); err != nil {
			return false, err
		}
		s.ended = f.finished()
	}
	if p.setAnswer(s, f, f.finished() || f.state == "taken_down") {
		return true, nil
	}
	return false, fmt.Errorf("push %s as %s: the archive answered %q to final=1; retried", s.dir, s.source, f.state)
}

// replayMaxPush is the most one request may carry (the server's
// replay.MaxPushBytes): a header piece is sent whole, so it may be no
// larger.
const replayMaxPush = 16 << 20

// readWhole reads the file at path, at most max bytes.
func readWhole(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("more than %d bytes: a header piece is sent whole, in one request of at most %d bytes", max, max)
	}
	return b, nil
}
