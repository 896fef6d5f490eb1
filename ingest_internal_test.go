package replay

import (
	"bytes"
	"io"
	"testing"
	"testing/iotest"
)

// An upload's receipt takes a background turn each pacedPiece bytes, and
// passes every byte through.
func TestPacedReader(t *testing.T) {
	src := bytes.Repeat([]byte("0123456789abcdef"), (5*pacedPiece+100)/16)
	turns := 0
	pr := &pacedReader{r: iotest.OneByteReader(bytes.NewReader(src)), turn: func() func() { turns++; return func() {} }}
	got, err := io.ReadAll(pr)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, src) {
		t.Fatalf("read %d bytes, want the %d written", len(got), len(src))
	}
	if want := len(src) / pacedPiece; turns != want {
		t.Errorf("%d turns for %d bytes, want %d (one each %d bytes)", turns, len(src), want, pacedPiece)
	}
}
