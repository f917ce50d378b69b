// Client behaviour against a scripted peer: the test plays the server, reads
// the exact frames the client sends and answers with exact frames.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, wireId, routeOf, ReplyError, DroppedError, ConnectionLostError, MAX_OUTBOX } from '../recached-edge.js';
import { FakeIndexedDB, FakeLocks, ScriptedNetwork, until, cmd, bulk } from '../testdata/fakes.js';

/** A client on a fresh scripted network, with the browser storage doubles. */
function setup(options = {}, env = {}) {
  const net = env.net || new ScriptedNetwork();
  const indexedDB = env.indexedDB || new FakeIndexedDB();
  const locks = env.locks === undefined ? new FakeLocks() : env.locks;
  const states = [];
  const client = connect('ws://server.test/', {
    WebSocket: net.WebSocket, indexedDB, locks, minBackoff: 1, maxBackoff: 8, random: () => 0, ...options,
  });
  client.on('state', (e) => states.push(e));
  const errors = [];
  client.on('error', (e) => errors.push(e));
  return { net, indexedDB, locks, client, states, errors };
}

/** Answers the PING that stands in for an empty session establishment. */
async function pong(s) {
  assert.deepEqual(await s.next(1), [cmd('PING')]);
  s.push('+PONG\r\n');
}

const dedup = (c, counter, epoch, ...args) => cmd('DEDUP', c.clientId, wireId(epoch, counter), ...args);

test('session establishment: AUTH, SYNC, QSUB, KWATCH, SUBSCRIBE, then the outbox', async () => {
  const { net, client, states } = setup({ password: 'pw', token: 'dG9rZW4.sig' });
  const seen = [];
  client.query('q:*', (k, v) => seen.push([k, v]));
  client.watch('w:1', () => undefined);
  client.subscribe('news', () => undefined);
  const w = client.set('q:a', 'x');
  const s = await net.socket(0);
  assert.deepEqual(await s.next(5), [
    cmd('AUTH', 'pw'),
    cmd('SYNC', 'TOKEN', 'dG9rZW4.sig'),
    cmd('QSUB', 'q:*'),
    cmd('KWATCH', 'w:1'),
    cmd('SUBSCRIBE', 'news'),
  ]);
  assert.equal(client.epoch, 1);
  // Nothing more until the setup is answered.
  s.push('+OK\r\n');
  s.push('+OK\r\n');
  s.push('*6\r\n$6\r\nqstate\r\n$3\r\nq:*\r\n$3\r\nq:b\r\n$1\r\n1\r\n$3\r\nq:h\r\n+hash\r\n');
  s.push('>2\r\n$3\r\nDEL\r\n$3\r\nq:h\r\n');
  s.push('>4\r\n$4\r\nHSET\r\n$3\r\nq:h\r\n$1\r\nf\r\n$1\r\nv\r\n');
  s.push(':1\r\n');
  assert.equal(s.sent.length, 5);
  s.push(':1\r\n');
  assert.deepEqual(await s.next(1), [dedup(client, 1, 1, 'SET', 'q:a', 'x')]);
  assert.equal(states.at(-1).state, 'open');
  s.push('+OK\r\n');
  assert.equal(await w, 'OK');
  assert.equal(client.get('q:b'), '1');
  assert.deepEqual(client.hgetall('q:h'), { f: 'v' });
  assert.equal(client.get('q:a'), 'x');
  assert.equal(client.outboxSize, 0);
  assert.ok(seen.some(([k, v]) => k === 'q:h' && v && v.f === 'v'));
  await client.close();
});

test('replies correlate FIFO while pushes interleave anywhere', async () => {
  const { net, client } = setup({ patterns: ['k:*'] });
  const msgs = [];
  client.subscribe('ch', (m, ch) => msgs.push([ch, m]));
  const keychanges = [];
  client.watch('k:w', (k, v) => keychanges.push(v));
  const s = await net.socket(0);
  await s.next(3);
  s.push('+OK\r\n');
  s.push(':1\r\n');
  s.push(':1\r\n');
  await until(() => client.state === 'open');
  const a = client.incr('k:n');
  const b = client.command('GET', 'k:other');
  const c = client.hset('k:h', 'f', 'v');
  const frames = await s.next(3);
  assert.deepEqual(frames, [dedup(client, 1, 1, 'INCR', 'k:n'), cmd('GET', 'k:other'), dedup(client, 2, 1, 'HSET', 'k:h', 'f', 'v')]);
  s.push('>3\r\n$3\r\nSET\r\n$5\r\nk:new\r\n$2\r\nhi\r\n');
  s.push(':1\r\n');
  s.push('>3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$5\r\nhello\r\n');
  s.push('*3\r\n$9\r\nkeychange\r\n$3\r\nk:w\r\n$3\r\nnew\r\n');
  s.push(bulk('remote'));
  s.push('*2\r\n$8\r\nnewthing\r\n$1\r\nx\r\n'.replace('*2', '>2')); // an unknown push: a mutation the store ignores
  s.push(':1\r\n');
  assert.equal(await a, 1);
  assert.equal(await b, 'remote');
  assert.equal(await c, 1);
  assert.deepEqual(msgs, [['ch', 'hello']]);
  assert.deepEqual(keychanges, ['new']);
  assert.equal(client.get('k:new'), 'hi');
  assert.equal(client.get('k:n'), '1');
  assert.equal(client.stats.unknownEffects, 1);
  // A tagged array nobody asked for (no command outstanding) is ignored.
  s.push('*2\r\n$8\r\nnewthing\r\n$1\r\nx\r\n');
  assert.equal(client.stats.ignored, 1);
  const d = client.del('k:new');
  await s.next(1);
  s.push(':1\r\n');
  assert.equal(await d, 1);
  await client.close();
});

test('offline writes apply at once, rebase on the server state, and replay exactly in order', async () => {
  const { net, client } = setup({ patterns: ['n'] });
  const values = [];
  client.query('n', (k, v) => values.push(v));
  let s = await net.socket(0);
  await s.next(2);
  s.push('+OK\r\n');
  s.push('*4\r\n$6\r\nqstate\r\n$1\r\nn\r\n$1\r\nn\r\n$2\r\n10\r\n');
  await until(() => client.state === 'open');
  assert.equal(client.get('n'), '10');
  client.goOffline();
  assert.equal(client.state, 'offline');
  const writes = [client.incr('n'), client.incr('n'), client.incr('n')];
  assert.equal(client.get('n'), '13');
  assert.equal(client.outboxSize, 3);
  assert.ok(client.pending('n'));
  client.goOnline();
  s = await net.socket(1);
  assert.deepEqual(await s.next(2), [cmd('SYNC', 'n'), cmd('QSUB', 'n')]);
  s.push('+OK\r\n');
  // Someone else added 2 meanwhile: the view is the server's 12 plus ours.
  s.push('*4\r\n$6\r\nqstate\r\n$1\r\nn\r\n$1\r\nn\r\n$2\r\n12\r\n');
  assert.equal(client.get('n'), '15');
  assert.deepEqual(await s.next(3), [1, 2, 3].map((i) => dedup(client, i, 1, 'INCR', 'n')));
  s.push(':13\r\n');
  s.push(':14\r\n');
  assert.equal(client.get('n'), '15');
  s.push(':15\r\n');
  assert.deepEqual(await Promise.all(writes), [13, 14, 15]);
  assert.equal(client.get('n'), '15');
  assert.equal(client.outboxSize, 0);
  assert.ok(!client.pending('n'));
  assert.equal(client.store.raw('n').value, '15');
  assert.equal(values.at(-1), '15');
  await client.close();
});

test('a write whose reply was lost is replayed with the same wire id and +DUP retires it', async () => {
  const { net, client } = setup();
  let s = await net.socket(0);
  await pong(s);
  await until(() => client.state === 'open');
  const w = client.set('k', 'v');
  assert.deepEqual(await s.next(1), [dedup(client, 1, 1, 'SET', 'k', 'v')]);
  s.drop();
  s = await net.socket(1);
  await pong(s);
  assert.deepEqual(await s.next(1), [dedup(client, 1, 1, 'SET', 'k', 'v')]);
  s.push('+DUP\r\n');
  assert.equal(await w, 'DUP');
  assert.equal(client.stats.dups, 1);
  assert.equal(client.outboxSize, 0);
  await client.close();
});

test('a refused write rejects and its optimistic effect goes away', async () => {
  const { net, client } = setup({ patterns: ['a:*'] });
  const seen = [];
  client.query('a:*', (k, v) => seen.push([k, v]));
  const s = await net.socket(0);
  await s.next(2);
  s.push('+OK\r\n');
  s.push('*2\r\n$6\r\nqstate\r\n$3\r\na:*\r\n');
  await until(() => client.state === 'open');
  const w = client.set('a:1', 'x');
  assert.equal(client.get('a:1'), 'x');
  await s.next(1);
  s.push('-NOPERM this user has no permissions to access one of the keys used as arguments\r\n');
  await assert.rejects(w, (err) => err instanceof ReplyError && err.code === 'NOPERM');
  assert.equal(client.get('a:1'), null);
  assert.deepEqual(seen, [['a:1', 'x'], ['a:1', null]]);
  await client.close();
});

test('plain commands: queued while offline, lost with the connection', async () => {
  const { net, client } = setup();
  let s = await net.socket(0);
  await pong(s);
  await until(() => client.state === 'open');
  const lost = client.command('GET', 'x');
  await s.next(1);
  s.drop();
  await assert.rejects(lost, ConnectionLostError);
  client.goOffline();
  const queued = client.publish('ch', 'm');
  client.goOnline();
  s = await net.socket(1);
  await pong(s);
  assert.deepEqual(await s.next(1), [cmd('PUBLISH', 'ch', 'm')]);
  s.push(':2\r\n');
  assert.equal(await queued, 2);
  await assert.rejects(client.command('SUBSCRIBE', 'x'), /managed by the client/);
  await client.close();
});

test('the outbox keeps at most 10 000 writes: the oldest is dropped and reported', async () => {
  const { net, client } = setup();
  await client.ready;
  client.goOffline();
  const drops = [];
  client.on('drop', (d) => drops.push(d));
  const first = client.incr('n');
  const rest = [];
  for (let i = 1; i < MAX_OUTBOX; i++) rest.push(client.incr('n'));
  assert.equal(client.outboxSize, MAX_OUTBOX);
  assert.equal(client.get('n'), String(MAX_OUTBOX));
  const last = client.incr('n');
  await assert.rejects(first, DroppedError);
  assert.equal(client.outboxSize, MAX_OUTBOX);
  assert.deepEqual(drops, [{ id: wireId(1, 1), clientId: client.clientId, args: ['INCR', 'n'] }]);
  assert.equal(client.get('n'), String(MAX_OUTBOX));
  await client.persisted();
  // The replay of the 10 000 writes, acknowledged in order, takes linear time.
  const n = net.sockets.length;
  client.goOnline();
  const s = await net.socket(n);
  await pong(s);
  const frames = await s.next(MAX_OUTBOX);
  assert.equal(frames[0], dedup(client, 2, 1, 'INCR', 'n'));
  assert.equal(frames.at(-1), dedup(client, MAX_OUTBOX + 1, 1, 'INCR', 'n'));
  for (let i = 1; i <= MAX_OUTBOX; i++) s.push(`:${i}\r\n`);
  await Promise.all([...rest, last]);
  assert.equal(client.outboxSize, 0);
  // n is not synced: it leaves the local store with its last pending write.
  assert.equal(client.get('n'), null);
  await client.close();
});

test('a reloaded page replays the saved outbox under a new epoch, oldest first', async () => {
  const indexedDB = new FakeIndexedDB();
  const locks = new FakeLocks();
  const first = setup({ name: 'app' }, { indexedDB, locks });
  await first.client.ready;
  first.client.goOffline();
  // The page goes away before their replies: their promises end with
  // ClosedError, the writes stay saved.
  const ignore = () => undefined;
  first.client.incr('n').catch(ignore);
  first.client.rpush('log', 'a').catch(ignore);
  first.client.incr('n').catch(ignore);
  await first.client.persisted();
  const id = first.client.clientId;
  await first.client.close(); // the page unloads

  const second = setup({ name: 'app' }, { indexedDB, locks });
  const { client, net } = second;
  await client.ready;
  assert.equal(client.clientId, id);
  assert.equal(client.epoch, 2);
  assert.equal(client.slot, 0);
  assert.equal(client.outboxSize, 3);
  assert.equal(client.get('n'), '2');
  const later = client.incr('n');
  const s = await net.socket(0);
  await pong(s);
  assert.deepEqual(await s.next(4), [
    dedup(client, 1, 1, 'INCR', 'n'),
    dedup(client, 2, 1, 'RPUSH', 'log', 'a'),
    dedup(client, 3, 1, 'INCR', 'n'),
    dedup(client, 1, 2, 'INCR', 'n'),
  ]);
  for (const r of [':1\r\n', ':1\r\n', '+DUP\r\n', ':3\r\n']) s.push(r);
  assert.equal(await later, 3);
  await client.persisted();
  await until(() => client.outboxSize === 0);
  await client.close();
  const third = setup({ name: 'app' }, { indexedDB, locks });
  await third.client.ready;
  assert.equal(third.client.outboxSize, 0);
  assert.equal(third.client.epoch, 3);
  await third.client.close();
});

test('two tabs take different identity slots; a closed tab\'s outbox is adopted', async () => {
  const indexedDB = new FakeIndexedDB();
  const locks = new FakeLocks();
  const a = setup({ name: 'app' }, { indexedDB, locks });
  await a.client.ready;
  a.client.goOffline();
  a.client.set('x', '1').catch(() => undefined);
  a.client.set('x', '2').catch(() => undefined);
  await a.client.persisted();

  const b = setup({ name: 'app' }, { indexedDB, locks });
  await b.client.ready;
  assert.equal(a.client.slot, 0);
  assert.equal(b.client.slot, 1);
  assert.notEqual(a.client.clientId, b.client.clientId);
  const s = await b.net.socket(0);
  await pong(s);
  await until(() => b.client.state === 'open');
  const own = b.client.set('y', '1');
  assert.deepEqual(await s.next(1), [dedup(b.client, 1, 1, 'SET', 'y', '1')]);
  s.push('+OK\r\n');
  await own;

  // Tab A goes away with two unacknowledged writes: B replays them under
  // A's client id and wire ids, then lets A's slot go.
  const aid = a.client.clientId;
  await a.client.close();
  assert.deepEqual(await s.next(2), [
    cmd('DEDUP', aid, wireId(1, 1), 'SET', 'x', '1'),
    cmd('DEDUP', aid, wireId(1, 2), 'SET', 'x', '2'),
  ]);
  assert.equal(b.client.outboxSize, 2);
  s.push('+OK\r\n');
  s.push('+OK\r\n');
  await until(() => b.client.outboxSize === 0);
  await until(() => !locks.held.has('recached-edge/app/slot/0'));
  await b.client.close();
});

test('a refused session closes with the server\'s reason until the token changes', async () => {
  const { net, client, states } = setup({ token: 'bad' });
  let s = await net.socket(0);
  assert.deepEqual(await s.next(1), [cmd('SYNC', 'TOKEN', 'bad')]);
  s.push('-NOPERM invalid token\r\n');
  await until(() => client.state === 'closed');
  assert.deepEqual(states.at(-1), { state: 'closed', reason: 'NOPERM invalid token', attempt: 0 });
  await new Promise((r) => setTimeout(r, 30));
  assert.equal(net.sockets.length, 1, 'no retry with the same credentials');
  client.setToken('good');
  s = await net.socket(1);
  assert.deepEqual(await s.next(1), [cmd('SYNC', 'TOKEN', 'good')]);
  s.push('+OK\r\n');
  await until(() => client.state === 'open');
  await client.close();
});

test('reconnection backs off exponentially with full jitter, bounded', async () => {
  const net = new ScriptedNetwork();
  net.up = false;
  const { client, states } = setup({ minBackoff: 2, maxBackoff: 16, random: () => 0.999 }, { net });
  await until(() => states.filter((e) => e.state === 'offline').length >= 6);
  const delays = states.filter((e) => e.state === 'offline').slice(0, 6).map((e) => e.retryIn);
  assert.deepEqual(delays, [2, 4, 8, 16, 16, 16]);
  assert.ok(states.filter((e) => e.state === 'offline').every((e) => /code 1006/.test(e.reason)));
  net.up = true;
  // The next socket to open: the newest, unless it failed already.
  const s = await net.socket(net.last.readyState === 3 ? net.sockets.length : net.sockets.length - 1);
  // A refusal that is not about credentials (maxclients) is retried.
  assert.deepEqual(await s.next(1), [cmd('PING')]);
  s.push('-ERR max number of clients reached\r\n');
  const s2 = await net.socket(net.sockets.indexOf(s) + 1);
  await pong(s2);
  await until(() => client.state === 'open');
  assert.equal(client.outboxSize, 0);
  await client.close();
});

test('closing a live query drops the keys nothing covers any more', async () => {
  const { net, client } = setup();
  const q = client.query('t:*', () => undefined);
  const s = await net.socket(0);
  await s.next(1);
  s.push('*4\r\n$6\r\nqstate\r\n$3\r\nt:*\r\n$3\r\nt:1\r\n$1\r\na\r\n');
  await q.ready;
  assert.deepEqual(client.keys(), ['t:1']);
  q.close();
  assert.deepEqual(await s.next(1), [cmd('QUNSUB', 't:*')]);
  // A keychange racing the QUNSUB is still one.
  s.push('*3\r\n$9\r\nkeychange\r\n$3\r\nt:1\r\n$1\r\nb\r\n');
  s.push(':1\r\n');
  assert.deepEqual(client.keys(), []);
  assert.equal(client.stats.keychanges, 1);
  await client.close();
});

test('a live query made while the session is being established is sent at once', async () => {
  const { net, client } = setup({ patterns: ['a:*'] });
  const s = await net.socket(0);
  assert.deepEqual(await s.next(1), [cmd('SYNC', 'a:*')]);
  const q = client.query('a:*', () => undefined);
  const w = client.watch('a:w', () => undefined);
  assert.deepEqual(await s.next(2), [cmd('QSUB', 'a:*'), cmd('KWATCH', 'a:w')]);
  s.push('+OK\r\n');
  s.push('*4\r\n$6\r\nqstate\r\n$3\r\na:*\r\n$3\r\na:1\r\n$1\r\nx\r\n');
  s.push(':1\r\n');
  await q.ready;
  await w.ready;
  assert.equal(client.get('a:1'), 'x');
  await until(() => client.state === 'open');
  await client.close();
});

test('ready settles with the server\'s first answer to each registration', async () => {
  const { net, client, errors } = setup({ token: 'dG9rZW4.sig' });
  const q = client.query('a:*', () => undefined);
  const w = client.watch('b:1', () => undefined);
  const sub = client.subscribe('a:news', () => undefined);
  const s = await net.socket(0);
  assert.deepEqual(await s.next(4), [cmd('SYNC', 'TOKEN', 'dG9rZW4.sig'), cmd('QSUB', 'a:*'), cmd('KWATCH', 'b:1'), cmd('SUBSCRIBE', 'a:news')]);
  s.push('+OK\r\n');
  s.push('*2\r\n$6\r\nqstate\r\n$3\r\na:*\r\n');
  s.push('-NOPERM this user has no permissions to access one of the keys used as arguments\r\n');
  s.push(':1\r\n');
  await q.ready;
  await assert.rejects(w.ready, (err) => err instanceof ReplyError && err.code === 'NOPERM');
  await sub.ready;
  assert.equal(errors.length, 1);
  await until(() => client.state === 'open');
  // Made once the session is open: sent at once, settled by its reply.
  const p = client.psubscribe('a:*', () => undefined);
  assert.deepEqual(await s.next(1), [cmd('PSUBSCRIBE', 'a:*')]);
  s.push(':2\r\n');
  await p.ready;
  await client.close();
});

test('binary frames: values that are not UTF-8 arrive as ArrayBuffers and never drop the connection', async () => {
  const { net, client, errors } = setup({ patterns: ['b:*'] });
  const s = await net.socket(0);
  assert.equal(s.binaryType, 'arraybuffer');
  assert.deepEqual(await s.next(1), [cmd('SYNC', 'b:*')]);
  s.push('+OK\r\n');
  await until(() => client.state === 'open');
  const frame = (...parts) => {
    const bytes = [];
    for (const p of parts) {
      if (typeof p === 'string') bytes.push(...Buffer.from(p, 'latin1'));
      else bytes.push(...p);
    }
    return new Uint8Array(bytes).buffer;
  };
  // A mutation push and a reply whose values hold bytes that are not UTF-8
  // (the server sends such frames as binary frames).
  s.push(frame('>3\r\n$3\r\nSET\r\n$3\r\nb:1\r\n$3\r\n', [0xff, 0x00, 0xfe], '\r\n'));
  await until(() => client.get('b:1') !== null);
  assert.equal(client.get('b:1'), '\ufffd\u0000\ufffd');
  const got = client.command('GET', 'b:2');
  assert.deepEqual(await s.next(1), [cmd('GET', 'b:2')]);
  s.push(frame('$4\r\nok', [0xe2, 0x82], '\r\n'));
  assert.equal(await got, 'ok\ufffd');
  // A valid multi-byte value in a binary frame decodes exactly.
  s.push(frame('>3\r\n$3\r\nSET\r\n$3\r\nb:3\r\n$2\r\n', [0xc3, 0xa9], '\r\n'));
  await until(() => client.get('b:3') === '\u00e9');
  assert.equal(client.state, 'open');
  assert.equal(net.sockets.length, 1);
  assert.deepEqual(errors, []);
  await client.close();
});

test('command() routes by the server\'s command list: writes through the outbox, the rest plainly', async () => {
  for (const [args, want] of [
    [['SET', 'k', 'v'], 'write'], [['incr', 'k'], 'write'], [['ZUNIONSTORE', 'd', '1', 'a'], 'write'],
    [['FLUSHDB'], 'write'], [['NOSUCHCOMMAND'], 'write'],
    [['GET', 'k'], 'plain'], [['TOUCH', 'k'], 'plain'], [['ZUNION', '2', 'a', 'b'], 'plain'],
    [['ZINTER', '2', 'a', 'b'], 'plain'], [['ZDIFF', '2', 'a', 'b'], 'plain'], [['ZINTERCARD', '2', 'a', 'b'], 'plain'],
    [['object', 'encoding', 'k'], 'plain'], [['PUBLISH', 'c', 'm'], 'plain'], [['MULTI'], 'plain'], [['PING'], 'plain'],
    [['SUBSCRIBE', 'c'], 'owned'], [['SYNC', 'k:*'], 'owned'], [['DEDUP', 'c', '1', 'SET', 'k', 'v'], 'owned'],
    [['select', '1'], 'owned'], [['QUIT'], 'owned'], [['HELLO', '3'], 'owned'],
  ]) {
    assert.equal(routeOf(args), want, args.join(' '));
  }
  const { net, client } = setup();
  const s = await net.socket(0);
  await pong(s);
  await until(() => client.state === 'open');
  const read = client.command('ZUNION', '2', 'a', 'b');
  const touch = client.command('TOUCH', 'a');
  const write = client.command('SADD', 'a', 'x');
  assert.deepEqual(await s.next(3), [cmd('ZUNION', '2', 'a', 'b'), cmd('TOUCH', 'a'), dedup(client, 1, 1, 'SADD', 'a', 'x')]);
  assert.equal(client.outboxSize, 1);
  s.push('*0\r\n');
  s.push(':0\r\n');
  s.push(':1\r\n');
  assert.deepEqual(await read, []);
  assert.equal(await touch, 0);
  assert.equal(await write, 1);
  await assert.rejects(client.command('select', '1'), /SELECT is managed by the client/);
  await client.close();
});
