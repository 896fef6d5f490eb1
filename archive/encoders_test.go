package archive

import (
	"runtime"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/replayarchive/replay/archive/internal/chunkenc"
)

// The pool hands back the encoders it was given, keeps no more than
// maxIdleEncoders, and keeps them across a garbage collection (a sync.Pool
// did not).
func TestEncoderPool(t *testing.T) {
	p := encoderPool{opts: chunkenc.StreamEncoderOptions()}
	made := map[*zstd.Encoder]bool{}
	var out []*zstd.Encoder
	for range maxIdleEncoders + 1 {
		e, err := p.get()
		if err != nil {
			t.Fatal(err)
		}
		made[e] = true
		out = append(out, e)
	}
	if len(made) != maxIdleEncoders+1 {
		t.Fatalf("%d distinct encoders for %d gets on an empty pool", len(made), maxIdleEncoders+1)
	}
	for _, e := range out {
		p.put(e)
	}
	if len(p.idle) != maxIdleEncoders {
		t.Fatalf("pool keeps %d idle encoders, want %d", len(p.idle), maxIdleEncoders)
	}
	runtime.GC()
	runtime.GC()
	for range maxIdleEncoders {
		e, err := p.get()
		if err != nil {
			t.Fatal(err)
		}
		if !made[e] {
			t.Fatal("a get after a collection built a new encoder")
		}
		if got := e.EncodeAll([]byte("abcabcabc"), nil); len(got) == 0 {
			t.Fatal("reused encoder wrote nothing")
		}
	}
}
