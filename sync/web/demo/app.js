// The recached-edge demo: a shared todo list, a live counter and the
// presence of open tabs, all kept in sync through the WebSocket bridge.
//
// Data: each todo is a hash demo:todo:<id> {text, done, at}; the counter is
// the string demo:counter; tabs announce themselves on the pub/sub channel
// demo:presence. Open mode (SYNC demo:*) by default; ?token=… uses a scope
// token instead.

import { connect } from '/recached-edge.js';

const params = new URLSearchParams(location.search);
const wsURL = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/`;
const options = { name: params.get('name') || 'demo' };
if (params.get('token')) options.token = params.get('token');
else options.patterns = ['demo:*'];
if (params.get('password')) options.password = params.get('password');

const client = connect(wsURL, options);

const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));

// -- rendering ----------------------------------------------------------------

let scheduled = false;
/**
 * Re-renders once per task, whatever the number of changes in it (not per
 * animation frame: a tab in the background gets none, and it should still
 * be current when it comes back).
 */
function render() {
  if (scheduled) return;
  scheduled = true;
  queueMicrotask(() => {
    scheduled = false;
    renderTodos();
    renderCounter();
  });
}

/** The list items by key, kept across renders so that focus and clicks survive updates. */
const items = new Map();

function renderTodos() {
  const list = $('list');
  const todos = client.keys('demo:todo:*')
    .filter((k) => client.type(k) === 'hash')
    .map((key) => ({ key, ...client.hgetall(key) }))
    .sort((a, b) => Number(a.at || 0) - Number(b.at || 0) || (a.key < b.key ? -1 : 1));
  const keep = new Set(todos.map((t) => t.key));
  for (const [key, li] of items) {
    if (!keep.has(key)) {
      li.remove();
      items.delete(key);
    }
  }
  let empty = list.querySelector('.empty');
  if (todos.length === 0 && !empty) {
    empty = document.createElement('li');
    empty.className = 'empty';
    empty.textContent = 'Nothing to do. Add something above.';
    list.append(empty);
  } else if (todos.length > 0 && empty) {
    empty.remove();
  }
  todos.forEach((t, i) => {
    let li = items.get(t.key);
    if (!li) {
      li = todoItem(t.key);
      items.set(t.key, li);
    }
    const done = t.done === '1';
    li.classList.toggle('done', done);
    li.classList.toggle('pending', client.pending(t.key));
    const box = /** @type {HTMLInputElement} */ (li.querySelector('input'));
    if (box.checked !== done) box.checked = done;
    const text = /** @type {HTMLElement} */ (li.querySelector('.text'));
    if (text.textContent !== (t.text || '')) text.textContent = t.text || '';
    if (list.children[i] !== li) list.insertBefore(li, list.children[i] || null);
  });
  const left = todos.filter((t) => t.done !== '1').length;
  $('left').textContent = `${left} item${left === 1 ? '' : 's'} left`;
}

/** A new list item for a todo key. @param {string} key */
function todoItem(key) {
  const li = document.createElement('li');
  li.dataset.key = key;
  const box = document.createElement('input');
  box.type = 'checkbox';
  box.setAttribute('aria-label', 'Done');
  box.addEventListener('change', () => write(client.hset(key, 'done', box.checked ? '1' : '0')));
  const text = document.createElement('span');
  text.className = 'text';
  const remove = document.createElement('button');
  remove.className = 'remove';
  remove.type = 'button';
  remove.title = 'Delete';
  remove.textContent = '×';
  remove.addEventListener('click', () => write(client.del(key)));
  li.append(box, text, remove);
  return li;
}

function renderCounter() {
  $('count').textContent = client.get('demo:counter') ?? '0';
}

/** Reports a failed write without stopping the app. @param {Promise<any>} p */
function write(p) {
  p.catch((err) => console.warn('recached demo: write failed:', err.message));
}

// -- live data ------------------------------------------------------------------

client.query('demo:*', render);

client.on('state', (e) => {
  const badge = $('conn');
  badge.dataset.state = e.state;
  let label = e.state;
  if (e.state === 'offline' && e.reason !== 'offline' && e.retryIn !== undefined) label = `offline · retry in ${(e.retryIn / 1000).toFixed(1)}s`;
  if (e.state === 'closed' && e.reason) label = `closed: ${e.reason}`;
  $('conn-label').textContent = label;
  badge.title = e.reason || '';
  if (e.state === 'open') announce();
  render();
});

client.on('outbox', (n) => {
  $('outbox').textContent = String(n);
  $('outbox').parentElement?.classList.toggle('busy', n > 0);
  render();
});

client.on('identity', (id) => {
  $('ident').textContent = `client ${id.clientId.slice(0, 8)}… · session ${id.epoch} · slot ${id.slot}`;
});

client.on('error', (err) => console.warn('recached demo:', err.message));

// -- controls ---------------------------------------------------------------------

$('add').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const input = /** @type {HTMLInputElement} */ ($('text'));
  const text = input.value.trim();
  if (!text) return;
  const id = Date.now().toString(36) + Math.random().toString(36).slice(2, 6);
  write(client.hset(`demo:todo:${id}`, { text, done: '0', at: Date.now() }));
  input.value = '';
});

$('clear').addEventListener('click', () => {
  const done = client.keys('demo:todo:*').filter((k) => client.type(k) === 'hash' && client.hget(k, 'done') === '1');
  if (done.length) write(client.del(...done));
});

$('inc').addEventListener('click', () => write(client.incr('demo:counter')));
$('dec').addEventListener('click', () => write(client.decr('demo:counter')));

$('offline').addEventListener('change', (ev) => {
  if (/** @type {HTMLInputElement} */ (ev.target).checked) client.goOffline();
  else client.goOnline();
});

// -- presence -------------------------------------------------------------------------
//
// Each tab publishes a heartbeat on demo:presence every few seconds (only
// while connected: PUBLISH is not an outbox write) and a goodbye when it
// goes away; a tab that hears a newcomer answers at once so that both see
// each other without waiting for the next beat.

const ANIMALS = ['Otter', 'Heron', 'Lynx', 'Panda', 'Koala', 'Falcon', 'Badger', 'Gecko', 'Puffin', 'Marten', 'Ibis', 'Tapir'];
const COLORS = ['#d6336c', '#1c7ed6', '#2f9e44', '#e8590c', '#7048e8', '#0c8599', '#c2255c', '#5c940d'];

function tabIdentity() {
  const saved = sessionStorage.getItem('recached-demo-tab');
  if (saved) return JSON.parse(saved);
  const me = {
    tab: crypto.randomUUID(),
    name: ANIMALS[Math.floor(Math.random() * ANIMALS.length)],
    color: COLORS[Math.floor(Math.random() * COLORS.length)],
  };
  sessionStorage.setItem('recached-demo-tab', JSON.stringify(me));
  return me;
}

const me = tabIdentity();
/** @type {Map<string, {name: string, color: string, seen: number}>} */
const tabs = new Map();

function announce() {
  if (client.state !== 'open') return;
  client.publish('demo:presence', JSON.stringify({ ...me, t: Date.now() })).catch(() => undefined);
}

client.subscribe('demo:presence', (message) => {
  let m;
  try {
    m = JSON.parse(message);
  } catch {
    return;
  }
  if (!m || typeof m.tab !== 'string' || m.tab === me.tab) return;
  if (m.bye) {
    tabs.delete(m.tab);
  } else {
    const isNew = !tabs.has(m.tab);
    tabs.set(m.tab, { name: String(m.name).slice(0, 20), color: String(m.color), seen: Date.now() });
    if (isNew) announce();
  }
  renderTabs();
});

function renderTabs() {
  const now = Date.now();
  for (const [id, t] of tabs) if (now - t.seen > 12000) tabs.delete(id);
  const list = $('tabs');
  list.replaceChildren();
  const all = [{ ...me, you: true }, ...[...tabs.values()].sort((a, b) => (a.name < b.name ? -1 : 1))];
  for (const t of all) {
    const li = document.createElement('li');
    const avatar = document.createElement('span');
    avatar.className = 'avatar';
    avatar.style.background = t.color;
    avatar.textContent = t.name[0];
    const name = document.createElement('span');
    name.textContent = t.name;
    li.append(avatar, name);
    if (t.you) {
      const you = document.createElement('span');
      you.className = 'me';
      you.textContent = client.state === 'open' ? '(this tab)' : '(this tab, offline)';
      li.append(you);
    }
    list.append(li);
  }
  $('tabs-count').textContent = String(all.length);
}

setInterval(() => {
  announce();
  renderTabs();
}, 4000);
addEventListener('pagehide', () => {
  if (client.state === 'open') client.publish('demo:presence', JSON.stringify({ tab: me.tab, bye: true })).catch(() => undefined);
});
client.on('state', renderTabs);
renderTabs();
render();

// For the end-to-end tests and curious developers.
// @ts-ignore
window.demo = { client };
