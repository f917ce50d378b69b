// The connection state machine of realtime-client.js against the real
// server: the test builds the recached binary, runs it on free loopback
// ports, kills it with SIGKILL and starts it again on the same port and
// directory. Run with `node --experimental-websocket --test` on Node 20
// (Node 22 has WebSocket without the flag).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { createServer, connect as tcpConnect } from 'node:net';
import { fileURLToPath } from 'node:url';
import { Realtime, backoff, tokenExpiry, globMatch } from '../realtime-client.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'realtime-node-'));
const bin = join(dir, 'recached');
const KEY = 's1-secret.k1';

before(() => {
  execFileSync('go', ['build', '-o', bin, './cmd/recached'], { cwd: root, stdio: 'inherit' });
  writeFileSync(join(dir, 'keys.json'), JSON.stringify([{ id: 'k1', secret: 's1-secret', capability: { '*': ['subscribe', 'publish', 'presence'] } }]));
});
after(() => rmSync(dir, { recursive: true, force: true }));

const freePort = () => new Promise((resolve, reject) => {
  const s = createServer();
  s.on('error', reject);
  s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
});

const listening = (port) => new Promise((resolve) => {
  const c = tcpConnect(port, '127.0.0.1');
  c.on('connect', () => { c.destroy(); resolve(true); });
  c.on('error', () => resolve(false));
});

/** until polls f every 5 ms until it is truthy, for at most ms. */
async function until(f, what, ms = 30000) {
  const t0 = Date.now();
  for (;;) {
    const v = f();
    if (v) return v;
    if (Date.now() - t0 > ms) throw new Error('timed out waiting for ' + what);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** A recached process on fixed ports, restartable. */
class Server {
  constructor(port, rtPort, data) { this.port = port; this.rtPort = rtPort; this.data = data; this.output = ''; }
  static async create() {
    const data = mkdtempSync(join(dir, 'data-'));
    const s = new Server(await freePort(), await freePort(), data);
    await s.start();
    return s;
  }
  async start() {
    this.proc = spawn(bin, ['--bind', '127.0.0.1', '--port', String(this.port), '--ws-port', '0', '--amaquet-port', '0',
      '--realtime-port', String(this.rtPort), '--api-keys', join(dir, 'keys.json'), '--dir', this.data, '--save', '', '--appendfsync', 'always']);
    this.proc.stdout.on('data', (b) => { this.output += b; });
    this.proc.stderr.on('data', (b) => { this.output += b; });
    this.exited = new Promise((r) => this.proc.on('exit', r));
    await until(() => this.proc.exitCode === null, 'the server to run');
    const t0 = Date.now();
    while (!(await listening(this.rtPort))) {
      if (this.proc.exitCode !== null || Date.now() - t0 > 20000) throw new Error('recached did not start:\n' + this.output);
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  async kill() { this.proc.kill('SIGKILL'); await this.exited; }
  async stop() { if (this.proc.exitCode === null) { this.proc.kill('SIGTERM'); await this.exited; } }
  get url() { return `ws://127.0.0.1:${this.rtPort}/`; }
}

test('backoff doubles up to the maximum and jitter only shortens it', () => {
  assert.deepEqual([1, 2, 3, 4, 5, 6].map((n) => backoff(100, 1000, n, () => 0)), [100, 200, 400, 800, 1000, 1000]);
  for (let n = 1; n < 8; n++) {
    const full = backoff(100, 1000, n, () => 0);
    const d = backoff(100, 1000, n);
    assert.ok(d <= full && d >= full * 0.7, `attempt ${n}: ${d} outside [${full * 0.7}, ${full}]`);
  }
});

test('tokenExpiry reads exp without trusting anything else', () => {
  const enc = (o) => Buffer.from(JSON.stringify(o)).toString('base64url');
  assert.equal(tokenExpiry(`h.${enc({ exp: 1700000000 })}.s`), 1700000000000);
  assert.equal(tokenExpiry(`h.${enc({ iat: 1 })}.s`), 0);
  assert.equal(tokenExpiry('not a token'), 0);
  assert.equal(tokenExpiry('h.@@@.s'), 0);
});

test('globMatch matches channels as the server does', () => {
  const cases = [['chat:*', 'chat:lobby', true], ['chat:*', 'chats', false], ['a?c', 'abc', true], ['[ab]x', 'bx', true],
    ['[^ab]x', 'bx', false], ['[a-c]', 'b', true], ['\\*', '*', true], ['\\*', 'x', false], ['*', '', true], ['a*b*c', 'aXbYc', true]];
  for (const [p, s, want] of cases) assert.equal(globMatch(p, s), want, `${p} ~ ${s}`);
});

test('state machine: connected, disconnected with growing backoff, suspended, connected again, nothing lost', async () => {
  const srv = await Server.create();
  const states = [];
  const rt = new Realtime(srv.url, { key: KEY, minRetry: 20, maxRetry: 160, random: () => 0, connectionStateTtl: 1500, suspendedRetry: 100 });
  rt.on('state', (e) => states.push(e));
  try {
    await rt.whenState('connected');
    const got = [];
    const ch = rt.channels.get('news');
    await ch.subscribe((m) => got.push(m.data));
    await ch.publish('n', 1);
    await until(() => got.length === 1, 'the first message');

    await srv.kill();
    await rt.whenState('suspended');
    const retries = states.filter((e) => e.current === 'disconnected').map((e) => e.retryIn);
    assert.deepEqual(retries.slice(0, 4), [20, 40, 80, 160], 'backoff while the server is down');
    assert.ok(retries.every((r, i) => i < 4 || r === 160), `capped at maxRetry: ${retries}`);
    await assert.rejects(ch.publish('n', 'while suspended'), /suspended/);

    // The server comes back; another client writes before this one is in.
    await srv.start();
    const other = new Realtime(srv.url, { key: KEY });
    await other.whenState('connected');
    await other.channels.get('news').publish('n', 2);
    other.close();
    await rt.whenState('connected');
    await until(() => got.length === 2, 'the message written while away');
    await ch.publish('n', 3);
    await until(() => got.length === 3, 'a live message');
    assert.deepEqual(got, [1, 2, 3]);
    const seen = [...new Set(states.map((e) => e.current))];
    assert.deepEqual(seen, ['connecting', 'connected', 'disconnected', 'suspended']);
    assert.equal(states.at(-1).current, 'connected');
  } finally {
    rt.close();
    await srv.stop();
  }
  assert.equal(rt.state, 'closed');
  await assert.rejects(rt.channels.get('news').publish('n', 4));
});

test('401 is terminal: failed, no retry; 401 with an authCallback tries one fresh token', async () => {
  const srv = await Server.create();
  try {
    const states = [];
    const rt = new Realtime(srv.url, { key: 'wrong.k1', minRetry: 10 });
    rt.on('state', (e) => states.push(e.current));
    await assert.rejects(rt.whenState('connected'), (e) => e.code === 401);
    await new Promise((r) => setTimeout(r, 100)); // no retry may follow: nothing to poll for
    assert.deepEqual(states, ['connecting', 'failed']);
    rt.close();

    let calls = 0;
    const cb = new Realtime(srv.url, { authCallback: () => { calls++; return 'not-a-jwt'; }, minRetry: 10 });
    await assert.rejects(cb.whenState('connected'), (e) => e.code === 401);
    assert.equal(calls, 1, 'a token the callback just returned is not fetched again');
    cb.close();
  } finally {
    await srv.stop();
  }
});
