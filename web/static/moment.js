// The selected moment: selecting it, the clip range that follows it,
// playback, and "Jump to".

import { $, wall, offset } from './util.js';
import { state, firstTick, lastTick, rate, clamp, timeAt, tickAt, wallAt } from './state.js';

/**
 * Sets the clip range to 5 seconds around the selected moment, until the
 * user edits it.
 */
export function setDefaultRange() {
  if (state.rangeTouched) return;
  const half = Math.max(1, Math.round((rate() || 50) * 5));
  $('r-from').value = clamp(state.sel - half);
  $('r-to').value = clamp(state.sel + half);
}

/** The clip range [from, to] of the fields, ordered and clamped. */
export function readRange() {
  let a = parseInt($('r-from').value, 10), b = parseInt($('r-to').value, 10);
  if (!isFinite(a)) a = firstTick();
  if (!isFinite(b)) b = lastTick();
  if (b < a) [a, b] = [b, a];
  return [clamp(a), clamp(b)];
}

// What redraws when the selection moves (the timeline, the trails), in
// the order registered; each gets whether the timeline's view moved.
const watchers = [];

/** Calls fn(viewMoved) whenever the selection moves. */
export function onMoment(fn) {
  watchers.push(fn);
}

// What follows playing, pausing and the speed (watch.js shares them).
const playbackWatchers = [];

/** Calls fn() whenever playback starts or stops or its speed changes. */
export function onPlayback(fn) {
  playbackWatchers.push(fn);
}

/** Tells the playback watchers. */
function playbackChanged() {
  for (const fn of playbackWatchers) fn();
}

/** Moves the selection to tick and redraws what depends on it. */
export function select(tick, opts = {}) {
  state.sel = clamp(tick);
  const [a, b] = state.view;
  const moved = state.sel < a || state.sel > b;
  if (moved) {
    const span = b - a;
    state.view = fitView(state.sel - span / 2, state.sel + span / 2);
  }
  if (!opts.keepRange) setDefaultRange();
  updatePos();
  for (const fn of watchers) fn(moved);
  if (!opts.noURL) {
    const u = new URL(location.href);
    u.searchParams.set('t', String(state.sel));
    history.replaceState(history.state, '', u.pathname + u.search);
  }
}

/** The timeline view [a, b] moved and sized to fit the recording. */
export function fitView(a, b) {
  const f = firstTick(), l = Math.max(lastTick(), f + 1);
  let span = Math.max(Math.min(b - a, l - f), Math.min(20, l - f));
  a = Math.max(f, Math.min(a, l - span));
  return [a, a + span];
}

/** Says where the selected moment is, in ticks, offset and time of day. */
export function updatePos() {
  const t = state.sel, w = wallAt(t);
  $('pos').textContent = `Tick ${t} · ${offset(timeAt(t))} into the recording${w ? ` · ${wall(w)} UTC` : ''}`;
}

/** Plays from the selected moment (from the start when at the end). */
export function play() {
  if (!state.rec || state.playing) return;
  // At the end (or, backwards, at the start) it starts over.
  if (state.speed > 0 && state.sel >= lastTick()) select(firstTick());
  if (state.speed < 0 && state.sel <= firstTick()) select(lastTick());
  state.playing = true;
  state.lastFrame = performance.now();
  state.playAcc = 0;
  $('p-play').textContent = 'Pause';
  $('p-play').setAttribute('aria-pressed', 'true');
  requestAnimationFrame(tickPlay);
  playbackChanged();
}

/** Stops playback. */
export function stop() {
  const was = state.playing;
  state.playing = false;
  $('p-play').textContent = 'Play';
  $('p-play').setAttribute('aria-pressed', 'false');
  if (was) playbackChanged();
}

function tickPlay(now) {
  if (!state.playing || !state.rec) return;
  const dt = (now - state.lastFrame) / 1000;
  state.lastFrame = now;
  state.playAcc += dt * (rate() || 20) * state.speed;
  const n = Math.trunc(state.playAcc); // negative backwards
  if (n !== 0) {
    state.playAcc -= n;
    const t = state.sel + n;
    if (t >= lastTick()) { select(lastTick(), { noURL: true }); stop(); return; }
    if (t <= firstTick()) { select(firstTick(), { noURL: true }); stop(); return; }
    select(t, { noURL: true });
  }
  requestAnimationFrame(tickPlay);
}

const secTicks = () => Math.max(1, Math.round(rate() || 1));
$('p-play').addEventListener('click', () => (state.playing ? stop() : play()));
$('p-start').addEventListener('click', () => { stop(); select(firstTick()); });
$('p-back').addEventListener('click', () => { stop(); select(state.sel - 1); });
$('p-fwd').addEventListener('click', () => { stop(); select(state.sel + 1); });
$('p-back-s').addEventListener('click', () => { stop(); select(state.sel - secTicks()); });
$('p-fwd-s').addEventListener('click', () => { stop(); select(state.sel + secTicks()); });
$('p-speed').addEventListener('change', () => { state.speed = parseFloat($('p-speed').value) || 1; playbackChanged(); });

/**
 * Reads a moment: a tick ("1234"), an offset ("1m04s", "90s", "1:04",
 * "1:02:03.5") or a wall-clock time of day ("22:03:15 UTC" when the
 * recording has a start).
 */
function parseMoment(s) {
  s = s.trim();
  if (/^\d+$/.test(s)) return parseInt(s, 10);
  const m = s.match(/^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+(?:\.\d+)?)s)?$/);
  if (m && (m[1] || m[2] || m[3])) return tickAt(((+m[1] || 0) * 3600 + (+m[2] || 0) * 60 + (+m[3] || 0)) * 1000);
  const wallRe = /^(\d{1,2}):(\d\d):(\d\d(?:\.\d+)?)\s*(?:UTC|Z)$/i;
  const w = s.match(wallRe);
  if (w && state.rec.start) {
    const st = new Date(state.rec.start);
    const d = Date.UTC(st.getUTCFullYear(), st.getUTCMonth(), st.getUTCDate(), +w[1], +w[2]) + parseFloat(w[3]) * 1000;
    let ms = d - st.getTime();
    if (ms < 0) ms += 86400000;
    return tickAt(ms);
  }
  const c = s.match(/^(?:(\d+):)?(\d+):(\d\d(?:\.\d+)?)$/);
  if (c) return tickAt(((+c[1] || 0) * 3600 + +c[2] * 60 + parseFloat(c[3])) * 1000);
  return NaN;
}

$('jump').addEventListener('submit', (e) => {
  e.preventDefault();
  const t = parseMoment($('jump-to').value);
  if (!isFinite(t)) {
    $('pos').textContent = `"${$('jump-to').value}" is not a tick, an offset like 1m04s, or a time like 22:03:15 UTC`;
    return;
  }
  stop();
  select(t);
});
