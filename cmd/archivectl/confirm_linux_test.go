//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
)

// openPTY returns the two ends of a new pseudo-terminal: what is written
// to master is read from slave, which is a terminal.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open a pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlock the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("name the pseudo-terminal: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open the pseudo-terminal's other end: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return m, s
}

// TestDeleteAsksThroughServer: while serve holds the archive, delete on a
// terminal asks there before the server takes the recording down, as it
// does without a server; "n" leaves the recording, "y" takes it down.
func TestDeleteAsksThroughServer(t *testing.T) {
	c := newCLI(t)
	game := filepath.Join(t.TempDir(), "game.teehistorian")
	f, err := os.Create(game)
	if err != nil {
		t.Fatal(err)
	}
	if err := teehistoriangen.Generate(f, teehistoriangen.Options{Duration: 10 * time.Second, Players: 2, Seed: 7}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	c.ok("ingest", game)
	var ls []struct{ ID string }
	if err := json.Unmarshal([]byte(c.ok("ls", "--json")), &ls); err != nil || len(ls) != 1 {
		t.Fatalf("ls --json: %v %+v", err, ls)
	}
	id := ls[0].ID

	serveArchive(t, c)

	for _, answer := range []string{"n", "y"} {
		master, tty := openPTY(t)
		if _, err := master.WriteString(answer + "\n"); err != nil {
			t.Fatal(err)
		}
		var out, errb bytes.Buffer
		code := run(context.Background(), []string{"--archive", c.dir, "delete", id[:8], "--reason", "test"}, tty, &out, &errb)
		if !strings.Contains(errb.String(), "take down "+id) || !strings.Contains(errb.String(), "[y/N]") {
			t.Errorf("answer %s: the prompt does not name the recording: %q", answer, errb.String())
		}
		_, _, shown := c.run("show", id)
		switch answer {
		case "n":
			if code == 0 || shown != 0 {
				t.Errorf("answered n: delete exit %d, show exit %d; want a failure and the recording kept", code, shown)
			}
		case "y":
			if code != 0 || shown != exitNotFound {
				t.Errorf("answered y: delete exit %d (%s), show exit %d; want it taken down", code, errb.String(), shown)
			}
		}
	}
}
