import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  encodeCommand, parseFrame, toJS, utf8Length, classifyFrame, isQState, globMatch, wireId, splitWireId,
  ReplyError, ProtocolError,
} from '../recached-edge.js';

test('encodeCommand writes RESP arrays of bulk strings with UTF-8 byte lengths', () => {
  const cases = [
    [['PING'], '*1\r\n$4\r\nPING\r\n'],
    [['SET', 'k', 'v'], '*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n'],
    [['SET', 'k', ''], '*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n'],
    [['INCRBY', 'n', 42], '*3\r\n$6\r\nINCRBY\r\n$1\r\nn\r\n$2\r\n42\r\n'],
    [['INCRBY', 'n', -7n], '*3\r\n$6\r\nINCRBY\r\n$1\r\nn\r\n$2\r\n-7\r\n'],
    [['SET', 'b', true], '*3\r\n$3\r\nSET\r\n$1\r\nb\r\n$1\r\n1\r\n'],
    [['SET', 'é', '日本'], '*3\r\n$3\r\nSET\r\n$2\r\né\r\n$6\r\n日本\r\n'],
    [['SET', 'e', '😀'], '*3\r\n$3\r\nSET\r\n$1\r\ne\r\n$4\r\n😀\r\n'],
    [['SET', 'k', 'a\r\nb'], '*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$4\r\na\r\nb\r\n'],
    [['ZADD', 'z', Infinity, 'm'], '*4\r\n$4\r\nZADD\r\n$1\r\nz\r\n$3\r\ninf\r\n$1\r\nm\r\n'],
  ];
  for (const [args, want] of cases) assert.equal(encodeCommand(args), want, String(args));
  assert.throws(() => encodeCommand(['SET', 'k', null]), TypeError);
  assert.throws(() => encodeCommand(['SET', 'k', {}]), TypeError);
  assert.throws(() => encodeCommand(['SET', 'k', NaN]), TypeError);
});

test('utf8Length agrees with TextEncoder', () => {
  for (const s of ['', 'a', 'é', '€', '日本語', '😀x', '\ud800', 'a\udc00b', 'mixed é 😀 text']) {
    assert.equal(utf8Length(s), new TextEncoder().encode(s).length, JSON.stringify(s));
  }
});

test('parseFrame reads every RESP2 and RESP3 type', () => {
  const cases = [
    ['+OK\r\n', { type: '+', value: 'OK' }],
    ['-ERR no\r\n', { type: '-', value: 'ERR no' }],
    [':42\r\n', { type: ':', value: 42 }],
    [':-3\r\n', { type: ':', value: -3 }],
    [':9223372036854775807\r\n', { type: ':', value: 9223372036854775807n }],
    ['$3\r\nabc\r\n', { type: '$', value: 'abc' }],
    ['$0\r\n\r\n', { type: '$', value: '' }],
    ['$-1\r\n', { type: '$', value: null }],
    ['$4\r\na\r\nb\r\n', { type: '$', value: 'a\r\nb' }],
    ['$6\r\n日本\r\n', { type: '$', value: '日本' }],
    ['*-1\r\n', { type: '*', value: null }],
    ['*0\r\n', { type: '*', value: [] }],
    ['*2\r\n$1\r\na\r\n:1\r\n', { type: '*', value: [{ type: '$', value: 'a' }, { type: ':', value: 1 }] }],
    ['_\r\n', { type: '_', value: null }],
    [',1.5\r\n', { type: ',', value: 1.5 }],
    [',inf\r\n', { type: ',', value: Infinity }],
    [',-inf\r\n', { type: ',', value: -Infinity }],
    ['#t\r\n', { type: '#', value: true }],
    ['#f\r\n', { type: '#', value: false }],
    ['(12345678901234567890\r\n', { type: '(', value: 12345678901234567890n }],
    ['!5\r\nERR x\r\n', { type: '!', value: 'ERR x' }],
    ['=8\r\ntxt:abcd\r\n', { type: '=', value: 'abcd' }],
    ['%1\r\n+a\r\n:1\r\n', { type: '%', value: [{ type: '+', value: 'a' }, { type: ':', value: 1 }] }],
    ['~1\r\n$1\r\nx\r\n', { type: '~', value: [{ type: '$', value: 'x' }] }],
    ['>2\r\n$3\r\nDEL\r\n$1\r\nk\r\n', { type: '>', value: [{ type: '$', value: 'DEL' }, { type: '$', value: 'k' }] }],
    ['|1\r\n+ttl\r\n:3\r\n+OK\r\n', { type: '+', value: 'OK' }],
  ];
  for (const [frame, want] of cases) assert.deepEqual(parseFrame(frame), want, JSON.stringify(frame));
  // Binary frames parse the same bytes.
  assert.deepEqual(parseFrame(new TextEncoder().encode('$2\r\nhi\r\n').buffer), { type: '$', value: 'hi' });
});

test('parseFrame rejects malformed frames with ProtocolError', () => {
  const bad = [
    '', '+OK', '+OK\r\n+OK\r\n', '$3\r\nab\r\n', '$3\r\nabcd\r\n', '$-2\r\n', '$x\r\n', '*2\r\n$1\r\na\r\n',
    '*1000000\r\n', ':1.5\r\n', '#x\r\n', '?\r\n', ',abc\r\n', '$99999999999\r\nx\r\n',
    '*1\r\n'.repeat(70) + ':1\r\n',
  ];
  for (const f of bad) assert.throws(() => parseFrame(f), ProtocolError, JSON.stringify(f.slice(0, 40)));
});

test('toJS converts replies to plain values', () => {
  assert.equal(toJS(parseFrame('+OK\r\n')), 'OK');
  assert.equal(toJS(parseFrame('$-1\r\n')), null);
  assert.deepEqual(toJS(parseFrame('*2\r\n$1\r\na\r\n*1\r\n:2\r\n')), ['a', [2]]);
  const err = toJS(parseFrame('-NOPERM no\r\n'));
  assert.ok(err instanceof ReplyError);
  assert.equal(err.code, 'NOPERM');
  assert.deepEqual(toJS(parseFrame('%1\r\n$1\r\nk\r\n:1\r\n')), new Map([['k', 1]]));
});

test('classifyFrame follows the seed taxonomy', () => {
  const interested = (k) => k.startsWith('w:');
  const cases = [
    ['+OK\r\n', 'reply'],
    [':1\r\n', 'reply'],
    ['-ERR x\r\n', 'reply'],
    ['>3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$1\r\nx\r\n', 'pubsub'],
    ['>4\r\n$8\r\npmessage\r\n$1\r\n*\r\n$2\r\nch\r\n$1\r\nx\r\n', 'pubsub'],
    ['>3\r\n$8\r\nsmessage\r\n$2\r\nch\r\n$1\r\nx\r\n', 'pubsub'],
    ['>3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n', 'mutation'],
    ['>1\r\n$7\r\nFLUSHDB\r\n', 'mutation'],
    ['>3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n', 'confirm'],
    ['*3\r\n$9\r\nkeychange\r\n$3\r\nw:1\r\n$1\r\na\r\n', 'keychange'],
    ['*3\r\n$9\r\nkeychange\r\n$3\r\nw:1\r\n$-1\r\n', 'keychange'],
    ['*3\r\n$9\r\nkeychange\r\n$3\r\nw:1\r\n+hash\r\n', 'keychange'],
    ['*3\r\n$9\r\nkeychange\r\n$3\r\nw:1\r\n_\r\n', 'keychange'],
    // A reply that happens to look like a keychange, for a key nobody follows.
    ['*3\r\n$9\r\nkeychange\r\n$3\r\nx:1\r\n$1\r\na\r\n', 'reply'],
    ['*3\r\n$9\r\nkeychange\r\n:1\r\n$1\r\na\r\n', 'reply'],
    ['*3\r\n+keychange\r\n$3\r\nw:1\r\n$1\r\na\r\n', 'reply'],
    ['*4\r\n$6\r\nqstate\r\n$1\r\n*\r\n$1\r\nk\r\n$1\r\nv\r\n', 'reply'],
    // Unknown tags are untagged arrays as far as the taxonomy goes; the
    // client ignores them when no command is outstanding.
    ['*2\r\n$8\r\nnewthing\r\n$1\r\nx\r\n', 'reply'],
  ];
  for (const [frame, want] of cases) assert.equal(classifyFrame(parseFrame(frame), interested), want, JSON.stringify(frame));
  assert.ok(isQState(parseFrame('*2\r\n$6\r\nqstate\r\n$1\r\n*\r\n')));
  assert.ok(!isQState(parseFrame('*3\r\n$6\r\nqstate\r\n$1\r\n*\r\n$1\r\nk\r\n')));
});

test('globMatch matches as Redis KEYS does', () => {
  const cases = [
    ['*', '', true], ['*', 'anything', true], ['user:*', 'user:42', true], ['user:*', 'users', false],
    ['h?llo', 'hello', true], ['h?llo', 'hllo', false], ['h[ae]llo', 'hallo', true], ['h[ae]llo', 'hillo', false],
    ['h[^e]llo', 'hallo', true], ['h[^e]llo', 'hello', false], ['h[a-c]llo', 'hbllo', true], ['h[c-a]llo', 'hbllo', true],
    ['h\\*llo', 'h*llo', true], ['h\\*llo', 'hello', false], ['a*b*c', 'aXXbYYc', true], ['a*b*c', 'aXXbYY', false],
    ['*:1', 'room:1', true], ['room:[0-9]', 'room:x', false], ['é*', 'été', true], ['?', 'é', false], ['??', 'é', true],
    ['[', 'a', false], ['a[', 'a', false], ['**', 'x', true],
  ];
  for (const [p, s, want] of cases) assert.equal(globMatch(p, s), want, `${p} ~ ${s}`);
});

test('wire ids are (epoch << 32) | counter in decimal', () => {
  assert.equal(wireId(1, 1), '4294967297');
  assert.equal(wireId(1, 0), '4294967296');
  assert.equal(wireId(0, 5), '5');
  assert.equal(wireId(2 ** 32 - 1, 2 ** 32 - 1), '18446744073709551615');
  assert.equal(wireId(123456, 789), ((123456n << 32n) | 789n).toString());
  assert.deepEqual(splitWireId('18446744073709551615'), { epoch: 2 ** 32 - 1, counter: 2 ** 32 - 1 });
  assert.deepEqual(splitWireId(wireId(7, 9)), { epoch: 7, counter: 9 });
  // Increasing across epochs whatever the counter.
  assert.ok(BigInt(wireId(3, 1)) > BigInt(wireId(2, 2 ** 32 - 1)));
});
