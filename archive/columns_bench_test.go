package archive

import (
	"testing"
	"time"

	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
)

// BenchmarkDecodeChunk decodes one 64 KiB teehistorian chunk stored as
// record columns and as one zstd frame (the layout before).
//
//	go test -run '^$' -bench DecodeChunk ./archive/
func BenchmarkDecodeChunk(b *testing.B) {
	game := teehistoriangen.Must(b, teehistoriangen.Options{Duration: time.Minute, Seed: 3})
	native := game[len(game)-64<<10:]
	a, err := Open(b.TempDir(), Options{NoSync: true, Columns: map[string]formats.Columnar{"teehistorian": thColumns}})
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	enc, err := newColumnEncoder()
	if err != nil {
		b.Fatal(err)
	}
	e := ChunkEntry{Length: int64(len(native)), CRC: crc32c(native)}
	var scratch []byte
	for _, bc := range []struct {
		name string
		blob []byte
	}{
		{"columns", encodeStreamsBlob(enc, new(streamChooser), thColumns, new([][]byte), new([]byte), []byte("resume"), native)},
		{"whole", a.encodeBlob(&scratch, []byte("resume"), native, false)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(native)))
			dst := make([]byte, 0, len(native)+decodeSlack)
			for b.Loop() {
				if _, _, err := a.decodeBlobInto(bc.blob, e, "teehistorian", dst); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
