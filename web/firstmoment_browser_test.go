package web_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/formats/formatstest"
)

// TestOpensWherePlaced: a recording opened without a moment, whose first
// tick places nobody (a teehistorian game before its first player
// spawns), moves to the first tick at which anything is placed and draws
// it; a replay that places nothing (StarCraft II before tracker events)
// shows no empty picture and no playback controls, and says why.
func TestOpensWherePlaced(t *testing.T) {
	corpus := filepath.Join(formatstest.CorpusDir(t, "teehistorian"), "..")
	s := startServer(t,
		filepath.Join(corpus, "teehistorian", "7cee836b-aec8-44d9-9083-94d07d88bc05.teehistorian"),
		filepath.Join(corpus, "sc2replay", "wol-1.0.0.16117-froadac-vs-jdorty.SC2Replay"))
	ids := map[string]string{}
	if err := s.x.List(context.Background(), func(m *archive.Manifest) error { ids[m.Format] = m.ID.String(); return nil }); err != nil {
		t.Fatal(err)
	}
	rec, err := s.x.Recording(ids["teehistorian"])
	if err != nil {
		t.Fatal(err)
	}
	first, ok, err := s.x.FirstPosition(context.Background(), rec)
	if err != nil || !ok || first <= 0 {
		t.Fatalf("the game's first position: %d %v %v", first, ok, err)
	}
	b := newBrowser(t, 1400, 900)

	b.do("open the game", chromedp.Navigate(s.asOwner("/r/"+ids["teehistorian"])))
	b.waitFor("the first placed moment drawn", fmt.Sprintf(`document.getElementById('trails').dataset.tick === '%d' && +document.getElementById('trails').dataset.tracks > 0`, first))
	if eval[bool](b, `document.getElementById('trails').hidden`) {
		t.Error("the game's picture is hidden")
	}

	b.do("open the replay", chromedp.Navigate(s.asOwner("/r/"+ids["sc2replay"])))
	b.waitFor("the empty picture hidden", `document.body.dataset.ready === 'recording' && document.getElementById('trails').hidden`)
	if eval[bool](b, `!document.querySelector('[aria-label="Playback"]').hidden`) {
		t.Error("playback controls shown for a replay that places nothing")
	}
	if note := eval[string](b, `document.getElementById('trail-note').textContent`); !strings.Contains(note, "Nothing is placed") {
		t.Errorf("the note says %q", note)
	}

	// Back to the game: the picture is there again.
	b.do("open the game again", chromedp.Navigate(s.asOwner(fmt.Sprintf("/r/%s?t=%d", ids["teehistorian"], first+50))))
	b.waitFor("the game drawn", `document.body.dataset.ready === 'recording' && !document.getElementById('trails').hidden && +document.getElementById('trails').dataset.tracks > 0`)
}
