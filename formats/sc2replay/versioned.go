// This file checks the structure of s2protocol's versioned encoding before
// s2prot decodes it: s2prot sizes arrays and blobs from the lengths it reads
// without comparing them with the bytes left, so a forged length could ask
// for gigabytes. The versioned encoding describes itself, so a linear walk
// can prove every length fits before any allocation happens.

package sc2replay

import (
	"fmt"

	"github.com/replayarchive/replay/formats"
)

// maxVersionedDepth bounds nesting; real data nests fewer than 20 levels.
const maxVersionedDepth = 64

// checkVersioned walks the versioned-encoded value at the start of b, or
// with stream set every value up to the end (replay.tracker.events is values
// back to back). For the first value whose lengths do not fit in what
// remains it returns a *formats.Error at base, the file offset of the inner
// file's data, naming the position in the decoded stream.
func checkVersioned(b []byte, base int64, what string, stream bool) error {
	v := versionedWalker{b: b}
	for first := true; first || stream && v.pos < len(v.b); first = false {
		if err := v.value(0); err != nil {
			return &formats.Error{Format: Name, Offset: base,
				What: fmt.Sprintf("expected valid %s (at byte %d of the decoded stream)", what, v.pos), Err: err}
		}
	}
	return nil
}

type versionedWalker struct {
	b   []byte
	pos int
}

func (v *versionedWalker) left() int { return len(v.b) - v.pos }

func (v *versionedWalker) skip(n int64, of string) error {
	if n < 0 || n > int64(v.left()) {
		return fmt.Errorf("%s of %d bytes runs past the %d bytes left", of, n, v.left())
	}
	v.pos += int(n)
	return nil
}

// vint reads a variable-length integer: 6 value bits and a sign bit in the
// first byte, 7 value bits in each further byte, high bit = more follows.
func (v *versionedWalker) vint() (int64, error) {
	var u uint64
	for shift := uint(0); ; shift += 7 {
		if v.pos >= len(v.b) {
			return 0, fmt.Errorf("variable-length integer cut short")
		}
		if shift > 63 {
			return 0, fmt.Errorf("variable-length integer longer than 64 bits")
		}
		c := v.b[v.pos]
		v.pos++
		u |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			break
		}
	}
	n := int64(u >> 1)
	if u&1 != 0 {
		n = -n
	}
	return n, nil
}

// value walks one value: a skip byte naming its kind, then its content.
func (v *versionedWalker) value(depth int) error {
	if depth > maxVersionedDepth {
		return fmt.Errorf("values nested deeper than %d", maxVersionedDepth)
	}
	if v.pos >= len(v.b) {
		return fmt.Errorf("value cut short")
	}
	kind := v.b[v.pos]
	v.pos++
	switch kind {
	case 0: // array: length, then that many values (one byte at least each)
		n, err := v.vint()
		if err != nil {
			return err
		}
		if n < 0 || n > int64(v.left()) {
			return fmt.Errorf("array of %d values in %d bytes", n, v.left())
		}
		for i := int64(0); i < n; i++ {
			if err := v.value(depth + 1); err != nil {
				return err
			}
		}
	case 1: // bit blob: length in bits, then the bytes
		n, err := v.vint()
		if err != nil {
			return err
		}
		if n < 0 {
			return fmt.Errorf("bit blob of %d bits", n)
		}
		return v.skip((n+7)/8, "bit blob")
	case 2: // blob
		n, err := v.vint()
		if err != nil {
			return err
		}
		return v.skip(n, "blob")
	case 3: // choice: tag, then the value
		if _, err := v.vint(); err != nil {
			return err
		}
		return v.value(depth + 1)
	case 4: // optional: presence byte, then the value if present
		if v.pos >= len(v.b) {
			return fmt.Errorf("optional cut short")
		}
		present := v.b[v.pos] != 0
		v.pos++
		if present {
			return v.value(depth + 1)
		}
	case 5: // struct: field count, then tag and value per field
		n, err := v.vint()
		if err != nil {
			return err
		}
		if n < 0 || n > int64(v.left())/2 {
			return fmt.Errorf("struct of %d fields in %d bytes", n, v.left())
		}
		for i := int64(0); i < n; i++ {
			if _, err := v.vint(); err != nil {
				return err
			}
			if err := v.value(depth + 1); err != nil {
				return err
			}
		}
	case 6:
		return v.skip(1, "u8")
	case 7:
		return v.skip(4, "u32")
	case 8:
		return v.skip(8, "u64")
	case 9:
		_, err := v.vint()
		return err
	default:
		return fmt.Errorf("unknown value kind %d", kind)
	}
	return nil
}
