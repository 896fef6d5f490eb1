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

// TestFieldDrawn: an SC2 game's units are drawn inside a box of its map's
// size (Lost and Found LE, 168×168, as s2prot decodes it), the box
// outlined and square; an Echo VR capture is drawn on the arena, its
// outline 80 by 30 m and both goals at its ends. The outline's pixels
// are drawn, not only listed.
func TestFieldDrawn(t *testing.T) {
	corpus := filepath.Dir(formatstest.CorpusDir(t, "sc2replay"))
	files := map[string]string{
		"sc2replay": filepath.Join(corpus, "sc2replay", "lotv-4.7.1.70326-iaguz-vs-luneth.SC2Replay"),
		"milk":      filepath.Join(corpus, "butter", "example.milk"),
	}
	s := startServer(t, files["sc2replay"], files["milk"])
	ids := map[string]string{}
	if err := s.x.List(context.Background(), func(m *archive.Manifest) error { ids[m.Format] = m.ID.String(); return nil }); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, 1280, 900)
	tests := []struct {
		format string
		at     int64   // the tick shown
		field  string  // the canvas's data-field
		aspect float64 // the outline's width over its height
		shot   string
	}{
		{"sc2replay", 6608, // 4:55 at 22.4 loops a second
			"outline:map 168×168", 1, "screenshot-sc2-units.png"},
		{"milk", 790, "outline:arena 80 m × 30 m;line:;goal:blue goal;goal:orange goal", 80.0 / 30, "screenshot-echo-arena.png"},
	}
	for _, tt := range tests {
		t.Run(tt.format, func(t *testing.T) {
			b.t = t
			b.do("open", chromedp.Navigate(s.asOwner(fmt.Sprintf("/r/%s?t=%d", ids[tt.format], tt.at))))
			b.waitFor("the picture", `document.body.dataset.ready === 'recording' && +document.getElementById('trails').dataset.tracks > 0`)
			if got := eval[string](b, `document.getElementById('trails').dataset.field`); got != tt.field {
				t.Errorf("drawn %q, want %q", got, tt.field)
			}
			var x, y, w, h float64
			box := eval[string](b, `document.getElementById('trails').dataset.fieldBox || ''`)
			if _, err := fmt.Sscanf(box, "%g,%g,%g,%g", &x, &y, &w, &h); err != nil || h == 0 {
				t.Fatalf("outline box %q: %v", box, err)
			}
			if a := w / h; a < tt.aspect*0.97 || a > tt.aspect*1.03 {
				t.Errorf("outline %gx%g px: aspect %.2f, want %.2f", w, h, a, tt.aspect)
			}
			// The outline's pixels along its four sides are lighter than
			// the picture's background (#10161f) where nothing else is.
			lit := eval[int](b, fmt.Sprintf(`(() => {
				const c = document.getElementById('trails'), g = c.getContext('2d'), d = window.devicePixelRatio || 1;
				const [x, y, w, h] = [%g, %g, %g, %g];
				let n = 0;
				for (let i = 1; i < 20; i++) {
					for (const [px, py] of [[x + w * i / 20, y], [x + w * i / 20, y + h], [x, y + h * i / 20], [x + w, y + h * i / 20]]) {
						const p = g.getImageData(Math.round(px * d), Math.round(py * d), 1, 1).data;
						if (p[0] + p[1] + p[2] > 0x10 + 0x16 + 0x1f + 120) n++;
					}
				}
				return n;
			})()`, x, y, w, h))
			if lit < 60 {
				t.Errorf("%d of 76 points along the outline are drawn", lit)
			}
			inside := eval[bool](b, fmt.Sprintf(`(() => { const r = document.getElementById('trails').getBoundingClientRect(); return %g >= 0 && %g >= 0 && %g <= r.width && %g <= r.height; })()`, x, y, x+w, y+h))
			if !inside {
				t.Errorf("outline %s is not inside the picture", box)
			}
			if tt.format == "sc2replay" {
				if note := eval[string](b, `document.getElementById('trail-note').textContent`); !strings.Contains(note, "units, coloured by player") {
					t.Errorf("the picture's note says %q", note)
				}
			}
			b.do("scroll to the picture", chromedp.ScrollIntoView(chromedp.ID("trails")))
			b.docShot(`section[aria-labelledby="view-h"]`, tt.shot)
		})
	}
}
