package formats

import "fmt"

// MaxChunkBytes bounds one chunk's native size. The archive reads a chunk
// whole into memory to verify and decompress it, so a codec must cut its
// chunks smaller than this (they are usually a few hundred KiB).
const MaxChunkBytes = 1 << 30

// CheckChunk checks one chunk a codec hands to Writer.Chunk against the
// contract every Writer relies on: c covers at least one tick, starts at a
// tick >= 0 after the start of prev (the chunk before it, nil for the first),
// and its nativeLen bytes are at most MaxChunkBytes. The archive and the
// formatstest writer both use it, so a codec's tests refuse what ingest
// would refuse.
func CheckChunk(prev *Chunk, c Chunk, nativeLen int) error {
	switch {
	case c.StartTick < 0:
		return fmt.Errorf("chunk at tick %d: negative start tick", c.StartTick)
	case c.Ticks <= 0:
		return fmt.Errorf("chunk at tick %d: tick count %d, expected at least 1", c.StartTick, c.Ticks)
	case prev != nil && c.StartTick <= prev.StartTick:
		return fmt.Errorf("chunk start tick %d does not follow %d", c.StartTick, prev.StartTick)
	case nativeLen < 0 || nativeLen > MaxChunkBytes:
		return fmt.Errorf("chunk at tick %d holds %d bytes, more than the %d a chunk may", c.StartTick, nativeLen, MaxChunkBytes)
	}
	return nil
}
