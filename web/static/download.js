// Downloads: fetched with the token, saved under the server's name.

import { api, errText } from './api.js';
import { el, bytes } from './util.js';

export async function download(url, status) {
  status.textContent = 'Downloading…';
  try {
    const res = await api(url, { raw: true });
    const blob = await res.blob();
    const name = fileName(res.headers.get('Content-Disposition')) || 'recording.bin';
    const a = el('a', { href: URL.createObjectURL(blob), download: name });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 60000);
    status.textContent = `Downloaded ${name} (${bytes(blob.size)})`;
    status.dataset.downloaded = name;
  } catch (e) {
    status.textContent = 'Download failed: ' + errText(e);
  }
}

/** Reads the file name out of a Content-Disposition header. */
function fileName(cd) {
  if (!cd) return '';
  let m = cd.match(/filename\*\s*=\s*UTF-8''([^;]+)/i);
  if (m) { try { return sanitize(decodeURIComponent(m[1])); } catch (e) { /* fall through */ } }
  m = cd.match(/filename\s*=\s*"([^"]*)"/i) || cd.match(/filename\s*=\s*([^;]+)/i);
  return m ? sanitize(m[1].trim()) : '';
}
const sanitize = (s) => s.replace(/[\\/:*?"<>|\x00-\x1f]/g, '_');
