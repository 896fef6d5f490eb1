//go:build unix

package ingest

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/replayarchive/replay/formats/formatstest"
)

// A named pipe given by name is read (it was skipped), once; one met
// inside a directory is reported, not read: nothing may ever write to it.
func TestHostileFIFO(t *testing.T) {
	a := newArchive(t)
	p := &Pipeline{Archive: a, Codecs: hostileCodecs()}
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	file := formatstest.LinesFile("fifo-session", 25)
	done := make(chan error, 1)
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err == nil {
			_, err = f.Write(file)
			f.Close()
		}
		done <- err
	}()
	r := runAll(t, p, fifo)["pipe"]
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if r.Outcome != OutcomeIngested || r.NativeBytes != int64(len(file)) {
		t.Fatalf("fifo: %+v", r)
	}

	state := archiveState(t, a)
	if got := runAll(t, p, dir)["pipe"]; got.Outcome != OutcomeSkipped || !strings.Contains(got.Err, "named pipe") {
		t.Fatalf("fifo in a directory: %+v", got)
	}
	if after := archiveState(t, a); after != state {
		t.Fatalf("the archive changed:\n%s\nbecame\n%s", state, after)
	}
}
