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
	"io/fs"
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
		p.spoolSet(s)
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
		p.spoolSet(s)
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
	hpath := filepath.Join(s.dir, header)
	b, err := readWhole(hpath, replayMaxPush)
	if err != nil {
		return false, fmt.Errorf("push %s: %w", hpath, err)
	}
	if done, err := p.sendHeader(ctx, s, header, b, final && marker == ""); err != nil || done {
		return done, err
	}
	if marker == "" {
		if final {
			return false, fmt.Errorf("push %s as %s: the archive answered %q to final=1; retried", s.dir, s.source, s.state)
		}
		return false, nil
	}
	st, err := os.Stat(filepath.Join(s.dir, marker))
	if err != nil {
		return false, fmt.Errorf("push %s: %w", filepath.Join(s.dir, marker), err)
	}
	return p.sendMarker(ctx, s, marker, st.Size(), p.buf, false)
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
		p.spool.dropSet(s.source)
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
	p.spool.dropSet(s.source)
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

// sendHeader sends b, the header piece name of s, whole (replace=1)
// unless the archive holds these bytes; with final, it goes with final=1
// even then. done says the set is done.
func (p *pusher) sendHeader(ctx context.Context, s *pushSet, name string, b []byte, final bool) (done bool, err error) {
	path := filepath.Join(s.dir, name)
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

// sendMarker sends the completion marker name of s (its size bytes, none
// for an HCRP set's "finished"; from the spool alone with spoolOnly)
// with final=1, reading through buf: the archive seals the set once it
// holds every piece the header indexes.
func (p *pusher) sendMarker(ctx context.Context, s *pushSet, name string, size int64, buf []byte, spoolOnly bool) (bool, error) {
	path := filepath.Join(s.dir, name)
	f := s.file(name)
	if !f.finished() {
		if _, err := p.send(ctx, path, f, size, true, buf, spoolOnly); err != nil {
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

// spoolSet copies to the spool what the archive may lack of the
// recording directory s (after a failed send), so that a set the game
// server deletes while the archive is away is sent from the spool
// (sendSetOrphan): each append-only piece's bytes past what the archive
// acknowledged, then the header and the marker whole (they are kept
// until the set ends: the set's final request is one of them). A full
// spool takes what fits, as for files (spoolFile).
func (p *pusher) spoolSet(s *pushSet) {
	if p.spool == nil || s == nil || s.done {
		return
	}
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return // gone: the spool has what it has
	}
	if p.buf == nil {
		p.buf = make([]byte, pushChunk)
	}
	// The append-only pieces first, the marker last: a spooled marker
	// says the rest of the set is spooled too.
	rank := map[formats.PieceKind]int{formats.PieceAppend: 0, formats.PieceHeader: 1, formats.PieceMarker: 2}
	slices.SortStableFunc(ents, func(a, b os.DirEntry) int {
		return rank[s.codec.DirPiece(a.Name())] - rank[s.codec.DirPiece(b.Name())]
	})
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		name := e.Name()
		path, src := filepath.Join(s.dir, name), s.source+"/"+name
		switch s.codec.DirPiece(name) {
		case formats.PieceAppend:
			err = p.spoolPiece(s, name, path, src)
		case formats.PieceHeader, formats.PieceMarker:
			var b []byte
			if b, err = readWhole(path, replayMaxPush); err == nil {
				err = p.spool.replace(src, s.source, path, b)
			}
		default:
			continue
		}
		switch {
		case errors.Is(err, errSpoolFull):
			if _, ok := p.unspooled[path]; !ok {
				p.unspooled[path] = time.Now()
			}
			p.warnFull()
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			p.warn(path, fmt.Sprintf("not spooled: %v", err))
		default:
			delete(p.unspooled, path)
		}
	}
}

// spoolPiece copies to the spool the bytes of the append-only piece name
// of s, at path, past what the archive acknowledged.
func (p *pusher) spoolPiece(s *pushSet, name, path, src string) error {
	file, err := os.Open(path)
	if err != nil {
		return err
	}
	defer file.Close()
	st, err := file.Stat()
	if err != nil {
		return err
	}
	_, err = p.spool.add(src, s.source, path, file, max(s.file(name).have, 0), st.Size(), p.buf)
	return err
}

// orphanSet is a recording directory that is gone, sent from the spool
// alone, and its backoff.
type orphanSet struct {
	s    *pushSet
	back backoff
}

// sendSetOrphan sends what the spool holds of the recording directory
// set (its entries es), once the directory is gone: its append-only
// pieces, then its header whole, then its marker with final=1 (or the
// header with final=1 when no marker was spooled). It runs in
// sendOrphans' goroutine.
func (p *pusher) sendSetOrphan(ctx context.Context, set string, es []spoolEntry) {
	dir := filepath.Dir(es[0].Path)
	if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
		return // still there (or unknown): the watcher sends it
	}
	o := p.orphanSets[set]
	if o == nil {
		var codec formats.DirPieces
		for _, c := range p.pieces {
			if c.DirPiece(filepath.Base(es[0].Path)) != formats.PieceNone {
				codec = c
				break
			}
		}
		if codec == nil {
			p.warn(dir, "the spool holds pieces of "+set+" that no format names: left in the spool")
			return
		}
		// liveSaid: a set sent from the spool is reported when it ends,
		// not as a live recording that starts.
		o = &orphanSet{s: &pushSet{dir: dir, source: set, codec: codec, files: map[string]*pushFile{}, liveSaid: true},
			back: backoff{min: pushRetryMin, max: pushRetryMax}}
		p.orphanSets[set] = o
	}
	if o.back.wait(time.Now()) > 0 {
		return
	}
	done, err := p.syncSetSpool(ctx, o.s, es)
	if err != nil {
		if !errors.Is(err, errAway) {
			o.back.fail(time.Now())
		}
		p.retried(ctx, dir, err)
		return
	}
	o.back.reset()
	if done || o.s.done {
		p.spool.dropSet(set)
		delete(p.orphanSets, set)
	}
}

// syncSetSpool is syncSet for a recording directory that is gone: what
// the spool holds of it (es) goes, and the final request.
func (p *pusher) syncSetSpool(ctx context.Context, s *pushSet, es []spoolEntry) (done bool, err error) {
	var appends []spoolEntry
	var header, marker *spoolEntry
	for i, e := range es {
		switch s.codec.DirPiece(filepath.Base(e.Path)) {
		case formats.PieceAppend:
			appends = append(appends, e)
		case formats.PieceHeader:
			header = &es[i]
		case formats.PieceMarker:
			marker = &es[i]
		}
	}
	slices.SortFunc(appends, func(a, b spoolEntry) int { return strings.Compare(a.Path, b.Path) })
	if p.orphanBuf == nil {
		p.orphanBuf = make([]byte, pushChunk)
	}
	for _, e := range appends {
		f := s.file(filepath.Base(e.Path))
		f.spoolKey = e.Source
		if f.have >= 0 && f.have >= e.end() {
			continue
		}
		done, err := p.send(ctx, e.Path, f, e.end(), false, p.orphanBuf, true)
		if err != nil {
			return false, err
		}
		if p.setAnswer(s, f, done) {
			return true, nil
		}
	}
	if header == nil {
		p.warn(s.dir, fmt.Sprintf("the recording directory is gone and the spool holds no header of %s: what the archive holds of it stays live until the archive seals it as idle", s.source))
		return true, nil
	}
	b, ok, err := p.spool.readAt(header.Source, make([]byte, header.Length), 0, header.Length)
	if err != nil || !ok {
		return false, fmt.Errorf("push %s as %s: the spool's copy of its header: %v", s.dir, s.source, err)
	}
	if done, err := p.sendHeader(ctx, s, filepath.Base(header.Path), b, marker == nil); err != nil || done {
		return done, err
	}
	if marker == nil {
		return false, fmt.Errorf("push %s as %s: the archive answered %q to final=1; retried", s.dir, s.source, s.state)
	}
	s.file(filepath.Base(marker.Path)).spoolKey = marker.Source
	return p.sendMarker(ctx, s, filepath.Base(marker.Path), marker.Length, p.orphanBuf, true)
}
