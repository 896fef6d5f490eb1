// The trails: the players' positions over the last seconds before the
// selected moment, from the tracks API, fetched a piece at a time.

import { $, offset } from './util.js';
import { api, recURL, errText } from './api.js';
import { state, rate, clamp, timeAt } from './state.js';
import { TRAILS_FONT, TRAILS_BG, setFont } from './canvas.js';
import { onMoment, select } from './moment.js';
import { loadMap, mapBounds, drawMap } from './mapdraw.js';
import { addGhost, clearGhost, ghostFor, ghostClock } from './ghost.js';

// The longest tick range of positions fetched at once, in seconds: a range
// never spans more than two chunks, and a long chunk is not decoded into
// a huge response. The page never asks for the whole recording.
const PIECE_SECONDS = 4;
// How much of the past the trails picture shows behind the selection,
// and how far ahead the first fetch reaches.
const TRAIL_SECONDS = 3;
export const AHEAD_SECONDS = 0.5;
// The steps in which a trail fades into the past.
const TRAIL_STEPS = 12;
// Fetched ranges kept in memory.
const MAX_RANGES = 48;

// id -> the recording's ground from the tracks API (field=1: a box and
// shapes, in the tracks' coordinates), or null when it has none or it
// is being asked; a few recordings' kept.
const fields = new Map();

// A piece and the trail, in ticks.
const pieceTicks = () => Math.max(20, Math.round((rate() || 50) * PIECE_SECONDS));
export const trailTicks = () => Math.max(10, Math.round((rate() || 20) * TRAIL_SECONDS));

/** Fetches the positions of [from, to], remembering the range. */
function fetchRange(from, to) {
  const r = requestTracks(state.rec.id, `from=${from}&to=${to}`, from, to);
  state.ranges.push(r);
  if (state.ranges.length > MAX_RANGES) state.ranges.shift();
  return r;
}

/**
 * Asks for the positions of recording id (the tracks API with query q)
 * and returns the range: {from, to, tracks}, tracks resolving to them
 * as {from, to, tracks: id -> {label, pts: [[tick, x, y]]}}, a gap a
 * point without a position. The answer's from and to replace the
 * range's. A range that fails leaves state.ranges.
 */
function requestTracks(id, q, from, to) {
  const r = { from, to, tracks: null };
  loadMap(id, drawTrails);
  // The first request of a recording asks for its ground too (field=1).
  const askField = !fields.has(id);
  if (askField) {
    fields.set(id, null);
    if (fields.size > 8) fields.delete(fields.keys().next().value);
    q += '&field=1';
  }
  r.tracks = api(recURL(id, `/tracks?${q}`)).then((a) => {
    if (askField && a.field) fields.set(id, a.field);
    const tracks = new Map();
    for (const t of a.tracks || []) {
      tracks.set(t.track, { label: t.label, team: t.team, pts: (t.points || []).map((p) => (p.length < 3 ? [p[0], NaN, NaN] : [p[0], p[1], p[2]])) });
    }
    r.from = a.from;
    r.to = a.to;
    return { from: a.from, to: a.to, tracks };
  });
  r.tracks.catch(() => {
    state.ranges = state.ranges.filter((x) => x !== r);
    if (askField) fields.delete(id); // ask again with the next piece
  });
  return r;
}

/**
 * Asks for the positions around tick t of recording id before its
 * metadata is in, so they arrive with it, not one round trip after it:
 * the trail and the look ahead, in seconds (the server knows the tick
 * rate). Returns the range, not yet in state.ranges: its ticks are
 * known once the recording or the answer is in.
 */
export function guessTracks(id, t) {
  return requestTracks(id, `at=${t}&before=${TRAIL_SECONDS}s&after=${AHEAD_SECONDS * 1000}ms`, null, null);
}

/**
 * Resolves to the positions covering [a, b]: the ranges fetched (or
 * on their way) already, and fetches for the gaps between them. A gap
 * is fetched at least half a piece long (backwards at the start of the
 * window, forwards elsewhere), so stepping a tick at a time does not
 * send a request per tick; no fetch is longer than a piece.
 */
export function tracksFor(a, b) {
  a = clamp(a);
  b = clamp(b);
  const have = state.ranges.filter((r) => r.to >= a && r.from <= b).sort((p, q) => p.from - q.from);
  const gaps = [];
  let t = a;
  for (const r of have) {
    if (r.from > t) gaps.push([t, r.from - 1]);
    t = Math.max(t, r.to + 1);
  }
  if (t <= b) gaps.push([t, b]);
  const len = pieceTicks(), minLen = Math.floor(len / 2);
  const out = have.slice();
  for (let [ga, gb] of gaps) {
    if (gb - ga + 1 < minLen && state.ranges.length) {
      if (ga === a) ga = clamp(gb - minLen + 1);
      else gb = clamp(ga + minLen - 1);
    }
    for (let x = ga; x <= gb; x += len) out.push(fetchRange(x, Math.min(gb, x + len - 1)));
  }
  return Promise.all(out.map((r) => r.tracks));
}

/** Reports whether fetched (or pending) ranges cover [a, b]. */
function covered(a, b) {
  let t = clamp(a);
  b = clamp(b);
  for (const r of state.ranges.slice().sort((p, q) => p.from - q.from)) {
    if (r.from <= t && r.to >= t) t = r.to + 1;
  }
  return t > b;
}

/** A stable colour for a track id. */
function colorFor(id) {
  let h = 0;
  for (let i = 0; i < id.length; i++) h = (h * 31 + id.charCodeAt(i)) >>> 0;
  // The golden angle spreads ids that differ by one character apart.
  return `hsl(${Math.round((h * 137.508) % 360)}, 80%, 62%)`;
}

let drawSeq = 0;

/**
 * Draws the trails of the last TRAIL_SECONDS before the selection, with
 * each player's name at the head. Loads the pieces that cover them first
 * (and, while playing, the next piece ahead).
 */
export async function drawTrails() {
  if (!state.rec) return;
  const seq = ++drawSeq;
  const sel = state.sel;
  const trail = trailTicks();
  // While playing, keep a second of frames ahead in hand: fetch the
  // next piece before the selection reaches the end of what is loaded.
  if (state.playing && !covered(sel, sel + Math.round(rate() || 20))) {
    tracksFor(sel, sel + pieceTicks()).catch(() => {});
  }
  let pieces, ghosts;
  try {
    [pieces, ghosts] = await Promise.all([tracksFor(sel - trail, sel), ghostFor(sel - trail, sel).catch(() => null)]);
  } catch (e) {
    if (seq === drawSeq) $('trail-note').textContent = 'Could not load positions: ' + errText(e);
    return;
  }
  if (seq !== drawSeq || !state.rec) return;
  paintTrails(pieces, sel, trail, ghosts);
}

/**
 * Merges pieces' tracks over the trail window [sel - trail, sel] into
 * tracks (id → {label, team, pts, before}), widening bounds b to every
 * point of the pieces.
 */
function mergeTracks(pieces, sel, trail, tracks, b) {
  for (const p of pieces) {
    for (const [id, t] of p.tracks) {
      let m = tracks.get(id);
      if (!m) { m = { label: t.label, team: t.team, pts: [], before: null }; tracks.set(id, m); }
      if (t.label) m.label = t.label;
      if (t.team) m.team = t.team;
      for (const pt of t.pts) {
        if (pt[0] >= sel - trail && pt[0] <= sel) m.pts.push(pt);
        // The last point before the window starts the trail: a format
        // that places things seldom (an SC2 unit every 15 s) still shows
        // where each is.
        else if (pt[0] < sel - trail && (!m.before || pt[0] >= m.before[0])) m.before = pt;
        if (isNaN(pt[1])) continue;
        // The bounds cover the whole pieces, so the picture holds still
        // while the selection moves inside them.
        b.minX = Math.min(b.minX, pt[1]); b.maxX = Math.max(b.maxX, pt[1]);
        b.minY = Math.min(b.minY, pt[2]); b.maxY = Math.max(b.maxY, pt[2]);
      }
    }
  }
  for (const m of tracks.values()) if (m.before) m.pts.push(m.before);
}

function paintTrails(pieces, sel, trail, ghosts) {
  const c = $('trails'), g = c.getContext('2d');
  const dpr = window.devicePixelRatio || 1;
  const W = c.width / dpr, H = c.height / dpr;
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.fillStyle = TRAILS_BG;
  g.fillRect(0, 0, W, H);
  // Merge the pieces' tracks (and the ghost's) over the trail window.
  const tracks = new Map(), ghostTracks = new Map();
  const bounds = { minX: Infinity, maxX: -Infinity, minY: Infinity, maxY: -Infinity };
  mergeTracks(pieces, sel, trail, tracks, bounds);
  if (ghosts) mergeTracks(ghosts, sel, trail, ghostTracks, bounds);
  // With a ground, the picture shows all of it (and what strays out).
  const field = fields.get(state.rec.id);
  if (field) {
    const [x0, y0, x1, y1] = field.box;
    bounds.minX = Math.min(bounds.minX, x0); bounds.maxX = Math.max(bounds.maxX, x1);
    bounds.minY = Math.min(bounds.minY, y0); bounds.maxY = Math.max(bounds.maxY, y1);
  }
  let { minX, maxX, minY, maxY } = bounds;
  // Many tracks (a strategy game's units) are coloured by team and left
  // unnamed: names would cover the picture.
  const many = tracks.size > 24;
  let drawn = 0, ghostDrawn = 0;
  const labels = [], boxes = [];
  if (isFinite(minX)) {
    ({ minX, maxX, minY, maxY } = mapBounds(minX, maxX, minY, maxY));
    const pad = 28;
    const sx = (W - 2 * pad) / Math.max(1e-9, maxX - minX), sy = (H - 2 * pad) / Math.max(1e-9, maxY - minY);
    const s = Math.min(sx, sy);
    const ox = pad + (W - 2 * pad - (maxX - minX) * s) / 2, oy = pad + (H - 2 * pad - (maxY - minY) * s) / 2;
    const X = (v) => ox + (v - minX) * s, Y = (v) => oy + (v - minY) * s;
    drawMap(g, X(0), Y(0), s, W, H);
    g.strokeStyle = 'rgba(255,255,255,0.06)';
    g.lineWidth = 1;
    g.beginPath();
    for (let i = 1; i < 8; i++) {
      g.moveTo((W * i) / 8, 0); g.lineTo((W * i) / 8, H);
      g.moveTo(0, (H * i) / 8); g.lineTo(W, (H * i) / 8);
    }
    g.stroke();
    setFont(g, TRAILS_FONT);
    drawField(c, g, field, X, Y);
    for (const [id, t] of tracks) {
      if (!t.pts.length) continue;
      t.pts.sort((p, q) => p[0] - q[0]);
      const col = colorFor(many && t.team ? t.team : id);
      g.strokeStyle = col;
      g.lineWidth = 2;
      g.lineJoin = 'round';
      // The trail fades into the past in TRAIL_STEPS steps: one path
      // per step, not a stroke per segment; a point less than a pixel
      // from the last one drawn is passed over (a player standing still
      // is one point, not a hundred).
      const pts = t.pts, gapTicks = trail / 3, since = sel - trail;
      let step = -1, last = null, lx = 0, ly = 0, qx = 0, qy = 0, behind = false;
      for (let i = 1; i < pts.length; i++) {
        const p = pts[i - 1], q = pts[i];
        if (p[1] !== p[1] || q[1] !== q[1] || q[0] - p[0] > gapTicks) continue; // a gap (NaN): dead or away
        const k = Math.min(TRAIL_STEPS - 1, Math.max(0, Math.floor(((q[0] - since) / trail) * TRAIL_STEPS)));
        if (k !== step || last !== p) {
          if (behind) g.lineTo(qx, qy);
          if (k !== step) {
            if (last) g.stroke();
            step = k;
            g.globalAlpha = 0.25 + 0.75 * ((k + 1) / TRAIL_STEPS);
            g.beginPath();
          }
          lx = ox + (p[1] - minX) * s;
          ly = oy + (p[2] - minY) * s;
          g.moveTo(lx, ly);
        }
        qx = ox + (q[1] - minX) * s;
        qy = oy + (q[2] - minY) * s;
        last = q;
        behind = Math.abs(qx - lx) + Math.abs(qy - ly) < 1;
        if (behind) continue;
        g.lineTo(qx, qy);
        lx = qx;
        ly = qy;
      }
      if (behind) g.lineTo(qx, qy);
      if (last) g.stroke();
      g.globalAlpha = 1;
      const h = t.pts[t.pts.length - 1];
      if (isNaN(h[1])) continue; // not in the game at the selected moment
      g.fillStyle = col;
      g.beginPath(); g.arc(X(h[1]), Y(h[2]), many ? 3 : 5, 0, Math.PI * 2); g.fill();
      drawn++;
      if (many) continue;
      const label = t.label;
      g.fillStyle = '#fff';
      // The name stays inside the picture: beside the head when it
      // fits, else moved in from the edge it would cross.
      const w = g.measureText(label).width, fs = parseFloat(g.font) || 12;
      const nx = Math.max(2, Math.min(X(h[1]) + 8, W - w - 2)), ny = Math.max(fs, Math.min(Y(h[2]) - 6, H - 2));
      g.fillText(label, nx, ny);
      boxes.push([nx, ny - fs, w, fs].map(Math.round).join(','));
      labels.push(label);
    }
    ghostDrawn = paintGhost(g, ghostTracks, sel, trail, X, Y, W, H);
  } else drawField(c, g, null);
  g.fillStyle = 'rgba(255,255,255,0.75)';
  setFont(g, TRAILS_FONT);
  g.fillText(`tick ${sel} · ${offset(timeAt(sel))}${ghostClock(sel)}`, 8, H - 8);
  c.dataset.ghostTracks = String(ghostDrawn);
  c.dataset.tracks = String(drawn);
  c.dataset.labels = labels.join('\n');
  c.dataset.labelBoxes = boxes.join(';'); // x,y,w,h of each name, in CSS pixels
  c.dataset.tick = String(sel);
  c.setAttribute('aria-label', drawn ? `Positions around tick ${sel}: ${labels.join(', ')}` : `No positions around tick ${sel}`);
  $('trail-note').textContent = drawn && many ? `${drawn} units, coloured by player, where each was last placed` :
    drawn ? `${drawn} trail${drawn === 1 ? '' : 's'}, the last ${TRAIL_SECONDS} s before the selected moment` :
    'No positions around this moment (nobody in the game, or this format records none).';
}

/**
 * Draws a recording's ground under the trails (none: nothing): its
 * outlines and lines, and each goal as a ring in its colour, named. The
 * canvas's data-field lists what was drawn ("kind:label" by ";") and
 * data-field-box the first outline's x,y,w,h in CSS pixels.
 */
function drawField(c, g, field, X, Y) {
  if (!field) {
    delete c.dataset.field;
    delete c.dataset.fieldBox;
    return;
  }
  const drawn = [];
  let box = null;
  g.save();
  for (const s of field.shapes || []) {
    const pts = s.points || [];
    if (!pts.length) continue;
    g.strokeStyle = s.color || 'rgba(226,232,240,0.55)';
    g.fillStyle = s.color || 'rgba(226,232,240,0.7)';
    if (s.kind === 'goal') {
      const x = X(pts[0][0]), y = Y(pts[0][1]);
      g.lineWidth = 3;
      g.beginPath(); g.arc(x, y, 10, 0, Math.PI * 2); g.stroke();
      if (s.label) {
        const w = g.measureText(s.label).width;
        g.fillText(s.label, x - w / 2, y + 26);
      }
    } else {
      g.lineWidth = s.kind === 'outline' ? 2 : 1;
      g.setLineDash(s.kind === 'line' ? [6, 6] : []);
      g.beginPath();
      g.moveTo(X(pts[0][0]), Y(pts[0][1]));
      for (const p of pts.slice(1)) g.lineTo(X(p[0]), Y(p[1]));
      if (s.kind === 'outline') g.closePath();
      g.stroke();
      g.setLineDash([]);
      if (s.kind === 'outline' && !box) {
        const xs = pts.map((p) => X(p[0])), ys = pts.map((p) => Y(p[1]));
        box = [Math.min(...xs), Math.min(...ys), Math.max(...xs) - Math.min(...xs), Math.max(...ys) - Math.min(...ys)];
        if (s.label) g.fillText(s.label, box[0] + 6, box[1] + 16);
      }
    }
    drawn.push(`${s.kind}:${s.label || ''}`);
  }
  g.restore();
  c.dataset.field = drawn.join(';');
  if (box) c.dataset.fieldBox = box.map(Math.round).join(',');
  else delete c.dataset.fieldBox;
}

/**
 * Draws the ghost's tracks: dashed, pale, without the fade, each head a
 * ring named "ghost · NAME". Returns how many heads it drew.
 */
function paintGhost(g, tracks, sel, trail, X, Y, W, H) {
  let n = 0;
  g.save();
  g.setLineDash([5, 4]);
  g.lineWidth = 2;
  g.globalAlpha = 0.6;
  for (const [, t] of tracks) {
    if (!t.pts.length) continue;
    t.pts.sort((p, q) => p[0] - q[0]);
    g.strokeStyle = '#e5e7eb';
    g.beginPath();
    let open = false;
    for (let i = 0; i < t.pts.length; i++) {
      const p = t.pts[i];
      if (p[1] !== p[1] || i > 0 && p[0] - t.pts[i - 1][0] > trail / 3) { open = false; if (p[1] !== p[1]) continue; }
      if (open) g.lineTo(X(p[1]), Y(p[2]));
      else g.moveTo(X(p[1]), Y(p[2]));
      open = true;
    }
    g.stroke();
    const h = t.pts[t.pts.length - 1];
    if (isNaN(h[1]) || h[0] < sel - trail) continue;
    g.setLineDash([]);
    g.beginPath(); g.arc(X(h[1]), Y(h[2]), 6, 0, Math.PI * 2); g.stroke();
    g.setLineDash([5, 4]);
    g.fillStyle = '#e5e7eb';
    const label = `ghost · ${t.label}`, w = g.measureText(label).width, fs = parseFloat(g.font) || 12;
    g.fillText(label, Math.max(2, Math.min(X(h[1]) + 9, W - w - 2)), Math.max(fs, Math.min(Y(h[2]) + 16, H - 2)));
    n++;
  }
  g.restore();
  return n;
}

// The ghost form (ghost.js): a recording to draw over this one.
$('ghost-form').addEventListener('submit', (e) => {
  e.preventDefault();
  addGhost($('ghost-id').value.trim(), drawTrails);
});
$('ghost-clear').addEventListener('click', () => clearGhost(drawTrails));

/** Shows the picture and its playback controls (openWherePlaced hides them). */
export function showPicture() {
  clearGhost();
  $('trails').hidden = false;
  $('trails').parentElement.querySelector('.controls').hidden = false;
}

/**
 * Moves a page opened on a moment with nothing to see (no tick in its
 * address, nothing placed there) to the first tick at which anything is
 * placed, unless the selection moved meanwhile; a recording that places
 * nothing loses its empty picture and playback controls, and says why.
 * stale() tells that the page moved on to another recording.
 */
export async function openWherePlaced(id, stale) {
  if ($('trails').dataset.tracks !== '0') return;
  const at = state.sel;
  let a;
  try {
    a = await api(recURL(id, '/tracks?first=1'));
  } catch {
    return; // the note already says there is nothing here
  }
  if (stale() || state.sel !== at) return;
  if (a.positions) {
    select(a.first);
    return;
  }
  $('trails').hidden = true;
  $('trails').parentElement.querySelector('.controls').hidden = true;
  $('trail-note').textContent = 'Nothing is placed in this recording: its format records no positions (an SC2 replay before 2.0.8 has no tracker events), or nobody ever entered the game.';
}

// The trails follow the selected moment.
onMoment(() => drawTrails());
