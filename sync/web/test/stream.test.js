import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Store, plainValue, cloneEntry, entriesEqual, parseStreamID, streamIDText, ReplyError } from '../recached-edge.js';

const NOW = 1_700_000_000_000;
const clock = () => NOW;
const split = (s) => s.split(' ').map((a) => (a === "''" ? '' : a));

/** A store after applying effects; every effect must be understood. */
function applied(effects) {
  const st = new Store(clock);
  for (const e of effects) assert.notEqual(st.apply(split(e)), null, `${e}: not understood`);
  return st;
}

test('stream ids parse and print as Redis writes them', () => {
  assert.equal(streamIDText(parseStreamID('5')), '5-0');
  assert.equal(streamIDText(parseStreamID('18446744073709551615-18446744073709551615')), '18446744073709551615-18446744073709551615');
  assert.equal(parseStreamID('18446744073709551616-0'), null);
  assert.equal(parseStreamID('1-x'), null);
  assert.ok(parseStreamID('1-10') > parseStreamID('1-9'));
});

test('Store.apply replays stream effects: entries, counters, groups, consumers, pending entries', () => {
  const st = applied([
    'DEL s',
    'XADD s 1-1 f a',
    'XADD s 2-0 f b g c',
    'XADD s MAXLEN = 3 3-0 f c',
    'XADD s 4-0 f d',
    'XGROUP CREATE s g 2-0 ENTRIESREAD 2',
    'XGROUP CREATECONSUMER s g bob',
    'XCLAIM s g alice 0 3-0 TIME 4000 RETRYCOUNT 2 FORCE JUSTID LASTID 3-0',
    'XCLAIM s g bob 0 4-0 TIME 4100 RETRYCOUNT 1 FORCE JUSTID',
    'XGROUP SETID s g 4-0 ENTRIESREAD 4',
    'XADD s MINID = 3-0 5-0 f e',
    'XDEL s 4-0 9-9',
    'XSETID s 7-0 ENTRIESADDED 10',
  ]);
  assert.deepEqual(st.xrange('s'), [['3-0', ['f', 'c']], ['5-0', ['f', 'e']]]);
  assert.deepEqual(st.xrevrange('s', '+', '-', 1), [['5-0', ['f', 'e']]]);
  assert.deepEqual(st.xrange('s', '(3-0', '5'), [['5-0', ['f', 'e']]]);
  assert.equal(st.xlen('s'), 2);
  assert.deepEqual(st.xinfo('s'), {
    length: 2, lastGeneratedId: '7-0', maxDeletedEntryId: '4-0', entriesAdded: 10,
    entries: [['3-0', ['f', 'c']], ['5-0', ['f', 'e']]],
    groups: [{ name: 'g', lastDeliveredId: '4-0', entriesRead: 4, consumers: ['alice', 'bob'],
      pending: [['3-0', 'alice', 4000, 2], ['4-0', 'bob', 4100, 1]] }],
  });
  assert.deepEqual(plainValue(st.raw('s')), st.xinfo('s'));
  // An XCLAIM of an entry that is gone drops it; a deleted consumer takes
  // its pending entries along; COPY is deep.
  for (const e of ['XCLAIM s g carol 0 4-0 TIME 4200 RETRYCOUNT 3 FORCE JUSTID', 'XGROUP DELCONSUMER s g alice', 'COPY s c', 'XACK c g 3-0']) {
    assert.notEqual(st.apply(split(e)), null, e);
  }
  assert.deepEqual(st.xinfo('c').groups[0].consumers, ['bob']);
  assert.deepEqual(st.xinfo('c').groups[0].pending, []);
  const copy = cloneEntry(st.raw('s'));
  assert.ok(entriesEqual(copy, st.raw('s')));
  st.apply(split('XGROUP DESTROY s g'));
  assert.deepEqual(st.xinfo('s').groups, []);
  assert.ok(!entriesEqual(copy, st.raw('s')));
  assert.equal(copy.value.groups.size, 1);
  // Effects that do not fit are not understood and change nothing.
  for (const e of ['XADD s 1-0 f x', 'XGROUP SETID s nosuch 0-0', 'XSETID nosuch 1-0', 'XADD s * f v', 'XCLAIM s nosuch a 0 1-0']) {
    assert.equal(st.apply(split(e)), null, e);
  }
  assert.equal(st.xlen('s'), 2);
  // XTRIM and XADD NOMKSTREAM of a missing key create nothing.
  assert.deepEqual(st.apply(split('XTRIM none MAXLEN = 0')), []);
  assert.deepEqual(st.apply(split('XADD none NOMKSTREAM 1-0 f v')), []);
  assert.equal(st.raw('none'), undefined);
  // Reads of another type are WRONGTYPE, as on the server.
  st.apply(split('SET str v'));
  assert.throws(() => st.xrange('str'), ReplyError);
  assert.throws(() => st.xrange('s', 'bad'), ReplyError);
});

test('Store applies the hydration pushes of a stream (qstate marker, placeholder for a deleted pending entry)', () => {
  const st = new Store(clock);
  assert.ok(st.setState('y:x', { type: '+', value: 'stream' }, false));
  assert.deepEqual(plainValue(st.raw('y:x')), { type: 'stream' });
  assert.deepEqual(st.xrange('y:x'), []);
  // The pushes TestStreamQSubHydration (server/ws) checks the server sends.
  for (const e of [
    'DEL y:x',
    "XADD y:x 1-1 '' ''",
    'XADD y:x 2-1 a b',
    'XADD y:x 3-1 f w',
    'XGROUP CREATE y:x g 2-1 ENTRIESREAD 2',
    'XGROUP CREATECONSUMER y:x g alice',
    'XGROUP CREATECONSUMER y:x g bob',
    'XGROUP CREATECONSUMER y:x g carol',
    'XCLAIM y:x g alice 0 1-1 TIME 1700000000001 RETRYCOUNT 1 FORCE JUSTID',
    'XCLAIM y:x g bob 0 2-1 TIME 1700000000000 RETRYCOUNT 3 FORCE JUSTID',
    'XGROUP CREATE y:x h 3-1 ENTRIESREAD -1',
    'XTRIM y:x MINID = 2-1',
    'XSETID y:x 3-1 ENTRIESADDED 3 MAXDELETEDID 1-1',
    'PEXPIREAT y:x 99999999999999',
    'DEL y:empty',
    'XADD y:empty MAXLEN = 0 0-1 x x',
    'XGROUP CREATE y:empty g 0-0 ENTRIESREAD -1',
    'XSETID y:empty 0-0 ENTRIESADDED 0',
  ]) {
    assert.notEqual(st.apply(split(e)), null, e);
  }
  assert.deepEqual(st.xinfo('y:x'), {
    length: 2, lastGeneratedId: '3-1', maxDeletedEntryId: '1-1', entriesAdded: 3,
    entries: [['2-1', ['a', 'b']], ['3-1', ['f', 'w']]],
    groups: [
      { name: 'g', lastDeliveredId: '2-1', entriesRead: 2, consumers: ['alice', 'bob', 'carol'],
        pending: [['1-1', 'alice', 1700000000001, 1], ['2-1', 'bob', 1700000000000, 3]] },
      { name: 'h', lastDeliveredId: '3-1', entriesRead: -1, consumers: [], pending: [] },
    ],
  });
  assert.equal(st.raw('y:x').expireAt, 99999999999999);
  assert.deepEqual(st.xinfo('y:empty'), {
    length: 0, lastGeneratedId: '0-0', maxDeletedEntryId: '0-0', entriesAdded: 0, entries: [],
    groups: [{ name: 'g', lastDeliveredId: '0-0', entriesRead: -1, consumers: [], pending: [] }],
  });
  // A delivery (XREADGROUP's effects) and a rename keep the replica exact.
  for (const e of [
    'XGROUP CREATECONSUMER y:x h dave',
    'XADD y:x 4-0 n 1',
    'XCLAIM y:x h dave 0 4-0 TIME 1700000000100 RETRYCOUNT 1 FORCE JUSTID LASTID 4-0',
    'XGROUP SETID y:x h 4-0 ENTRIESREAD 4',
    'RENAME y:x y:z',
  ]) {
    assert.notEqual(st.apply(split(e)), null, e);
  }
  const h = st.xinfo('y:z').groups[1];
  assert.deepEqual(h, { name: 'h', lastDeliveredId: '4-0', entriesRead: 4, consumers: ['dave'], pending: [['4-0', 'dave', 1700000000100, 1]] });
});

test('effectsOf: a client\'s own XADD takes the id the server chose; XDEL and XACK are their own effect', async () => {
  const { effectsOf } = await import('../recached-edge.js');
  const st = new Store(clock);
  const bulk = (v) => ({ type: '$', value: v });
  const int = (n) => ({ type: ':', value: n });
  assert.deepEqual(effectsOf(st, ['XADD', 's', 'MAXLEN', '=', '2', '*', 'f', 'v'], bulk('5-0')), [['XADD', 's', 'MAXLEN', '=', '2', '5-0', 'f', 'v']]);
  assert.deepEqual(effectsOf(st, ['XADD', 's', 'NOMKSTREAM', '*', 'f', 'v'], { type: '$', value: null }), []);
  assert.equal(effectsOf(st, ['XADD', 's', 'MAXLEN', '~', '2', '*', 'f', 'v'], bulk('5-0')), null);
  assert.equal(effectsOf(st, ['XADD', 's', '*', 'f', 'v']), null);
  assert.deepEqual(effectsOf(st, ['XDEL', 's', '1-0'], int(1)), [['XDEL', 's', '1-0']]);
  assert.deepEqual(effectsOf(st, ['XACK', 's', 'g', '1-0'], int(0)), []);
  for (const [e] of [effectsOf(st, ['XADD', 's', '*', 'f', 'v'], bulk('5-0'))]) assert.deepEqual(st.apply(e), ['s']);
  assert.deepEqual(st.xrange('s'), [['5-0', ['f', 'v']]]);
});
