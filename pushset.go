package replay

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/ingest"
	"github.com/replayarchive/replay/internal/durable"
)

// Pushed recording directories: a codec whose recordings are directories
// of pieces (an HCRP segment set: segment-NNN.dat written once each,
// preamble.dat replaced by a rename with every commit, an empty
// "finished" at the end; formats.DirPieces says which file is which) is
// pushed file by file, each file a source of its own, into one mirror
// directory <archive>/push/<dir>, which grows one live recording as a
// watched set directory does. An append-only piece is pushed as any
// file; the header piece is pushed whole with replace (PushReplace) and
// replaces its mirror atomically; the marker may be pushed empty. A
// grow waits while the header indexes bytes the mirror's pieces do not
// hold yet. The set has a state record of its own
// (.state/set-<sha256 of the directory>.json): its state, recording and
// members; when the recording is sealed (or ingested, or taken down),
// every member's record takes that state, and the mirror directory goes.

// Codes of PushPieceError.
const (
	// PushReplaceRefused: replace for a file that is not its recording
	// directory's header piece (replace is for a file written whole).
	PushReplaceRefused = "replace_refused"
	// PushReplaceRequired: a header piece pushed by appending: it is
	// rewritten whole by its writer, so it is pushed whole (replace).
	PushReplaceRequired = "replace_required"
	// PushBadHeader: the bytes pushed to replace a header piece are not
	// one of its codec's headers.
	PushBadHeader = "bad_header"
)

// PushPieceError is a push that does not fit what its file is in its
// recording directory (Code: PushReplaceRefused, PushReplaceRequired,
// PushBadHeader): the caller's mistake, nothing changed.
type PushPieceError struct {
	Source string
	Code   string
	Reason string
	// Err is the codec's error for PushBadHeader.
	Err error
}

// Error says which source and why.
func (e *PushPieceError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("push %s: %s: %v", e.Source, e.Reason, e.Err)
	}
	return fmt.Sprintf("push %s: %s", e.Source, e.Reason)
}

// Unwrap is the codec's error, if any.
func (e *PushPieceError) Unwrap() error { return e.Err }

// pushPiece is what a source's file is in its recording directory: codec
// is nil for a file that is no piece of any codec's directory.
type pushPiece struct {
	codec formats.DirPieces
	kind  formats.PieceKind
}

// pieceOf asks the codecs what source's file is (by its base name); a
// source with no directory is never a piece.
func (x *Archive) pieceOf(source string) pushPiece {
	dir, name := path.Split(source)
	if dir == "" {
		return pushPiece{}
	}
	for _, c := range x.codecs {
		if d, ok := c.(formats.DirPieces); ok {
			if k := d.DirPiece(name); k != formats.PieceNone {
				return pushPiece{codec: d, kind: k}
			}
		}
	}
	return pushPiece{}
}

// pushSetState is the state record of a pushed recording directory.
type pushSetState struct {
	// Dir is the directory's source path (its members' sources less
	// their base names).
	Dir   string     `json:"dir"`
	State PushStatus `json:"state"`
	ID    uuid.UUID  `json:"id,omitzero"`
	// SHA256 is the recording's once sealed or ingested; Note why the
	// set does not grow a live recording now.
	SHA256   string            `json:"sha256,omitempty"`
	Note     string            `json:"note,omitempty"`
	Takedown *archive.Takedown `json:"takedown,omitempty"`
	// Members are the sources pushed into the directory, recorded before
	// their first byte is, so that a seal ends every one of them.
	Members []string `json:"members"`
}

// pushSetPaths are where a pushed directory's mirror and state record are.
type pushSetPaths struct {
	dir, mirror, state string
}

func (x *Archive) pushSetPaths(dir string) pushSetPaths {
	root := filepath.Join(x.dir, pushDir)
	sum := sha256.Sum256([]byte(dir))
	return pushSetPaths{dir: dir, mirror: filepath.Join(root, filepath.FromSlash(dir)),
		state: filepath.Join(root, pushStateDir, "set-"+hex.EncodeToString(sum[:])+".json")}
}

// readSetState reads a pushed directory's state record (State PushNew
// when there is none).
func readSetState(sp pushSetPaths) (*pushSetState, error) {
	set := &pushSetState{Dir: sp.dir, State: PushNew}
	if err := readRecord(sp.state, "push "+sp.dir+"/", set); err != nil {
		return nil, err
	}
	if set.Dir != sp.dir {
		return nil, fmt.Errorf("push %s/: its state record %s is %q's", sp.dir, sp.state, set.Dir)
	}
	return set, nil
}

// saveSet writes a pushed directory's state record durably.
func (x *Archive) saveSet(sp pushSetPaths, set *pushSetState) error {
	return x.writeRecord(sp.state, "push "+sp.dir+"/", set)
}

// pieceState is PushState for a piece of a pushed directory: the
// member's own record (bytes held) with the set's state and recording.
func (x *Archive) pieceState(source string, piece pushPiece) (*PushState, error) {
	st, err := readPushState(x.pushPaths(source))
	if err != nil {
		return nil, err
	}
	set, err := readSetState(x.pushSetPaths(path.Dir(source)))
	if err != nil {
		return nil, err
	}
	return memberView(st, set, piece), nil
}

// memberView is what a member's state answers: its bytes held, and the
// set's state where it says more (live, or ended).
func memberView(st *PushState, set *pushSetState, piece pushPiece) *PushState {
	st.Piece = piece.kind.String()
	switch {
	case set.State.terminal() && !st.State.terminal():
		st.State, st.ID, st.SHA256, st.Takedown = set.State, set.ID, set.SHA256, set.Takedown
	case set.State == PushLive && !st.State.terminal():
		st.State, st.ID = PushLive, set.ID
	}
	if !st.State.terminal() && set.Note != "" {
		st.Note = set.Note
	}
	return st
}

// PushReplace replaces what the archive holds of source, the header
// piece of a recording directory (an HCRP set's preamble.dat, which its
// writer replaces with every commit), with the whole file r holds, and
// grows the directory's live recording as Push does; with final the
// directory is complete or idle. The bytes must be a header of the
// piece's codec (else *PushPieceError PushBadHeader), and source such a
// piece (else PushReplaceRefused); nothing changes then. The mirror is
// replaced atomically, and the same bytes pushed again change nothing.
func (x *Archive) PushReplace(ctx context.Context, source string, r io.Reader, final bool, by Actor) (*PushState, error) {
	if x.opts.ReadOnly {
		return nil, ErrReadOnly
	}
	if err := CheckPushSource(source); err != nil {
		return nil, err
	}
	piece := x.pieceOf(source)
	if piece.kind != formats.PieceHeader {
		what := "a file that is a recording of its own"
		if piece.codec != nil {
			what = "a " + piece.kind.String() + " piece of its recording directory"
		}
		return nil, &PushPieceError{Source: source, Code: PushReplaceRefused,
			Reason: fmt.Sprintf("replace is for a recording directory's header piece, written whole; this is %s: push its bytes from an offset", what)}
	}
	return x.pushPiece(ctx, source, piece, 0, r, final, true, by)
}

// pushPiece is Push (and with replace PushReplace) for a piece of a
// recording directory.
func (x *Archive) pushPiece(ctx context.Context, source string, piece pushPiece, offset int64, r io.Reader, final, replace bool, by Actor) (*PushState, error) {
	if piece.kind == formats.PieceHeader && !replace {
		return nil, &PushPieceError{Source: source, Code: PushReplaceRequired,
			Reason: "a recording directory's header piece is replaced whole by its writer: push the whole file with replace=1"}
	}
	p := x.pushPaths(source)
	sp := x.pushSetPaths(path.Dir(source))
	// The directory's pushes are serialised: they grow one recording.
	defer lockPush(sp.mirror + string(filepath.Separator))()
	set, err := readSetState(sp)
	if err != nil {
		return nil, err
	}
	if set.State.terminal() {
		st, err := x.endMember(p, set)
		if err != nil {
			return nil, err
		}
		x.removeSetMirror(sp, set)
		st.Piece = piece.kind.String()
		return terminalAnswer(ctx, st, offset, r)
	}
	var st *PushState
	if replace {
		st, err = x.loadHeaderPiece(p)
	} else {
		st, err = x.loadPush(p)
	}
	if err != nil {
		return nil, err
	}
	st.Piece = piece.kind.String()
	if st.State.terminal() {
		return terminalAnswer(ctx, st, offset, r)
	}
	if offset > st.Have {
		return nil, &PushConflictError{Source: source, Code: PushOffsetGap, Have: st.Have,
			Reason: fmt.Sprintf("offset %d is past the bytes held: push from offset %d", offset, st.Have)}
	}
	var added int64
	if replace {
		added, err = x.replacePiece(ctx, p, piece, st, r)
	} else {
		if !slices.Contains(set.Members, source) {
			set.Members = append(set.Members, source)
			if err := x.saveSet(sp, set); err != nil {
				return nil, err
			}
		}
		added, err = x.appendPush(ctx, p, st.Have, offset, r)
	}
	if err != nil {
		return nil, err
	}
	if !replace && added > 0 {
		st.Have += added
	}
	if st.State == PushNew && (added > 0 || piece.kind == formats.PieceMarker) {
		st.State = PushWaiting
		if err := x.savePush(p, st); err != nil {
			return nil, err
		}
	} else if !replace && added > 0 {
		if err := x.savePush(p, st); err != nil {
			return nil, err
		}
	}
	st.Added = added
	return x.growSet(context.WithoutCancel(ctx), sp, set, p, st, piece, final, by)
}

// loadHeaderPiece reads a header piece's state; its mirror, replaced by
// a rename, is whole and checked, so where the two disagree (killed
// between the rename and the record) the mirror is what is held.
func (x *Archive) loadHeaderPiece(p pushPaths) (*PushState, error) {
	st, err := readPushState(p)
	if err != nil || st.State.terminal() {
		return st, err
	}
	b, err := os.ReadFile(p.mirror)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if cerr := checkPushParents(p); cerr != nil {
			return nil, cerr
		}
		st.Have, st.ContentSHA256 = 0, ""
		return st, nil
	case err != nil:
		return nil, fmt.Errorf("push %s: its mirror: %w", p.source, err)
	}
	sum := sha256.Sum256(b)
	if h := hex.EncodeToString(sum[:]); st.Have != int64(len(b)) || st.ContentSHA256 != h {
		st.Have, st.ContentSHA256 = int64(len(b)), h
		if st.State == PushNew {
			st.State = PushWaiting
		}
		if err := x.savePush(p, st); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// replacePiece reads a whole header piece from r, checks it with its
// codec and replaces the mirror with it (unless it holds these bytes),
// then records it. It returns the bytes written (0: unchanged).
func (x *Archive) replacePiece(ctx context.Context, p pushPaths, piece pushPiece, st *PushState, r io.Reader) (int64, error) {
	b, err := io.ReadAll(io.LimitReader(contextReader{ctx, r}, MaxPushBytes+1))
	if err != nil {
		return 0, fmt.Errorf("push %s: receive: %w", p.source, err)
	}
	if len(b) > MaxPushBytes {
		return 0, fmt.Errorf("push %s: %w (%d bytes a push at most)", p.source, ErrTooLarge, MaxPushBytes)
	}
	if err := piece.codec.CheckHeaderPiece(b); err != nil {
		return 0, &PushPieceError{Source: p.source, Code: PushBadHeader,
			Reason: fmt.Sprintf("the %d bytes are not a %s header", len(b), piece.codec.Name()), Err: err}
	}
	sum := sha256.Sum256(b)
	h := hex.EncodeToString(sum[:])
	if st.ContentSHA256 == h && st.Have == int64(len(b)) {
		return 0, nil
	}
	if err := checkPushParents(p); err != nil {
		return 0, err
	}
	if err := os.MkdirAll(filepath.Dir(p.mirror), 0o700); err != nil {
		return 0, fmt.Errorf("push %s: create its directory: %w", p.source, err)
	}
	sp := x.pushSetPaths(path.Dir(p.source))
	set, err := readSetState(sp)
	if err != nil {
		return 0, err
	}
	if !slices.Contains(set.Members, p.source) {
		set.Members = append(set.Members, p.source)
		if err := x.saveSet(sp, set); err != nil {
			return 0, err
		}
	}
	if err := durable.WriteFile(p.mirror, b, 0o600, !x.opts.Archive.NoSync); err != nil {
		return 0, fmt.Errorf("push %s: replace its mirror: %w", p.source, err)
	}
	st.Have, st.ContentSHA256 = int64(len(b)), h
	if st.State == PushNew {
		st.State = PushWaiting
	}
	if err := x.savePush(p, st); err != nil {
		return 0, err
	}
	return int64(len(b)), nil
}

// growSet grows the pushed directory's recording from its mirror, unless
// the mirror is no recording directory yet (no header) or its header
// indexes bytes not there yet (it waits for them), and records what
// follows; a seal ends every member.
func (x *Archive) growSet(ctx context.Context, sp pushSetPaths, set *pushSetState, p pushPaths, st *PushState, piece pushPiece, final bool, by Actor) (*PushState, error) {
	if !piece.codec.IsDirInput(sp.mirror) {
		if final {
			return nil, &PushIngestError{Source: p.source, Result: ingest.FileResult{Path: sp.dir, Outcome: ingest.OutcomeFailed,
				Err: fmt.Sprintf("the recording directory %s has no %s header yet: nothing to archive", sp.dir, piece.codec.Name())}}
		}
		return memberView(st, set, piece), nil
	}
	missing, err := piece.codec.DirMissing(sp.mirror)
	if err != nil {
		// A header that does not read: the grow says why.
		missing = ""
	}
	if missing != "" {
		v := memberView(st, set, piece)
		v.Note = "waiting: " + strings.ReplaceAll(missing, sp.mirror, sp.dir)
		return v, nil
	}
	var res *ingest.FileResult
	report := func(r ingest.FileResult) {
		r.Path = sp.dir
		r.Err = strings.ReplaceAll(r.Err, sp.mirror, sp.dir)
		res = &r
	}
	grow := func(final bool) (*ingest.Grown, error) {
		g, err := x.Grow(ctx, sp.mirror, final, by, report)
		if err != nil {
			return nil, fmt.Errorf("push %s: grow %s/: %w", p.source, sp.dir, err)
		}
		return g, nil
	}
	// A final push of a set that is not live yet starts its live
	// recording first (which seals it if the set is complete): so the
	// set is sealed from the live path, not ingested whole.
	g, err := grow(final && set.State == PushLive)
	if err != nil {
		return nil, err
	}
	if final && set.State != PushLive && (g.Action == ingest.GrowStarted || g.Action == ingest.GrowGrew || g.Action == ingest.GrowWaiting) {
		if g, err = grow(true); err != nil {
			return nil, err
		}
	}
	before := *set
	set.Note = ""
	switch g.Action {
	case ingest.GrowStarted, ingest.GrowGrew:
		set.State, set.ID = PushLive, g.ID
	case ingest.GrowSealed, ingest.GrowDone:
		r := ingest.FileResult{Path: sp.dir, Outcome: ingest.OutcomeIngested, ID: g.ID, NativeBytes: g.NativeBytes,
			Warnings: g.Warnings, Note: "live recording sealed"}
		if g.Manifest != nil {
			r.Format, r.StoredBytes = g.Manifest.Format, g.Manifest.StoredBytes
		}
		return x.endSet(sp, set, p, piece, PushSealed, g.ID, nil, &r)
	case ingest.GrowWaiting:
		if set.State != PushLive && g.ID != uuid.Nil {
			if _, err := x.a.LiveOf(g.ID); err == nil {
				set.State, set.ID = PushLive, g.ID
			}
		}
	case ingest.GrowNotLive:
		var td *archive.TakenDownError
		if errors.As(g.Cause, &td) {
			return x.endSet(sp, set, p, piece, PushTakenDown, uuid.Nil, td, nil)
		}
		if !final {
			set.State, set.ID = PushWaiting, uuid.Nil
			if g.Warn {
				set.Note = strings.ReplaceAll(g.Why, sp.mirror, sp.dir)
			}
			break
		}
		if res == nil {
			return nil, fmt.Errorf("push %s: the final ingest of %s/ reported nothing", p.source, sp.dir)
		}
		switch res.Outcome {
		case ingest.OutcomeIngested, ingest.OutcomeReplaced:
			return x.endSet(sp, set, p, piece, PushIngested, res.ID, nil, res)
		case ingest.OutcomeDup:
			state := PushIngested
			if before.State == PushLive && before.ID == res.ID {
				state = PushSealed
			}
			return x.endSet(sp, set, p, piece, state, res.ID, nil, res)
		default:
			if errors.As(res.Cause, &td) {
				return x.endSet(sp, set, p, piece, PushTakenDown, uuid.Nil, td, nil)
			}
			return nil, &PushIngestError{Source: p.source, Result: *res}
		}
	}
	if set.State == PushNew {
		set.State = PushWaiting
	}
	if set.State != before.State || set.ID != before.ID || set.Note != before.Note {
		if err := x.saveSet(sp, set); err != nil {
			return nil, err
		}
	}
	return memberView(st, set, piece), nil
}

// endSet records that the pushed directory's recording was sealed,
// ingested (id) or taken down (td): the set's record first, then each
// member's, then the mirror goes. It returns the pushing member's state
// (with result: what an ingest reports of it), or the takedown's error.
func (x *Archive) endSet(sp pushSetPaths, set *pushSetState, p pushPaths, piece pushPiece, state PushStatus, id uuid.UUID, td *archive.TakenDownError, result *ingest.FileResult) (*PushState, error) {
	set.State, set.ID, set.Note = state, id, ""
	if td != nil {
		t := td.Takedown
		set.Takedown = &t
	} else if m, err := x.a.Manifest(id); err == nil {
		set.SHA256 = m.SHA256
	}
	if err := x.saveSet(sp, set); err != nil {
		return nil, err
	}
	// The set's record answers for every member from here on (a member
	// whose own record still says otherwise is ended at its next push):
	// the mirror goes first, then the members' records.
	x.removeSetMirror(sp, set)
	var mine *PushState
	for _, src := range set.Members {
		st, err := x.endMember(x.pushPaths(src), set)
		if err != nil {
			return nil, err
		}
		if src == p.source {
			mine = st
		}
	}
	if mine == nil {
		st, err := x.endMember(p, set)
		if err != nil {
			return nil, err
		}
		mine = st
	}
	mine.Piece, mine.Result = piece.kind.String(), result
	if state == PushTakenDown {
		return mine, pushTakenDown(mine)
	}
	return mine, nil
}

// endMember gives a member of an ended set the set's state, durably.
func (x *Archive) endMember(p pushPaths, set *pushSetState) (*PushState, error) {
	st, err := readPushState(p)
	if err != nil {
		return nil, err
	}
	if st.State.terminal() {
		return st, nil
	}
	st.State, st.ID, st.SHA256, st.Takedown, st.Note = set.State, set.ID, set.SHA256, set.Takedown, ""
	if err := x.savePush(p, st); err != nil {
		return nil, err
	}
	return st, nil
}

// removeSetMirror deletes an ended set's mirror: its members' files (and
// a temporary file a replace left), then the directory if that emptied
// it (another source's files below it stay).
func (x *Archive) removeSetMirror(sp pushSetPaths, set *pushSetState) {
	for _, src := range set.Members {
		m := x.pushPaths(src).mirror
		removeMirror(m)
		removeMirror(m + ".tmp")
	}
	if ents, err := os.ReadDir(sp.mirror); err == nil && len(ents) == 0 {
		os.Remove(sp.mirror)
	}
}
