// Tests for the MPQ reader: hand-built archives covering each header version
// and storage mode, the real replays compared with icza/mpq, malformed input
// and the fuzz target.

package mpq

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"github.com/replayarchive/replay/internal/memtest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	icza "github.com/icza/mpq"
	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/formatstest"
)

// testFile is one file of a test archive.
type testFile struct {
	name    string
	content []byte
	flags   uint32 // FlagSingleUnit, FlagCompress, FlagEncrypted, FlagFixKey
}

// buildOpts shape a test archive.
type buildOpts struct {
	version  uint16 // format version 0..3
	userData []byte // nil: no MPQ\x1b header
	shift    uint16 // sector size shift
	hashSize int    // hash table entries (power of two)
	hiBlock  bool   // write a high block table (version >= 1)
}

func zlibBytes(t testing.TB, b []byte) []byte {
	var buf bytes.Buffer
	zw := zlib.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

// build writes an MPQ archive the way StormLib lays it out: header, file
// data, hash table, block table (and the high block table).
func build(t testing.TB, o buildOpts, files []testFile) []byte {
	t.Helper()
	var out []byte
	if o.userData != nil {
		out = append(out, UserDataMagic...)
		out = binary.LittleEndian.AppendUint32(out, uint32(len(o.userData)+16))
		hdrOff := uint32(16 + len(o.userData))
		hdrOff = (hdrOff + 511) &^ 511
		out = binary.LittleEndian.AppendUint32(out, hdrOff)
		out = binary.LittleEndian.AppendUint32(out, uint32(len(o.userData)))
		out = append(out, o.userData...)
		out = append(out, make([]byte, int(hdrOff)-len(out))...)
	}
	base := len(out)
	hsize := [...]int{32, 44, 68, 208}[o.version]
	arc := make([]byte, hsize)
	sector := 512 << o.shift
	type blk struct{ off, csize, fsize, flags uint32 }
	var blocks []blk
	for _, f := range files {
		off := uint32(len(arc))
		var key uint32
		if f.flags&FlagEncrypted != 0 {
			// The key hashes the name without its directory.
			key = HashString(f.name[strings.LastIndexByte(f.name, '\\')+1:], HashFileKey)
			if f.flags&FlagFixKey != 0 {
				key = (key + off) ^ uint32(len(f.content))
			}
		}
		var data []byte
		switch {
		case f.flags&FlagSingleUnit != 0:
			data = append([]byte(nil), f.content...)
			if f.flags&FlagCompress != 0 {
				if z := zlibBytes(t, f.content); len(z)+1 < len(f.content) {
					data = append([]byte{compZlib}, z...)
				}
			}
			if key != 0 {
				Encrypt(data, key)
			}
		case f.flags&FlagCompress != 0:
			n := (len(f.content) + sector - 1) / sector
			table := make([]byte, 4*(n+1))
			var secs []byte
			for i := 0; i < n; i++ {
				binary.LittleEndian.PutUint32(table[4*i:], uint32(len(table)+len(secs)))
				raw := f.content[i*sector : min((i+1)*sector, len(f.content))]
				s := append([]byte(nil), raw...)
				if z := zlibBytes(t, raw); len(z)+1 < len(raw) {
					s = append([]byte{compZlib}, z...)
				}
				if key != 0 {
					Encrypt(s, key+uint32(i))
				}
				secs = append(secs, s...)
			}
			binary.LittleEndian.PutUint32(table[4*n:], uint32(len(table)+len(secs)))
			if key != 0 {
				Encrypt(table, key-1)
			}
			data = append(table, secs...)
		default:
			data = append([]byte(nil), f.content...)
			for i := 0; key != 0 && i*sector < len(data); i++ {
				Encrypt(data[i*sector:min((i+1)*sector, len(data))], key+uint32(i))
			}
		}
		arc = append(arc, data...)
		blocks = append(blocks, blk{off, uint32(len(data)), uint32(len(f.content)), f.flags | FlagExists})
	}
	// Hash table with linear probing.
	ht := make([]byte, 16*o.hashSize)
	for i := 0; i < o.hashSize; i++ {
		binary.LittleEndian.PutUint32(ht[16*i:], 0xFFFFFFFF)
		binary.LittleEndian.PutUint32(ht[16*i+4:], 0xFFFFFFFF)
		binary.LittleEndian.PutUint32(ht[16*i+8:], 0xFFFFFFFF)
		binary.LittleEndian.PutUint32(ht[16*i+12:], hashEmpty)
	}
	for bi, f := range files {
		i := int(HashString(f.name, HashTableOffset)) & (o.hashSize - 1)
		for binary.LittleEndian.Uint32(ht[16*i+12:]) != hashEmpty {
			i = (i + 1) % o.hashSize
		}
		e := ht[16*i:]
		binary.LittleEndian.PutUint32(e, HashString(f.name, HashNameA))
		binary.LittleEndian.PutUint32(e[4:], HashString(f.name, HashNameB))
		binary.LittleEndian.PutUint32(e[8:], 0)
		binary.LittleEndian.PutUint32(e[12:], uint32(bi))
	}
	Encrypt(ht, HashString("(hash table)", HashFileKey))
	hashPos := len(arc)
	arc = append(arc, ht...)
	bt := make([]byte, 16*len(blocks))
	for i, b := range blocks {
		binary.LittleEndian.PutUint32(bt[16*i:], b.off)
		binary.LittleEndian.PutUint32(bt[16*i+4:], b.csize)
		binary.LittleEndian.PutUint32(bt[16*i+8:], b.fsize)
		binary.LittleEndian.PutUint32(bt[16*i+12:], b.flags)
	}
	Encrypt(bt, HashString("(block table)", HashFileKey))
	blockPos := len(arc)
	arc = append(arc, bt...)
	hiPos := 0
	if o.hiBlock {
		hiPos = len(arc)
		arc = append(arc, make([]byte, 2*len(blocks))...)
	}

	copy(arc, HeaderMagic)
	binary.LittleEndian.PutUint32(arc[4:], uint32(hsize))
	binary.LittleEndian.PutUint32(arc[8:], uint32(len(arc)))
	binary.LittleEndian.PutUint16(arc[12:], o.version)
	binary.LittleEndian.PutUint16(arc[14:], o.shift)
	binary.LittleEndian.PutUint32(arc[16:], uint32(hashPos))
	binary.LittleEndian.PutUint32(arc[20:], uint32(blockPos))
	binary.LittleEndian.PutUint32(arc[24:], uint32(o.hashSize))
	binary.LittleEndian.PutUint32(arc[28:], uint32(len(blocks)))
	if o.version >= 1 {
		binary.LittleEndian.PutUint64(arc[32:], uint64(hiPos))
	}
	if o.version >= 2 {
		binary.LittleEndian.PutUint64(arc[44:], uint64(len(arc)))
	}
	if o.version >= 3 {
		binary.LittleEndian.PutUint64(arc[68:], uint64(len(ht)))
		binary.LittleEndian.PutUint64(arc[76:], uint64(len(bt)))
	}
	_ = base
	return append(out, arc...)
}

// content returns n bytes of compressible test data.
func content(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i/7) ^ seed
	}
	return b
}

func TestHandBuilt(t *testing.T) {
	files := []testFile{
		{"replay.details", content(1000, 1), FlagSingleUnit | FlagCompress},
		{"replay.initData", content(9000, 2), FlagCompress},                                           // sectored zlib, 3 sectors of 4096
		{"(listfile)", []byte("replay.details\r\nreplay.initData\r\n"), FlagCompress | FlagEncrypted}, // encrypted sectored
		{"dir\\fixed.bin", content(5000, 3), FlagCompress | FlagEncrypted | FlagFixKey},
		{"single.enc", content(777, 4), FlagSingleUnit | FlagCompress | FlagEncrypted | FlagFixKey},
		{"stored.bin", content(6000, 5), 0},
		{"stored.enc", content(4099, 6), FlagEncrypted},
		{"random.bin", []byte{1, 2, 3, 200, 100, 7}, FlagSingleUnit | FlagCompress}, // incompressible: stored raw
		{"empty", nil, FlagSingleUnit | FlagCompress},
	}
	for _, tc := range []struct {
		name string
		o    buildOpts
	}{
		{"v0-bare", buildOpts{version: 0, shift: 3, hashSize: 16}},
		{"v1-userdata", buildOpts{version: 1, shift: 3, hashSize: 16, userData: []byte("hello user data")}},
		{"v1-hiblock", buildOpts{version: 1, shift: 3, hashSize: 32, hiBlock: true}},
		{"v2", buildOpts{version: 2, shift: 3, hashSize: 16}},
		{"v3-userdata", buildOpts{version: 3, shift: 3, hashSize: 16, userData: bytes.Repeat([]byte{9}, 100)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := build(t, tc.o, files)
			a, err := Open(data)
			if err != nil {
				t.Fatal(err)
			}
			if got := a.Header().FormatVersion; got != tc.o.version {
				t.Errorf("format version %d, want %d", got, tc.o.version)
			}
			if !bytes.Equal(a.UserData(), tc.o.userData) {
				t.Errorf("user data %q, want %q", a.UserData(), tc.o.userData)
			}
			if a.SectorSize() != 4096 {
				t.Errorf("sector size %d", a.SectorSize())
			}
			for _, f := range files {
				got, err := a.ReadFile(f.name)
				if err != nil {
					t.Errorf("%s: %v", f.name, err)
					continue
				}
				if !bytes.Equal(got, f.content) && !(len(got) == 0 && len(f.content) == 0) {
					t.Errorf("%s: got %d bytes, want %d (content differs)", f.name, len(got), len(f.content))
				}
			}
			// Lookup is case-insensitive and treats / as \.
			if _, err := a.ReadFile("DIR/FIXED.BIN"); err != nil {
				t.Errorf("case/separator-insensitive lookup: %v", err)
			}
			if _, err := a.ReadFile("missing.file"); !errors.Is(err, ErrNotExist) {
				t.Errorf("missing file: err %v, want ErrNotExist", err)
			}
		})
	}
}

// TestHashProbing fills a small hash table so names collide and must be
// found by linear probing past occupied slots.
func TestHashProbing(t *testing.T) {
	var files []testFile
	for i := 0; i < 7; i++ {
		files = append(files, testFile{name: "file" + string(rune('a'+i)), content: content(100+i, byte(i)), flags: FlagSingleUnit | FlagCompress})
	}
	a, err := Open(build(t, buildOpts{version: 1, shift: 3, hashSize: 8}, files))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		got, err := a.ReadFile(f.name)
		if err != nil || !bytes.Equal(got, f.content) {
			t.Errorf("%s: %v (got %d bytes)", f.name, err, len(got))
		}
	}
}

// asFormatsError asserts err is a *formats.Error mentioning want.
func asFormatsError(t *testing.T, err error, want string) *formats.Error {
	t.Helper()
	var fe *formats.Error
	if !errors.As(err, &fe) {
		t.Fatalf("error %v (%T) is not a *formats.Error", err, err)
	}
	if !strings.Contains(fe.Error(), want) {
		t.Errorf("error %q does not mention %q", fe.Error(), want)
	}
	return fe
}

func TestMalformed(t *testing.T) {
	good := build(t, buildOpts{version: 1, shift: 3, hashSize: 16, userData: []byte("0123456789")},
		[]testFile{{"a", content(3000, 1), FlagSingleUnit | FlagCompress}, {"b", content(9000, 2), FlagCompress}})
	base := int(binary.LittleEndian.Uint32(good[8:]))
	mod := func(f func(b []byte)) []byte {
		b := bytes.Clone(good)
		f(b)
		return b
	}
	for _, tc := range []struct {
		name   string
		data   []byte
		want   string
		offset int64
	}{
		{"empty", nil, "expected MPQ magic", 0},
		{"bad magic", []byte("PK\x03\x04 not an mpq"), "expected MPQ magic", 0},
		{"short user data header", []byte("MPQ\x1b\x00\x02"), "16-byte MPQ user-data header", 6},
		{"user data past end", mod(func(b []byte) {
			binary.LittleEndian.PutUint32(b[12:], 1<<20)
			binary.LittleEndian.PutUint32(b[4:], 1<<21)
		}), "runs past the end", 12},
		{"header offset past end", mod(func(b []byte) { binary.LittleEndian.PutUint32(b[8:], 1<<30) }), "archive header offset", 8},
		{"archive magic", mod(func(b []byte) { b[base+3] = 'x' }), "expected archive header magic", int64(base)},
		{"version", mod(func(b []byte) { b[base+12] = 9 }), "format version 0 to 3", int64(base + 12)},
		{"header size", mod(func(b []byte) { binary.LittleEndian.PutUint32(b[base+4:], 20) }), "header size 20", int64(base + 4)},
		{"sector shift", mod(func(b []byte) { binary.LittleEndian.PutUint16(b[base+14:], 40) }), "sector size shift", int64(base + 14)},
		{"hash table past end", mod(func(b []byte) { binary.LittleEndian.PutUint32(b[base+24:], 1<<28) }), "hash table", int64(base + 16)},
		{"block table past end", mod(func(b []byte) { binary.LittleEndian.PutUint32(b[base+20:], 1<<31) }), "block table", int64(base + 20)},
		{"truncated", good[:len(good)-10], "block table", int64(base + 20)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Open(tc.data)
			fe := asFormatsError(t, err, tc.want)
			if fe.Offset != tc.offset {
				t.Errorf("offset %d, want %d (%v)", fe.Offset, tc.offset, err)
			}
		})
	}
}

// rewriteBlock re-encrypts block table entry i of an archive after f edits it.
func rewriteBlock(t *testing.T, data []byte, i int, f func(e []byte)) []byte {
	t.Helper()
	a, err := Open(data)
	if err != nil {
		t.Fatal(err)
	}
	h := a.Header()
	off := h.Offset + h.BlockTableOffset
	n := int64(h.BlockTableEntries) * 16
	bt := bytes.Clone(data[off : off+n])
	key := HashString("(block table)", HashFileKey)
	decrypt(bt, key)
	f(bt[16*i:])
	Encrypt(bt, key)
	out := bytes.Clone(data)
	copy(out[off:], bt)
	return out
}

func TestMalformedFiles(t *testing.T) {
	good := build(t, buildOpts{version: 1, shift: 3, hashSize: 16},
		[]testFile{{"a", content(3000, 1), FlagSingleUnit | FlagCompress}, {"b", content(9000, 2), FlagCompress}})
	for _, tc := range []struct {
		name  string
		file  string
		block int
		edit  func(e []byte)
		want  string
	}{
		{"offset past end", "a", 0, func(e []byte) { binary.LittleEndian.PutUint32(e, 1<<30) }, "runs past the end"},
		{"size over limit", "a", 0, func(e []byte) { binary.LittleEndian.PutUint32(e[8:], 1<<31) }, "exceeds the"},
		{"implode", "a", 0, func(e []byte) { e[13] |= 0x01 }, "implode"},
		{"declared size larger than stream", "a", 0, func(e []byte) { binary.LittleEndian.PutUint32(e[8:], 100<<20) }, "stream ended after 3000"},
		{"declared size smaller than stream", "a", 0, func(e []byte) { binary.LittleEndian.PutUint32(e[8:], 2000) }, "more than the declared"},
		{"sector table too big", "b", 1, func(e []byte) { binary.LittleEndian.PutUint32(e[8:], 100<<20) }, "sector offset table"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := rewriteBlock(t, good, tc.block, tc.edit)
			a, err := Open(data)
			if err != nil {
				t.Fatal(err)
			}
			_, err = a.ReadFile(tc.file)
			asFormatsError(t, err, tc.want)
		})
	}
	// A bad compression mask.
	a, _ := Open(good)
	f, _ := a.Stat("a")
	bad := bytes.Clone(good)
	bad[f.DataOffset] = 0x12 // LZMA
	a, _ = Open(bad)
	_, err := a.ReadFile("a")
	asFormatsError(t, err, "compression mask 0x12 is not supported")
}

// TestForgedSizeAllocation checks that a file claiming a huge size costs
// memory in proportion to the data, not to the claim.
func TestForgedSizeAllocation(t *testing.T) {
	good := build(t, buildOpts{version: 1, shift: 3, hashSize: 16}, []testFile{{"a", content(3000, 1), FlagSingleUnit | FlagCompress}})
	data := rewriteBlock(t, good, 0, func(e []byte) { binary.LittleEndian.PutUint32(e[8:], 120<<20) })
	a, err := Open(data)
	if err != nil {
		t.Fatal(err)
	}
	d := memtest.Allocated(func() { _, err = a.ReadFile("a") })
	if err == nil {
		t.Fatal("forged size accepted")
	}
	if d > 4<<20 {
		t.Errorf("reading a file with a forged 120 MiB size allocated %d bytes", d)
	}
}

func corpusFiles(t testing.TB) []string {
	t.Helper()
	dir := formatstest.CorpusDir(t, "sc2replay")
	files, err := filepath.Glob(filepath.Join(dir, "*.SC2Replay"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no replays in %s: %v", dir, err)
	}
	return files
}

// TestCorpusAgainstIcza reads every file named in each replay's (listfile)
// with our reader and with icza/mpq and compares the bytes.
func TestCorpusAgainstIcza(t *testing.T) {
	for _, path := range corpusFiles(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			a, err := Open(data)
			if err != nil {
				t.Fatal(err)
			}
			ref, err := icza.New(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			defer ref.Close()
			if !bytes.Equal(a.UserData(), ref.UserData()[4:4+len(a.UserData())]) {
				t.Errorf("user data differs from icza/mpq")
			}
			list, err := a.ReadFile("(listfile)")
			if err != nil {
				t.Fatalf("(listfile): %v", err)
			}
			names := strings.FieldsFunc(string(list), func(r rune) bool { return r == '\r' || r == '\n' || r == ';' })
			if len(names) < 8 {
				t.Fatalf("listfile names %q", names)
			}
			for _, name := range names {
				got, err := a.ReadFile(name)
				if err != nil {
					t.Errorf("%s: %v", name, err)
					continue
				}
				want, err := ref.FileByName(name)
				if err != nil {
					// icza/mpq cannot decrypt; only the tampered file's
					// encrypted (listfile) may fail there.
					if f, _ := a.Stat(name); f.Flags&FlagEncrypted == 0 {
						t.Errorf("icza/mpq %s: %v", name, err)
					}
					continue
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%s: %d bytes differ from icza/mpq's %d", name, len(got), len(want))
				}
			}
		})
	}
}

// replayNames are the inner files of a replay, for the fuzz target.
var replayNames = []string{"(listfile)", "(attributes)", "replay.details", "replay.initData", "replay.message.events",
	"replay.game.events", "replay.tracker.events", "replay.attributes.events"}

func FuzzMPQ(f *testing.F) {
	files := []testFile{
		{"replay.details", content(600, 1), FlagSingleUnit | FlagCompress},
		{"replay.initData", content(5000, 2), FlagCompress | FlagEncrypted | FlagFixKey},
		{"(listfile)", []byte("replay.details\r\nreplay.initData\r\n"), FlagCompress | FlagEncrypted},
		{"replay.message.events", content(300, 3), 0},
	}
	f.Add(build(f, buildOpts{version: 1, shift: 0, hashSize: 8, userData: []byte("ud")}, files))
	f.Add(build(f, buildOpts{version: 3, shift: 0, hashSize: 4}, files))
	f.Add(build(f, buildOpts{version: 0, shift: 0, hashSize: 4, hiBlock: false}, files[:1]))
	// The small real replays, read in place when the corpus is present.
	dir := filepath.Join(formatstest.ModuleRoot(f), "..", "shared", "corpus", "sc2replay")
	if paths, _ := filepath.Glob(filepath.Join(dir, "*.SC2Replay")); len(paths) > 0 {
		for _, p := range paths {
			if b, err := os.ReadFile(p); err == nil && len(b) < 64<<10 {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := Open(data)
		if err != nil {
			var fe *formats.Error
			if !errors.As(err, &fe) {
				t.Fatalf("Open error is not a *formats.Error: %v", err)
			}
			return
		}
		a.MaxFileSize = 1 << 20
		for _, name := range replayNames {
			b, err := a.ReadFile(name)
			if err == nil && int64(len(b)) > a.MaxFileSize {
				t.Fatalf("%s: %d bytes over the limit", name, len(b))
			}
		}
	})
}
