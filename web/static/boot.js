// The first script the page runs, inline in its head while the HTML is
// still being parsed (web.go inlines it, allowed by its hash): it runs
// before the modules are compiled and evaluated. On a
// recording's page (/r/ID) it sends the requests the recording view makes
// first: who is signed in, the recording, its events, its map and, with a
// moment in the URL, the positions around it. Their answers are then on
// their way while the modules are evaluated; api.js takes each (takeEarly)
// instead of sending the same request again. The URLs must be the ones
// the modules ask for (main.js, recording.js, mapdraw.js, trails.js);
// TestMapTimeToInteractive checks that each was taken.
(() => {
  const m = /^\/r\/([^/]+)$/.exec(location.pathname);
  if (!m || typeof fetch !== 'function') return;
  let id;
  try {
    id = encodeURIComponent(decodeURIComponent(m[1]));
  } catch {
    return;
  }
  // The owner's login link carries the token in its fragment (main.js
  // stores it and takes it out of the address bar).
  let tok = sessionStorage.getItem('replay.token');
  if (location.hash.startsWith('#login=')) {
    try {
      tok = decodeURIComponent(location.hash.slice('#login='.length)).trim() || tok;
    } catch { /* main.js says what is wrong */ }
  }
  const rec = `/api/v1/recordings/${id}`;
  const urls = ['/api/v1/whoami', `${rec}/events?compact=1&limit=20000`, rec, `${rec}/map`];
  const t = parseInt(new URLSearchParams(location.search).get('t'), 10);
  if (isFinite(t) && t >= 0) urls.push(`${rec}/tracks?at=${t}&before=3s&after=500ms&field=1`);
  const early = new Map();
  for (const u of urls) {
    const p = fetch(u, { headers: tok ? { Authorization: 'Bearer ' + tok } : {} });
    p.catch(() => {}); // api.js sends it again
    early.set(u, p);
  }
  window.replayEarly = early;
  performance.mark('replay:boot');
})();
