// The scoreboard panel of the recording view (in the main column, above
// the events): one table of the players'
// (and teams') score as the format counts it (GET …/scoreboard: the
// columns come with the answer, so no format is known here), and a DDNet
// recording's finishes. Every name is text from the file: it is only
// ever set as textContent.

import { $, el, offset } from './util.js';
import { api, recURL, errText } from './api.js';

/** The panel, made once and put in the main column, before the events. */
function panel() {
  let sec = $('scoreboard');
  if (sec) return sec;
  sec = el('section', { id: 'scoreboard', class: 'panel', 'aria-labelledby': 'sb-h' },
    el('h2', { id: 'sb-h', text: 'Scoreboard' }),
    el('div', { id: 'sb-wrap' }, el('table', { id: 'sb-table', class: 'events' }, el('thead'), el('tbody'), el('tfoot'))),
    el('div', { id: 'sb-finishes' }),
    el('p', { id: 'sb-notes', class: 'muted' }));
  // every row shown (a match has a few dozen at most), wide ones scroll
  sec.querySelector('#sb-wrap').style.overflowX = 'auto';
  const events = $('ev-h') && $('ev-h').closest('section');
  if (events) events.before(sec);
  else ($('rec-body') || document.body).append(sec);
  return sec;
}

/** A stat as text: seconds as m:ss.cc, counts as they are. */
function value(col, row) {
  if (col.unit === 'text') return (row.text && row.text[col.key]) || '';
  const v = row.stats ? row.stats[col.key] : undefined;
  if (v === undefined || v === null) return '';
  return col.unit === 's' ? offset(v * 1000) : String(v);
}

/** One row: name, team, the columns. */
function line(cols, r, team) {
  const name = el('td', { class: 'text', text: r.name || '' });
  if (r.observer) name.append(el('span', { class: 'muted', text: ' (observer)' }));
  if (r.id) name.title = r.id;
  const tr = el('tr', { class: [team ? 'team' : '', r.observer ? 'observer' : ''].filter(Boolean).join(' ') || undefined },
    name, el('td', { text: r.team || '' }));
  if (team) tr.style.fontWeight = '600';
  for (const c of cols) tr.append(el('td', { class: c.unit === 'text' ? 'text' : 'num', 'data-key': c.key, text: value(c, r) }));
  return tr;
}

/**
 * Asks for recording id's scoreboard and draws it; current() says
 * whether the page still shows that recording. A format without a score
 * hides the panel.
 */
export async function showScoreboard(id, current) {
  const sec = panel();
  sec.hidden = true;
  delete sec.dataset.ready;
  let sb;
  try {
    sb = await api(recURL(id, '/scoreboard'));
  } catch (e) {
    if (!current()) return;
    sec.hidden = false;
    $('sb-notes').textContent = `No scoreboard: ${errText(e)}`;
    sec.dataset.ready = 'error';
    return;
  }
  if (!current()) return;
  const cols = sb.columns || [];
  const t = $('sb-table');
  t.tHead.replaceChildren(el('tr', {}, el('th', { scope: 'col', text: 'Player' }), el('th', { scope: 'col', text: 'Team' }),
    ...cols.map((c) => el('th', { scope: 'col', title: c.help || '', text: c.label || c.key }))));
  t.tBodies[0].replaceChildren(...(sb.players || []).map((r) => line(cols, r, false)));
  t.tFoot.replaceChildren(...(sb.teams || []).map((r) => line(cols, r, true)));
  const fin = $('sb-finishes');
  fin.replaceChildren();
  if ((sb.finishes || []).length) {
    fin.append(el('h3', { text: 'Finishes' }), el('table', { id: 'sb-fin', class: 'events' },
      el('thead', {}, el('tr', {}, el('th', { scope: 'col', text: 'At' }), el('th', { scope: 'col', text: 'Who' }), el('th', { scope: 'col', text: 'Time' }))),
      el('tbody', {}, ...sb.finishes.map((f) => el('tr', {},
        el('td', { class: 'num', text: offset(f.time_ms) }),
        el('td', { class: 'text', text: f.team ? `team ${f.team}` : (f.player || '') }),
        el('td', { class: 'num', text: offset(f.seconds * 1000) }))))));
  }
  $('sb-notes').textContent = (sb.notes || []).join(' ');
  sec.hidden = cols.length === 0;
  sec.dataset.ready = String((sb.players || []).length);
}
