// Following the primary: several bridge URLs, ROLE, -READONLY and WAIT,
// against a scripted peer that plays a primary and its replica.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, wireId } from '../recached-edge.js';
import { FakeIndexedDB, FakeLocks, ScriptedNetwork, until, cmd } from '../testdata/fakes.js';

const A = 'ws://a.test/';
const B = 'ws://b.test/';

const roleMaster = '*3\r\n$6\r\nmaster\r\n:0\r\n*0\r\n';
const roleReplica = '*5\r\n$5\r\nslave\r\n$9\r\n127.0.0.1\r\n:6379\r\n$9\r\nconnected\r\n:0\r\n';
const readOnly = "-READONLY You can't write against a read only replica.\r\n";

function setup(options = {}) {
  const net = new ScriptedNetwork();
  const states = [];
  const client = connect(A, {
    WebSocket: net.WebSocket, indexedDB: new FakeIndexedDB(), locks: new FakeLocks(), minBackoff: 1, maxBackoff: 8, random: () => 0,
    urls: [B], ...options,
  });
  client.on('state', (e) => states.push(e));
  return { net, client, states };
}

const dedup = (c, counter, ...args) => cmd('DEDUP', c.clientId, wireId(1, counter), ...args);

test('several URLs: ROLE on every connection, the session only on the primary', async () => {
  const { net, client, states } = setup({ patterns: ['k:*'] });
  const w = client.incr('k:n');
  let s = await net.socket(0);
  assert.equal(s.url, A);
  assert.deepEqual(await s.next(2), [cmd('ROLE'), cmd('SYNC', 'k:*')]);
  s.push(roleReplica);
  s.push('+OK\r\n');
  // A replica: closed, and the next address tried; the write was not sent.
  s = await net.socket(1);
  assert.equal(s.url, B);
  assert.equal(net.sockets[0].sent.length, 2);
  assert.deepEqual(await s.next(2), [cmd('ROLE'), cmd('SYNC', 'k:*')]);
  s.push(roleMaster);
  s.push('+OK\r\n');
  assert.deepEqual(await s.next(1), [dedup(client, 1, 'INCR', 'k:n')]);
  s.push(':1\r\n');
  assert.equal(await w, 1);
  assert.ok(states.some((e) => e.state === 'offline' && e.url === A && /slave, not the primary/.test(e.reason)));
  assert.deepEqual(states.filter((e) => e.state === 'open').map((e) => e.url), [B]);
  await client.close();
});

test('a write answered -READONLY moves to the next address and is replayed with its wire id', async () => {
  const { net, client } = setup();
  let s = await net.socket(0);
  assert.deepEqual(await s.next(1), [cmd('ROLE')]);
  s.push(roleMaster);
  await until(() => client.state === 'open');
  const w1 = client.incr('n');
  const w2 = client.incr('n');
  assert.deepEqual(await s.next(2), [dedup(client, 1, 'INCR', 'n'), dedup(client, 2, 'INCR', 'n')]);
  // Demoted meanwhile: both writes are refused, neither ran.
  s.push(readOnly);
  s.push(readOnly);
  s = await net.socket(1);
  assert.equal(s.url, B);
  assert.deepEqual(await s.next(1), [cmd('ROLE')]);
  s.push(roleMaster);
  assert.deepEqual(await s.next(2), [dedup(client, 1, 'INCR', 'n'), dedup(client, 2, 'INCR', 'n')]);
  s.push(':1\r\n');
  s.push(':2\r\n');
  assert.deepEqual(await Promise.all([w1, w2]), [1, 2]);
  await client.close();
});

test('replicaOK: the session stays on a replica until a write is refused', async () => {
  const { net, client } = setup({ replicaOK: true });
  let s = await net.socket(0);
  assert.deepEqual(await s.next(1), [cmd('ROLE')]);
  s.push(roleReplica);
  await until(() => client.state === 'open');
  assert.equal(client.url, A);
  const w = client.set('k', 'v');
  assert.deepEqual(await s.next(1), [dedup(client, 1, 'SET', 'k', 'v')]);
  s.push(readOnly);
  s = await net.socket(1);
  assert.deepEqual(await s.next(1), [cmd('ROLE')]);
  // From now on a replica is not enough.
  s.push(roleReplica);
  s = await net.socket(2);
  assert.equal(s.url, A);
  assert.deepEqual(await s.next(1), [cmd('ROLE')]);
  s.push(roleMaster);
  assert.deepEqual(await s.next(1), [dedup(client, 1, 'SET', 'k', 'v')]);
  s.push('+OK\r\n');
  assert.equal(await w, 'OK');
  await client.close();
});

test('waitReplicas: writes resolve once WAIT confirms them, and a failover before it replays them', async () => {
  const { net, client } = setup({ waitReplicas: 1, waitTimeout: 50, patterns: ['n'] });
  let s = await net.socket(0);
  assert.deepEqual(await s.next(2), [cmd('ROLE'), cmd('SYNC', 'n')]);
  s.push(roleMaster);
  s.push('+OK\r\n');
  await until(() => client.state === 'open');
  let settled = 0;
  const w1 = client.incr('n').then((v) => (settled++, v));
  const w2 = client.incr('n').then((v) => (settled++, v));
  assert.deepEqual(await s.next(3), [dedup(client, 1, 'INCR', 'n'), dedup(client, 2, 'INCR', 'n'), cmd('WAIT', '1', '50')]);
  s.push(':1\r\n');
  s.push(':2\r\n');
  // No replica acknowledged yet: the writes wait, and WAIT is asked again.
  s.push(':0\r\n');
  assert.deepEqual(await s.next(1), [cmd('WAIT', '1', '50')]);
  assert.equal(settled, 0);
  assert.equal(client.outboxSize, 2);
  // The primary dies before any replica acknowledged.
  s.drop();
  s = await net.socket(1);
  assert.equal(s.url, B);
  assert.deepEqual(await s.next(2), [cmd('ROLE'), cmd('SYNC', 'n')]);
  s.push(roleMaster);
  s.push('+OK\r\n');
  assert.deepEqual(await s.next(3), [dedup(client, 1, 'INCR', 'n'), dedup(client, 2, 'INCR', 'n'), cmd('WAIT', '1', '50')]);
  // The first had been replicated (+DUP: its first reply stands), the
  // second had not and runs now.
  s.push('+DUP\r\n');
  s.push(':2\r\n');
  assert.equal(settled, 0);
  s.push(':1\r\n');
  assert.deepEqual(await Promise.all([w1, w2]), [1, 2]);
  assert.equal(client.outboxSize, 0);
  assert.equal(client.get('n'), '2');
  await client.close();
});

test('a refused ROLE (token-scoped) leaves the role to -READONLY', async () => {
  const { net, client, states } = setup({ token: 'dG9rZW4.sig' });
  let s = await net.socket(0);
  assert.deepEqual(await s.next(2), [cmd('ROLE'), cmd('SYNC', 'TOKEN', 'dG9rZW4.sig')]);
  s.push("-NOPERM this user has no permissions to run the 'role' command\r\n");
  s.push('+OK\r\n');
  await until(() => client.state === 'open');
  const w = client.set('k', 'v');
  assert.deepEqual(await s.next(1), [dedup(client, 1, 'SET', 'k', 'v')]);
  s.push(readOnly);
  s = await net.socket(1);
  assert.equal(s.url, B);
  assert.deepEqual(await s.next(2), [cmd('ROLE'), cmd('SYNC', 'TOKEN', 'dG9rZW4.sig')]);
  s.push("-NOPERM this user has no permissions to run the 'role' command\r\n");
  s.push('+OK\r\n');
  assert.deepEqual(await s.next(1), [dedup(client, 1, 'SET', 'k', 'v')]);
  s.push('+OK\r\n');
  assert.equal(await w, 'OK');
  assert.deepEqual(states.filter((e) => e.state === 'open').map((e) => e.url), [A, B]);
  await client.close();
});
