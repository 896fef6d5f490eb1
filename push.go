package replay

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/google/uuid"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/ingest"
	"github.com/replayarchive/replay/internal/durable"
)

// Pushed files: a game server on another host sends each growing file's
// new bytes ("archivectl push"; the HTTP side is server/push.go). The
// archive keeps a mirror of each pushed file under <archive>/push/<source>
// and grows the file's live recording from the mirror with Grow, exactly
// as for a file a watched directory holds: takedowns, holds, retention
// and the audit log apply the same way. Once the source is sealed or
// ingested, the mirror's bytes are deleted and only its state record
// stays (<archive>/push/.state/<sha256 of the source>.json), so a retried
// push of bytes it held is still answered.

// MaxPushBytes bounds the bytes one Push call takes: a client sends a
// larger file in several calls, so that no request holds the server for
// long and a failed one costs little to repeat.
const MaxPushBytes = 16 << 20

// pushDir is the directory under the archive's that holds the mirrors,
// and pushStateDir the one under it that holds the state records (no
// source segment starts with '.', so it names no source).
const (
	pushDir      = "push"
	pushStateDir = ".state"
)

// ErrBadPush is returned for a push source or offset that is not valid:
// the caller's mistake, nothing changed.
var ErrBadPush = errors.New("bad push")

// PushStatus says how far a pushed source is.
type PushStatus string

// The push states.
const (
	// PushNew: the archive holds no byte of the source.
	PushNew PushStatus = "new"
	// PushWaiting: bytes are held, but they are not (yet) a live
	// recording: the header is incomplete, or the file is not of a live
	// format (it is ingested whole at the final push).
	PushWaiting PushStatus = "waiting"
	// PushLive: the bytes are a live recording (PushState.ID).
	PushLive PushStatus = "live"
	// PushSealed: the live recording was sealed, byte-identical to the
	// file; the source takes no more bytes.
	PushSealed PushStatus = "sealed"
	// PushIngested: the file was ingested whole at its final push (or is
	// an archived recording already, PushState.ID); no more bytes.
	PushIngested PushStatus = "ingested"
	// PushTakenDown: the file's recording or identity was taken down; its
	// bytes were deleted and every push of it answers the takedown.
	PushTakenDown PushStatus = "taken_down"
)

// terminal reports whether a source in state s takes no more bytes.
func (s PushStatus) terminal() bool {
	return s == PushSealed || s == PushIngested || s == PushTakenDown
}

// Codes of PushConflictError.
const (
	// PushOffsetGap: the push starts past the bytes held.
	PushOffsetGap = "offset_gap"
	// PushRewrite: the push's bytes differ from those held at the same
	// offsets; nothing changed (the client starts the file over under a
	// new source name).
	PushRewrite = "rewrite"
	// PushSealedCode: the source is sealed or ingested and the push goes
	// past what it held.
	PushSealedCode = "sealed"
	// PushSourceConflict: a directory of the source's path is another
	// source's file, or the source's path is another's directory.
	PushSourceConflict = "source_conflict"
)

// PushState is what the archive holds of one pushed source.
type PushState struct {
	Source string `json:"source"`
	// Have is how many bytes of the file the archive holds (durably).
	Have  int64      `json:"have"`
	State PushStatus `json:"state"`
	// ID is the recording, once there is one; SHA256 the file's once
	// sealed or ingested.
	ID     uuid.UUID `json:"id,omitzero"`
	SHA256 string    `json:"sha256,omitempty"`
	// Note says why the bytes are not (or no longer) a live recording,
	// when the grow refused them (a held recording, another file under
	// the same game id): the file is ingested whole at its final push.
	Note string `json:"note,omitempty"`
	// Takedown is the takedown that ended a PushTakenDown source.
	Takedown *archive.Takedown `json:"takedown,omitempty"`
	// Piece is what the file is in its recording directory ("header",
	// "append", "marker": a segment set pushed file by file, pushset.go),
	// empty for a file that is a recording of its own. ContentSHA256 is
	// the sha256 of a header piece's bytes held, so that an agent does
	// not send an unchanged header again.
	Piece         string `json:"piece,omitempty"`
	ContentSHA256 string `json:"content_sha256,omitempty"`

	// Added is how many new bytes this call appended (a retry adds none).
	Added int64 `json:"-"`
	// Result is set when this call sealed or ingested the file: what an
	// ingest reports of it (a seal as OutcomeIngested).
	Result *ingest.FileResult `json:"-"`
}

// PushConflictError is a push that does not fit the bytes the archive
// holds (Code: PushOffsetGap, PushRewrite, PushSealedCode,
// PushSourceConflict): nothing changed. Have is how many bytes it holds.
type PushConflictError struct {
	Source string
	Code   string
	Have   int64
	Reason string
}

// Error says which source and why.
func (e *PushConflictError) Error() string {
	return fmt.Sprintf("push %s: %s (the archive holds %d bytes of it)", e.Source, e.Reason, e.Have)
}

// PushIngestError is a final push whose file, not live, was ingested
// whole and not archived (a bad file, an expired one, a refused replace):
// Result says why. The source keeps its bytes and its state.
type PushIngestError struct {
	Source string
	Result ingest.FileResult
}

// Error is the ingest's error, naming the source.
func (e *PushIngestError) Error() string {
	return fmt.Sprintf("push %s: %s: %s", e.Source, e.Result.Outcome, strings.TrimSpace(e.Result.Err))
}

// Unwrap is the ingest's typed cause (*archive.ReplaceError), if any.
func (e *PushIngestError) Unwrap() error { return e.Result.Cause }

// CheckPushSource returns an error wrapping ErrBadPush unless source is
// a valid push source: a slash-separated relative path of 1 to 8
// segments, each 1 to 128 bytes of [A-Za-z0-9._~-], none starting with
// '.' (so no "." or ".."). On Windows, device names (CON, NUL, COM1, …)
// and segments ending in '.' are refused too: its file system cannot hold
// them as given.
func CheckPushSource(source string) error {
	segs := strings.Split(source, "/")
	if source == "" || len(segs) > 8 {
		return fmt.Errorf("push source %q: 1 to 8 path segments: %w", source, ErrBadPush)
	}
	for _, seg := range segs {
		if len(seg) < 1 || len(seg) > 128 {
			return fmt.Errorf("push source %q: each segment is 1 to 128 bytes: %w", source, ErrBadPush)
		}
		if seg[0] == '.' {
			return fmt.Errorf("push source %q: a segment may not start with '.': %w", source, ErrBadPush)
		}
		for i := 0; i < len(seg); i++ {
			c := seg[i]
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '~' || c == '-') {
				return fmt.Errorf("push source %q: byte %q: segments are of A-Z a-z 0-9 . _ ~ -: %w", source, c, ErrBadPush)
			}
		}
		if runtime.GOOS == "windows" && windowsReserved(seg) {
			return fmt.Errorf("push source %q: segment %q cannot be a file name on this server (Windows): %w", source, seg, ErrBadPush)
		}
	}
	return nil
}

// windowsReserved reports whether seg cannot be a file name on Windows:
// a device name (with any extension), or one ending in '.' (which Windows
// drops).
func windowsReserved(seg string) bool {
	if strings.HasSuffix(seg, ".") {
		return true
	}
	base, _, _ := strings.Cut(strings.ToUpper(seg), ".")
	switch base {
	case "CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$":
		return true
	}
	return len(base) == 4 && (strings.HasPrefix(base, "COM") || strings.HasPrefix(base, "LPT")) && base[3] >= '0' && base[3] <= '9'
}

// pushPaths are where one source's mirror and state record are.
type pushPaths struct {
	source, root, mirror, state string
}

func (x *Archive) pushPaths(source string) pushPaths {
	root := filepath.Join(x.dir, pushDir)
	sum := sha256.Sum256([]byte(source))
	return pushPaths{source: source, root: root, mirror: filepath.Join(root, filepath.FromSlash(source)),
		state: filepath.Join(root, pushStateDir, hex.EncodeToString(sum[:])+".json")}
}

// PushState returns what the archive holds of source (State PushNew and
// Have 0 for a source it does not know). A taken-down source is
// *archive.TakenDownError. It reads the state record as the last push
// left it durably, so after a crash it answers the bytes truly held.
func (x *Archive) PushState(source string) (*PushState, error) {
	if err := CheckPushSource(source); err != nil {
		return nil, err
	}
	var st *PushState
	var err error
	if piece := x.pieceOf(source); piece.codec != nil {
		st, err = x.pieceState(source, piece)
	} else {
		st, err = readPushState(x.pushPaths(source))
	}
	if err != nil {
		return nil, err
	}
	if st.State == PushTakenDown {
		return st, pushTakenDown(st)
	}
	return st, nil
}

// Push appends what r holds, the bytes of source's file from offset, to
// the archive's mirror of the file, and grows the file's live recording
// from it (Grow); with final the file is complete: its live recording is
// sealed, or a file that is not live is ingested whole, and the source
// takes no more bytes. by is who pushes, for the audit log.
//
// Pushes are idempotent: bytes at offsets the archive holds already must
// equal what it holds (else *PushConflictError PushRewrite, nothing
// changed) and only the part beyond is appended; an offset past the
// bytes held is PushOffsetGap. Once the source is sealed or ingested, a
// push within its bytes is answered with its state (not compared: the
// mirror is gone) and one beyond is PushSealedCode. r may hold at most
// MaxPushBytes (else ErrTooLarge); a push that fails changes nothing.
// A taken-down recording or identity is *archive.TakenDownError, and the
// source's bytes are deleted.
//
// The appended bytes and the state record are on disk before Push
// returns, and written before the grow, so that the recording never
// holds bytes the state record does not count; a crash between the
// append and the grow is made good by the next push (any push, a retry
// too, grows again). The grow runs to its end even if ctx is cancelled
// once the bytes are received. Pushes of one source are serialised;
// different sources run in parallel.
func (x *Archive) Push(ctx context.Context, source string, offset int64, r io.Reader, final bool, by Actor) (*PushState, error) {
	if x.opts.ReadOnly {
		return nil, ErrReadOnly
	}
	if err := CheckPushSource(source); err != nil {
		return nil, err
	}
	if offset < 0 {
		return nil, fmt.Errorf("push %s: offset %d: %w", source, offset, ErrBadPush)
	}
	if piece := x.pieceOf(source); piece.codec != nil {
		return x.pushPiece(ctx, source, piece, offset, r, final, false, by)
	}
	p := x.pushPaths(source)
	defer lockPush(p.mirror)()
	st, err := x.loadPush(p)
	if err != nil {
		return nil, err
	}
	switch {
	case st.State.terminal():
		return terminalAnswer(ctx, st, offset, r)
	case offset > st.Have:
		return nil, &PushConflictError{Source: source, Code: PushOffsetGap, Have: st.Have,
			Reason: fmt.Sprintf("offset %d is past the bytes held: push from offset %d", offset, st.Have)}
	}
	added, err := x.appendPush(ctx, p, st.Have, offset, r)
	if err != nil {
		return nil, err
	}
	if added > 0 {
		st.Have += added
		if st.State == PushNew {
			st.State = PushWaiting
		}
		if err := x.savePush(p, st); err != nil {
			return nil, err
		}
	}
	st.Added = added
	if st.Have == 0 {
		if final {
			return nil, &PushIngestError{Source: source, Result: ingest.FileResult{Path: source, Outcome: ingest.OutcomeFailed,
				Err: "an empty file is not a recording: nothing to archive"}}
		}
		return st, nil
	}
	return x.growPush(context.WithoutCancel(ctx), p, st, final, by)
}

// terminalAnswer answers a push to a source that takes no more bytes
// (sealed, ingested, taken down): its state when the push lies within
// the bytes it held, else PushSealedCode. It reads no further than the
// first byte past what was held.
func terminalAnswer(ctx context.Context, st *PushState, offset int64, r io.Reader) (*PushState, error) {
	if st.State == PushTakenDown {
		return st, pushTakenDown(st)
	}
	n, err := io.Copy(io.Discard, io.LimitReader(contextReader{ctx, r}, min(st.Have-min(offset, st.Have), MaxPushBytes)+1))
	if err != nil {
		return nil, fmt.Errorf("push %s: receive: %w", st.Source, err)
	}
	if n > MaxPushBytes {
		return nil, fmt.Errorf("push %s: %w (%d bytes a push at most)", st.Source, ErrTooLarge, MaxPushBytes)
	}
	if offset+n > st.Have {
		return nil, &PushConflictError{Source: st.Source, Code: PushSealedCode, Have: st.Have,
			Reason: fmt.Sprintf("the file is %s (%d bytes): it takes no more bytes", st.State, st.Have)}
	}
	return st, nil
}

// growPush grows source's recording from its mirror and records the state
// that follows.
func (x *Archive) growPush(ctx context.Context, p pushPaths, st *PushState, final bool, by Actor) (*PushState, error) {
	var res *ingest.FileResult
	g, err := x.Grow(ctx, p.mirror, final, by, func(r ingest.FileResult) {
		r.Path = p.source
		r.Err = strings.ReplaceAll(r.Err, p.mirror, p.source)
		res = &r
	})
	if err != nil {
		return nil, fmt.Errorf("push %s: grow: %w", p.source, err)
	}
	before := *st
	st.Note = ""
	switch g.Action {
	case ingest.GrowStarted, ingest.GrowGrew:
		st.State, st.ID = PushLive, g.ID
	case ingest.GrowSealed, ingest.GrowDone:
		st.State, st.ID = PushSealed, g.ID
		r := ingest.FileResult{Path: p.source, Outcome: ingest.OutcomeIngested, ID: g.ID, NativeBytes: g.NativeBytes,
			Warnings: g.Warnings, Note: "live recording sealed"}
		if g.Manifest != nil {
			r.Format, r.StoredBytes = g.Manifest.Format, g.Manifest.StoredBytes
		}
		st.Result = &r
	case ingest.GrowWaiting:
		if st.State != PushLive && g.ID != uuid.Nil {
			// After a crash between a grow and its state record: the
			// recording may be live already.
			if _, err := x.a.LiveOf(g.ID); err == nil {
				st.State, st.ID = PushLive, g.ID
			}
		}
	case ingest.GrowNotLive:
		var td *archive.TakenDownError
		if errors.As(g.Cause, &td) {
			return x.takeDownPush(p, st, td)
		}
		if !final {
			st.State, st.ID = PushWaiting, uuid.Nil
			if g.Warn {
				st.Note = strings.ReplaceAll(g.Why, p.mirror, p.source)
			}
			break
		}
		if res == nil {
			return nil, fmt.Errorf("push %s: the final ingest reported nothing", p.source)
		}
		switch res.Outcome {
		case ingest.OutcomeIngested, ingest.OutcomeReplaced:
			st.State, st.ID, st.Result = PushIngested, res.ID, res
		case ingest.OutcomeDup:
			// A retried final push whose seal was done but not recorded
			// finds its own recording sealed: it stays "sealed".
			if before.State != PushLive || before.ID != res.ID {
				st.State = PushIngested
			} else {
				st.State = PushSealed
			}
			st.ID, st.Result = res.ID, res
		default:
			if errors.As(res.Cause, &td) {
				return x.takeDownPush(p, st, td)
			}
			return nil, &PushIngestError{Source: p.source, Result: *res}
		}
	}
	if st.State.terminal() {
		if m, err := x.a.Manifest(st.ID); err == nil {
			st.SHA256 = m.SHA256
		}
	}
	if st.State != before.State || st.ID != before.ID || st.Note != before.Note {
		if err := x.savePush(p, st); err != nil {
			return nil, err
		}
	}
	if st.State.terminal() {
		removeMirror(p.mirror)
	}
	return st, nil
}

// takeDownPush ends a source whose recording or identity was taken down:
// its state record says so and its bytes are deleted.
func (x *Archive) takeDownPush(p pushPaths, st *PushState, td *archive.TakenDownError) (*PushState, error) {
	t := td.Takedown
	st.State, st.ID, st.Note, st.Takedown = PushTakenDown, uuid.Nil, "", &t
	if err := x.savePush(p, st); err != nil {
		return nil, err
	}
	removeMirror(p.mirror)
	return st, pushTakenDown(st)
}

// pushTakenDown is the error a taken-down source answers.
func pushTakenDown(st *PushState) error {
	var t archive.Takedown
	if st.Takedown != nil {
		t = *st.Takedown
	}
	return fmt.Errorf("push %s: its bytes were deleted: %w", st.Source, &archive.TakenDownError{Takedown: t})
}

// readPushState reads p's state record (a new state when there is none).
func readPushState(p pushPaths) (*PushState, error) {
	st := &PushState{Source: p.source, State: PushNew}
	if err := readRecord(p.state, "push "+p.source, st); err != nil {
		return nil, err
	}
	if st.Source != p.source {
		return nil, fmt.Errorf("push %s: its state record %s is %q's", p.source, p.state, st.Source)
	}
	return st, nil
}

// readRecord reads the JSON state record at path into v, leaving v as it
// is when there is none; what names the record's owner in errors.
func readRecord(path, what string, v any) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: read its state: %w", what, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: its state record %s: %w", what, path, err)
	}
	return nil
}

// writeRecord writes v as the JSON state record at path durably (a new
// file renamed over the old one, both synced); what names the record's
// owner in errors.
func (x *Archive) writeRecord(path, what string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("%s: encode its state: %w", what, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("%s: create the state directory: %w", what, err)
	}
	if err := durable.WriteFile(path, b, 0o600, !x.opts.Archive.NoSync); err != nil {
		return fmt.Errorf("%s: its state: %w", what, err)
	}
	return nil
}

// loadPush reads p's state and makes the mirror agree with it: bytes past
// Have (a push that failed, or the process killed before the state
// record was written) are cut off, and the mirror of a sealed or ingested
// source is removed (killed before it was).
func (x *Archive) loadPush(p pushPaths) (*PushState, error) {
	st, err := readPushState(p)
	if err != nil {
		return nil, err
	}
	if st.State.terminal() {
		removeMirror(p.mirror)
		return st, nil
	}
	fi, err := os.Lstat(p.mirror)
	switch {
	case err != nil && st.Have == 0:
		// Nothing held: no mirror yet, or one of its directories is
		// another source's file (not a directory: ENOTDIR).
		if cerr := checkPushParents(p); cerr != nil {
			return nil, cerr
		}
		if errors.Is(err, fs.ErrNotExist) {
			return st, nil
		}
		return nil, fmt.Errorf("push %s: its mirror: %w", p.source, err)
	case err != nil:
		return nil, fmt.Errorf("push %s: its mirror: %w", p.source, err)
	case fi.IsDir() && st.Have == 0:
		return nil, &PushConflictError{Source: p.source, Code: PushSourceConflict,
			Reason: "its path is a directory of other sources' files"}
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("push %s: its mirror %s is not a regular file", p.source, p.mirror)
	case fi.Size() < st.Have:
		return nil, fmt.Errorf("push %s: its mirror %s holds %d bytes, fewer than the %d recorded", p.source, p.mirror, fi.Size(), st.Have)
	case fi.Size() > st.Have:
		if err := os.Truncate(p.mirror, st.Have); err != nil {
			return nil, fmt.Errorf("push %s: cut its mirror back to %d bytes: %w", p.source, st.Have, err)
		}
	}
	return st, nil
}

// appendPush compares what r holds with the mirror's bytes from offset
// (offset <= have) and appends what lies past have. It returns the bytes
// appended, synced to disk; on any error the mirror is cut back to have.
func (x *Archive) appendPush(ctx context.Context, p pushPaths, have, offset int64, r io.Reader) (added int64, err error) {
	if have == 0 {
		if err := checkPushParents(p); err != nil {
			return 0, err
		}
		if err := os.MkdirAll(filepath.Dir(p.mirror), 0o700); err != nil {
			return 0, fmt.Errorf("push %s: create its directory: %w", p.source, err)
		}
	}
	f, err := os.OpenFile(p.mirror, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return 0, fmt.Errorf("push %s: open its mirror: %w", p.source, err)
	}
	pos := offset
	defer func() {
		if err != nil && pos > have {
			if terr := f.Truncate(have); terr != nil {
				err = errors.Join(err, fmt.Errorf("push %s: cut its mirror back: %w", p.source, terr))
			}
		}
		if cerr := f.Close(); err == nil && cerr != nil {
			added, err = 0, fmt.Errorf("push %s: close its mirror: %w", p.source, cerr)
		}
	}()
	buf := make([]byte, 256<<10)
	var held []byte
	src := contextReader{ctx, r}
	var total int64
	for {
		n, rerr := src.Read(buf)
		total += int64(n)
		if total > MaxPushBytes {
			return 0, fmt.Errorf("push %s: %w (%d bytes a push at most)", p.source, ErrTooLarge, MaxPushBytes)
		}
		b := buf[:n]
		if k := min(int64(len(b)), have-pos); k > 0 {
			if held == nil {
				held = make([]byte, len(buf))
			}
			if _, err := f.ReadAt(held[:k], pos); err != nil {
				return 0, fmt.Errorf("push %s: read its mirror: %w", p.source, err)
			}
			if i := firstDiff(b[:k], held[:k]); i >= 0 {
				return 0, &PushConflictError{Source: p.source, Code: PushRewrite, Have: have,
					Reason: fmt.Sprintf("the byte at offset %d differs from the one held: the file was rewritten, push it as a new source", pos+int64(i))}
			}
			b, pos = b[k:], pos+k
		}
		if len(b) > 0 {
			if _, err := f.WriteAt(b, pos); err != nil {
				pos += int64(len(b)) // maybe partly written: cut back
				return 0, fmt.Errorf("push %s: write its mirror: %w", p.source, err)
			}
			pos += int64(len(b))
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return 0, fmt.Errorf("push %s: receive: %w", p.source, rerr)
		}
	}
	if pos <= have {
		return 0, nil
	}
	if !x.opts.Archive.NoSync {
		if err := f.Sync(); err != nil {
			return 0, fmt.Errorf("push %s: sync its mirror: %w", p.source, err)
		}
	}
	return pos - have, nil
}

// firstDiff returns the index of the first byte where a and b (of one
// length) differ, or -1.
func firstDiff(a, b []byte) int {
	if bytes.Equal(a, b) {
		return -1
	}
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

// checkPushParents refuses a new source one of whose directories is
// another source's file.
func checkPushParents(p pushPaths) error {
	for dir := filepath.Dir(p.mirror); len(dir) > len(p.root); dir = filepath.Dir(dir) {
		if fi, err := os.Lstat(dir); err == nil && !fi.IsDir() {
			rel, _ := filepath.Rel(p.root, dir)
			return &PushConflictError{Source: p.source, Code: PushSourceConflict,
				Reason: fmt.Sprintf("%s is another source's file, not a directory", filepath.ToSlash(rel))}
		}
	}
	return nil
}

// savePush writes st as p's state record durably: a new file renamed
// over the old one, both synced.
func (x *Archive) savePush(p pushPaths, st *PushState) error {
	return x.writeRecord(p.state, "push "+p.source, st)
}

// removeMirror deletes a mirror file whose source is sealed, ingested or
// taken down (its directory stays: another source may be using it).
func removeMirror(path string) {
	if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() {
		os.Remove(path)
	}
}

// pushLocks serialise the pushes of one source: by its mirror's path, so
// that no lock outlives its last user.
var pushLocks = struct {
	sync.Mutex
	m map[string]*pushLock
}{m: make(map[string]*pushLock)}

type pushLock struct {
	sync.Mutex
	users int
}

// lockPush locks the source whose mirror is at path and returns the
// unlock.
func lockPush(path string) (unlock func()) {
	pushLocks.Lock()
	l := pushLocks.m[path]
	if l == nil {
		l = new(pushLock)
		pushLocks.m[path] = l
	}
	l.users++
	pushLocks.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		pushLocks.Lock()
		if l.users--; l.users == 0 {
			delete(pushLocks.m, path)
		}
		pushLocks.Unlock()
	}
}
