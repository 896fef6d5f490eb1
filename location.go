// Where a recording lives, as the library offers it.

package replay

import "github.com/replayarchive/replay/archive"

// Location says where recording m's chunks are (archive.LocationLocal,
// LocationRemote or LocationBoth), so ls, show and the API can tell what
// lives on this disk alone.
func (x *Archive) Location(m *archive.Manifest) string { return x.a.Location(m) }
