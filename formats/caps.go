package formats

// A Codec whose format cannot be cut into a valid shorter file says so by
// implementing this interface with CanClip returning false; its Clip then
// returns an error wrapping ErrClipUnsupported. Search hits, show and the
// API offer a clip only where CanClip is true, and the whole file or the
// frames otherwise.
type clipper interface {
	CanClip() bool
}

// CanClip reports whether c can write clips. Codecs can unless they say
// otherwise.
func CanClip(c Codec) bool {
	if cc, ok := c.(clipper); ok {
		return cc.CanClip()
	}
	return true
}
