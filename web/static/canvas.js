// The recording page's two canvases: their size, fonts and backgrounds.

import { $ } from './util.js';

// The canvases' fonts. They are set when a canvas is sized, while the
// panels are still empty: setting a canvas font makes the browser
// compute the page's style, which after the tables are filled is all of
// theirs.
export const TIMELINE_FONT = '11px system-ui, sans-serif';
export const TRAILS_FONT = '12px system-ui, sans-serif';
// The canvases' backgrounds (as in app.css).
export const TIMELINE_BG = '#fbfcfd';
export const TRAILS_BG = '#10161f';

export function sizeCanvases() {
  const dpr = window.devicePixelRatio || 1;
  for (const c of [$('timeline'), $('trails')]) {
    const w = Math.max(200, Math.round(c.clientWidth));
    const h = c.id === 'trails' ? Math.round(Math.min(420, Math.max(240, w * 0.6))) : 96;
    c.style.height = h + 'px';
    c.width = Math.round(w * dpr);
    c.height = Math.round(h * dpr);
    // A new size resets the canvas's state, its font with it.
    const g = c.getContext('2d');
    setFont(g, c.id === 'trails' ? TRAILS_FONT : TIMELINE_FONT);
    // Paint the background now: the first drawing on a canvas of a new
    // size makes the browser set up its bitmap, which is better done
    // while the API's answers are on their way than when the page draws.
    g.fillStyle = c.id === 'trails' ? TRAILS_BG : TIMELINE_BG;
    g.fillRect(0, 0, c.width, c.height);
  }
}

/** Sets a canvas font, unless it is set already (see TIMELINE_FONT). */
export function setFont(g, font) {
  if (g.font !== font) g.font = font;
}
