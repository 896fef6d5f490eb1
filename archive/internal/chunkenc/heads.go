package chunkenc

import (
	"encoding/binary"
	"fmt"

	"github.com/klauspost/compress/zstd"
)

// EncodeHeads builds the catalog's heads record of a recording's native
// header and trailer with enc: uvarint len(zstd header) ‖ zstd header ‖
// zstd trailer; an empty piece is stored as zero bytes.
func EncodeHeads(enc *zstd.Encoder, header, trailer []byte) []byte {
	var h, t []byte
	if len(header) > 0 {
		h = enc.EncodeAll(header, nil)
	}
	if len(trailer) > 0 {
		t = enc.EncodeAll(trailer, nil)
	}
	out := binary.AppendUvarint(nil, uint64(len(h)))
	out = append(out, h...)
	return append(out, t...)
}

// DecodeHeads reverses EncodeHeads with dec, checking the sizes the
// manifest gives.
func DecodeHeads(dec *zstd.Decoder, rec []byte, headerLen, trailerLen int64) (header, trailer []byte, err error) {
	n, k := binary.Uvarint(rec)
	if k <= 0 || n > uint64(len(rec)-k) {
		return nil, nil, fmt.Errorf("corrupt heads record")
	}
	h, t := rec[k:k+int(n)], rec[k+int(n):]
	if len(h) > 0 {
		if header, err = decodeZstd(dec, h, headerLen, nil); err != nil {
			return nil, nil, fmt.Errorf("header: %w", err)
		}
	}
	if len(t) > 0 {
		if trailer, err = decodeZstd(dec, t, trailerLen, nil); err != nil {
			return nil, nil, fmt.Errorf("trailer: %w", err)
		}
	}
	if int64(len(header)) != headerLen || int64(len(trailer)) != trailerLen {
		return nil, nil, fmt.Errorf("heads record holds %d+%d bytes, manifest says %d+%d", len(header), len(trailer), headerLen, trailerLen)
	}
	return header, trailer, nil
}
