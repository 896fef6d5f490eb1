// This file converts between float32 and IEEE binary16 ("half") the way the
// reference writer does: float32 → half truncates toward zero (the van der
// Zijp base/shift tables with no rounding step), half → float32 is exact.

package butter

import "math"

// halfTables are the base and shift tables of the truncating conversion,
// indexed by the sign and exponent bits (bits 23..31) of a float32.
type halfTables struct {
	base  [512]uint16
	shift [512]uint8
}

var halfTab = buildHalfTables()

func buildHalfTables() *halfTables {
	t := new(halfTables)
	for i := 0; i < 256; i++ {
		e := i - 127
		var b uint16
		var s uint8
		switch {
		case e < -24: // too small: zero
			b, s = 0, 24
		case e < -14: // denormals
			b, s = uint16(0x0400>>uint(-e-14)), uint8(-e-1)
		case e <= 15: // normals lose mantissa bits
			b, s = uint16((e+15)<<10), 13
		case e < 128: // too large: infinity
			b, s = 0x7C00, 24
		default: // infinity and NaN
			b, s = 0x7C00, 13
		}
		t.base[i], t.shift[i] = b, s
		t.base[i|0x100], t.shift[i|0x100] = b|0x8000, s
	}
	return t
}

// toHalf converts f to half bits, truncating toward zero like SystemHalf.
func toHalf(f float32) uint16 {
	bits := math.Float32bits(f)
	i := bits >> 23
	return halfTab.base[i] + uint16((bits&0x7FFFFF)>>halfTab.shift[i])
}

// fromHalf converts half bits to float32 exactly.
func fromHalf(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1F
	mant := uint32(h & 0x3FF)
	switch {
	case exp == 0:
		if mant == 0 {
			return math.Float32frombits(sign)
		}
		// denormal: normalise
		e := uint32(127 - 15 + 1)
		for mant&0x400 == 0 {
			mant <<= 1
			e--
		}
		mant &= 0x3FF
		return math.Float32frombits(sign | e<<23 | mant<<13)
	case exp == 0x1F:
		return math.Float32frombits(sign | 0x7F800000 | mant<<13)
	default:
		return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
	}
}
