// The moderators' page: search, a recording's page with a timeline and the
// players' trails, and the moderation actions, all over the JSON API under
// /api/v1/. Plain JavaScript, no framework, no build step.
'use strict';
(() => {
  const $ = (id) => document.getElementById(id);
  const TOKEN_KEY = 'replay.token';
  const API = '/api/v1';
  // The longest tick range of frames fetched at once, in seconds: a range
  // never spans more than two chunks, and a long chunk is not decoded into
  // a huge response. The page never asks for the whole recording.
  const PIECE_SECONDS = 4;
  // How much of the past the trails picture shows behind the selection,
  // and how far ahead the first fetch reaches.
  const TRAIL_SECONDS = 3;
  const AHEAD_SECONDS = 0.5;
  // The steps in which a trail fades into the past.
  const TRAIL_STEPS = 12;
  // Fetched ranges kept in memory.
  const MAX_RANGES = 48;
  // The events fetched for a recording's timeline.
  const EVENT_LIMIT = 20000;
  // Rows shown in the "events in view" table.
  const EVENT_ROWS = 200;
  // Rows of the players table drawn with the page; the rest (an hour's
  // joins and drops are a hundred rows and more, most of them scrolled out
  // of its box) follow once the page is usable.
  const PLAYER_ROWS_FIRST = 24;
  // The canvases' fonts. They are set when a canvas is sized, while the
  // panels are still empty: setting a canvas font makes the browser
  // compute the page's style, which after the tables are filled is all of
  // theirs.
  const TIMELINE_FONT = '11px system-ui, sans-serif';
  const TRAILS_FONT = '12px system-ui, sans-serif';
  // The canvases' backgrounds (as in app.css).
  const TIMELINE_BG = '#fbfcfd';
  const TRAILS_BG = '#10161f';
  const KIND_COLORS = {
    join: '#2e8b57', drop: '#c0392b', command: '#1f5fbf', login: '#8e44ad', vote: '#d35400',
    chat: '#7f8c8d', finish: '#f1c40f', flag: '#e74c3c', team: '#16a085', other: '#95a5a6',
  };
  const LANES = [
    ['join', 'drop', 'team'], ['command', 'login', 'vote'], ['chat'], ['finish', 'flag'], ['other'],
  ];

  const state = {
    who: null, // {name, role}
    rec: null, // the recording JSON
    events: null, // its events, by tick (eventColumns)
    eventTotal: 0,
    sel: 0, // the selected tick
    view: [0, 0], // the timeline's visible tick range
    ranges: [], // fetched frame ranges: {from, to, frames (a Promise)}
    playing: false, speed: 1, lastFrame: 0, playAcc: 0,
    names: null, // client-id intervals (teehistorian)
    rangeTouched: false,
    token: 0, // bumped on every navigation, so a stale load stops drawing
  };

  // ---- API --------------------------------------------------------------

  /** An error answer of the API: status, code and message. */
  class APIError extends Error {
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
  async function api(path, opts = {}) {
    const headers = new Headers();
    const tok = sessionStorage.getItem(TOKEN_KEY);
    if (tok) headers.set('Authorization', 'Bearer ' + tok);
    let body;
    if (opts.json !== undefined) {
      headers.set('Content-Type', 'application/json');
      body = JSON.stringify(opts.json);
    }
    const res = await fetch(path, { method: opts.method || 'GET', headers, body });
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

  /** Shows the sign-in dialog; resolves once a token is stored. */
  function askToken(why) {
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

  const recURL = (id, rest = '') => `${API}/recordings/${encodeURIComponent(id)}${rest}`;

  // ---- small helpers ----------------------------------------------------

  function el(tag, attrs = {}, ...kids) {
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
  function wall(t) {
    const d = t instanceof Date ? t : new Date(t);
    if (isNaN(d)) return '';
    return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ` +
      `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`;
  }

  /** Formats an offset in milliseconds as h:mm:ss.cc or m:ss.cc. */
  function offset(ms) {
    if (!isFinite(ms)) return '';
    const neg = ms < 0;
    ms = Math.abs(ms);
    const h = Math.floor(ms / 3600000), m = Math.floor(ms / 60000) % 60;
    const s = Math.floor(ms / 1000) % 60, cs = Math.floor(ms / 10) % 100;
    const out = (h ? `${h}:${pad(m)}` : `${m}`) + `:${pad(s)}.${pad(cs)}`;
    return neg ? '-' + out : out;
  }

  function duration(ms) {
    if (!ms) return '-';
    const s = Math.round(ms / 1000);
    const h = Math.floor(s / 3600), m = Math.floor(s / 60) % 60;
    return h ? `${h}h${pad(m)}m${pad(s % 60)}s` : m ? `${m}m${pad(s % 60)}s` : `${s}s`;
  }

  function bytes(n) {
    if (n === undefined || n === null) return '';
    const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let i = 0;
    while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
    return (i ? n.toFixed(1) : n) + ' ' + u[i];
  }

  function notice(msg) {
    const n = $('notice');
    n.textContent = msg || '';
    n.hidden = !msg;
  }

  function errText(e) {
    return e instanceof APIError ? `${e.message}${e.code ? ` (${e.code})` : ''}` : String(e && e.message || e);
  }

  const isMod = () => state.who && (state.who.role === 'moderator' || state.who.role === 'admin');
  const isAdmin = () => state.who && state.who.role === 'admin';

  // ---- who is signed in -------------------------------------------------

  async function loadWho() {
    try {
      state.who = await api(`${API}/whoami`);
    } catch (e) {
      state.who = null;
      if (!(e instanceof APIError && e.status === 401)) notice('Could not ask who you are: ' + errText(e));
    }
    const signedIn = !!sessionStorage.getItem(TOKEN_KEY);
    $('who').textContent = state.who ? `${state.who.name} (${state.who.role})` : 'not signed in';
    $('signout').hidden = !signedIn;
    $('signin').hidden = !!state.who;
  }

  // ---- routing ----------------------------------------------------------

  function go(url) {
    history.pushState(null, '', url);
    route();
  }

  function route() {
    stop();
    state.token++;
    notice('');
    delete document.body.dataset.ready;
    const p = location.pathname;
    if (p.startsWith('/r/') && p.length > 3) {
      showRecording(decodeURIComponent(p.slice(3)));
    } else {
      showSearch();
    }
  }

  // Same-origin links navigate inside the page (the address bar still
  // shows a shareable URL).
  document.addEventListener('click', (e) => {
    const a = e.target.closest && e.target.closest('a[data-nav]');
    if (!a || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    go(a.getAttribute('href'));
  });

  // ---- search -----------------------------------------------------------

  const FILTERS = {
    format: { el: 'f-format', get: (e) => e.value, set: (e, v) => { e.value = v; } },
    after: { el: 'f-after', get: (e) => e.value, set: (e, v) => { e.value = /^\d{4}-\d\d-\d\d$/.test(v) ? v : ''; } },
    before: { el: 'f-before', get: (e) => e.value, set: (e, v) => { e.value = /^\d{4}-\d\d-\d\d$/.test(v) ? v : ''; } },
    flagged: { el: 'f-flagged', get: (e) => (e.checked ? 'true' : ''), set: (e, v) => { e.checked = v === 'true'; } },
    held: { el: 'f-held', get: (e) => (e.checked ? 'true' : ''), set: (e, v) => { e.checked = v === 'true'; } },
  };

  const termRE = (key) => new RegExp(`(^|\\s)${key}:(\\S+)`, 'i');

  /** Returns q with the term key:value replaced (or removed when empty). */
  function setTerm(q, key, value) {
    const re = new RegExp(`(^|\\s)${key}:\\S+`, 'gi');
    q = q.replace(re, ' ').replace(/\s+/g, ' ').trim();
    return value ? (q ? `${q} ${key}:${value}` : `${key}:${value}`) : q;
  }

  function syncFilters(q) {
    for (const [key, f] of Object.entries(FILTERS)) {
      const m = q.match(termRE(key));
      f.set($(f.el), m ? m[2] : '');
    }
  }

  let formatsLoaded = false;
  async function loadFormats() {
    if (formatsLoaded) return;
    try {
      const r = await api(`${API}/formats`);
      const sel = $('f-format');
      for (const f of r.formats || []) sel.append(el('option', { value: f, text: f }));
      formatsLoaded = true;
      syncFilters(new URLSearchParams(location.search).get('q') || '');
    } catch (e) { /* the filter stays at "any" */ }
  }

  function searchURL(q, cursor) {
    const p = new URLSearchParams();
    if (q) p.set('q', q);
    if (cursor) p.set('cursor', cursor);
    const s = p.toString();
    return s ? `/?${s}` : '/';
  }

  async function showSearch() {
    $('rec-view').hidden = true;
    $('search-view').hidden = false;
    document.title = 'Search · Replay archive';
    const params = new URLSearchParams(location.search);
    const q = params.get('q') || '';
    const cursor = params.get('cursor') || '';
    $('q').value = q;
    syncFilters(q);
    loadFormats();
    showQueryError(null);
    $('hits').replaceChildren();
    $('summary').textContent = '';
    $('prev').hidden = true;
    $('next').hidden = true;
    sessionStorage.setItem('replay.lastSearch', location.pathname + location.search);
    const token = state.token;
    const p = new URLSearchParams({ q, limit: '20' });
    if (cursor) p.set('cursor', cursor);
    let res;
    try {
      $('summary').textContent = 'Searching…';
      res = await api(`${API}/recordings?${p}`);
    } catch (e) {
      if (token !== state.token) return;
      $('summary').textContent = '';
      if (e instanceof APIError && e.code === 'bad_query') showQueryError(e.body, q);
      else notice('Search failed: ' + errText(e));
      return;
    }
    if (token !== state.token) return;
    renderHits(res, q, cursor);
    document.body.dataset.ready = 'search';
  }

  /** Shows a parse error with the offending term marked in the query. */
  function showQueryError(body, q) {
    const box = $('qerr');
    if (!body) { box.hidden = true; box.replaceChildren(); $('q').removeAttribute('aria-invalid'); return; }
    $('q').setAttribute('aria-invalid', 'true');
    const kids = [el('span', { text: body.error || 'The query does not parse.' })];
    if (q && typeof body.pos === 'number') {
      // pos is a byte offset into the UTF-8 query.
      const enc = new TextEncoder().encode(q);
      const at = new TextDecoder().decode(enc.slice(0, Math.min(body.pos, enc.length))).length;
      let len = body.term && q.substr(at, body.term.length) === body.term ? body.term.length : 0;
      if (!len) { const m = q.slice(at).match(/^\S*/); len = Math.max(1, m ? m[0].length : 1); }
      const code = el('code', {}, q.slice(0, at), el('mark', { text: q.slice(at, at + len) || ' ' }), q.slice(at + len));
      kids.push(el('br'), code);
      const inp = $('q');
      inp.focus();
      inp.setSelectionRange(at, Math.min(q.length, at + len));
    }
    box.replaceChildren(...kids);
    box.hidden = false;
  }

  function renderHits(res, q, cursor) {
    const hits = res.hits || [];
    const took = typeof res.took_ms === 'number' ? ` in ${res.took_ms.toFixed(1)} ms` : '';
    $('summary').textContent = `${res.total} recording${res.total === 1 ? '' : 's'} matched${took}`;
    const list = $('hits');
    for (const h of hits) list.append(renderHit(h));
    const prevStack = (history.state && history.state.cursors) || [];
    $('prev').hidden = !cursor;
    $('prev').onclick = () => {
      const stack = prevStack.slice();
      const back = stack.pop() || '';
      history.pushState({ cursors: stack }, '', searchURL(q, back));
      route();
    };
    $('next').hidden = !res.next_cursor;
    $('next').onclick = () => {
      history.pushState({ cursors: prevStack.concat([cursor]) }, '', searchURL(q, res.next_cursor));
      route();
      $('main').focus();
    };
  }

  function renderHit(h) {
    const title = [h.map || '(no map)', h.format].join(' · ');
    const facts = [h.start ? wall(h.start) + ' UTC' : 'start unknown', duration(h.duration_ms)];
    if (h.server) facts.push(h.server);
    const badges = el('span');
    for (const f of h.flags || []) badges.append(el('span', { class: 'badge flag', text: 'flag: ' + f }));
    if (h.held) badges.append(el('span', { class: 'badge held', text: 'held' }));
    const li = el('li', { class: 'hit', dataset: { id: h.id } },
      el('h2', {}, el('a', { href: `/r/${h.id}`, 'data-nav': true, text: title })),
      el('p', { class: 'facts' }, facts.join(' · '), ' ', badges),
      el('p', { class: 'facts' }, 'Players: ' + ((h.players || []).join(', ') || 'none')));
    const evs = h.events || [];
    if (evs.length) {
      const tb = el('tbody');
      for (const e of evs) {
        const when = e.at ? wall(e.at) : offset(e.time_ms);
        const open = el('a', { href: `/r/${h.id}?t=${e.tick}`, 'data-nav': true, text: 'Open', 'aria-label': `Open the recording at tick ${e.tick}` });
        const cells = [el('td', { class: 'num', text: when }), el('td', { class: 'num', text: String(e.tick) }),
          el('td', { text: e.player || '' }), el('td', { class: 'text', text: `${e.kind}${e.text ? ': ' + e.text : ''}` })];
        const act = el('td', {}, open);
        if (e.clip_url) {
          act.append(' ', el('button', { type: 'button', text: 'Clip', 'aria-label': `Download a clip around tick ${e.tick}`, onclick: () => download(e.clip_url, $('summary')) }));
        }
        tb.append(el('tr', {}, ...cells, act));
      }
      li.append(el('table', { class: 'events' },
        el('thead', {}, el('tr', {}, ...['When', 'Tick', 'Who', 'What', ''].map((t) => el('th', { scope: 'col', text: t })))), tb));
      if (h.event_total > evs.length) {
        li.append(el('p', { class: 'muted', text: `${h.event_total - evs.length} more matching events in this recording` }));
      }
    }
    return li;
  }

  $('search-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const q = $('q').value.trim();
    go(searchURL(q, ''));
  });
  for (const [key, f] of Object.entries(FILTERS)) {
    $(f.el).addEventListener('change', () => {
      $('q').value = setTerm($('q').value, key, f.get($(f.el)));
      go(searchURL($('q').value.trim(), ''));
    });
  }

  // ---- downloads --------------------------------------------------------

  /** Fetches url with the token and saves the answer under its file name. */
  async function download(url, status) {
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

  // ---- the recording page -----------------------------------------------

  async function showRecording(id) {
    $('search-view').hidden = true;
    $('rec-view').hidden = false;
    $('back').href = sessionStorage.getItem('replay.lastSearch') || '/';
    $('back').dataset.nav = '';
    $('rec-h').textContent = 'Loading…';
    // The panels are laid out (the canvases take their size) but not
    // painted until their data is in: the browser paints them once, not
    // empty first and then all again.
    $('rec-body').classList.add('pending');
    $('rec-body').hidden = false;
    for (const t of ['events', 'players', 'audit']) $(t).tBodies[0].replaceChildren();
    $('meta').replaceChildren();
    $('flags').replaceChildren();
    $('hold').textContent = '';
    $('act-status').textContent = '';
    delete $('act-status').dataset.downloaded;
    state.rec = null;
    state.ranges = [];
    state.rangeTouched = false;
    const token = state.token;
    performance.mark('replay:start');
    let rec, evs;
    // The recording, its events, who is signed in and the positions
    // around the URL's moment are asked at once.
    const evsP = api(recURL(id, `/events?compact=1&limit=${EVENT_LIMIT}`));
    evsP.catch(() => {});
    const recP = api(recURL(id));
    const urlTick = parseInt(new URLSearchParams(location.search).get('t'), 10);
    const guess = isFinite(urlTick) && urlTick >= 0 ? guessTracks(id, urlTick) : null;
    // Size the canvases while the answers are on their way and the
    // panels are empty: reading their width lays out only those, where
    // after the tables are filled it would lay them all out once more.
    sizeCanvases();
    try {
      rec = await recP;
      if (token === state.token) {
        performance.mark('replay:rec');
        state.rec = rec;
        state.sel = clamp(isFinite(urlTick) ? urlTick : firstTick());
        // The window asked around the URL's moment covers these ticks
        // (its answer says so exactly); what it does not cover is fetched.
        const ahead = state.sel + Math.round((rate() || 20) * AHEAD_SECONDS);
        if (guess && !guess.to) Object.assign(guess, { from: state.sel - trailTicks(), to: ahead });
        if (guess) state.ranges.push(guess);
        framesFor(state.sel - trailTicks(), ahead).catch(() => {});
      }
      [evs] = await Promise.all([evsP, state.whoReady]);
    } catch (e) {
      if (token !== state.token) return;
      state.rec = null;
      $('rec-body').hidden = true;
      $('rec-h').textContent = 'Recording not available';
      notice(errText(e));
      return;
    }
    if (token !== state.token) return;
    performance.mark('replay:data');
    $('rec-body').classList.remove('pending');
    state.rec = rec;
    state.events = eventColumns(evs);
    state.eventTotal = evs.total || state.events.n;
    state.names = clientNames(state.events);
    const first = firstTick(), last = lastTick();
    state.view = [first, Math.max(last, first + 1)];
    document.title = `${rec.map || rec.id} · Replay archive`;
    $('rec-h').textContent = [rec.map || '(no map)', rec.format, rec.start ? wall(rec.start) + ' UTC' : ''].filter(Boolean).join(' · ');
    renderMeta();
    const morePlayers = renderPlayers(PLAYER_ROWS_FIRST);
    renderMarks();
    renderAudit(rec.audit || []);
    renderActions();
    setDefaultRange();
    drawTimeline();
    updatePos();
    performance.mark('replay:drawn');
    await drawTrails();
    if (token !== state.token) return;
    performance.mark('replay:trails');
    document.body.dataset.ready = 'recording';
    window.replayReadyAt = performance.now();
    // The list of the events in view is below the fold, and the players
    // table's box shows its first rows: the rest is filled once the page
    // is usable, so those rows are not laid out in the first frame.
    const later = window.requestIdleCallback || ((f) => setTimeout(f, 1));
    later(() => {
      if (token !== state.token) return;
      morePlayers();
      renderEventRows();
    }, { timeout: 200 });
  }

  /**
   * The events of the API's column form (`events?compact=1`: ticks and
   * times as differences, strings by index), kept as columns in tick
   * order: the timeline reads an hour's thousands of ticks and kinds
   * without an object per event, and at(i) makes the object of one event
   * for the rows that list it.
   */
  /** The index of the first of the sorted ticks at t (after t when past). */
  function bound(ticks, t, past) {
    let lo = 0, hi = ticks.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (ticks[mid] < t || (past && ticks[mid] === t)) lo = mid + 1; else hi = mid;
    }
    return lo;
  }

  function eventColumns(c) {
    const S = c.strings || [''], n = (c.tick || []).length;
    let tick = new Float64Array(n), ms = new Float64Array(n);
    let kind = c.kind || [], player = c.player || [], pid = c.player_id || [], text = c.text || [];
    let t = 0, m = 0, sorted = true;
    for (let i = 0; i < n; i++) {
      t += c.tick[i];
      m += c.time_ms[i];
      tick[i] = t;
      ms[i] = m;
      if (i && t < tick[i - 1]) sorted = false;
    }
    if (!sorted) {
      const order = Array.from({ length: n }, (_, i) => i).sort((a, b) => tick[a] - tick[b] || a - b);
      const pick = (col) => order.map((i) => col[i]);
      tick = Float64Array.from(order, (i) => tick[i]);
      ms = Float64Array.from(order, (i) => ms[i]);
      [kind, player, pid, text] = [pick(kind), pick(player), pick(pid), pick(text)];
    }
    // The kind of each string, as an index into KIND_COLORS (for the
    // strings that are kinds).
    const kindOf = Int8Array.from(S, (k) => kindIndex(k));
    return {
      n, tick, kind, kindOf, strings: S,
      /** Event i as an object: tick, time_ms, kind, player, player_id, text. */
      at: (i) => ({ tick: tick[i], time_ms: ms[i], kind: S[kind[i]], player: S[player[i]], player_id: S[pid[i]], text: S[text[i]] }),
      /** The indexes [lo, hi) of the events in the tick range [a, b]. */
      within: (a, b) => [bound(tick, a, false), bound(tick, b, true)],
    };
  }

  const firstTick = () => (state.rec.first_tick !== undefined ? state.rec.first_tick : 0);
  const lastTick = () => {
    const r = state.rec;
    if (r.last_tick !== undefined) return r.last_tick;
    const c = r.chunks || [];
    return c.length ? c[c.length - 1].start_tick + c[c.length - 1].ticks - 1 : 0;
  };
  const rate = () => state.rec.tick_rate || 0;
  const clamp = (t) => Math.max(firstTick(), Math.min(lastTick(), Math.round(t)));

  /** The chunk index holding tick (the last one starting at or before it). */
  function chunkIndex(tick) {
    const cs = state.rec.chunks || [];
    let lo = 0, hi = cs.length - 1, ans = 0;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (cs[mid].start_tick <= tick) { ans = mid; lo = mid + 1; } else hi = mid - 1;
    }
    return ans;
  }

  /** The offset of tick from the recording's start, in ms. */
  function timeAt(tick) {
    const cs = state.rec.chunks || [];
    if (!cs.length) return rate() ? (tick - firstTick()) / rate() * 1000 : 0;
    const c = cs[chunkIndex(tick)];
    return c.time_ms + (rate() && tick > c.start_tick ? (tick - c.start_tick) / rate() * 1000 : 0);
  }

  /** The tick at offset ms from the start. */
  function tickAt(ms) {
    const cs = state.rec.chunks || [];
    let i = 0;
    for (let lo = 0, hi = cs.length - 1; lo <= hi;) {
      const mid = (lo + hi) >> 1;
      if (cs[mid].time_ms <= ms) { i = mid; lo = mid + 1; } else hi = mid - 1;
    }
    const c = cs[i] || { start_tick: firstTick(), time_ms: 0 };
    return clamp(c.start_tick + (rate() ? (ms - c.time_ms) / 1000 * rate() : 0));
  }

  function wallAt(tick) {
    return state.rec.start ? new Date(Date.parse(state.rec.start) + timeAt(tick)) : null;
  }

  function renderMeta() {
    const r = state.rec;
    const rows = [
      ['Id', r.id], ['Format', r.format], ['Map', r.map], ['Server', r.server], ['Session', r.session],
      ['Start', r.start ? wall(r.start) + ' UTC' : 'unknown'], ['Duration', duration(r.duration_ms)],
      ['Ticks', r.ticks !== undefined ? `${r.ticks}${r.tick_rate ? ` at ${r.tick_rate}/s` : ''}` : ''],
      ['Size', `${bytes(r.native_bytes)} native, ${bytes(r.stored_bytes)} stored`],
      ['File', r.source_name], ['sha256', r.sha256], ['Ingested', r.ingested ? wall(r.ingested) + ' UTC' : ''],
      ['Events', `${state.eventTotal}${state.eventTotal > state.events.n ? ` (first ${state.events.n} shown)` : ''}`],
    ];
    for (const [k, v] of Object.entries(r.attrs || {})) rows.push([k, v]);
    const dl = $('meta');
    dl.replaceChildren();
    for (const [k, v] of rows) if (v !== undefined && v !== null && v !== '') dl.append(el('dt', { text: k }), el('dd', { text: String(v) }));
  }

  /**
   * Who held which client id when, from join and drop events (teehistorian
   * names its clients by id: "client 3 joined"). Returns id -> [{name,
   * from, to}] in tick order.
   */
  function clientNames(events) {
    const byID = new Map();
    const join = events.strings.indexOf('join'), drop = events.strings.indexOf('drop');
    for (let i = 0; i < events.n; i++) {
      if (events.kind[i] !== join && events.kind[i] !== drop) continue;
      const e = events.at(i);
      let cid = e.player_id;
      if (cid === undefined || cid === null || cid === '') {
        const m = (e.text || '').match(/client (\d+)/);
        cid = m ? m[1] : e.player;
      }
      if (cid === undefined || cid === null || cid === '') continue;
      cid = String(cid);
      const list = byID.get(cid) || [];
      byID.set(cid, list);
      const open = list.length && list[list.length - 1].to === null ? list[list.length - 1] : null;
      if (e.kind === 'join') {
        if (open) open.to = e.tick;
        list.push({ name: e.player || '', from: e.tick, to: null });
      } else if (open) {
        open.to = e.tick;
        if (!open.name) open.name = e.player || '';
      } else {
        list.push({ name: e.player || '', from: null, to: e.tick });
      }
    }
    return byID;
  }

  /**
   * Fills the players table with its first rows, and returns a function
   * that adds the rest.
   */
  function renderPlayers(first) {
    const tb = $('players').tBodies[0];
    tb.replaceChildren();
    const rows = [];
    for (const [cid, list] of state.names) {
      for (const iv of list) rows.push({ name: iv.name, id: cid, from: iv.from, to: iv.to });
    }
    rows.sort((a, b) => (a.from ?? -1) - (b.from ?? -1));
    const at = (t) => (t === null || t === undefined ? '' : offset(timeAt(t)));
    if (rows.length) {
      const add = (list) => {
        for (const r of list) {
          const go = el('button', { type: 'button', text: at(r.from) || 'start', 'aria-label': `Go to when ${r.name} joined`, onclick: () => select(r.from ?? firstTick()) });
          tb.append(el('tr', {}, el('td', { text: r.name || '(unnamed)' }), el('td', { class: 'num', text: r.id }),
            el('td', {}, go), el('td', { class: 'num', text: r.to === null ? 'end' : at(r.to) })));
        }
      };
      add(rows.slice(0, first));
      return () => add(rows.slice(first));
    }
    for (const p of state.rec.players || []) {
      tb.append(el('tr', {}, el('td', { text: p.name || '(unnamed)' }), el('td', { class: 'num', text: p.id || (p.team ? `team ${p.team}` : '') }),
        el('td', { text: 'start' }), el('td', { text: 'end' })));
    }
    return () => {};
  }

  function renderMarks() {
    const r = state.rec;
    const ul = $('flags');
    ul.replaceChildren();
    const flags = r.flags || [];
    for (const f of flags) {
      const li = el('li', { dataset: { flag: f.name } }, el('strong', { text: f.name }),
        f.note ? ` — ${f.note}` : '', f.at ? el('span', { class: 'muted', text: ` (${wall(f.at)} UTC)` }) : '');
      if (isMod()) {
        li.append(' ', el('button', { type: 'button', class: 'unflag', text: 'Remove…', 'aria-label': `Remove flag ${f.name}`, onclick: () => unflag(f.name) }));
      }
      ul.append(li);
    }
    for (const f of r.file_flags || []) {
      if (!flags.some((x) => x.name === f)) ul.append(el('li', {}, el('strong', { text: f }), el('span', { class: 'muted', text: ' (in the file)' })));
    }
    if (!ul.children.length) ul.append(el('li', { class: 'muted', text: 'No flags' }));
    $('hold').textContent = r.hold ? `Held: ${r.hold.reason || 'no reason given'}${r.hold.at ? ` (${wall(r.hold.at)} UTC)` : ''}` : 'Not held';
    $('do-hold').hidden = !!r.hold;
    $('do-release').hidden = !r.hold;
  }

  function renderAudit(entries) {
    const tb = $('audit').tBodies[0];
    tb.replaceChildren();
    const list = entries.slice().sort((a, b) => (b.seq || 0) - (a.seq || 0));
    for (const a of list) {
      const what = el('td', { class: 'text' }, [a.action, a.detail].filter(Boolean).join(': '));
      if (a.reason) what.append(el('br'), el('span', { class: 'muted', text: a.reason }));
      tb.append(el('tr', { dataset: { action: a.action } }, el('td', { class: 'num', text: a.at ? wall(a.at) : '' }), el('td', { text: a.who || '' }), what));
    }
    if (!list.length) tb.append(el('tr', {}, el('td', { colspan: 3, class: 'muted', text: 'No history yet' })));
  }

  async function refreshAudit() {
    try {
      const r = await api(recURL(state.rec.id, '/audit'));
      renderAudit(r.entries || []);
    } catch (e) {
      $('act-status').textContent = 'Could not load the history: ' + errText(e);
    }
  }

  function renderActions() {
    $('mod').hidden = !isMod();
    $('dl-original').hidden = !isAdmin();
    const can = !!state.rec.can_clip;
    $('dl-clip').disabled = !can;
    $('dl-clip').title = can ? 'A native file of the selected range' + (isMod() ? '' : ' (redacted)') : 'This format cannot be cut into a clip';
  }

  function setDefaultRange() {
    if (state.rangeTouched) return;
    const half = Math.max(1, Math.round((rate() || 50) * 5));
    $('r-from').value = clamp(state.sel - half);
    $('r-to').value = clamp(state.sel + half);
  }

  function readRange() {
    let a = parseInt($('r-from').value, 10), b = parseInt($('r-to').value, 10);
    if (!isFinite(a)) a = firstTick();
    if (!isFinite(b)) b = lastTick();
    if (b < a) [a, b] = [b, a];
    return [clamp(a), clamp(b)];
  }

  // ---- selecting a moment -----------------------------------------------

  /** Moves the selection to tick and redraws what depends on it. */
  function select(tick, opts = {}) {
    state.sel = clamp(tick);
    const [a, b] = state.view;
    if (state.sel < a || state.sel > b) {
      const span = b - a;
      state.view = fitView(state.sel - span / 2, state.sel + span / 2);
      renderEventRows();
    }
    if (!opts.keepRange) setDefaultRange();
    drawTimeline();
    updatePos();
    drawTrails();
    if (!opts.noURL) {
      const u = new URL(location.href);
      u.searchParams.set('t', String(state.sel));
      history.replaceState(history.state, '', u.pathname + u.search);
    }
  }

  function fitView(a, b) {
    const f = firstTick(), l = Math.max(lastTick(), f + 1);
    let span = Math.max(Math.min(b - a, l - f), Math.min(20, l - f));
    a = Math.max(f, Math.min(a, l - span));
    return [a, a + span];
  }

  function updatePos() {
    const t = state.sel, w = wallAt(t);
    $('pos').textContent = `Tick ${t} · ${offset(timeAt(t))} into the recording${w ? ` · ${wall(w)} UTC` : ''}`;
  }

  // ---- timeline ---------------------------------------------------------

  function sizeCanvases() {
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
  function setFont(g, font) {
    if (g.font !== font) g.font = font;
  }

  const laneOf = (kind) => { const i = LANES.findIndex((l) => l.includes(kind)); return i < 0 ? LANES.length - 1 : i; };
  /** The index of an event kind in KIND_COLORS (unknown kinds are "other"). */
  const kindIndex = (() => {
    const idx = new Map(Object.keys(KIND_COLORS).map((k, i) => [k, i]));
    const other = idx.get('other');
    return (kind) => { const i = idx.get(kind); return i === undefined ? other : i; };
  })();

  function drawTimeline() {
    const c = $('timeline'), g = c.getContext('2d');
    const dpr = window.devicePixelRatio || 1;
    const W = c.width / dpr, H = c.height / dpr;
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, W, H);
    const [a, b] = state.view;
    const x = (t) => ((t - a) / (b - a || 1)) * W;
    const top = 18, laneH = (H - top - 4) / LANES.length;
    // Selected clip range.
    const [ra, rb] = readRange();
    g.fillStyle = 'rgba(31,95,191,0.10)';
    g.fillRect(x(ra), top, Math.max(2, x(rb) - x(ra)), H - top);
    // Axis with offsets.
    g.fillStyle = '#5b6472';
    setFont(g, TIMELINE_FONT);
    g.strokeStyle = '#e3e6eb';
    const spanMs = timeAt(b) - timeAt(a);
    const steps = [100, 250, 500, 1000, 2000, 5000, 10000, 15000, 30000, 60000, 120000, 300000, 600000, 900000, 1800000, 3600000];
    const step = steps.find((s) => spanMs / s <= Math.max(2, W / 90)) || 3600000;
    const t0 = Math.ceil(timeAt(a) / step) * step;
    for (let ms = t0; ms <= timeAt(b); ms += step) {
      const xx = x(tickAtFloat(ms));
      g.beginPath(); g.moveTo(xx, top); g.lineTo(xx, H); g.stroke();
      g.fillText(offset(ms).replace(/\.00$/, ''), xx + 2, 12);
    }
    // Events, one lane per group of kinds: a mark 3 px wide per pixel
    // column and lane (an hour's thousands of events share a few hundred
    // columns), the latest event of a column giving its colour, and one
    // path per colour.
    const cols = Math.ceil(W) + 2, kinds = Object.keys(KIND_COLORS), lanes = kinds.map(laneOf);
    const cell = new Uint8Array(cols * LANES.length); // kind index + 1
    const ev = state.events, [lo, hi] = ev.within(a, b), inView = hi - lo;
    const scale = W / (b - a || 1), evKind = ev.kind, kindOf = ev.kindOf, ticks = ev.tick;
    for (let i = lo; i < hi; i++) {
      const k = kindOf[evKind[i]];
      cell[lanes[k] * cols + Math.min(cols - 1, Math.max(0, Math.round((ticks[i] - a) * scale) + 1))] = k + 1;
    }
    const paths = kinds.map(() => null);
    for (let i = 0; i < cell.length; i++) {
      const k = cell[i] - 1;
      if (k < 0) continue;
      const p = paths[k] || (paths[k] = new Path2D());
      p.rect(i % cols - 2, top + Math.floor(i / cols) * laneH + 2, 3, laneH - 4);
    }
    paths.forEach((p, k) => {
      if (!p) return;
      g.fillStyle = KIND_COLORS[kinds[k]];
      g.fill(p);
    });
    // The selected moment.
    const xs = x(state.sel);
    g.fillStyle = '#b3261e';
    g.fillRect(xs - 1, top - 4, 2, H - top + 4);
    $('tl-range').textContent = `${offset(timeAt(a))} – ${offset(timeAt(b))}`;
    c.dataset.events = String(inView);
    if (!$('tl-legend').children.length) {
      const seen = new Set(Array.from(new Set(state.events.kind), (k) => kinds[state.events.kindOf[k]]));
      for (const k of Object.keys(KIND_COLORS)) {
        if (!seen.has(k)) continue;
        const sw = el('i');
        sw.style.background = KIND_COLORS[k]; // CSSOM, allowed by the page's CSP
        $('tl-legend').append(el('span', {}, sw, k));
      }
    }
  }

  /** Like tickAt, without rounding or clamping, for drawing the axis. */
  function tickAtFloat(ms) {
    const cs = state.rec.chunks || [];
    let i = 0;
    for (let lo = 0, hi = cs.length - 1; lo <= hi;) {
      const mid = (lo + hi) >> 1;
      if (cs[mid].time_ms <= ms) { i = mid; lo = mid + 1; } else hi = mid - 1;
    }
    const c = cs[i] || { start_tick: firstTick(), time_ms: 0 };
    return c.start_tick + (rate() ? (ms - c.time_ms) / 1000 * rate() : 0);
  }

  function zoom(factor, around) {
    const [a, b] = state.view;
    const at = around === undefined ? state.sel : around;
    const f = (at - a) / (b - a || 1);
    const span = (b - a) * factor;
    state.view = fitView(at - span * f, at + span * (1 - f));
    drawTimeline();
    renderEventRows();
  }

  function tickFromEvent(ev) {
    const c = $('timeline'), r = c.getBoundingClientRect();
    const [a, b] = state.view;
    return a + ((ev.clientX - r.left) / r.width) * (b - a);
  }

  $('timeline').addEventListener('click', (ev) => { stop(); select(tickFromEvent(ev)); });
  $('timeline').addEventListener('wheel', (ev) => {
    if (!state.rec) return;
    ev.preventDefault();
    zoom(ev.deltaY < 0 ? 0.8 : 1.25, tickFromEvent(ev));
  }, { passive: false });
  $('timeline').addEventListener('keydown', (ev) => {
    if (!state.rec) return;
    const sec = Math.max(1, Math.round(rate() || 1));
    const k = ev.key;
    if (k === 'ArrowLeft' || k === 'ArrowRight') {
      const n = (ev.shiftKey ? 10 : 1) * sec * (k === 'ArrowLeft' ? -1 : 1);
      select(state.sel + n);
    } else if (k === '+' || k === '=') zoom(0.5);
    else if (k === '-' || k === '_') zoom(2);
    else if (k === 'Home') select(firstTick());
    else if (k === 'End') select(lastTick());
    else return;
    ev.preventDefault();
  });
  $('zoom-in').addEventListener('click', () => zoom(0.5));
  $('zoom-out').addEventListener('click', () => zoom(2));
  $('zoom-all').addEventListener('click', () => { state.view = fitView(firstTick(), lastTick()); drawTimeline(); renderEventRows(); });

  function renderEventRows() {
    const tb = $('events').tBodies[0];
    tb.replaceChildren();
    const [a, b] = state.view;
    const ev = state.events, [lo, hi] = ev.within(a, b), total = hi - lo, n = Math.min(total, EVENT_ROWS);
    for (let i = lo; i < lo + n; i++) {
      const e = ev.at(i);
      const ms = e.time_ms !== undefined ? e.time_ms : timeAt(e.tick);
      const w = e.at ? wall(e.at) : state.rec.start ? wall(new Date(Date.parse(state.rec.start) + ms)) : offset(ms);
      tb.append(el('tr', { dataset: { tick: e.tick } },
        el('td', { class: 'num', text: w }), el('td', { class: 'num', text: String(e.tick) }),
        el('td', { text: e.player || '' }), el('td', { class: 'text', text: `${e.kind}${e.text ? ': ' + e.text : ''}` }),
        el('td', {}, el('button', { type: 'button', text: 'Go', 'aria-label': `Go to tick ${e.tick}`, onclick: () => { stop(); select(e.tick); } }))));
    }
    $('ev-more').textContent = total > n ? `${total - n} more events in view: zoom in to list them` : (total ? '' : 'No events in view');
  }

  // ---- frames and trails ------------------------------------------------

  const pieceTicks = () => Math.max(20, Math.round((rate() || 50) * PIECE_SECONDS));
  const trailTicks = () => Math.max(10, Math.round((rate() || 20) * TRAIL_SECONDS));

  /** Fetches the positions of [from, to], remembering the range. */
  function fetchRange(from, to) {
    const r = requestTracks(state.rec.id, `from=${from}&to=${to}`, from, to);
    state.ranges.push(r);
    if (state.ranges.length > MAX_RANGES) state.ranges.shift();
    return r;
  }

  /**
   * Asks for the positions of recording id (the tracks API with query q)
   * and returns the range: {from, to, frames}, frames resolving to them
   * as {from, to, tracks: id -> {label, pts: [[tick, x, y]]}}, a gap a
   * point without a position. The answer's from and to replace the
   * range's. A range that fails leaves state.ranges.
   */
  function requestTracks(id, q, from, to) {
    const r = { from, to, frames: null };
    r.frames = api(recURL(id, `/tracks?${q}`)).then((a) => {
      const tracks = new Map();
      for (const t of a.tracks || []) {
        tracks.set(t.track, { label: t.label, pts: (t.points || []).map((p) => (p.length < 3 ? [p[0], NaN, NaN] : [p[0], p[1], p[2]])) });
      }
      r.from = a.from;
      r.to = a.to;
      return { from: a.from, to: a.to, tracks };
    });
    r.frames.catch(() => { state.ranges = state.ranges.filter((x) => x !== r); });
    return r;
  }

  /**
   * Asks for the positions around tick t of recording id before its
   * metadata is in, so they arrive with it, not one round trip after it:
   * the trail and the look ahead, in seconds (the server knows the tick
   * rate). Returns the range, not yet in state.ranges: its ticks are
   * known once the recording or the answer is in.
   */
  function guessTracks(id, t) {
    return requestTracks(id, `at=${t}&before=${TRAIL_SECONDS}s&after=${AHEAD_SECONDS * 1000}ms`, null, null);
  }

  /**
   * Resolves to the parsed frames covering [a, b]: the ranges fetched (or
   * on their way) already, and fetches for the gaps between them. A gap
   * is fetched at least half a piece long (backwards at the start of the
   * window, forwards elsewhere), so stepping a tick at a time does not
   * send a request per tick; no fetch is longer than a piece.
   */
  function framesFor(a, b) {
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
    return Promise.all(out.map((r) => r.frames));
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
  async function drawTrails() {
    if (!state.rec) return;
    const seq = ++drawSeq;
    const sel = state.sel;
    const trail = trailTicks();
    // While playing, keep a second of frames ahead in hand: fetch the
    // next piece before the selection reaches the end of what is loaded.
    if (state.playing && !covered(sel, sel + Math.round(rate() || 20))) {
      framesFor(sel, sel + pieceTicks()).catch(() => {});
    }
    let pieces;
    try {
      pieces = await framesFor(sel - trail, sel);
    } catch (e) {
      if (seq === drawSeq) $('trail-note').textContent = 'Could not load frames: ' + errText(e);
      return;
    }
    if (seq !== drawSeq || !state.rec) return;
    paintTrails(pieces, sel, trail);
  }

  function paintTrails(pieces, sel, trail) {
    const c = $('trails'), g = c.getContext('2d');
    const dpr = window.devicePixelRatio || 1;
    const W = c.width / dpr, H = c.height / dpr;
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.fillStyle = TRAILS_BG;
    g.fillRect(0, 0, W, H);
    // Merge the pieces' tracks over the trail window.
    const tracks = new Map();
    let minX = Infinity, maxX = -Infinity, minY = Infinity, maxY = -Infinity;
    for (const p of pieces) {
      for (const [id, t] of p.tracks) {
        let m = tracks.get(id);
        if (!m) { m = { label: t.label, pts: [] }; tracks.set(id, m); }
        if (t.label) m.label = t.label;
        for (const pt of t.pts) {
          if (pt[0] >= sel - trail && pt[0] <= sel) m.pts.push(pt);
          if (isNaN(pt[1])) continue;
          // The bounds cover the whole pieces, so the picture holds still
          // while the selection moves inside them.
          minX = Math.min(minX, pt[1]); maxX = Math.max(maxX, pt[1]);
          minY = Math.min(minY, pt[2]); maxY = Math.max(maxY, pt[2]);
        }
      }
    }
    let drawn = 0;
    const labels = [];
    if (isFinite(minX)) {
      const pad = 28;
      const sx = (W - 2 * pad) / Math.max(1e-9, maxX - minX), sy = (H - 2 * pad) / Math.max(1e-9, maxY - minY);
      const s = Math.min(sx, sy);
      const ox = pad + (W - 2 * pad - (maxX - minX) * s) / 2, oy = pad + (H - 2 * pad - (maxY - minY) * s) / 2;
      const X = (v) => ox + (v - minX) * s, Y = (v) => oy + (v - minY) * s;
      g.strokeStyle = 'rgba(255,255,255,0.06)';
      g.lineWidth = 1;
      g.beginPath();
      for (let i = 1; i < 8; i++) {
        g.moveTo((W * i) / 8, 0); g.lineTo((W * i) / 8, H);
        g.moveTo(0, (H * i) / 8); g.lineTo(W, (H * i) / 8);
      }
      g.stroke();
      setFont(g, TRAILS_FONT);
      for (const [id, t] of tracks) {
        if (!t.pts.length) continue;
        t.pts.sort((p, q) => p[0] - q[0]);
        const col = colorFor(id);
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
        g.beginPath(); g.arc(X(h[1]), Y(h[2]), 5, 0, Math.PI * 2); g.fill();
        const label = t.label;
        g.fillStyle = '#fff';
        g.fillText(label, X(h[1]) + 8, Y(h[2]) - 6);
        labels.push(label);
        drawn++;
      }
    }
    g.fillStyle = 'rgba(255,255,255,0.75)';
    setFont(g, TRAILS_FONT);
    g.fillText(`tick ${sel} · ${offset(timeAt(sel))}`, 8, H - 8);
    c.dataset.tracks = String(drawn);
    c.dataset.labels = labels.join('\n');
    c.dataset.tick = String(sel);
    c.setAttribute('aria-label', drawn ? `Positions around tick ${sel}: ${labels.join(', ')}` : `No positions around tick ${sel}`);
    $('trail-note').textContent = drawn ? `${drawn} trail${drawn === 1 ? '' : 's'}, the last ${TRAIL_SECONDS} s before the selected moment` :
      'No positions around this moment (nobody in the game, or this format records none).';
  }

  // ---- playback ---------------------------------------------------------

  function play() {
    if (!state.rec || state.playing) return;
    if (state.sel >= lastTick()) select(firstTick());
    state.playing = true;
    state.lastFrame = performance.now();
    state.playAcc = 0;
    $('p-play').textContent = 'Pause';
    $('p-play').setAttribute('aria-pressed', 'true');
    requestAnimationFrame(tickPlay);
  }

  function stop() {
    state.playing = false;
    $('p-play').textContent = 'Play';
    $('p-play').setAttribute('aria-pressed', 'false');
  }

  function tickPlay(now) {
    if (!state.playing || !state.rec) return;
    const dt = (now - state.lastFrame) / 1000;
    state.lastFrame = now;
    state.playAcc += dt * (rate() || 20) * state.speed;
    const n = Math.floor(state.playAcc);
    if (n > 0) {
      state.playAcc -= n;
      const t = state.sel + n;
      if (t >= lastTick()) { select(lastTick(), { noURL: true }); stop(); return; }
      select(t, { noURL: true });
    }
    requestAnimationFrame(tickPlay);
  }

  const secTicks = () => Math.max(1, Math.round(rate() || 1));
  $('p-play').addEventListener('click', () => (state.playing ? stop() : play()));
  $('p-start').addEventListener('click', () => { stop(); select(firstTick()); });
  $('p-back').addEventListener('click', () => { stop(); select(state.sel - 1); });
  $('p-fwd').addEventListener('click', () => { stop(); select(state.sel + 1); });
  $('p-back-s').addEventListener('click', () => { stop(); select(state.sel - secTicks()); });
  $('p-fwd-s').addEventListener('click', () => { stop(); select(state.sel + secTicks()); });
  $('p-speed').addEventListener('change', () => { state.speed = parseFloat($('p-speed').value) || 1; });

  /**
   * Reads a moment: a tick ("1234"), an offset ("1m04s", "90s", "1:04",
   * "1:02:03.5") or a wall-clock time of day ("22:03:15 UTC" when the
   * recording has a start).
   */
  function parseMoment(s) {
    s = s.trim();
    if (/^\d+$/.test(s)) return parseInt(s, 10);
    const m = s.match(/^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+(?:\.\d+)?)s)?$/);
    if (m && (m[1] || m[2] || m[3])) return tickAt(((+m[1] || 0) * 3600 + (+m[2] || 0) * 60 + (+m[3] || 0)) * 1000);
    const wallRe = /^(\d{1,2}):(\d\d):(\d\d(?:\.\d+)?)\s*(?:UTC|Z)$/i;
    const w = s.match(wallRe);
    if (w && state.rec.start) {
      const st = new Date(state.rec.start);
      const d = Date.UTC(st.getUTCFullYear(), st.getUTCMonth(), st.getUTCDate(), +w[1], +w[2]) + parseFloat(w[3]) * 1000;
      let ms = d - st.getTime();
      if (ms < 0) ms += 86400000;
      return tickAt(ms);
    }
    const c = s.match(/^(?:(\d+):)?(\d+):(\d\d(?:\.\d+)?)$/);
    if (c) return tickAt(((+c[1] || 0) * 3600 + +c[2] * 60 + parseFloat(c[3])) * 1000);
    return NaN;
  }

  $('jump').addEventListener('submit', (e) => {
    e.preventDefault();
    const t = parseMoment($('jump-to').value);
    if (!isFinite(t)) {
      $('pos').textContent = `"${$('jump-to').value}" is not a tick, an offset like 1m04s, or a time like 22:03:15 UTC`;
      return;
    }
    stop();
    select(t);
  });

  // ---- actions ----------------------------------------------------------

  for (const id of ['r-from', 'r-to']) {
    $(id).addEventListener('input', () => { state.rangeTouched = true; drawTimeline(); });
  }
  $('r-here-from').addEventListener('click', () => { state.rangeTouched = true; $('r-from').value = state.sel; drawTimeline(); });
  $('r-here-to').addEventListener('click', () => { state.rangeTouched = true; $('r-to').value = state.sel; drawTimeline(); });
  $('dl-clip').addEventListener('click', () => {
    const [a, b] = readRange();
    download(recURL(state.rec.id, `/clip?from=${a}&to=${b}`), $('act-status'));
  });
  $('dl-redacted').addEventListener('click', () => download(recURL(state.rec.id, '/file?redact=1'), $('act-status')));
  $('dl-original').addEventListener('click', () => download(recURL(state.rec.id, '/file'), $('act-status')));

  /**
   * Asks for confirmation (and a name and note where the action takes
   * them) in a dialog; run performs the action and may throw, which keeps
   * the dialog open with the error.
   */
  function confirmAction({ title, text, nameLabel, noteLabel, required, ok, danger, run }) {
    const dlg = $('act-dlg');
    $('act-dlg-h').textContent = title;
    $('act-dlg-text').textContent = text;
    $('act-name-row').hidden = !nameLabel;
    $('act-name').required = !!nameLabel;
    $('act-name').value = '';
    $('act-note-label').textContent = noteLabel;
    $('act-note').value = '';
    $('act-note').required = !!required;
    $('act-ok').textContent = ok;
    $('act-ok').className = danger ? 'danger' : '';
    $('act-err').hidden = true;
    const close = () => { $('act-form').onsubmit = null; $('act-cancel').onclick = null; dlg.close(); };
    $('act-cancel').onclick = close;
    $('act-form').onsubmit = async (e) => {
      e.preventDefault();
      $('act-ok').disabled = true;
      try {
        await run($('act-name').value.trim(), $('act-note').value.trim());
        close();
      } catch (err) {
        $('act-err').textContent = errText(err);
        $('act-err').hidden = false;
      } finally {
        $('act-ok').disabled = false;
      }
    };
    dlg.showModal();
    (nameLabel ? $('act-name') : $('act-note')).focus();
  }

  /** Takes the recording JSON an action answered with and shows it. */
  async function afterChange(rec, what) {
    if (rec && rec.id) state.rec = Object.assign(state.rec, rec);
    renderMarks();
    await refreshAudit();
    $('act-status').textContent = what;
  }

  $('do-flag').addEventListener('click', () => confirmAction({
    title: 'Flag this recording', text: 'The flag keeps the recording from retention and is searchable with flag:NAME.',
    nameLabel: 'Flag name', noteLabel: 'Note', ok: 'Flag',
    run: async (name, note) => {
      const r = await api(recURL(state.rec.id, `/flags/${encodeURIComponent(name)}`), { method: 'PUT', json: { note } });
      await afterChange(r, `Flagged ${name}`);
    },
  }));

  function unflag(name) {
    confirmAction({
      title: `Remove flag ${name}`, text: 'The flag leaves the recording; the history keeps it.', noteLabel: 'Reason', ok: 'Remove flag',
      run: async (_, reason) => {
        const r = await api(recURL(state.rec.id, `/flags/${encodeURIComponent(name)}`), { method: 'DELETE', json: { reason } });
        await afterChange(r, `Removed flag ${name}`);
      },
    });
  }

  $('do-hold').addEventListener('click', () => confirmAction({
    title: 'Hold this recording', text: 'A held recording is never removed by retention or a takedown until released.',
    noteLabel: 'Reason', required: true, ok: 'Hold',
    run: async (_, reason) => {
      const r = await api(recURL(state.rec.id, '/hold'), { method: 'PUT', json: { reason } });
      await afterChange(r, 'Held');
    },
  }));

  $('do-release').addEventListener('click', () => confirmAction({
    title: 'Release the hold', text: 'Retention may remove the recording again once it is released.',
    noteLabel: 'Reason', ok: 'Release',
    run: async (_, reason) => {
      const r = await api(recURL(state.rec.id, '/hold'), { method: 'DELETE', json: { reason } });
      await afterChange(r, 'Released');
    },
  }));

  $('do-delete').addEventListener('click', () => confirmAction({
    title: 'Take this recording down',
    text: 'The recording is hidden now, and its file and its game are refused if they are ingested again. Its bytes are kept for 7 days: until then a moderator can undo the takedown (archivectl takedowns undo, or the API).',
    noteLabel: 'Reason (required)', required: true, ok: 'Take down', danger: true,
    run: async (_, reason) => {
      await api(recURL(state.rec.id), { method: 'DELETE', json: { reason } });
      const id = state.rec.id;
      go(sessionStorage.getItem('replay.lastSearch') || '/');
      notice(`Recording ${id} was taken down: ${reason}`);
    },
  }));

  // ---- start ------------------------------------------------------------

  // The login link 'archivectl serve' prints carries the owner's secret in
  // the fragment (never sent to a server): keep it for this tab and take it
  // out of the address bar and the history.
  if (location.hash.startsWith('#login=')) {
    const t = decodeURIComponent(location.hash.slice('#login='.length)).trim();
    if (t) sessionStorage.setItem(TOKEN_KEY, t);
    history.replaceState(history.state, '', location.pathname + location.search);
  }

  $('signout').addEventListener('click', async () => {
    sessionStorage.removeItem(TOKEN_KEY);
    state.who = null;
    state.whoReady = loadWho();
    await state.whoReady;
    route();
  });
  $('signin').addEventListener('click', async () => {
    try { await askToken('Sign in with a token.'); } catch (e) { return; }
    state.whoReady = loadWho();
    await state.whoReady;
    route();
  });

  let resizeTimer = 0;
  window.addEventListener('resize', () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => {
      if (!state.rec || $('rec-view').hidden) return;
      sizeCanvases();
      drawTimeline();
      drawTrails();
    }, 100);
  });
  window.addEventListener('popstate', route);

  // Who is signed in is asked once, next to the first view's own
  // requests; the recording page waits for it before showing actions.
  state.whoReady = loadWho().catch(() => {});
  route();
})();
