// Uploads from the page (admins: the API's POST /api/v1/recordings takes
// an admin): recording files dropped anywhere on the page or picked with
// Upload… in the header, sent one at a time with a progress bar each and
// the outcome in words. File names and the server's messages are set as
// text only.

import { $, el, bytes, wall } from './util.js';
import { API, TOKEN_KEY, askToken } from './api.js';
import { isMod } from './state.js';

/** Shows the Upload… button to admins only (main.js, once who is known). */
export function showUploadControls() {
  $('upload-pick').hidden = !isMod();
  if (!isMod()) $('drop-zone').hidden = true;
}

const hasFiles = (e) => !!e.dataTransfer && Array.from(e.dataTransfer.types || []).includes('Files');

// Dropping files anywhere on the page uploads them; for anyone but an
// admin the page takes no drop (the browser does what it does).
let depth = 0;
document.addEventListener('dragenter', (e) => {
  if (!isMod() || !hasFiles(e)) return;
  depth++;
  $('drop-zone').hidden = false;
});
document.addEventListener('dragleave', (e) => {
  if (!isMod() || !hasFiles(e)) return;
  if (--depth <= 0) { depth = 0; $('drop-zone').hidden = true; }
});
document.addEventListener('dragover', (e) => {
  if (!isMod() || !hasFiles(e)) return;
  e.preventDefault();
  e.dataTransfer.dropEffect = 'copy';
});
document.addEventListener('drop', (e) => {
  depth = 0;
  $('drop-zone').hidden = true;
  if (!isMod() || !e.dataTransfer || !e.dataTransfer.files.length) return;
  e.preventDefault();
  uploadFiles(e.dataTransfer.files);
});
$('upload-pick').addEventListener('click', () => $('upload-file').click());
$('upload-file').addEventListener('change', () => {
  const files = $('upload-file').files;
  if (files.length) uploadFiles(files);
  $('upload-file').value = '';
});

let queue = Promise.resolve();

/** Lists each file with a progress bar and uploads them one after another. */
export function uploadFiles(fileList) {
  const files = Array.from(fileList);
  $('uploads').hidden = false;
  for (const f of files) {
    const bar = el('progress', { max: Math.max(1, f.size), value: 0, 'aria-label': `Upload of ${f.name}` });
    const status = el('span', { class: 'up-status', text: 'waiting' });
    const li = el('li', { class: 'upload', dataset: { name: f.name, outcome: 'waiting', progressEvents: '0' } },
      el('span', { class: 'up-name', text: f.name }), ' ', el('span', { class: 'muted', text: bytes(f.size) }), ' ', bar, ' ', status);
    $('up-list').prepend(li);
    queue = queue.then(() => uploadOne(f, li, bar, status));
  }
  return queue;
}

/** Sends f with XMLHttpRequest (for its upload progress); resolves with the status and the JSON answer. */
function send(f, li, bar, status) {
  return new Promise((resolve) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', `${API}/recordings?name=${encodeURIComponent(f.name)}`);
    const tok = sessionStorage.getItem(TOKEN_KEY);
    if (tok) xhr.setRequestHeader('Authorization', 'Bearer ' + tok);
    xhr.setRequestHeader('Content-Type', 'application/octet-stream');
    xhr.upload.onprogress = (e) => {
      li.dataset.progressEvents = String(+li.dataset.progressEvents + 1);
      if (e.lengthComputable) {
        bar.value = e.loaded;
        li.dataset.loaded = String(e.loaded);
        if (e.loaded > 0 && e.loaded < e.total) li.dataset.partial = 'true';
        status.textContent = `sending: ${Math.floor(100 * e.loaded / Math.max(1, e.total))}%`;
      }
    };
    xhr.upload.onload = () => { bar.value = bar.max; status.textContent = 'sent; the archive is reading it'; };
    xhr.onload = () => {
      let body = {};
      try { body = JSON.parse(xhr.responseText); } catch (e) { body = { error: xhr.statusText || `HTTP ${xhr.status}` }; }
      resolve({ status: xhr.status, body });
    };
    xhr.onerror = () => resolve({ status: 0, body: {} });
    xhr.onabort = () => resolve({ status: -1, body: {} });
    status.textContent = 'sending';
    xhr.send(f);
  });
}

/** A link to recording id's page, its id as text. */
const recLink = (id) => el('a', { href: `/r/${encodeURIComponent(id)}`, 'data-nav': true, text: id });

/** The limit a 413's message names ("… (N bytes)"), in words. */
function limitOf(msg) {
  const m = /\((\d+) bytes/.exec(msg || '');
  return m ? bytes(+m[1]) : 'unknown';
}

async function uploadOne(f, li, bar, status) {
  let r = await send(f, li, bar, status);
  if (r.status === 401) {
    let signedIn = true;
    try { await askToken(r.body.error || 'The archive asks for a token.'); } catch (e) { signedIn = false; }
    if (signedIn) r = await send(f, li, bar, status);
  }
  const b = r.body || {};
  const msg = b.error || '';
  let outcome = 'error';
  const out = [];
  switch (r.status) {
    case 201:
      outcome = 'archived';
      bar.value = bar.max;
      out.push('Archived as ', recLink(b.id), ` (${b.format || 'unknown format'}, ${bytes(b.stored_bytes)} stored)`);
      for (const w of b.warnings || []) out.push(el('br'), el('span', { class: 'muted', text: `warning: ${w}` }));
      li.dataset.id = b.id;
      break;
    case 409:
      if (b.code === 'duplicate') {
        outcome = 'duplicate';
        out.push('Already archived as ', recLink(b.id));
        li.dataset.id = b.id;
      } else {
        out.push(`Refused: ${msg}`);
        if (b.id) out.push(' (', recLink(b.id), ')');
      }
      break;
    case 410: {
      outcome = 'taken_down';
      out.push('Taken down: this recording may not be archived again');
      const t = b.takedown;
      if (t) out.push(el('span', { class: 'muted', text: ` (on ${wall(t.at)} UTC${t.by ? ` by ${t.by}` : ''}${t.reason ? `: ${t.reason}` : ''})` }));
      break;
    }
    case 413:
      outcome = 'too_large';
      out.push(`Too large (limit ${limitOf(msg)})`);
      break;
    case 403:
      out.push(`Not allowed: ${msg || 'uploads take a moderator\'s or an admin\'s token'}`);
      break;
    case 0:
      out.push('The upload failed: the connection was closed before an answer came (a file over the server\'s size limit is cut off so)');
      break;
    case -1:
      out.push('The upload was cancelled');
      break;
    case 401:
      out.push('Not signed in: sign in with an admin\'s token and drop the file again');
      break;
    default:
      // 400, 415, 422 (not a recording, expired) and the rest: the server's words.
      out.push(`Refused (${r.status}${b.code ? ` ${b.code}` : ''}): ${msg || 'no reason given'}`);
  }
  li.dataset.outcome = outcome;
  li.classList.add(outcome === 'archived' || outcome === 'duplicate' ? 'ok' : 'bad');
  status.replaceChildren(...out);
}
