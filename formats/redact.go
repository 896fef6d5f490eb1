// This file defines Redactor, the optional codec interface that writes a copy
// of an archived recording with its secrets taken out. Clips and exports
// handed to viewers go through it; whole originals are for admins only.

package formats

import (
	"context"
	"io"
)

// Redactor is implemented by codecs whose native files can carry secrets
// (reconnect codes, passwords typed into console commands, password config
// values copied into a header). A recording shared with people who must not
// learn those secrets (a viewer's clip, `export --redact`) is written through
// Redact instead of Clip or a byte copy of the original.
type Redactor interface {
	// Redact writes the ticks in r (r.IsAll() for the whole recording) of an
	// archived recording to w as a valid native file of the format, in which
	// every secret the codec knows of is replaced by a fixed placeholder. Apart
	// from the replaced secrets the file holds what Clip would give for the
	// same range: the same ticks, players and positions, readable by this
	// codec and by the format's own tools. The codec documents its list of
	// secrets.
	Redact(ctx context.Context, src Source, r Range, w io.Writer) error
}
