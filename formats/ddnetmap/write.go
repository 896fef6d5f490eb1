package ddnetmap

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"io"
	"slices"
)

// Write writes a minimal valid map holding g: a datafile version 4 with
// a version item, one group ("Game") and one game tile layer whose tiles
// are g's indexes (flags, skip and padding 0), laid out as DDNet's
// CDataFileWriter::Finish lays a file out. Tests make their own maps with
// it; DDNet's loader takes them (a map also needs spawn tiles to be
// played, which are g's to hold).
func Write(w io.Writer, g GameLayer) error {
	if g.Width < 2 || g.Height < 2 || len(g.Tiles) != g.Width*g.Height {
		return fmt.Errorf("ddnet map: write a %d×%d game layer of %d tiles: want at least 2×2 and width×height tiles", g.Width, g.Height, len(g.Tiles))
	}
	if int64(g.Width)*int64(g.Height)*4 > MaxGameBytes {
		return fmt.Errorf("ddnet map: write a %d×%d game layer: over %d bytes", g.Width, g.Height, MaxGameBytes)
	}
	raw := make([]byte, 4*len(g.Tiles))
	for i, t := range g.Tiles {
		raw[4*i] = t
	}
	b, err := buildDatafile(minimalItems(g.Width, g.Height, 3), [][]byte{raw})
	if err != nil {
		return err
	}
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("ddnet map: write: %w", err)
	}
	return nil
}

// rawItem is an item to write: its type, id and ints.
type rawItem struct {
	typ, id int
	data    []int32
}

// minimalItems are the items of a map with one group holding one game
// layer of width×height tiles, tile layer version layerVersion, its data
// in block 0.
func minimalItems(width, height int, layerVersion int32) []rawItem {
	game := nameInts("Game")
	return []rawItem{
		// CMapItemVersion.
		{itemVersion, 0, []int32{1}},
		// CMapItemGroup version 3: offsets 0, parallax 100, layers 0..0,
		// no clipping, the name.
		{itemGroup, 0, []int32{3, 0, 0, 100, 100, 0, 1, 0, 0, 0, 0, 0, game[0], game[1], game[2]}},
		// CMapItemLayerTilemap: CMapItemLayer (version 0, tiles, no
		// flags), its version, width, height, TILESLAYERFLAG_GAME, white,
		// no colour envelope, no image, data block 0, the name, no
		// tele/speedup/front/switch/tune data.
		{itemLayer, 0, []int32{0, layerTypeTiles, 0, layerVersion, int32(width), int32(height), flagGame,
			255, 255, 255, 255, -1, 0, -1, 0, game[0], game[1], game[2], -1, -1, -1, -1, -1}},
	}
}

// buildDatafile lays out a datafile version 4 as CDataFileWriter::Finish
// does: the header, item types in ascending type, item offsets, data
// offsets, uncompressed sizes, items by type, then each block zlib
// compressed.
func buildDatafile(items []rawItem, blocks [][]byte) ([]byte, error) {
	items = slices.Clone(items)
	slices.SortStableFunc(items, func(a, b rawItem) int { return a.typ - b.typ })
	var comp [][]byte
	dataBytes := 0
	for _, raw := range blocks {
		var z bytes.Buffer
		zw := zlib.NewWriter(&z)
		if _, err := zw.Write(raw); err != nil {
			return nil, fmt.Errorf("ddnet map: compress: %w", err)
		}
		if err := zw.Close(); err != nil {
			return nil, fmt.Errorf("ddnet map: compress: %w", err)
		}
		comp = append(comp, z.Bytes())
		dataBytes += z.Len()
	}
	type span struct{ typ, start, num int }
	var types []span
	itemBytes := 0
	for i, it := range items {
		if len(types) == 0 || types[len(types)-1].typ != it.typ {
			types = append(types, span{it.typ, i, 0})
		}
		types[len(types)-1].num++
		itemBytes += 8 + 4*len(it.data)
	}
	swap := headerSize + 12*len(types) + 4*len(items) + 8*len(blocks) + itemBytes
	fileSize := swap + dataBytes

	b := make([]byte, 0, fileSize)
	put := func(vs ...int32) {
		for _, v := range vs {
			b = binary.LittleEndian.AppendUint32(b, uint32(v))
		}
	}
	b = append(b, "DATA"...)
	put(4, int32(fileSize-sizeOffset), int32(swap-sizeOffset), int32(len(types)), int32(len(items)), int32(len(blocks)), int32(itemBytes), int32(dataBytes))
	for _, t := range types {
		put(int32(t.typ), int32(t.start), int32(t.num))
	}
	off := 0
	for _, it := range items {
		put(int32(off))
		off += 8 + 4*len(it.data)
	}
	off = 0
	for _, c := range comp {
		put(int32(off))
		off += len(c)
	}
	for _, raw := range blocks {
		put(int32(len(raw)))
	}
	for _, it := range items {
		put(int32(uint32(it.typ)<<16|uint32(it.id)), int32(4*len(it.data)))
		put(it.data...)
	}
	for _, c := range comp {
		b = append(b, c...)
	}
	return b, nil
}

// nameInts packs a name of at most 11 bytes into three ints as DDNet's
// StrToInts does: four bytes an int, each plus 128, the first in the top
// byte, the last byte of the last int 0.
func nameInts(s string) [3]int32 {
	var buf [12]byte
	copy(buf[:11], s)
	var out [3]int32
	for i := range out {
		var v uint32
		for c := range 4 {
			v = v<<8 | uint32(buf[4*i+c]+128)
		}
		out[i] = int32(v)
	}
	out[2] &^= 0xff
	return out
}
