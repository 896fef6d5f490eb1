package ddnetmap

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/replayarchive/replay/formats/formatstest"
	"github.com/replayarchive/replay/formats/teehistorian"
)

// testLayer is a w×h game layer: a solid frame, freeze and unfreeze on
// the floor's row above, start and finish beside them, and every index
// 0-255 once somewhere inside when there is room.
func testLayer(w, h int) GameLayer {
	g := GameLayer{Width: w, Height: h, Tiles: make([]byte, w*h)}
	for x := range w {
		g.Tiles[x], g.Tiles[(h-1)*w+x] = TileSolid, TileSolid
	}
	for y := range h {
		g.Tiles[y*w], g.Tiles[y*w+w-1] = TileSolid, TileSolid
	}
	inner := []byte{TileFreeze, TileUnfreeze, TileStart, TileFinish, TileDeath, TileNoHook}
	for i := 0; i < 256+len(inner); i++ {
		x, y := 1+i%max(1, w-2), h-2-i/max(1, w-2)
		if w < 3 || y < 1 {
			break
		}
		if i < len(inner) {
			g.Tiles[y*w+x] = inner[i]
		} else {
			g.Tiles[y*w+x] = byte(i - len(inner))
		}
	}
	return g
}

func readBytes(t testing.TB, b []byte) (*Map, error) {
	t.Helper()
	return Read(bytes.NewReader(b), int64(len(b)))
}

// A map Write makes reads back to the same layer, with its hashes.
func TestRoundTrip(t *testing.T) {
	for _, size := range [][2]int{{2, 2}, {3, 5}, {40, 30}, {300, 2}, {17, 257}} {
		g := testLayer(size[0], size[1])
		var b bytes.Buffer
		if err := Write(&b, g); err != nil {
			t.Fatal(err)
		}
		m, err := readBytes(t, b.Bytes())
		if err != nil {
			t.Fatalf("%d×%d: %v", size[0], size[1], err)
		}
		if m.Game.Width != g.Width || m.Game.Height != g.Height || !bytes.Equal(m.Game.Tiles, g.Tiles) {
			t.Errorf("%d×%d: read back %d×%d, tiles equal %v", size[0], size[1], m.Game.Width, m.Game.Height, bytes.Equal(m.Game.Tiles, g.Tiles))
		}
		if m.Version != 4 || m.Size != int64(b.Len()) || len(m.SHA256Hex()) != 64 || len(m.CRCHex()) != 8 {
			t.Errorf("version %d size %d sha %s crc %s", m.Version, m.Size, m.SHA256Hex(), m.CRCHex())
		}
	}
	for _, g := range []GameLayer{{Width: 1, Height: 5, Tiles: make([]byte, 5)}, {Width: 3, Height: 3, Tiles: make([]byte, 8)}} {
		if err := Write(&bytes.Buffer{}, g); err == nil {
			t.Errorf("%d×%d with %d tiles written", g.Width, g.Height, len(g.Tiles))
		}
	}
}

// The map the corpus's Tutorial.teehistorian was played on: its hashes
// are the ones the recording's header names (DDNet computes both over
// the whole file when it loads the map), and its game layer holds the
// tiles a tutorial needs.
func TestCorpusTutorial(t *testing.T) {
	path := filepath.Join(formatstest.CorpusDir(t, "maps"), "Tutorial.map")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	m, err := Read(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	// SOURCES.md's sha256, and the teehistorian header's map_sha256 and
	// map_crc.
	if m.SHA256Hex() != "796a3716fe64657bfb8bc6af5f9422b197278919a9d875e43b9bbbcb73262fc0" || m.CRCHex() != "801ce63d" || m.Size != 1060483 {
		t.Errorf("sha256 %s crc %s size %d", m.SHA256Hex(), m.CRCHex(), m.Size)
	}
	th, err := os.ReadFile(filepath.Join(formatstest.CorpusDir(t, "teehistorian"), "Tutorial.teehistorian"))
	if err != nil {
		t.Fatal(err)
	}
	meta := formatstest.Split(t, teehistorian.New(), th).Metadata
	if meta.Attrs["map_sha256"] != m.SHA256Hex() || meta.Attrs["map_crc"] != m.CRCHex() {
		t.Errorf("the recording names map %s crc %s; the map is %s crc %s", meta.Attrs["map_sha256"], meta.Attrs["map_crc"], m.SHA256Hex(), m.CRCHex())
	}
	g := m.Game
	if g.Width != 2210 || g.Height != 110 || len(g.Tiles) != 2210*110 {
		t.Fatalf("game layer %d×%d with %d tiles", g.Width, g.Height, len(g.Tiles))
	}
	c := g.Counts()
	// A long corridor walled by solid tiles, hook-through-able parts,
	// freeze with unfreeze to leave it, one start line and a finish.
	// The exact counts were measured by this reader; what the test
	// holds them to is that every kind a tutorial shows is there.
	want := map[Kind]int{KindSolid: 103584, KindNoHook: 9247, KindFreeze: 1442, KindUnfreeze: 153, KindStart: 4, KindFinish: 24, KindDeath: 0}
	for k, n := range want {
		if c[k] != n {
			t.Errorf("%s tiles: %d, want %d", k, c[k], n)
		}
	}
	// The outer rows are solid (DDNet maps are walled in) and exactly one
	// spawn (ENTITY_OFFSET+ENTITY_SPAWN = 192).
	spawns := 0
	for _, x := range g.Tiles {
		if x == 192 {
			spawns++
		}
	}
	if spawns != 1 {
		t.Errorf("%d spawn tiles, want 1", spawns)
	}
	total := 0
	for _, n := range c {
		total += n
	}
	if total != len(g.Tiles) {
		t.Errorf("counts add up to %d of %d tiles", total, len(g.Tiles))
	}
}

// A tile layer of version 4 (upstream Teeworlds) stores runs: each
// stored tile stands for itself and the next Skip tiles.
func TestTileSkip(t *testing.T) {
	// 4×3 = 12 tiles: 5 solid, 1 freeze, 6 air.
	raw := []byte{TileSolid, 0, 4, 0, TileFreeze, 0, 0, 0, TileAir, 0, 5, 0}
	b, err := buildDatafile(minimalItems(4, 3, 4), [][]byte{raw})
	if err != nil {
		t.Fatal(err)
	}
	m, err := readBytes(t, b)
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{1, 1, 1, 1, 1, 9, 0, 0, 0, 0, 0, 0}
	if !bytes.Equal(m.Game.Tiles, want) {
		t.Errorf("tiles %v, want %v", m.Game.Tiles, want)
	}
	for _, tc := range []struct {
		name string
		raw  []byte
		msg  string
	}{
		{"short", []byte{TileSolid, 0, 4, 0}, "unpacks to 5 tiles"},
		{"long", []byte{1, 0, 11, 0, 1, 0, 0, 0}, "past the layer"},
		{"padding", []byte{1, 0, 11, 7}, "padding 7"},
	} {
		b, _ := buildDatafile(minimalItems(4, 3, 4), [][]byte{tc.raw})
		_, err := readBytes(t, b)
		if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want ErrFormat saying %q", tc.name, err, tc.msg)
		}
	}
}

// le32 overwrites the int32 at off.
func le32(b []byte, off int, v int32) []byte {
	b = bytes.Clone(b)
	binary.LittleEndian.PutUint32(b[off:], uint32(v))
	return b
}

// Hostile and broken maps: each is refused with an *Error that says
// where and what, never a panic.
func TestBadMaps(t *testing.T) {
	var good bytes.Buffer
	if err := Write(&good, testLayer(8, 6)); err != nil {
		t.Fatal(err)
	}
	g := good.Bytes()
	// The layout of a minimal map: header 36, 3 item types (36 bytes),
	// 3 item offsets, 1 data offset, 1 size, then the items: version
	// (8+4), group (8+60), layer (8+92).
	const (
		types    = 36
		itemOffs = types + 36
		dataOffs = itemOffs + 12
		sizes    = dataOffs + 4
		items    = sizes + 4
		group    = items + 12
		layer    = group + 68
		data     = layer + 100
	)
	noGame := le32(g, layer+8+24, 0)
	tests := []struct {
		name   string
		b      []byte
		off    int64 // -2: any
		want   error
		saying string
	}{
		{"empty", nil, 0, ErrFormat, "36-byte header"},
		{"magic", append([]byte("PNG\x00"), g[4:]...), 0, ErrFormat, "magic"},
		{"version", le32(g, 4, 5), 4, ErrFormat, "version 5"},
		{"truncated", g[:len(g)-1], -1, ErrFormat, "truncated"},
		{"one byte more", append(bytes.Clone(g), 0), -1, ErrFormat, "the file has"},
		{"negative item count", le32(g, 20, -1), 20, ErrFormat, "number of items -1"},
		{"header size", le32(g, 8, 5), 8, ErrFormat, "header size"},
		{"swaplen", le32(g, 12, 5), 12, ErrFormat, "swaplen"},
		{"item type start", le32(g, types+4, 1), types + 4, ErrFormat, "starts at item 1"},
		{"item type count", le32(g, types+8, 0), types + 8, ErrFormat, "want at least 1"},
		{"duplicate type", le32(g, types+12, 0), types + 12, ErrFormat, "repeats type 0"},
		{"item offset", le32(g, itemOffs+4, 0), itemOffs + 4, ErrFormat, "want more than the previous"},
		{"first data offset", le32(g, dataOffs, 4), dataOffs, ErrFormat, "first data offset"},
		{"item type mismatch", le32(g, layer, 6<<16), layer, ErrFormat, "item type entry says 5"},
		{"no layers", le32(le32(g, types+24, 6), layer, 6<<16), group + 8 + 20, ErrFormat, "the map has 0 layers"},
		{"no version item", le32(le32(g, types, 7), items, 7<<16), -2, ErrFormat, ""},
		{"map version", le32(g, items+8, 2), items + 8, ErrFormat, "map version 2"},
		{"group layers", le32(g, group+8+24, 2), group + 8 + 20, ErrFormat, "uses layers 0 to 1"},
		{"layer version", le32(g, layer+8+12, 9), layer + 8 + 12, ErrFormat, "version 9"},
		{"two physics flags", le32(g, layer+8+24, 3), layer + 8 + 24, ErrFormat, "at most one physics"},
		{"no game layer", noGame, -1, ErrFormat, "no game layer"},
		{"tiny layer", le32(g, layer+8+16, 1), layer + 8 + 16, ErrFormat, "at least 2×2"},
		{"huge layer", le32(le32(g, layer+8+16, 1<<15), layer+8+20, 1<<15), layer + 8 + 16, ErrTooLarge, "at most"},
		{"data index", le32(g, layer+8+56, 3), layer + 8 + 56, ErrFormat, "data block 3"},
		{"uncompressed size", le32(g, sizes, 8*6*4+4), data, ErrFormat, "inflates to 192 bytes, its size says 196"},
		{"smaller size", le32(g, sizes, 8*6*4-4), data, ErrFormat, "more than its declared"},
		{"zlib bomb", le32(g, sizes, 60<<20), sizes, ErrFormat, "zlib cannot make"},
		{"too large block", le32(g, sizes, 65<<20), sizes, ErrTooLarge, "at most"},
		{"zlib header", le32(g, data, 0), data, ErrFormat, "zlib"},
		{"adler", func() []byte { b := bytes.Clone(g); b[len(b)-1] ^= 1; return b }(), data, ErrFormat, "checksum"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := readBytes(t, tc.b)
			if err == nil {
				t.Fatalf("read: %d×%d, want an error", m.Game.Width, m.Game.Height)
			}
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, tc.want) {
				t.Fatalf("%v (%T), want an *Error wrapping %v", err, err, tc.want)
			}
			if tc.off != -2 && e.Offset != tc.off {
				t.Errorf("offset %d, want %d: %v", e.Offset, tc.off, err)
			}
			if !strings.Contains(err.Error(), tc.saying) {
				t.Errorf("%v, want it to say %q", err, tc.saying)
			}
		})
	}
	// What the version-3 layer forbids: a skip or padding byte.
	raw := make([]byte, 8*6*4)
	raw[4*7+2] = 1
	b, _ := buildDatafile(minimalItems(8, 6, 3), [][]byte{raw})
	if _, err := readBytes(t, b); !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "tile 7") {
		t.Errorf("a skip in a version 3 layer: %v", err)
	}
}

// Every prefix and every single-byte change of a small map is read or
// refused with an *Error, never a panic.
func TestTruncationsAndFlips(t *testing.T) {
	var good bytes.Buffer
	if err := Write(&good, testLayer(6, 4)); err != nil {
		t.Fatal(err)
	}
	g := good.Bytes()
	check := func(b []byte) {
		m, err := readBytes(t, b)
		var e *Error
		switch {
		case err != nil && !errors.As(err, &e):
			t.Fatalf("%v (%T), want an *Error", err, err)
		case err == nil && len(m.Game.Tiles) != m.Game.Width*m.Game.Height:
			t.Fatalf("%d tiles for %d×%d", len(m.Game.Tiles), m.Game.Width, m.Game.Height)
		}
	}
	for n := range len(g) {
		check(g[:n])
	}
	for i := range g {
		for _, x := range []byte{0x01, 0x80, 0xff} {
			b := bytes.Clone(g)
			b[i] ^= x
			check(b)
		}
	}
}

func TestKinds(t *testing.T) {
	for _, tc := range []struct {
		index byte
		kind  Kind
		name  string
	}{
		{0, KindAir, "air"}, {1, KindSolid, "solid"}, {2, KindDeath, "death"}, {3, KindNoHook, "nohook"},
		{9, KindFreeze, "freeze"}, {11, KindUnfreeze, "unfreeze"}, {12, KindDeepFreeze, "deep_freeze"},
		{13, KindDeepUnfreeze, "deep_unfreeze"}, {33, KindStart, "start"}, {34, KindFinish, "finish"},
		{35, KindCheckpoint, "checkpoint"}, {59, KindCheckpoint, "checkpoint"}, {60, KindOther, "other"}, {192, KindOther, "other"},
	} {
		if k := KindOf(tc.index); k != tc.kind || k.String() != tc.name {
			t.Errorf("KindOf(%d) = %v, want %v", tc.index, k, tc.name)
		}
	}
}

// FuzzRead: no input makes Read panic, allocate past its limits or
// return a layer whose tiles do not fill it.
func FuzzRead(f *testing.F) {
	for _, s := range [][2]int{{2, 2}, {5, 4}, {30, 20}} {
		var b bytes.Buffer
		if err := Write(&b, testLayer(s[0], s[1])); err != nil {
			f.Fatal(err)
		}
		f.Add(b.Bytes())
		f.Add(b.Bytes()[:b.Len()/2])
	}
	skip, _ := buildDatafile(minimalItems(4, 3, 4), [][]byte{{1, 0, 4, 0, 9, 0, 0, 0, 0, 0, 5, 0}})
	f.Add(skip)
	f.Add([]byte("DATA"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := readBytes(t, b)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("%v (%T), want an *Error", err, err)
			}
			return
		}
		if m.Game.Width < 2 || m.Game.Height < 2 || len(m.Game.Tiles) != m.Game.Width*m.Game.Height {
			t.Fatalf("%d tiles for %d×%d", len(m.Game.Tiles), m.Game.Width, m.Game.Height)
		}
	})
}
