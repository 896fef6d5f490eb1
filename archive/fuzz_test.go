package archive

import (
	"testing"
)

// FuzzDecodeBlob feeds corrupt shard values and heads records to the
// decoders: a damaged archive file must give an error, never a panic or an
// allocation sized by a corrupt length.
func FuzzDecodeBlob(f *testing.F) {
	a := openTest(f, "", Options{Columns: thColumnSet})
	var scratch []byte
	native := []byte("12 move 84\n13 move 91\n14 cmd kick 3\n")
	f.Add(a.encodeBlob(&scratch, []byte("resume"), native, false), int64(len(native)))
	f.Add(a.encodeBlob(&scratch, nil, native, true), int64(len(native)))
	enc, err := newColumnEncoder()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(encodeStreamsBlob(enc, new(streamChooser), thColumns, new([][]byte), new([]byte), []byte("resume"), native), int64(len(native)))
	f.Add(a.encodeHeads([]byte("header"), []byte("trailer")), int64(6))
	f.Add([]byte{1, 0xff, 0xff, 0xff, 0xff, 0x0f}, int64(1<<40))
	f.Fuzz(func(t *testing.T, blob []byte, length int64) {
		a.decodeBlob(blob, ChunkEntry{Length: length}, "teehistorian")
		a.decodeHeads(blob, length, 7)
	})
}
