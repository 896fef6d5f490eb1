// This file implements formats.DirPieces: what each file of a segment
// set is, so that archivectl push sends a set file by file and the
// archive's copy of it grows one live recording (docs/live.md, "Game
// servers on other hosts").

package hcrp

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/replayarchive/replay/formats"
)

var _ formats.DirPieces = Codec{}

// DirPiece implements formats.DirPieces: preamble.dat is the header
// (replaced by a rename with every commit), segment-NNN.dat an append-only
// piece (written once), finished the completion marker; any other name
// (preamble.dat.tmp, the writer's temporary file) is no piece.
func (Codec) DirPiece(name string) formats.PieceKind {
	switch {
	case name == PreambleFile:
		return formats.PieceHeader
	case name == FinishedFile:
		return formats.PieceMarker
	case isSegmentName(name):
		return formats.PieceAppend
	}
	return formats.PieceNone
}

// isSegmentName reports whether name is SegmentName(i) for some i.
func isSegmentName(name string) bool {
	num, ok := strings.CutPrefix(name, "segment-")
	if !ok {
		return false
	}
	num, ok = strings.CutSuffix(num, ".dat")
	if !ok || len(num) < 3 {
		return false
	}
	i, err := strconv.Atoi(num)
	return err == nil && i >= 0 && i <= 0xffffffff && SegmentName(i) == name
}

// CheckHeaderPiece implements formats.DirPieces: b must be exactly one
// segmented preamble (header, metadata and index), nothing after it.
func (Codec) CheckHeaderPiece(b []byte) error {
	if int64(len(b)) > maxPreambleLen {
		return formats.Errorf(Name, maxPreambleLen, "%s: expected at most %d bytes, got %d", PreambleFile, maxPreambleLen, len(b))
	}
	h, _, _, err := readPreambleStream(bytes.NewReader(b))
	if err != nil {
		var fe *formats.Error
		if errors.As(err, &fe) {
			fe.What = PreambleFile + ": " + fe.What
		}
		return err
	}
	if end := h.PreambleLen(); int64(len(b)) != end {
		return formats.Errorf(Name, end, "%s: expected its %d bytes to end there, got %d bytes", PreambleFile, end, len(b))
	}
	return nil
}

// DirMissing implements formats.DirPieces: the first indexed chunk whose
// segment file is missing or shorter than the chunk's end.
func (Codec) DirMissing(dir string) (string, error) {
	f, err := os.Open(filepath.Join(dir, PreambleFile))
	if errors.Is(err, fs.ErrNotExist) {
		return PreambleFile + " is not there yet", nil
	}
	if err != nil {
		return "", fmt.Errorf("hcrp: %w", err)
	}
	_, _, index, err := readPreambleStream(f)
	f.Close()
	if err != nil {
		return "", err
	}
	spans := map[int]int64{}
	for i := range index {
		seg, off := index[i].Segment()
		spans[seg] = max(spans[seg], off+int64(index[i].CompressedLen))
	}
	for _, seg := range slices.Sorted(maps.Keys(spans)) {
		want := spans[seg]
		st, err := os.Stat(filepath.Join(dir, SegmentName(seg)))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return fmt.Sprintf("%s indexes %d bytes of %s, which is not there yet", PreambleFile, want, SegmentName(seg)), nil
		case err != nil:
			return "", fmt.Errorf("hcrp: %w", err)
		case st.Size() < want:
			return fmt.Sprintf("%s indexes %d bytes of %s, which holds %d", PreambleFile, want, SegmentName(seg), st.Size()), nil
		}
	}
	return "", nil
}
