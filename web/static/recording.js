// The recording view: metadata, players over time, and the panels of the
// other modules, asked for and drawn at once.

import { $, el, wall, offset, duration, bytes, notice } from './util.js';
import { api, recURL, errText } from './api.js';
import { state, firstTick, lastTick, rate, clamp, timeAt } from './state.js';
import { sizeCanvases } from './canvas.js';
import { setDefaultRange, select, updatePos } from './moment.js';
import { eventColumns, drawTimeline, renderEventRows, flagToOpen } from './timeline.js';
import { AHEAD_SECONDS, trailTicks, guessTracks, tracksFor, drawTrails, showPicture, openWherePlaced } from './trails.js';
import { renderMarks, renderAudit, renderActions } from './actions.js';
import { mapSettled } from './mapdraw.js';
import { clearRecCases, loadRecCases } from './cases.js';
import { showScoreboard } from './scoreboard.js';
import { playerHref } from './nav.js';
import { showWatch } from './watch.js';
import { suggestGhosts } from './ghost.js';

/** A player's name as a link to the player page (player.js). */
const nameCell = (name) => el('td', {}, name ? el('a', { href: playerHref(name), 'data-nav': true, class: 'player', text: name }) : '(unnamed)');

// Rows of the players table drawn with the page; the rest (an hour's
// joins and drops are a hundred rows and more, most of them scrolled out
// of its box) follow once the page is usable.
const PLAYER_ROWS_FIRST = 24;

// How long the first paint of the trails waits for the map once the
// rest is drawn (mapSettled), in ms: a map slower than that is drawn when
// it comes.
const MAP_WAIT_MS = 100;

// The events fetched for a recording's timeline.
const EVENT_LIMIT = 20000;

/**
 * Shows recording id: asks for it, its events and the positions around
 * the URL's moment at once, and draws every panel once they are in.
 */
export async function showRecording(id) {
  $('search-view').hidden = true;
  $('rec-view').hidden = false;
  $('back').href = sessionStorage.getItem('replay.lastSearch') || '/';
  $('back').dataset.nav = '';
  $('rec-h').textContent = 'Loading…';
  // The panels are laid out (the canvases take their size) but not
  // painted until their data is in: the browser paints them once, not
  // empty first and then all again.
  $('rec-body').classList.add('pending');
  $('rec-body').hidden = false;
  for (const t of ['events', 'players', 'audit']) $(t).tBodies[0].replaceChildren();
  $('meta').replaceChildren();
  $('flags').replaceChildren();
  $('hold').textContent = '';
  $('act-status').textContent = '';
  delete $('act-status').dataset.downloaded;
  clearRecCases();
  state.rec = null;
  state.ranges = [];
  state.rangeTouched = false;
  const token = state.token;
  performance.mark('replay:start');
  let rec, evs, flagged = null;
  // The recording, its events, who is signed in and the positions
  // around the URL's moment are asked at once.
  const evsP = api(recURL(id, `/events?compact=1&limit=${EVENT_LIMIT}`));
  evsP.catch(() => {});
  const recP = api(recURL(id));
  const urlTick = parseInt(new URLSearchParams(location.search).get('t'), 10);
  const guess = isFinite(urlTick) && urlTick >= 0 ? guessTracks(id, urlTick) : null;
  // Size the canvases while the answers are on their way and the
  // panels are empty: reading their width lays out only those, where
  // after the tables are filled it would lay them all out once more.
  showPicture();
  sizeCanvases();
  try {
    rec = await recP;
    if (token === state.token) {
      performance.mark('replay:rec');
      state.rec = rec;
      // Without a tick in the URL, a flag the page was sent to (a case's
      // link, a flag:NAME search) gives the moment.
      flagged = isFinite(urlTick) ? null : flagToOpen(rec);
      state.sel = clamp(isFinite(urlTick) ? urlTick : flagged ? flagged.range.from : firstTick());
      // The window asked around the URL's moment covers these ticks
      // (its answer says so exactly); what it does not cover is fetched.
      const ahead = state.sel + Math.round((rate() || 20) * AHEAD_SECONDS);
      if (guess && !guess.to) Object.assign(guess, { from: state.sel - trailTicks(), to: ahead });
      if (guess) state.ranges.push(guess);
      tracksFor(state.sel - trailTicks(), ahead).catch(() => {});
    }
    [evs] = await Promise.all([evsP, state.whoReady]);
  } catch (e) {
    if (token !== state.token) return;
    state.rec = null;
    $('rec-body').hidden = true;
    $('rec-h').textContent = 'Recording not available';
    notice(errText(e));
    return;
  }
  if (token !== state.token) return;
  performance.mark('replay:data');
  $('rec-body').classList.remove('pending');
  state.rec = rec;
  state.events = eventColumns(evs);
  state.eventTotal = evs.total || state.events.n;
  state.names = clientNames(state.events);
  const first = firstTick(), last = lastTick();
  state.view = [first, Math.max(last, first + 1)];
  document.title = `${rec.map || rec.id} · Replay archive`;
  $('rec-h').textContent = [rec.map || '(no map)', rec.format, rec.start ? wall(rec.start) + ' UTC' : ''].filter(Boolean).join(' · ');
  renderMeta();
  const morePlayers = renderPlayers(PLAYER_ROWS_FIRST);
  renderMarks();
  renderAudit(rec.audit || []);
  renderActions();
  showScoreboard(rec.id, () => token === state.token);
  setDefaultRange();
  if (flagged) {
    $('r-from').value = flagged.range.from;
    $('r-to').value = flagged.range.to;
    state.rangeTouched = true;
  }
  drawTimeline();
  updatePos();
  performance.mark('replay:drawn');
  // The map, asked for with the first positions, is drawn in the trails'
  // first paint, not a second one, unless it takes longer still.
  await Promise.race([mapSettled(rec.id), new Promise((r) => setTimeout(r, MAP_WAIT_MS))]);
  if (token !== state.token) return;
  await drawTrails();
  if (token !== state.token) return;
  performance.mark('replay:trails');
  document.body.dataset.ready = 'recording';
  window.replayReadyAt = performance.now();
  showWatch(rec.id, token);
  // The list of the events in view is below the fold, and the players
  // table's box shows its first rows: the rest is filled once the page
  // is usable, so those rows are not laid out in the first frame.
  const later = window.requestIdleCallback || ((f) => setTimeout(f, 1));
  later(() => {
    if (token !== state.token) return;
    morePlayers();
    renderEventRows();
    loadRecCases(rec.id, token);
    if (!isFinite(urlTick) && !flagged) openWherePlaced(rec.id, () => token !== state.token);
    suggestGhosts(rec, () => token !== state.token);
  }, { timeout: 200 });
}

/** Fills the recording's facts. */
function renderMeta() {
  const r = state.rec;
  const rows = [
    ['Id', r.id], ['Format', r.format], ['Map', r.map], ['Server', r.server], ['Session', r.session],
    ['Start', r.start ? wall(r.start) + ' UTC' : 'unknown'], ['Duration', duration(r.duration_ms)],
    ['Ticks', r.ticks !== undefined ? `${r.ticks}${r.tick_rate ? ` at ${r.tick_rate}/s` : ''}` : ''],
    ['Size', `${bytes(r.native_bytes)} native, ${bytes(r.stored_bytes)} stored`],
    ['File', r.source_name], ['sha256', r.sha256], ['Ingested', r.ingested ? wall(r.ingested) + ' UTC' : ''],
    ['Events', `${state.eventTotal}${state.eventTotal > state.events.n ? ` (first ${state.events.n} shown)` : ''}`],
  ];
  for (const [k, v] of Object.entries(r.attrs || {})) rows.push([k, v]);
  const dl = $('meta');
  dl.replaceChildren();
  for (const [k, v] of rows) if (v !== undefined && v !== null && v !== '') dl.append(el('dt', { text: k }), el('dd', { text: String(v) }));
}

/**
 * Who held which player id when, from join and drop events (an id a
 * format reuses names several players in turn; viewers get pseudonyms,
 * the same in every answer). Teehistorian's joins and drops carry no id
 * but name the server's client slot in their text ("client 3 joined").
 * Returns id -> [{name, from, to}] in tick order.
 */
function clientNames(events) {
  const byID = new Map();
  const join = events.strings.indexOf('join'), drop = events.strings.indexOf('drop');
  for (let i = 0; i < events.n; i++) {
    if (events.kind[i] !== join && events.kind[i] !== drop) continue;
    const e = events.at(i);
    let cid = e.player_id;
    if (cid === undefined || cid === null || cid === '') {
      const m = (e.text || '').match(/client (\d+)/);
      cid = m ? m[1] : e.player;
    }
    if (cid === undefined || cid === null || cid === '') continue;
    cid = String(cid);
    const list = byID.get(cid) || [];
    byID.set(cid, list);
    const open = list.length && list[list.length - 1].to === null ? list[list.length - 1] : null;
    if (e.kind === 'join') {
      if (open) open.to = e.tick;
      list.push({ name: e.player || '', from: e.tick, to: null });
    } else if (open) {
      open.to = e.tick;
      if (!open.name) open.name = e.player || '';
    } else {
      list.push({ name: e.player || '', from: null, to: e.tick });
    }
  }
  return byID;
}

/**
 * Fills the players table with its first rows, and returns a function
 * that adds the rest: the ids' holders from the joins and drops, and the
 * recording's players whose id none of them names, from start to end.
 */
function renderPlayers(first) {
  const tb = $('players').tBodies[0];
  tb.replaceChildren();
  const rows = [];
  for (const [cid, list] of state.names) {
    for (const iv of list) rows.push({ name: iv.name, id: cid, from: iv.from, to: iv.to });
  }
  // A player whose id no join or drop names (an Echo VR player in the
  // first frame who stays to the last) held it throughout.
  if (rows.length) {
    const named = new Set(rows.map((r) => r.name));
    for (const p of state.rec.players || []) {
      if (p.id && !state.names.has(String(p.id)) && !named.has(p.name)) rows.push({ name: p.name, id: String(p.id), from: null, to: null });
    }
  }
  rows.sort((a, b) => (a.from ?? -1) - (b.from ?? -1));
  const at = (t) => (t === null || t === undefined ? '' : offset(timeAt(t)));
  if (rows.length) {
    const add = (list) => {
      for (const r of list) {
        const go = el('button', { type: 'button', text: at(r.from) || 'start', 'aria-label': `Go to when ${r.name} joined`, onclick: () => select(r.from ?? firstTick()) });
        tb.append(el('tr', {}, nameCell(r.name), el('td', { class: 'num id', title: r.id, text: r.id }),
          el('td', {}, go), el('td', { class: 'num', text: r.to === null ? 'end' : at(r.to) })));
      }
    };
    add(rows.slice(0, first));
    return () => add(rows.slice(first));
  }
  for (const p of state.rec.players || []) {
    const id = p.id || (p.team ? `team ${p.team}` : '');
    tb.append(el('tr', {}, nameCell(p.name), el('td', { class: 'num id', title: id, text: id }),
      el('td', { text: 'start' }), el('td', { text: 'end' })));
  }
  return () => {};
}

// The canvases follow the window's width.
let resizeTimer = 0;
window.addEventListener('resize', () => {
  clearTimeout(resizeTimer);
  resizeTimer = setTimeout(() => {
    if (!state.rec || $('rec-view').hidden) return;
    sizeCanvases();
    drawTimeline();
    drawTrails();
  }, 100);
});
