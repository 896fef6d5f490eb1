// This file decompresses MPQ sectors: a compression-mask byte followed by
// zlib or bzip2 data, with output bounded by the size the block declares.

package mpq

import (
	"bytes"
	"compress/bzip2"
	"compress/zlib"
	"fmt"
	"io"
)

// decompress appends exactly n decompressed bytes of the sector src (mask
// byte first) to dst. The output grows only as the decoder produces data, so
// a forged size costs no more memory than the stream really expands to.
func decompress(dst, src []byte, n int) ([]byte, error) {
	if len(src) == 0 {
		return dst, fmt.Errorf("empty compressed sector")
	}
	var r io.Reader
	switch mask := src[0]; mask {
	case compZlib:
		zr, err := zlib.NewReader(bytes.NewReader(src[1:]))
		if err != nil {
			return dst, fmt.Errorf("zlib: %w", err)
		}
		defer zr.Close()
		r = zr
	case compBzip2:
		r = bzip2.NewReader(bytes.NewReader(src[1:]))
	default:
		return dst, fmt.Errorf("compression mask %#02x is not supported (only zlib 0x02 and bzip2 0x10)", mask)
	}
	end := len(dst) + n
	for len(dst) < end {
		if len(dst) == cap(dst) {
			grow := max(cap(dst), 4096)
			dst = append(dst[:cap(dst)], make([]byte, min(grow, end-len(dst)))...)[:len(dst)]
		}
		m, err := r.Read(dst[len(dst):min(cap(dst), end)])
		dst = dst[:len(dst)+m]
		if err == io.EOF {
			if len(dst) < end {
				return dst, fmt.Errorf("stream ended after %d of %d bytes", n-(end-len(dst)), n)
			}
			return dst, nil
		}
		if err != nil {
			return dst, err
		}
	}
	// The stream must end here; reading to the end also checks its checksum.
	var one [1]byte
	for {
		m, err := r.Read(one[:])
		if m > 0 {
			return dst, fmt.Errorf("stream holds more than the declared %d bytes", n)
		}
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst, err
		}
	}
}
