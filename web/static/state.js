// What the page holds (who is signed in, the open recording, the
// selected moment) and the open recording's ticks and times.

export const state = {
  who: null, // {name, role}
  rec: null, // the recording JSON
  events: null, // its events, by tick (eventColumns)
  eventTotal: 0,
  sel: 0, // the selected tick
  view: [0, 0], // the timeline's visible tick range
  ranges: [], // fetched position ranges: {from, to, tracks (a Promise)}
  playing: false, speed: 1, lastFrame: 0, playAcc: 0,
  names: null, // who held which player id when
  rangeTouched: false,
  token: 0, // bumped on every navigation, so a stale load stops drawing
};

// Whether the signed-in role may moderate, or administer.
export const isMod = () => state.who && (state.who.role === 'moderator' || state.who.role === 'admin');
export const isAdmin = () => state.who && state.who.role === 'admin';

// The recording's first and last tick and its ticks a second (0: unknown),
// and a tick clamped to the recording.
export const firstTick = () => (state.rec.first_tick !== undefined ? state.rec.first_tick : 0);
export const lastTick = () => {
  const r = state.rec;
  if (r.last_tick !== undefined) return r.last_tick;
  const c = r.chunks || [];
  return c.length ? c[c.length - 1].start_tick + c[c.length - 1].ticks - 1 : 0;
};
export const rate = () => state.rec.tick_rate || 0;
export const clamp = (t) => Math.max(firstTick(), Math.min(lastTick(), Math.round(t)));

/** The chunk index holding tick (the last one starting at or before it). */
function chunkIndex(tick) {
  const cs = state.rec.chunks || [];
  let lo = 0, hi = cs.length - 1, ans = 0;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (cs[mid].start_tick <= tick) { ans = mid; lo = mid + 1; } else hi = mid - 1;
  }
  return ans;
}

/** The offset of tick from the recording's start, in ms. */
export function timeAt(tick) {
  const cs = state.rec.chunks || [];
  if (!cs.length) return rate() ? (tick - firstTick()) / rate() * 1000 : 0;
  const c = cs[chunkIndex(tick)];
  return c.time_ms + (rate() && tick > c.start_tick ? (tick - c.start_tick) / rate() * 1000 : 0);
}

/** The tick at offset ms from the start. */
export function tickAt(ms) {
  return clamp(tickAtFloat(ms));
}

/** The time of day of tick (null when the start is unknown). */
export function wallAt(tick) {
  return state.rec.start ? new Date(Date.parse(state.rec.start) + timeAt(tick)) : null;
}

/** Like tickAt, without rounding or clamping, for drawing the axis. */
export function tickAtFloat(ms) {
  const cs = state.rec.chunks || [];
  let i = 0;
  for (let lo = 0, hi = cs.length - 1; lo <= hi;) {
    const mid = (lo + hi) >> 1;
    if (cs[mid].time_ms <= ms) { i = mid; lo = mid + 1; } else hi = mid - 1;
  }
  const c = cs[i] || { start_tick: firstTick(), time_ms: 0 };
  return c.start_tick + (rate() ? (ms - c.time_ms) / 1000 * rate() : 0);
}
