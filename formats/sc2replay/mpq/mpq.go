// Package mpq reads MPQ archives (Blizzard's MoPaQ) held in memory, as used
// by StarCraft II replays: the user-data header ("MPQ\x1b"), archive headers
// of format versions 0 to 3, the encrypted hash and block tables, the high
// block table, single-unit and sectored files, zlib and bzip2 sectors, and
// encrypted files (including the offset-adjusted key).
//
// Files are found by the hash of their name; the archive's (listfile) is not
// needed. Every offset and size read from the archive is checked against the
// bytes at hand before it is used, so allocations stay proportional to the
// input, except for decompressed output, which grows only as data is
// actually produced and is capped three ways before anything is allocated:
// per file (Archive.MaxFileSize), per archive (Archive.Budget, the total all
// reads together may produce, DefaultBudget = 256 MiB) and in sectors per
// file (MaxSectors). Errors are
// *formats.Error values carrying the absolute byte offset in the input.
//
// Not supported (an error says so): PKWARE implode, LZMA, sparse, Huffman and
// ADPCM compression, HET/BET-only archives and compressed hash/block tables.
// Sector CRCs are not verified.
package mpq

import (
	"encoding/binary"
	"fmt"
	"io/fs"
	"sync/atomic"

	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/internal/bounded"
)

// Magic numbers at the start of the user-data header and the archive header.
const (
	UserDataMagic = "MPQ\x1b"
	HeaderMagic   = "MPQ\x1a"
)

// Block flags.
const (
	FlagImplode    = 0x00000100 // PKWARE implode compression
	FlagCompress   = 0x00000200 // per-sector compression with a mask byte
	FlagEncrypted  = 0x00010000 // file data is encrypted
	FlagFixKey     = 0x00020000 // the key is adjusted by block offset and size
	FlagSingleUnit = 0x01000000 // one unit instead of sectors
	FlagSectorCRC  = 0x04000000 // a CRC table follows the sectors
	FlagExists     = 0x80000000 // the block holds a file
)

// Compression masks at the start of a compressed sector.
const (
	compZlib  = 0x02
	compBzip2 = 0x10
)

// DefaultMaxFileSize is the default bound on one file's decompressed size.
// The biggest inner file of a real replay (replay.game.events of a long game)
// is a few tens of MiB.
const DefaultMaxFileSize = 128 << 20

// DefaultBudget is the default total of decompressed bytes one archive
// hands out over all its reads: the per-file memory budget
// (bounded.FileBudget, 256 MiB). Inner files may share compressed data, so
// without it a small archive could expand to many times MaxFileSize.
const DefaultBudget = bounded.FileBudget

// MaxSectors bounds the sectors of one file: 65,536 sectors are 256 MiB at
// the 4 KiB sectors tools write (StarCraft II itself writes single units),
// while a bomb of 262,144 tiny sectors is refused before any is read.
const MaxSectors = 1 << 16

// maxSectorShift bounds the sector size to 512<<15 = 16 MiB.
const maxSectorShift = 15

// errFormat is the Format of the *formats.Error values this package returns.
const errFormat = "mpq"

// ErrNotExist is wrapped by errors for a file the archive does not hold.
var ErrNotExist = fs.ErrNotExist

// Header is the archive header ("MPQ\x1a"), with offsets made 64-bit.
type Header struct {
	Offset            int64  // absolute offset of the header in the input
	HeaderSize        uint32 // size of the header as it declares
	ArchiveSize       int64  // archive size as the header declares (not enforced)
	FormatVersion     uint16 // 0 to 3
	SectorSizeShift   uint16 // sector size is 512 << SectorSizeShift
	HashTableOffset   int64  // relative to Offset
	BlockTableOffset  int64  // relative to Offset
	HashTableEntries  uint32
	BlockTableEntries uint32
	HiBlockTable      int64 // relative to Offset; 0 when absent
}

// Block is one block table entry: where a file's data lies and how it is
// stored.
type Block struct {
	Offset         int64 // relative to the archive header
	CompressedSize uint32
	FileSize       uint32
	Flags          uint32
}

type hashEntry struct {
	a, b     uint32
	locale   uint16
	platform uint16
	block    uint32
}

const (
	hashEmpty   = 0xFFFFFFFF
	hashDeleted = 0xFFFFFFFE
)

// Archive is an open MPQ archive over an in-memory file. It only reads data
// and is safe for concurrent use as long as MaxFileSize and Budget are not
// changed.
type Archive struct {
	// MaxFileSize bounds the decompressed size of one file; ReadFile fails
	// for a larger file. Open sets it to DefaultMaxFileSize.
	MaxFileSize int64
	// Budget bounds the decompressed bytes all reads of this archive
	// produce together; a read whose declared size does not fit in what
	// is left fails before allocating. Open sets it to DefaultBudget.
	Budget int64

	spent      atomic.Int64 // bytes of Budget reserved by reads so far
	data       []byte
	userData   []byte
	header     Header
	sectorSize int64
	hashes     []hashEntry
	blocks     []Block
}

// Open parses the headers and tables of the MPQ archive in data. data must
// stay unchanged while the Archive is used: file reads slice into it.
func Open(data []byte) (*Archive, error) {
	a := &Archive{MaxFileSize: DefaultMaxFileSize, Budget: DefaultBudget, data: data}
	if len(data) < 4 {
		return nil, errorf(0, "expected MPQ magic, got %d bytes", len(data))
	}
	base := int64(0)
	switch string(data[:4]) {
	case UserDataMagic:
		if len(data) < 16 {
			return nil, errorf(int64(len(data)), "expected 16-byte MPQ user-data header, got %d bytes", len(data))
		}
		maxSize := binary.LittleEndian.Uint32(data[4:])
		hdrOff := binary.LittleEndian.Uint32(data[8:])
		udSize := binary.LittleEndian.Uint32(data[12:])
		if udSize > maxSize {
			return nil, errorf(12, "user data size %d exceeds the user-data block size %d", udSize, maxSize)
		}
		if int64(udSize) > int64(len(data))-16 {
			return nil, errorf(12, "user data size %d runs past the end of the file (%d bytes left)", udSize, len(data)-16)
		}
		if hdrOff < 16+udSize {
			return nil, errorf(8, "archive header offset %d overlaps the user data (ends at %d)", hdrOff, 16+udSize)
		}
		if int64(hdrOff) > int64(len(data))-32 {
			return nil, errorf(8, "archive header offset %d leaves no room for a 32-byte header in %d bytes", hdrOff, len(data))
		}
		a.userData = data[16 : 16+udSize]
		base = int64(hdrOff)
		if string(data[base:base+4]) != HeaderMagic {
			return nil, errorf(base, "expected archive header magic MPQ\\x1a, got %q", data[base:base+4])
		}
	case HeaderMagic:
		if len(data) < 32 {
			return nil, errorf(int64(len(data)), "expected 32-byte MPQ header, got %d bytes", len(data))
		}
	default:
		return nil, errorf(0, "expected MPQ magic MPQ\\x1a or MPQ\\x1b, got %q", data[:4])
	}
	if err := a.readHeader(base); err != nil {
		return nil, err
	}
	if err := a.readTables(); err != nil {
		return nil, err
	}
	return a, nil
}

func (a *Archive) readHeader(base int64) error {
	d := a.data[base:]
	h := &a.header
	h.Offset = base
	h.HeaderSize = binary.LittleEndian.Uint32(d[4:])
	h.ArchiveSize = int64(binary.LittleEndian.Uint32(d[8:]))
	h.FormatVersion = binary.LittleEndian.Uint16(d[12:])
	h.SectorSizeShift = binary.LittleEndian.Uint16(d[14:])
	h.HashTableOffset = int64(binary.LittleEndian.Uint32(d[16:]))
	h.BlockTableOffset = int64(binary.LittleEndian.Uint32(d[20:]))
	h.HashTableEntries = binary.LittleEndian.Uint32(d[24:])
	h.BlockTableEntries = binary.LittleEndian.Uint32(d[28:])

	var minSize uint32
	switch h.FormatVersion {
	case 0:
		minSize = 32
	case 1:
		minSize = 44
	case 2:
		minSize = 68
	case 3:
		minSize = 208
	default:
		return errorf(base+12, "expected MPQ format version 0 to 3, got %d", h.FormatVersion)
	}
	if h.HeaderSize < minSize {
		return errorf(base+4, "header size %d is below the %d bytes of format version %d", h.HeaderSize, minSize, h.FormatVersion)
	}
	if int64(minSize) > int64(len(d)) {
		return errorf(base+int64(len(d)), "expected a %d-byte format version %d header, got %d bytes", minSize, h.FormatVersion, len(d))
	}
	if h.SectorSizeShift > maxSectorShift {
		return errorf(base+14, "sector size shift %d exceeds %d", h.SectorSizeShift, maxSectorShift)
	}
	a.sectorSize = 512 << h.SectorSizeShift
	if h.FormatVersion >= 1 {
		h.HiBlockTable = int64(binary.LittleEndian.Uint64(d[32:]))
		h.HashTableOffset |= int64(binary.LittleEndian.Uint16(d[40:])) << 32
		h.BlockTableOffset |= int64(binary.LittleEndian.Uint16(d[42:])) << 32
		if h.HiBlockTable < 0 {
			return errorf(base+32, "high block table offset %d is negative", h.HiBlockTable)
		}
	}
	if h.FormatVersion >= 2 {
		h.ArchiveSize = int64(binary.LittleEndian.Uint64(d[44:]))
	}
	if h.FormatVersion >= 3 {
		// Version 4 headers give the stored table sizes; a smaller size than
		// the entries need means a compressed table, which replays never use.
		hs := binary.LittleEndian.Uint64(d[68:])
		bs := binary.LittleEndian.Uint64(d[76:])
		if hs != 0 && hs != uint64(h.HashTableEntries)*16 {
			return errorf(base+68, "hash table size %d differs from %d entries × 16 (compressed tables are not supported)", hs, h.HashTableEntries)
		}
		if bs != 0 && bs != uint64(h.BlockTableEntries)*16 {
			return errorf(base+76, "block table size %d differs from %d entries × 16 (compressed tables are not supported)", bs, h.BlockTableEntries)
		}
	}
	return nil
}

// span checks that n bytes at archive-relative offset rel lie inside the
// input and returns their absolute offset.
func (a *Archive) span(rel, n int64, field int64, what string) (int64, error) {
	abs := a.header.Offset + rel
	if rel < 0 || n < 0 || abs < 0 || abs > int64(len(a.data)) || n > int64(len(a.data))-abs {
		return 0, errorf(field, "%s at archive offset %d (file offset %d) with %d bytes runs past the end of the %d-byte file", what, rel, abs, n, len(a.data))
	}
	return abs, nil
}

func (a *Archive) readTables() error {
	h := &a.header
	hashOff, err := a.span(h.HashTableOffset, int64(h.HashTableEntries)*16, h.Offset+16, "hash table")
	if err != nil {
		return err
	}
	blockOff, err := a.span(h.BlockTableOffset, int64(h.BlockTableEntries)*16, h.Offset+20, "block table")
	if err != nil {
		return err
	}
	// Both tables were checked to fit in the input, so their copies are no
	// bigger than the file.
	buf := make([]byte, 16*max(h.HashTableEntries, h.BlockTableEntries))

	ht := buf[:16*h.HashTableEntries]
	copy(ht, a.data[hashOff:])
	decrypt(ht, HashString("(hash table)", HashFileKey))
	a.hashes = make([]hashEntry, h.HashTableEntries)
	for i := range a.hashes {
		e := ht[16*i:]
		a.hashes[i] = hashEntry{
			a:        binary.LittleEndian.Uint32(e),
			b:        binary.LittleEndian.Uint32(e[4:]),
			locale:   binary.LittleEndian.Uint16(e[8:]),
			platform: binary.LittleEndian.Uint16(e[10:]),
			block:    binary.LittleEndian.Uint32(e[12:]),
		}
	}

	bt := buf[:16*h.BlockTableEntries]
	copy(bt, a.data[blockOff:])
	decrypt(bt, HashString("(block table)", HashFileKey))
	var hi []byte
	if h.HiBlockTable != 0 {
		off, err := a.span(h.HiBlockTable, int64(h.BlockTableEntries)*2, h.Offset+32, "high block table")
		if err != nil {
			return err
		}
		hi = a.data[off:]
	}
	a.blocks = make([]Block, h.BlockTableEntries)
	for i := range a.blocks {
		e := bt[16*i:]
		b := Block{
			Offset:         int64(binary.LittleEndian.Uint32(e)),
			CompressedSize: binary.LittleEndian.Uint32(e[4:]),
			FileSize:       binary.LittleEndian.Uint32(e[8:]),
			Flags:          binary.LittleEndian.Uint32(e[12:]),
		}
		if hi != nil {
			b.Offset |= int64(binary.LittleEndian.Uint16(hi[2*i:])) << 32
		}
		a.blocks[i] = b
	}
	return nil
}

// Header returns the archive header.
func (a *Archive) Header() Header { return a.header }

// UserData returns the content of the user-data block (for a replay, the
// versioned-encoded replay header), or nil when the file starts with the
// archive header itself. The slice aliases the input.
func (a *Archive) UserData() []byte { return a.userData }

// SectorSize returns the archive's sector size in bytes.
func (a *Archive) SectorSize() int { return int(a.sectorSize) }

// Blocks returns the block table. Do not modify it.
func (a *Archive) Blocks() []Block { return a.blocks }

// File describes one file of the archive found by name.
type File struct {
	Name       string
	BlockIndex int
	Block
	// DataOffset is the absolute offset of the file's data in the input.
	DataOffset int64
}

// Stat finds name through the hash table and returns its block. The error
// wraps ErrNotExist when the archive has no such file.
func (a *Archive) Stat(name string) (File, error) {
	n := uint32(len(a.hashes))
	if n == 0 {
		return File{}, fmt.Errorf("mpq: %s: %w", name, ErrNotExist)
	}
	home := HashString(name, HashTableOffset)
	if n&(n-1) == 0 {
		home &= n - 1
	} else {
		home %= n
	}
	ha, hb := HashString(name, HashNameA), HashString(name, HashNameB)
	for i := uint32(0); i < n; i++ {
		e := &a.hashes[(home+i)%n]
		if e.block == hashEmpty {
			break
		}
		if e.a != ha || e.b != hb || e.block == hashDeleted {
			continue
		}
		if e.block >= uint32(len(a.blocks)) {
			return File{}, errorf(a.header.Offset+a.header.HashTableOffset+int64((home+i)%n)*16+12,
				"hash entry of %s points at block %d, past the %d-entry block table", name, e.block, len(a.blocks))
		}
		b := a.blocks[e.block]
		if b.Flags&FlagExists == 0 {
			break
		}
		return File{Name: name, BlockIndex: int(e.block), Block: b, DataOffset: a.header.Offset + b.Offset}, nil
	}
	return File{}, fmt.Errorf("mpq: %s: %w", name, ErrNotExist)
}

// ReadFile returns the content of the named file, decrypted and
// decompressed. The error wraps ErrNotExist when the archive has no such
// file and is a *formats.Error when the file's data is malformed.
func (a *Archive) ReadFile(name string) ([]byte, error) {
	f, err := a.Stat(name)
	if err != nil {
		return nil, err
	}
	return a.Read(f)
}

// blockField returns the absolute offset of field (0 offset, 4 compressed
// size, 8 file size, 12 flags) of block i in the encrypted block table, for
// error messages.
func (a *Archive) blockField(i int, field int64) int64 {
	return a.header.Offset + a.header.BlockTableOffset + int64(i)*16 + field
}

// Read returns the content of a file found by Stat.
func (a *Archive) Read(f File) ([]byte, error) {
	b := f.Block
	if b.Flags&FlagImplode != 0 {
		return nil, errorf(a.blockField(f.BlockIndex, 12), "%s: PKWARE implode compression (flags %#08x) is not supported", f.Name, b.Flags)
	}
	if int64(b.FileSize) > a.MaxFileSize {
		return nil, errorf(a.blockField(f.BlockIndex, 8), "%s: file size %d exceeds the %d-byte limit", f.Name, b.FileSize, a.MaxFileSize)
	}
	start, err := a.span(b.Offset, int64(b.CompressedSize), a.blockField(f.BlockIndex, 0), f.Name)
	if err != nil {
		return nil, err
	}
	if b.FileSize == 0 {
		return []byte{}, nil
	}
	if b.Flags&(FlagSingleUnit|FlagCompress) == FlagCompress {
		if n := (int64(b.FileSize) + a.sectorSize - 1) / a.sectorSize; n > MaxSectors {
			return nil, errorf(a.blockField(f.BlockIndex, 8), "%s: file size %d in %d-byte sectors needs %d sectors, expected at most %d",
				f.Name, b.FileSize, a.sectorSize, n, MaxSectors)
		}
	}
	if left, ok := a.reserve(int64(b.FileSize)); !ok {
		return nil, errorf(a.blockField(f.BlockIndex, 8), "%s: file size %d exceeds the %d bytes left of the archive's %d-byte decompression budget",
			f.Name, b.FileSize, left, a.Budget)
	}
	raw := a.data[start : start+int64(b.CompressedSize)]
	var key uint32
	if b.Flags&FlagEncrypted != 0 {
		key = fileKey(f.Name, b)
	}
	if b.Flags&FlagSingleUnit != 0 {
		return a.readSingle(f, raw, start, key)
	}
	if b.Flags&FlagCompress == 0 {
		return a.readStored(f, raw, start, key)
	}
	return a.readSectors(f, raw, start, key)
}

// reserve takes n bytes from the budget, or reports what is left.
func (a *Archive) reserve(n int64) (left int64, ok bool) {
	for {
		spent := a.spent.Load()
		left = a.Budget - spent
		if n > left {
			return max(left, 0), false
		}
		if a.spent.CompareAndSwap(spent, spent+n) {
			return left - n, true
		}
	}
}

// fileKey returns the encryption key of a file: the hash of its base name,
// adjusted by block offset and size when FlagFixKey is set.
func fileKey(name string, b Block) uint32 {
	base := name
	for i := len(name) - 1; i >= 0; i-- {
		if name[i] == '\\' || name[i] == '/' {
			base = name[i+1:]
			break
		}
	}
	key := HashString(base, HashFileKey)
	if b.Flags&FlagFixKey != 0 {
		key = (key + uint32(b.Offset)) ^ b.FileSize
	}
	return key
}

func (a *Archive) readSingle(f File, raw []byte, start int64, key uint32) ([]byte, error) {
	size := int(f.FileSize)
	if key != 0 {
		raw = cloneDecrypt(raw, key)
	}
	if f.Flags&FlagCompress != 0 && len(raw) < size {
		out, err := decompress(make([]byte, 0, initialCap(size, len(raw))), raw, size)
		if err != nil {
			return nil, wrapf(start, err, "%s: decompressing %d bytes to %d", f.Name, len(raw), size)
		}
		return out, nil
	}
	if len(raw) < size {
		return nil, errorf(a.blockField(f.BlockIndex, 4), "%s: stored size %d is smaller than the file size %d", f.Name, len(raw), size)
	}
	if key != 0 {
		return raw[:size], nil
	}
	return append([]byte(nil), raw[:size]...), nil
}

func (a *Archive) readStored(f File, raw []byte, start int64, key uint32) ([]byte, error) {
	size := int64(f.FileSize)
	if int64(len(raw)) < size {
		return nil, errorf(a.blockField(f.BlockIndex, 4), "%s: stored size %d is smaller than the file size %d", f.Name, len(raw), size)
	}
	out := append([]byte(nil), raw[:size]...)
	if key != 0 {
		for i, off := 0, int64(0); off < size; i, off = i+1, off+a.sectorSize {
			decrypt(out[off:min(off+a.sectorSize, size)], key+uint32(i))
		}
	}
	return out, nil
}

func (a *Archive) readSectors(f File, raw []byte, start int64, key uint32) ([]byte, error) {
	size := int64(f.FileSize)
	n := (size + a.sectorSize - 1) / a.sectorSize
	// The offset table has n+1 entries (one more with sector CRCs, unused).
	if (n+1)*4 > int64(len(raw)) {
		return nil, errorf(start, "%s: sector offset table of %d entries does not fit in the %d stored bytes", f.Name, n+1, len(raw))
	}
	table := raw[:(n+1)*4]
	if key != 0 {
		table = cloneDecrypt(table, key-1)
	}
	out := make([]byte, 0, initialCap(int(size), len(raw)))
	var scratch []byte
	prev := binary.LittleEndian.Uint32(table)
	for i := int64(0); i < n; i++ {
		next := binary.LittleEndian.Uint32(table[4*(i+1):])
		if prev > next || int64(next) > int64(len(raw)) {
			return nil, errorf(start+4*(i+1), "%s: sector %d spans stored bytes %d to %d, outside 0 to %d", f.Name, i, prev, next, len(raw))
		}
		sec := raw[prev:next]
		want := int(min(a.sectorSize, size-i*a.sectorSize))
		if key != 0 {
			scratch = append(scratch[:0], sec...)
			decrypt(scratch, key+uint32(i))
			sec = scratch
		}
		if len(sec) < want {
			var err error
			if out, err = decompress(out, sec, want); err != nil {
				return nil, wrapf(start+int64(prev), err, "%s: sector %d: decompressing %d bytes to %d", f.Name, i, len(sec), want)
			}
		} else {
			out = append(out, sec[:want]...)
		}
		prev = next
	}
	return out, nil
}

// initialCap guesses the capacity for a decompressed file of size bytes
// stored in stored bytes: the declared size when it is plausible, never more
// than a generous multiple of the stored size, so a forged size cannot make
// us allocate much before the data proves itself.
func initialCap(size, stored int) int {
	return min(size, 16*stored+4096)
}

func cloneDecrypt(b []byte, key uint32) []byte {
	c := append([]byte(nil), b...)
	decrypt(c, key)
	return c
}

// errorf returns a *formats.Error of this package.
func errorf(off int64, msg string, args ...any) error {
	return formats.Errorf(errFormat, off, msg, args...)
}

// wrapf returns a *formats.Error wrapping err.
func wrapf(off int64, err error, msg string, args ...any) error {
	return &formats.Error{Format: errFormat, Offset: off, What: fmt.Sprintf(msg, args...), Err: err}
}
