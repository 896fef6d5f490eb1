// Package mpqtest writes small MPQ archives for tests: replays rebuilt with
// one inner file swapped for a hostile one (decompression bombs, forged
// sizes), built by the test itself rather than committed as big files.
package mpqtest

import (
	"bytes"
	"encoding/binary"

	"github.com/replayarchive/replay/formats/sc2replay/mpq"
)

// Compression mask bytes that start a compressed sector or single unit.
const (
	MaskZlib  = 0x02
	MaskBzip2 = 0x10
)

// File is one inner file. Data is stored as given: the caller compresses it
// (with its mask byte) or lays out sectors (see Sectors) to match Flags.
// Size is the decompressed size the block table declares.
type File struct {
	Name  string
	Data  []byte
	Size  uint32
	Flags uint32 // mpq.Flag* except FlagExists, which Build adds
}

// Sectors lays out already compressed sectors behind their offset table.
func Sectors(secs [][]byte) []byte {
	table := make([]byte, 4*(len(secs)+1))
	off := uint32(len(table))
	var body []byte
	for i, s := range secs {
		binary.LittleEndian.PutUint32(table[4*i:], off)
		off += uint32(len(s))
		body = append(body, s...)
	}
	binary.LittleEndian.PutUint32(table[4*len(secs):], off)
	return append(table, body...)
}

// Build writes a format-version-1 archive behind an MPQ\x1b user-data
// header carrying userData (a replay header), with sector size 512<<shift:
// header, file data, hash table, block table, as StormLib lays them out.
func Build(userData []byte, shift uint16, files []File) []byte {
	out := append([]byte(mpq.UserDataMagic), make([]byte, 12)...)
	hdrOff := (uint32(16+len(userData)) + 511) &^ 511
	binary.LittleEndian.PutUint32(out[4:], uint32(len(userData)+16))
	binary.LittleEndian.PutUint32(out[8:], hdrOff)
	binary.LittleEndian.PutUint32(out[12:], uint32(len(userData)))
	out = append(out, userData...)
	out = append(out, make([]byte, int(hdrOff)-len(out))...)

	const hsize = 44
	arc := make([]byte, hsize)
	bt := make([]byte, 16*len(files))
	for i, f := range files {
		binary.LittleEndian.PutUint32(bt[16*i:], uint32(len(arc)))
		binary.LittleEndian.PutUint32(bt[16*i+4:], uint32(len(f.Data)))
		binary.LittleEndian.PutUint32(bt[16*i+8:], f.Size)
		binary.LittleEndian.PutUint32(bt[16*i+12:], f.Flags|mpq.FlagExists)
		arc = append(arc, f.Data...)
	}
	n := 16
	for n < 2*len(files) {
		n *= 2
	}
	ht := bytes.Repeat([]byte{0xff}, 16*n)
	for bi, f := range files {
		i := int(mpq.HashString(f.Name, mpq.HashTableOffset)) & (n - 1)
		for binary.LittleEndian.Uint32(ht[16*i+12:]) != 0xFFFFFFFF {
			i = (i + 1) % n
		}
		e := ht[16*i:]
		binary.LittleEndian.PutUint32(e, mpq.HashString(f.Name, mpq.HashNameA))
		binary.LittleEndian.PutUint32(e[4:], mpq.HashString(f.Name, mpq.HashNameB))
		binary.LittleEndian.PutUint32(e[8:], 0)
		binary.LittleEndian.PutUint32(e[12:], uint32(bi))
	}
	mpq.Encrypt(ht, mpq.HashString("(hash table)", mpq.HashFileKey))
	mpq.Encrypt(bt, mpq.HashString("(block table)", mpq.HashFileKey))
	hashPos := len(arc)
	arc = append(arc, ht...)
	blockPos := len(arc)
	arc = append(arc, bt...)
	hiPos := len(arc)
	arc = append(arc, make([]byte, 2*len(files))...)

	copy(arc, mpq.HeaderMagic)
	binary.LittleEndian.PutUint32(arc[4:], hsize)
	binary.LittleEndian.PutUint32(arc[8:], uint32(len(arc)))
	binary.LittleEndian.PutUint16(arc[12:], 1)
	binary.LittleEndian.PutUint16(arc[14:], shift)
	binary.LittleEndian.PutUint32(arc[16:], uint32(hashPos))
	binary.LittleEndian.PutUint32(arc[20:], uint32(blockPos))
	binary.LittleEndian.PutUint32(arc[24:], uint32(n))
	binary.LittleEndian.PutUint32(arc[28:], uint32(len(files)))
	binary.LittleEndian.PutUint64(arc[32:], uint64(hiPos))
	return append(out, arc...)
}
