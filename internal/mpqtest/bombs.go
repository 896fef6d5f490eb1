// The bombs themselves.

package mpqtest

import (
	"bytes"
	"compress/zlib"
	"io"
)

// ZlibZeros returns n zeros compressed with zlib behind the MaskZlib byte
// (a sector or single unit of a decompression bomb), made without holding
// n bytes.
func ZlibZeros(n int64) []byte {
	var buf bytes.Buffer
	buf.WriteByte(MaskZlib)
	zw, _ := zlib.NewWriterLevel(&buf, zlib.BestSpeed) // 4× faster than best, 25% bigger
	io.CopyN(zw, zeroReader{}, n)                      // neither side can fail
	zw.Close()
	return buf.Bytes()
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
