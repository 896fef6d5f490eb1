package hcrp_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/hcrp"
	"github.com/replayarchive/replay/internal/gen/hcrpgen"
)

// TestDirPieces: what each file of a segment set is, a preamble checked
// whole, and a set whose preamble indexes a segment not there (or cut
// short) found waiting.
func TestDirPieces(t *testing.T) {
	var c hcrp.Codec
	for name, want := range map[string]formats.PieceKind{
		"preamble.dat": formats.PieceHeader, "finished": formats.PieceMarker,
		"segment-000.dat": formats.PieceAppend, "segment-1234.dat": formats.PieceAppend,
		"segment-0001.dat": formats.PieceNone, "segment-1.dat": formats.PieceNone, "segment-abc.dat": formats.PieceNone,
		"preamble.dat.tmp": formats.PieceNone, "segment-000.dat.tmp": formats.PieceNone, "other": formats.PieceNone,
	} {
		if got := c.DirPiece(name); got != want {
			t.Errorf("DirPiece(%q) = %v, want %v", name, got, want)
		}
	}
	root := t.TempDir()
	s := hcrpgen.NewSession(hcrpgen.Config{Seed: 3, Ticks: 400})
	o := s.Options()
	id := uuid.New()
	r, err := hcrp.Create(root, id, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Run(r); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, id.String())
	pre, err := os.ReadFile(filepath.Join(dir, hcrp.PreambleFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CheckHeaderPiece(pre); err != nil {
		t.Errorf("the recorder's preamble: %v", err)
	}
	for _, bad := range [][]byte{nil, pre[:len(pre)-1], append(pre[:len(pre):len(pre)], 0), []byte("HCRP but not")} {
		if err := c.CheckHeaderPiece(bad); err == nil {
			t.Errorf("a %d-byte header was taken", len(bad))
		}
	}
	if m, err := c.DirMissing(dir); err != nil || m != "" {
		t.Fatalf("a whole set: missing %q, %v", m, err)
	}
	seg := filepath.Join(dir, hcrp.SegmentName(0))
	b, _ := os.ReadFile(seg)
	os.WriteFile(seg, b[:len(b)-1], 0o644)
	if m, err := c.DirMissing(dir); err != nil || !strings.Contains(m, hcrp.SegmentName(0)) {
		t.Errorf("a segment cut short: missing %q, %v", m, err)
	}
	os.Remove(seg)
	if m, err := c.DirMissing(dir); err != nil || !strings.Contains(m, "not there yet") {
		t.Errorf("a segment not there: missing %q, %v", m, err)
	}
}
