// This file implements formats.AppendableDir: a live recording directory
// (preamble.dat rewritten by every commit, segment-NNN.dat written once
// each) is one live recording in the archive from its first commit, and
// each commit extends it (docs/live.md). The recording is the compacted
// stream the directory stands for (SegmentSet): its header piece, the
// preamble with absolute offsets, is written anew by every grow; the
// chunks of segments archived before are neither read nor sent again.

package hcrp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/replayarchive/replay/formats"
)

var _ formats.AppendableDir = Codec{}

// LiveDir implements formats.AppendableDir: the id is SegmentSet's (the
// directory's name when it is a UUID), the session the world id.
func (Codec) LiveDir(dir string) (uuid.UUID, string, error) {
	f, err := os.Open(filepath.Join(dir, PreambleFile))
	if errors.Is(err, fs.ErrNotExist) {
		return uuid.Nil, "", formats.ErrNeedMore
	}
	if err != nil {
		return uuid.Nil, "", fmt.Errorf("hcrp: %w", err)
	}
	defer f.Close()
	h, _, _, err := readPreambleStream(f)
	if err != nil {
		var fe *formats.Error
		if errors.As(err, &fe) {
			fe.What = PreambleFile + ": " + fe.What
		}
		return uuid.Nil, "", err
	}
	return setID(filepath.Base(filepath.Clean(dir)), h), h.WorldID.String(), nil
}

// setID is the id of the recording directory name with header h.
func setID(name string, h *Header) uuid.UUID {
	if id, err := uuid.Parse(name); err == nil {
		return id
	}
	return recordingID(h)
}

// dirLiveState is what SplitDirTail keeps between two grows.
type dirLiveState struct {
	// Seen says which player entities are spawned (join and drop events).
	Seen map[int32]bool `json:"seen,omitempty"`
	// Snap is the number of the last snapshot chunk archived.
	Snap int `json:"snap"`
	// Segments are the size and modification time of each segment file
	// holding archived chunks: a segment is written once, so one that
	// changed was rewritten.
	Segments []segmentStamp `json:"segments"`
	// Warnings are the archived chunks' decoding warnings.
	Warnings []string `json:"warnings,omitempty"`
	Dropped  int      `json:"dropped,omitempty"`
	// MetaTick: the preamble's events (anticheat flags, chat) before
	// this tick are archived. Those at or after it wait for the chunk
	// events they come before, as in a whole-file split.
	MetaTick int64 `json:"meta_tick,omitempty"`
	// V is 1: an older build's state (no V) archived every event of its
	// preamble, whatever its tick, and rewrote them with every grow.
	V int `json:"v,omitempty"`
}

type segmentStamp struct {
	Size int64 `json:"size"`
	Mod  int64 `json:"mod"` // Unix nanoseconds
}

// SplitDirTail implements formats.AppendableDir. The events of the new
// chunks go to w in tick order, the preamble's merged in before the first
// chunk event at or after their tick, as Split sends them: a preamble
// event past the archived chunks waits for the next grow. A preamble
// event added at a tick before the archived chunks' end is not sent (the
// events archived are not rewritten; a server writes chat as it comes).
func (c Codec) SplitDirTail(ctx context.Context, dir string, in formats.TailInput, w formats.Writer) (*formats.TailResult, error) {
	res, err := c.splitDirTail(ctx, os.DirFS(dir), filepath.Base(filepath.Clean(dir)), in, w)
	if err != nil {
		return nil, fmt.Errorf("hcrp: %s: %w", dir, err)
	}
	return res, nil
}

// notExtending wraps formats.ErrNotExtending with what changed.
func notExtending(format string, args ...any) error {
	return fmt.Errorf("%w: %s", formats.ErrNotExtending, fmt.Sprintf(format, args...))
}

func (c Codec) splitDirTail(ctx context.Context, fsys fs.FS, name string, in formats.TailInput, w formats.Writer) (*formats.TailResult, error) {
	sink, ok := w.(formats.EventWriter)
	if !ok {
		return nil, errors.New("SplitDirTail needs a Writer that takes events (formats.EventWriter)")
	}
	set, err := openSegmentSet(fsys)
	if err != nil {
		if in.Header != nil {
			var fe *formats.Error
			if errors.As(err, &fe) {
				return nil, notExtending("%v", err)
			}
		}
		return nil, err
	}
	defer set.Close()
	read := set.hdr.PreambleLen()
	var ls dirLiveState
	n := in.Chunks
	if in.Header != nil {
		if err := json.Unmarshal(in.State, &ls); err != nil {
			return nil, fmt.Errorf("live state: %w", err)
		}
		if err := extends(set, in.Header, n, ls.Segments); err != nil {
			return nil, err
		}
		if ls.V == 0 {
			ls.MetaTick = math.MaxInt64
		}
	} else if n != 0 {
		return nil, fmt.Errorf("%d chunks archived without a header", n)
	}
	pre, abs, err := compactedPreamble(*set.hdr, set.meta, set.index)
	if err != nil {
		return nil, err
	}
	final := in.Final || set.finished
	if n == len(set.index) && !final && (in.Header == nil || bytes.Equal(pre, in.Header)) {
		return nil, formats.ErrNeedMore // no new commit
	}
	if err := w.Header(pre); err != nil {
		return nil, fmt.Errorf("write header: %w", err)
	}
	meta, col := newMetadata(set.hdr, set.meta)
	col.keepAll = true // every event of a live recording is searchable
	col.sink = sink
	if ls.Seen != nil {
		col.seen = ls.Seen
	}
	col.skipMeta(ls.MetaTick)
	col.dropped = ls.Dropped
	cs, err := newChunkSplitter(col, ls.Snap)
	if err != nil {
		return nil, err
	}
	defer cs.close()
	cs.warnings = ls.Warnings
	var comp []byte
	for i := n; i < len(set.index); i++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		e := &set.index[i]
		seg, off := e.Segment()
		comp = grow(comp, int(e.CompressedLen))
		if _, err := set.files[seg].ReadAt(comp, off); err != nil {
			return nil, fmt.Errorf("%s: read chunk %d: %w", SegmentName(seg), i, err)
		}
		read += int64(len(comp))
		// Offsets in errors and warnings are the compacted stream's, as
		// a whole-directory ingest gives them; errors also name the file.
		if err := cs.put(i, &abs[i], comp, w); err != nil {
			return nil, fmt.Errorf("%s at byte %d: %w", SegmentName(seg), off, err)
		}
	}
	warnings, snap := cs.warnings, cs.snap
	meta.Warnings = append(meta.Warnings, warnings...)
	metaTick := ls.MetaTick
	if final {
		if err := col.finish(meta); err != nil {
			return nil, err
		}
	} else if k := len(set.index); k > 0 {
		// The next chunks' events are at or after this tick.
		end := int64(set.index[k-1].StartTick) + int64(set.index[k-1].Ticks)
		if col.flush(end - 1); col.err != nil {
			return nil, fmt.Errorf("events: %w", col.err)
		}
		metaTick = max(metaTick, end)
	}
	meta.ID = setID(name, set.hdr)
	meta.Attrs["finished"] = strconv.FormatBool(set.finished)
	meta.Attrs["segments"] = strconv.Itoa(len(set.files))

	ls = dirLiveState{Seen: col.seen, Snap: snap, Warnings: warnings, Dropped: col.dropped, MetaTick: metaTick, V: 1}
	end := int64(len(pre))
	for i := range set.index {
		end += int64(set.index[i].CompressedLen)
	}
	for _, f := range set.files {
		st, err := f.Stat()
		if err != nil {
			return nil, err
		}
		ls.Segments = append(ls.Segments, segmentStamp{Size: st.Size(), Mod: st.ModTime().UnixNano()})
	}
	state, err := json.Marshal(ls)
	if err != nil {
		return nil, fmt.Errorf("live state: %w", err)
	}
	return &formats.TailResult{Meta: meta, State: state, End: end, Finished: set.finished, Read: read}, nil
}

// extends checks that set holds what was archived: the same recording
// (header fields that do not change with a commit), the n archived
// chunks first in its index, and the segment files holding them as they
// were.
func extends(set *segmentSet, header []byte, n int, segs []segmentStamp) error {
	oh, _, oidx, err := parsePreamble(header, false)
	if err != nil {
		return fmt.Errorf("archived header: %w", err)
	}
	h := set.hdr
	switch {
	case oh.Version != h.Version || oh.Flags != h.Flags || oh.Dictionary != h.Dictionary || oh.DataVersion != h.DataVersion:
		return notExtending("%s's version, flags, dictionary or data version changed", PreambleFile)
	case oh.WorldID != h.WorldID || !bytes.Equal(oh.WorldVersion, h.WorldVersion) || oh.Timestamp != h.Timestamp:
		return notExtending("%s names another recording (world %s, started %s; archived: world %s, started %s)",
			PreambleFile, h.WorldID, h.Start().Format(time.RFC3339), oh.WorldID, oh.Start().Format(time.RFC3339))
	case len(oidx) != n:
		return fmt.Errorf("archived header lists %d chunks, %d are archived", len(oidx), n)
	case len(set.index) < n:
		return notExtending("%s lists %d chunks, %d are archived", PreambleFile, len(set.index), n)
	}
	for i := range n {
		a, b := oidx[i], set.index[i]
		if a.StartTick != b.StartTick || a.Ticks != b.Ticks || a.Flags != b.Flags || a.CompressedLen != b.CompressedLen || a.UncompressedLen != b.UncompressedLen {
			return notExtending("chunk %d (tick %d) in %s differs from the archived one", i, a.StartTick, PreambleFile)
		}
	}
	for seg, want := range segs {
		if seg >= len(set.files) {
			return notExtending("%s holds archived chunks but is not indexed any more", SegmentName(seg))
		}
		st, err := set.files[seg].Stat()
		if err != nil {
			return err
		}
		if st.Size() != want.Size || st.ModTime().UnixNano() != want.Mod {
			return notExtending("%s changed since it was archived (%d bytes, modified %s; archived: %d bytes, modified %s): it was rewritten",
				SegmentName(seg), st.Size(), st.ModTime().UTC().Format(time.RFC3339Nano), want.Size, time.Unix(0, want.Mod).UTC().Format(time.RFC3339Nano))
		}
	}
	return nil
}
