// Cases: the moderators' list of open cases (/?cases), a case's page with
// its thread and the forms to add a note and change its status and
// assignee (/?case=ID), and a recording's cases on its page. (The URLs
// are the search page's path with a query: the server serves the page at
// "/" and "/r/ID" only.) Moderators'
// data only: for anyone else the page asks the API nothing about cases
// and shows no link to them (the API answers them 403 anyway).

import { $, el, wall, notice } from './util.js';
import { API, api, errText } from './api.js';
import { state, isMod } from './state.js';

const casesURL = (rest = '') => `${API}/cases${rest}`;

/** Shows the Cases link in the header to moderators and admins only. */
export function showCasesLink() {
  const a = $('cases-link');
  a.hidden = !isMod();
  a.style.color = '#fff'; // CSSOM, allowed by the page's CSP
}

/** Hides the cases' view (another view is shown). */
export function hideCases() {
  $('cases-view').hidden = true;
}

/** One line of a note: who and when. */
const noteHead = (n) => `${n.who} · ${wall(n.at)} UTC`;

/** Whether the URL is the cases' list or a case, and which. */
export function casesRoute() {
  if (location.pathname !== '/') return null;
  const p = new URLSearchParams(location.search);
  if (p.has('case')) return { id: p.get('case') };
  return p.has('cases') ? { id: '' } : null;
}

/** The URL of case id's page. */
export const caseHref = (id) => `/?case=${encodeURIComponent(id)}`;

/** Shows the cases' list or one case (casesRoute). */
export async function showCases(id) {
  $('search-view').hidden = true;
  $('rec-view').hidden = true;
  $('cases-view').hidden = false;
  $('cases-list-box').hidden = !!id;
  $('case-box').hidden = !id;
  $('cases-h').textContent = id ? 'Case' : 'Cases';
  document.title = `${id ? 'Case' : 'Cases'} · Replay archive`;
  const token = state.token;
  await state.whoReady;
  if (token !== state.token) return;
  if (!isMod()) {
    // Nothing about cases is asked for, or shown.
    $('cases-list-box').hidden = true;
    $('case-box').hidden = true;
    notice('Cases are for moderators: sign in with a moderator\'s token.');
    document.body.dataset.ready = 'cases';
    return;
  }
  if (id) await showCase(id, token);
  else await listCases(token);
  if (token === state.token) {
    document.body.dataset.ready = id ? 'case' : 'cases';
    window.replayReadyAt = performance.now();
  }
}

/** Fills the list of cases the filter asks for. */
async function listCases(token) {
  const p = new URLSearchParams(location.search);
  const status = p.has('status') ? p.get('status') : 'open';
  $('cs-status').value = status;
  $('cs-mine').checked = p.get('assignee') === 'me';
  const q = new URLSearchParams();
  if (status) q.set('status', status);
  if ($('cs-mine').checked) q.set('assignee', 'me');
  const tb = $('cases-table').tBodies[0];
  tb.replaceChildren();
  $('cases-empty').textContent = 'Loading…';
  let r;
  try {
    r = await api(casesURL(`?${q}`));
  } catch (e) {
    if (token === state.token) $('cases-empty').textContent = 'Could not load the cases: ' + errText(e);
    return;
  }
  if (token !== state.token) return;
  for (const c of r.cases) {
    const last = c.last_note ? el('span', {}, el('span', { class: 'muted', text: noteHead(c.last_note) + ': ' }), c.last_note.text) : el('span', { class: 'muted', text: 'no notes' });
    tb.append(el('tr', { dataset: { case: c.id } },
      el('td', { text: c.status }),
      el('td', { class: 'id' }, el('a', { href: `/r/${c.recording}${c.flag ? `?flag=${encodeURIComponent(c.flag)}` : ''}`, 'data-nav': true, title: c.recording, text: c.recording.slice(0, 8) + '…' }),
        c.flag ? el('span', { class: 'muted', text: ` ${c.flag}` }) : ''),
      el('td', { text: c.assignee || '—' }),
      el('td', { class: 'num', text: wall(c.updated) }),
      el('td', { class: 'text' }, last),
      el('td', {}, el('a', { href: caseHref(c.id), 'data-nav': true, text: 'Open', 'aria-label': `Open case ${c.id.slice(0, 8)}` }))));
  }
  $('cases-empty').textContent = r.cases.length ? '' : 'No cases here.';
}

// The list's filter is part of the URL. A change is a navigation of its
// own (state.token): a list still loading for the filter before is
// dropped when it comes, or both would add their rows.
function filterChanged() {
  const q = new URLSearchParams({ cases: '' });
  const s = $('cs-status').value;
  if (s !== 'open') q.set('status', s);
  if ($('cs-mine').checked) q.set('assignee', 'me');
  history.replaceState(history.state, '', `/?${q}`.replace('cases=&', 'cases&').replace(/cases=$/, 'cases'));
  const token = ++state.token;
  delete document.body.dataset.ready;
  listCases(token).then(() => {
    if (token === state.token) document.body.dataset.ready = 'cases';
  });
}
$('cs-status').addEventListener('change', filterChanged);
$('cs-mine').addEventListener('change', filterChanged);

// The case on show.
let current = null;

/** Fills a case's page. */
async function showCase(id, token) {
  current = null;
  $('case-meta').replaceChildren();
  $('case-thread').replaceChildren();
  $('case-msg').textContent = '';
  let c;
  try {
    c = await api(casesURL(`/${encodeURIComponent(id)}`));
  } catch (e) {
    if (token !== state.token) return;
    $('case-box').hidden = true;
    notice(errText(e));
    return;
  }
  if (token !== state.token) return;
  renderCase(c);
}

function renderCase(c) {
  current = c;
  $('cases-h').textContent = `Case ${c.id.slice(0, 8)} · ${c.status}`;
  const rec = el('a', { href: `/r/${c.recording}${c.flag ? `?flag=${encodeURIComponent(c.flag)}` : ''}`, 'data-nav': true, text: c.recording });
  const rows = [
    ['Status', c.status], ['Recording', rec], ['Assignee', c.assignee || 'nobody'],
    ['Opened', `${wall(c.opened)} UTC by ${c.opened_by}${c.flag ? `, by the flag ${c.flag}` : ', by hand'}`],
    ['Updated', `${wall(c.updated)} UTC`],
  ];
  const dl = $('case-meta');
  dl.replaceChildren();
  for (const [k, v] of rows) dl.append(el('dt', { text: k }), el('dd', {}, v));
  const ol = $('case-thread');
  ol.replaceChildren();
  for (const n of c.notes) {
    ol.append(el('li', { dataset: { note: n.id } }, el('div', { class: 'muted', text: noteHead(n) }), el('div', { class: 'text', text: n.text })));
  }
  if (!c.notes.length) ol.append(el('li', { class: 'muted', text: 'No notes yet' }));
  $('case-status').value = c.status;
  $('case-assignee').value = c.assignee || '';
}

$('case-note-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  const text = $('case-note').value.trim();
  if (!current || !text) return;
  try {
    renderCase(await api(casesURL(`/${current.id}/notes`), { method: 'POST', json: { text } }));
    $('case-note').value = '';
    $('case-msg').textContent = 'Note added';
  } catch (err) {
    $('case-msg').textContent = errText(err);
  }
});

$('case-edit-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  if (!current) return;
  const json = {};
  if ($('case-status').value !== current.status) json.status = $('case-status').value;
  const who = $('case-assignee').value.trim();
  if (who !== (current.assignee || '')) json.assignee = who;
  if (!Object.keys(json).length) { $('case-msg').textContent = 'Nothing changed'; return; }
  try {
    renderCase(await api(casesURL(`/${current.id}`), { method: 'PATCH', json }));
    $('case-msg').textContent = 'Saved';
  } catch (err) {
    $('case-msg').textContent = errText(err);
  }
});
$('case-me').addEventListener('click', () => { if (state.who) $('case-assignee').value = state.who.name; });

/** Clears the recording page's cases (a new recording is shown). */
export function clearRecCases() {
  $('rec-cases-panel').hidden = true;
  $('rec-cases').replaceChildren();
  $('rec-case-msg').textContent = '';
}

// The recording whose cases are shown.
let recID = '';

/** Shows a recording's cases on its page, to moderators only. */
export async function loadRecCases(id, token) {
  recID = id;
  if (!isMod()) return;
  let r;
  try {
    r = await api(casesURL(`?recording=${encodeURIComponent(id)}`));
  } catch (e) {
    if (token === state.token) $('rec-case-msg').textContent = 'Could not load the cases: ' + errText(e);
    return;
  }
  if (token !== state.token) return;
  const ul = $('rec-cases');
  ul.replaceChildren();
  for (const c of r.cases) {
    ul.append(el('li', { dataset: { case: c.id } },
      el('a', { href: caseHref(c.id), 'data-nav': true, text: `Case ${c.id.slice(0, 8)}` }),
      ` · ${c.status} · ${c.assignee || 'unassigned'}`,
      c.last_note ? el('div', { class: 'muted', text: `${noteHead(c.last_note)}: ${c.last_note.text}` }) : ''));
  }
  if (!r.cases.length) ul.append(el('li', { class: 'muted', text: 'No cases' }));
  $('rec-cases-panel').hidden = false;
}

$('rec-case-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  const note = $('rec-case-note').value.trim();
  try {
    await api(casesURL(), { method: 'POST', json: { recording: recID, note } });
    $('rec-case-note').value = '';
    $('rec-case-msg').textContent = 'Case opened';
    await loadRecCases(recID, state.token);
  } catch (err) {
    $('rec-case-msg').textContent = errText(err);
  }
});
