package teehistorian

import (
	"context"
	"errors"
	"io"

	"github.com/replayarchive/replay/formats"
)

// The teehistorian codec is a formats.Completer: a complete file ends with
// a FINISH record.
var _ formats.Completer = (*Codec)(nil)

// finishByte is the last byte of a file that ends with FINISH (the record
// type -1 as a varint).
const finishByte = 0x40

// MayBeComplete implements formats.Completer: only a file whose last byte
// is FINISH's can be complete.
func (*Codec) MayBeComplete(tail []byte) bool {
	return len(tail) > 0 && tail[len(tail)-1] == finishByte
}

// Complete implements formats.Completer: it reads the records up to
// FINISH. A file cut inside a record is not complete yet.
func (*Codec) Complete(ctx context.Context, r io.Reader) (bool, error) {
	rd, err := NewReader(r)
	if err != nil {
		return false, nil
	}
	for n := 0; ; n++ {
		if n&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return false, err
			}
		}
		if _, err := rd.Next(); errors.Is(err, io.EOF) {
			return rd.Finished(), nil
		} else if err != nil {
			return false, nil
		}
	}
}
