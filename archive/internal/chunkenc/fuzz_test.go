package chunkenc

import (
	"testing"
)

// FuzzDecodeBlob feeds corrupt shard values and heads records to the
// decoders: a damaged archive file must give an error, never a panic or an
// allocation sized by a corrupt length.
func FuzzDecodeBlob(f *testing.F) {
	enc, dec := newEncoder(f, EncoderOptions()), newDecoder(f)
	var scratch []byte
	native := []byte("12 move 84\n13 move 91\n14 cmd kick 3\n")
	f.Add(Encode(enc, &scratch, []byte("resume"), native, false), int64(len(native)))
	f.Add(Encode(enc, &scratch, nil, native, true), int64(len(native)))
	f.Add(EncodeColumns(newEncoder(f, StreamEncoderOptions()), new(Chooser), thColumns, new([][]byte), new([]byte), []byte("resume"), native), int64(len(native)))
	f.Add(EncodeHeads(enc, []byte("header"), []byte("trailer")), int64(6))
	f.Add([]byte{1, 0xff, 0xff, 0xff, 0xff, 0x0f}, int64(1<<40))
	f.Fuzz(func(t *testing.T, blob []byte, length int64) {
		Decode(dec, thColumns, blob, length, 0, nil, true)
		DecodeHeads(dec, blob, length, 7)
	})
}
