// Ghosts: another recording's positions drawn over this one's trails,
// aligned at the two runs' starts (the first tick at which each places
// anything), with both clocks, so a moderator can hold a suspicious run
// against an earlier one on the same map.

import { $ } from './util.js';
import { api, recURL, errText } from './api.js';
import { state, rate } from './state.js';

// How many seconds of the ghost are fetched at once, and how many such
// pieces are kept.
const PIECE_SECONDS = 5;
const MAX_PIECES = 16;

/**
 * The ghost, or null: {id, label, rate, first, offset (the ghost's tick
 * minus this recording's at the same moment of the run), pieces: Map of
 * piece number to a Promise of its tracks}.
 */
let ghost = null;

/** The ghost's pieces' length in its ticks. */
const pieceTicks = (g) => Math.max(20, Math.round((g.rate || 50) * PIECE_SECONDS));

/**
 * Adds recording ref (an id or a unique prefix) as the ghost of the open
 * recording, or says why not in the ghost form's note. redraw is called
 * once it is in.
 */
export async function addGhost(ref, redraw) {
  const note = $('ghost-note');
  const rec = state.rec;
  if (!rec || !ref) return;
  note.textContent = 'Loading the ghost…';
  try {
    const [g, own, theirs] = await Promise.all([
      api(recURL(ref)),
      api(recURL(rec.id, '/tracks?first=1')),
      api(recURL(ref, '/tracks?first=1')),
    ]);
    if (state.rec !== rec) return;
    if (g.id === rec.id) throw new Error('that is this recording');
    if (!own.positions || !theirs.positions) throw new Error(own.positions ? 'it places nobody' : 'this recording places nobody');
    const gl = `${g.map || g.format} · ${(g.players || []).map((p) => p.name).filter(Boolean).slice(0, 3).join(', ') || g.id.slice(0, 8)}`;
    ghost = { id: g.id, label: gl, rate: g.tick_rate || 0, first: theirs.first, own: own.first, offset: theirs.first - own.first, pieces: new Map() };
    note.textContent = `Ghost: ${gl} (${g.id.slice(0, 8)}), aligned at the runs' starts (this one's tick ${own.first}, the ghost's ${theirs.first}).`;
    if (g.map && rec.map && g.map !== rec.map) note.textContent += ` Another map: ${g.map}.`;
    $('ghost-clear').hidden = false;
    redraw();
  } catch (e) {
    if (state.rec === rec) note.textContent = 'No ghost: ' + errText(e);
  }
}

/** Removes the ghost. */
export function clearGhost(redraw) {
  ghost = null;
  $('ghost-note').textContent = '';
  $('ghost-clear').hidden = true;
  if (redraw) redraw();
}

/**
 * Resolves to the ghost's tracks over this recording's ticks [a, b],
 * their ticks moved onto this recording's (null without a ghost): a list
 * of pieces {tracks: Map of id to {label, pts}}.
 */
export function ghostFor(a, b) {
  const g = ghost;
  if (!g) return Promise.resolve(null);
  const len = pieceTicks(g);
  const ga = Math.max(0, a + g.offset), gb = b + g.offset;
  if (gb < 0) return Promise.resolve([]);
  const out = [];
  for (let p = Math.floor(ga / len); p <= Math.floor(gb / len); p++) {
    let pr = g.pieces.get(p);
    if (!pr) {
      pr = api(recURL(g.id, `/tracks?from=${p * len}&to=${p * len + len - 1}`)).then((ans) => {
        const tracks = new Map();
        for (const t of ans.tracks || []) {
          tracks.set(t.track, { label: t.label, pts: (t.points || []).map((q) => (q.length < 3 ? [q[0] - g.offset, NaN, NaN] : [q[0] - g.offset, q[1], q[2]])) });
        }
        return { tracks };
      });
      pr.catch(() => g.pieces.delete(p));
      g.pieces.set(p, pr);
      if (g.pieces.size > MAX_PIECES) g.pieces.delete(g.pieces.keys().next().value);
    }
    out.push(pr);
  }
  return Promise.all(out).then((ps) => (ghost === g ? ps : null));
}

/**
 * The clocks line: this run's time since its start and the ghost's at the
 * same moment of its run, with the ghost's tick; "" without a ghost.
 */
export function ghostClock(sel) {
  const g = ghost;
  if (!g) return '';
  const run = (ticks, r) => (r ? fmtRun(ticks / r) : `${ticks} ticks`);
  const own = sel - g.own;
  return ` · run ${run(own, rate())} · ghost run ${run(own, g.rate)} (its tick ${sel + g.offset})`;
}

/** Seconds as m:ss.cc (negative before the run starts). */
function fmtRun(s) {
  const neg = s < 0;
  s = Math.abs(s);
  const m = Math.floor(s / 60), r = s - m * 60;
  return `${neg ? '−' : ''}${m}:${r.toFixed(2).padStart(5, '0')}`;
}

/**
 * Offers the open recording's ghosts: the other recordings of its map,
 * fastest first (a map's record runs), as the ghost field's suggestions.
 * stale() tells that the page moved on to another recording.
 */
export async function suggestGhosts(rec, stale) {
  const list = $('ghost-runs');
  list.replaceChildren();
  if (!rec.map) return;
  let a;
  try {
    const q = encodeURIComponent(`map:"${rec.map.replace(/["\\]/g, '')}"`);
    a = await api(`/api/v1/recordings?q=${q}&sort=duration&order=asc&limit=10`);
  } catch {
    return; // suggestions only: the field still takes any id
  }
  if (stale()) return;
  for (const h of a.hits || []) {
    if (h.id === rec.id) continue;
    const o = document.createElement('option');
    o.value = h.id.slice(0, 8);
    o.label = `${fmtRun((h.duration_ms || 0) / 1000)} · ${(h.players || []).slice(0, 3).join(', ')}`;
    list.append(o);
  }
}

/** The ghost's label, for the picture. */
export const ghostLabel = () => (ghost ? ghost.label : '');
