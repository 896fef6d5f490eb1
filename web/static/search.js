// The search view: the query box and quick filters (pickers that write
// query terms), the order of the list, the hits with their events, paging
// by the API's cursor.

import { $, el, wall, offset, duration, notice } from './util.js';
import { API, APIError, api, errText } from './api.js';
import { state } from './state.js';
import { go, route, playerHref } from './nav.js';
import { download } from './download.js';

const FILTERS = {
  format: { el: 'f-format', get: (e) => e.value, set: (e, v) => { e.value = v; } },
  map: { el: 'f-map', get: (e) => quote(e.value.trim()), set: (e, v) => { e.value = unquote(v); } },
  server: { el: 'f-server', get: (e) => quote(e.value.trim()), set: (e, v) => { e.value = unquote(v); } },
  after: { el: 'f-after', get: (e) => e.value, set: (e, v) => { e.value = /^\d{4}-\d\d-\d\d$/.test(v) ? v : ''; } },
  before: { el: 'f-before', get: (e) => e.value, set: (e, v) => { e.value = /^\d{4}-\d\d-\d\d$/.test(v) ? v : ''; } },
  flagged: { el: 'f-flagged', get: (e) => (e.checked ? 'true' : ''), set: (e, v) => { e.checked = v === 'true'; } },
  held: { el: 'f-held', get: (e) => (e.checked ? 'true' : ''), set: (e, v) => { e.checked = v === 'true'; } },
};

// A term's value: quoted (with \" and \\ escapes) or up to a space.
const VALUE = '("(?:[^"\\\\]|\\\\.)*"|\\S+)';
const termRE = (key) => new RegExp(`(^|\\s)${key}:${VALUE}`, 'i');

/** A value as the query language reads it: quoted when it holds a space or a quote. */
function quote(v) {
  return v && /[\s"()\\]/.test(v) ? `"${v.replace(/[\\"]/g, (c) => '\\' + c)}"` : v;
}

/** The text of a (possibly quoted) value. */
function unquote(v) {
  return v.startsWith('"') && v.endsWith('"') && v.length > 1 ? v.slice(1, -1).replace(/\\(.)/g, '$1') : v;
}

/** Returns q with the term key:value replaced (or removed when empty). */
function setTerm(q, key, value) {
  const re = new RegExp(`(^|\\s)${key}:${VALUE}`, 'gi');
  q = q.replace(re, ' ').replace(/\s+/g, ' ').trim();
  return value ? (q ? `${q} ${key}:${value}` : `${key}:${value}`) : q;
}

function syncFilters(q) {
  for (const [key, f] of Object.entries(FILTERS)) {
    const m = q.match(termRE(key));
    f.set($(f.el), m ? m[2] : '');
  }
}

let formatsLoaded = false;
async function loadFormats() {
  if (formatsLoaded) return;
  try {
    const r = await api(`${API}/formats`);
    const sel = $('f-format');
    for (const f of r.formats || []) sel.append(el('option', { value: f, text: f }));
    formatsLoaded = true;
    syncFilters(new URLSearchParams(location.search).get('q') || '');
  } catch (e) { /* the filter stays at "any" */ }
}

// The orders of the list (the API's sort and order): the select's value
// is "sort.order"; the default, newest first, is left out of URLs.
const DEFAULT_ORDER = 'start.desc';

/** The order of the URL, as the select names it. */
function orderOf(params) {
  const v = `${params.get('sort') || 'start'}.${params.get('order') || 'desc'}`;
  return [...$('sort').options].some((o) => o.value === v) ? v : DEFAULT_ORDER;
}

function searchURL(q, cursor, order = $('sort').value) {
  const p = new URLSearchParams();
  if (q) p.set('q', q);
  if (order && order !== DEFAULT_ORDER) {
    const [by, dir] = order.split('.');
    p.set('sort', by);
    p.set('order', dir);
  }
  if (cursor) p.set('cursor', cursor);
  const s = p.toString();
  return s ? `/?${s}` : '/';
}

/** Shows the search of the URL's query and cursor. */
export async function showSearch() {
  $('rec-view').hidden = true;
  $('search-view').hidden = false;
  document.title = 'Search · Replay archive';
  const params = new URLSearchParams(location.search);
  const q = params.get('q') || '';
  const cursor = params.get('cursor') || '';
  $('q').value = q;
  const order = orderOf(params);
  $('sort').value = order;
  syncFilters(q);
  loadFormats();
  showQueryError(null);
  $('hits').replaceChildren();
  $('summary').textContent = '';
  $('prev').hidden = true;
  $('next').hidden = true;
  sessionStorage.setItem('replay.lastSearch', location.pathname + location.search);
  const token = state.token;
  const p = new URLSearchParams({ q, limit: '20' });
  if (order !== DEFAULT_ORDER) {
    const [by, dir] = order.split('.');
    p.set('sort', by);
    p.set('order', dir);
  }
  if (cursor) p.set('cursor', cursor);
  let res;
  try {
    $('summary').textContent = 'Searching…';
    res = await api(`${API}/recordings?${p}`);
  } catch (e) {
    if (token !== state.token) return;
    $('summary').textContent = '';
    if (e instanceof APIError && e.code === 'bad_query') showQueryError(e.body, q);
    else notice('Search failed: ' + errText(e));
    return;
  }
  if (token !== state.token) return;
  renderHits(res, q, cursor);
  document.body.dataset.ready = 'search';
}

/** Shows a parse error with the offending term marked in the query. */
function showQueryError(body, q) {
  const box = $('qerr');
  if (!body) { box.hidden = true; box.replaceChildren(); $('q').removeAttribute('aria-invalid'); return; }
  $('q').setAttribute('aria-invalid', 'true');
  const kids = [el('span', { text: body.error || 'The query does not parse.' })];
  if (q && typeof body.pos === 'number') {
    // pos is a byte offset into the UTF-8 query.
    const enc = new TextEncoder().encode(q);
    const at = new TextDecoder().decode(enc.slice(0, Math.min(body.pos, enc.length))).length;
    let len = body.term && q.substr(at, body.term.length) === body.term ? body.term.length : 0;
    if (!len) { const m = q.slice(at).match(/^\S*/); len = Math.max(1, m ? m[0].length : 1); }
    const code = el('code', {}, q.slice(0, at), el('mark', { text: q.slice(at, at + len) || ' ' }), q.slice(at + len));
    kids.push(el('br'), code);
    const inp = $('q');
    inp.focus();
    inp.setSelectionRange(at, Math.min(q.length, at + len));
  }
  box.replaceChildren(...kids);
  box.hidden = false;
}

function renderHits(res, q, cursor) {
  const hits = res.hits || [];
  const took = typeof res.took_ms === 'number' ? ` in ${res.took_ms.toFixed(1)} ms` : '';
  $('summary').textContent = `${res.total} recording${res.total === 1 ? '' : 's'} matched${took}`;
  const list = $('hits');
  for (const h of hits) list.append(renderHit(h));
  // The map and server pickers suggest the values of the hits seen.
  for (const [id, key] of [['maps-seen', 'map'], ['servers-seen', 'server']]) {
    const dl = $(id);
    const have = new Set([...dl.options].map((o) => o.value));
    for (const h of hits) if (h[key] && !have.has(h[key])) { have.add(h[key]); dl.append(el('option', { value: h[key] })); }
  }
  const prevStack = (history.state && history.state.cursors) || [];
  $('prev').hidden = !cursor;
  $('prev').onclick = () => {
    const stack = prevStack.slice();
    const back = stack.pop() || '';
    history.pushState({ cursors: stack }, '', searchURL(q, back));
    route();
  };
  $('next').hidden = !res.next_cursor;
  $('next').onclick = () => {
    history.pushState({ cursors: prevStack.concat([cursor]) }, '', searchURL(q, res.next_cursor));
    route();
    $('main').focus();
  };
}

/** The names as links to their player pages, comma-separated. */
function playerLinks(names) {
  if (!names || !names.length) return ['none'];
  const out = [];
  for (const n of names) {
    if (out.length) out.push(', ');
    out.push(el('a', { href: playerHref(n), 'data-nav': true, class: 'player', text: n }));
  }
  return out;
}

function renderHit(h) {
  const title = [h.map || '(no map)', h.format].join(' · ');
  const facts = [h.start ? wall(h.start) + ' UTC' : 'start unknown', duration(h.duration_ms)];
  if (h.server) facts.push(h.server);
  const badges = el('span');
  for (const f of h.flags || []) badges.append(el('span', { class: 'badge flag', text: 'flag: ' + f }));
  if (h.held) badges.append(el('span', { class: 'badge held', text: 'held' }));
  const li = el('li', { class: 'hit', dataset: { id: h.id } },
    el('h2', {}, el('a', { href: `/r/${h.id}`, 'data-nav': true, text: title })),
    el('p', { class: 'facts' }, facts.join(' · '), ' ', badges),
    el('p', { class: 'facts players' }, 'Players: ', ...playerLinks(h.players)));
  const evs = h.events || [];
  if (evs.length) {
    const tb = el('tbody');
    for (const e of evs) {
      const when = e.at ? wall(e.at) : offset(e.time_ms);
      const open = el('a', { href: `/r/${h.id}?t=${e.tick}`, 'data-nav': true, text: 'Open', 'aria-label': `Open the recording at tick ${e.tick}` });
      const cells = [el('td', { class: 'num', text: when }), el('td', { class: 'num', text: String(e.tick) }),
        el('td', { text: e.player || '' }), el('td', { class: 'text', text: `${e.kind}${e.text ? ': ' + e.text : ''}` })];
      const act = el('td', {}, open);
      if (e.clip_url) {
        act.append(' ', el('button', { type: 'button', text: 'Clip', 'aria-label': `Download a clip around tick ${e.tick}`, onclick: () => download(e.clip_url, $('summary')) }));
      }
      tb.append(el('tr', {}, ...cells, act));
    }
    li.append(el('table', { class: 'events' },
      el('thead', {}, el('tr', {}, ...['When', 'Tick', 'Who', 'What', ''].map((t) => el('th', { scope: 'col', text: t })))), tb));
    if (h.event_total > evs.length) {
      li.append(el('p', { class: 'muted', text: `${h.event_total - evs.length} more matching events in this recording` }));
    }
  }
  return li;
}

$('search-form').addEventListener('submit', (e) => {
  e.preventDefault();
  const q = $('q').value.trim();
  go(searchURL(q, ''));
});
$('sort').addEventListener('change', () => {
  go(searchURL($('q').value.trim(), ''));
});
for (const [key, f] of Object.entries(FILTERS)) {
  $(f.el).addEventListener('change', () => {
    $('q').value = setTerm($('q').value, key, f.get($(f.el)));
    go(searchURL($('q').value.trim(), ''));
  });
}
