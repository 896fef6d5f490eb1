// Package ddnetmap reads the game layer of a Teeworlds/DDNet map: the
// datafile format (version 3 or 4: a header, item types, item offsets,
// data offsets, uncompressed data sizes, items, zlib-compressed data)
// and the map items in it (the version item, groups and layers), down to
// the tile layer flagged as the game layer, whose tiles say where a tee
// collides, dies, freezes, starts and finishes. Moderators see a
// recording drawn over it (docs/web.md).
//
// The reader follows DDNet's own loader (src/engine/shared/datafile.cpp,
// src/engine/shared/map.cpp, src/game/mapitems.h) and is written for
// hostile files: every count, offset and size is checked against the
// file before it is used, decompression is bounded by the block's
// declared size and by MaxGameBytes, and a bad file is an *Error naming
// the byte offset and what was expected there, never a panic. It reads
// the header, the items and the game layer's one data block; images,
// envelopes, sounds and the other layers' data are never decompressed.
//
// Write makes small maps (a version item, one group, one game layer) so
// that tests can build maps of their own.
package ddnetmap

import (
	"compress/zlib"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// Limits on what Read accepts, so that a hostile file cannot make it
// allocate much: real maps are far below both (DDNet's Tutorial, 1 MiB,
// has 9 KiB of items and a 1.3 MiB game layer).
const (
	// MaxItemBytes bounds the header's tables and items, read whole.
	MaxItemBytes = 16 << 20
	// MaxGameBytes bounds the game layer's decompressed tile data (4
	// bytes a tile: 16 Mi tiles, e.g. 4096×4096).
	MaxGameBytes = 64 << 20
)

// ErrFormat is wrapped by every error about a file that is not a valid
// map (errors.Is): the caller's input, not the reader's failure.
var ErrFormat = errors.New("not a valid DDNet map")

// ErrTooLarge is wrapped by the errors of a map past MaxItemBytes or
// MaxGameBytes: it may be valid, but this reader will not hold it.
var ErrTooLarge = errors.New("map too large")

// Error is a bad or too large map: Offset is the byte of the file where
// the reader found what it did not expect (-1 when the fault is not at
// one place), What says what it expected. It unwraps to ErrFormat or
// ErrTooLarge.
type Error struct {
	Offset int64
	What   string
	Err    error
}

// Error says where and what.
func (e *Error) Error() string {
	if e.Offset < 0 {
		return "ddnet map: " + e.What
	}
	return fmt.Sprintf("ddnet map: at byte %d: %s", e.Offset, e.What)
}

// Unwrap returns ErrFormat or ErrTooLarge.
func (e *Error) Unwrap() error { return e.Err }

func bad(off int64, format string, args ...any) error {
	return &Error{Offset: off, What: fmt.Sprintf(format, args...), Err: ErrFormat}
}

func tooLarge(off int64, format string, args ...any) error {
	return &Error{Offset: off, What: fmt.Sprintf(format, args...), Err: ErrTooLarge}
}

// Map is what Read takes from a map file: its identity as a teehistorian
// header names it (map_sha256, map_crc, map_size) and its game layer.
type Map struct {
	// SHA256 and CRC32 are of the whole file, as DDNet computes them
	// when it loads a map (CRC-32 of zlib, the IEEE polynomial).
	SHA256 [32]byte
	CRC32  uint32
	Size   int64
	// Version is the datafile's version (3 or 4).
	Version int
	Game    GameLayer
}

// SHA256Hex is the sha256 in lower-case hex, as a teehistorian header's
// map_sha256 and the archive's map keys write it.
func (m *Map) SHA256Hex() string { return hex.EncodeToString(m.SHA256[:]) }

// CRCHex is the CRC-32 as eight hex digits, as a teehistorian header's
// map_crc writes it.
func (m *Map) CRCHex() string { return fmt.Sprintf("%08x", m.CRC32) }

// GameLayer is the game layer's tiles: Tiles[y*Width+x] is the tile
// index of column x, row y (row 0 at the top); a tile is 32 world units
// wide, so world position (wx, wy) is in tile (wx/32, wy/32). See Class
// for what an index means.
type GameLayer struct {
	Width, Height int
	Tiles         []byte
}

// At returns the tile index at column x, row y; outside the layer, air.
func (g *GameLayer) At(x, y int) byte {
	if x < 0 || y < 0 || x >= g.Width || y >= g.Height {
		return TileAir
	}
	return g.Tiles[y*g.Width+x]
}

// The datafile's layout (datafile.cpp): a 36-byte header of nine
// little-endian int32s, then the tables, items and data.
const (
	headerSize = 36
	// sizeOffset is the bytes before the header's size field counts from
	// (magic, version, size, swaplen).
	sizeOffset = 16
	maxType    = 0xffff
	typeEx     = 0xffff // ITEMTYPE_EX: UUID item types; duplicates allowed
)

// Map item types and the fields of mapitems.h that Read needs.
const (
	itemVersion = 0 // MAPITEMTYPE_VERSION
	itemGroup   = 4 // MAPITEMTYPE_GROUP
	itemLayer   = 5 // MAPITEMTYPE_LAYER

	layerTypeTiles = 2 // LAYERTYPE_TILES

	// TILESLAYERFLAG_*: at most one physics flag on a tile layer.
	flagGame     = 1 << 0
	physicsFlags = 1<<0 | 1<<1 | 1<<2 | 1<<3 | 1<<4 | 1<<5

	groupV1Size   = 7 * 4  // CMapItemGroup_v1
	layerSize     = 3 * 4  // CMapItemLayer
	tilemapV2Size = 15 * 4 // CMapItemLayerTilemap_v2
	tilemapV3Size = 18 * 4 // CMapItemLayerTilemap_v3Teeworlds
)

// header is the datafile header's nine fields.
type header struct {
	version, size, swaplen                int32
	numTypes, numItems, numData, itemSize int32
	dataSize                              int32
}

// item is one item of the datafile: its type, id and payload (the ints
// after its 8-byte item header), and where the payload starts in the file.
type item struct {
	typ, id int
	data    []byte
	off     int64
}

func (it item) int32At(i int) int32 { return int32(binary.LittleEndian.Uint32(it.data[4*i:])) }

// Read reads the map of size bytes in r: it hashes the whole file, checks
// the datafile's structure as DDNet's loader does, finds the game layer
// through the groups and layers, and decompresses its tiles alone. The
// error of a file that is not a valid map is an *Error (ErrFormat,
// ErrTooLarge); an error of r is returned wrapped as it is.
func Read(r io.ReaderAt, size int64) (*Map, error) {
	m := &Map{Size: size}
	if err := hashFile(r, size, m); err != nil {
		return nil, err
	}
	d, err := openDatafile(r, size)
	if err != nil {
		return nil, err
	}
	m.Version = int(d.h.version)
	if err := d.checkVersionItem(); err != nil {
		return nil, err
	}
	gl, err := d.findGameLayer()
	if err != nil {
		return nil, err
	}
	if m.Game, err = d.readGameLayer(gl); err != nil {
		return nil, err
	}
	return m, nil
}

// hashFile computes the sha256 and CRC-32 of the whole file.
func hashFile(r io.ReaderAt, size int64, m *Map) error {
	h := sha256.New()
	crc := crc32.NewIEEE()
	n, err := io.Copy(io.MultiWriter(h, crc), io.NewSectionReader(r, 0, size))
	if err != nil {
		return fmt.Errorf("ddnet map: read for its hash: %w", err)
	}
	if n != size {
		return bad(n, "the file ends after %d bytes, %d were announced", n, size)
	}
	h.Sum(m.SHA256[:0])
	m.CRC32 = crc.Sum32()
	return nil
}

// datafile is an opened datafile: its header, tables and items, with the
// offsets that place its data blocks.
type datafile struct {
	r         io.ReaderAt
	h         header
	types     []itemType
	items     []item
	dataOffs  []int32
	dataSizes []int32 // uncompressed sizes (version 4), else nil
	dataStart int64   // file offset of the first data block
}

type itemType struct{ typ, start, num int }

func openDatafile(r io.ReaderAt, size int64) (*datafile, error) {
	if size < headerSize {
		return nil, bad(0, "a datafile starts with a %d-byte header; the file has %d bytes", headerSize, size)
	}
	var hb [headerSize]byte
	if _, err := r.ReadAt(hb[:], 0); err != nil {
		return nil, fmt.Errorf("ddnet map: read header: %w", err)
	}
	if magic := string(hb[:4]); magic != "DATA" && magic != "ATAD" {
		return nil, bad(0, "magic %q, want \"DATA\" or \"ATAD\" (not a Teeworlds/DDNet datafile)", hb[:4])
	}
	f := func(i int) int32 { return int32(binary.LittleEndian.Uint32(hb[4+4*i:])) }
	h := header{version: f(0), size: f(1), swaplen: f(2), numTypes: f(3), numItems: f(4), numData: f(5), itemSize: f(6), dataSize: f(7)}
	if h.version != 3 && h.version != 4 {
		return nil, bad(4, "datafile version %d, want 3 or 4", h.version)
	}
	for _, c := range []struct {
		off  int64
		name string
		v    int32
		max  int64
	}{
		{16, "number of item types", h.numTypes, maxType + 1},
		{20, "number of items", h.numItems, 1 << 31},
		{24, "number of data blocks", h.numData, 1 << 31},
		{28, "item bytes", h.itemSize, 1 << 31},
		{32, "data bytes", h.dataSize, 1 << 31},
	} {
		if c.v < 0 || int64(c.v) > c.max {
			return nil, bad(c.off, "%s %d, want 0 to %d", c.name, c.v, c.max)
		}
	}
	if h.itemSize%4 != 0 {
		return nil, bad(28, "item bytes %d, want a multiple of 4", h.itemSize)
	}
	// The tables and items between the header and the data.
	meta := int64(h.numTypes)*12 + int64(h.numItems)*4 + int64(h.numData)*4 + int64(h.itemSize)
	var sizeFix int64
	if h.version == 4 {
		sizeFix = int64(h.numData) * 4 // the uncompressed sizes
		meta += sizeFix
	}
	if want := headerSize + meta + int64(h.dataSize); want != size {
		return nil, bad(-1, "the header's tables, %d item bytes and %d data bytes make %d bytes; the file has %d (truncated, or not a datafile)", h.itemSize, h.dataSize, want, size)
	}
	// Version 4 maps written before DDNet commit 3dd1ea0d left the
	// uncompressed sizes out of size and swaplen: DDNet accepts both.
	if hs := int64(h.size) + sizeOffset; hs != size && (sizeFix == 0 || hs+sizeFix != size) {
		return nil, bad(8, "header size %d says the file has %d bytes; it has %d", h.size, hs, size)
	}
	if hs, want := int64(h.swaplen)+sizeOffset, size-int64(h.dataSize); hs != want && (sizeFix == 0 || hs+sizeFix != want) {
		return nil, bad(12, "header swaplen %d says the data start at byte %d; they start at %d", h.swaplen, hs, want)
	}
	if meta > MaxItemBytes {
		return nil, tooLarge(headerSize, "%d bytes of item tables and items, this reader takes at most %d", meta, MaxItemBytes)
	}
	buf := make([]byte, meta)
	if _, err := r.ReadAt(buf, headerSize); err != nil {
		return nil, fmt.Errorf("ddnet map: read items: %w", err)
	}
	d := &datafile{r: r, h: h, dataStart: headerSize + meta}
	if err := d.parseTables(buf); err != nil {
		return nil, err
	}
	return d, nil
}

// parseTables reads and checks the item types, item offsets, data
// offsets, data sizes and items in buf (the bytes after the header),
// with the checks of DDNet's CDatafile::Validate.
func (d *datafile) parseTables(buf []byte) error {
	h := d.h
	le := binary.LittleEndian
	at := func(off int) int32 { return int32(le.Uint32(buf[off:])) }
	fileOff := func(off int) int64 { return headerSize + int64(off) }

	pos := 0
	counted := int64(0)
	seen := make(map[int]bool, h.numTypes)
	d.types = make([]itemType, h.numTypes)
	for i := range d.types {
		typ, start, num := at(pos), at(pos+4), at(pos+8)
		switch {
		case typ < 0 || typ > maxType:
			return bad(fileOff(pos), "item type %d is %d, want 0 to %d", i, typ, maxType)
		case seen[int(typ)]:
			return bad(fileOff(pos), "item type %d repeats type %d", i, typ)
		case num <= 0:
			return bad(fileOff(pos+8), "item type %d (type %d) has %d items, want at least 1", i, typ, num)
		case int64(start) != counted:
			return bad(fileOff(pos+4), "item type %d (type %d) starts at item %d, want %d", i, typ, start, counted)
		}
		seen[int(typ)] = true
		counted += int64(num)
		if counted > int64(h.numItems) {
			return bad(fileOff(pos+8), "item types count %d items or more, the header says %d", counted, h.numItems)
		}
		d.types[i] = itemType{int(typ), int(start), int(num)}
		pos += 12
	}
	if counted != int64(h.numItems) {
		return bad(16, "item types count %d items, the header says %d", counted, h.numItems)
	}

	itemOffsPos := pos
	itemOff := func(i int) int32 { return at(itemOffsPos + 4*i) }
	for i := 0; i < int(h.numItems); i++ {
		o := itemOff(i)
		switch {
		case i == 0 && o != 0:
			return bad(fileOff(itemOffsPos), "first item offset %d, want 0", o)
		case i > 0 && o <= itemOff(i-1):
			return bad(fileOff(itemOffsPos+4*i), "item offset %d of item %d, want more than the previous %d", o, i, itemOff(i-1))
		case o >= h.itemSize:
			return bad(fileOff(itemOffsPos+4*i), "item offset %d of item %d, want less than the %d item bytes", o, i, h.itemSize)
		}
	}
	pos += 4 * int(h.numItems)

	dataOffsPos := pos
	d.dataOffs = make([]int32, h.numData)
	for i := range d.dataOffs {
		o := at(dataOffsPos + 4*i)
		switch {
		case i == 0 && o != 0:
			return bad(fileOff(dataOffsPos), "first data offset %d, want 0", o)
		case i > 0 && o <= d.dataOffs[i-1]:
			return bad(fileOff(dataOffsPos+4*i), "data offset %d of block %d, want more than the previous %d", o, i, d.dataOffs[i-1])
		case o >= h.dataSize:
			return bad(fileOff(dataOffsPos+4*i), "data offset %d of block %d, want less than the %d data bytes", o, i, h.dataSize)
		}
		d.dataOffs[i] = o
	}
	pos += 4 * int(h.numData)
	if h.version == 4 {
		d.dataSizes = make([]int32, h.numData)
		for i := range d.dataSizes {
			s := at(pos + 4*i)
			if s < 0 {
				return bad(fileOff(pos+4*i), "uncompressed size %d of block %d, want 0 or more", s, i)
			}
			d.dataSizes[i] = s
		}
		pos += 4 * int(h.numData)
	}

	itemsPos := pos
	d.items = make([]item, h.numItems)
	for _, t := range d.types {
		ids := make(map[int]bool)
		for i := t.start; i < t.start+t.num; i++ {
			start := int(itemOff(i))
			end := int(h.itemSize)
			if i+1 < int(h.numItems) {
				end = int(itemOff(i + 1))
			}
			p := itemsPos + start
			if end-start < 8 {
				return bad(fileOff(p), "item %d has %d bytes, want at least its 8-byte header", i, end-start)
			}
			typeAndID, isize := le.Uint32(buf[p:]), int32(le.Uint32(buf[p+4:]))
			typ, id := int(typeAndID>>16), int(typeAndID&0xffff)
			switch {
			case typ != t.typ:
				return bad(fileOff(p), "item %d is of type %d, its item type entry says %d", i, typ, t.typ)
			case typ != typeEx && ids[id]:
				return bad(fileOff(p), "item %d repeats id %d of type %d", i, id, typ)
			case isize < 0 || isize%4 != 0 || int(isize) != end-start-8:
				return bad(fileOff(p+4), "item %d says it has %d bytes; its offsets leave %d", i, isize, end-start-8)
			}
			ids[id] = true
			d.items[i] = item{typ: typ, id: id, data: buf[p+8 : p+8+int(isize)], off: fileOff(p + 8)}
		}
	}
	return nil
}

// itemsOf returns the items of type typ (none when the map has none).
func (d *datafile) itemsOf(typ int) []item {
	for _, t := range d.types {
		if t.typ == typ {
			return d.items[t.start : t.start+t.num]
		}
	}
	return nil
}

// checkVersionItem checks the map's version item (type 0, id 0): 1.
func (d *datafile) checkVersionItem() error {
	for _, it := range d.itemsOf(itemVersion) {
		if it.id != 0 {
			continue
		}
		if len(it.data) < 4 {
			return bad(it.off, "the map's version item has %d bytes, want 4", len(it.data))
		}
		if v := it.int32At(0); v != 1 {
			return bad(it.off, "map version %d, want 1", v)
		}
		return nil
	}
	return bad(-1, "no map version item (type %d, id 0): a datafile, but not a map", itemVersion)
}

// gameLayer is the game layer's tilemap item, as Read needs it.
type gameLayer struct {
	version, width, height, data int
	off                          int64 // the item's payload in the file
}

// findGameLayer walks the groups and their layers as DDNet's CMap::Load
// does, checking each tile layer's item, and returns the game layer's
// (the last one flagged, as DDNet takes it).
func (d *datafile) findGameLayer() (*gameLayer, error) {
	groups, layers := d.itemsOf(itemGroup), d.itemsOf(itemLayer)
	used := make([]bool, len(layers))
	var game *gameLayer
	for gi, g := range groups {
		if len(g.data) < groupV1Size {
			return nil, bad(g.off, "group %d has %d bytes, want at least %d", gi, len(g.data), groupV1Size)
		}
		start, num := g.int32At(5), g.int32At(6)
		if start < 0 || num < 0 || int64(start)+int64(num) > int64(len(layers)) {
			return nil, bad(g.off+20, "group %d uses layers %d to %d; the map has %d layers", gi, start, int64(start)+int64(num)-1, len(layers))
		}
		for li := range int(num) {
			idx := int(start) + li
			if used[idx] {
				return nil, bad(g.off+20, "layer %d of group %d is another group's too", li, gi)
			}
			used[idx] = true
			l := layers[idx]
			if len(l.data) < layerSize {
				return nil, bad(l.off, "layer %d of group %d has %d bytes, want at least %d", li, gi, len(l.data), layerSize)
			}
			if l.int32At(1) != layerTypeTiles {
				continue
			}
			tl, err := tileLayer(l, gi, li)
			if err != nil {
				return nil, err
			}
			if tl != nil {
				game = tl
			}
		}
	}
	if game == nil {
		return nil, bad(-1, "no game layer (a tile layer flagged TILESLAYERFLAG_GAME in the map's %d groups)", len(groups))
	}
	return game, nil
}

// tileLayer checks tile layer item l (layer li of group gi) and returns
// it when it is the game layer, nil when it is another tile layer.
func tileLayer(l item, gi, li int) (*gameLayer, error) {
	if len(l.data) < tilemapV2Size {
		return nil, bad(l.off, "tile layer %d of group %d has %d bytes, want at least %d", li, gi, len(l.data), tilemapV2Size)
	}
	version, width, height, flags := l.int32At(3), l.int32At(4), l.int32At(5), l.int32At(6)
	if version < 2 || version > 4 {
		return nil, bad(l.off+12, "tile layer %d of group %d has version %d, want 2 to 4", li, gi, version)
	}
	if version >= 3 && len(l.data) < tilemapV3Size {
		return nil, bad(l.off, "tile layer %d of group %d (version %d) has %d bytes, want at least %d", li, gi, version, len(l.data), tilemapV3Size)
	}
	if f := flags & physicsFlags; f&(f-1) != 0 {
		return nil, bad(l.off+24, "tile layer %d of group %d has flags %#x, want at most one physics layer flag", li, gi, flags)
	}
	if flags&flagGame == 0 {
		return nil, nil
	}
	if width < 2 || height < 2 {
		return nil, bad(l.off+16, "game layer (layer %d of group %d) is %d×%d tiles, want at least 2×2", li, gi, width, height)
	}
	if int64(width)*int64(height)*4 > MaxGameBytes {
		return nil, tooLarge(l.off+16, "game layer of %d×%d tiles (%d bytes), this reader takes at most %d bytes", width, height, int64(width)*int64(height)*4, MaxGameBytes)
	}
	return &gameLayer{version: int(version), width: int(width), height: int(height), data: int(l.int32At(14)), off: l.off}, nil
}

// readGameLayer decompresses the game layer's data block and takes the
// tile indexes from it.
func (d *datafile) readGameLayer(gl *gameLayer) (GameLayer, error) {
	if gl.data < 0 || gl.data >= len(d.dataOffs) {
		return GameLayer{}, bad(gl.off+56, "game layer's data block %d, the map has %d", gl.data, len(d.dataOffs))
	}
	off := int64(d.dataOffs[gl.data])
	end := int64(d.h.dataSize)
	if gl.data+1 < len(d.dataOffs) {
		end = int64(d.dataOffs[gl.data+1])
	}
	stored := end - off
	at := d.dataStart + off
	count := gl.width * gl.height
	var raw []byte
	if d.dataSizes == nil {
		// Version 3: stored as it is.
		if stored > MaxGameBytes {
			return GameLayer{}, tooLarge(at, "game layer data of %d bytes, this reader takes at most %d", stored, MaxGameBytes)
		}
		raw = make([]byte, stored)
		if _, err := d.r.ReadAt(raw, at); err != nil {
			return GameLayer{}, fmt.Errorf("ddnet map: read game layer data: %w", err)
		}
	} else {
		var err error
		if raw, err = d.inflate(gl.data, at, stored); err != nil {
			return GameLayer{}, err
		}
	}
	if len(raw)%4 != 0 {
		return GameLayer{}, bad(at, "game layer data of %d bytes, want 4 bytes a tile", len(raw))
	}
	g := GameLayer{Width: gl.width, Height: gl.height, Tiles: make([]byte, count)}
	n := len(raw) / 4
	if gl.version < 4 {
		if n < count {
			return GameLayer{}, bad(at, "game layer data holds %d tiles, its %d×%d layer needs %d", n, gl.width, gl.height, count)
		}
		for i := range count {
			t := raw[4*i : 4*i+4]
			if t[2] != 0 || t[3] != 0 {
				return GameLayer{}, bad(at, "tile %d (decompressed byte %d) has skip %d and padding %d, want 0 and 0 (layer version %d has no tile skip)", i, 4*i+2, t[2], t[3], gl.version)
			}
			g.Tiles[i] = t[0]
		}
		return g, nil
	}
	// Version 4 (upstream Teeworlds): each stored tile stands for itself
	// and the next Skip tiles.
	dst := 0
	src := 0
	for ; dst < count && src < n; src++ {
		t := raw[4*src : 4*src+4]
		if t[3] != 0 {
			return GameLayer{}, bad(at, "tile %d (decompressed byte %d) has padding %d, want 0", src, 4*src+3, t[3])
		}
		for k := 0; k <= int(t[2]) && dst < count; k++ {
			g.Tiles[dst] = t[0]
			dst++
		}
	}
	if dst != count {
		return GameLayer{}, bad(at, "game layer data unpacks to %d tiles, its %d×%d layer needs %d", dst, gl.width, gl.height, count)
	}
	if src != n {
		return GameLayer{}, bad(at, "game layer data holds %d stored tiles, %d of them past the layer's %d tiles", n, n-src, count)
	}
	return g, nil
}

// inflate decompresses data block i (stored bytes at file offset at) to
// exactly its declared size, which must be at most MaxGameBytes and
// within what zlib can produce from stored bytes (about 1032:1), so that
// a small hostile file cannot make the reader allocate much.
func (d *datafile) inflate(i int, at, stored int64) ([]byte, error) {
	want := int64(d.dataSizes[i])
	sizeAt := d.dataStart - int64(len(d.dataSizes)-i)*4 - d.itemBytes()
	if want == 0 {
		return nil, bad(sizeAt, "data block %d has uncompressed size 0", i)
	}
	if want > MaxGameBytes {
		return nil, tooLarge(sizeAt, "data block %d inflates to %d bytes, this reader takes at most %d", i, want, MaxGameBytes)
	}
	if want > stored*1040+64 {
		return nil, bad(sizeAt, "data block %d says it inflates to %d bytes; zlib cannot make that many of its %d stored bytes", i, want, stored)
	}
	zr, err := zlib.NewReader(io.NewSectionReader(d.r, at, stored))
	if err != nil {
		return nil, bad(at, "data block %d: want a zlib stream: %v", i, err)
	}
	out := make([]byte, want)
	if n, err := io.ReadFull(zr, out); err != nil {
		return nil, bad(at, "data block %d inflates to %d bytes, its size says %d: %v", i, n, want, err)
	}
	// The stream must end here: reading on checks its Adler-32.
	var one [1]byte
	if n, err := zr.Read(one[:]); n != 0 || err != io.EOF {
		if err == nil || err == io.EOF {
			return nil, bad(at, "data block %d inflates to more than its declared %d bytes", i, want)
		}
		return nil, bad(at, "data block %d: %v", i, err)
	}
	return out, nil
}

// itemBytes is the size of the items, which lie between the uncompressed
// sizes and the data.
func (d *datafile) itemBytes() int64 { return int64(d.h.itemSize) }
