package server_test

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/formats/ddnetmap"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
	"github.com/replayarchive/replay/server"
	"github.com/replayarchive/replay/wire"
)

// decodeRuns is what a client does with a game layer's runs.
func decodeRuns(t *testing.T, g wire.GameLayer) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(g.Runs)
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	for len(b) > 0 {
		k := b[0]
		n, w := binary.Uvarint(b[1:])
		if w <= 0 {
			t.Fatalf("bad run at %d", len(out))
		}
		out = append(out, bytes.Repeat([]byte{k}, int(n))...)
		b = b[1+w:]
	}
	return out
}

// TestMapsAPI: a moderator adds a map, anyone signed in reads its game
// layer by sha256 or through a recording that names it; a viewer may
// not add; what is not a map is 422 with the reader's reason.
func TestMapsAPI(t *testing.T) {
	ts := start(t, server.Config{})
	viewer, err := ts.x.CreateToken(replay.LocalActor(), "v", replay.RoleViewer)
	if err != nil {
		t.Fatal(err)
	}
	mod, err := ts.x.CreateToken(replay.LocalActor(), "m", replay.RoleModerator)
	if err != nil {
		t.Fatal(err)
	}
	g := ddnetmap.GameLayer{Width: 12, Height: 9, Tiles: make([]byte, 108)}
	for x := range 12 {
		g.Tiles[x], g.Tiles[96+x] = ddnetmap.TileSolid, ddnetmap.TileSolid
	}
	g.Tiles[7*12+3], g.Tiles[7*12+4], g.Tiles[7*12+9] = ddnetmap.TileFreeze, ddnetmap.TileStart, 192 // 192: a spawn, "other"
	var mb bytes.Buffer
	if err := ddnetmap.Write(&mb, g); err != nil {
		t.Fatal(err)
	}
	oct := []string{"Content-Type", "application/octet-stream"}
	post := func(token string, body []byte) (int, []byte) {
		code, b, _ := ts.do("POST", "/api/v1/maps?name=test.map", token, bytes.NewReader(body), oct...)
		return code, b
	}
	if code, b := post(viewer, mb.Bytes()); code != http.StatusForbidden {
		t.Fatalf("a viewer's add: %d %s", code, b)
	}
	var added wire.Map
	code, b := post(mod, mb.Bytes())
	if code != http.StatusCreated || json.Unmarshal(b, &added) != nil || added.Existed || added.Width != 12 || added.Height != 9 {
		t.Fatalf("add: %d %s", code, b)
	}
	if code, b := post(mod, mb.Bytes()); code != http.StatusOK || !strings.Contains(string(b), `"existed":true`) {
		t.Fatalf("add again: %d %s", code, b)
	}
	if code, b := post(mod, []byte("GIF89a, not a map at all, but long enough for a header")); code != http.StatusUnprocessableEntity ||
		!strings.Contains(string(b), `"bad_map"`) || !strings.Contains(string(b), "magic") {
		t.Errorf("not a map: %d %s", code, b)
	}
	if code, b, _ := ts.do("POST", "/api/v1/maps", mod, &endless{n: replay.MaxMapBytes + 1}, oct...); code != http.StatusRequestEntityTooLarge {
		t.Errorf("an endless body: %d %.200s", code, b)
	}

	var list struct{ Maps []wire.Map }
	ts.want(http.StatusOK, "GET", "/api/v1/maps", viewer, nil, &list)
	if len(list.Maps) != 1 || list.Maps[0].SHA256 != added.SHA256 {
		t.Errorf("maps: %+v", list)
	}

	var gl wire.GameLayer
	ts.want(http.StatusOK, "GET", "/api/v1/maps/"+added.SHA256+"/game", viewer, nil, &gl)
	kinds := decodeRuns(t, gl)
	if gl.Width != 12 || gl.Height != 9 || gl.TileSize != 32 || len(kinds) != 108 {
		t.Fatalf("game layer %dx%d tile %d, %d tiles", gl.Width, gl.Height, gl.TileSize, len(kinds))
	}
	for i, idx := range g.Tiles {
		if k := ddnetmap.KindOf(idx); kinds[i] != byte(k) || gl.Kinds[k] != k.String() {
			t.Fatalf("tile %d: kind %d (%s), want %s", i, kinds[i], gl.Kinds[kinds[i]], k)
		}
	}
	code, _, hdr := ts.do("GET", "/api/v1/maps/"+added.SHA256+"/game", viewer, nil, "If-None-Match", `"map-`+added.SHA256+`"`)
	if code != http.StatusNotModified || !strings.Contains(hdr.Get("Cache-Control"), "immutable") {
		t.Errorf("revalidation: %d %v", code, hdr)
	}
	ts.want(http.StatusNotFound, "GET", "/api/v1/maps/"+strings.Repeat("0", 64)+"/game", viewer, nil, nil)
	ts.want(http.StatusBadRequest, "GET", "/api/v1/maps/nope/game", viewer, nil, nil)

	// Recordings: one on the map, one on a map not added.
	game := teehistoriangen.Must(t, teehistoriangen.Options{Players: 2, Seed: 5, Duration: 5e9})
	re := regexp.MustCompile(`"map_sha256":"[0-9a-f]{64}"`)
	upload := func(b []byte) string {
		var up struct{ ID string }
		ts.want(http.StatusCreated, "POST", "/api/v1/recordings?name=g.teehistorian", ts.owner, bytes.NewReader(b), &up)
		return up.ID
	}
	on := upload(re.ReplaceAll(game, []byte(`"map_sha256":"`+added.SHA256+`"`)))
	off := upload(game)
	var rg wire.GameLayer
	ts.want(http.StatusOK, "GET", "/api/v1/recordings/"+on+"/map", viewer, nil, &rg)
	if rg.SHA256 != added.SHA256 || rg.Runs != gl.Runs {
		t.Errorf("the recording's map: %s", rg.SHA256)
	}
	b = ts.want(http.StatusNotFound, "GET", "/api/v1/recordings/"+off+"/map", viewer, nil, nil)
	if !strings.Contains(string(b), `"no_map"`) || !strings.Contains(string(b), "not added") {
		t.Errorf("a map not added: %s", b)
	}
	ts.want(http.StatusNotFound, "GET", "/api/v1/recordings/"+strings.Repeat("f", 32)+"/map", viewer, nil, nil)

	var audit struct {
		Entries []struct{ Who, Action, Detail string }
	}
	ts.want(http.StatusOK, "GET", "/api/v1/audit", ts.owner, nil, &audit)
	found := 0
	for _, e := range audit.Entries {
		if e.Action == replay.AuditMapAdd && e.Who == "m" && strings.Contains(e.Detail, added.SHA256) {
			found++
		}
	}
	if found != 1 {
		t.Errorf("%d map-add audit entries by m, want 1: %+v", found, audit.Entries)
	}
}
