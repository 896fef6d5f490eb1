package web_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/formats/formatstest"
)

// TestShareMomentAndClip at 1400 px: the page opens at the tick its URL
// names; "Copy link to this moment" gives the absolute address of the
// selected tick, which opens the page there; a moderator's "Share clip"
// makes a link that a fresh browser, signed in to nothing, downloads the
// redacted clip of the selected range from; once revoked from the page,
// the link opens a page saying so.
func TestShareMomentAndClip(t *testing.T) {
	corpus := formatstest.CorpusDir(t, "teehistorian")
	s := startServer(t, corpus)
	original, err := os.ReadFile(filepath.Join(corpus, samiiID+".teehistorian"))
	if err != nil {
		t.Fatal(err)
	}
	codes := timeoutCodes(original)
	if len(codes) < 1 {
		t.Fatal("the corpus file has no timeout code to look for")
	}
	mod := s.token(t, "alice", replay.RoleModerator)
	b := newBrowser(t, 1400, 900)

	b.do("open at tick 300", chromedp.Navigate(s.url+"/r/"+samiiID+"?t=300"))
	b.signIn(mod, "alice (moderator)")
	b.waitFor("the recording at tick 300", `document.body.dataset.ready === 'recording' && document.getElementById('trails').dataset.tick === '300' && document.getElementById('pos').textContent.startsWith('Tick 300 ')`)
	b.do("jump to 400", chromedp.SetValue(chromedp.ID("jump-to"), "400"), chromedp.Click(chromedp.CSS(`#jump button`)))
	b.waitFor("tick 400", `document.getElementById('trails').dataset.tick === '400'`)

	b.do("copy the moment's link", chromedp.Click(chromedp.ID("copy-moment")))
	b.waitFor("the link shown", `document.getElementById('share-out').value !== ''`)
	moment := eval[string](b, `document.getElementById('share-out').value`)
	if want := s.url + "/r/" + samiiID + "?t=400"; moment != want {
		t.Errorf("the moment's link is %q, want %q", moment, want)
	}

	// Share the selected range (5 s around tick 400: 150-650, which holds
	// the timeout code at tick 170).
	if got := eval[string](b, `document.getElementById('r-from').value + '-' + document.getElementById('r-to').value`); got != "150-650" {
		t.Fatalf("the selected range is %s, want 150-650", got)
	}
	b.do("share the clip", chromedp.SetValue(chromedp.ID("share-expires"), "1h"), chromedp.Click(chromedp.ID("share-clip")))
	b.waitFor("the shared link", `document.getElementById('share-status').dataset.link && document.getElementById('share-out').value.includes('/s/')`)
	link := eval[string](b, `document.getElementById('share-out').value`)
	if !strings.HasPrefix(link, s.url+"/s/") {
		t.Fatalf("the shared link is %q, want %s/s/TOKEN", link, s.url)
	}
	b.waitFor("the link in the history", `!!document.querySelector('#audit tr[data-action=share-create]')`)
	ls, err := s.x.Shares()
	if err != nil || len(ls) != 1 || ls[0].From != 150 || ls[0].To != 650 || ls[0].By != "alice" || time.Until(ls[0].Expires) > time.Hour {
		t.Fatalf("the archive's links: %+v %v", ls, err)
	}

	// A fresh browser with no token downloads the clip.
	anon := newBrowser(t, 1400, 900)
	openLink := func() {
		ctx, cancel := context.WithTimeout(anon.ctx, 30*time.Second)
		defer cancel()
		// A download ends the navigation without a page: Chromium
		// answers net::ERR_ABORTED.
		if _, err := chromedp.Run(ctx, chromedp.Navigate(link)); err != nil && !strings.Contains(err.Error(), "ERR_ABORTED") {
			t.Fatalf("open the shared link: %v", err)
		}
	}
	openLink()
	name, clip := anon.download(".teehistorian")
	if !strings.Contains(name, "150-650-redacted") {
		t.Errorf("the shared clip is named %q, want ticks 150-650, redacted", name)
	}
	checkTeehistorian(t, name, clip)
	for _, c := range codes {
		if bytes.Contains(clip, []byte(c)) {
			t.Errorf("the shared clip holds the timeout code %q", c)
		}
	}

	// The moment's link opens the page at that tick.
	b.do("leave", chromedp.Navigate(s.url+"/blank"))
	b.do("open the moment's link", chromedp.Navigate(moment))
	b.waitFor("the recording at tick 400", `document.body.dataset.ready === 'recording' && document.getElementById('trails').dataset.tick === '400' && document.getElementById('pos').textContent.startsWith('Tick 400 ')`)

	// Revoked from the page (shared again first: the page shows the
	// revoke button for the link it just made).
	b.do("share again", chromedp.Click(chromedp.ID("share-clip")))
	b.waitFor("a second link", fmt.Sprintf(`document.getElementById('share-out').value.includes('/s/') && document.getElementById('share-out').value !== %q`, link))
	link = eval[string](b, `document.getElementById('share-out').value`)
	b.do("revoke it", chromedp.Click(chromedp.ID("share-revoke")))
	b.waitFor("revoked", `document.getElementById('share-status').textContent.includes('revoked')`)
	b.waitFor("the revocation in the history", `!!document.querySelector('#audit tr[data-action=share-revoke]')`)
	if _, err := s.x.OpenShare(link[strings.LastIndex(link, "/")+1:]); err == nil {
		t.Fatal("the archive still accepts the revoked link")
	}
	anon.do("open the revoked link", chromedp.Navigate(link))
	anon.waitFor("the refusal page", `document.getElementById('why') && document.getElementById('why').textContent.includes('revoked')`)
}
