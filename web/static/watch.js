// Watching a recording together (issue 33): a moderator opens a room
// (POST /api/v1/watch) and shares its link, /r/ID?watch=ROOM; everyone
// in the room follows its moment, speed and playing state, pushed by
// the server as Server-Sent Events, and the participant with the
// controls posts its own changes (throttled). Any participant may take
// the controls.

import { $, el } from './util.js';
import { API, api, errText } from './api.js';
import { state, isMod, rate } from './state.js';
import { onMoment, onPlayback, play, stop, select } from './moment.js';

// The least time between two state posts of the controller.
const POST_EVERY_MS = 200;

// The room this page is in: {id, participant, source (EventSource),
// you_control, version, token}; null when in none.
let room = null;
// While the page applies the room's state, its own changes are not posted.
let applying = false;
let lastPost = 0, postTimer = 0;

const watchURL = (id, rest = '') => `${API}/watch/${encodeURIComponent(id)}${rest}`;

/** Leaves the room, if any (the page moved to another view). */
export function leaveWatch() {
  if (room && room.source) room.source.close();
  clearTimeout(postTimer);
  room = null;
  const p = $('watch');
  p.hidden = true;
  $('watch-who').replaceChildren();
  $('watch-status').textContent = '';
  $('watch-link-row').hidden = true;
  $('watch-take').hidden = true;
  delete document.body.dataset.watch;
}

/**
 * Sets up the watch controls of recording id once its page is shown:
 * joins the URL's room (?watch=ROOM), or offers moderators to open one.
 */
export function showWatch(id, token) {
  leaveWatch();
  const roomID = new URLSearchParams(location.search).get('watch');
  if (!roomID && !isMod()) return;
  $('watch').hidden = false;
  $('watch-start').hidden = !isMod() || !!roomID;
  if (roomID) join(roomID, token);
}

$('watch-start').addEventListener('click', async () => {
  if (!state.rec) return;
  const token = state.token;
  $('watch-start').disabled = true;
  try {
    const r = await api(`${API}/watch`, { method: 'POST', json: { recording: state.rec.id } });
    if (token !== state.token) return;
    const u = new URL(location.href);
    u.searchParams.set('watch', r.id);
    history.replaceState(history.state, '', u.pathname + u.search);
    $('watch-start').hidden = true;
    connect(r.id, r.participant, token);
  } catch (e) {
    $('watch-status').textContent = 'Could not open a shared viewing: ' + errText(e);
  } finally {
    $('watch-start').disabled = false;
  }
});

$('watch-take').addEventListener('click', async () => {
  if (!room) return;
  try {
    const st = await api(watchURL(room.id, '/take'), { method: 'POST', json: { participant: room.participant } });
    if (room && st.you_control) {
      room.you_control = true;
      post();
    }
  } catch (e) {
    $('watch-status').textContent = 'Could not take the controls: ' + errText(e);
  }
});

$('watch-copy').addEventListener('click', () => {
  $('watch-link').select();
  navigator.clipboard && navigator.clipboard.writeText($('watch-link').value).catch(() => {});
});

/** Joins room id (a link's): asks for a participant id, then listens. */
async function join(id, token) {
  $('watch-status').textContent = 'Joining the shared viewing…';
  try {
    const j = await api(watchURL(id, '/join'), { method: 'POST' });
    if (token !== state.token) return;
    connect(id, j.participant, token);
  } catch (e) {
    if (token !== state.token) return;
    $('watch-status').textContent = 'Could not join the shared viewing: ' + errText(e);
  }
}

/**
 * Listens to room id's events as participant p. An EventSource sends no
 * token: the participant id, which the join answered this tab, is the
 * stream's credential. A stream the server ended (the room is gone, or
 * the tab fell behind and was dropped) is joined again once.
 */
function connect(id, p, token, rejoined = false) {
  const link = new URL(`/r/${encodeURIComponent(state.rec.id)}?watch=${encodeURIComponent(id)}`, location.href).href;
  $('watch-link').value = link;
  $('watch-link-row').hidden = false;
  const src = new EventSource(watchURL(id, `/events?participant=${encodeURIComponent(p)}`));
  room = { id, participant: p, source: src, you_control: false, version: 0, token, fresh: true };
  src.addEventListener('state', (e) => {
    if (!room || room.source !== src) return;
    applyState(JSON.parse(e.data));
  });
  src.addEventListener('error', () => {
    if (!room || room.source !== src || src.readyState !== EventSource.CLOSED) return;
    if (rejoined) {
      $('watch-status').textContent = 'The shared viewing ended.';
      room.source = null;
      return;
    }
    join2(id, token);
  });
}

/** Joins room id again, once. */
async function join2(id, token) {
  try {
    const j = await api(watchURL(id, '/join'), { method: 'POST' });
    if (token === state.token) connect(id, j.participant, token, true);
  } catch (e) {
    if (token === state.token) $('watch-status').textContent = 'The shared viewing ended: ' + errText(e);
  }
}

/** Shows a room's state and, unless this tab has the controls, follows it. */
function applyState(st) {
  const first = room.fresh;
  room.fresh = false;
  room.version = st.version;
  const had = room.you_control;
  room.you_control = st.you_control;
  document.body.dataset.watch = st.you_control ? 'controls' : 'follows';
  $('watch-take').hidden = st.you_control;
  $('watch-status').textContent = st.you_control
    ? 'You have the controls: the others follow you.'
    : st.controller ? `Following ${st.controller}.` : 'Nobody has the controls.';
  $('watch-who').replaceChildren(...st.participants.map((p) => el('li', {
    text: `${p.name} (${p.role})${p.controls ? ' — has the controls' : ''}${p.you ? ' — you' : ''}`,
  })));
  if (st.you_control) {
    // The room's first state is the room's, not this page's: the page
    // that opened (or took) it says where it is.
    if (first || !had) post();
    return;
  }
  if (!state.rec || st.recording !== state.rec.id) return;
  applying = true;
  try {
    if (st.speed && st.speed !== state.speed) {
      state.speed = st.speed;
      $('p-speed').value = String(st.speed);
    }
    // While both play, a small lag is left to the local clock (less
    // than a quarter of a second of ticks).
    const slack = st.playing && state.playing ? Math.max(1, Math.round((rate() || 20) * 0.25)) : 0;
    if (Math.abs(state.sel - st.tick) > slack) select(st.tick, { noURL: st.playing });
    if (st.playing && !state.playing) play();
    if (!st.playing && state.playing) stop();
  } finally {
    applying = false;
  }
}

/** Posts the page's moment, speed and playing state, when it has the controls. */
function post() {
  if (!room || !room.you_control || !state.rec) return;
  clearTimeout(postTimer);
  postTimer = 0;
  lastPost = performance.now();
  const r = room;
  api(watchURL(r.id, '/state'), {
    method: 'POST',
    json: { participant: r.participant, tick: state.sel, speed: state.speed, playing: state.playing },
  }).catch((e) => {
    if (room === r) $('watch-status').textContent = 'Your change was not shared: ' + errText(e);
  });
}

/** A change of the page's own: posted at most every POST_EVERY_MS. */
function changed() {
  if (applying || !room || !room.you_control || postTimer) return;
  const wait = lastPost + POST_EVERY_MS - performance.now();
  if (wait <= 0) post();
  else postTimer = setTimeout(post, wait);
}

onMoment(changed);
onPlayback(changed);
