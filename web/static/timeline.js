// The timeline: the recording's events on a canvas, one lane per kind
// group, zoom, and the table of the events in view.

import { $, el, wall, offset } from './util.js';
import { state, firstTick, lastTick, rate, timeAt, tickAtFloat } from './state.js';
import { TIMELINE_FONT, setFont } from './canvas.js';
import { select, stop, fitView, readRange, onMoment } from './moment.js';

// Rows shown in the "events in view" table.
const EVENT_ROWS = 200;

// Each event kind's colour, and the lanes: groups of kinds drawn on one
// row (kinds not listed are "other").
const KIND_COLORS = {
  join: '#2e8b57', drop: '#c0392b', command: '#1f5fbf', login: '#8e44ad', vote: '#d35400',
  chat: '#7f8c8d', finish: '#f1c40f', flag: '#e74c3c', team: '#16a085', other: '#95a5a6',
};
const LANES = [
  ['join', 'drop', 'team'], ['command', 'login', 'vote'], ['chat'], ['finish', 'flag'], ['other'],
];

/** The index of the first of the sorted ticks at t (after t when past). */
function bound(ticks, t, past) {
  let lo = 0, hi = ticks.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (ticks[mid] < t || (past && ticks[mid] === t)) lo = mid + 1; else hi = mid;
  }
  return lo;
}

/**
 * The events of the API's column form (`events?compact=1`: ticks and
 * times as differences, strings by index), kept as columns in tick
 * order: the timeline reads an hour's thousands of ticks and kinds
 * without an object per event, and at(i) makes the object of one event
 * for the rows that list it.
 */
export function eventColumns(c) {
  const S = c.strings || [''], n = (c.tick || []).length;
  let tick = new Float64Array(n), ms = new Float64Array(n);
  let kind = c.kind || [], player = c.player || [], pid = c.player_id || [], text = c.text || [];
  let t = 0, m = 0, sorted = true;
  for (let i = 0; i < n; i++) {
    t += c.tick[i];
    m += c.time_ms[i];
    tick[i] = t;
    ms[i] = m;
    if (i && t < tick[i - 1]) sorted = false;
  }
  if (!sorted) {
    const order = Array.from({ length: n }, (_, i) => i).sort((a, b) => tick[a] - tick[b] || a - b);
    const pick = (col) => order.map((i) => col[i]);
    tick = Float64Array.from(order, (i) => tick[i]);
    ms = Float64Array.from(order, (i) => ms[i]);
    [kind, player, pid, text] = [pick(kind), pick(player), pick(pid), pick(text)];
  }
  // The kind of each string, as an index into KIND_COLORS (for the
  // strings that are kinds).
  const kindOf = Int8Array.from(S, (k) => kindIndex(k));
  return {
    n, tick, kind, kindOf, strings: S,
    /** Event i as an object: tick, time_ms, kind, player, player_id, text. */
    at: (i) => ({ tick: tick[i], time_ms: ms[i], kind: S[kind[i]], player: S[player[i]], player_id: S[pid[i]], text: S[text[i]] }),
    /** The indexes [lo, hi) of the events in the tick range [a, b]. */
    within: (a, b) => [bound(tick, a, false), bound(tick, b, true)],
  };
}

const laneOf = (kind) => { const i = LANES.findIndex((l) => l.includes(kind)); return i < 0 ? LANES.length - 1 : i; };
/** The index of an event kind in KIND_COLORS (unknown kinds are "other"). */
const kindIndex = (() => {
  const idx = new Map(Object.keys(KIND_COLORS).map((k, i) => [k, i]));
  const other = idx.get('other');
  return (kind) => { const i = idx.get(kind); return i === undefined ? other : i; };
})();

export function drawTimeline() {
  const c = $('timeline'), g = c.getContext('2d');
  const dpr = window.devicePixelRatio || 1;
  const W = c.width / dpr, H = c.height / dpr;
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.clearRect(0, 0, W, H);
  const [a, b] = state.view;
  const x = (t) => ((t - a) / (b - a || 1)) * W;
  const top = 18, laneH = (H - top - 4) / LANES.length;
  // Selected clip range.
  const [ra, rb] = readRange();
  g.fillStyle = 'rgba(31,95,191,0.10)';
  g.fillRect(x(ra), top, Math.max(2, x(rb) - x(ra)), H - top);
  // Axis with offsets.
  g.fillStyle = '#5b6472';
  setFont(g, TIMELINE_FONT);
  g.strokeStyle = '#e3e6eb';
  const spanMs = timeAt(b) - timeAt(a);
  const steps = [100, 250, 500, 1000, 2000, 5000, 10000, 15000, 30000, 60000, 120000, 300000, 600000, 900000, 1800000, 3600000];
  const step = steps.find((s) => spanMs / s <= Math.max(2, W / 90)) || 3600000;
  const t0 = Math.ceil(timeAt(a) / step) * step;
  for (let ms = t0; ms <= timeAt(b); ms += step) {
    const xx = x(tickAtFloat(ms));
    g.beginPath(); g.moveTo(xx, top); g.lineTo(xx, H); g.stroke();
    g.fillText(offset(ms).replace(/\.00$/, ''), xx + 2, 12);
  }
  // Events, one lane per group of kinds: a mark 3 px wide per pixel
  // column and lane (an hour's thousands of events share a few hundred
  // columns), the latest event of a column giving its colour, and one
  // path per colour.
  const cols = Math.ceil(W) + 2, kinds = Object.keys(KIND_COLORS), lanes = kinds.map(laneOf);
  const cell = new Uint8Array(cols * LANES.length); // kind index + 1
  const ev = state.events, [lo, hi] = ev.within(a, b), inView = hi - lo;
  const scale = W / (b - a || 1), evKind = ev.kind, kindOf = ev.kindOf, ticks = ev.tick;
  for (let i = lo; i < hi; i++) {
    const k = kindOf[evKind[i]];
    cell[lanes[k] * cols + Math.min(cols - 1, Math.max(0, Math.round((ticks[i] - a) * scale) + 1))] = k + 1;
  }
  const paths = kinds.map(() => null);
  for (let i = 0; i < cell.length; i++) {
    const k = cell[i] - 1;
    if (k < 0) continue;
    const p = paths[k] || (paths[k] = new Path2D());
    p.rect(i % cols - 2, top + Math.floor(i / cols) * laneH + 2, 3, laneH - 4);
  }
  paths.forEach((p, k) => {
    if (!p) return;
    g.fillStyle = KIND_COLORS[kinds[k]];
    g.fill(p);
  });
  drawFlagSpans(g, x, W, H, top);
  // The selected moment.
  const xs = x(state.sel);
  g.fillStyle = '#b3261e';
  g.fillRect(xs - 1, top - 4, 2, H - top + 4);
  $('tl-range').textContent = `${offset(timeAt(a))} – ${offset(timeAt(b))}`;
  c.dataset.events = String(inView);
  if (!$('tl-legend').children.length) {
    const seen = new Set(Array.from(new Set(state.events.kind), (k) => kinds[state.events.kindOf[k]]));
    for (const k of Object.keys(KIND_COLORS)) {
      if (!seen.has(k)) continue;
      const sw = el('i');
      sw.style.background = KIND_COLORS[k]; // CSSOM, allowed by the page's CSP
      $('tl-legend').append(el('span', {}, sw, k));
    }
  }
}

// The flag spans drawn, with their x on the canvas: a click on a flag's
// name (the strip above the lanes) seeks to it.
let flagSpans = [];

/**
 * The moderators' flags on a moment of the recording, as marked spans
 * under the lanes' marks, each with its name in the strip above them.
 */
function drawFlagSpans(g, x, W, H, top) {
  flagSpans = [];
  const spans = (state.rec.flags || []).filter((f) => f.range);
  for (const f of spans) {
    const x0 = Math.max(0, x(f.range.from)), x1 = Math.min(W, x(f.range.to));
    if (x1 < 0 || x0 > W) continue;
    const w = Math.max(3, x1 - x0);
    g.fillStyle = 'rgba(231,76,60,0.16)';
    g.fillRect(x0, top, w, H - top);
    g.fillStyle = '#c0392b';
    g.fillRect(x0, top - 3, w, 3);
    const label = f.name;
    const tw = g.measureText(label).width + 6;
    g.fillStyle = 'rgba(255,255,255,0.9)';
    g.fillRect(x0, 0, tw, top - 4);
    g.fillStyle = '#b3261e';
    g.fillText(label, x0 + 3, 12);
    flagSpans.push({ name: f.name, from: f.range.from, to: f.range.to, x0, x1: Math.max(x0 + w, x0 + tw) });
  }
  $('timeline').dataset.flagSpans = JSON.stringify(flagSpans.map((f) => ({ name: f.name, from: f.from, to: f.to, x: Math.round(f.x0 + 2), y: 6 })));
}

/** The flag whose name or span is at the click, in the strip above the lanes. */
function flagAt(ev) {
  const r = $('timeline').getBoundingClientRect();
  const px = ev.clientX - r.left, py = ev.clientY - r.top;
  if (py > 18) return null;
  return flagSpans.find((f) => px >= f.x0 && px <= f.x1) || null;
}

/**
 * The flag on a moment the recording page opens at, when the URL gives
 * no tick: the URL's flag=NAME (a case's link), else a flag:NAME of the
 * search the page came from. Null when neither names a flag with a range.
 */
export function flagToOpen(rec) {
  const ranged = (rec.flags || []).filter((f) => f.range);
  if (!ranged.length) return null;
  const names = [];
  const u = new URLSearchParams(location.search);
  if (u.get('flag')) names.push(u.get('flag'));
  const last = sessionStorage.getItem('replay.lastSearch') || '';
  const q = new URLSearchParams(last.slice(last.indexOf('?') + 1)).get('q') || '';
  for (const m of q.matchAll(/(?:^|[\s(])flag:(?:"([^"]*)"|([^\s()]+))/gi)) names.push(m[1] || m[2]);
  for (const n of names) {
    const f = ranged.find((x) => x.name.toLowerCase() === n.toLowerCase());
    if (f) return f;
  }
  return null;
}

/** Seeks to a flag's moment: its start selected, its span the clip range. */
export function seekFlag(f) {
  stop();
  select(f.from, { keepRange: true });
  $('r-from').value = f.from;
  $('r-to').value = f.to;
  state.rangeTouched = true;
  drawTimeline();
}

function zoom(factor, around) {
  const [a, b] = state.view;
  const at = around === undefined ? state.sel : around;
  const f = (at - a) / (b - a || 1);
  const span = (b - a) * factor;
  state.view = fitView(at - span * f, at + span * (1 - f));
  drawTimeline();
  renderEventRows();
}

function tickFromEvent(ev) {
  const c = $('timeline'), r = c.getBoundingClientRect();
  const [a, b] = state.view;
  return a + ((ev.clientX - r.left) / r.width) * (b - a);
}

$('timeline').addEventListener('click', (ev) => {
  const f = flagAt(ev);
  if (f) { seekFlag(f); return; }
  stop();
  select(tickFromEvent(ev));
});
$('timeline').addEventListener('wheel', (ev) => {
  if (!state.rec) return;
  ev.preventDefault();
  zoom(ev.deltaY < 0 ? 0.8 : 1.25, tickFromEvent(ev));
}, { passive: false });
$('timeline').addEventListener('keydown', (ev) => {
  if (!state.rec) return;
  const sec = Math.max(1, Math.round(rate() || 1));
  const k = ev.key;
  if (k === 'ArrowLeft' || k === 'ArrowRight') {
    const n = (ev.shiftKey ? 10 : 1) * sec * (k === 'ArrowLeft' ? -1 : 1);
    select(state.sel + n);
  } else if (k === '+' || k === '=') zoom(0.5);
  else if (k === '-' || k === '_') zoom(2);
  else if (k === 'Home') select(firstTick());
  else if (k === 'End') select(lastTick());
  else return;
  ev.preventDefault();
});
$('zoom-in').addEventListener('click', () => zoom(0.5));
$('zoom-out').addEventListener('click', () => zoom(2));
$('zoom-all').addEventListener('click', () => { state.view = fitView(firstTick(), lastTick()); drawTimeline(); renderEventRows(); });

export function renderEventRows() {
  const tb = $('events').tBodies[0];
  tb.replaceChildren();
  const [a, b] = state.view;
  const ev = state.events, [lo, hi] = ev.within(a, b), total = hi - lo, n = Math.min(total, EVENT_ROWS);
  for (let i = lo; i < lo + n; i++) {
    const e = ev.at(i);
    const ms = e.time_ms !== undefined ? e.time_ms : timeAt(e.tick);
    const w = e.at ? wall(e.at) : state.rec.start ? wall(new Date(Date.parse(state.rec.start) + ms)) : offset(ms);
    tb.append(el('tr', { dataset: { tick: e.tick } },
      el('td', { class: 'num', text: w }), el('td', { class: 'num', text: String(e.tick) }),
      el('td', { text: e.player || '' }), el('td', { class: 'text', text: `${e.kind}${e.text ? ': ' + e.text : ''}` }),
      el('td', {}, el('button', { type: 'button', text: 'Go', 'aria-label': `Go to tick ${e.tick}`, onclick: () => { stop(); select(e.tick); } }))));
  }
  $('ev-more').textContent = total > n ? `${total - n} more events in view: zoom in to list them` : (total ? '' : 'No events in view');
}

// The timeline follows the selected moment.
onMoment((viewMoved) => {
  if (viewMoved) renderEventRows();
  drawTimeline();
});
