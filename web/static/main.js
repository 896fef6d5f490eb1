// The moderators' page: search, a recording's page with a timeline and the
// players' trails, and the moderation actions, all over the JSON API under
// /api/v1/. Plain JavaScript modules, no framework, no build step. This one
// signs the tab in and out and shows the view of the URL.

import { $, notice } from './util.js';
import { TOKEN_KEY, API, APIError, api, askToken, errText } from './api.js';
import { state } from './state.js';
import { onRoute, route } from './nav.js';
import { stop } from './moment.js';
import { leaveWatch } from './watch.js';
import { showSearch } from './search.js';
import { showRecording } from './recording.js';
import { casesRoute, showCases, hideCases, showCasesLink } from './cases.js';
import { showPlayer } from './player.js';
import { adminRoute, showAdmin, hideAdmin, showAdminLink } from './admin.js';
import { showUploadControls } from './upload.js';

/** Asks who is signed in and shows it. */
async function loadWho() {
  try {
    state.who = await api(`${API}/whoami`);
  } catch (e) {
    state.who = null;
    if (!(e instanceof APIError && e.status === 401)) notice('Could not ask who you are: ' + errText(e));
  }
  const signedIn = !!sessionStorage.getItem(TOKEN_KEY);
  $('who').textContent = state.who ? `${state.who.name} (${state.who.role})` : 'not signed in';
  $('signout').hidden = !signedIn;
  $('signin').hidden = !!state.who;
  showCasesLink();
  showAdminLink();
  showUploadControls();
}

onRoute(() => {
  stop();
  leaveWatch();
  state.token++;
  notice('');
  delete document.body.dataset.ready;
  const p = location.pathname;
  const params = new URLSearchParams(location.search);
  $('player-view').hidden = true;
  hideCases();
  hideAdmin();
  const cases = casesRoute();
  const admin = adminRoute();
  if (admin) {
    showAdmin(admin);
  } else if (cases) {
    showCases(cases.id);
  } else if (p.startsWith('/r/') && p.length > 3) {
    showRecording(decodeURIComponent(p.slice(3)));
  } else if (params.get('player') || params.get('pid') || params.get('pseudonym')) {
    showPlayer();
  } else {
    showSearch();
  }
});

// The login link 'archivectl serve' prints carries the owner's secret in
// the fragment (never sent to a server): keep it for this tab and take it
// out of the address bar and the history.
if (location.hash.startsWith('#login=')) {
  const t = decodeURIComponent(location.hash.slice('#login='.length)).trim();
  if (t) sessionStorage.setItem(TOKEN_KEY, t);
  history.replaceState(history.state, '', location.pathname + location.search);
}

$('signout').addEventListener('click', async () => {
  sessionStorage.removeItem(TOKEN_KEY);
  state.who = null;
  state.whoReady = loadWho();
  await state.whoReady;
  route();
});
$('signin').addEventListener('click', async () => {
  try { await askToken('Sign in with a token.'); } catch (e) { return; }
  state.whoReady = loadWho();
  await state.whoReady;
  route();
});
window.addEventListener('popstate', route);

// Who is signed in is asked once, next to the first view's own
// requests; the recording page waits for it before showing actions.
state.whoReady = loadWho().catch(() => {});
route();
