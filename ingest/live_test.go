package ingest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/replayarchive/replay/formats/all"
	"github.com/replayarchive/replay/formats/teehistorian"
)

// growTo writes b to path and grows its live recording.
func growTo(t *testing.T, p *Pipeline, path string, b []byte, final bool) *Grown {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := p.Grow(context.Background(), path, final)
	if err != nil {
		t.Fatalf("grow to %d bytes: %v", len(b), err)
	}
	return g
}

// A live recording grows with its file, is sealed byte-identical to it,
// and refuses what does not extend it: a held recording, a file whose
// bytes changed under it, a file that shrank.
func TestGrowLive(t *testing.T) {
	a := newArchive(t)
	p := &Pipeline{Archive: a, Codecs: all.Codecs()}
	var game bytes.Buffer
	if err := teehistorian.Generate(&game, teehistorian.GenOptions{Duration: 40 * time.Second, Players: 6, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	file := game.Bytes()
	path := filepath.Join(t.TempDir(), "game.teehistorian")

	if g := growTo(t, p, path, file[:20], false); g.Action != GrowWaiting {
		t.Fatalf("inside the header: %s %s", g.Action, g.Why)
	}
	g := growTo(t, p, path, file[:len(file)/3+1], false)
	if g.Action != GrowStarted {
		t.Fatalf("first records: %s %s", g.Action, g.Why)
	}
	id := g.ID
	if g.NativeBytes >= int64(len(file)/3+1) || g.NativeBytes < int64(len(file)/4) {
		t.Errorf("started with %d of %d bytes (a half-written record must wait)", g.NativeBytes, len(file)/3+1)
	}
	if g := growTo(t, p, path, file[:len(file)/2], false); g.Action != GrowGrew || g.ID != id {
		t.Fatalf("second grow: %s %s", g.Action, g.Why)
	}
	m, _ := a.Manifest(id)
	if !m.Live || m.EventCount == 0 {
		t.Errorf("manifest: live %v, %d events", m.Live, m.EventCount)
	}

	// A file whose archived bytes changed is not live any more.
	changed := bytes.Clone(file[:len(file)*2/3])
	changed[len(file)/2-100] ^= 0xff
	if g := growTo(t, p, path, changed, false); g.Action != GrowNotLive || !g.Warn || !strings.Contains(g.Why, "does not extend") {
		t.Errorf("changed prefix: %s warn=%v %q", g.Action, g.Warn, g.Why)
	}
	// Nor is one that shrank.
	if g := growTo(t, p, path, file[:len(file)/4], false); g.Action != GrowNotLive || !strings.Contains(g.Why, "shrank") {
		t.Errorf("shrunk: %s %q", g.Action, g.Why)
	}
	// A held recording is not extended (issue 12: ids are not hijacked).
	if _, err := a.SetHold(id, "case 7"); err != nil {
		t.Fatal(err)
	}
	if g := growTo(t, p, path, file[:len(file)*2/3], false); g.Action != GrowNotLive || !strings.Contains(g.Why, "held (case 7)") {
		t.Errorf("held: %s %q", g.Action, g.Why)
	}
	if _, err := a.Release(id); err != nil {
		t.Fatal(err)
	}
	if m2, _ := a.Manifest(id); m2.NativeBytes != m.NativeBytes || m2.SHA256 != m.SHA256 {
		t.Fatalf("a refused grow changed the recording: %d → %d bytes", m.NativeBytes, m2.NativeBytes)
	}

	if g := growTo(t, p, path, file, false); g.Action != GrowSealed {
		t.Fatalf("FINISH: %s %q", g.Action, g.Why)
	}
	m, _ = a.Manifest(id)
	sum := sha256.Sum256(file)
	if m.Live || m.SHA256 != hex.EncodeToString(sum[:]) || m.NativeBytes != int64(len(file)) {
		t.Errorf("sealed manifest: live %v, %d bytes, sha256 %s", m.Live, m.NativeBytes, m.SHA256)
	}
	rec, err := a.Open(id)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := rec.WriteTo(context.Background(), &out); err != nil || !bytes.Equal(out.Bytes(), file) {
		t.Fatalf("export: %v, %d bytes of %d", err, out.Len(), len(file))
	}
	// The whole file ingested again is the same recording.
	var res []FileResult
	if err := p.Run(context.Background(), []string{path}, func(r FileResult) { res = append(res, r) }); err != nil || len(res) != 1 || res[0].Outcome != OutcomeDup || res[0].ID != id {
		t.Errorf("ingest of the sealed file: %v %+v", err, res)
	}
	if g := growTo(t, p, path, file, false); g.Action != GrowNotLive || g.Warn {
		t.Errorf("grow of a sealed file: %s warn=%v %q", g.Action, g.Warn, g.Why)
	}
}
