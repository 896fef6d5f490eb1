// This file decompresses MPQ sectors: a compression-mask byte followed by
// zlib or bzip2 data, with output bounded by the size the block declares.

package mpq

import (
	"bytes"
	"compress/bzip2"
	"compress/zlib"
	"fmt"
	"io"
	"slices"
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
		out, err := bunzip(dst, src[1:], n, true)
		if err != nil && len(src) > 4 && src[4] != bzipLevel(n) {
			// Should the smaller work buffer ever be refused, the stream's
			// own level decides.
			out, err = bunzip(dst, src[1:], n, false)
		}
		return out, err
	default:
		return dst, fmt.Errorf("compression mask %#02x is not supported (only zlib 0x02 and bzip2 0x10)", mask)
	}
	return readN(dst, r, n)
}

// bzipLevel returns the smallest bzip2 level ('1'..'9') whose block holds n
// output bytes: the first compression stage (run-length encoding) grows data
// by at most 5/4, so a block of 5n/4 bytes suffices.
func bzipLevel(n int) byte {
	need := n + n/4 + 64
	return byte('0' + min(9, max(1, (need+99999)/100000)))
}

// bunzip decompresses the bzip2 stream src. The level digit of the "BZh"
// header only sizes the decoder's work buffer (4 bytes per block byte,
// 3.6 MB at level 9, allocated and cleared per reader); when shrink is set
// and n output bytes need a smaller block, the digit is lowered so small
// files do not pay for a 900 kB block. The stream's CRCs cover the output
// only, so they still verify it, and the decoder refuses a block that does
// not fit.
func bunzip(dst, src []byte, n int, shrink bool) ([]byte, error) {
	var r io.Reader = bytes.NewReader(src)
	if lvl := bzipLevel(n); shrink && len(src) >= 4 && string(src[:3]) == "BZh" && src[3] > lvl && src[3] <= '9' {
		r = io.MultiReader(bytes.NewReader([]byte{'B', 'Z', 'h', lvl}), bytes.NewReader(src[4:]))
	}
	return readN(dst, bzip2.NewReader(r), n)
}

// readN appends exactly n bytes from r to dst and checks that r ends there.
func readN(dst []byte, r io.Reader, n int) ([]byte, error) {
	end := len(dst) + n
	for len(dst) < end {
		if len(dst) == cap(dst) {
			// Double as data arrives; once it has produced an eighth of
			// the declared size, trust the size and grow to it at once,
			// which keeps the total allocated near n instead of 2n.
			grow := max(cap(dst), 4096)
			if 8*(len(dst)-end+n) >= n {
				grow = end - len(dst)
			}
			dst = slices.Grow(dst, min(grow, end-len(dst)))
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
