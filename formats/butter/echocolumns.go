// This file implements formats.Columnar for .echoreplay chunks: a
// reversible transform that stores a chunk of text lines as the lines'
// templates (the text with every number taken out) and their numbers,
// one field after another, which the archive compresses stream by stream.
//
// Consecutive lines of a recording have the same JSON shape and mostly
// the same strings, and the same field's values change little from one
// frame (1/30 s) to the next. So a line's template is stored as its
// difference from the previous line's (usually none), and the k-th number
// of every line of the chunk is stored together, as its difference from
// the value the same field had on the line before (or the linear
// extrapolation of the two before, whichever the chunk's values of that
// field fit better). A number with a fraction that is the float32 value
// it spells, rounded to its digits (how Spark and our writer print
// floats), is stored as that float32: its frame-to-frame difference is far
// smaller than that of its decimal digits. Any other number is stored as
// its digits.
//
// The transform is syntax-free: it knows digits, '-' and '.', not JSON, so
// every byte string round-trips, whatever it holds. A chunk holding the
// template marker byte (NUL), or one the streams would describe in far
// fewer bytes than it holds (see maxExpand), is stored as it is in the raw
// stream. The streams and their order are part of the archive's on-disk
// layout: changing them needs a new archive transform.

package butter

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	mbits "math/bits"
	"slices"
	"strconv"

	"github.com/replayarchive/replay/formats"
)

var _ formats.Columnar = (*EchoReplayCodec)(nil)

// The streams of SplitColumns, in their stored order.
const (
	ecTpl   = iota // per line: uvarint 0 (the previous line's template) or prefix+1, suffix, middle length
	ecText         // the middle bytes of templates that differ from the previous line's
	ecShape        // per number, field by field: uvarint shape (numFloat..., numDecimal...)
	ecMode         // per field of the chunk: its predictor (predPrev, predLinear)
	ecVal          // per number, field by field: zigzag uvarint of value minus prediction
	ecRaw          // a chunk the transform does not take, as it is
	ecCount
)

// marker stands for a number in a template. A chunk holding it is stored raw.
const marker = 0

// maxDigits bounds the digits of a number the tokenizer takes: below
// 10^18 a value fits an int64 with room for differences.
const maxDigits = 18

// maxExpand bounds the native bytes of a chunk against its streams'
// bytes. JoinColumns refuses streams that would expand more (a corrupt
// blob must not allocate without bound); SplitColumns stores a chunk that
// would as it is. Real chunks expand 3-10×.
const maxExpand = 64

// Shapes of a number (its ecShape value). A float number is
// [-]digits.digits with f fraction digits, the float32 value rounded to f
// places (formatFloat): shape f, 1..maxDigits. A decimal number is any
// other [-]digits[.digits], within maxDigits digits: shape
// decimalShape + ((pad*(maxDigits+1) + f) << 1 | neg), where pad counts
// the zeros before the first digit of the value's digits.
const decimalShape = maxDigits + 1

// Predictors of a field.
const (
	predPrev   = 0 // the field's value on the previous line
	predLinear = 1 // 2×previous − the one before
)

// pow10f holds exact float64 powers of ten up to 10^maxDigits.
var pow10f = func() (p [maxDigits + 1]float64) {
	p[0] = 1
	for i := 1; i <= maxDigits; i++ {
		p[i] = p[i-1] * 10
	}
	return
}()

// num is one number of a line: its shape and its value (the float32's
// ordinal, or the signed decimal value).
type num struct {
	shape uint32
	val   int64
}

func (n num) float() bool { return n.shape < decimalShape }

// fracDigits is the number of fraction digits of shape.
func fracDigits(shape uint32) int {
	if shape < decimalShape {
		return int(shape)
	}
	return int((shape-decimalShape)>>1) % (maxDigits + 1)
}

// compatible reports whether a field's value on a line with shape b can
// predict one with shape a: both floats, or both decimals with as many
// fraction digits.
func compatible(a, b uint32) bool {
	if a < decimalShape || b < decimalShape {
		return a < decimalShape && b < decimalShape
	}
	return fracDigits(a) == fracDigits(b)
}

// floatOrd maps a float32's bits to an integer in the floats' order, -0
// just below +0.
func floatOrd(b uint32) int64 {
	if b>>31 != 0 {
		return -int64(b&0x7fffffff) - 1
	}
	return int64(b)
}

// ordFloat reverses floatOrd; false when o is no float32's ordinal.
func ordFloat(o int64) (uint32, bool) {
	if o >= 0 {
		return uint32(o), o <= math.MaxInt32
	}
	m := -(o + 1)
	return uint32(m) | 1<<31, m <= math.MaxInt32
}

// scaled is the float32 with bits b times 10^f, rounded to an integer,
// and the sign: the digits formatFloat prints. ok is false when they would
// not fit maxDigits digits (and for infinities and NaNs).
func scaled(b uint32, f int) (m uint64, neg, ok bool) {
	x := math.Abs(float64(math.Float32frombits(b))) * pow10f[f]
	if !(x < 1e18) { // also NaN
		return 0, false, false
	}
	return uint64(math.Round(x)), b>>31 != 0, true
}

// appendDigits appends m as decimal digits, zero-padded to at least width
// digits, with a '.' before the last f of them when f > 0.
func appendDigits(dst []byte, m uint64, width, f int) []byte {
	var buf [2*maxDigits + 2]byte
	i := len(buf)
	n := 0
	for m > 0 || n < width || n <= f {
		if n == f && f > 0 {
			i--
			buf[i] = '.'
		}
		i--
		buf[i] = byte('0' + m%10)
		m /= 10
		n++
	}
	return append(dst, buf[i:]...)
}

// ndigits is the number of decimal digits of m (1 for 0).
func ndigits(m uint64) int {
	n := 1
	for m >= 10 {
		m /= 10
		n++
	}
	return n
}

// appendNum appends the text of n.
func appendNum(dst []byte, n num) ([]byte, bool) {
	if n.float() {
		b, ok := ordFloat(n.val)
		if !ok {
			return dst, false
		}
		f := int(n.shape)
		m, neg, ok := scaled(b, f)
		if !ok {
			return dst, false
		}
		if neg {
			dst = append(dst, '-')
		}
		return appendDigits(dst, m, 0, f), true
	}
	s := n.shape - decimalShape
	neg := s&1 != 0
	s >>= 1
	f, pad := int(s%(maxDigits+1)), int(s/(maxDigits+1))
	v := n.val
	if neg != (v < 0) && !(neg && v == 0) {
		return dst, false
	}
	m := uint64(v)
	if v < 0 {
		m = uint64(-v)
	}
	width := pad + ndigits(m)
	if m >= 1e18 || width > maxDigits || width <= f {
		return dst, false
	}
	if neg {
		dst = append(dst, '-')
	}
	return appendDigits(dst, m, width, f), true
}

// tokenize appends the template of line to tpl and its numbers to nums.
// A number is an optional '-' (not after a digit), digits and an optional
// '.' and digits, at most maxDigits digits in all and not after a digit.
// Longer digit runs stay in the template.
func tokenize(line, tpl []byte, nums []num) ([]byte, []num) {
	i := 0
	for i < len(line) {
		c := line[i]
		start := i
		prevDigit := i > 0 && isDigit(line[i-1])
		switch {
		case prevDigit:
			tpl = append(tpl, c)
			i++
			continue
		case c == '-' && i+1 < len(line) && isDigit(line[i+1]):
			i++
		case isDigit(c):
		default:
			tpl = append(tpl, c)
			i++
			continue
		}
		j := i
		for j < len(line) && isDigit(line[j]) {
			j++
		}
		intDigits := j - i
		f := 0
		if j+1 < len(line) && line[j] == '.' && isDigit(line[j+1]) {
			k := j + 1
			for k < len(line) && isDigit(line[k]) {
				k++
			}
			f = k - j - 1
			j = k
		}
		if intDigits+f > maxDigits {
			tpl = append(tpl, line[start:j]...)
			i = j
			continue
		}
		nums = append(nums, parseNum(line[start:j], intDigits, f))
		tpl = append(tpl, marker)
		i = j
	}
	return tpl, nums
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// parseNum returns the num of text, a token of tokenize with intDigits
// digits before its '.' and f after.
func parseNum(text []byte, intDigits, f int) num {
	if f > 0 {
		if v, err := strconv.ParseFloat(string(text), 32); err == nil {
			b := math.Float32bits(float32(v))
			if m, neg, ok := scaled(b, f); ok && neg == (text[0] == '-') {
				var buf [2*maxDigits + 3]byte
				out := buf[:0]
				if neg {
					out = append(out, '-')
				}
				if bytes.Equal(appendDigits(out, m, 0, f), text) {
					return num{shape: uint32(f), val: floatOrd(b)}
				}
			}
		}
	}
	neg := text[0] == '-'
	var m uint64
	digits := 0
	lead := true
	pad := 0
	for _, d := range text {
		if !isDigit(d) {
			continue
		}
		digits++
		if lead && d == '0' && digits < intDigits+f {
			pad++
			continue
		}
		lead = false
		m = m*10 + uint64(d-'0')
	}
	v := int64(m)
	if neg {
		v = -v
	}
	s := (uint32(pad)*(maxDigits+1)+uint32(f))<<1 | b2u(neg)
	return num{shape: decimalShape + s, val: v}
}

func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

func zigzag(v int64) uint64 { return uint64(v<<1) ^ uint64(v>>63) }

func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

// predict returns the prediction of the value of a field with shape on
// line i by predictor p, given the field's numbers on the lines before
// (nil where a line has no such field).
func predict(p byte, shape uint32, prev1, prev2 *num) int64 {
	if prev1 == nil || !compatible(shape, prev1.shape) {
		return 0
	}
	if p == predLinear && prev2 != nil && compatible(shape, prev2.shape) {
		return 2*prev1.val - prev2.val
	}
	return prev1.val
}

// echoSplit is the scratch state of one SplitColumns.
type echoSplit struct {
	tpls  [][]byte // each line's template
	nums  [][]num  // each line's numbers
	maxK  int
	tplBf []byte
	numBf []num
}

// SplitColumns implements formats.Columnar: it returns the ecCount
// streams of chunk, reusing cols (each reset first).
func (*EchoReplayCodec) SplitColumns(chunk []byte, cols [][]byte) [][]byte {
	if len(cols) != ecCount {
		cols = make([][]byte, ecCount)
	}
	for i := range cols {
		cols[i] = cols[i][:0]
	}
	if len(chunk) == 0 {
		return cols
	}
	if bytes.IndexByte(chunk, marker) >= 0 {
		cols[ecRaw] = append(cols[ecRaw], chunk...)
		return cols
	}
	var s echoSplit
	// tokenize every line into one template and one number buffer
	var tplEnd, numEnd []int
	for rest := chunk; len(rest) > 0; {
		n := bytes.IndexByte(rest, '\n') + 1
		if n == 0 {
			n = len(rest)
		}
		s.tplBf, s.numBf = tokenize(rest[:n], s.tplBf, s.numBf)
		tplEnd = append(tplEnd, len(s.tplBf))
		numEnd = append(numEnd, len(s.numBf))
		rest = rest[n:]
	}
	t0, n0 := 0, 0
	for i := range tplEnd {
		s.tpls = append(s.tpls, s.tplBf[t0:tplEnd[i]])
		s.nums = append(s.nums, s.numBf[n0:numEnd[i]])
		s.maxK = max(s.maxK, numEnd[i]-n0)
		t0, n0 = tplEnd[i], numEnd[i]
	}
	var prev []byte
	for i, t := range s.tpls {
		if i > 0 && bytes.Equal(t, prev) {
			cols[ecTpl] = append(cols[ecTpl], 0)
			prev = t
			continue
		}
		p := commonPrefix(prev, t)
		sfx := commonSuffix(prev[p:], t[p:])
		mid := t[p : len(t)-sfx]
		cols[ecTpl] = binary.AppendUvarint(cols[ecTpl], uint64(p)+1)
		cols[ecTpl] = binary.AppendUvarint(cols[ecTpl], uint64(sfx))
		cols[ecTpl] = binary.AppendUvarint(cols[ecTpl], uint64(len(mid)))
		cols[ecText] = append(cols[ecText], mid...)
		prev = t
	}
	for k := range s.maxK {
		// the field's predictor: the one whose residuals need fewer bits
		var cost [2]int
		for i, ns := range s.nums {
			if k >= len(ns) {
				continue
			}
			p1, p2 := s.field(i-1, k), s.field(i-2, k)
			for p := range cost {
				cost[p] += mbits.Len64(zigzag(ns[k].val - predict(byte(p), ns[k].shape, p1, p2)))
			}
		}
		mode := byte(predPrev)
		if cost[predLinear] < cost[predPrev] {
			mode = predLinear
		}
		cols[ecMode] = append(cols[ecMode], mode)
		for i, ns := range s.nums {
			if k >= len(ns) {
				continue
			}
			n := ns[k]
			cols[ecShape] = binary.AppendUvarint(cols[ecShape], uint64(n.shape))
			r := n.val - predict(mode, n.shape, s.field(i-1, k), s.field(i-2, k))
			cols[ecVal] = binary.AppendUvarint(cols[ecVal], zigzag(r))
		}
	}
	total := 0
	for _, c := range cols {
		total += len(c)
	}
	if len(chunk) > joinLimit(total) {
		for i := range cols {
			cols[i] = cols[i][:0]
		}
		cols[ecRaw] = append(cols[ecRaw], chunk...)
	}
	return cols
}

// field returns number k of line i, nil when there is none.
func (s *echoSplit) field(i, k int) *num {
	if i < 0 || k >= len(s.nums[i]) {
		return nil
	}
	return &s.nums[i][k]
}

// joinLimit is the most native bytes streams of total bytes may give.
func joinLimit(total int) int { return maxExpand*total + 4096 }

func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

func commonSuffix(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[len(a)-1-i] == b[len(b)-1-i] {
		i++
	}
	return i
}

// errEchoColumns is wrapped by every JoinColumns error.
var errEchoColumns = errors.New("corrupt echoreplay columns")

// echoReader reads uvarints from one stream, remembering the first error.
type echoReader struct {
	b   []byte
	off int
	col int
	err error
}

func (r *echoReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 {
		r.err = fmt.Errorf("%w: stream %d: bad or missing varint at offset %d", errEchoColumns, r.col, r.off)
		return 0
	}
	r.off += n
	return v
}

// JoinColumns implements formats.Columnar: it reverses SplitColumns,
// appending the chunk to dst. Every stream must be used up exactly, and
// the chunk may be at most joinLimit of the streams' bytes.
func (*EchoReplayCodec) JoinColumns(dst []byte, cols [][]byte) ([]byte, error) {
	if len(cols) != ecCount {
		return nil, fmt.Errorf("%w: %d streams, want %d", errEchoColumns, len(cols), ecCount)
	}
	total := 0
	for _, c := range cols {
		total += len(c)
	}
	if len(cols[ecRaw]) > 0 {
		if total != len(cols[ecRaw]) {
			return nil, fmt.Errorf("%w: a raw chunk with %d bytes in other streams", errEchoColumns, total-len(cols[ecRaw]))
		}
		return append(dst, cols[ecRaw]...), nil
	}
	limit := joinLimit(total)
	// templates: each line's as a range of tplBuf
	tr := echoReader{b: cols[ecTpl], col: ecTpl}
	text := cols[ecText]
	var tplBuf []byte
	type line struct{ start, end, nums, first int }
	var lines []line
	size := 0 // native bytes so far, numbers not counted
	nnums := 0
	maxK := 0
	var cur line
	for tr.off < len(tr.b) && tr.err == nil {
		p := tr.uvarint()
		if p == 0 {
			if len(lines) == 0 {
				return nil, fmt.Errorf("%w: the first line repeats a template", errEchoColumns)
			}
		} else {
			p--
			sfx, mid := tr.uvarint(), tr.uvarint()
			prevLen := uint64(cur.end - cur.start)
			if tr.err != nil {
				break
			}
			if p > prevLen || sfx > prevLen-p || mid > uint64(len(text)) {
				return nil, fmt.Errorf("%w: template of line %d: prefix %d, suffix %d, middle %d of a %d-byte template and %d bytes of text",
					errEchoColumns, len(lines)+1, p, sfx, mid, prevLen, len(text))
			}
			n := int(p + mid + sfx)
			if n > limit || len(tplBuf)+n > limit {
				return nil, fmt.Errorf("%w: templates exceed %d bytes", errEchoColumns, limit)
			}
			start := len(tplBuf)
			prevT := tplBuf[cur.start:cur.end]
			tplBuf = append(tplBuf, prevT[:p]...)
			tplBuf = append(tplBuf, text[:mid]...)
			tplBuf = append(tplBuf, prevT[len(prevT)-int(sfx):]...)
			text = text[mid:]
			cur = line{start: start, end: len(tplBuf), nums: bytes.Count(tplBuf[start:], []byte{marker})}
		}
		cur.first = nnums
		nnums += cur.nums
		size += cur.end - cur.start - cur.nums
		if size > limit || nnums > len(cols[ecShape]) {
			return nil, fmt.Errorf("%w: line %d: more than %d bytes or %d numbers", errEchoColumns, len(lines)+1, limit, len(cols[ecShape]))
		}
		maxK = max(maxK, cur.nums)
		lines = append(lines, cur)
	}
	if tr.err != nil {
		return nil, tr.err
	}
	if len(text) > 0 {
		return nil, fmt.Errorf("%w: %d bytes of template text left over", errEchoColumns, len(text))
	}
	if len(cols[ecMode]) != maxK {
		return nil, fmt.Errorf("%w: %d field predictors for %d fields", errEchoColumns, len(cols[ecMode]), maxK)
	}
	// numbers, field by field
	nums := make([]num, nnums)
	sr := echoReader{b: cols[ecShape], col: ecShape}
	vr := echoReader{b: cols[ecVal], col: ecVal}
	fieldOf := func(i, k int) *num {
		if i < 0 || k >= lines[i].nums {
			return nil
		}
		return &nums[lines[i].first+k]
	}
	for k := range maxK {
		mode := cols[ecMode][k]
		if mode > predLinear {
			return nil, fmt.Errorf("%w: field %d: predictor %d", errEchoColumns, k, mode)
		}
		for i, l := range lines {
			if k >= l.nums {
				continue
			}
			shape, res := sr.uvarint(), vr.uvarint()
			if sr.err != nil || vr.err != nil {
				return nil, errors.Join(sr.err, vr.err)
			}
			if shape >= decimalShape+2*(maxDigits+1)*(maxDigits+1) || shape == 0 {
				return nil, fmt.Errorf("%w: field %d of line %d: shape %d", errEchoColumns, k, i+1, shape)
			}
			n := num{shape: uint32(shape)}
			n.val = predict(mode, n.shape, fieldOf(i-1, k), fieldOf(i-2, k)) + unzigzag(res)
			var buf [2*maxDigits + 3]byte
			b, ok := appendNum(buf[:0], n)
			if !ok {
				return nil, fmt.Errorf("%w: field %d of line %d: value %d does not fit shape %d", errEchoColumns, k, i+1, n.val, shape)
			}
			size += len(b)
			if size > limit {
				return nil, fmt.Errorf("%w: more than %d bytes", errEchoColumns, limit)
			}
			nums[l.first+k] = n
		}
	}
	if sr.off != len(sr.b) || vr.off != len(vr.b) {
		return nil, fmt.Errorf("%w: %d shape and %d value bytes left over", errEchoColumns, len(sr.b)-sr.off, len(vr.b)-vr.off)
	}
	// render
	w := len(dst)
	out := slices.Grow(dst, size)
	for _, l := range lines {
		t := tplBuf[l.start:l.end]
		ni := l.first
		for {
			j := bytes.IndexByte(t, marker)
			if j < 0 {
				out = append(out, t...)
				break
			}
			out = append(out, t[:j]...)
			out, _ = appendNum(out, nums[ni])
			ni++
			t = t[j+1:]
		}
	}
	if len(out)-w != size {
		return nil, fmt.Errorf("%w: wrote %d bytes, want %d", errEchoColumns, len(out)-w, size)
	}
	return out, nil
}
