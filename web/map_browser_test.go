package web_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/formats/ddnetmap"
	"github.com/replayarchive/replay/formats/formatstest"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
)

// onMap writes a generated teehistorian file whose header names the map
// of sha256 sha (the generator's random one replaced, same length) and
// returns its path.
func onMap(t testing.TB, opt teehistoriangen.Options, sha string) string {
	t.Helper()
	var b bytes.Buffer
	if err := teehistoriangen.Generate(&b, opt); err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`"map_sha256":"[0-9a-f]{64}"`)
	if !re.Match(b.Bytes()) {
		t.Fatal("the generated header names no map_sha256")
	}
	path := filepath.Join(t.TempDir(), "game.teehistorian")
	if err := os.WriteFile(path, re.ReplaceAll(b.Bytes(), []byte(`"map_sha256":"`+sha+`"`)), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// checkTiles reads back, from the trails canvas, the centre pixel of up
// to 60 tiles in view and compares each with the colour of its kind
// (kindAt: the kind's name at tile x, y; "" for a tile drawn as the
// background). The page reports where it put the map (data-map-origin:
// canvas x and y of position 0,0 and pixels a position unit). Trails,
// labels and the faint grid cover a few tiles, so 80% must match.
func checkTiles(t *testing.T, b *browser, w, h int, kindAt func(x, y int) string) {
	t.Helper()
	type probe struct {
		X, Y int
		Kind string
	}
	origin := eval[[]float64](b, `document.getElementById('trails').dataset.mapOrigin.split(',').map(Number)`)
	x0, y0, s := origin[0], origin[1], origin[2]
	cw, ch := eval[float64](b, `document.getElementById('trails').clientWidth`), eval[float64](b, `document.getElementById('trails').clientHeight`)
	px := 32 * s
	var probes []probe
	for ty := range h {
		for tx := range w {
			cx, cy := x0+(float64(tx)+0.5)*px, y0+(float64(ty)+0.5)*px
			if cx < 4 || cy < 4 || cx > cw-4 || cy > ch-4 {
				continue
			}
			probes = append(probes, probe{int(cx), int(cy), kindAt(tx, ty)})
		}
	}
	if len(probes) < 10 {
		t.Fatalf("only %d tiles in view (origin %v)", len(probes), origin)
	}
	// Spread the probes over the view.
	step := max(1, len(probes)/60)
	var picked []probe
	for i := 0; i < len(probes); i += step {
		picked = append(picked, probe{probes[i].X, probes[i].Y, probes[i].Kind})
	}
	js := fmt.Sprintf(`(() => {
		const c = document.getElementById('trails'), g = c.getContext('2d'), dpr = window.devicePixelRatio || 1;
		const colors = %s, bg = [0x10, 0x16, 0x1f];
		const hex = (h) => [1, 3, 5].map((i) => parseInt(h.slice(i, i + 2), 16));
		let ok = 0;
		const bad = [];
		for (const p of %s) {
			const d = g.getImageData(Math.round(p[0] * dpr), Math.round(p[1] * dpr), 1, 1).data;
			const want = p[2] ? hex(colors[p[2]]) : bg;
			if (want.every((v, i) => Math.abs(v - d[i]) <= 16)) ok++;
			else bad.push(p.join(':') + '=' + Array.from(d.slice(0, 3)).join('/'));
		}
		return [ok, bad.slice(0, 5).join(' ')];
	})()`, colorsJS, probesJS(picked, func(p probe) (int, int, string) { return p.X, p.Y, p.Kind }))
	res := eval[[]any](b, js)
	ok := int(res[0].(float64))
	t.Logf("%d of %d tiles read back in their kind's colour (a tile is %.1f px)", ok, len(picked), px)
	if ok*5 < len(picked)*4 {
		t.Errorf("%d of %d tiles in their kind's colour; first misses (x:y:kind=r/g/b): %v", ok, len(picked), res[1])
	}
}

// colorsJS is the page's colours, read from its module.
const colorsJS = `window.__mapColors`

func probesJS[T any](ps []T, f func(T) (int, int, string)) string {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, p := range ps {
		x, y, k := f(p)
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "[%d,%d,%q]", x, y, k)
	}
	b.WriteByte(']')
	return b.String()
}

// loadColors puts the page's tile colours where checkTiles reads them.
func loadColors(b *browser) {
	b.t.Helper()
	eval[bool](b, `(import(document.querySelector('link[rel=modulepreload][href*="mapdraw.js"]').href).then((m) => { window.__mapColors = m.MAP_COLORS; }), true)`)
	b.waitFor("the map colours", `!!window.__mapColors`)
}

// TestMapUnderTrails: a teehistorian recording whose header names a map
// made by ddnetmap.Write, with the map added, draws its game layer under
// the trails: each tile in view reads back in its kind's colour at the
// place the trails' coordinates give it. A recording on a map not added
// draws the plain grid.
func TestMapUnderTrails(t *testing.T) {
	// Vertical bands five tiles wide: solid, freeze, air, death, air,
	// nohook, air, unfreeze, start, finish, over rows 0-59; the players
	// of the generator start at tiles 10-30 × 10-15 and wander.
	kinds := []struct {
		index byte
		name  string
	}{{ddnetmap.TileSolid, "solid"}, {ddnetmap.TileFreeze, "freeze"}, {0, ""}, {ddnetmap.TileDeath, "death"}, {0, ""},
		{ddnetmap.TileNoHook, "nohook"}, {0, ""}, {ddnetmap.TileUnfreeze, "unfreeze"}, {ddnetmap.TileStart, "start"}, {ddnetmap.TileFinish, "finish"}}
	const w, h = 80, 60
	band := func(x, y int) int { return (x/5 + y/20) % len(kinds) }
	g := ddnetmap.GameLayer{Width: w, Height: h, Tiles: make([]byte, w*h)}
	for y := range h {
		for x := range w {
			g.Tiles[y*w+x] = kinds[band(x, y)].index
		}
	}
	var mb bytes.Buffer
	if err := ddnetmap.Write(&mb, g); err != nil {
		t.Fatal(err)
	}
	mapFile := filepath.Join(t.TempDir(), "bands.map")
	if err := os.WriteFile(mapFile, mb.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, 1280, 800)
	opt := teehistoriangen.Options{Duration: time.Minute, Players: 4, Seed: 21}
	m, err := ddnetmap.Read(bytes.NewReader(mb.Bytes()), int64(mb.Len()))
	if err != nil {
		t.Fatal(err)
	}
	on := onMap(t, opt, m.SHA256Hex())
	opt.Seed = 22
	off := onMap(t, opt, m.SHA256Hex()[32:]+m.SHA256Hex()[:32])
	s := startServer(t, on, off)
	if _, err := s.x.AddMapFile(context.Background(), replay.Actor{Name: "test", Role: replay.RoleModerator}, mapFile); err != nil {
		t.Fatal(err)
	}
	var onID, offID string
	for id, sha := range recordingsByMap(t, s) {
		if sha == m.SHA256Hex() {
			onID = id
		} else {
			offID = id
		}
	}
	if onID == "" || offID == "" {
		t.Fatalf("the recordings on and off the map are not both archived (%q, %q)", onID, offID)
	}
	b.do("emulate", chromedp.EmulateViewport(1280, 800))
	rec, err := s.x.Recording(onID)
	if err != nil {
		t.Fatal(err)
	}
	at := rec.LastTick() / 2
	b.do("open", chromedp.Navigate(s.asOwner(fmt.Sprintf("/r/%s?t=%d", onID, at))))
	b.waitFor("the map under the trails", `document.body.dataset.ready === 'recording' && document.getElementById('trails').dataset.map === '`+m.SHA256Hex()+`'`)
	if n := eval[int](b, `+document.getElementById('trails').dataset.tracks`); n == 0 {
		t.Error("no trails over the map")
	}
	loadColors(b)
	checkTiles(t, b, w, h, func(x, y int) string { return kinds[band(x, y)].name })
	if !eval[bool](b, `!document.getElementById('map-legend').hidden && document.getElementById('map-legend').textContent.includes('freeze')`) {
		t.Error("no legend under the map")
	}

	b.do("open the other", chromedp.Navigate(s.asOwner(fmt.Sprintf("/r/%s?t=%d", offID, at))))
	b.waitFor("the other recording", `document.body.dataset.ready === 'recording'`)
	time.Sleep(300 * time.Millisecond) // a map answer that came late would redraw by now
	if eval[bool](b, `'map' in document.getElementById('trails').dataset`) {
		t.Error("a recording on a map not added drew a map")
	}
}

// recordingsByMap is every recording's id with the map_sha256 its header
// names.
func recordingsByMap(t testing.TB, s *testServer) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := s.x.List(context.Background(), func(m *archive.Manifest) error {
		out[m.ID.String()] = m.Meta.Attrs["map_sha256"]
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestMapTutorial: the corpus's Tutorial.teehistorian over its own map
// (Tutorial.map, the sha256 its header names), its walls read back in
// the wall colour. With -args -screenshot it writes
// docs/screenshot-map.png.
func TestMapTutorial(t *testing.T) {
	th := filepath.Join(formatstest.CorpusDir(t, "teehistorian"), "Tutorial.teehistorian")
	mapFile := filepath.Join(formatstest.CorpusDir(t, "maps"), "Tutorial.map")
	f, err := os.Open(mapFile)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := f.Stat()
	m, err := ddnetmap.Read(f, st.Size())
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, 1280, 800)
	s := startServer(t, th)
	if _, err := s.x.AddMapFile(context.Background(), replay.Actor{Name: "test", Role: replay.RoleModerator}, mapFile); err != nil {
		t.Fatal(err)
	}
	id := onlyID(t, s)
	b.do("emulate", chromedp.EmulateViewport(1280, 800))
	b.do("open", chromedp.Navigate(s.asOwner("/r/"+id+"?t=1500")))
	b.waitFor("the map under the trails", `document.body.dataset.ready === 'recording' && document.getElementById('trails').dataset.map === '`+m.SHA256Hex()+`'`)
	loadColors(b)
	checkTiles(t, b, m.Game.Width, m.Game.Height, func(x, y int) string {
		k := ddnetmap.KindOf(m.Game.At(x, y))
		if k == ddnetmap.KindAir || k == ddnetmap.KindOther {
			return ""
		}
		return k.String()
	})
	b.do("scroll to the picture", chromedp.ScrollIntoView(chromedp.ID("trails")))
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS(`section[aria-labelledby="view-h"]`)))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "screenshot-map.png")
	if *writeScreenshot {
		out = filepath.Join(formatstest.ModuleRoot(t), "docs", "screenshot-map.png")
	}
	if err := os.WriteFile(out, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s (%d bytes)", out, len(png))
}

// TestMapTimeToInteractive measures the recording page of a one-hour
// teehistorian file (16 players) on the Tutorial map (2210×110 tiles),
// added to the archive: from navigation until the page is usable and the
// map is drawn (the later of window.replayReadyAt and
// window.replayMapAt), against a blank page at the same moment, as
// TestRecordingPageTimeToInteractive does; the page's own time must stay
// within its 300 ms goal scaled by the load.
func TestMapTimeToInteractive(t *testing.T) {
	if testing.Short() {
		t.Skip("generates and ingests a one-hour recording")
	}
	mapFile := filepath.Join(formatstest.CorpusDir(t, "maps"), "Tutorial.map")
	const tutorial = "796a3716fe64657bfb8bc6af5f9422b197278919a9d875e43b9bbbcb73262fc0"
	path := onMap(t, teehistoriangen.Options{Duration: time.Hour, Players: 16, Seed: 14, Messages: true}, tutorial)
	b := newBrowser(t, 1280, 800)
	s := startServer(t, path)
	if _, err := s.x.AddMapFile(context.Background(), replay.Actor{Name: "test", Role: replay.RoleModerator}, mapFile); err != nil {
		t.Fatal(err)
	}
	id := onlyID(t, s)
	rec, err := s.x.Recording(id)
	if err != nil {
		t.Fatal(err)
	}
	mid := rec.LastTick() / 2
	b.do("emulate", chromedp.EmulateViewport(1280, 800))
	load := loadAverage()
	const pairs = 7
	var pages, blanks, own []float64
	for i := range pairs {
		b.do("open the blank page", chromedp.Navigate(fmt.Sprintf("%s/blank?%d", s.url, i)))
		b.waitFor("the blank page", `document.body.dataset.ready === 'blank'`)
		blank := eval[float64](b, `window.replayReadyAt`)
		tick := mid + int64(i)*1000
		b.do("open the recording", chromedp.Navigate(s.asOwner(fmt.Sprintf("/r/%s?t=%d", id, tick))))
		b.waitFor("the recording page with its map", `document.body.dataset.ready === 'recording' && !!window.replayMapAt`)
		ready, drawn := eval[float64](b, `window.replayReadyAt`), eval[float64](b, `window.replayMapAt`)
		page := max(ready, drawn)
		mapReq := eval[string](b, `(() => { const e = performance.getEntriesByType('resource').find((e) => e.name.endsWith('/map'));
			return e ? Math.round(e.startTime) + '+' + Math.round(e.duration) + ' ms, ' + Math.round(e.transferSize / 1024) + ' KiB' : 'none'; })()`)
		t.Logf("load %d: blank %.0f ms, page ready %.0f ms, map drawn %.0f ms (its request %s)", i, blank, ready, drawn, mapReq)
		// boot.js asked for the page's first answers while the page was
		// parsed: each was taken by the module that needs it (the same
		// URL), none sent twice.
		if left := eval[[]string](b, `[...window.replayEarly.keys()]`); len(left) > 0 {
			t.Errorf("load %d: boot.js's requests %q were not taken: the modules ask for other URLs", i, left)
		}
		if n := eval[int](b, `performance.getEntriesByType('resource').filter((e) => /\/api\/v1\/(whoami|recordings\/[^/?]+(\/(events|map|tracks)|$))/.test(e.name) && !/from=/.test(e.name)).length`); n != 5 {
			t.Errorf("load %d: %d requests for the page's first answers, want boot.js's 5", i, n)
		}
		if i > 0 {
			pages, blanks, own = append(pages, page), append(blanks, blank), append(own, page-blank)
		}
	}
	med := func(v []float64) float64 { v = slices.Clone(v); slices.Sort(v); return v[len(v)/2] }
	load = max(load, loadAverage())
	slow := max(1, load/float64(runtime.NumCPU()))
	t.Logf("one-hour teehistorian on the Tutorial map, %d reloads at load average %.1f on %d CPUs: usable with the map drawn min %.0f / median %.0f / max %.0f ms; blank page median %.0f ms; the page's own time median %.0f ms",
		len(pages), load, runtime.NumCPU(), slices.Min(pages), med(pages), slices.Max(pages), med(blanks), med(own))
	if limit := 300 * slow; med(own) > limit {
		t.Errorf("the recording page with its map is usable after %.0f ms of its own (median), over the 300 ms goal scaled by the load (%.0f ms at load average %.1f)", med(own), limit, load)
	}
}
