package ddnetsim_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/replayarchive/replay"
	th "github.com/replayarchive/replay/formats/teehistorian"
	"github.com/replayarchive/replay/ingest"
	"github.com/replayarchive/replay/internal/gen/ddnetsim"
)

// small returns kind k with files of at most about two minutes.
func small(k ddnetsim.Kind) ddnetsim.Kind { return k.Scaled(2 / k.Minutes[1]) }

// TestKindsRoundTrip writes a few short files of every kind and checks that
// each parses with the format's decoder to its end, ingests without error
// and exports byte-identical.
func TestKindsRoundTrip(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	files := map[string][]byte{}
	for _, k := range ddnetsim.Kinds() {
		s := ddnetsim.NewSession(small(k), 7)
		for i := range 3 {
			id := s.Next()
			var b bytes.Buffer
			info, err := s.Write(&b, id)
			if err != nil {
				t.Fatalf("%s file %d: %v", k.Name, i, err)
			}
			n := decode(t, k.Name, b.Bytes(), info)
			if n == 0 {
				t.Errorf("%s file %d: no records", k.Name, i)
			}
			p := filepath.Join(dir, k.Name+"-"+id.String()+".teehistorian")
			if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			paths = append(paths, p)
			files[id.String()] = b.Bytes()
		}
	}
	ctx := context.Background()
	x, err := replay.Open(filepath.Join(dir, "archive"), replay.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	ids := map[string]string{}
	err = x.Ingest(ctx, paths, replay.IngestOptions{By: replay.Actor{Name: "test", Role: replay.RoleAdmin}}, func(r ingest.FileResult) {
		if r.Outcome != ingest.OutcomeIngested {
			t.Errorf("%s: %s %s", r.Path, r.Outcome, r.Err)
			return
		}
		ids[r.Path] = r.ID.String()
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		id, ok := ids[p]
		if !ok {
			continue
		}
		rec, err := x.Recording(id)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		var out bytes.Buffer
		if err := rec.Export(ctx, &out, false); err != nil {
			t.Fatalf("%s: export: %v", p, err)
		}
		want, _ := os.ReadFile(p)
		if !bytes.Equal(out.Bytes(), want) {
			t.Errorf("%s: export differs (%d bytes, want %d)", p, out.Len(), len(want))
		}
	}
}

// decode reads a file to its end and checks what Write reported.
func decode(t *testing.T, kind string, b []byte, info ddnetsim.FileInfo) int {
	t.Helper()
	rd, err := th.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s %s: header: %v", kind, info.GameUUID, err)
	}
	if h := rd.Header(); h.GameUUID != info.GameUUID || h.MapName != info.Map {
		t.Errorf("%s: header says %s %q, want %s %q", kind, h.GameUUID, h.MapName, info.GameUUID, info.Map)
	}
	n := 0
	for {
		_, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s %s: record %d: %v", kind, info.GameUUID, n, err)
		}
		n++
	}
	if rd.Finished() != info.Finished {
		t.Errorf("%s %s: finished %v, want %v", kind, info.GameUUID, rd.Finished(), info.Finished)
	}
	return n
}

// TestDeterministic: the same kind and seed give the same bytes, another
// seed other bytes.
func TestDeterministic(t *testing.T) {
	k, err := ddnetsim.Lookup("chatty")
	if err != nil {
		t.Fatal(err)
	}
	gen := func(seed uint64) []byte {
		s := ddnetsim.NewSession(small(k), seed)
		var b bytes.Buffer
		for range 2 {
			if _, err := s.Write(&b, s.Next()); err != nil {
				t.Fatal(err)
			}
		}
		return b.Bytes()
	}
	a, b, c := gen(3), gen(3), gen(4)
	if !bytes.Equal(a, b) {
		t.Error("same seed, different bytes")
	}
	if bytes.Equal(a, c) {
		t.Error("different seeds, same bytes")
	}
}

// TestLegacyHasNoExItems: version 1 files have no EX records at all, and
// the legacy kind writes no version_minor key.
func TestLegacyHasNoExItems(t *testing.T) {
	k, err := ddnetsim.Lookup("legacy")
	if err != nil {
		t.Fatal(err)
	}
	s := ddnetsim.NewSession(small(k), 11)
	v1 := 0
	for range 24 {
		var b bytes.Buffer
		if _, err := s.Write(&b, s.Next()); err != nil {
			t.Fatal(err)
		}
		rd, err := th.NewReader(bytes.NewReader(b.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		h := rd.Header()
		if h.VersionMinor != 0 {
			t.Errorf("legacy file with version_minor %d", h.VersionMinor)
		}
		if h.Version != 1 {
			continue
		}
		v1++
		for {
			it, err := rd.Next()
			if err != nil {
				break
			}
			if it.Type == th.ItemEx {
				t.Fatal("EX record in a version 1 file")
			}
		}
	}
	if v1 == 0 {
		t.Error("no version 1 file among 24 legacy files")
	}
}
