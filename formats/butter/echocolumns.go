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
// a prediction: the value the same field had on the line before, the
// linear extrapolation of the two before, or an earlier field of the same
// line (head and body positions are often equal), whichever the chunk's
// values of that field fit best. A number with a fraction that spells a
// float32 the way one of the writers of these files prints floats (see
// the shapes) is stored as that float32: its frame-to-frame difference is
// far smaller than that of its decimal digits (and one with nothing to
// predict it, on the chunk's first line, as its bits, a byte in each of
// four streams). Any other number is stored as its digits. Decoding prints only the numbers that changed; the rest
// of a line is copied from the line before.
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
	ecShape        // per number, field by field: uvarint shape (shapeShortest...)
	ecMode         // per field of the chunk: uvarint predictor (predPrev...)
	ecVal          // per number, field by field, but those in ecFloat0..3: zigzag uvarint of value minus prediction
	ecRaw          // a chunk the transform does not take, as it is
	// The float32 bits of a float number with nothing to predict it (in
	// a field predicted from the lines before, on the chunk's first line
	// or on the first after the field was missing), one byte of each in
	// each stream, most significant first: sign and exponent compress
	// alone; as values they cost 1 MB of the corpus's 6.5.
	ecFloat0
	ecFloat1
	ecFloat2
	ecFloat3
	ecCount

	// ecCountV1 is the number of streams before ecFloat0: chunks written
	// so (26 Nov 2026, for an hour) hold those floats in ecVal, as values
	// predicted by 0, and still read.
	ecCountV1 = ecFloat0
)

// marker stands for a number in a template. A chunk holding it is stored raw.
const marker = 0

// maxDigits bounds the digits of a number the tokenizer takes: below
// 10^18 a value fits an int64 with room for differences.
const maxDigits = 18

// maxExpand bounds the native bytes of a chunk against its streams'
// bytes. JoinColumns refuses streams that would expand more (a corrupt
// blob must not allocate without bound); SplitColumns stores a chunk that
// would as it is. The corpus's chunks expand less than 10×.
const maxExpand = 64

// Shapes of a number (its ecShape value). A float number is
// [-]digits.digits spelling a float32 value in one of these ways:
//   - shapeShortest: the shortest text that reads back as the float32
//     (strconv 'f', -1), with ".0" added when it has no '.';
//   - f, 1..maxDigits: rounded to f fraction digits (scaledFloat);
//   - shapeSig8: rounded to 8 significant digits, trailing zeros dropped
//     but one (Spark's older files);
//   - shapeR: 7 significant digits when they read back as the float32,
//     else 9 (.NET Framework's "R" format, the reference decoder's dumps).
//
// A decimal number is any other [-]digits[.digits], within maxDigits
// digits: shape decimalShape + ((pad*(maxDigits+1) + f) << 1 | neg), where
// pad counts the zeros before the first digit of the value's digits.
const (
	shapeShortest = 0
	shapeSig8     = maxDigits + 1
	shapeR        = maxDigits + 2
	decimalShape  = maxDigits + 3
	maxShape      = decimalShape + 2*(maxDigits+1)*(maxDigits+1) - 1
)

// floatStyles are the float shapes other than f digits tried on each
// number, in the order a field without history prefers them (one whose
// number on the line before had one of them keeps it: keepStyle).
var floatStyles = [...]uint32{shapeSig8, shapeR, shapeShortest}

// Predictors of a field (its ecMode value).
const (
	predPrev   = 0 // the field's value on the previous line
	predLinear = 1 // 2×previous − the one before
	// predSame + d: field k-1-d of the same line (head and body positions
	// are often the same)
	predSame = 2
)

// pow10e holds 10^e for e from -9 to 8 at pow10e[e+9].
var pow10e = [...]float64{1e-9, 1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8}

// pow10f holds exact float64 powers of ten up to 10^maxDigits.
var pow10f = func() (p [maxDigits + 1]float64) {
	p[0] = 1
	for i := 1; i <= maxDigits; i++ {
		p[i] = p[i-1] * 10
	}
	return
}()

// num is one number of a line: its shape and its value (the float32's
// ordinal, or the signed decimal value). styles has bit i set when the
// number also has float shape floatStyles[i] (SplitColumns picks one).
type num struct {
	shape  uint32
	val    int64
	styles uint8
}

func (n num) float() bool { return n.shape < decimalShape }

// fracDigits is the number of fraction digits of a decimal shape.
func fracDigits(shape uint32) int {
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

// scaledFloat is the float32 with bits b times 10^f, rounded to an
// integer: the digits of shape f. ok is false when they would not fit
// maxDigits digits (and for infinities and NaNs).
func scaledFloat(b uint32, f int) (m uint64, ok bool) {
	// The conversions round each product on its own: a multiply-add
	// fused into one instruction (arm64, amd64 v3) could round
	// differently and print other digits than the split measured.
	x := float64(math.Abs(float64(math.Float32frombits(b))) * pow10f[f])
	if !(x < 1e18) { // also NaN
		return 0, false
	}
	return uint64(x + 0.5), true
}

// appendDigits appends m as decimal digits, zero-padded to at least width
// digits, with a '.' before the last f of them when f > 0.
func appendDigits(dst []byte, m uint64, width, f int) []byte {
	var buf [2*maxDigits + 2]byte
	i := len(buf)
	n := 0
	if f > 0 {
		// the fraction digits, two at a time
		for ; n+1 < f; n += 2 {
			d := m % 100
			m /= 100
			i -= 2
			buf[i], buf[i+1] = digitPairs[2*d], digitPairs[2*d+1]
		}
		if n < f {
			i--
			buf[i] = byte('0' + m%10)
			m /= 10
			n++
		}
		i--
		buf[i] = '.'
	}
	for m >= 10 {
		d := m % 100
		m /= 100
		i -= 2
		buf[i], buf[i+1] = digitPairs[2*d], digitPairs[2*d+1]
		n += 2
	}
	if m > 0 || n == f { // m < 10 here; the integer part has at least one digit
		i--
		buf[i] = byte('0' + m)
		n++
	}
	for ; n < width; n++ {
		i--
		buf[i] = '0'
	}
	return append(dst, buf[i:]...)
}

// digitPairs spells 00 to 99.
const digitPairs = "00010203040506070809101112131415161718192021222324252627282930313233343536373839" +
	"4041424344454647484950515253545556575859606162636465666768697071727374757677787980818283848586878889" +
	"90919293949596979899"

// ndigits is the number of decimal digits of m (1 for 0).
func ndigits(m uint64) int {
	n := 1
	for m >= 10 {
		m /= 10
		n++
	}
	return n
}

// appendNum appends the text of n; false when n's value does not fit its
// shape (a corrupt stream).
func appendNum(dst []byte, n num) ([]byte, bool) {
	if n.float() {
		b, ok := ordFloat(n.val)
		if !ok {
			return dst, false
		}
		return appendFloat(dst, b, n.shape)
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

// appendFloat appends the float32 with bits b in float shape shape.
func appendFloat(dst []byte, b uint32, shape uint32) ([]byte, bool) {
	var m uint64
	var f int
	neg, ok := b>>31 != 0, false
	switch shape {
	case shapeShortest:
		x := math.Float32frombits(b)
		if math.IsInf(float64(x), 0) || math.IsNaN(float64(x)) || math.Abs(float64(x)) >= 1e18 {
			return dst, false
		}
		start := len(dst)
		dst = strconv.AppendFloat(dst, float64(x), 'f', -1, 32)
		if bytes.IndexByte(dst[start:], '.') < 0 {
			dst = append(dst, ".0"...)
		}
		return dst, true
	case shapeSig8:
		m, f, ok = roundSig(b, 8)
		m, f = trimZeros(m, f)
	case shapeR:
		// 9 digits, or 7 when those (rounded from the 9) read back
		m, f, ok = roundSig(b, 9)
		if m7, f7 := (m+50)/100, f-2; ok && f7 >= 1 && float32(float64(m7)/pow10f[f7]) == float32(math.Abs(float64(math.Float32frombits(b)))) {
			m, f = m7, f7
		}
		m, f = trimZeros(m, f)
	default:
		f = int(shape)
		m, ok = scaledFloat(b, f)
	}
	if !ok {
		return dst, false
	}
	if neg {
		dst = append(dst, '-')
	}
	return appendDigits(dst, m, 0, f), true
}

// trimZeros drops the trailing zeros of the digits m with f of them after
// the point, but the first after the point.
func trimZeros(m uint64, f int) (uint64, int) {
	for f > 1 && m%10 == 0 {
		m /= 10
		f--
	}
	return m, f
}

// roundSig is the float32 with bits b rounded to n significant digits, as
// the digits m with f of them after the point (at least one). ok is false
// for values this does not print within maxDigits digits.
func roundSig(b uint32, n int) (m uint64, f int, ok bool) {
	x := math.Abs(float64(math.Float32frombits(b)))
	if x == 0 {
		return 0, 1, true
	}
	if !(x < 1e7) || x < 1e-8 { // also NaN
		return 0, 0, false
	}
	// e: x in [10^e, 10^(e+1)), from the binary exponent, then corrected
	e := ((int(b>>23&0xff) - 127) * 1233) >> 12
	if e < -9 {
		e = -9
	}
	if x >= pow10e[e+1+9] {
		e++
	}
	if x < pow10e[e+9] {
		e--
	}
	f = n - 1 - e
	if f < 1 {
		f = 1
	}
	if f > maxDigits {
		return 0, 0, false
	}
	m = uint64(float64(x*pow10f[f]) + 0.5) // no fused multiply-add: see scaledFloat
	if m >= uint64(pow10f[n]) && f > 1 {   // rounded up to another power of ten
		f--
		m = uint64(float64(x*pow10f[f]) + 0.5)
	}
	return m, f, true
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
			if (b>>31 != 0) == (text[0] == '-') {
				var buf [2*maxDigits + 3]byte
				n := num{shape: decimalShape, val: floatOrd(b)}
				for i := len(floatStyles) - 1; i >= 0; i-- {
					if out, ok := appendFloat(buf[:0], b, floatStyles[i]); ok && bytes.Equal(out, text) {
						n.styles |= 1 << i
						n.shape = floatStyles[i]
					}
				}
				if out, ok := appendFloat(buf[:0], b, uint32(f)); ok && bytes.Equal(out, text) && n.styles == 0 {
					n.shape = uint32(f)
				}
				if n.shape != decimalShape {
					return n
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

// samePenalty is the bits a predSame predictor must save over the others
// to be chosen: its mode value costs about that much more to store.
const samePenalty = 24

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
	// the latest field before k with each value, on the first two lines:
	// a field equal to an earlier one is predicted from it
	var seen [2]map[numKey]int
	for i := range min(2, len(s.nums)) {
		seen[i] = make(map[numKey]int, len(s.nums[i]))
	}
	for k := range s.maxK {
		// the field's predictor: the one whose residuals need fewer bits
		var cands [4]uint64 // predPrev, predLinear, and up to two same-line ones
		nc := 2
		cands[0], cands[1] = predPrev, predLinear
		for i := range seen {
			if seen[i] != nil && k < len(s.nums[i]) {
				if j, ok := seen[i][keyOf(s.nums[i][k])]; ok && (nc == 2 || cands[2] != uint64(predSame+k-j-1)) {
					cands[nc] = uint64(predSame + k - j - 1)
					nc++
				}
			}
		}
		best, bestCost := uint64(predPrev), -1
		for _, mode := range cands[:nc] {
			cost := 0
			if mode >= predSame {
				cost = samePenalty
			}
			for i := range s.nums {
				if r, ok := s.residual(mode, i, k); ok {
					cost += mbits.Len64(zigzag(r))
				}
			}
			if bestCost < 0 || cost < bestCost {
				best, bestCost = mode, cost
			}
		}
		cols[ecMode] = binary.AppendUvarint(cols[ecMode], best)
		for i, ns := range s.nums {
			if k >= len(ns) {
				continue
			}
			if p := s.field(i-1, k); p != nil {
				ns[k].shape = keepStyle(ns[k], p.shape)
			}
			cols[ecShape] = binary.AppendUvarint(cols[ecShape], uint64(ns[k].shape))
			if best < predSame && ns[k].float() && s.field(i-1, k) == nil {
				b, _ := ordFloat(ns[k].val)
				for q := range 4 {
					cols[ecFloat0+q] = append(cols[ecFloat0+q], byte(b>>(24-8*q)))
				}
				continue
			}
			r, _ := s.residual(best, i, k)
			cols[ecVal] = binary.AppendUvarint(cols[ecVal], zigzag(r))
		}
		for i := range seen {
			if seen[i] != nil && k < len(s.nums[i]) {
				seen[i][keyOf(s.nums[i][k])] = k
			}
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

// numKey is what makes two numbers predict each other exactly: their
// value and their compatibility class.
type numKey struct {
	val   int64
	class int
}

func keyOf(n num) numKey {
	if n.float() {
		return numKey{n.val, -1}
	}
	return numKey{n.val, fracDigits(n.shape)}
}

// residual returns number k of line i minus its prediction by mode, and
// false when line i has no number k.
func (s *echoSplit) residual(mode uint64, i, k int) (int64, bool) {
	ns := s.nums[i]
	if k >= len(ns) {
		return 0, false
	}
	n := ns[k]
	if mode >= predSame {
		j := k - int(mode-predSame) - 1
		if compatible(n.shape, ns[j].shape) {
			return n.val - ns[j].val, true
		}
		return n.val, true
	}
	return n.val - predict(byte(mode), n.shape, s.field(i-1, k), s.field(i-2, k)), true
}

// keepStyle returns the shape of float n to store after a number of
// shape prev in the same field: prev's when n has it too, so that a
// field's shapes repeat.
func keepStyle(n num, prev uint32) uint32 {
	if !n.float() {
		return n.shape
	}
	for i, st := range floatStyles {
		if st == prev && n.styles&(1<<i) != 0 {
			return st
		}
	}
	return n.shape
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
	if r.off < len(r.b) && r.b[r.off] < 0x80 {
		r.off++
		return uint64(r.b[r.off-1]) // most shapes and many values are one byte
	}
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
	v1 := len(cols) == ecCountV1
	if v1 {
		cols = append(cols[:ecCountV1:ecCountV1], make([][]byte, ecCount-ecCountV1)...)
	}
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
	lines := make([]line, 0, len(cols[ecTpl])) // a line takes at least a byte of it
	size := 0                                  // native bytes so far, numbers not counted
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
	// each field's predictor, checked
	modes := make([]uint64, maxK)
	mr := echoReader{b: cols[ecMode], col: ecMode}
	for k := range modes {
		modes[k] = mr.uvarint()
		if mr.err == nil && modes[k] >= predSame && modes[k]-predSame >= uint64(k) {
			return nil, fmt.Errorf("%w: field %d predicted from field %d before it", errEchoColumns, k, modes[k]-predSame+1)
		}
	}
	if mr.err != nil {
		return nil, mr.err
	}
	if mr.off != len(mr.b) {
		return nil, fmt.Errorf("%w: %d predictor bytes left over", errEchoColumns, len(mr.b)-mr.off)
	}
	// values, field by field
	vals := make([]int64, nnums)
	shapes := make([]uint16, nnums)
	sr := echoReader{b: cols[ecShape], col: ecShape}
	vr := echoReader{b: cols[ecVal], col: ecVal}
	f0, f1, f2, f3 := cols[ecFloat0], cols[ecFloat1], cols[ecFloat2], cols[ecFloat3]
	nf := 0 // floats read from them
	for k := range maxK {
		mode := modes[k]
		same := int(mode-predSame) + 1 // for mode >= predSame
		p1, p2 := -1, -1               // the field's index on the lines before, -1 for none
		for _, l := range lines {
			if k >= l.nums {
				p1, p2 = -1, p1
				continue
			}
			shape := sr.uvarint()
			if sr.err != nil {
				return nil, sr.err
			}
			if shape > maxShape {
				return nil, fmt.Errorf("%w: field %d: shape %d", errEchoColumns, k, shape)
			}
			x := l.first + k
			sh := uint32(shape)
			if !v1 && mode < predSame && p1 < 0 && sh < decimalShape {
				if nf >= len(f0) || nf >= len(f1) || nf >= len(f2) || nf >= len(f3) {
					return nil, fmt.Errorf("%w: field %d: float streams end after %d floats", errEchoColumns, k, nf)
				}
				b := uint32(f0[nf])<<24 | uint32(f1[nf])<<16 | uint32(f2[nf])<<8 | uint32(f3[nf])
				nf++
				vals[x], shapes[x] = floatOrd(b), uint16(shape)
				p1, p2 = x, p1
				continue
			}
			res := vr.uvarint()
			if vr.err != nil {
				return nil, vr.err
			}
			var pred int64
			if mode >= predSame {
				if j := x - same; compatible(sh, uint32(shapes[j])) {
					pred = vals[j]
				}
			} else if p1 >= 0 && compatible(sh, uint32(shapes[p1])) {
				pred = vals[p1]
				if mode == predLinear && p2 >= 0 && compatible(sh, uint32(shapes[p2])) {
					pred = 2*vals[p1] - vals[p2]
				}
			}
			vals[x], shapes[x] = pred+unzigzag(res), uint16(shape)
			p1, p2 = x, p1
		}
	}
	if sr.off != len(sr.b) || vr.off != len(vr.b) {
		return nil, fmt.Errorf("%w: %d shape and %d value bytes left over", errEchoColumns, len(sr.b)-sr.off, len(vr.b)-vr.off)
	}
	if nf != len(f0) || nf != len(f1) || nf != len(f2) || nf != len(f3) {
		return nil, fmt.Errorf("%w: %d floats read, the float streams hold %d, %d, %d and %d", errEchoColumns, nf, len(f0), len(f1), len(f2), len(f3))
	}
	// render, line by line; a number as on the line before is copied
	offs := make([]int32, nnums)
	lens := make([]uint8, nnums)
	w := len(dst)
	out := slices.Grow(dst, size+nnums) // a number is a byte or more: a chunk-sized dst is kept
	// number x as text, copied from earlier on its line (field mode is
	// predSame and the value the same) or printed
	appendField := func(out []byte, x, k, i int) ([]byte, error) {
		if j := x - int(modes[k]-predSame) - 1; modes[k] >= predSame && vals[j] == vals[x] && shapes[j] == shapes[x] {
			o := int(offs[j])
			return append(out, out[o:o+int(lens[j])]...), nil
		}
		out, ok := appendNum(out, num{shape: uint32(shapes[x]), val: vals[x]})
		if !ok {
			return nil, fmt.Errorf("%w: field %d of line %d: value %d does not fit shape %d", errEchoColumns, k, i+1, vals[x], shapes[x])
		}
		return out, nil
	}
	var err error
	prevStart, prevEnd := 0, 0 // the previous line in out
	for i, l := range lines {
		lineStart := len(out)
		if i > 0 && l.start == lines[i-1].start && l.end == lines[i-1].end {
			// The previous line's template: its bytes, with the numbers
			// that changed printed anew. from is where the copying
			// stopped in the previous line; it maps to len(out).
			prev := lines[i-1]
			from := prevStart
			for k := range l.nums {
				x, p := l.first+k, prev.first+k
				if vals[p] == vals[x] && shapes[p] == shapes[x] {
					offs[x], lens[x] = int32(len(out)+int(offs[p])-from), lens[p]
					continue
				}
				out = append(out, out[from:offs[p]]...)
				start := len(out)
				if out, err = appendField(out, x, k, i); err != nil {
					return nil, err
				}
				offs[x], lens[x] = int32(start), uint8(len(out)-start)
				from = int(offs[p]) + int(lens[p])
			}
			out = append(out, out[from:prevEnd]...)
		} else {
			t := tplBuf[l.start:l.end]
			var prev line
			if i > 0 {
				prev = lines[i-1]
			}
			for k := 0; ; k++ {
				j := bytes.IndexByte(t, marker)
				if j < 0 {
					out = append(out, t...)
					break
				}
				out = append(out, t[:j]...)
				t = t[j+1:]
				x := l.first + k
				start := len(out)
				if p := prev.first + k; k < prev.nums && vals[p] == vals[x] && shapes[p] == shapes[x] {
					o := int(offs[p])
					out = append(out, out[o:o+int(lens[p])]...)
				} else if out, err = appendField(out, x, k, i); err != nil {
					return nil, err
				}
				offs[x], lens[x] = int32(start), uint8(len(out)-start)
			}
		}
		if len(out)-w > limit {
			return nil, fmt.Errorf("%w: more than %d bytes", errEchoColumns, limit)
		}
		prevStart, prevEnd = lineStart, len(out)
	}
	return out, nil
}
