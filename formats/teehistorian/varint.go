// This file implements the Teeworlds variable-width integer (CVariableInt):
// a sign bit and 6 data bits in the first byte, 7 data bits in each of up to
// four extension bytes, little-endian.

package teehistorian

// MaxVarintLen is the longest encoding of a 32-bit varint.
const MaxVarintLen = 5

// AppendVarint appends the canonical (shortest) encoding of v to b.
func AppendVarint(b []byte, v int32) []byte {
	u := uint32(v)
	var first byte
	if v < 0 {
		first = 0x40
		u = ^u
	}
	first |= byte(u & 0x3f)
	u >>= 6
	for u != 0 {
		b = append(b, first|0x80)
		first = byte(u & 0x7f)
		u >>= 7
	}
	return append(b, first)
}

// varintResult tells why readVarint stopped.
const (
	varintOK = iota
	varintShort
)

// readVarint decodes one varint from b. It returns the value, the number of
// bytes used, and varintShort when b ends inside the varint. Like DDNet's
// reader it accepts overlong encodings and ignores the upper four bits of a
// fifth byte.
func readVarint(b []byte) (v int32, n int, status int) {
	if len(b) == 0 {
		return 0, 0, varintShort
	}
	b0 := b[0]
	sign := uint32(b0>>6) & 1
	u := uint32(b0 & 0x3f)
	n = 1
	if b0&0x80 != 0 {
		shift := uint(6)
		for {
			if n >= len(b) {
				return 0, 0, varintShort
			}
			c := b[n]
			n++
			if n == MaxVarintLen {
				u |= uint32(c&0x0f) << shift
				break
			}
			u |= uint32(c&0x7f) << shift
			if c&0x80 == 0 {
				break
			}
			shift += 7
		}
	}
	u ^= -sign
	return int32(u), n, varintOK
}
