package server

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"
)

// A request's interactive mark ends at its answer's first byte, once.
func TestInteractiveMark(t *testing.T) {
	for _, first := range []func(*statusWriter){
		func(w *statusWriter) { w.WriteHeader(200) },
		func(w *statusWriter) { w.Write([]byte("{}")) },
	} {
		ended := 0
		w := &statusWriter{ResponseWriter: httptest.NewRecorder(), answering: func() { ended++ }}
		first(w)
		if ended != 1 {
			t.Errorf("the mark ended %d times at the first byte, want once", ended)
		}
		w.Write([]byte("\n"))
		w.answered() // as the deferred call does
		if ended != 1 {
			t.Errorf("the mark ended %d times, want once at the first byte", ended)
		}
	}
}

// A body's mark begins once its declared length is read, or at its end
// when none was declared; never while bytes are still to come.
func TestBodyThenMark(t *testing.T) {
	body := "0123456789"
	for _, declared := range []int64{10, -1} {
		began := 0
		b := &bodyThenMark{ReadCloser: io.NopCloser(iotest.OneByteReader(strings.NewReader(body))), left: declared, begin: func() { began++ }}
		buf := make([]byte, 4)
		read := 0
		for {
			n, err := b.Read(buf)
			read += n
			if read < len(body) && began != 0 {
				t.Fatalf("declared %d: the mark began after %d of %d bytes", declared, read, len(body))
			}
			if err != nil {
				break
			}
		}
		if began == 0 {
			t.Errorf("declared %d: the whole body read, the mark never began", declared)
		}
	}
}
