package web_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/replayarchive/replay/formats/formatstest"
)

// hostilePage is what a page of another site tries against the archive
// at %[1]s while the owner is signed in to it in another tab: a text/plain
// form that prunes everything, no-cors fetches that ingest the server's
// disk and mint an admin token, and a read of the recordings.
const hostilePage = `<!doctype html><html><head><meta charset="utf-8"><title>cute cats</title></head><body>
<iframe name="sink" style="display:none"></iframe>
<form id="f" method="POST" action="%[1]s/api/v1/prune" enctype="text/plain" target="sink">
<input type="hidden" name='{"dry_run":false,"policy":{"max_bytes":1},"x":"' value='"}'>
</form>
<script>
(async () => {
  const T = %[1]q;
  const tries = [];
  // The form's answer loads into the hidden frame: its load says the
  // server has handled the form.
  const sink = document.querySelector('iframe[name=sink]');
  tries.push(new Promise((done) => sink.addEventListener('load', () => done('form answered'), { once: true })));
  document.getElementById('f').submit();
  const attempt = (p) => tries.push(p.then(() => 'sent', (e) => 'refused: ' + e));
  attempt(fetch(T + '/api/v1/prune', {method: 'POST', mode: 'no-cors', body: '{"dry_run":false,"policy":{"max_bytes":1}}'}));
  attempt(fetch(T + '/api/v1/ingest', {method: 'POST', mode: 'no-cors', body: '{"paths":["/"]}'}));
  attempt(fetch(T + '/api/v1/tokens', {method: 'POST', mode: 'no-cors', body: new Blob(['{"name":"evil","role":"admin"}'])}));
  attempt(fetch(T + '/api/v1/tokens', {method: 'POST', headers: {'Content-Type': 'application/json'}, body: '{"name":"evil2","role":"admin"}'}));
  let read = 'nothing';
  try { read = await (await fetch(T + '/api/v1/recordings')).text(); } catch (e) { read = 'refused: ' + e; }
  const results = await Promise.all(tries);
  document.body.dataset.read = read;
  document.body.dataset.results = results.join(' | ');
  document.body.dataset.done = '1';
})();
</script></body></html>`

// TestHostilePageCannotAct: the owner has the archive's page open and
// signed in; a page of another site, opened in the same browser, tries to
// prune, ingest, mint a token and read recordings. Nothing changes and
// nothing is read. A page whose own name resolves to this machine (DNS
// rebinding) is refused before anything is served.
func TestHostilePageCannotAct(t *testing.T) {
	corpus := formatstest.CorpusDir(t, "teehistorian")
	s := startServer(t, corpus)
	before, err := s.x.Search(t.Context(), "", 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(before.Hits) == 0 {
		t.Fatal("the corpus ingested no recordings")
	}

	hostile := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, hostilePage, s.url)
	}))
	defer hostile.Close()
	// The page is served as localhost, another site than 127.0.0.1.
	hostileURL := strings.Replace(hostile.URL, "127.0.0.1", "localhost", 1)

	b := newBrowser(t, 1024, 700, chromedp.Flag("host-resolver-rules", "MAP rebind.attacker.test 127.0.0.1"))
	b.do("the owner signs in", chromedp.Navigate(s.asOwner("/")))
	b.waitFor("signed in", `document.getElementById('who').textContent.endsWith('(admin)')`)
	b.do("open the hostile page", chromedp.Navigate(hostileURL+"/"))
	b.waitFor("its attempts", `document.body.dataset.done === '1'`)
	read := eval[string](b, `document.body.dataset.read`)
	if strings.Contains(read, `"hits"`) || !strings.HasPrefix(read, "refused") {
		t.Errorf("the hostile page read the recordings: %.200s", read)
	}
	if got := eval[string](b, `document.body.dataset.results`); strings.Count(got, "|") != 4 || !strings.HasPrefix(got, "form answered") {
		t.Fatalf("the hostile page's attempts did not all come back from the server: %q", got)
	}

	toks, err := s.x.Tokens()
	if err != nil {
		t.Fatal(err)
	}
	if len(toks) != 0 {
		t.Errorf("the hostile page minted tokens: %+v", toks)
	}
	after, err := s.x.Search(t.Context(), "", 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if after.Total != before.Total {
		t.Errorf("recordings: %d before the hostile page, %d after", before.Total, after.Total)
	}

	// DNS rebinding: a page under a name that resolves to this machine
	// reaches the server's port as a same-origin page would, and gets
	// nothing but the refusal.
	port := s.url[strings.LastIndex(s.url, ":"):]
	b.do("open a rebound name", chromedp.Navigate("http://rebind.attacker.test"+port+"/api/v1/recordings"))
	if body := eval[string](b, `document.body.innerText`); !strings.Contains(body, "unknown_host") {
		t.Errorf("a rebound name is served: %.200s", body)
	}
}
