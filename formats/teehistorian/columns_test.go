package teehistorian

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

// thRecords builds a teehistorian record stream from varints and raw
// bytes: ints are written as canonical varints, []byte as they are.
func thRecords(parts ...any) []byte {
	var b []byte
	for _, p := range parts {
		switch v := p.(type) {
		case int:
			b = AppendVarint(b, int32(v))
		case []byte:
			b = append(b, v...)
		case string:
			b = append(append(b, v...), 0)
		}
	}
	return b
}

// TestColumnsRoundTrip splits and joins every record type and bytes the
// syntax does not explain (a generated game: TestGeneratedColumns).
func TestColumnsRoundTrip(t *testing.T) {
	uuid16 := bytes.Repeat([]byte{0xab}, 16)
	rng := rand.New(rand.NewPCG(3, 4))
	random := make([]byte, 4096)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	every := thRecords(
		wirePlayerNew, 3, 100, -200, // PLAYER_NEW
		3, 5, -7, // PLAYER_DIFF
		wireInputNew, 3, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
		wireInputDiff, 3, 0, 0, 1, 0, 0, 0, 0, 0, 0, -1,
		wireTickSkip, 4,
		wireMessage, 3, 4, []byte{1, 2, 0, 3},
		wireJoin, 3,
		wireDrop, 3, "timeout",
		wireCommand, 3, 1, "say", 2, "hello", "world",
		wireEx, uuid16, 2, []byte{9, 9},
		wirePlayerOld, 3,
		wireFinish,
	)
	for _, tc := range []struct {
		name     string
		native   []byte
		wantTail int // bytes the syntax cannot explain
	}{
		{"empty", nil, 0},
		{"every record type", every, 0},
		{"overlong varints", []byte{0x81, 0x80, 0x00, 0x85, 0x80, 0x80, 0x80, 0xf0, 0x02}, 0},
		{"truncated varint", append(bytes.Clone(every), 0x80), 1},
		{"truncated command", every[:len(every)-30], 0}, // wantTail checked below: nonzero
		{"unknown record type", append(bytes.Clone(every), AppendVarint(nil, -12)...), 1},
		{"random bytes", random, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cols := New().SplitColumns(tc.native, nil)
			if len(cols) != numColsByPlayer {
				t.Fatalf("%d streams", len(cols))
			}
			got, err := New().JoinColumns(nil, cols)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tc.native) {
				t.Fatalf("round trip changed the bytes: %d in, %d out", len(tc.native), len(got))
			}
			tail := len(cols[colTail])
			switch {
			case tc.name == "truncated command":
				if tail == 0 {
					t.Error("a truncated record left no tail")
				}
			case tc.wantTail >= 0 && tail != tc.wantTail:
				t.Errorf("tail %d bytes, want %d", tail, tc.wantTail)
			}
		})
	}
}

func TestJoinColumnsRejectsCorruptStreams(t *testing.T) {
	native := thRecords(wirePlayerNew, 1, 5, 5, 1, 2, 3, wireCommand, 1, 0, "kick", 1, "x")
	for _, tc := range []struct {
		name   string
		mutate func(cols [][]byte) [][]byte
		want   string
	}{
		{"stream missing", func(c [][]byte) [][]byte { return c[:numCols-1] }, "streams"},
		{"dx cut", func(c [][]byte) [][]byte { c[colDX] = nil; return c }, "stream 1: player group"},
		{"left over", func(c [][]byte) [][]byte { c[colDY] = append(c[colDY], 1); return c }, "left over"},
		{"raw cut", func(c [][]byte) [][]byte { c[colRaw] = c[colRaw][:3]; return c }, "raw offset"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New().JoinColumns(nil, tc.mutate(New().SplitColumns(native, nil)))
			if !errors.Is(err, errColumns) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want errColumns saying %q", err, tc.want)
			}
		})
	}
}

// FuzzColumns checks that any bytes survive the record columns, split
// into the streams splitColumnsRef makes.
func FuzzColumns(f *testing.F) {
	f.Add(thRecords(wirePlayerNew, 3, 100, -200, 3, 5, -7, wireCommand, 3, 1, "say", 1, "hi", wireFinish))
	f.Add(thRecords(wireInputDiff, 3, 0, 0, 1, 0, 0, 0, 0, 0, 0, -1, 2, 1, 1, wireInputNew, 2, 1, 2, 3, 4, 5, 6, 7, 8, 9))
	f.Add([]byte{0x81, 0x80, 0x00, 0xff, 0xff})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, native []byte) {
		c := New()
		cols := c.SplitColumns(native, nil)
		checkStreams(t, cols, splitColumnsRef(native))
		got, err := c.JoinColumns(nil, cols)
		if err != nil || !bytes.Equal(got, native) {
			t.Fatalf("round trip: %v", err)
		}
	})
}

// TestSplitColumnsMatchesReference splits records of every kind, cut at
// every length, into the streams splitColumnsRef makes, reusing one set
// of streams as the archive does.
func TestSplitColumnsMatchesReference(t *testing.T) {
	native := randomRecords(rand.New(rand.NewPCG(7, 8)), 300)
	var cols [][]byte
	for n := range len(native) + 1 {
		cols = New().SplitColumns(native[:n], cols)
		checkStreams(t, cols, splitColumnsRef(native[:n]))
	}
}

// checkStreams fails t unless got and want hold the same streams.
func checkStreams(t *testing.T, got, want [][]byte) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d streams, want %d", len(got), len(want))
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("stream %d: %d bytes %x, want %d bytes %x", i, len(got[i]), got[i], len(want[i]), want[i])
		}
	}
}

// splitColumnsRef is SplitColumns as plainly as it can be said: the
// record-order streams of recordOrderRef, then each player's dx and dy
// values gathered, client id by client id.
func splitColumnsRef(native []byte) [][]byte {
	cols := append(recordOrderRef(native), []byte{layoutByPlayer})
	var dx, dy [playerGroups][]byte
	b := native
	for len(b) > 0 {
		n, typ := recordLen(b)
		if n == 0 {
			break
		}
		if typ >= 0 {
			l := varintLen(b)
			k := varintLen(b[l:])
			g := playerGroup(typ)
			dx[g] = append(dx[g], b[l:l+k]...)
			dy[g] = append(dy[g], b[l+k:n]...)
		}
		b = b[n:]
	}
	cols[colDX], cols[colDY] = bytes.Join(dx[:], nil), bytes.Join(dy[:], nil)
	return cols
}

// recordOrderRef is the record-order layout (numCols streams) as plainly
// as it can be said: every record measured by recordLen, then each field
// appended to its stream.
func recordOrderRef(native []byte) [][]byte {
	cols := make([][]byte, numCols)
	b := native
	for len(b) > 0 {
		n, typ := recordLen(b)
		if n == 0 {
			break
		}
		l := varintLen(b)
		cols[colType] = append(cols[colType], b[:l]...)
		if fields, ok := varintFields(typ); ok {
			p := l
			for _, c := range fields {
				k := varintLen(b[p:])
				cols[c] = append(cols[c], b[p:p+k]...)
				p += k
			}
		} else {
			cols[colRaw] = append(cols[colRaw], b[l:n]...)
		}
		b = b[n:]
	}
	cols[colTail] = append(cols[colTail], b...)
	return cols
}

// randomRecords builds n records of every type with fields of every
// varint length (overlong and 5-byte ones too), so that the fast join
// meets multi-byte fields at every distance from a stream's end.
func randomRecords(rng *rand.Rand, n int) []byte {
	field := func(b []byte) []byte {
		switch rng.IntN(6) {
		case 0: // overlong or 5-byte, high bit set on the last
			k := 1 + rng.IntN(MaxVarintLen)
			for range k - 1 {
				b = append(b, 0x80|byte(rng.Uint32()))
			}
			return append(b, byte(rng.Uint32()))
		case 1:
			return AppendVarint(b, rng.Int32())
		default:
			return AppendVarint(b, int32(rng.IntN(200))-100)
		}
	}
	var b []byte
	for range n {
		switch typ := rng.IntN(14); typ {
		case 0, 1, 2, 3: // PLAYER_DIFF, sometimes with a large client id
			b = field(AppendVarint(b, int32(rng.IntN(70))))
			b = field(b)
		case 4:
			b = AppendVarint(b, wireInputDiff)
			for range 11 {
				b = field(b)
			}
		case 5:
			b = AppendVarint(b, wireInputNew)
			for range 11 {
				b = field(b)
			}
		case 6:
			b = field(AppendVarint(b, wireTickSkip))
		case 7:
			b = field(field(field(AppendVarint(b, wirePlayerNew))))
		case 8:
			b = thRecords([]byte(b), wireCommand, rng.IntN(64), 0, "say", 1, "hi")
		case 9:
			b = thRecords([]byte(b), wireMessage, rng.IntN(64), 3, []byte{1, 2, 3})
		case 10:
			b = thRecords([]byte(b), wireDrop, rng.IntN(64), "bye")
		case 11:
			b = field(AppendVarint(b, wireJoin))
		case 12:
			b = field(AppendVarint(b, wirePlayerOld))
		default:
			b = AppendVarint(b, wireFinish)
		}
	}
	return b
}

// TestJoinColumnsEdges round-trips records with fields of every length
// and joins their streams cut or grown by a few bytes at the end of each
// stream, where a join must look at its bounds: every result is the
// native bytes or an errColumns error, never a panic.
func TestJoinColumnsEdges(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	c := New()
	for i := range 200 {
		native := randomRecords(rng, 1+rng.IntN(40))
		got, err := c.JoinColumns([]byte("prefix"), c.SplitColumns(native, nil))
		if err != nil || !bytes.Equal(got, append([]byte("prefix"), native...)) {
			t.Fatalf("case %d: round trip: %v", i, err)
		}
		for k := range numColsByPlayer {
			for _, d := range []int{-9, -8, -7, -5, -3, -2, -1, 1, 2} {
				cols := c.SplitColumns(native, nil)
				if d < 0 {
					cols[k] = cols[k][:max(0, len(cols[k])+d)]
				} else {
					cols[k] = append(cols[k], bytes.Repeat([]byte{0x81}, d)...)
				}
				checkJoin(t, c, cols)
			}
		}
	}
}

// checkJoin joins cols, which need not come from SplitColumns: it must
// fail with errColumns or give bytes that split and join back to
// themselves.
func checkJoin(t *testing.T, c *Codec, cols [][]byte) {
	t.Helper()
	got, err := c.JoinColumns(nil, cols)
	if err != nil {
		if !errors.Is(err, errColumns) {
			t.Fatalf("error %v is not errColumns", err)
		}
		return
	}
	again, err := c.JoinColumns(nil, c.SplitColumns(got, nil))
	if err != nil || !bytes.Equal(again, got) {
		t.Fatalf("joined bytes do not round-trip: %v", err)
	}
}

// FuzzJoinColumns joins any streams: the first numCols-1 bytes are the
// lengths of the first numCols-1 streams, the rest their bytes, the tail
// taking what is left.
func FuzzJoinColumns(f *testing.F) {
	c := New()
	rng := rand.New(rand.NewPCG(7, 8))
	for range 4 {
		cols := c.SplitColumns(randomRecords(rng, 8), nil)
		var b []byte
		for _, s := range cols[:numCols-1] {
			b = append(b, byte(len(s)))
		}
		for _, s := range cols {
			b = append(b, s...)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < numCols {
			return
		}
		cols := make([][]byte, numCols)
		rest := data[numCols-1:]
		for k := range numCols - 1 {
			n := min(int(data[k]), len(rest))
			cols[k], rest = rest[:n], rest[n:]
		}
		cols[colTail] = rest
		checkJoin(t, c, cols)
	})
}

// TestColumnsByPlayer: the dx and dy streams hold each client's values
// together, client by client; a chunk split in record order (by a build
// before the by-player layout) still joins; an unknown layout is refused.
func TestColumnsByPlayer(t *testing.T) {
	native := thRecords(1, 10, 20, 0, 30, 40, 1, 11, 21, wireTickSkip, 0, 0, 31, 41, 300, 50, 60, 1, 12, 22)
	c := New()
	cols := c.SplitColumns(native, nil)
	wantDX := thRecords(30, 31, 10, 11, 12, 50) // client 0, 1, then the out-of-range id 300
	wantDY := thRecords(40, 41, 20, 21, 22, 60)
	if !bytes.Equal(cols[colDX], wantDX) || !bytes.Equal(cols[colDY], wantDY) {
		t.Fatalf("dx %x dy %x, want %x %x", cols[colDX], cols[colDY], wantDX, wantDY)
	}
	for _, tc := range []struct {
		name string
		cols [][]byte
		want string
	}{
		{"by player", cols, ""},
		{"record order", recordOrderRef(native), ""},
		{"unknown layout", append(cols[:colLayout:colLayout], []byte{2}), "unknown layout"},
		{"group cut", append(append([][]byte{}, cols[:colDX]...), append([][]byte{wantDX[:3]}, cols[colDX+1:]...)...), "ends inside"},
	} {
		got, err := c.JoinColumns(nil, tc.cols)
		if tc.want == "" && (err != nil || !bytes.Equal(got, native)) {
			t.Errorf("%s: joined %x, %v; want the native bytes", tc.name, got, err)
		}
		if tc.want != "" && (!errors.Is(err, errColumns) || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want errColumns saying %q", tc.name, err, tc.want)
		}
	}
}

// FuzzJoinColumnsByPlayer joins any streams of the by-player layout: the
// first numCols-1 bytes are the lengths of the first numCols-1 streams,
// the rest their bytes, the tail taking what is left.
func FuzzJoinColumnsByPlayer(f *testing.F) {
	c := New()
	rng := rand.New(rand.NewPCG(9, 10))
	for range 4 {
		cols := c.SplitColumns(randomRecords(rng, 8), nil)
		var b []byte
		for _, s := range cols[:numCols-1] {
			b = append(b, byte(len(s)))
		}
		for _, s := range cols[:numCols] {
			b = append(b, s...)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < numCols {
			return
		}
		cols := make([][]byte, numColsByPlayer)
		rest := data[numCols-1:]
		for k := range numCols - 1 {
			n := min(int(data[k]), len(rest))
			cols[k], rest = rest[:n], rest[n:]
		}
		cols[colTail], cols[colLayout] = rest, []byte{layoutByPlayer}
		checkJoin(t, c, cols)
	})
}
