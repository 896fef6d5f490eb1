package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/formats/hcrp"
	"github.com/replayarchive/replay/internal/gen/hcrpgen"
	"github.com/replayarchive/replay/server"
	"github.com/replayarchive/replay/wire"
)

// hcrpCommits records a generated HCRP session as a segment set, as a
// Hollow Cube server does (a segment per commit, then preamble.dat
// replaced), and returns the directory's files after each commit (the
// last one with "finished"), and the set's directory.
func hcrpCommits(t *testing.T, seed uint64, ticks, every int) ([]map[string][]byte, string) {
	t.Helper()
	root := t.TempDir()
	s := hcrpgen.NewSession(hcrpgen.Config{Seed: seed, Ticks: ticks, Players: 3})
	o := s.Options()
	id := uuid.NewSHA1(uuid.NameSpaceOID, fmt.Appendf(nil, "pushset-%d", seed))
	r, err := hcrp.Create(root, id, o)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, id.String())
	snap := func() map[string][]byte {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string][]byte{}
		for _, e := range ents {
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			m[e.Name()] = b
		}
		return m
	}
	var commits []map[string][]byte
	for n := 1; ; n++ {
		ok, err := s.Step(r)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		if n%every == 0 {
			if err := r.Flush(); err != nil {
				t.Fatal(err)
			}
			commits = append(commits, snap())
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	return append(commits, snap()), dir
}

// pushReplace sends body whole with replace=1.
func (ts *testServer) pushReplace(token, source string, body []byte, final bool) (int, pushReply) {
	ts.t.Helper()
	path := "/api/v1/push/" + source + "?offset=0&replace=1"
	if final {
		path += "&final=1"
	}
	code, b, _ := ts.do("PUT", path, token, bytes.NewReader(body), "Content-Type", "application/octet-stream")
	var r pushReply
	if err := json.Unmarshal(b, &r); err != nil {
		ts.t.Fatalf("PUT %s: %d %v in %q", path, code, err, b)
	}
	return code, r
}

// TestPushSetRefusals: replace=1 is for a recording directory's header
// piece alone (a segment, the marker or a plain file is refused 400
// replace_refused; a header pushed by appending 400 replace_required),
// and bytes that are not an HCRP preamble are refused 422 bad_header,
// from offset 0 only; each refusal changes nothing.
func TestPushSetRefusals(t *testing.T) {
	ts := start(t, server.Config{})
	pusher := ts.token("gs1", replay.RolePusher)
	commits, _ := hcrpCommits(t, 1, 300, 100)
	pre := commits[0][hcrp.PreambleFile]
	const dir = "gs1/hcrp/set1"
	for _, c := range []struct {
		source string
		body   []byte
		status int
		code   string
	}{
		{dir + "/" + hcrp.SegmentName(0), commits[0][hcrp.SegmentName(0)], http.StatusBadRequest, replay.PushReplaceRefused},
		{dir + "/" + hcrp.FinishedFile, nil, http.StatusBadRequest, replay.PushReplaceRefused},
		{"gs1/teehistorian/game.teehistorian", []byte("x"), http.StatusBadRequest, replay.PushReplaceRefused},
		{dir + "/" + hcrp.PreambleFile, []byte("not a preamble at all"), http.StatusUnprocessableEntity, replay.PushBadHeader},
		{dir + "/" + hcrp.PreambleFile, pre[:len(pre)-1], http.StatusUnprocessableEntity, replay.PushBadHeader},
		{dir + "/" + hcrp.PreambleFile, append(bytes.Clone(pre), 0), http.StatusUnprocessableEntity, replay.PushBadHeader},
	} {
		code, r := ts.pushReplace(pusher, c.source, c.body, false)
		if code != c.status || r.Code != c.code {
			t.Errorf("replace %s (%d bytes): %d %+v, want %d %s", c.source, len(c.body), code, r, c.status, c.code)
		}
	}
	if code, r := ts.push(pusher, dir+"/"+hcrp.PreambleFile, 0, pre, false); code != http.StatusBadRequest || r.Code != replay.PushReplaceRequired {
		t.Errorf("a header pushed by appending: %d %+v", code, r)
	}
	code, _, _ := ts.do("PUT", "/api/v1/push/"+dir+"/"+hcrp.PreambleFile+"?offset=5&replace=1", pusher, bytes.NewReader(pre))
	if code != http.StatusBadRequest {
		t.Errorf("replace from offset 5: %d, want 400", code)
	}
	for _, name := range []string{hcrp.PreambleFile, hcrp.SegmentName(0), hcrp.FinishedFile} {
		if code, r := ts.pushState(pusher, dir+"/"+name); code != http.StatusOK || r.State != "new" || r.Have != 0 {
			t.Errorf("%s after the refusals: %d %+v", name, code, r)
		}
	}
	if _, err := os.Stat(filepath.Join(ts.x.Dir(), "push", "gs1", "hcrp", "set1")); err == nil {
		t.Error("the refusals left a mirror directory")
	}
}

// TestPushSet pushes an HCRP segment set file by file as an agent does:
// the header sent ahead of a segment it indexes waits (nothing archived,
// no error) until the segment arrives; each commit grows one live
// recording; the empty marker with final=1 seals it, byte-identical to
// a whole ingest of the directory with the same events; every source of
// the set ends sealed with the recording's id, the mirror directory is
// gone, and later pushes get the terminal answer.
func TestPushSet(t *testing.T) {
	ts := start(t, server.Config{})
	pusher := ts.token("gs1", replay.RolePusher)
	commits, setDir := hcrpCommits(t, 2, 900, 150)
	// The mirror's directory has the set's name, a UUID: the id.
	dir := "gs1/hcrp/" + filepath.Base(setDir)
	src := func(name string) string { return dir + "/" + name }
	mirror := filepath.Join(ts.x.Dir(), "push", filepath.FromSlash(dir))
	sent := map[string]int{}
	preSHA := ""
	var id string
	var held wire.Recording // the recording when the early header came
	for i, files := range commits {
		names := make([]string, 0, len(files))
		for name := range files {
			if strings.HasPrefix(name, "segment-") {
				names = append(names, name)
			}
		}
		// Commit 2's header goes before its segment: it waits.
		early := i == 2
		if early {
			code, r := ts.pushReplace(pusher, src(hcrp.PreambleFile), files[hcrp.PreambleFile], false)
			if code != http.StatusOK || !strings.HasPrefix(r.Note, "waiting: ") || r.State != "live" {
				t.Fatalf("commit %d: the header ahead of its segment: %d %+v", i, code, r)
			}
			if now := ts.recording(ts.owner, id); now.NativeBytes != held.NativeBytes || now.EventCount != held.EventCount {
				t.Fatalf("the early header grew the recording before its segment came: %d bytes, were %d", now.NativeBytes, held.NativeBytes)
			}
		}
		for _, name := range names {
			b := files[name]
			if len(b) > sent[name] {
				r := ts.pushOK(pusher, src(name), int64(sent[name]), b[sent[name]:], false)
				if r.Have != int64(len(b)) {
					t.Fatalf("%s: have %d, want %d", name, r.Have, len(b))
				}
				sent[name] = len(b)
			}
		}
		pre := files[hcrp.PreambleFile]
		if !early && sha(pre) == preSHA {
			continue
		}
		if early {
			// Its segment came: the header held grew the recording.
			if now := ts.recording(ts.owner, id); now.NativeBytes <= held.NativeBytes {
				t.Fatalf("the segment after the early header did not grow the recording: %d bytes, were %d", now.NativeBytes, held.NativeBytes)
			}
		}
		code, a := ts.pushReplace(pusher, src(hcrp.PreambleFile), pre, false)
		if code != http.StatusOK || a.State != "live" || a.ID == "" || a.Note != "" {
			t.Fatalf("commit %d: header: %d %+v", i, code, a)
		}
		preSHA, id = sha(pre), a.ID
		held = ts.recording(ts.owner, id)
		var g wire.Push
		ts.want(http.StatusOK, "GET", "/api/v1/push/"+src(hcrp.PreambleFile), pusher, nil, &g)
		if g.Piece != "header" || g.ContentSHA256 != preSHA || g.Have != int64(len(pre)) || g.State != "live" {
			t.Fatalf("commit %d: GET of the header: %+v", i, g)
		}
		if i == len(commits)-1 {
			break
		}
		// The same header again changes nothing.
		before := ts.recording(ts.owner, id)
		if code, a := ts.pushReplace(pusher, src(hcrp.PreambleFile), pre, false); code != http.StatusOK || a.State != "live" {
			t.Fatalf("the same header again: %d %+v", code, a)
		}
		if after := ts.recording(ts.owner, id); after.NativeBytes != before.NativeBytes || after.EventCount != before.EventCount {
			t.Fatalf("the same header again changed the recording")
		}
	}
	r := ts.pushOK(pusher, src(hcrp.FinishedFile), 0, nil, true)
	if r.State != "sealed" || r.ID != id {
		t.Fatalf("the marker: %+v", r)
	}
	rec := ts.recording(ts.owner, id)
	if rec.EventCount == 0 {
		t.Fatal("the sealed recording has no events")
	}
	got := ts.fileOf(ts.owner, id)
	set, err := hcrp.OpenSegmentSet(setDir)
	if err != nil {
		t.Fatal(err)
	}
	want, err := io.ReadAll(set)
	set.Close()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("the sealed recording is %d bytes, the set's stream %d: not byte-identical", len(got), len(want))
	}
	other := start(t, server.Config{})
	if err := other.x.Ingest(t.Context(), []string{setDir}, replay.IngestOptions{}, nil); err != nil {
		t.Fatal(err)
	}
	if id != filepath.Base(setDir) {
		t.Errorf("the recording is %s, not the set's name %s", id, filepath.Base(setDir))
	}
	if ref := other.recording(other.owner, id); ref.EventCount != rec.EventCount || ref.SHA256 != rec.SHA256 {
		t.Fatalf("events %d sha %s, a whole ingest's %d %s", rec.EventCount, rec.SHA256, ref.EventCount, ref.SHA256)
	}
	for name := range commits[len(commits)-1] {
		code, g := ts.pushState(pusher, src(name))
		if code != http.StatusOK || g.State != "sealed" || g.ID != id {
			t.Errorf("%s after the seal: %d %+v", name, code, g)
		}
	}
	if _, err := os.Stat(mirror); err == nil {
		ents, _ := os.ReadDir(mirror)
		t.Errorf("the mirror directory is still there: %v", ents)
	}
	// After the seal: the same bytes are answered, more are refused.
	seg := commits[len(commits)-1][hcrp.SegmentName(0)]
	if r := ts.pushOK(pusher, src(hcrp.SegmentName(0)), 0, seg, false); r.State != "sealed" {
		t.Errorf("a segment resent after the seal: %+v", r)
	}
	if code, r := ts.push(pusher, src(hcrp.SegmentName(0)), int64(len(seg)), []byte{1}, false); code != http.StatusConflict || r.Code != "sealed" {
		t.Errorf("a segment grown after the seal: %d %+v", code, r)
	}
	if code, r := ts.pushReplace(pusher, src(hcrp.PreambleFile), commits[0][hcrp.PreambleFile], false); code != http.StatusOK || r.State != "sealed" {
		t.Errorf("a header resent after the seal: %d %+v", code, r)
	}
}
