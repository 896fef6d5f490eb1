// The map under the trails: the game layer of the map a recording was
// played on (GET …/recordings/{id}/map: tiles as kinds, run-length
// encoded), drawn once into an offscreen canvas of one pixel a tile and
// blitted under the trails on every frame, in the trails' coordinates.
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

/** The decoded map of the open recording, or null. */
function current() {
  const m = state.rec && maps.get(state.rec.id);
  return m ? m.map : null;
}

/**
 * Decodes an answer into {sha256, width, height, tile, canvas}: the
 * runs (kind byte, LEB128 length) painted into an offscreen canvas of
 * width×height pixels.
 */
function decode(a) {
  const w = a.width, h = a.height, n = w * h;
  const bin = atob(a.runs);
  const px = new Uint32Array(n);
  // Colours as little-endian RGBA words.
  const word = (hex) => {
    const v = parseInt(hex.slice(1), 16);
    return (0xff << 24 | (v & 0xff) << 16 | (v >> 8 & 0xff) << 8 | v >> 16) >>> 0;
  };
  const colour = a.kinds.map((k) => (MAP_COLORS[k] ? word(MAP_COLORS[k]) : 0));
  let at = 0;
  for (let i = 0; i < bin.length && at < n;) {
    const k = bin.charCodeAt(i++);
    let len = 0, shift = 0, b;
    do { b = bin.charCodeAt(i++); len += (b & 0x7f) * 2 ** shift; shift += 7; } while (b & 0x80 && i < bin.length);
    const end = Math.min(n, at + len), c = colour[k] || 0;
    if (c) px.fill(c, at, end);
    at = end;
  }
  const canvas = document.createElement('canvas');
  canvas.width = w;
  canvas.height = h;
  canvas.getContext('2d').putImageData(new ImageData(new Uint8ClampedArray(px.buffer), w, h), 0, 0);
  return { sha256: a.sha256, width: w, height: h, tile: a.tile_size || 32, canvas };
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
 * (0, 0) is at canvas (x0, y0) and a position unit is s pixels: the part
 * of the offscreen tiles in view, one blit, unsmoothed.
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
    g.drawImage(m.canvas, sx, sy, ex - sx, ey - sy, x0 + sx * px, y0 + sy * px, (ex - sx) * px, (ey - sy) * px);
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
