// The map under the trails: the game layer of the map a recording was
// played on (GET …/recordings/{id}/map: tiles as kinds, run-length
// encoded), decoded into a kind per tile; the tiles in view are painted
// into an offscreen canvas of one pixel a tile (again only when the view
// moves to other tiles) and blitted under the trails on every frame, in
// the trails' coordinates.
// A recording whose map is not in the archive draws as before.

import { $ } from './util.js';
import { api, recURL } from './api.js';
import { state } from './state.js';

// The colours of the tile kinds (the answer's kinds names them), muted
// against the trails' dark background so that the trails stay legible;
// kinds not listed (air, entities) are not drawn.
export const MAP_COLORS = {
  solid: '#56657a',
  nohook: '#8b6d45',
  death: '#c2412f',
  freeze: '#2f63b8',
  deep_freeze: '#6a3fb0',
  unfreeze: '#2f9a5c',
  deep_unfreeze: '#7dc98f',
  start: '#34c6c0',
  finish: '#e7bb2c',
  checkpoint: '#9c8a3e',
};
// Legend order and labels.
const LEGEND = [['solid', 'wall'], ['nohook', 'no hook'], ['death', 'death'], ['freeze', 'freeze'], ['deep_freeze', 'deep freeze'],
  ['unfreeze', 'unfreeze'], ['start', 'start'], ['finish', 'finish']];
// The least the picture shows around the trails when a map is drawn, in
// tiles: the players' surroundings, not only the box of their paths.
const MIN_TILES = 24;

// id -> {p: Promise, map: the decoded map or null}.
const maps = new Map();

/**
 * Asks for recording id's map once (later calls return at once); calls
 * redraw when it arrives after the trails were painted for the recording.
 */
export function loadMap(id, redraw) {
  if (maps.has(id)) return;
  const m = { p: null, map: null };
  maps.set(id, m);
  // Keep the last few: one per recording opened.
  if (maps.size > 8) maps.delete(maps.keys().next().value);
  m.p = api(recURL(id, '/map')).then((a) => {
    m.map = decode(a);
    if (state.rec && state.rec.id === id && document.body.dataset.ready === 'recording') redraw();
  }, () => { /* no map (no_map), or none for this format: the plain grid */ });
}

/**
 * Resolves once recording id's map (asked for by loadMap) is decoded, or
 * known to be missing; at once when it was never asked for.
 */
export function mapSettled(id) {
  const m = maps.get(id);
  return m && m.p ? m.p : Promise.resolve();
}

/** The decoded map of the open recording, or null. */
function current() {
  const m = state.rec && maps.get(state.rec.id);
  return m ? m.map : null;
}

/**
 * Decodes an answer into {sha256, width, height, tile, kinds, colours}:
 * the runs (kind byte, LEB128 length) into one kind byte per tile, and
 * each kind's colour as a little-endian RGBA word (0: not drawn). Only
 * the tiles in view are ever painted (drawMap): a map is thousands of
 * tiles wide, the picture shows a few dozen.
 */
function decode(a) {
  const w = a.width, h = a.height, n = w * h;
  const bin = atob(a.runs);
  const kinds = new Uint8Array(n);
  // Colours as little-endian RGBA words.
  const word = (hex) => {
    const v = parseInt(hex.slice(1), 16);
    return (0xff << 24 | (v & 0xff) << 16 | (v >> 8 & 0xff) << 8 | v >> 16) >>> 0;
  };
  const colours = new Uint32Array(256);
  a.kinds.forEach((k, i) => { if (i < 256 && MAP_COLORS[k]) colours[i] = word(MAP_COLORS[k]); });
  let at = 0;
  for (let i = 0; i < bin.length && at < n;) {
    const k = bin.charCodeAt(i++);
    let len = 0, shift = 0, b;
    do { b = bin.charCodeAt(i++); len += (b & 0x7f) * 2 ** shift; shift += 7; } while (b & 0x80 && i < bin.length);
    const end = Math.min(n, at + len);
    if (k) kinds.fill(k, at, end);
    at = end;
  }
  return { sha256: a.sha256, width: w, height: h, tile: a.tile_size || 32, kinds, colours, view: null };
}

/**
 * Returns a canvas of one pixel a tile holding tiles [sx, ex) × [sy, ey)
 * of map m, painted once for that rectangle and kept while the view
 * stays on it.
 */
function tilesIn(m, sx, sy, ex, ey) {
  const v = m.view;
  if (v && v.sx === sx && v.sy === sy && v.ex === ex && v.ey === ey) return v.canvas;
  const w = ex - sx, h = ey - sy;
  const px = new Uint32Array(w * h);
  for (let y = 0; y < h; y++) {
    const row = (sy + y) * m.width + sx;
    for (let x = 0; x < w; x++) px[y * w + x] = m.colours[m.kinds[row + x]];
  }
  const canvas = v && v.canvas.width === w && v.canvas.height === h ? v.canvas : document.createElement('canvas');
  canvas.width = w;
  canvas.height = h;
  canvas.getContext('2d').putImageData(new ImageData(new Uint8ClampedArray(px.buffer), w, h), 0, 0);
  m.view = { sx, sy, ex, ey, canvas };
  return canvas;
}

/**
 * Widens the trails' bounds (in position units) to at least MIN_TILES
 * tiles each way around their centre when a map is drawn, so the map
 * around the players shows; unchanged without a map.
 */
export function mapBounds(minX, maxX, minY, maxY) {
  const m = current();
  if (m) {
    const least = MIN_TILES * m.tile;
    if (maxX - minX < least) { const c = (minX + maxX) / 2; minX = c - least / 2; maxX = c + least / 2; }
    if (maxY - minY < least) { const c = (minY + maxY) / 2; minY = c - least / 2; maxY = c + least / 2; }
  }
  return { minX, maxX, minY, maxY };
}

/**
 * Draws the open recording's map on g (W×H css pixels) where position
 * (0, 0) is at canvas (x0, y0) and a position unit is s pixels: the tiles
 * in view, one blit, unsmoothed.
 */
export function drawMap(g, x0, y0, s, W, H) {
  const m = current();
  const c = $('trails');
  const l = $('map-legend');
  if (!m) {
    delete c.dataset.map;
    if (l) l.hidden = true;
    return;
  }
  c.dataset.mapOrigin = `${x0},${y0},${s}`;
  const px = m.tile * s; // a tile in canvas pixels
  const sx = Math.max(0, Math.floor(-x0 / px)), sy = Math.max(0, Math.floor(-y0 / px));
  const ex = Math.min(m.width, Math.ceil((W - x0) / px)), ey = Math.min(m.height, Math.ceil((H - y0) / px));
  if (ex > sx && ey > sy) {
    const smooth = g.imageSmoothingEnabled;
    g.imageSmoothingEnabled = false;
    g.drawImage(tilesIn(m, sx, sy, ex, ey), x0 + sx * px, y0 + sy * px, (ex - sx) * px, (ey - sy) * px);
    g.imageSmoothingEnabled = smooth;
  }
  if (c.dataset.map !== m.sha256) {
    c.dataset.map = m.sha256;
    window.replayMapAt = window.replayMapAt || performance.now();
    if (l) l.hidden = false;
    else legend();
  }
}

/** Adds the colours' legend under the picture. */
function legend() {
  const p = document.createElement('p');
  p.id = 'map-legend';
  p.className = 'muted';
  p.append('Map: ');
  for (const [k, label] of LEGEND) {
    const sw = document.createElement('span');
    sw.style.cssText = `display:inline-block;width:0.8em;height:0.8em;margin:0 0.3em 0 0.6em;vertical-align:-0.05em;background:${MAP_COLORS[k]}`;
    p.append(sw, label);
  }
  $('trail-note').after(p);
}
