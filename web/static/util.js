// Small helpers of the page: elements, numbers, times and sizes as text,
// the notice line.

/** The element with id. */
export const $ = (id) => document.getElementById(id);

/**
 * Makes an element: attrs sets its attributes (class, text, on* listeners,
 * dataset), kids are appended.
 */
export function el(tag, attrs = {}, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(e.dataset, v);
    else e.setAttribute(k, v === true ? '' : v);
  }
  for (const k of kids) if (k !== null && k !== undefined) e.append(k);
  return e;
}

const pad = (n, w = 2) => String(n).padStart(w, '0');

/** Formats a wall-clock time (Date or RFC 3339) in UTC. */
export function wall(t) {
  const d = t instanceof Date ? t : new Date(t);
  if (isNaN(d)) return '';
  return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ` +
    `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`;
}

/** Formats an offset in milliseconds as h:mm:ss.cc or m:ss.cc. */
export function offset(ms) {
  if (!isFinite(ms)) return '';
  const neg = ms < 0;
  ms = Math.abs(ms);
  const h = Math.floor(ms / 3600000), m = Math.floor(ms / 60000) % 60;
  const s = Math.floor(ms / 1000) % 60, cs = Math.floor(ms / 10) % 100;
  const out = (h ? `${h}:${pad(m)}` : `${m}`) + `:${pad(s)}.${pad(cs)}`;
  return neg ? '-' + out : out;
}

/** Formats a length in milliseconds as 1h02m03s, 2m03s or 3s. */
export function duration(ms) {
  if (!ms) return '-';
  const s = Math.round(ms / 1000);
  const h = Math.floor(s / 3600), m = Math.floor(s / 60) % 60;
  return h ? `${h}h${pad(m)}m${pad(s % 60)}s` : m ? `${m}m${pad(s % 60)}s` : `${s}s`;
}

/** Formats a size in bytes with a binary unit. */
export function bytes(n) {
  if (n === undefined || n === null) return '';
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : n) + ' ' + u[i];
}

/** Shows msg in the notice line (hides it when empty). */
export function notice(msg) {
  const n = $('notice');
  n.textContent = msg || '';
  n.hidden = !msg;
}
