// Tests of hostile input: lying sizes in tiny files cost no
// more memory than the file, with the default limits.

package vtx

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/replayarchive/replay/formats/formatstest"
	"github.com/replayarchive/replay/internal/memtest"
)

// TestZstdLyingContentSize: a frame of a few bytes declaring 200 MiB,
// under the default 256 MiB blob limit, is refused by what its bytes
// could hold, before the 200 MiB output buffer is allocated.
func TestZstdLyingContentSize(t *testing.T) {
	d := NewDecoder(0)
	defer d.Close()
	frame := zstdFrame(200<<20, []byte("tiny"))
	var err error
	peak := memtest.Peak(func() { _, err = d.Unpack(frame) })
	if err == nil || !strings.Contains(err.Error(), "zstd can hold") {
		t.Fatalf("err = %v", err)
	}
	if peak > 4<<20 {
		t.Fatalf("a %d-byte frame declaring 200 MiB held %d MiB", len(frame), peak>>20)
	}
}

// TestLyingChunkSize: a real header, then a chunk declaring 200 MiB
// with 100 bytes behind it, split with the default limits.
func TestLyingChunkSize(t *testing.T) {
	for _, b := range []Backend{Protobuf, FlatBuffers} {
		good, _ := genFile(t, b, 3, &WriterOptions{ChunkFrames: 2})
		hlen := 8 + int(binary.LittleEndian.Uint32(good[4:]))
		file := append([]byte{}, good[:hlen]...)
		file = binary.LittleEndian.AppendUint32(file, 200<<20)
		file = append(file, make([]byte, 100)...)
		var err error
		peak := memtest.Peak(func() { _, err = formatstest.TrySplit(Codec{}, file) })
		if err == nil || !strings.Contains(err.Error(), "declares 209715200 bytes but the file ends after 100") {
			t.Errorf("%v: err = %v", b, err)
		}
		if peak > 4<<20 {
			t.Errorf("%v: a 200 MiB claim over 100 bytes held %d MiB", b, peak>>20)
		}
	}
}
