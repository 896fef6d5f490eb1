// The admin pages (/?admin=takedowns, tokens, retention): what only the
// command line did before, over the existing API. Admins only: for anyone
// else there is no Admin link and the page asks the API nothing (the API
// answers 403 anyway). Every change goes through a confirmation dialog;
// names, reasons and messages are set as text only.

import { $, el, wall, bytes, notice } from './util.js';
import { API, api, errText } from './api.js';
import { state, isAdmin } from './state.js';

const PAGES = ['takedowns', 'tokens', 'retention'];

/** The admin page the URL names ('' when it names none). */
export function adminRoute() {
  if (location.pathname !== '/') return '';
  const p = new URLSearchParams(location.search);
  if (!p.has('admin')) return '';
  return PAGES.includes(p.get('admin')) ? p.get('admin') : 'takedowns';
}

/** Shows the Admin link in the header to admins only. */
export function showAdminLink() {
  $('admin-link').hidden = !isAdmin();
}

/** Hides the admin view (another view is shown). */
export function hideAdmin() {
  $('admin-view').hidden = true;
  $('tok-new').hidden = true; // a new token is shown once, never again
  $('tok-secret').value = '';
}

/** Shows admin page `page`. */
export async function showAdmin(page) {
  $('search-view').hidden = true;
  $('rec-view').hidden = true;
  $('admin-view').hidden = false;
  for (const p of PAGES) {
    $(`adm-${p}`).hidden = true;
    const tab = $(`adm-tab-${p}`);
    if (p === page) tab.setAttribute('aria-current', 'page'); else tab.removeAttribute('aria-current');
  }
  const title = page[0].toUpperCase() + page.slice(1);
  $('admin-h').textContent = `Admin: ${title}`;
  document.title = `${title} · Replay archive`;
  const token = state.token;
  await state.whoReady;
  if (token !== state.token) return;
  if (!isAdmin()) {
    notice('The admin pages are for admins: sign in with an admin\'s token.');
    document.body.dataset.ready = `admin-${page}`;
    return;
  }
  $(`adm-${page}`).hidden = false;
  try {
    if (page === 'takedowns') await loadTakedowns(token);
    else if (page === 'tokens') await loadTokens(token);
    else await loadRetention(token);
  } catch (e) {
    if (token === state.token) notice(`Could not load the ${page}: ${errText(e)}`);
  }
  if (token === state.token) document.body.dataset.ready = `admin-${page}`;
}

/**
 * Asks for confirmation in the admin dialog (with a reason when
 * reasonLabel is given); run performs the action and may throw, which
 * keeps the dialog open with the error.
 */
function confirm({ title, text, ok, danger, reasonLabel, run }) {
  const dlg = $('adm-dlg');
  $('adm-dlg-h').textContent = title;
  $('adm-dlg-text').textContent = text;
  $('adm-reason-row').hidden = !reasonLabel;
  $('adm-reason').value = '';
  if (reasonLabel) $('adm-reason-row').querySelector('label').textContent = reasonLabel;
  $('adm-ok').textContent = ok;
  $('adm-ok').className = danger ? 'danger' : '';
  $('adm-err').hidden = true;
  const close = () => { $('adm-form').onsubmit = null; $('adm-cancel').onclick = null; dlg.close(); };
  $('adm-cancel').onclick = close;
  $('adm-form').onsubmit = async (e) => {
    e.preventDefault();
    $('adm-ok').disabled = true;
    try {
      await run($('adm-reason').value.trim());
      close();
    } catch (err) {
      $('adm-err').textContent = errText(err);
      $('adm-err').hidden = false;
    } finally {
      $('adm-ok').disabled = false;
    }
  };
  dlg.showModal();
  (reasonLabel ? $('adm-reason') : $('adm-ok')).focus();
}

// ---- Takedowns ----

/** How long until t (ms), in days and hours or hours and minutes. */
function left(ms) {
  if (ms <= 0) return 'due: purged within 10 minutes';
  const m = Math.floor(ms / 60000), h = Math.floor(m / 60), d = Math.floor(h / 24);
  return d ? `${d}d ${h % 24}h left` : h ? `${h}h ${m % 60}m left` : `${m}m left`;
}

async function loadTakedowns(token) {
  const r = await api(`${API}/takedowns`);
  if (token !== state.token) return;
  const tb = $('td-table').tBodies[0];
  tb.replaceChildren();
  const list = (r.takedowns || []).slice().sort((a, b) => Date.parse(b.at) - Date.parse(a.at));
  for (const t of list) {
    const what = el('td', { class: 'text' },
      el('strong', { text: t.source_name || '(no file name)' }), el('br'),
      el('span', { class: 'muted', text: `${t.format || ''}${t.size ? `, ${bytes(t.size)}` : ''}` }), el('br'),
      el('code', { class: 'short-id', title: `recording ${t.id}, sha256 ${t.sha256}`, text: `${String(t.id).slice(0, 8)}…` }));
    const grace = t.state === 'pending' ? left(Date.parse(t.purge_at) - Date.now()) : `purged${t.purge_at ? ` ${wall(t.purge_at)}` : ''}`;
    const act = el('td');
    if (t.state === 'pending') {
      act.append(el('button', { type: 'button', class: 'td-undo', text: 'Undo…', 'aria-label': `Undo the takedown of ${t.source_name || t.id}`, onclick: () => undoTakedown(t) }));
    } else {
      act.append(el('button', { type: 'button', class: 'td-lift danger', text: 'Lift…', 'aria-label': `Lift the takedown of ${t.source_name || t.id}`, onclick: () => liftTakedown(t) }));
    }
    tb.append(el('tr', { dataset: { sha256: t.sha256, id: t.id, state: t.state } },
      what, el('td', { class: 'num', text: wall(t.at) }), el('td', { text: t.by || '' }),
      el('td', { class: 'text', text: t.reason || '' }), el('td', { text: grace }), act));
  }
  if (!list.length) tb.append(el('tr', {}, el('td', { colspan: 6, class: 'muted', text: 'No takedowns' })));
}

function undoTakedown(t) {
  confirm({
    title: 'Undo this takedown',
    text: `The recording ${t.source_name || t.id} comes back as it was, searchable again, and the undo is in the audit log.`,
    reasonLabel: 'Reason (optional)', ok: 'Undo takedown',
    run: async (reason) => {
      const r = await api(`${API}/takedowns/${encodeURIComponent(t.id)}/undo`, { method: 'POST', json: { reason } });
      $('td-msg').replaceChildren('Restored ', el('a', { href: `/r/${encodeURIComponent(r.restored)}`, 'data-nav': true, text: r.restored }));
      await loadTakedowns(state.token);
    },
  });
}

function liftTakedown(t) {
  confirm({
    title: 'Lift this takedown',
    text: `Its bytes were purged. Once lifted, ${t.source_name || 'the file'} and its game may be archived again (an upload or an ingest brings it back).`,
    reasonLabel: 'Reason (optional)', ok: 'Lift takedown', danger: true,
    run: async (reason) => {
      await api(`${API}/takedowns/${encodeURIComponent(t.sha256)}`, { method: 'DELETE', json: { reason } });
      $('td-msg').textContent = `Lifted the takedown of ${t.source_name || t.id}`;
      await loadTakedowns(state.token);
    },
  });
}

// ---- Tokens ----

async function loadTokens(token) {
  const r = await api(`${API}/tokens`);
  if (token !== state.token) return;
  const tb = $('tok-table').tBodies[0];
  tb.replaceChildren();
  for (const t of r.tokens || []) {
    tb.append(el('tr', { dataset: { name: t.name } },
      el('td', { class: 'text', text: t.name }), el('td', { text: t.role }),
      el('td', { class: 'num', text: wall(t.created) }), el('td', { text: t.created_by || '' }),
      el('td', {}, el('button', { type: 'button', class: 'tok-revoke danger', text: 'Revoke…', 'aria-label': `Revoke ${t.name}`, onclick: () => revokeToken(t) }))));
  }
  if (!tb.children.length) tb.append(el('tr', {}, el('td', { colspan: 5, class: 'muted', text: 'No tokens: only the owner signs in' })));
}

function revokeToken(t) {
  confirm({
    title: `Revoke ${t.name}`,
    text: `Requests with the token ${t.name} (${t.role}) are refused from now on. This cannot be undone: make a new token instead.`,
    ok: 'Revoke', danger: true,
    run: async () => {
      await api(`${API}/tokens/${encodeURIComponent(t.name)}`, { method: 'DELETE' });
      $('tok-msg').textContent = `Revoked ${t.name}`;
      await loadTokens(state.token);
    },
  });
}

$('tok-form').addEventListener('submit', (e) => {
  e.preventDefault();
  const name = $('tok-name').value.trim(), role = $('tok-role').value;
  if (!name) return;
  confirm({
    title: `Create a ${role} token`,
    text: `A token called ${name} that may do what a ${role} may. It is shown once, after this.`,
    ok: 'Create token',
    run: async () => {
      const r = await api(`${API}/tokens`, { method: 'POST', json: { name, role } });
      $('tok-name').value = '';
      $('tok-new-who').textContent = `${r.name} (${r.role})`;
      $('tok-secret').value = r.token;
      $('tok-copy-msg').textContent = '';
      $('tok-new').hidden = false;
      $('tok-msg').textContent = `Created ${r.name}`;
      await loadTokens(state.token);
      $('tok-secret').focus();
      $('tok-secret').select();
    },
  });
});

$('tok-copy').addEventListener('click', async () => {
  const v = $('tok-secret').value;
  try {
    await navigator.clipboard.writeText(v);
    $('tok-copy-msg').textContent = 'Copied.';
  } catch (e) {
    $('tok-secret').select();
    $('tok-copy-msg').textContent = document.execCommand && document.execCommand('copy') ? 'Copied.' : 'Could not copy: it is selected, copy it with Ctrl+C.';
  }
});
$('tok-done').addEventListener('click', () => {
  $('tok-new').hidden = true;
  $('tok-secret').value = '';
});

// ---- Retention and prune ----

let formatsLoaded = false;

async function loadRetention(token) {
  const [pol, fm] = await Promise.all([api(`${API}/retention`), formatsLoaded ? null : api(`${API}/formats`)]);
  if (token !== state.token) return;
  if (fm) {
    const box = $('ret-formats');
    for (const f of fm.formats || []) {
      box.append(el('label', { class: 'check' }, el('input', { type: 'checkbox', value: f, dataset: { format: f } }), ` ${f}`));
    }
    formatsLoaded = true;
  }
  showPolicy(pol);
}

/** Fills the form with policy p (the API's shape). */
function showPolicy(p) {
  $('ret-text').textContent = p.text || (p.set ? 'a policy' : 'no retention policy');
  $('ret-age').value = p.max_age || '';
  const n = p.max_bytes || 0;
  let unit = 1;
  for (const u of [1099511627776, 1073741824, 1048576, 1024]) if (n && n % u === 0) { unit = u; break; }
  if (!n) unit = 1073741824;
  $('ret-unit').value = String(unit);
  $('ret-size').value = n ? String(n / unit) : '';
  for (const c of $('ret-formats').querySelectorAll('input')) c.checked = (p.formats || []).includes(c.value);
}

/** The policy the form says, or throws with what is wrong. */
function formPolicy() {
  const size = $('ret-size').value.trim();
  let maxBytes = 0;
  if (size) {
    const v = Number(size);
    if (!isFinite(v) || v < 0) throw new Error(`Max size: ${JSON.stringify(size)} is not a number`);
    maxBytes = Math.round(v * Number($('ret-unit').value));
  }
  const formats = Array.from($('ret-formats').querySelectorAll('input:checked'), (c) => c.value);
  return { max_age: $('ret-age').value.trim(), max_bytes: maxBytes, formats };
}

$('ret-form').addEventListener('submit', (e) => {
  e.preventDefault();
  let p;
  try { p = formPolicy(); } catch (err) { $('ret-msg').textContent = err.message; return; }
  if (!p.max_age && !p.max_bytes) {
    $('ret-msg').textContent = 'Give a max age or a max size (Clear policy… removes the policy).';
    return;
  }
  confirm({
    title: 'Save the retention policy',
    text: `Recordings${p.formats.length ? ` of ${p.formats.join(', ')}` : ''}${p.max_age ? ` older than ${p.max_age}` : ''}${p.max_age && p.max_bytes ? ', and the oldest while they hold more than ' : p.max_bytes ? ': the oldest while they hold more than ' : ''}${p.max_bytes ? bytes(p.max_bytes) : ''} are removed by the next prune (held ones never, flagged ones only when asked). Saving removes nothing by itself.`,
    ok: 'Save policy',
    run: async () => {
      const r = await api(`${API}/retention`, { method: 'PUT', json: p });
      showPolicy(r);
      $('ret-msg').textContent = 'Saved.';
    },
  });
});

$('ret-clear').addEventListener('click', () => confirm({
  title: 'Clear the retention policy',
  text: 'With no policy, prunes remove nothing until a policy is set again.',
  ok: 'Clear policy', danger: true,
  run: async () => {
    const r = await api(`${API}/retention`, { method: 'DELETE' });
    showPolicy(r);
    $('ret-msg').textContent = 'Cleared.';
  },
}));

/** Shows a prune's answer: the plan, and what was done when it was not a dry run. */
function showPrune(r) {
  const plan = r.plan || {};
  const n = (plan.remove || []).length;
  const parts = [];
  if (r.dry_run) {
    parts.push(`Dry run of the ${r.policy_source === 'request' ? 'policy sent' : 'stored policy'}: ${n} recording${n === 1 ? '' : 's'} would go, ${bytes(plan.stored_bytes || 0)} stored; about ${bytes(plan.estimated_return_bytes || 0)} would come back to the disk`);
  } else {
    const rep = r.report || {};
    const gone = (rep.removed || []).length;
    parts.push(`Pruned: ${gone} recording${gone === 1 ? '' : 's'} removed, ${bytes(rep.stored_bytes || 0)} stored; ${bytes(rep.bytes_returned || 0)} came back to the disk`);
  }
  parts.push(`of ${plan.scope_recordings || 0} in scope (${bytes(plan.scope_bytes || 0)})`);
  if (plan.kept_held) parts.push(`${plan.kept_held} kept as held`);
  if (plan.kept_flagged) parts.push(`${plan.kept_flagged} kept as flagged`);
  if (plan.policy && plan.policy.max_bytes && !plan.budget_met) parts.push('the size budget cannot be met');
  const sum = $('pr-summary');
  sum.textContent = parts.join('; ') + '.';
  sum.dataset.count = String(r.dry_run ? n : (r.report && r.report.removed || []).length);
  sum.dataset.storedBytes = String(r.dry_run ? plan.stored_bytes || 0 : r.report && r.report.stored_bytes || 0);
  sum.dataset.returnBytes = String(r.dry_run ? plan.estimated_return_bytes || 0 : r.report && r.report.bytes_returned || 0);
  sum.dataset.dryRun = String(!!r.dry_run);
  const tb = $('pr-table').tBodies[0];
  tb.replaceChildren();
  const rows = r.dry_run ? plan.remove || [] : r.report && r.report.removed || [];
  for (const c of rows.slice(0, 500)) {
    const link = r.dry_run ? el('a', { href: `/r/${encodeURIComponent(c.id)}`, 'data-nav': true, text: String(c.id).slice(0, 8) + '…', title: c.id }) : el('span', { text: String(c.id).slice(0, 8) + '…', title: c.id });
    tb.append(el('tr', { dataset: { id: c.id } }, el('td', {}, link), el('td', { text: c.format }),
      el('td', { class: 'num', text: wall(c.start) }), el('td', { class: 'num', text: bytes(c.stored_bytes) }), el('td', { class: 'text', text: c.reason || '' })));
  }
  if (rows.length > 500) tb.append(el('tr', {}, el('td', { colspan: 5, class: 'muted', text: `and ${rows.length - 500} more` })));
  $('pr-box').hidden = !rows.length;
}

$('pr-dry').addEventListener('click', async () => {
  $('pr-summary').textContent = 'Planning…';
  delete $('pr-summary').dataset.count;
  try {
    showPrune(await api(`${API}/prune`, { method: 'POST', json: { dry_run: true, include_flagged: $('pr-flagged').checked } }));
  } catch (e) {
    $('pr-summary').textContent = 'The dry run failed: ' + errText(e);
    $('pr-box').hidden = true;
  }
});

$('pr-now').addEventListener('click', () => confirm({
  title: 'Prune now',
  text: `Every recording the stored policy reaches${$('pr-flagged').checked ? ', flagged ones too,' : ''} is removed for good (held ones are kept). Run a dry run first to see what goes.`,
  ok: 'Prune now', danger: true,
  run: async () => {
    showPrune(await api(`${API}/prune`, { method: 'POST', json: { dry_run: false, include_flagged: $('pr-flagged').checked } }));
  },
}));
