package replay_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/internal/crash"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
)

const uploadHelperEnv = "REPLAY_UPLOAD_KILLED_HELPER"

// killingReader gives its bytes and then kills the process, as a power
// cut in the middle of an upload would.
type killingReader struct{ r *bytes.Reader }

func (k killingReader) Read(p []byte) (int, error) {
	if k.r.Len() == 0 {
		crash.Self()
	}
	return k.r.Read(p)
}

// TestUploadKilledHelper is not a test: TestUploadKilledLeavesSpool runs
// the test binary again with it, and it dies in the middle of an upload,
// after 64 KiB have been spooled.
func TestUploadKilledHelper(t *testing.T) {
	dir := os.Getenv(uploadHelperEnv)
	if dir == "" {
		t.Skip("helper process for TestUploadKilledLeavesSpool")
	}
	x, err := replay.Open(dir, replay.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = x.IngestStream(context.Background(), "game.teehistorian", killingReader{bytes.NewReader(make([]byte, 64<<10))}, 0, replay.Actor{Name: "test"})
	t.Fatalf("the upload survived its kill: %v", err)
}

// An upload killed mid-way leaves its spool (<archive>/tmp/upload-*):
// check reports it and is not ok, the next writable open removes it and
// says so, and a later check is clean. An upload that completes leaves
// nothing.
func TestUploadKilledLeavesSpool(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "archive")
	cmd := exec.Command(os.Args[0], "-test.run=^TestUploadKilledHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), uploadHelperEnv+"="+dir)
	out, err := cmd.CombinedOutput()
	if !crash.Killed(err) {
		t.Fatalf("helper: %v, want killed; output:\n%s", err, out)
	}
	spools, _ := filepath.Glob(filepath.Join(dir, "tmp", "upload-*", "game.teehistorian"))
	if len(spools) != 1 {
		t.Fatalf("spools after the kill: %v, want the killed upload's", spools)
	}

	x, err := replay.Open(dir, replay.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := x.Check(t.Context(), archive.CheckOptions{})
	x.Close()
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK() || rep.Spools.Count != 1 || rep.Spools.Bytes < 64<<10 {
		t.Errorf("check after the kill: ok %v, spools %+v; want not ok, the one spool of at least 64 KiB", rep.OK(), rep.Spools)
	}

	x, err = replay.Open(dir, replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if sp := x.SpoolsRemovedAtOpen(); sp.Count != 1 || sp.Bytes < 64<<10 {
		t.Errorf("the writable open removed %+v, want the one spool", sp)
	}
	if _, err := os.Stat(filepath.Dir(spools[0])); !os.IsNotExist(err) {
		t.Errorf("the spool is still there after a writable open: %v", err)
	}
	if rep, err = x.Check(t.Context(), archive.CheckOptions{}); err != nil || !rep.OK() {
		t.Errorf("check after the open: %+v %v", rep, err)
	}

	game := teehistoriangen.Must(t, teehistoriangen.Options{Duration: 5 * time.Second, Players: 2, Seed: 1})
	res, _, err := x.IngestStream(t.Context(), "game.teehistorian", bytes.NewReader(game), 0, replay.Actor{Name: "test"})
	if err != nil || res.Err != "" {
		t.Fatalf("upload: %+v %v", res, err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "tmp", "upload-*")); len(left) != 0 {
		t.Errorf("a completed upload left %v", left)
	}
}
