// Sharing from a recording's page: a link to the selected moment (for
// anyone who may open the page), and, for moderators, a signed link to the
// selected range's redacted clip that anyone may download without a token
// until it expires (POST /api/v1/recordings/{id}/shares; docs/API.md).

import { $ } from './util.js';
import { api, recURL, errText, API } from './api.js';
import { state, isMod } from './state.js';
import { readRange } from './moment.js';
import { renderAudit } from './actions.js';

/** The absolute address of the recording's page at the selected tick. */
export function momentURL() {
  const u = new URL('/r/' + encodeURIComponent(state.rec.id), location.origin);
  u.searchParams.set('t', String(state.sel));
  return u.href;
}

/** Shows the share controls the role may use and the format allows. */
export function renderShare() {
  $('share-mod').hidden = !isMod() || !state.rec.can_clip;
  $('share-out-row').hidden = true;
  $('share-out').value = '';
  $('share-status').textContent = '';
  delete $('share-status').dataset.link;
}

/**
 * Puts text in the output field, selected, and copies it; where the
 * clipboard is refused it stays selected for Ctrl+C.
 */
async function offer(text, what) {
  const out = $('share-out');
  out.value = text;
  $('share-out-row').hidden = false;
  out.focus();
  out.select();
  try {
    await navigator.clipboard.writeText(text);
    $('share-status').textContent = `${what} copied.`;
  } catch (e) {
    $('share-status').textContent = `${what} is selected above: copy it with Ctrl+C.`;
  }
}

/** Shows the recording's history again: it has the link's entry now. */
async function refreshHistory() {
  try {
    const r = await api(recURL(state.rec.id, '/audit'));
    renderAudit(r.entries || []);
  } catch (e) {
    // The link was made; the history shows it at the next visit.
  }
}

$('copy-moment').addEventListener('click', () => {
  $('share-revoke').hidden = true;
  offer(momentURL(), 'The link to this moment');
});

$('share-clip').addEventListener('click', async () => {
  const [a, b] = readRange();
  const btn = $('share-clip');
  btn.disabled = true;
  try {
    const s = await api(recURL(state.rec.id, '/shares'), { method: 'POST', json: { from: String(a), to: String(b), expires: $('share-expires').value } });
    const url = new URL(s.path, location.origin).href;
    $('share-revoke').hidden = false;
    $('share-revoke').dataset.id = s.id;
    $('share-status').dataset.link = s.id;
    refreshHistory();
    await offer(url, `A link to ticks ${s.from}–${s.to} (redacted, until ${s.expires.replace('T', ' ').replace(/\..*|Z$/, '')} UTC)`);
  } catch (e) {
    $('share-status').textContent = 'Could not share the clip: ' + errText(e);
  } finally {
    btn.disabled = false;
  }
});

$('share-revoke').addEventListener('click', async () => {
  const id = $('share-revoke').dataset.id;
  try {
    await api(`${API}/shares/${encodeURIComponent(id)}`, { method: 'DELETE' });
    $('share-out-row').hidden = true;
    $('share-out').value = '';
    $('share-status').textContent = `Link ${id} revoked: it no longer opens.`;
    refreshHistory();
  } catch (e) {
    $('share-status').textContent = 'Could not revoke the link: ' + errText(e);
  }
});
