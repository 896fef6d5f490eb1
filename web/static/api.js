// The JSON API under /api/v1/, called with the tab's token; a 401 asks
// the user for one.

import { $ } from './util.js';

export const TOKEN_KEY = 'replay.token';
export const API = '/api/v1';

export class APIError extends Error {
  constructor(status, body) {
    super(body.error || `HTTP ${status}`);
    this.status = status;
    this.code = body.code || '';
    this.body = body;
  }
}

let loginPromise = null;

/**
 * Calls the API with the stored token. A 401 asks for a token and tries
 * again; other errors throw APIError. opts: method, json (a body), raw
 * (return the Response).
 */
export async function api(path, opts = {}) {
  const headers = new Headers();
  const tok = sessionStorage.getItem(TOKEN_KEY);
  if (tok) headers.set('Authorization', 'Bearer ' + tok);
  let body;
  if (opts.json !== undefined) {
    headers.set('Content-Type', 'application/json');
    body = JSON.stringify(opts.json);
  }
  const send = () => fetch(path, { method: opts.method || 'GET', headers, body });
  const early = opts.method || body !== undefined ? null : takeEarly(path);
  const res = early ? await early.catch(send) : await send();
  if (res.status === 401) {
    const b = await res.json().catch(() => ({}));
    await askToken(tok ? 'That token was not accepted: ' + (b.error || 'unauthorized') : (b.error || 'The archive asks for a token.'));
    return api(path, opts);
  }
  if (!res.ok) {
    const b = await res.json().catch(() => ({ error: res.statusText }));
    throw new APIError(res.status, b);
  }
  return opts.raw ? res : res.json();
}

/**
 * Takes the response to GET path that boot.js asked for while the page
 * was parsed (a Promise), or null: each is taken once, by the first
 * caller, with the token the page started with.
 */
function takeEarly(path) {
  const early = window.replayEarly;
  const p = early && early.get(path);
  if (!p) return null;
  early.delete(path);
  return p;
}

/** Shows the sign-in dialog; resolves once a token is stored. */
export function askToken(why) {
  if (loginPromise) return loginPromise;
  const dlg = $('login-dlg');
  $('login-why').textContent = why;
  $('login-token').value = '';
  loginPromise = new Promise((resolve, reject) => {
    const done = (ok) => {
      $('login-form').onsubmit = null;
      $('login-cancel').onclick = null;
      dlg.oncancel = null;
      dlg.close();
      loginPromise = null;
      ok ? resolve() : reject(new APIError(401, { error: 'not signed in', code: 'unauthorized' }));
    };
    $('login-form').onsubmit = (e) => {
      e.preventDefault();
      const t = $('login-token').value.trim();
      if (!t) return;
      sessionStorage.setItem(TOKEN_KEY, t);
      done(true);
    };
    $('login-cancel').onclick = () => done(false);
    dlg.oncancel = (e) => { e.preventDefault(); done(false); };
  });
  dlg.showModal();
  $('login-token').focus();
  return loginPromise;
}

export const recURL = (id, rest = '') => `${API}/recordings/${encodeURIComponent(id)}${rest}`;

/** An error as the user reads it: the API's message and code. */
export function errText(e) {
  return e instanceof APIError ? `${e.message}${e.code ? ` (${e.code})` : ''}` : String(e && e.message || e);
}
