package replay_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/formats/ddnetmap"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
	"github.com/replayarchive/replay/internal/pgtest"
)

// smallMap is a 10×8 map: solid walls, a start and a finish tile.
func smallMap(t *testing.T) ([]byte, ddnetmap.GameLayer) {
	t.Helper()
	g := ddnetmap.GameLayer{Width: 10, Height: 8, Tiles: make([]byte, 80)}
	for x := range 10 {
		g.Tiles[x], g.Tiles[70+x] = ddnetmap.TileSolid, ddnetmap.TileSolid
	}
	g.Tiles[6*10+2], g.Tiles[6*10+7] = ddnetmap.TileStart, ddnetmap.TileFinish
	var b bytes.Buffer
	if err := ddnetmap.Write(&b, g); err != nil {
		t.Fatal(err)
	}
	return b.Bytes(), g
}

// gameOnMap is a generated teehistorian file whose header names the map
// of sha256 sha (the generator's random one replaced, same length).
func gameOnMap(t *testing.T, sha string) []byte {
	t.Helper()
	b := teehistoriangen.Must(t, teehistoriangen.Options{Players: 2, Seed: 3, Duration: 5e9})
	re := regexp.MustCompile(`"map_sha256":"[0-9a-f]{64}"`)
	if !re.Match(b) {
		t.Fatal("the generated header names no map_sha256")
	}
	return re.ReplaceAll(b, []byte(`"map_sha256":"`+sha+`"`))
}

// A map is added once, audited, read back by sha256 and by a recording
// that names it; what is not a map is refused with the reader's reason.
func TestMaps(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	x, err := replay.Open(filepath.Join(dir, "archive"), replay.Options{Create: true, Archive: archive.Options{NoSync: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	mod := replay.Actor{Name: "mod", Role: replay.RoleModerator}
	mb, g := smallMap(t)

	add, err := x.AddMap(ctx, mod, "small.map", bytes.NewReader(mb))
	if err != nil {
		t.Fatal(err)
	}
	if add.Existed || add.Width != 10 || add.Height != 8 || add.Size != int64(len(mb)) || len(add.SHA256) != 64 {
		t.Fatalf("added %+v", add)
	}
	path := filepath.Join(dir, "small.map")
	if err := os.WriteFile(path, mb, 0o644); err != nil {
		t.Fatal(err)
	}
	again, err := x.AddMapFile(ctx, mod, path)
	if err != nil || !again.Existed || again.SHA256 != add.SHA256 {
		t.Fatalf("added again: %+v, %v", again, err)
	}
	stored, err := os.ReadFile(filepath.Join(dir, "archive", "maps", add.SHA256+".map"))
	if err != nil || !bytes.Equal(stored, mb) {
		t.Fatalf("stored map: %d bytes, %v", len(stored), err)
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, "archive", "maps")); len(ents) != 1 {
		t.Errorf("maps directory holds %d entries, want the map alone (no temporary file left)", len(ents))
	}
	audit, err := x.Audit("", 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	adds := 0
	for _, e := range audit {
		if e.Action == replay.AuditMapAdd {
			adds++
			if e.Who != "mod" || !strings.Contains(e.Detail, add.SHA256) || !strings.Contains(e.Detail, "small.map") {
				t.Errorf("audit entry %+v", e)
			}
		}
	}
	if adds != 1 {
		t.Errorf("%d map-add audit entries, want 1 (adding a map held already changes nothing)", adds)
	}

	m, err := x.Map(strings.ToUpper(add.SHA256))
	if err != nil || !bytes.Equal(m.Game.Tiles, g.Tiles) {
		t.Fatalf("map: %v", err)
	}
	list, bad, err := x.Maps()
	if err != nil || len(bad) != 0 || len(list) != 1 || list[0].SHA256 != add.SHA256 || list[0].CRC != m.CRCHex() {
		t.Fatalf("maps: %+v %v %v", list, bad, err)
	}

	// A recording that names the map, one that names another, one that
	// names none.
	named := gameOnMap(t, add.SHA256)
	other := gameOnMap(t, strings.Repeat("ab", 32))
	var ids []string
	for i, b := range [][]byte{named, other} {
		res, _, err := x.IngestStream(ctx, "game.teehistorian", bytes.NewReader(b), 0, mod)
		if err != nil || res.ID.String() == "" {
			t.Fatalf("ingest %d: %+v %v", i, res, err)
		}
		ids = append(ids, res.ID.String())
	}
	rm, err := x.RecordingMap(ids[0])
	if err != nil || rm.SHA256Hex() != add.SHA256 || rm.Game.Width != 10 {
		t.Fatalf("recording's map: %v", err)
	}
	if _, err := x.RecordingMap(ids[1]); !errors.Is(err, replay.ErrNoMap) || !strings.Contains(err.Error(), "not added") {
		t.Errorf("a recording on a map not added: %v", err)
	}

	for _, tc := range []struct {
		name string
		b    []byte
		want error
		say  string
	}{
		{"text", []byte("hello, not a map"), replay.ErrBadMap, "36-byte header"},
		{"truncated map", mb[:len(mb)-3], replay.ErrBadMap, "truncated"},
	} {
		if _, err := x.AddMap(ctx, mod, tc.name, bytes.NewReader(tc.b)); !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.say) {
			t.Errorf("%s: %v, want %v saying %q", tc.name, err, tc.want, tc.say)
		}
	}
	for _, sha := range []string{"", "xyz", strings.Repeat("g", 64)} {
		if _, err := x.Map(sha); !errors.Is(err, replay.ErrBadMapID) {
			t.Errorf("map %q: %v", sha, err)
		}
	}
	if _, err := x.Map(strings.Repeat("0", 64)); !errors.Is(err, replay.ErrNoMap) {
		t.Errorf("a map not added: %v", err)
	}
	// A stored map damaged on disk is an error, not a wrong picture.
	damaged := filepath.Join(dir, "archive", "maps", add.SHA256+".map")
	bb := bytes.Clone(mb)
	bb[len(bb)-1] ^= 1
	if err := os.WriteFile(damaged, bb, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := x.Map(add.SHA256); err == nil {
		t.Error("a damaged map was read")
	}
}

// TestSharedMaps: with nodes on one PostgreSQL catalog, a map one node
// held before it joined and a map added on another are on every node
// (also one that joins later), read back whole by sha256.
func TestSharedMaps(t *testing.T) {
	pg := pgtest.Start(t).NewDatabase(t)
	dirA := filepath.Join(t.TempDir(), "a")
	// a holds a map before it joins the catalog.
	small, _ := smallMap(t)
	x, err := replay.Open(dirA, replay.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	before, err := x.AddMap(t.Context(), replay.LocalActor(), "small.map", bytes.NewReader(small))
	if err != nil {
		t.Fatal(err)
	}
	x.Close()
	a, b := openNode(t, pg, dirA), openNode(t, pg, filepath.Join(t.TempDir(), "b"))
	g := ddnetmap.GameLayer{Width: 12, Height: 9, Tiles: make([]byte, 108)}
	g.Tiles[5] = ddnetmap.TileFreeze
	var buf bytes.Buffer
	if err := ddnetmap.Write(&buf, g); err != nil {
		t.Fatal(err)
	}
	added, err := b.AddMap(t.Context(), replay.LocalActor(), "freeze.map", bytes.NewReader(buf.Bytes()))
	if err != nil || added.NotShared != "" {
		t.Fatalf("add on b: %+v %v", added, err)
	}
	c := openNode(t, pg, filepath.Join(t.TempDir(), "c"))
	for name, x := range map[string]*replay.Archive{"a": a, "b": b, "c": c} {
		for _, want := range []replay.MapInfo{before.MapInfo, added.MapInfo} {
			eventually(t, 2*time.Second, "map "+want.SHA256[:8]+" on "+name, func() bool {
				m, err := x.Map(want.SHA256)
				return err == nil && mapInfoOf(m) == want
			})
		}
	}
}

// mapInfoOf is the MapInfo of a map read back.
func mapInfoOf(m *ddnetmap.Map) replay.MapInfo {
	return replay.MapInfo{SHA256: m.SHA256Hex(), CRC: m.CRCHex(), Size: m.Size, Width: m.Game.Width, Height: m.Game.Height}
}
