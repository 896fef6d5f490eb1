// The actions panel by role: downloads, flags, hold, takedown (each
// through a confirmation dialog), and the flags and history it changes.

import { $, el, wall, offset, notice } from './util.js';
import { api, recURL, errText } from './api.js';
import { state, isMod, isAdmin, timeAt } from './state.js';
import { go } from './nav.js';
import { download } from './download.js';
import { readRange } from './moment.js';
import { drawTimeline, seekFlag } from './timeline.js';
import { loadRecCases } from './cases.js';
import { renderShare } from './share.js';

/** Shows the flags and the hold, with the controls the role may use. */
export function renderMarks() {
  const r = state.rec;
  const ul = $('flags');
  ul.replaceChildren();
  const flags = r.flags || [];
  for (const f of flags) {
    const li = el('li', { dataset: { flag: f.name } }, el('strong', { text: f.name }));
    if (f.range) {
      const span = `${offset(timeAt(f.range.from))}–${offset(timeAt(f.range.to))}`;
      li.append(' at ', el('button', { type: 'button', class: 'flag-go', text: span, title: `Ticks ${f.range.from}–${f.range.to}`,
        'aria-label': `Go to flag ${f.name} at ${span}`, onclick: () => seekFlag({ name: f.name, from: f.range.from, to: f.range.to }) }));
    }
    li.append(f.note ? ` — ${f.note}` : '', f.at ? el('span', { class: 'muted', text: ` (${wall(f.at)} UTC)` }) : '');
    if (isMod()) {
      li.append(' ', el('button', { type: 'button', class: 'unflag', text: 'Remove…', 'aria-label': `Remove flag ${f.name}`, onclick: () => unflag(f.name) }));
    }
    ul.append(li);
  }
  for (const f of r.file_flags || []) {
    if (!flags.some((x) => x.name === f)) ul.append(el('li', {}, el('strong', { text: f }), el('span', { class: 'muted', text: ' (in the file)' })));
  }
  if (!ul.children.length) ul.append(el('li', { class: 'muted', text: 'No flags' }));
  $('hold').textContent = r.hold ? `Held: ${r.hold.reason || 'no reason given'}${r.hold.at ? ` (${wall(r.hold.at)} UTC)` : ''}` : 'Not held';
  $('do-hold').hidden = !!r.hold;
  $('do-release').hidden = !r.hold;
}

/** Shows the recording's history, newest first. */
export function renderAudit(entries) {
  const tb = $('audit').tBodies[0];
  tb.replaceChildren();
  const list = entries.slice().sort((a, b) => (b.seq || 0) - (a.seq || 0));
  for (const a of list) {
    const what = el('td', { class: 'text' }, ...withShortIDs([a.action, a.detail].filter(Boolean).join(': ')));
    if (a.reason) what.append(el('br'), el('span', { class: 'muted' }, ...withShortIDs(a.reason)));
    tb.append(el('tr', { dataset: { action: a.action } }, el('td', { class: 'num', text: a.at ? wall(a.at) : '' }), el('td', { text: a.who || '' }), what));
  }
  if (!list.length) tb.append(el('tr', {}, el('td', { colspan: 3, class: 'muted', text: 'No history yet' })));
}

// A uuid or sha256 in an audit entry's text.
const LONG_ID = /\b(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{40,64})\b/gi;

/**
 * Splits text into strings and, for each uuid or hash in it, an element
 * showing its first 8 characters on one line with the whole value in its
 * title, and copied whole (the copy handler below).
 */
function withShortIDs(text) {
  const out = [];
  let last = 0;
  for (const m of text.matchAll(LONG_ID)) {
    if (m.index > last) out.push(text.slice(last, m.index));
    out.push(el('code', { class: 'short-id', title: m[0], 'aria-label': m[0], dataset: { full: m[0] }, text: m[0].slice(0, 8) + '…' }));
    last = m.index + m[0].length;
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}

// Copying a selection that holds shortened ids copies them whole.
document.addEventListener('copy', (e) => {
  const sel = document.getSelection();
  if (!sel || sel.isCollapsed || !sel.rangeCount) return;
  const frag = sel.getRangeAt(0).cloneContents();
  const ids = frag.querySelectorAll('.short-id');
  if (!ids.length) return;
  for (const c of ids) c.textContent = c.dataset.full;
  const box = document.createElement('div');
  box.append(frag);
  e.clipboardData.setData('text/plain', box.textContent);
  e.preventDefault();
});

async function refreshAudit() {
  try {
    const r = await api(recURL(state.rec.id, '/audit'));
    renderAudit(r.entries || []);
  } catch (e) {
    $('act-status').textContent = 'Could not load the history: ' + errText(e);
  }
}

/** Shows the actions the role may use and the format allows. */
export function renderActions() {
  $('mod').hidden = !isMod();
  $('dl-original').hidden = !isAdmin();
  const can = !!state.rec.can_clip;
  const why = can ? '' : `${state.rec.format || 'This format'} cannot be cut into a clip: download the whole file`;
  $('dl-clip').disabled = !can;
  $('dl-clip').title = can ? 'A native file of the selected range' + (isMod() ? '' : ' (redacted)') : why;
  // A disabled button says why next to it, not only on hover.
  $('clip-why').textContent = why;
  $('clip-why').hidden = can;
  renderShare();
}

for (const id of ['r-from', 'r-to']) {
  $(id).addEventListener('input', () => { state.rangeTouched = true; drawTimeline(); });
}
$('r-here-from').addEventListener('click', () => { state.rangeTouched = true; $('r-from').value = state.sel; drawTimeline(); });
$('r-here-to').addEventListener('click', () => { state.rangeTouched = true; $('r-to').value = state.sel; drawTimeline(); });
$('dl-clip').addEventListener('click', () => {
  const [a, b] = readRange();
  download(recURL(state.rec.id, `/clip?from=${a}&to=${b}`), $('act-status'));
});
$('dl-redacted').addEventListener('click', () => download(recURL(state.rec.id, '/file?redact=1'), $('act-status')));
$('dl-original').addEventListener('click', () => download(recURL(state.rec.id, '/file'), $('act-status')));

/**
 * Asks for confirmation (and a name and note where the action takes
 * them) in a dialog; run performs the action and may throw, which keeps
 * the dialog open with the error.
 */
function confirmAction({ title, text, nameLabel, noteLabel, required, ok, danger, range, run }) {
  const dlg = $('act-dlg');
  // A flag may be on the selected range rather than the whole recording.
  $('act-range-row').hidden = !range;
  $('act-range').checked = false;
  if (range) {
    const [a, b] = readRange();
    $('act-range-label').textContent = `Only the selected range: ${offset(timeAt(a))}–${offset(timeAt(b))} (ticks ${a}–${b})`;
  }
  $('act-dlg-h').textContent = title;
  $('act-dlg-text').textContent = text;
  $('act-name-row').hidden = !nameLabel;
  $('act-name').required = !!nameLabel;
  $('act-name').value = '';
  $('act-note-label').textContent = noteLabel;
  $('act-note').value = '';
  $('act-note').required = !!required;
  $('act-ok').textContent = ok;
  $('act-ok').className = danger ? 'danger' : '';
  $('act-err').hidden = true;
  const close = () => { $('act-form').onsubmit = null; $('act-cancel').onclick = null; dlg.close(); };
  $('act-cancel').onclick = close;
  $('act-form').onsubmit = async (e) => {
    e.preventDefault();
    $('act-ok').disabled = true;
    try {
      await run($('act-name').value.trim(), $('act-note').value.trim());
      close();
    } catch (err) {
      $('act-err').textContent = errText(err);
      $('act-err').hidden = false;
    } finally {
      $('act-ok').disabled = false;
    }
  };
  dlg.showModal();
  (nameLabel ? $('act-name') : $('act-note')).focus();
}

/** Takes the recording JSON an action answered with and shows it. */
async function afterChange(rec, what) {
  if (rec && rec.id) state.rec = Object.assign(state.rec, rec);
  renderMarks();
  await refreshAudit();
  $('act-status').textContent = what;
}

$('do-flag').addEventListener('click', () => confirmAction({
  title: 'Flag this recording', text: 'The flag keeps the recording from retention and is searchable with flag:NAME.',
  nameLabel: 'Flag name', noteLabel: 'Note', ok: 'Flag', range: true,
  run: async (name, note) => {
    const json = { note };
    if ($('act-range').checked) [json.from, json.to] = readRange().map(String);
    const r = await api(recURL(state.rec.id, `/flags/${encodeURIComponent(name)}`), { method: 'PUT', json });
    await afterChange(r, `Flagged ${name}`);
    drawTimeline();
    loadRecCases(state.rec.id, state.token);
  },
}));

function unflag(name) {
  confirmAction({
    title: `Remove flag ${name}`, text: 'The flag leaves the recording; the history keeps it.', noteLabel: 'Reason', ok: 'Remove flag',
    run: async (_, reason) => {
      const r = await api(recURL(state.rec.id, `/flags/${encodeURIComponent(name)}`), { method: 'DELETE', json: { reason } });
      await afterChange(r, `Removed flag ${name}`);
    },
  });
}

$('do-hold').addEventListener('click', () => confirmAction({
  title: 'Hold this recording', text: 'A held recording is never removed by retention or a takedown until released.',
  noteLabel: 'Reason', required: true, ok: 'Hold',
  run: async (_, reason) => {
    const r = await api(recURL(state.rec.id, '/hold'), { method: 'PUT', json: { reason } });
    await afterChange(r, 'Held');
  },
}));

$('do-release').addEventListener('click', () => confirmAction({
  title: 'Release the hold', text: 'Retention may remove the recording again once it is released.',
  noteLabel: 'Reason', ok: 'Release',
  run: async (_, reason) => {
    const r = await api(recURL(state.rec.id, '/hold'), { method: 'DELETE', json: { reason } });
    await afterChange(r, 'Released');
  },
}));

$('do-delete').addEventListener('click', () => confirmAction({
  title: 'Take this recording down',
  text: 'The recording is hidden now, and its file and its game are refused if they are ingested again. Its bytes are kept for 7 days: until then a moderator can undo the takedown (archivectl takedowns undo, or the API).',
  noteLabel: 'Reason (required)', required: true, ok: 'Take down', danger: true,
  run: async (_, reason) => {
    await api(recURL(state.rec.id), { method: 'DELETE', json: { reason } });
    const id = state.rec.id;
    go(sessionStorage.getItem('replay.lastSearch') || '/');
    notice(`Recording ${id} was taken down: ${reason}`);
  },
}));
