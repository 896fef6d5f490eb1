package butter

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/replayarchive/replay/formats/formatstest"
)

// echoColumnSeeds are made-up chunks: real-looking lines and the inputs
// the tokenizer must give back as they were.
var echoColumnSeeds = []struct {
	name  string
	chunk string
	raw   bool // stored in the raw stream
}{
	{"empty", "", false},
	{"two lines", "2021/11/20 04:20:00.000\t{\"disc\":{\"position\":[0.0,-1.5,33.90625]},\"ping\":44}\n" +
		"2021/11/20 04:20:00.033\t{\"disc\":{\"position\":[0.1,-1.4960938,33.875]},\"ping\":45}\n", false},
	{"template changes", "1\t{\"a\":\"none\",\"b\":[1,2]}\n2\t{\"a\":\"disc\",\"b\":[1,2,3]}\n3\t{\"a\":\"disc\",\"b\":[1,2,3]}\n4\t{}\n", false},
	{"no trailing newline", "2021/11/20 04:20:00.000\t{\"x\":0.5}\n2021/11/20 04:20:00.033\t{\"x\":0.75}", false},
	{"CRLF", "a\t{\"x\":1.25}\r\nb\t{\"x\":1.5}\r\n", false},
	{"odd numbers", "-0 -0.0 0.0 00012 007.50 1e-7 1E+30 -.5 5. 1.2.3 --1 -1-2 0.1000000000000000055511 " +
		"123456789012345678 1234567890123456789 12345678901234567.8 0.000000000000000001 3.4028235e38 " +
		"340282350000000000000000000000000000000.0 1.0000001 0.30000001 16777217.0 -2147483648\n", false},
	{"floats that are not float32", "0.1234567890123 1.00000000001 2.5000 0.300000000000000004 99999999999999999.9\n", false},
	{"only numbers", "1\n2\n3\n-4\n", false},
	{"blank lines", "\n\n\n1\n\n", false},
	{"huge digit run", strings.Repeat("9", 100) + "\n" + strings.Repeat("0", 40) + ".5\n", false},
	{"non-UTF-8", "\xff\xfe0.5\x80\t{\"\xc3\x28\":1}\n", false},
	{"marker byte", "a\x00b 1.5\n", true},
	{"fields come and go", "[1,2,3]\n[1]\n[1,2,3,4,5]\n[]\n[9,8,7,6,5,4]\n", false},
	{"linear motion", "0.5 10\n0.625 20\n0.75 30\n0.875 40\n1.0 50\n", false},
}

// roundTrip splits and joins chunk and fails the test unless it comes
// back byte for byte; it returns the streams.
func roundTrip(t testing.TB, c *EchoReplayCodec, chunk []byte) [][]byte {
	t.Helper()
	cols := c.SplitColumns(chunk, nil)
	if len(cols) != ecCount {
		t.Fatalf("%d streams, want %d", len(cols), ecCount)
	}
	prefix := []byte("keep")
	got, err := c.JoinColumns(bytes.Clone(prefix), cols)
	if err != nil {
		t.Fatalf("join: %v (chunk %q)", err, truncate(chunk, 200))
	}
	if !bytes.HasPrefix(got, prefix) || !bytes.Equal(got[len(prefix):], chunk) {
		t.Fatalf("round trip differs at byte %d:\n got %q\nwant %q", firstDiffAt(got[len(prefix):], chunk), truncate(got[len(prefix):], 300), truncate(chunk, 300))
	}
	// a second split reusing the streams gives the same streams
	again := c.SplitColumns(chunk, cols)
	for i := range again {
		if !bytes.Equal(again[i], c.SplitColumns(chunk, nil)[i]) {
			t.Fatalf("stream %d differs when cols are reused", i)
		}
	}
	return cols
}

func firstDiffAt(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

func TestEchoColumnsRoundTrip(t *testing.T) {
	c := NewEchoReplay()
	for _, tc := range echoColumnSeeds {
		t.Run(tc.name, func(t *testing.T) {
			cols := roundTrip(t, c, []byte(tc.chunk))
			if raw := len(cols[ecRaw]) > 0; raw != tc.raw {
				t.Errorf("stored raw: %v, want %v", raw, tc.raw)
			}
		})
	}
}

// TestEchoColumnsV1 reads chunks in the layout before the float streams
// (ecCountV1 streams; the first line's floats in ecVal, predicted by 0),
// made here from one-line chunks' streams, where every number is on the
// first line.
func TestEchoColumnsV1(t *testing.T) {
	c := NewEchoReplay()
	for _, chunk := range []string{
		"2021/11/20 04:20:00.033\t{\"p\":[1.5,-0.25,7,0.5,-0.0],\"q\":[0.93994141,0.5]}\n",
		"a 1 2 3\n",
		"no numbers\n",
	} {
		cols := c.SplitColumns([]byte(chunk), nil)
		sr := echoReader{b: cols[ecShape]}
		vr := echoReader{b: cols[ecVal]}
		mr := echoReader{b: cols[ecMode]}
		var val []byte
		nf := 0
		for sr.off < len(sr.b) {
			shape, mode := sr.uvarint(), mr.uvarint()
			if mode < predSame && shape < decimalShape {
				b := uint32(cols[ecFloat0][nf])<<24 | uint32(cols[ecFloat1][nf])<<16 | uint32(cols[ecFloat2][nf])<<8 | uint32(cols[ecFloat3][nf])
				nf++
				val = binary.AppendUvarint(val, zigzag(floatOrd(b)))
				continue
			}
			val = binary.AppendUvarint(val, vr.uvarint())
		}
		if sr.err != nil || vr.err != nil || mr.err != nil {
			t.Fatal(sr.err, vr.err, mr.err)
		}
		if strings.Contains(chunk, ".") != (nf > 0) {
			t.Errorf("%q: %d floats in the float streams", chunk, nf)
		}
		old := slices.Clone(cols[:ecCountV1])
		old[ecVal] = val
		got, err := c.JoinColumns(nil, old)
		if err != nil || string(got) != chunk {
			t.Errorf("%q in the old layout: got %q, %v", chunk, got, err)
		}
	}
}

// TestEchoColumnsShapes checks how numbers are taken: as float32, as
// decimal digits, or left in the template.
func TestEchoColumnsShapes(t *testing.T) {
	for _, tc := range []struct {
		text   string
		float  bool // one float number
		tokens int  // numbers taken
	}{
		{"0.93994141", true, 1},
		{"-0.047000002", true, 1},
		{"33.90625", true, 1},
		{"-0.0", true, 1},
		{"0.1234567890123", false, 1},       // more digits than the float32 has
		{"2.5000", true, 1},                 // trailing zeros: 2.5 to four places
		{"0.02253150939941406", true, 1},    // printed with a fused multiply-add, it ended in 07 (arm64, amd64 v3)
		{"00012", false, 1},                 // leading zeros: digits
		{"-0", false, 1},                    //
		{"1e-7", false, 2},                  // 1 and -7
		{strings.Repeat("1", 19), false, 0}, // too long: template
		{"2021/11/20 04:20:00.033", false, 6},
	} {
		tpl, nums := tokenize([]byte(tc.text), nil, nil)
		if len(nums) != tc.tokens {
			t.Errorf("%q: %d numbers, want %d (template %q)", tc.text, len(nums), tc.tokens, tpl)
			continue
		}
		if tc.tokens == 1 && nums[0].float() != tc.float {
			t.Errorf("%q: float %v, want %v (shape %d)", tc.text, nums[0].float(), tc.float, nums[0].shape)
		}
		out := []byte{}
		ni := 0
		for _, b := range tpl {
			if b != marker {
				out = append(out, b)
				continue
			}
			var ok bool
			if out, ok = appendNum(out, nums[ni]); !ok {
				t.Fatalf("%q: number %d does not print", tc.text, ni)
			}
			ni++
		}
		if string(out) != tc.text {
			t.Errorf("%q printed back as %q", tc.text, out)
		}
	}
}

// TestEchoColumnsCorrupt feeds JoinColumns streams SplitColumns cannot
// have made: each must be an error, never a panic or a huge allocation.
func TestEchoColumnsCorrupt(t *testing.T) {
	c := NewEchoReplay()
	good := c.SplitColumns([]byte("a 1.5 2\nb 1.75 3\nb 1.75 4\n"), nil)
	if len(good[ecFloat0]) != 1 {
		t.Fatalf("float stream holds %d bytes, want 1", len(good[ecFloat0]))
	}
	mod := func(f func(cols [][]byte) [][]byte) [][]byte {
		cols := make([][]byte, len(good))
		for i := range good {
			cols[i] = bytes.Clone(good[i])
		}
		return f(cols)
	}
	for _, tc := range []struct {
		name string
		cols [][]byte
	}{
		{"too few streams", good[:ecCount-1]},
		{"raw with other streams", mod(func(c [][]byte) [][]byte { c[ecRaw] = []byte("x"); return c })},
		{"first line repeats", mod(func(c [][]byte) [][]byte { c[ecTpl] = append([]byte{0}, c[ecTpl]...); return c })},
		{"prefix past the template", mod(func(c [][]byte) [][]byte { c[ecTpl][0] = 9; return c })},
		{"truncated varint", mod(func(c [][]byte) [][]byte { c[ecTpl] = append(c[ecTpl], 0x80); return c })},
		{"text left over", mod(func(c [][]byte) [][]byte { c[ecText] = append(c[ecText], 'x'); return c })},
		{"missing predictor", mod(func(c [][]byte) [][]byte { c[ecMode] = c[ecMode][:1]; return c })},
		{"bad predictor", mod(func(c [][]byte) [][]byte { c[ecMode][0] = 7; return c })},
		{"shape out of range", mod(func(c [][]byte) [][]byte { c[ecShape] = append([]byte{0xff, 0x7f}, c[ecShape][1:]...); return c })},
		{"values left over", mod(func(c [][]byte) [][]byte { c[ecVal] = append(c[ecVal], 1); return c })},
		{"float stream short", mod(func(c [][]byte) [][]byte { c[ecFloat2] = nil; return c })},
		{"float left over", mod(func(c [][]byte) [][]byte { c[ecFloat3] = append(c[ecFloat3], 1); return c })},
		{"values missing", mod(func(c [][]byte) [][]byte { c[ecVal] = c[ecVal][:1]; return c })},
		{"value out of range", mod(func(c [][]byte) [][]byte {
			c[ecVal] = append([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}, c[ecVal][1:]...)
			return c
		})},
		// one template of 1000 bytes repeated by 100,000 one-byte lines:
		// 100 MB from 101 KB of streams
		{"expansion bomb", [][]byte{
			append([]byte{1, 0, 0xe8, 0x07}, bytes.Repeat([]byte{0}, 100000)...),
			bytes.Repeat([]byte("x"), 1000), nil, nil, nil, nil,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := c.JoinColumns(nil, tc.cols)
			if err == nil {
				t.Fatalf("no error, got %d bytes", len(out))
			}
			if !errors.Is(err, errEchoColumns) {
				t.Errorf("error %v does not wrap errEchoColumns", err)
			}
		})
	}
}

func FuzzEchoColumns(f *testing.F) {
	for _, tc := range echoColumnSeeds {
		f.Add([]byte(tc.chunk))
	}
	c := NewEchoReplay()
	f.Fuzz(func(t *testing.T, b []byte) {
		cols := roundTrip(t, c, b)
		// streams cut or swapped must fail or give bounded output
		total := 0
		for _, s := range cols {
			total += len(s)
		}
		for i := range cols {
			if len(cols[i]) == 0 {
				continue
			}
			cut := make([][]byte, len(cols))
			copy(cut, cols)
			cut[i] = cut[i][:len(cut[i])/2]
			if out, err := c.JoinColumns(nil, cut); err == nil && len(out) > joinLimit(total) {
				t.Fatalf("stream %d cut: %d bytes out of %d", i, len(out), total)
			}
		}
	})
}

// TestEchoColumnsCorpus measures the transform on the corpus's
// .echoreplay files, split as the codec splits them: the streams,
// each compressed at the archive's level, against each chunk compressed
// whole. Every chunk must round-trip.
func TestEchoColumnsCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 84 MB of corpus text")
	}
	files, err := filepath.Glob(filepath.Join(corpusDir(t), "reference", "*", "*.echoreplay.zst"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no .echoreplay files in the corpus (%v)", err)
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBetterCompression), zstd.WithEncoderCRC(false),
		zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(1<<20), zstd.WithLowerEncoderMem(true))
	if err != nil {
		t.Fatal(err)
	}
	c := NewEchoReplay()
	if v := os.Getenv("ECHO_CHUNK"); v != "" {
		c.ChunkSize, _ = strconv.Atoi(v)
	}
	var whole, cols int
	var per [ecCount]int
	for _, path := range files {
		rec := formatstest.Split(t, c, readZst(t, path))
		var w, s int
		var streams [][]byte
		for _, ch := range rec.ChunkBytes {
			w += len(enc.EncodeAll(ch, nil))
			streams = c.SplitColumns(ch, streams)
			if len(streams[ecRaw]) > 0 {
				t.Errorf("%s: a chunk is stored raw", filepath.Base(path))
			}
			for i, st := range streams {
				z := min(len(st), len(enc.EncodeAll(st, nil)))
				s += z
				per[i] += z
			}
			got, err := c.JoinColumns(nil, streams)
			if err != nil || !bytes.Equal(got, ch) {
				t.Fatalf("%s: chunk does not round-trip (%v)", filepath.Base(path), err)
			}
		}
		t.Logf("%s: %d chunks, whole %d B, columns %d B (%.3f×)", filepath.Base(path), len(rec.ChunkBytes), w, s, float64(s)/float64(w))
		whole, cols = whole+w, cols+s
	}
	r := float64(cols) / float64(whole)
	t.Logf("all: whole %d B, columns %d B (%.3f×); by stream %v", whole, cols, r, per)
	if r > 0.6 && os.Getenv("ECHO_CHUNK") == "" {
		t.Errorf("columns are %.3f× the whole chunks' bytes, want at most 0.6× at the default chunk size", r)
	}
}

// BenchmarkEchoChunkDecode decodes one chunk of the corpus's largest
// .echoreplay as the archive stores it: one zstd frame of the chunk
// ("whole", the layout before columns) against a zstd frame per stream
// and JoinColumns ("columns"). Run with -cpu 1, the two alternating.
func BenchmarkEchoChunkDecode(b *testing.B) {
	c := NewEchoReplay()
	if v := os.Getenv("ECHO_CHUNK"); v != "" {
		c.ChunkSize, _ = strconv.Atoi(v)
	}
	path := filepath.Join(corpusDir(b), "reference", "decoded", "example_2021-11-20.none.k300.decoded.echoreplay.zst")
	rec := formatstest.Split(b, c, readZst(b, path))
	chunk := rec.ChunkBytes[len(rec.ChunkBytes)/2]
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBetterCompression), zstd.WithEncoderCRC(false),
		zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(1<<20), zstd.WithLowerEncoderMem(true))
	if err != nil {
		b.Fatal(err)
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	if err != nil {
		b.Fatal(err)
	}
	defer dec.Close()
	whole := enc.EncodeAll(chunk, nil)
	var frames [][]byte
	for _, s := range c.SplitColumns(chunk, nil) {
		frames = append(frames, enc.EncodeAll(s, nil))
	}
	_, nums := tokenize(chunk, nil, nil)
	b.Logf("chunk %d B, %d lines, %d numbers: whole %d B stored, columns %d streams",
		len(chunk), bytes.Count(chunk, []byte("\n")), len(nums), len(whole), len(frames))
	b.Run("whole", func(b *testing.B) {
		b.SetBytes(int64(len(chunk)))
		buf := make([]byte, 0, len(chunk))
		for b.Loop() {
			if _, err := dec.DecodeAll(whole, buf[:0]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("join", func(b *testing.B) {
		b.SetBytes(int64(len(chunk)))
		buf := make([]byte, 0, len(chunk))
		streams := c.SplitColumns(chunk, nil)
		for b.Loop() {
			if _, err := c.JoinColumns(buf[:0], streams); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("columns", func(b *testing.B) {
		b.SetBytes(int64(len(chunk)))
		buf := make([]byte, 0, len(chunk))
		streams := make([][]byte, len(frames))
		for b.Loop() {
			for i, f := range frames {
				if streams[i], err = dec.DecodeAll(f, streams[i][:0]); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := c.JoinColumns(buf[:0], streams); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// FuzzEchoJoinColumns gives JoinColumns any streams, as a damaged blob
// on disk would: it must return errEchoColumns or at most joinLimit of
// the streams' bytes, never panic. The first ecCount-1 bytes are the
// lengths of the first streams; the last stream takes the rest.
func FuzzEchoJoinColumns(f *testing.F) {
	c := NewEchoReplay()
	for _, tc := range echoColumnSeeds {
		cols := c.SplitColumns([]byte(tc.chunk), nil)
		var b []byte
		for _, s := range cols[:ecCount-1] {
			b = append(b, byte(min(len(s), 255)))
		}
		for _, s := range cols {
			b = append(b, s...)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < ecCount-1 {
			return
		}
		cols := make([][]byte, ecCount)
		rest := data[ecCount-1:]
		for k := range ecCount - 1 {
			n := min(int(data[k]), len(rest))
			cols[k], rest = rest[:n], rest[n:]
		}
		cols[ecCount-1] = rest
		total := len(data) - (ecCount - 1)
		out, err := c.JoinColumns(nil, cols)
		if err != nil && !errors.Is(err, errEchoColumns) {
			t.Fatalf("error %v does not wrap errEchoColumns", err)
		}
		if err == nil && len(out) > joinLimit(total) {
			t.Fatalf("%d bytes out of %d bytes of streams", len(out), total)
		}
	})
}
