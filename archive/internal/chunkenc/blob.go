// Package chunkenc encodes and decodes the stored forms of a recording's
// native bytes: the shard value of each chunk (a blob: whole, or split into
// streams by the format's column transform, each stream a zstd frame or a
// literals frame) and the catalog's heads record of its header and
// trailer. Its functions take the zstd encoder or decoder and the column
// transform as arguments: the archive keeps the pools, the shards and the
// catalog, and calls in, so these layouts are tested without an archive.
package chunkenc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"sync"

	"github.com/klauspost/compress/zstd"
	"github.com/replayarchive/replay/formats"
)

// Blob flags: the first byte of a shard value.
const (
	// FlagZstd: the payload is one zstd frame of the native bytes.
	FlagZstd = 1 << 0
	// FlagStreams: the blob is laid out by EncodeStreams.
	FlagStreams = 1 << 1
	// FlagRef: the value is a reference to a shared blob: FlagRef ‖ the
	// shared blob's chunk key (the archive's shared.go). Readers only
	// ever see the blob it names.
	FlagRef = 1 << 2
)

// crcTable is the CRC-32C of Checksum.
var crcTable = crc32.MakeTable(crc32.Castagnoli)

// Checksum returns the CRC-32C of b: a manifest's chunk entries hold it of
// the native bytes, against which Decode checks a blob.
func Checksum(b []byte) uint32 { return crc32.Checksum(b, crcTable) }

// Encode lays out a shard value: flags (bit 0: zstd) ‖ uvarint
// len(resume) ‖ resume ‖ payload, the payload native compressed by enc
// unless the codec marked it precompressed. (Chunks of formats with a
// transform are laid out by EncodeStreams instead, flag bit 1.)
//
// scratch is reused between calls to compress into; the returned blob is a
// fresh slice of exactly its size, since it is kept until the commit.
func Encode(enc *zstd.Encoder, scratch *[]byte, resume, native []byte, precompressed bool) []byte {
	flags := byte(0)
	if !precompressed {
		flags = FlagZstd
	}
	head := make([]byte, 0, 1+binary.MaxVarintLen64+len(resume))
	head = append(head, flags)
	head = binary.AppendUvarint(head, uint64(len(resume)))
	head = append(head, resume...)
	payload := native
	if !precompressed {
		*scratch = enc.EncodeAll(native, (*scratch)[:0])
		payload = *scratch
	}
	out := make([]byte, len(head)+len(payload))
	copy(out, head)
	copy(out[len(head):], payload)
	return out
}

// Decode reverses Encode and EncodeStreams with dec, checking that the
// native bytes are length long and, with crc set, that their CRC-32C
// (Checksum) is sum. col is the chunk's format's column transform, which a
// streams blob needs (ErrNoColumns without one). It decodes into dst when
// that is large enough (whole exports cycle a few buffers instead of
// allocating one per chunk); the native bytes never alias blob when dst is
// given.
//
// Without crc the CRC-32C of a zstd chunk is not checked: a whole export
// leaves it unset, since zstd checks its frame's content checksum (xxhash64
// of the native bytes) as it decodes, which names a corrupt chunk as the
// CRC would, and the sha256 of the whole file covers every byte once more
// (including a frame whose header lost its checksum flag). Precompressed
// chunks, which have no frame, and streams blobs, whose frames carry no
// checksum, are always checked.
func Decode(dec *zstd.Decoder, col formats.Columnar, blob []byte, length int64, sum uint32, dst []byte, crc bool) (native, resume []byte, err error) {
	if len(blob) < 2 {
		return nil, nil, errors.New("blob too short")
	}
	flags := blob[0]
	if flags != 0 && flags != FlagZstd && flags != FlagStreams {
		return nil, nil, fmt.Errorf("unknown blob flags %#x (written by a newer version?)", flags)
	}
	if flags == FlagStreams {
		native, resume, err = decodeStreams(dec, col, blob, length, dst[:0:cap(dst)])
		if err != nil {
			return nil, nil, err
		}
	} else {
		var k int
		resume, k, err = Resume(blob)
		if err != nil {
			return nil, nil, err
		}
		payload := blob[k:]
		switch {
		case flags&FlagZstd != 0:
			native, err = decodeZstd(dec, payload, length, dst)
			if err != nil {
				return nil, nil, err
			}
		case dst != nil:
			native = append(dst[:0], payload...)
		default:
			native = payload
		}
	}
	if int64(len(native)) != length {
		return nil, nil, fmt.Errorf("chunk holds %d bytes, index says %d", len(native), length)
	}
	if (crc || flags != FlagZstd) && Checksum(native) != sum {
		return nil, nil, errors.New("chunk checksum mismatch")
	}
	return native, resume, nil
}

// Resume returns the resume state of a blob laid out by Encode and the
// offset of its payload.
func Resume(blob []byte) ([]byte, int, error) {
	n, k := binary.Uvarint(blob[1:])
	if k <= 0 || n > uint64(len(blob)-1-k) {
		return nil, 0, errors.New("blob resume length out of range")
	}
	return blob[1+k : 1+k+int(n)], 1 + k + int(n), nil
}

// DecodeGrownTail reads the blob of a live recording's last chunk that a
// grow rewrote after the reader opened the recording: the new blob holds
// the chunk's archived bytes (length of them, of CRC-32C sum) as a prefix,
// which is what the reader gets.
func DecodeGrownTail(dec *zstd.Decoder, blob []byte, length int64, sum uint32) (native, resume []byte, err error) {
	if len(blob) < 2 || blob[0]&FlagZstd == 0 {
		return nil, nil, errors.New("grown tail chunk is not compressed")
	}
	var k int
	resume, k, err = Resume(blob)
	if err != nil {
		return nil, nil, err
	}
	native, err = dec.DecodeAll(blob[k:], nil)
	if err != nil {
		return nil, nil, err
	}
	if int64(len(native)) < length || Checksum(native[:length]) != sum {
		return nil, nil, errors.New("chunk checksum mismatch")
	}
	return native[:length], resume, nil
}

// decodeZstd decompresses a zstd frame whose decoded size must be want,
// into dst when it is large enough, with room to spare in the output
// buffer: zstd's fast decoding loops write up to 16 bytes past what they
// decode, and on a buffer without that room it falls back to a careful
// loop that took twice the time of a whole export.
func decodeZstd(dec *zstd.Decoder, blob []byte, want int64, dst []byte) ([]byte, error) {
	if want < 0 || want > formats.MaxChunkBytes {
		return nil, fmt.Errorf("recorded size %d is out of range (corrupt manifest?)", want)
	}
	// Pre-size for the recorded length, but not beyond 16 MiB: a corrupt
	// length must not buy a large allocation with a tiny blob.
	if int64(cap(dst)) < min(want, 16<<20)+decodeSlack {
		dst = make([]byte, 0, min(want, 16<<20)+decodeSlack)
	}
	out, err := dec.DecodeAll(blob, dst[:0])
	if errors.Is(err, zstd.ErrUnknownDictionary) {
		var h zstd.Header
		_ = h.Decode(blob)
		return nil, fmt.Errorf("%w %d: the archive's dictionary record is missing or damaged", err, h.DictionaryID)
	}
	if err != nil {
		return nil, err
	}
	if int64(len(out)) != want {
		return nil, fmt.Errorf("decoded %d bytes, want %d", len(out), want)
	}
	return out, nil
}

// decodeSlack is the spare capacity zstd's fast decoding loops need
// (compressedBlockOverAlloc in klauspost/compress), with a margin.
const decodeSlack = 64

// streamsBufs holds the buffers (*[]byte) decodeStreams decodes a chunk's
// streams into, and the archive's ReadChunk copies a streams blob into. A
// chunk read used to allocate one, 64 KiB and more for teehistorian, only
// to join it: a whole export page-faulted fresh memory for every chunk,
// and the collector ran for it. A sync.Pool, unlike the archive's encoder
// pools: a buffer is cheap to make again after a collection, and as many
// are in use as chunks are read at once, which has no bound to keep.
var streamsBufs sync.Pool

// GetBuffer returns a buffer from the pool decodeStreams draws on, with
// room for n bytes, so that a reader copying streams blobs shares it.
func GetBuffer(n int) *[]byte {
	bufp, _ := streamsBufs.Get().(*[]byte)
	if bufp == nil {
		bufp = new([]byte)
	}
	if cap(*bufp) < n {
		*bufp = make([]byte, 0, n)
	}
	return bufp
}

// PutBuffer gives back a buffer of GetBuffer that nothing points into.
func PutBuffer(bufp *[]byte) { streamsBufs.Put(bufp) }
