// This file holds the decoders' arena: the short slices of an entity's
// properties are cut from shared slabs, and strings are substrings of one
// copy of the decoded message, so decoding a frame costs a few allocations
// instead of one per property kind and string.

package vtx

// slabElems is how many elements a new slab holds (more when one request
// needs more).
const slabElems = 512

// slab hands out consecutive pieces of a backing array.
type slab[T any] struct{ buf []T }

// take returns an empty slice with capacity n. Appending beyond n
// reallocates, so pieces never overlap.
func (s *slab[T]) take(n int) []T {
	if cap(s.buf)-len(s.buf) < n {
		s.buf = make([]T, 0, max(n, slabElems))
	}
	l := len(s.buf)
	s.buf = s.buf[:l+n]
	return s.buf[l : l : l+n]
}

// arena holds the slabs of one decoder and the text of its message.
type arena struct {
	raw     []byte
	text    string // string(raw), made on first use
	hasText bool

	bools  slab[bool]
	i32    slab[int32]
	i64    slab[int64]
	u32    slab[uint32]
	u64    slab[uint64]
	f32    slab[float32]
	f64    slab[float64]
	strs   slab[string]
	vecs   slab[Vector]
	quats  slab[Quat]
	trs    slab[Transform]
	ranges slab[FloatRange]
}

// substr returns raw[pos:pos+n] as a string without copying it again.
func (a *arena) substr(pos, n int) string {
	if !a.hasText {
		a.text, a.hasText = string(a.raw), true
	}
	return a.text[pos : pos+n]
}

// take returns an empty slice with capacity n, cut from the slab of T when
// there is one; nil when n is 0.
func take[T any](a *arena, n int) []T {
	if n <= 0 {
		return nil
	}
	var s any
	switch any((*T)(nil)).(type) {
	case *bool:
		s = &a.bools
	case *int32:
		s = &a.i32
	case *int64:
		s = &a.i64
	case *uint32:
		s = &a.u32
	case *uint64:
		s = &a.u64
	case *float32:
		s = &a.f32
	case *float64:
		s = &a.f64
	case *string:
		s = &a.strs
	case *Vector:
		s = &a.vecs
	case *Quat:
		s = &a.quats
	case *Transform:
		s = &a.trs
	case *FloatRange:
		s = &a.ranges
	default:
		return make([]T, 0, n)
	}
	return s.(*slab[T]).take(n)
}
