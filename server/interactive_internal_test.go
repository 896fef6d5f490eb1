package server

import (
	"net/http/httptest"
	"testing"
)

// A request's interactive mark ends at its answer's first byte, once, and
// only the routes a person waits on take one.
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
	for name, want := range map[string]bool{"search": true, "clip": true, "player": true, "show": true,
		"upload": false, "map-add": false, "push": false, "ingest": false, "reindex": false} {
		if got := interactive(name); got != want {
			t.Errorf("interactive(%q) = %v, want %v", name, got, want)
		}
	}
}
