// This file implements formats.Columnar: a reversible transform of chunks
// that puts each kind of field in its own stream, which the archive
// compresses one by one. A chunk interleaves record types, position
// deltas and ten input fields; zstd compresses each of them far better
// alone: 0.71× the bytes of compressing the chunk whole on generated
// games, 0.74× on the corpus's teehistorian files (docs/PERFORMANCE.md).
//
// The position deltas are grouped by player: a chunk holds each client's
// dx values one after the other, then the next client's (and the same for
// dy), instead of the order of the records, which interleaves every
// player of a tick. A moving character's deltas follow its physics from
// tick to tick, so one player's run of them repeats and compresses far
// better than the interleaved stream: 0.26-0.31× the dx and dy streams'
// bytes on many-player games of an independent generator, 0.90× on the
// corpus's (docs/PERFORMANCE.md). Chunks split before this layout have
// numCols streams in record order; JoinColumns reads both.
//
// The transform knows only the syntax of the records (the varint, each
// record's field list), not their meaning, and copies every field's bytes
// verbatim, so overlong varints and invalid values come back as they were.
// Where the syntax stops making sense (a truncated record, an unknown
// type), the rest of the chunk goes to the tail stream as it is: every
// input round-trips. The streams and their order are part of the archive's
// on-disk layout: changing them needs a new archive transform.

package teehistorian

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/replayarchive/replay/formats"
)

var _ formats.Columnar = (*Codec)(nil)

// The streams of SplitColumns, in their stored order.
const (
	colType  = iota        // each record's type varint (a client id for PLAYER_DIFF)
	colDX                  // PLAYER_DIFF dx
	colDY                  // PLAYER_DIFF dy
	colInCid               // INPUT_DIFF and INPUT_NEW client id
	colIn0                 // the ten input fields, one stream each: colIn0+0..9
	colMisc  = colIn0 + 10 // varints of TICK_SKIP, PLAYER_NEW, PLAYER_OLD, JOIN
	colRaw   = colMisc + 1 // the rest of MESSAGE, DROP, CONSOLE_COMMAND and EX records
	colTail  = colRaw + 1  // bytes after the last record the syntax explains
	numCols  = colTail + 1 // the streams of the record-order layout (colDX and colDY in record order)
	// colLayout holds one byte, the layout of the streams before it:
	// layoutByPlayer. SplitColumns writes numColsByPlayer streams.
	colLayout       = numCols
	numColsByPlayer = numCols + 1
)

// layoutByPlayer: colDX and colDY hold each client id's values in record
// order, client 0's first, then client 1's, up to client 254; the values
// of ids from 255 up (the last client slot, and ids no valid file has)
// come last, together, in record order.
const layoutByPlayer = 1

// playerGroups is the number of groups of the by-player layout: a group
// is a byte.
const playerGroups = 256

// playerGroup returns the group of a PLAYER_DIFF record's client id.
func playerGroup(cid int32) byte { return byte(min(cid, playerGroups-1)) }

var (
	colsPlayer = []int{colDX, colDY}
	colsInput  = []int{colInCid, colIn0, colIn0 + 1, colIn0 + 2, colIn0 + 3, colIn0 + 4, colIn0 + 5, colIn0 + 6, colIn0 + 7, colIn0 + 8, colIn0 + 9}
	colsMisc1  = []int{colMisc}
	colsMisc3  = []int{colMisc, colMisc, colMisc}
)

// varintFields returns the streams the varint fields of a record of type
// typ go to, in order, and false for a record whose rest is not all
// varints (see rawLen).
func varintFields(typ int32) ([]int, bool) {
	switch {
	case typ >= 0:
		return colsPlayer, true
	case typ == wireFinish:
		return nil, true
	case typ == wireTickSkip, typ == wirePlayerOld, typ == wireJoin:
		return colsMisc1, true
	case typ == wirePlayerNew:
		return colsMisc3, true
	case typ == wireInputDiff, typ == wireInputNew:
		return colsInput, true
	}
	return nil, false
}

// varintLen is the length of the varint at the start of b (at most
// MaxVarintLen bytes, as readVarint reads it), or 0 when b ends inside it.
func varintLen(b []byte) int {
	for i := 0; i < len(b); i++ {
		if i == MaxVarintLen-1 || b[i]&0x80 == 0 {
			return i + 1
		}
	}
	return 0
}

// varintValue decodes a varint of length varintLen(b).
func varintValue(b []byte) int32 {
	v, _, _ := readVarint(b)
	return v
}

// rawLen is the length of the rest of a MESSAGE, DROP, CONSOLE_COMMAND or
// EX record (after its type) at the start of b, or 0 for another type or
// when b does not hold all of it.
func rawLen(typ int32, b []byte) int {
	n := 0
	ok := true
	varint := func() int32 {
		l := varintLen(b[n:])
		if !ok || l == 0 {
			ok = false
			return 0
		}
		v := varintValue(b[n : n+l])
		n += l
		return v
	}
	str := func() {
		i := bytes.IndexByte(b[n:], 0)
		if !ok || i < 0 {
			ok = false
			return
		}
		n += i + 1
	}
	bytesOf := func(size int32) {
		if !ok || size < 0 || int64(size) > int64(len(b)-n) {
			ok = false
			return
		}
		n += int(size)
	}
	switch typ {
	case wireMessage:
		varint()
		bytesOf(varint())
	case wireDrop:
		varint()
		str()
	case wireCommand:
		varint()
		varint()
		str()
		nargs := varint()
		if nargs < 0 || nargs > maxArgs {
			return 0
		}
		for i := int32(0); i < nargs && ok; i++ {
			str()
		}
	case wireEx:
		bytesOf(16)
		bytesOf(varint())
	default:
		return 0
	}
	if !ok {
		return 0
	}
	return n
}

// recordLen is the length of the record at the start of b and its type,
// or 0 when the syntax does not explain it.
func recordLen(b []byte) (int, int32) {
	l := varintLen(b)
	if l == 0 {
		return 0, 0
	}
	typ := varintValue(b[:l])
	n := l
	if fields, ok := varintFields(typ); ok {
		for range fields {
			k := varintLen(b[n:])
			if k == 0 {
				return 0, 0
			}
			n += k
		}
		return n, typ
	}
	k := rawLen(typ, b[l:])
	if k == 0 {
		return 0, 0
	}
	return n + k, typ
}

// SplitColumns implements formats.Columnar: it returns the numCols streams
// of native, reusing cols (each reset first). It walks the records once:
// the two records that make up most chunks, a PLAYER_DIFF or an input
// record whose fields are one byte each, go to their streams byte by byte
// without a general parse (BenchmarkSplitColumns).
//
// The slice it returns has numColsByPlayer streams and, beyond its
// length, two scratch buffers that the by-player grouping reuses when the
// caller passes the slice back.
func (*Codec) SplitColumns(native []byte, cols [][]byte) [][]byte {
	full := cols[:cap(cols)]
	if len(full) < numColsByPlayer+3 {
		full = make([][]byte, numColsByPlayer+3)
		copy(full, cols)
	}
	var out [numCols][]byte
	for i := range out {
		out[i] = full[i][:0]
	}
	// groups holds each PLAYER_DIFF record's group, in record order;
	// sizeX and sizeY count each group's bytes of dx and dy.
	groups := full[numColsByPlayer+2][:0]
	var sizeX, sizeY [playerGroups]int
	b, p := native, 0
	for p < len(b) {
		if rest := b[p:]; len(rest) >= 3 && rest[0] < 0x40 && rest[1] < 0x80 && rest[2] < 0x80 {
			out[colType] = append(out[colType], rest[0])
			out[colDX] = append(out[colDX], rest[1])
			out[colDY] = append(out[colDY], rest[2])
			groups = append(groups, rest[0])
			sizeX[rest[0]]++
			sizeY[rest[0]]++
			p += 3
			continue
		}
		if rest := b[p:]; len(rest) >= inputRecordLen && (rest[0] == inputDiffByte || rest[0] == inputNewByte) &&
			binary.LittleEndian.Uint64(rest[1:])&0x8080808080808080 == 0 && (rest[9]|rest[10]|rest[11])&0x80 == 0 {
			out[colType] = append(out[colType], rest[0])
			for i, c := range colsInput {
				out[c] = append(out[c], rest[1+i])
			}
			p += inputRecordLen
			continue
		}
		n, typ := recordLen(b[p:])
		if n == 0 {
			break
		}
		r := b[p : p+n]
		l := varintLen(r)
		out[colType] = append(out[colType], r[:l]...)
		if typ >= 0 {
			g := playerGroup(typ)
			kx := varintLen(r[l:])
			out[colDX] = append(out[colDX], r[l:l+kx]...)
			out[colDY] = append(out[colDY], r[l+kx:]...)
			groups = append(groups, g)
			sizeX[g] += kx
			sizeY[g] += n - l - kx
		} else if fields, ok := varintFields(typ); ok {
			q := l
			for _, c := range fields {
				k := varintLen(r[q:])
				out[c] = append(out[c], r[q:q+k]...)
				q += k
			}
		} else {
			out[colRaw] = append(out[colRaw], r[l:]...)
		}
		p += n
	}
	out[colTail] = append(out[colTail], b[p:]...)
	copy(full, out[:])
	full[colLayout] = append(full[colLayout][:0], layoutByPlayer)
	full[numColsByPlayer+2] = groups
	full[colDX], full[numColsByPlayer] = groupByPlayer(groups, &sizeX, full[colDX], full[numColsByPlayer])
	full[colDY], full[numColsByPlayer+1] = groupByPlayer(groups, &sizeY, full[colDY], full[numColsByPlayer+1])
	return full[:numColsByPlayer]
}

// groupByPlayer returns vals, the dx or dy values of PLAYER_DIFF records
// in record order, grouped by player (layoutByPlayer) into scratch:
// groups holds each record's group, size each group's bytes. It also
// returns vals, for the caller to use as scratch next time.
func groupByPlayer(groups []byte, size *[playerGroups]int, vals, scratch []byte) (grouped, free []byte) {
	var at [playerGroups]int
	for g, q := 1, 0; g < playerGroups; g++ {
		q += size[g-1]
		at[g] = q
	}
	out := slices.Grow(scratch[:0], len(vals))[:len(vals)]
	q := 0
	for _, g := range groups {
		if v := vals[q]; v < 0x80 {
			out[at[g]] = v
			at[g]++
			q++
			continue
		}
		e := q + varintLen(vals[q:])
		at[g] += copy(out[at[g]:], vals[q:e])
		q = e
	}
	return out, vals
}

// An input record whose fields are one byte each: its type, the client id
// and the ten input fields.
const (
	inputRecordLen = 1 + 1 + 10
	inputDiffByte  = 0x40 | ^wireInputDiff // wireInputDiff as a one-byte varint
	inputNewByte   = 0x40 | ^wireInputNew
)

// oneByteInputs writes an input record's eleven varints to o when each is
// one byte, the next of its stream in in (at says where), and moves past
// them; it reports false, moving nothing, when one is longer or a stream
// is used up.
func oneByteInputs(in *[inputRecordLen - 1][]byte, at *[inputRecordLen - 1]int, o []byte) bool {
	o = o[:len(in)]
	for k := range in {
		c, q := in[k], at[k]
		if q >= len(c) || c[q] >= 0x80 {
			return false
		}
		o[k] = c[q]
	}
	for k := range at {
		at[k]++
	}
	return true
}

// errColumns is wrapped by every JoinColumns error.
var errColumns = errors.New("corrupt record columns")

// JoinColumns implements formats.Columnar: it reverses SplitColumns,
// appending the native bytes to dst; it also reads the record-order
// layout of chunks split before the by-player one (numCols streams).
// Every stream must be used up exactly. It is on every chunk read's path,
// so it writes into a buffer sized up front (every stream byte is one
// native byte) and works on positions, without closures.
func (*Codec) JoinColumns(dst []byte, cols [][]byte) ([]byte, error) {
	byPlayer := false
	switch len(cols) {
	case numCols:
	case numColsByPlayer:
		if l := cols[colLayout]; len(l) != 1 || l[0] != layoutByPlayer {
			return nil, fmt.Errorf("%w: unknown layout %x (written by a newer version?)", errColumns, l)
		}
		byPlayer = true
	default:
		return nil, fmt.Errorf("%w: %d streams, want %d", errColumns, len(cols), numColsByPlayer)
	}
	total := 0
	for _, c := range cols[:numCols] {
		total += len(c)
	}
	w := len(dst)
	out := slices.Grow(dst, total)[:w+total]
	var pos [numCols]int
	// px and py are where each player group's next dx and dy are, ex and
	// ey where its values end; in the record-order layout every record is
	// in group 0.
	var px, py, ex, ey [playerGroups]int
	types, dx, dy := cols[colType], cols[colDX], cols[colDY]
	ex[0], ey[0] = len(dx), len(dy)
	if byPlayer {
		count := groupCounts(types)
		if err := groupBounds(&count, dx, &px, &ex); err != nil {
			return nil, fmt.Errorf("%w: stream %d: %w", errColumns, colDX, err)
		}
		if err := groupBounds(&count, dy, &py, &ey); err != nil {
			return nil, fmt.Errorf("%w: stream %d: %w", errColumns, colDY, err)
		}
	}
	group := func(typ int32) int {
		if byPlayer {
			return int(playerGroup(typ))
		}
		return 0
	}
	// A one-byte client id masked by gm is its group: the id in the
	// by-player layout, 0 in record order (a byte indexes the group arrays
	// without a bounds check).
	gm := byte(0)
	if byPlayer {
		gm = 0xff
	}
	usedX, usedY := 0, 0
	// The input records' streams (the client id's, then the ten
	// fields'), and where each is (in pos), for their fast path.
	var in [inputRecordLen - 1][]byte
	copy(in[:], cols[colInCid:])
	at := (*[inputRecordLen - 1]int)(pos[colInCid:])
	for pos[colType] < len(types) {
		p := pos[colType]
		t := types[p]
		// Fast path: a PLAYER_DIFF whose three varints are one byte each,
		// most records of a chunk.
		if t < 0x40 {
			g := t & gm
			if i, j := px[g], py[g]; i < ex[g] && j < ey[g] && dx[i] < 0x80 && dy[j] < 0x80 {
				out[w], out[w+1], out[w+2] = t, dx[i], dy[j]
				w += 3
				pos[colType], px[g], py[g] = p+1, i+1, j+1
				usedX, usedY = usedX+1, usedY+1
				continue
			}
		}
		// Fast path: an INPUT_DIFF or INPUT_NEW whose eleven varints are
		// one byte each, the next most.
		if (t == inputDiffByte || t == inputNewByte) && w+inputRecordLen <= len(out) {
			if o := out[w : w+inputRecordLen]; oneByteInputs(&in, at, o[1:]) {
				o[0] = t
				w += inputRecordLen
				pos[colType] = p + 1
				continue
			}
		}
		end := varintEnd(types, p)
		if end < 0 {
			return nil, fmt.Errorf("%w: stream %d ends inside a varint at offset %d", errColumns, colType, p)
		}
		pos[colType] = end
		w += copy(out[w:], types[p:end])
		typ := varintValue(types[p:end])
		if typ >= 0 {
			g := group(typ)
			for _, f := range [2]struct {
				c    int
				col  []byte
				at   *int
				used *int
			}{{colDX, dx[:ex[g]], &px[g], &usedX}, {colDY, dy[:ey[g]], &py[g], &usedY}} {
				e := varintEnd(f.col, *f.at)
				if e < 0 {
					return nil, fmt.Errorf("%w: stream %d ends inside a varint at offset %d", errColumns, f.c, *f.at)
				}
				w += copy(out[w:], f.col[*f.at:e])
				*f.used += e - *f.at
				*f.at = e
			}
			continue
		}
		if fields, ok := varintFields(typ); ok {
			for _, c := range fields {
				col, q := cols[c], pos[c]
				if q < len(col) && col[q] < 0x80 {
					out[w] = col[q]
					w++
					pos[c] = q + 1
					continue
				}
				e := varintEnd(col, q)
				if e < 0 {
					return nil, fmt.Errorf("%w: stream %d ends inside a varint at offset %d", errColumns, c, q)
				}
				w += copy(out[w:], col[q:e])
				pos[c] = e
			}
			continue
		}
		raw := cols[colRaw][pos[colRaw]:]
		n := rawLen(typ, raw)
		if n == 0 {
			return nil, fmt.Errorf("%w: record type %d at raw offset %d", errColumns, typ, pos[colRaw])
		}
		w += copy(out[w:], raw[:n])
		pos[colRaw] += n
	}
	pos[colDX], pos[colDY] = usedX, usedY
	for c := range numCols {
		if c != colTail && pos[c] != len(cols[c]) {
			return nil, fmt.Errorf("%w: stream %d has %d bytes left over", errColumns, c, len(cols[c])-pos[c])
		}
	}
	w += copy(out[w:], cols[colTail])
	return out[:w], nil
}

// groupCounts counts the PLAYER_DIFF records of each player group in
// types, the type stream, up to a varint it cuts (which the join names).
func groupCounts(types []byte) (count [playerGroups]int) {
	for p := 0; p < len(types); {
		if t := types[p]; t < 0x40 {
			count[t]++
			p++
			continue
		}
		e := varintEnd(types, p)
		if e < 0 {
			break
		}
		if typ := varintValue(types[p:e]); typ >= 0 {
			count[playerGroup(typ)]++
		}
		p = e
	}
	return count
}

// groupBounds sets start and end to the bounds of each player group's
// values in vals, a dx or dy stream of the by-player layout holding
// count[g] values of group g. A group that ends inside a varint or past
// the stream is an error; bytes left over are found by the join.
func groupBounds(count *[playerGroups]int, vals []byte, start, end *[playerGroups]int) error {
	q := 0
	for g := range playerGroups {
		start[g] = q
		for n := count[g]; n > 0; {
			switch {
			case n >= 8 && len(vals)-q >= 8 && binary.LittleEndian.Uint64(vals[q:])&0x8080808080808080 == 0:
				q += 8 // eight one-byte values
				n -= 8
			case q < len(vals) && vals[q] < 0x80:
				q++
				n--
			default:
				e := varintEnd(vals, q)
				if e < 0 {
					return fmt.Errorf("player group %d ends inside a varint at offset %d", g, q)
				}
				q = e
				n--
			}
		}
		end[g] = q
	}
	return nil
}

// varintEnd is the offset just past the varint at b[p:], or -1 when b
// ends inside it.
func varintEnd(b []byte, p int) int {
	if p < len(b) && b[p]&0x80 == 0 {
		return p + 1 // most fields are one byte
	}
	if l := varintLen(b[p:]); l > 0 {
		return p + l
	}
	return -1
}
