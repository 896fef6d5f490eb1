// This file handles the blobs of a VTX file: each header, chunk and footer
// blob is either raw or one zstd frame, told apart by the zstd magic. Reading
// is bounded by a size limit checked against the frame's declared content
// size before anything is allocated, and that size by what the frame's
// bytes could hold (bounded.ZstdMaxOutput); writing follows the SDK's rule of
// compressing only blobs of at least 512 bytes, and only when that helps.

package vtx

import (
	"fmt"

	"github.com/klauspost/compress/zstd"
	"github.com/replayarchive/replay/internal/bounded"
)

// MinCompressSize is the smallest blob the SDK tries to compress.
const MinCompressSize = 512

// DefaultMaxBlobSize bounds a blob, compressed or decompressed, unless a
// Codec or Decoder sets its own limit. The SDK rolls chunks at 10 MiB.
const DefaultMaxBlobSize = 256 << 20

// Decoder decodes blobs and the messages in them, reusing one zstd decoder.
// It is not safe for concurrent use.
type Decoder struct {
	// MaxSize bounds a decompressed blob.
	MaxSize int64
	zd      *zstd.Decoder
}

// NewDecoder returns a Decoder whose blobs decompress to at most maxSize
// bytes (DefaultMaxBlobSize when maxSize <= 0).
func NewDecoder(maxSize int64) *Decoder {
	if maxSize <= 0 {
		maxSize = DefaultMaxBlobSize
	}
	return &Decoder{MaxSize: maxSize}
}

// Close releases the zstd decoder.
func (d *Decoder) Close() {
	if d.zd != nil {
		d.zd.Close()
		d.zd = nil
	}
}

// Unpack returns the serialized message in blob: blob itself when it is
// raw, its decompressed content when it is a zstd frame. The frame must
// declare its content size (the SDK's reader requires it) and that size must
// not exceed d.MaxSize.
func (d *Decoder) Unpack(blob []byte) ([]byte, error) {
	if !bounded.IsZstd(blob) {
		return blob, nil
	}
	var h zstd.Header
	if err := h.Decode(blob); err != nil {
		return nil, fmt.Errorf("zstd frame header: %w", err)
	}
	if !h.HasFCS {
		return nil, fmt.Errorf("zstd frame does not declare its content size")
	}
	if h.FrameContentSize > uint64(d.MaxSize) {
		return nil, fmt.Errorf("zstd frame declares %d bytes, more than the limit of %d", h.FrameContentSize, d.MaxSize)
	}
	// the output buffer is allocated from the declared size: first check
	// that the frame's bytes could hold that much at all
	if most := bounded.ZstdMaxOutput(int64(len(blob))); h.FrameContentSize > uint64(most) {
		return nil, fmt.Errorf("zstd frame of %d bytes declares %d bytes of content, more than %d bytes of zstd can hold", len(blob), h.FrameContentSize, most)
	}
	if d.zd == nil {
		zd, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderMaxMemory(uint64(d.MaxSize)), zstd.WithDecodeAllCapLimit(true))
		if err != nil {
			return nil, err
		}
		d.zd = zd
	}
	out, err := d.zd.DecodeAll(blob, make([]byte, 0, int(h.FrameContentSize)))
	if err != nil {
		return nil, fmt.Errorf("zstd: %w", err)
	}
	if uint64(len(out)) != h.FrameContentSize {
		return nil, fmt.Errorf("zstd frame declares %d bytes but holds %d", h.FrameContentSize, len(out))
	}
	return out, nil
}

// packer compresses blobs for the writer.
type packer struct {
	ze *zstd.Encoder
}

func newPacker(level int, compress bool) (*packer, error) {
	if !compress {
		return &packer{}, nil
	}
	if level == 0 {
		level = 10
	}
	ze, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1),
		zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(level)))
	if err != nil {
		return nil, err
	}
	return &packer{ze: ze}, nil
}

// pack applies the SDK's rule: blobs of at least MinCompressSize bytes are
// compressed when that makes them strictly smaller. EncodeAll always writes
// the frame content size.
func (p *packer) pack(raw []byte) []byte {
	if p.ze == nil || len(raw) < MinCompressSize {
		return raw
	}
	c := p.ze.EncodeAll(raw, make([]byte, 0, len(raw)/2))
	if len(c) < len(raw) {
		return c
	}
	return raw
}

func (p *packer) close() {
	if p.ze != nil {
		p.ze.Close()
	}
}
