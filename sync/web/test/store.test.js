import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Store, effectsOf, keysOf, parseFrame, plainValue, cloneEntry, entriesEqual } from '../recached-edge.js';

const NOW = 1_700_000_000_000;
const clock = () => NOW;

/** A store after applying effects, as plain values by key. */
function run(effects) {
  const st = new Store(clock);
  const changed = [];
  for (const e of effects) changed.push(st.apply(e));
  const out = {};
  for (const k of st.match('*')) out[k] = plainValue(st.raw(k));
  return { st, out, changed };
}

test('Store.apply reproduces the server state from mutation pushes', () => {
  const cases = [
    { name: 'set', effects: [['SET', 'k', 'v']], want: { k: 'v' } },
    { name: 'set keepttl keeps expiry', effects: [['SET', 'k', 'a', 'PXAT', String(NOW + 5000)], ['SET', 'k', '2', 'KEEPTTL']], want: { k: '2' }, ttl: { k: NOW + 5000 } },
    { name: 'set without keepttl clears expiry', effects: [['SET', 'k', 'a', 'PXAT', String(NOW + 5000)], ['SET', 'k', 'b']], want: { k: 'b' }, ttl: { k: 0 } },
    { name: 'set pxat in the past', effects: [['SET', 'k', 'a', 'PXAT', String(NOW - 1)]], want: {} },
    { name: 'del several', effects: [['SET', 'a', '1'], ['SET', 'b', '2'], ['DEL', 'a', 'b', 'c']], want: {} },
    { name: 'pexpireat past deletes', effects: [['SET', 'k', 'v'], ['PEXPIREAT', 'k', String(NOW)]], want: {} },
    { name: 'persist', effects: [['SET', 'k', 'v', 'PXAT', String(NOW + 10)], ['PERSIST', 'k']], want: { k: 'v' }, ttl: { k: 0 } },
    { name: 'hset hdel', effects: [['HSET', 'h', 'a', '1', 'b', '2'], ['HDEL', 'h', 'a']], want: { h: { b: '2' } } },
    { name: 'hdel empties', effects: [['HSET', 'h', 'a', '1'], ['HDEL', 'h', 'a']], want: {} },
    { name: 'lists', effects: [['RPUSH', 'l', 'a', 'b'], ['LPUSH', 'l', 'x', 'y'], ['LSET', 'l', '-1', 'B']], want: { l: ['y', 'x', 'a', 'B'] } },
    { name: 'lpop count', effects: [['RPUSH', 'l', 'a', 'b', 'c'], ['LPOP', 'l', '2']], want: { l: ['c'] } },
    { name: 'rpop empties', effects: [['RPUSH', 'l', 'a'], ['RPOP', 'l']], want: {} },
    { name: 'ltrim', effects: [['RPUSH', 'l', 'a', 'b', 'c', 'd'], ['LTRIM', 'l', '1', '-2']], want: { l: ['b', 'c'] } },
    { name: 'lrem', effects: [['RPUSH', 'l', 'a', 'b', 'a', 'a'], ['LREM', 'l', '-2', 'a']], want: { l: ['a', 'b'] } },
    { name: 'linsert', effects: [['RPUSH', 'l', 'a', 'c'], ['LINSERT', 'l', 'BEFORE', 'c', 'b']], want: { l: ['a', 'b', 'c'] } },
    { name: 'lmove', effects: [['RPUSH', 's', 'a', 'b'], ['LMOVE', 's', 'd', 'RIGHT', 'LEFT']], want: { s: ['a'], d: ['b'] } },
    { name: 'sets', effects: [['SADD', 's', 'b', 'a', 'c'], ['SREM', 's', 'c']], want: { s: ['a', 'b'] } },
    { name: 'zsets', effects: [['ZADD', 'z', '2', 'b', '1', 'a', '-inf', 'c'], ['ZREM', 'z', 'x']], want: { z: [['c', -Infinity], ['a', 1], ['b', 2]] } },
    { name: 'rename', effects: [['SET', 'a', '1'], ['RENAME', 'a', 'b']], want: { b: '1' } },
    { name: 'copy', effects: [['HSET', 'a', 'f', '1'], ['COPY', 'a', 'b']], want: { a: { f: '1' }, b: { f: '1' } } },
    { name: 'type change wins', effects: [['SET', 'k', 'v'], ['HSET', 'k', 'f', '1']], want: { k: { f: '1' } } },
    { name: 'setbit', effects: [['SETBIT', 'b', '1', '1']], want: { b: '@' } },
    { name: 'flushdb', effects: [['SET', 'a', '1'], ['HSET', 'h', 'f', 'v'], ['FLUSHDB']], want: {} },
    { name: 'move out', effects: [['SET', 'a', '1'], ['MOVE', 'a', '3']], want: {} },
  ];
  for (const c of cases) {
    const { st, out, changed } = run(c.effects);
    assert.deepEqual(out, c.want, c.name);
    assert.ok(changed.every((x) => Array.isArray(x)), `${c.name}: every effect understood`);
    for (const [k, at] of Object.entries(c.ttl || {})) assert.equal(st.raw(k).expireAt, at, `${c.name}: expiry of ${k}`);
  }
});

test('Store.apply refuses effects it does not understand', () => {
  const st = new Store(clock);
  for (const e of [[], ['NOPE', 'k'], ['SET'], ['SET', 'k'], ['HSET', 'h', 'f'], ['ZADD', 'z', 'x', 'm'], ['SET', 'k', 'v', 'PX'], ['FLUSHDB', 'x']]) {
    assert.equal(st.apply(e), null, JSON.stringify(e));
  }
  assert.equal(st.keys.size, 0);
});

test('Store.setState applies qstate and keychange values', () => {
  const st = new Store(clock);
  assert.ok(st.setState('k', parseFrame('$1\r\nv\r\n')));
  assert.ok(!st.setState('k', parseFrame('$1\r\nv\r\n')), 'same value is no change');
  assert.ok(st.setState('h', parseFrame('+hash\r\n')));
  st.apply(['HSET', 'h', 'f', '1']);
  assert.ok(!st.setState('h', parseFrame('+hash\r\n')), 'marker of the same type keeps the content');
  assert.deepEqual(plainValue(st.raw('h')), { f: '1' });
  assert.ok(st.setState('j', parseFrame('+json\r\n')));
  assert.deepEqual(plainValue(st.raw('j')), { type: 'json' });
  assert.ok(st.setState('k', parseFrame('$-1\r\n')));
  assert.equal(st.raw('k'), undefined);
  assert.deepEqual(st.removeMatching('*', new Set(['h'])), ['j']);
});

test('effectsOf predicts writes from local state', () => {
  const st = new Store(clock);
  st.apply(['SET', 'n', '41']);
  st.apply(['HSET', 'h', 'c', '5']);
  st.apply(['SADD', 's', 'm']);
  st.apply(['ZADD', 'z', '1', 'a']);
  const cases = [
    [['INCR', 'n'], [['SET', 'n', '42', 'KEEPTTL']]],
    [['INCR', 'fresh'], [['SET', 'fresh', '1', 'KEEPTTL']]],
    [['DECRBY', 'n', '1'], [['SET', 'n', '40', 'KEEPTTL']]],
    [['INCRBY', 'n', '9223372036854775807'], null],
    [['INCR', 'h'], null],
    [['APPEND', 'n', 'x'], [['SET', 'n', '41x', 'KEEPTTL']]],
    [['SET', 'k', 'v', 'EX', '10'], [['SET', 'k', 'v', 'PXAT', String(NOW + 10000)]]],
    [['SET', 'n', 'v', 'NX'], []],
    [['SET', 'new', 'v', 'XX'], []],
    [['SETNX', 'n', 'x'], []],
    [['MSET', 'a', '1', 'b', '2'], [['SET', 'a', '1'], ['SET', 'b', '2']]],
    [['HSET', 'h', 'a', '1'], [['HSET', 'h', 'a', '1']]],
    [['HINCRBY', 'h', 'c', '2'], [['HSET', 'h', 'c', '7']]],
    [['HSETNX', 'h', 'c', '9'], []],
    [['SADD', 'h', 'x'], null],
    [['SPOP', 's'], null],
    [['SMOVE', 's', 't', 'm'], [['SREM', 's', 'm'], ['SADD', 't', 'm']]],
    [['ZINCRBY', 'z', '2', 'a'], [['ZADD', 'z', '3', 'a']]],
    [['ZADD', 'z', 'NX', '5', 'a', '6', 'b'], [['ZADD', 'z', '6', 'b']]],
    [['ZADD', 'z', 'GT', '0', 'a'], []],
    [['EXPIRE', 'n', '10'], [['PEXPIREAT', 'n', String(NOW + 10000)]]],
    [['EXPIRE', 'n', '-1'], [['DEL', 'n']]],
    [['EXPIRE', 'missing', '10'], []],
    [['EXPIRE', 'n', '10', 'XX'], []],
    [['DEL', 'a', 'b'], [['DEL', 'a', 'b']]],
    [['RENAMENX', 'n', 'h'], []],
    [['UNKNOWNCMD', 'k'], null],
  ];
  for (const [args, want] of cases) assert.deepEqual(effectsOf(st, args), want, args.join(' '));
});

test('effectsOf derives effects from the server reply', () => {
  const st = new Store(clock);
  st.apply(['SET', 'n', '5']);
  st.apply(['RPUSH', 'l', 'a', 'b', 'c']);
  const cases = [
    [['INCR', 'n'], ':9\r\n', [['SET', 'n', '9', 'KEEPTTL']]],
    [['INCRBYFLOAT', 'n', '0.5'], '$3\r\n5.5\r\n', [['SET', 'n', '5.5', 'KEEPTTL']]],
    [['HINCRBY', 'h', 'f', '1'], ':3\r\n', [['HSET', 'h', 'f', '3']]],
    [['ZINCRBY', 'z', '1', 'm'], '$1\r\n4\r\n', [['ZADD', 'z', '4', 'm']]],
    [['ZADD', 'z', 'INCR', '1', 'm'], '$-1\r\n', []],
    [['SPOP', 's', '2'], '*2\r\n$1\r\nx\r\n$1\r\ny\r\n', [['SREM', 's', 'x', 'y']]],
    [['SPOP', 's'], '$-1\r\n', []],
    [['SETNX', 'k', 'v'], ':0\r\n', []],
    [['SETNX', 'k', 'v'], ':1\r\n', [['SET', 'k', 'v']]],
    [['SET', 'k', 'v', 'NX'], '$-1\r\n', []],
    [['SET', 'k', 'v', 'NX'], '+OK\r\n', [['SET', 'k', 'v']]],
    [['LPOP', 'l', '2'], '*2\r\n$1\r\na\r\n$1\r\nb\r\n', [['LPOP', 'l', '2']]],
    [['LPOP', 'l'], '$-1\r\n', []],
    [['EXPIRE', 'n', '10'], ':0\r\n', []],
    [['RENAMENX', 'n', 'm'], ':1\r\n', [['RENAME', 'n', 'm']]],
    [['MSETNX', 'a', '1'], ':0\r\n', []],
  ];
  for (const [args, reply, want] of cases) assert.deepEqual(effectsOf(st, args, parseFrame(reply)), want, args.join(' '));
});

test('keysOf names the keys a write touches', () => {
  assert.deepEqual(keysOf(['SET', 'k', 'v']), ['k']);
  assert.deepEqual(keysOf(['DEL', 'a', 'b']), ['a', 'b']);
  assert.deepEqual(keysOf(['MSET', 'a', '1', 'b', '2']), ['a', 'b']);
  assert.deepEqual(keysOf(['RENAME', 'a', 'b']), ['a', 'b']);
  assert.deepEqual(keysOf(['LMOVE', 'a', 'b', 'LEFT', 'RIGHT']), ['a', 'b']);
  assert.deepEqual(keysOf(['PING']), []);
  assert.deepEqual(keysOf(['BITOP', 'AND', 'd', 'a', 'b']), ['d', 'a', 'b']);
  assert.deepEqual(keysOf(['ZUNIONSTORE', 'd', '2', 'a', 'b']), ['d']); // movable keys: the first argument
  assert.deepEqual(keysOf(['NOSUCH', 'x']), ['x']);
});

test('cloneEntry copies deeply and entriesEqual compares values', () => {
  const st = new Store(clock);
  st.apply(['HSET', 'h', 'a', '1']);
  const c = cloneEntry(st.raw('h'));
  assert.ok(entriesEqual(c, st.raw('h')));
  st.apply(['HSET', 'h', 'a', '2']);
  assert.ok(!entriesEqual(c, st.raw('h')));
  assert.equal(c.value.get('a'), '1');
  assert.ok(entriesEqual(undefined, undefined));
  assert.ok(!entriesEqual(undefined, c));
});
