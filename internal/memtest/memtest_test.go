package memtest

import (
	"runtime"
	"testing"
)

// sink keeps buffers reachable until the test reads them, so that the
// compiler cannot drop or stack-allocate them.
var sink []byte

func TestPeakSeesABuffer(t *testing.T) {
	p := Peak(func() { sink = make([]byte, 32<<20); sink[0] = 1 })
	if p < 32<<20 || p > 40<<20 {
		t.Fatalf("peak %d for a 32 MiB buffer", p)
	}
	sink = nil
}

// Eight 8 MiB buffers one after another, each dropped and collected
// before the next: Allocated counts all 64 MiB, Peak one buffer.
func TestPeakIsNotTotal(t *testing.T) {
	var p uint64
	a := Allocated(func() {
		p = Peak(func() {
			for range 8 {
				sink = make([]byte, 8<<20)
				sink[0] = 1
				sink = nil
				runtime.GC()
			}
		})
	})
	if a < 64<<20 {
		t.Errorf("allocated %d bytes for eight 8 MiB buffers", a)
	}
	if p < 8<<20 || p > 16<<20 {
		t.Errorf("peak %d for one 8 MiB buffer at a time", p)
	}
}
