package server_test

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/archive/blob"
	"github.com/replayarchive/replay/server"
	"github.com/replayarchive/replay/wire"
)

// TestFileOfUnreadableRemoteRecording: GET /file of a recording whose
// remote object is gone answers an error before any 200, instead of a 200
// whose Content-Length the body never reaches.
func TestFileOfUnreadableRemoteRecording(t *testing.T) {
	store, err := blob.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ts := startWith(t, archive.Options{NoSync: true, Remote: store}, server.Config{MaxUpload: 64 << 20})
	x := ts.x

	tutorial := corpusFile(t, "Tutorial.teehistorian")
	var up wire.Upload
	ts.want(http.StatusCreated, "POST", "/api/v1/recordings?name=Tutorial.teehistorian", ts.owner, bytes.NewReader(tutorial), &up)
	if rep, err := x.Upload(t.Context(), replay.LocalActor(), archive.UploadOptions{AtOnce: true}); err != nil || rep.Recordings != 1 {
		t.Fatalf("upload: %+v, %v", rep, err)
	}
	err = store.List(t.Context(), "rec/", func(key string, _ int64) error { return store.Delete(t.Context(), key) })
	if err != nil {
		t.Fatal(err)
	}

	req, _ := http.NewRequest("GET", ts.url+"/api/v1/recordings/"+up.ID+"/file", nil)
	req.Header.Set("Authorization", "Bearer "+ts.owner)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, readErr := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusOK || readErr != nil || !bytes.Contains(body, []byte(`"code"`)) {
		t.Fatalf("file of a recording whose object is gone: %d, Content-Length %d, %d bytes read (%v): %.200s; want an error answer",
			resp.StatusCode, resp.ContentLength, len(body), readErr, body)
	}
}
