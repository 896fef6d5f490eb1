package web_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/formats/formatstest"
)

// TestGhostAndBackwards: the demo's two parkour runs of one world; the
// slow run opened a second into its run, the fast one suggested (the
// map's other recording) and added as its ghost:
// the ghost's runner is drawn over the trails, aligned at the runs'
// starts, and a recording that is not there is refused in words. Then
// playback at −4× moves the moment backwards and stops at the start.
func TestGhostAndBackwards(t *testing.T) {
	demo := filepath.Join(formatstest.ModuleRoot(t), "cmd", "archivectl", "demodata")
	s := startServer(t, filepath.Join(demo, "parkour-slow.hcrp"), filepath.Join(demo, "parkour-fast.hcrp"))
	var ids []string
	if err := s.x.List(context.Background(), func(m *archive.Manifest) error { ids = append(ids, m.ID.String()); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(ids) != 2 {
		t.Fatalf("%d recordings, want the two runs", len(ids))
	}
	rec, err := s.x.Recording(ids[0])
	if err != nil {
		t.Fatal(err)
	}
	first, ok, err := s.x.FirstPosition(context.Background(), rec)
	if err != nil || !ok {
		t.Fatalf("first position: %v %v", ok, err)
	}
	at := first + 40
	b := newBrowser(t, 1400, 900)
	b.do("open the first run", chromedp.Navigate(s.asOwner("/r/"+ids[0]+"?t="+strconv.FormatInt(at, 10))))
	b.waitFor("the recording page", `document.body.dataset.ready === 'recording'`)
	if n := eval[string](b, `document.getElementById('trails').dataset.ghostTracks`); n != "0" {
		t.Fatalf("ghost tracks %q before a ghost was added", n)
	}

	// The field suggests the map's other run, fastest first.
	b.waitFor("the suggested run", `document.querySelectorAll('#ghost-runs option').length === 1`)
	if got := eval[string](b, `document.querySelector('#ghost-runs option').value`); got != ids[1][:8] {
		t.Errorf("the ghost suggested is %q, want %q", got, ids[1][:8])
	}

	b.do("a ghost that is not there", chromedp.SetValue(chromedp.ID("ghost-id"), "ffffffff"), chromedp.Click(chromedp.CSS(`#ghost-form button[type=submit]`)))
	b.waitFor("the refusal", `document.getElementById('ghost-note').textContent.startsWith('No ghost:')`)

	b.do("add the other run", chromedp.SetValue(chromedp.ID("ghost-id"), ids[1][:8]), chromedp.Click(chromedp.CSS(`#ghost-form button[type=submit]`)))
	b.waitFor("the ghost drawn", `+document.getElementById('trails').dataset.ghostTracks > 0`)
	if note := eval[string](b, `document.getElementById('ghost-note').textContent`); !strings.Contains(note, "aligned at the runs' starts") || !strings.Contains(note, ids[1][:8]) {
		t.Errorf("the ghost's note says %q", note)
	}
	if eval[bool](b, `document.getElementById('ghost-clear').hidden`) {
		t.Error("no Remove button with a ghost")
	}
	if *writeScreenshot {
		// docs/screenshot-ghost.png: go test ./web -run TestGhostAndBackwards -args -screenshot
		b.do("scroll to the picture", chromedp.ScrollIntoView(chromedp.ID("trails")))
		ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
		defer cancel()
		png, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS(`section[aria-labelledby="view-h"]`)))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(formatstest.ModuleRoot(t), "docs", "screenshot-ghost.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// Backwards: the moment goes down, and stops at the first tick.
	b.do("remove the ghost", chromedp.Click(chromedp.ID("ghost-clear")))
	b.waitFor("no ghost", `document.getElementById('trails').dataset.ghostTracks === '0'`)
	b.do("backwards at 4x", chromedp.SetValue(chromedp.ID("p-speed"), "-4"))
	eval[bool](b, `document.getElementById('p-speed').dispatchEvent(new Event('change'))`)
	b.do("play", chromedp.Click(chromedp.ID("p-play")))
	time.Sleep(100 * time.Millisecond)
	if tick := eval[int64](b, `+document.getElementById('trails').dataset.tick`); tick >= at {
		t.Errorf("playing backwards from tick %d: at tick %d", at, tick)
	}
	b.waitFor("back at the start, stopped", `document.getElementById('p-play').textContent === 'Play' && document.getElementById('trails').dataset.tick === '0'`)
}
