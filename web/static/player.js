// The player view: every recording of one player (by name, by the
// format's stable id for moderators, or by the pseudonym a viewer saw in a
// recording), with the names and ids seen, aliases, first and last seen
// and flags, paged by the API's cursor.

import { $, el, wall, duration, notice } from './util.js';
import { API, api, errText } from './api.js';
import { state, isMod } from './state.js';
import { route, playerHref } from './nav.js';
import { caseHref } from './cases.js';

/** The API path of the player the URL names, and how it is named. */
function playerOf(params) {
  const p = new URLSearchParams();
  let path = `${API}/players`;
  if (params.get('pseudonym')) {
    path += '/' + encodeURIComponent(params.get('pseudonym'));
    p.set('rec', params.get('rec') || '');
  } else if (params.get('pid')) {
    p.set('id', params.get('pid'));
  } else {
    p.set('name', params.get('player') || '');
  }
  return { path, p };
}

/** Shows the player of the URL (/?player=NAME, ?pid=ID, ?pseudonym=P&rec=ID). */
export async function showPlayer() {
  $('rec-view').hidden = true;
  $('search-view').hidden = true;
  $('player-view').hidden = false;
  const params = new URLSearchParams(location.search);
  const cursor = params.get('cursor') || '';
  const who = params.get('player') || params.get('pid') || params.get('pseudonym') || '';
  document.title = `${who} · Player · Replay archive`;
  $('pl-name').textContent = who;
  for (const id of ['pl-facts', 'pl-names', 'pl-ids', 'pl-aliases', 'pl-flags', 'pl-recs']) $(id).replaceChildren();
  $('pl-ids-box').hidden = true;
  $('pl-aliases-box').hidden = true;
  $('pl-prev').hidden = true;
  $('pl-next').hidden = true;
  const { path, p } = playerOf(params);
  p.set('limit', '20');
  if (cursor) p.set('cursor', cursor);
  $('pl-cases').replaceChildren();
  $('pl-cases-box').hidden = true;
  const token = state.token;
  // A name or an id in the URL: its cases are asked for with the player.
  const early = playerCases(params, null);
  let res;
  try {
    $('pl-summary').textContent = 'Looking…';
    res = await api(`${path}?${p}`);
  } catch (e) {
    if (token !== state.token) return;
    $('pl-summary').textContent = '';
    notice('Could not look the player up: ' + errText(e));
    return;
  }
  if (token !== state.token) return;
  renderPlayer(res, params, cursor);
  await showPlayerCases(early || playerCases(params, res), token);
  if (token !== state.token) return;
  document.body.dataset.ready = 'player';
}

/**
 * Asks a moderator's cases API for the cases of the player's recordings
 * (GET /api/v1/cases?player=NAME or ?player_id=ID): by the URL's name or
 * id, or by what the answer res says (a pseudonym stands for an id).
 * Null when the key is not known yet; resolves to null for anyone who
 * is not a moderator, who is asked nothing.
 */
function playerCases(params, res) {
  let k = '';
  if (params.get('pid')) k = 'player_id=' + encodeURIComponent(params.get('pid'));
  else if (params.get('player')) k = 'player=' + encodeURIComponent(params.get('player'));
  else if (res && res.id) k = 'player_id=' + encodeURIComponent(res.id);
  else if (res && res.name) k = 'player=' + encodeURIComponent(res.name);
  if (!k) return null;
  return Promise.resolve(state.whoReady).then(() => (isMod() ? api(`${API}/cases?${k}`) : null));
}

/** Lists the cases p resolves to (moderators only; nothing otherwise). */
async function showPlayerCases(p, token) {
  const ul = $('pl-cases');
  let r;
  try {
    r = await p;
  } catch (e) {
    if (token !== state.token) return;
    $('pl-cases-box').hidden = false;
    ul.append(el('li', { class: 'muted', text: 'Could not load the cases: ' + errText(e) }));
    return;
  }
  if (token !== state.token || !r) return;
  $('pl-cases-box').hidden = false;
  for (const c of r.cases || []) {
    const rec = `/r/${c.recording}${c.flag ? `?flag=${encodeURIComponent(c.flag)}` : ''}`;
    ul.append(el('li', { dataset: { case: c.id } },
      el('a', { href: caseHref(c.id), 'data-nav': true, text: `Case ${c.id.slice(0, 8)}`, title: c.id }),
      el('span', { text: ` ${c.status}` }),
      el('span', { class: 'muted', text: ` · ${c.flag ? c.flag + ' · ' : ''}${c.assignee || 'unassigned'} · ${wall(c.updated).slice(0, 10)} · ` }),
      el('a', { href: rec, 'data-nav': true, text: c.recording.slice(0, 8), title: c.recording })));
  }
  if (!(r.cases || []).length) ul.append(el('li', { class: 'muted', text: 'none' }));
}

const seenText = (s) => `${s.recordings} recording${s.recordings === 1 ? '' : 's'}` +
  (s.first ? `, ${wall(s.first).slice(0, 10)}` + (s.last && s.last !== s.first ? ` to ${wall(s.last).slice(0, 10)}` : '') : '');

function renderPlayer(res, params, cursor) {
  const title = res.by === 'id' ? `id ${res.id}` : res.name || res.id || '';
  $('pl-name').textContent = title;
  document.title = `${title} · Player · Replay archive`;
  $('player-view').dataset.by = res.by;
  const facts = [['Recordings', String(res.total) + (res.scanned < res.total ? ` (summed up: the first ${res.scanned})` : '')],
    ['First seen', res.first_seen ? wall(res.first_seen) + ' UTC' : '-'],
    ['Last seen', res.last_seen ? wall(res.last_seen) + ' UTC' : '-']];
  if (res.by === 'pseudonym') facts.push(['Found as', `${params.get('pseudonym')} in recording ${(params.get('rec') || '').slice(0, 8)}`]);
  for (const [k, v] of facts) $('pl-facts').append(el('dt', { text: k }), el('dd', { text: v }));
  const list = (ul, items, href) => {
    for (const s of items || []) {
      const a = href ? el('a', { href: href(s.value), 'data-nav': true, text: s.value, title: s.value }) : el('span', { text: s.value });
      $(ul).append(el('li', {}, a, el('span', { class: 'muted', text: ' · ' + seenText(s) })));
    }
  };
  list('pl-names', res.names, (v) => playerHref(v));
  if (res.ids && res.ids.length) {
    $('pl-ids-box').hidden = false;
    list('pl-ids', res.ids, (v) => `/?pid=${encodeURIComponent(v)}`);
  }
  if (res.aliases && res.aliases.length) {
    $('pl-aliases-box').hidden = false;
    list('pl-aliases', res.aliases, (v) => playerHref(v));
  }
  for (const f of res.flags || []) {
    $('pl-flags').append(el('li', {}, el('a', { href: `/?q=${encodeURIComponent('flag:' + f.flag)}`, 'data-nav': true, text: f.flag }),
      el('span', { class: 'muted', text: ` · ${f.recordings} recording${f.recordings === 1 ? '' : 's'}` })));
  }
  if (!(res.flags || []).length) $('pl-flags').append(el('li', { class: 'muted', text: 'none' }));
  $('pl-summary').textContent = `${res.total} recording${res.total === 1 ? '' : 's'}, newest first` +
    (typeof res.took_ms === 'number' ? ` (${res.took_ms.toFixed(1)} ms)` : '');
  const tb = $('pl-recs');
  for (const h of res.recordings || []) {
    const badges = el('span');
    for (const f of h.flags || []) badges.append(el('span', { class: 'badge flag', text: f }));
    tb.append(el('tr', { dataset: { id: h.id } },
      el('td', { class: 'num' }, el('a', { href: `/r/${h.id}`, 'data-nav': true, text: h.start ? wall(h.start) : 'start unknown' })),
      el('td', { text: h.map || '' }), el('td', { text: h.format }), el('td', { class: 'num', text: duration(h.duration_ms) }),
      el('td', { text: String((h.players || []).length) }),
      el('td', { text: (h.as || []).join(', ') }),
      el('td', { class: 'id', text: (h.ids || []).join(', '), title: (h.ids || []).join(', ') }),
      el('td', {}, badges)));
  }
  $('pl-recs-ids').hidden = !(res.ids && res.ids.length);
  for (const td of tb.querySelectorAll('td.id')) td.hidden = !(res.ids && res.ids.length);
  const here = new URLSearchParams(params);
  const prevStack = (history.state && history.state.cursors) || [];
  $('pl-prev').hidden = !cursor;
  $('pl-prev').onclick = () => {
    const stack = prevStack.slice();
    const back = stack.pop() || '';
    if (back) here.set('cursor', back); else here.delete('cursor');
    history.pushState({ cursors: stack }, '', `/?${here}`);
    route();
    $('main').focus();
  };
  $('pl-next').hidden = !res.next_cursor;
  $('pl-next').onclick = () => {
    here.set('cursor', res.next_cursor);
    history.pushState({ cursors: prevStack.concat([cursor]) }, '', `/?${here}`);
    route();
    $('main').focus();
  };
}
