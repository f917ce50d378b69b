// The json and ratelimit types in the local store (sync/TYPES.md): the
// server's parsing, paths and effects, numbers kept as written, RLSET as a
// marker with its expiry, and the client's own json writes.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Store, effectsOf, parseFrame, plainValue, cloneEntry, entriesEqual, parseJSON, jsonText, parseJSONPath, formatJSONPath, connect, wireId } from '../recached-edge.js';
import { ScriptedNetwork, until, cmd, bulk } from '../testdata/fakes.js';

const NOW = 1_700_000_000_000;
const clock = () => NOW;

/** A store holding key k with document text, or nothing when text is null. */
function withDoc(text) {
  const st = new Store(clock);
  if (text !== null) assert.deepEqual(st.apply(['JSET', 'k', '$', text]), ['k'], `JSET k $ ${text}`);
  return st;
}

/** A push as a RESP frame. */
function push(...args) {
  return `>${args.length}\r\n` + args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('');
}

test('JMERGE applies RFC 7386 merge patches (section 3 and every row of appendix A)', () => {
  const cases = [
    [`{"title":"Goodbye!","author":{"givenName":"John","familyName":"Doe"},"tags":["example","sample"],"content":"This will be unchanged"}`,
      `{"title":"Hello!","phoneNumber":"+01-123-456-7890","author":{"familyName":null},"tags":["example"]}`,
      `{"title":"Hello!","author":{"givenName":"John"},"tags":["example"],"content":"This will be unchanged","phoneNumber":"+01-123-456-7890"}`],
    ['{"a":"b"}', '{"a":"c"}', '{"a":"c"}'],
    ['{"a":"b"}', '{"b":"c"}', '{"a":"b","b":"c"}'],
    ['{"a":"b"}', '{"a":null}', '{}'],
    ['{"a":"b","b":"c"}', '{"a":null}', '{"b":"c"}'],
    ['{"a":["b"]}', '{"a":"c"}', '{"a":"c"}'],
    ['{"a":"c"}', '{"a":["b"]}', '{"a":["b"]}'],
    ['{"a":{"b":"c"}}', '{"a":{"b":"d","c":null}}', '{"a":{"b":"d"}}'],
    ['{"a":[{"b":"c"}]}', '{"a":[1]}', '{"a":[1]}'],
    ['["a","b"]', '["c","d"]', '["c","d"]'],
    ['{"a":"b"}', '["c"]', '["c"]'],
    ['{"a":"foo"}', 'null', null], // at the root, a null patch deletes the key
    ['{"a":"foo"}', '"bar"', '"bar"'],
    ['{"e":null}', '{"a":1}', '{"e":null,"a":1}'],
    ['[1,2]', '{"a":"b","c":null}', '{"a":"b"}'],
    ['{}', '{"a":{"bb":{"ccc":null}}}', '{"a":{"bb":{}}}'],
  ];
  for (const [target, patch, want] of cases) {
    const st = withDoc(target);
    assert.deepEqual(st.apply(['JMERGE', 'k', '$', patch]), ['k'], `merge ${patch} into ${target}`);
    assert.equal(st.jget('k'), want, `merge ${patch} into ${target}`);
    assert.equal(st.raw('k') === undefined, want === null);
  }
  // On a missing key: null does nothing, anything else is MergePatch(null, patch).
  const st = withDoc(null);
  assert.deepEqual(st.apply(['JMERGE', 'k', '$', 'null']), ['k']);
  assert.equal(st.raw('k'), undefined);
  st.apply(['JMERGE', 'k', '$', '{"a":{"b":null,"c":1},"d":null}']);
  assert.equal(st.jget('k'), '{"a":{"c":1}}');
});

test('JMERGE below the root merges into the member or element', () => {
  const cases = [
    ['{"a":{"x":1}}', '$.a', '{"y":2,"x":null}', '{"a":{"y":2}}'],
    ['{"a":{"x":1}}', '$.a', 'null', '{}'],
    ['{"a":{"x":1}}', '$.b', '{"c":{"d":null,"e":1}}', '{"a":{"x":1},"b":{"c":{"e":1}}}'],
    ['{"a":{"x":1}}', '$.b', 'null', '{"a":{"x":1}}'],
    ['{"a":[{"x":1},2]}', '$.a[0]', '{"y":2}', '{"a":[{"x":1,"y":2},2]}'],
    ['{"a":[{"x":1},2]}', '$.a[-1]', 'null', '{"a":[{"x":1},null]}'],
    ['{"a":[1]}', '$.a[1]', '2', null], // out of range
    ['{"a":1}', '$.b.c', '2', null], // no parent
    ['{"a":1}', '$.a.c', '2', null], // the parent is a number
  ];
  for (const [doc, path, patch, want] of cases) {
    const st = withDoc(doc);
    const changed = st.apply(['JMERGE', 'k', path, patch]);
    if (want === null) {
      assert.equal(changed, null, `merge ${patch} at ${path} of ${doc} is not understood`);
      assert.equal(st.jget('k'), doc, 'and changes nothing');
    } else {
      assert.deepEqual(changed, ['k']);
      assert.equal(st.jget('k'), want, `merge ${patch} at ${path} of ${doc}`);
    }
  }
});

test('JSET and JDEL follow the server: parents must exist, arrays never grow, order is kept', () => {
  const doc = '{"a":{"b":[1,2,3]},"odd key":{"x":1},"q\'s":0}';
  const cases = [
    ['JSET', '$.a.b[0]', '"x"', '{"a":{"b":["x",2,3]},"odd key":{"x":1},"q\'s":0}'],
    ['JSET', '$.a.b[-1]', 'true', '{"a":{"b":[1,2,true]},"odd key":{"x":1},"q\'s":0}'],
    ['JSET', '$.a.b[3]', '4', null], // never extends an array
    ['JSET', '$.a.b[-4]', '4', null],
    ['JSET', '$.a', '{}', '{"a":{},"odd key":{"x":1},"q\'s":0}'], // replaced in place
    ['JSET', '$.z', '[]', '{"a":{"b":[1,2,3]},"odd key":{"x":1},"q\'s":0,"z":[]}'], // appended
    ['JSET', '$.z.y', '1', null], // no parent
    ['JSET', '$.a.b.c', '1', null], // an array, not an object
    ['JSET', '$.a[0]', '1', null], // an object, not an array
    ['JSET', '$["odd key"].x', '2', '{"a":{"b":[1,2,3]},"odd key":{"x":2},"q\'s":0}'],
    ['JSET', "$['odd key']['x']", '3', '{"a":{"b":[1,2,3]},"odd key":{"x":3},"q\'s":0}'],
    ['JSET', "$['q\\'s']", '5', '{"a":{"b":[1,2,3]},"odd key":{"x":1},"q\'s":5}'],
    ['JSET', '.a.b[1]', 'null', '{"a":{"b":[1,null,3]},"odd key":{"x":1},"q\'s":0}'], // legacy form
    ['JSET', '$', ' [ 1 , {"b" : 2} ] ', '[1,{"b":2}]'],
    ['JSET', '$..a', '1', null], // not a path the server accepts
    ['JSET', '$.a', '{"x":1,}', null], // not JSON
    ['JDEL', '$.a.b[1]', undefined, '{"a":{"b":[1,3]},"odd key":{"x":1},"q\'s":0}'],
    ['JDEL', '$.a.b[-3]', undefined, '{"a":{"b":[2,3]},"odd key":{"x":1},"q\'s":0}'],
    ['JDEL', '$.a.b[7]', undefined, doc], // nothing there: understood, no change
    ['JDEL', '$.nope.deeper', undefined, doc],
    ['JDEL', '$["odd key"]', undefined, '{"a":{"b":[1,2,3]},"q\'s":0}'],
    ['JDEL', '$.a.b.c', undefined, null], // an array, not an object
    ['JDEL', '$', undefined, undefined], // the whole key
    ['JDEL', '.', undefined, undefined],
  ];
  for (const [name, path, value, want] of cases) {
    const st = withDoc(doc);
    const args = value === undefined ? [name, 'k', path] : [name, 'k', path, value];
    const changed = st.apply(args);
    const what = args.join(' ');
    if (want === null) {
      assert.equal(changed, null, `${what} is not understood`);
      assert.equal(st.jget('k'), doc, `${what} changes nothing`);
    } else if (want === undefined) {
      assert.deepEqual(changed, ['k'], what);
      assert.equal(st.raw('k'), undefined, `${what} deletes the key`);
    } else {
      assert.deepEqual(changed, ['k'], what);
      assert.equal(st.jget('k'), want, what);
    }
  }
  // JDEL without a path deletes the key; on a missing key it does nothing.
  const st = withDoc(doc);
  assert.deepEqual(st.apply(['JDEL', 'k']), ['k']);
  assert.equal(st.raw('k'), undefined);
  assert.deepEqual(st.apply(['JDEL', 'k', '$.a']), ['k']);
  // A new document only at the root.
  assert.equal(st.apply(['JSET', 'k', '$.a', '1']), null);
  assert.equal(st.apply(['JMERGE', 'k', '$.a', '1']), null);
  assert.equal(st.raw('k'), undefined);
  // Effects with the wrong number of arguments are not understood.
  for (const e of [['JSET', 'k', '$'], ['JSET', 'k', '$', '1', 'NX'], ['JMERGE', 'k', '$'], ['JDEL', 'k', '$', '$']]) {
    assert.equal(st.apply(e), null, e.join(' '));
  }
});

test('documents keep numbers as written, member order, and the server\'s compact text', () => {
  const st = withDoc('{ "big": 9007199254740993, "neg": -9223372036854775808, "over": 9223372036854775808, "dec": 1.50,' +
    ' "exp": 1E+400, "z": 0, "b": "caf\\u00e9 \\ud83d\\ude00 \\"q\\" \\/ \\u0001\\t", "b": "last", "a": [true, false, null] }');
  assert.equal(st.jget('k'),
    '{"big":9007199254740993,"neg":-9223372036854775808,"over":9223372036854775808,"dec":1.50,"exp":1E+400,"z":0,"b":"last","a":[true,false,null]}');
  assert.equal(st.jget('k', '$.big'), '9007199254740993');
  assert.equal(st.jtype('k', '$.big'), 'integer');
  assert.equal(st.jtype('k', '$.neg'), 'integer');
  assert.equal(st.jtype('k', '$.over'), 'number', 'beyond int64: a number');
  assert.equal(st.jtype('k', '$.dec'), 'number');
  assert.equal(st.jtype('k', '$.a'), 'array');
  assert.equal(st.jtype('k', '$.a[2]'), 'null');
  assert.equal(st.jtype('k', '$.a[-3]'), 'boolean');
  assert.equal(st.jtype('k'), 'object');
  assert.equal(st.jtype('k', '$.nope'), null);
  // Escapes decode; the text escapes only what JSON requires.
  assert.equal(jsonText(parseJSON('"caf\\u00e9 \\ud83d\\ude00 \\"q\\" \\/ \\u0001\\t\\u007f"')), '"café 😀 \\"q\\" / \\u0001\\t\u007f"');
  // Setting an existing member keeps its place.
  st.apply(['JSET', 'k', '$.big', '1']);
  assert.equal(st.jget('k'), '{"big":1,"neg":-9223372036854775808,"over":9223372036854775808,"dec":1.50,"exp":1E+400,"z":0,"b":"last","a":[true,false,null]}');
  // Numeric-looking names keep their order (a plain object would not).
  const n = withDoc('{"b":1,"2":2,"a":3,"1":4}');
  assert.equal(n.jget('k'), '{"b":1,"2":2,"a":3,"1":4}');
  assert.deepEqual(Object.keys(plainValue(n.raw('k'))).sort(), ['1', '2', 'a', 'b']);
  assert.equal(withDoc('{"__proto__":{"x":1}}').jget('k', '$.__proto__.x'), '1');
});

test('the parser is as strict as the server\'s', () => {
  const deep = (n) => '['.repeat(n) + ']'.repeat(n);
  const bad = ['', ' ', '{', '[1,]', '{"a":1,}', '{"a" 1}', '{a:1}', '01', '-', '1.', '1e', '.5', '+1', 'tru', 'nul', 'True',
    '"\u0001"', '"\\x"', "\"\\'\"", '"\\ud800"', '"\\udc00\\ud800"', '"\\u12"', '"abc', '1 2', '[1]]', 'NaN', deep(129)];
  for (const text of bad) {
    const st = withDoc('{"a":1}');
    assert.equal(st.apply(['JSET', 'k', '$.a', text]), null, `JSET of ${JSON.stringify(text)} is not understood`);
    assert.equal(st.jget('k'), '{"a":1}');
  }
  assert.equal(jsonText(parseJSON(deep(128))), deep(128));
  // A value stored at a path counts the path's depth.
  const st = withDoc('{"a":1}');
  assert.equal(st.apply(['JSET', 'k', '$.a', deep(128)]), null);
  assert.deepEqual(st.apply(['JSET', 'k', '$.a', deep(127)]), ['k']);
  assert.equal(st.apply(['JMERGE', 'k', '$.a', `{"x":${deep(127)}}`]), null);
});

test('paths: the server\'s subset, canonical form and error texts', () => {
  const st = withDoc('{"a":{"b c":[10,20,{"d":"e"}]},"é":1,"":2,"x.y":3}');
  const reads = [
    ['$', '{"a":{"b c":[10,20,{"d":"e"}]},"é":1,"":2,"x.y":3}'],
    ['.', '{"a":{"b c":[10,20,{"d":"e"}]},"é":1,"":2,"x.y":3}'],
    ['$.a["b c"][0]', '10'],
    ["$.a['b c'][-1].d", '"e"'],
    ['$["a"]["b c"][-2]', '20'],
    ['.a["b c"][2]["d"]', '"e"'],
    ['$.é', '1'],
    ['$[""]', '2'],
    ['$["x.y"]', '3'],
    ['$["\\u0061"]["b\\u0020c"][1]', '20'],
    ['$.a["b c"][3]', null],
    ['$.a["b c"][-4]', null],
    ['$.nope', null],
    ['$.nope.deeper[0]', null],
  ];
  for (const [path, want] of reads) assert.equal(st.jget('k', path), want, path);
  const errors = [
    ['a', "invalid JSON path 'a': it must start with '$'"],
    ['', "invalid JSON path '': it must start with '$'"],
    ['$..a', "invalid JSON path '$..a': wildcards and recursive descent are not supported"],
    ['$.*', "invalid JSON path '$.*': wildcards and recursive descent are not supported"],
    ['$.', "invalid JSON path '$.': expected a member name after '.' at offset 2"],
    ['$[*]', "invalid JSON path '$[*]': wildcards, filters, slices and unions are not supported; expected an index or a quoted name after '['"],
    ['$[01]', "invalid JSON path '$[01]': invalid array index '01'"],
    ['$[-0]', "invalid JSON path '$[-0]': invalid array index '-0'"],
    ['$[-]', "invalid JSON path '$[-]': invalid array index '-'"],
    ['$[2147483648]', "invalid JSON path '$[2147483648]': invalid array index '2147483648'"],
    ['$[1', "invalid JSON path '$[1': expected ']' at offset 3"],
    ['$[', "invalid JSON path '$[': unterminated '['"],
    ['$["a]', "invalid JSON path '$[\"a]': invalid quoted name at offset 2"],
    ['$a', "invalid JSON path '$a': unexpected 'a' at offset 1"],
    ['$.a.b c', "invalid JSON path '$.a.b c': unexpected byte 0x20 at offset 5"],
    ['$.a["b c"].x', "'$.a[\"b c\"]' is an array, not an object"],
    ['$.a["b c"][0][1]', "'$.a[\"b c\"][0]' is a number, not an array"],
    ['$["é"][0]', "'$.é' is a number, not an array"],
  ];
  for (const [path, msg] of errors) {
    assert.throws(() => st.jget('k', path), (err) => err.code === 'ERR' && err.message === 'ERR ' + msg, path);
  }
  assert.throws(() => parseJSONPath('$' + '.a'.repeat(129)), /more than 128 segments/);
  assert.equal(parseJSONPath('$' + '.a'.repeat(128)).length, 128);
  // Canonical form, as the server writes paths in its pushes.
  assert.equal(formatJSONPath(parseJSONPath(".a['b c'][-1]._x-1.é[\"\"][\"q\\\"\"]")), '$.a["b c"][-1]._x-1.é[""]["q\\""]');
  // Reads of another type are WRONGTYPE; of a json key whose content has
  // not arrived, nothing.
  st.apply(['SET', 's', 'v']);
  assert.throws(() => st.jget('s'), (err) => err.code === 'WRONGTYPE');
  st.setState('m', parseFrame('+json\r\n'));
  assert.equal(st.jget('m'), null);
  assert.equal(st.jget('missing'), null);
});

test('a json key: expiry, type changes, copies, and its hydration after a +json marker', () => {
  const st = new Store(clock);
  st.apply(['JSET', 'k', '$', '{"a":1}']);
  st.apply(['PEXPIREAT', 'k', String(NOW + 5000)]);
  st.apply(['JSET', 'k', '$', '[1]']);
  assert.equal(st.raw('k').expireAt, NOW + 5000, 'a key that was json keeps its expiry');
  st.apply(['JMERGE', 'k', '$', '{"b":2}']);
  st.apply(['JDEL', 'k', '$.b']);
  assert.equal(st.raw('k').expireAt, NOW + 5000);
  assert.equal(st.jget('k'), '{}');
  st.apply(['COPY', 'k', 'c']);
  st.apply(['JSET', 'c', '$.x', '1']);
  assert.equal(st.jget('k'), '{}', 'a copy is independent');
  assert.equal(st.jget('c'), '{"x":1}');
  st.apply(['SET', 's', 'v', 'PXAT', String(NOW + 5000)]);
  st.apply(['JSET', 's', '$', '2']);
  assert.equal(st.raw('s').expireAt, 0, 'a key of another type is replaced');
  assert.equal(st.raw('s').marker, 'json');
  st.apply(['HSET', 's', 'f', 'v']);
  assert.equal(st.raw('s').type, 'hash', 'and the effect of another type wins over json');
  assert.deepEqual(st.apply(['JMERGE', 'k', '$', 'null']), ['k']);
  assert.equal(st.raw('k'), undefined, 'JMERGE k $ null deletes the key');

  // Hydration: the +json marker, then DEL, JSET k $ <doc>, PEXPIREAT.
  assert.ok(st.setState('h', parseFrame('+json\r\n')));
  assert.deepEqual(plainValue(st.raw('h')), { type: 'json' });
  assert.equal(st.apply(['JSET', 'h', '$.a', '1']), null, 'below the root of an unknown document: not understood');
  assert.equal(st.apply(['JMERGE', 'h', '$', '{"a":1}']), null, 'an object patch of an unknown document: not understood');
  assert.equal(st.apply(['JDEL', 'h', '$.a']), null);
  st.apply(['DEL', 'h']);
  st.apply(['JSET', 'h', '$', '{"n":12345678901234567890}']);
  st.apply(['PEXPIREAT', 'h', String(NOW + 9000)]);
  assert.equal(st.jget('h'), '{"n":12345678901234567890}');
  assert.equal(st.raw('h').expireAt, NOW + 9000);
  assert.ok(!st.setState('h', parseFrame('+json\r\n')), 'a marker of the same type keeps the document');
  assert.deepEqual(plainValue(st.raw('h')), { n: 12345678901234567000 }, 'value() is JSON.parse of the text');

  // Entries compare and clone by document.
  const c = cloneEntry(st.raw('h'));
  assert.ok(entriesEqual(c, st.raw('h')));
  st.apply(['JSET', 'h', '$.n', '1']);
  assert.ok(!entriesEqual(c, st.raw('h')));
  assert.equal(c.value.text(), '{"n":12345678901234567890}');
});

test('RLSET keeps a ratelimit key as a marker with its PXAT expiry', () => {
  const st = new Store(clock);
  // Hydration: DEL key, RLSET key tat interval burst, PEXPIREAT.
  st.setState('r', parseFrame('+ratelimit\r\n'));
  assert.deepEqual(st.apply(['DEL', 'r']), ['r']);
  assert.deepEqual(st.apply(['RLSET', 'r', '1700000000500000000', '100000000', '5']), ['r']);
  assert.deepEqual(st.apply(['PEXPIREAT', 'r', String(NOW + 500)]), ['r']);
  assert.equal(st.raw('r').marker, 'ratelimit');
  assert.equal(st.raw('r').expireAt, NOW + 500);
  assert.deepEqual(plainValue(st.raw('r')), { type: 'ratelimit' });
  // A request that passed: the state, with its expiry.
  st.apply(['RLSET', 'r', '1700000000600000000', '100000000', '5', 'PXAT', String(NOW + 600)]);
  assert.equal(st.raw('r').expireAt, NOW + 600);
  st.apply(['RLSET', 'r', '1', '1', '0', 'PXAT', String(NOW)]);
  assert.equal(st.raw('r'), undefined, 'a PXAT already past deletes the key');
  for (const e of [['RLSET', 'r', '1', '1'], ['RLSET', 'r', 'x', '1', '1'], ['RLSET', 'r', '1', '1', '1', 'PX', '5'], ['RLSET', 'r', '1', '1', '1', 'PXAT', '0']]) {
    assert.equal(st.apply(e), null, e.join(' '));
  }
});

test('effectsOf: json writes predicted from the local document and derived from replies', () => {
  const st = withDoc('{"a":[1,2],"n":5,"f":1.5,"o":{}}');
  st.apply(['SET', 's', 'v']);
  const predicted = [
    [['JSET', 'k', '$.a[0]', '7'], [['JSET', 'k', '$.a[0]', '7']]],
    [['JSET', 'k', '$.a[0]', '7', 'NX'], []],
    [['JSET', 'k', '$.a[5]', '7', 'XX'], []],
    [['JSET', 'k', '$.z', '7', 'xx'], []],
    [['JSET', 'k', '$.z', '7', 'NX'], [['JSET', 'k', '$.z', '7']]],
    [['JSET', 'k', '$.a[5]', '7'], null],
    [['JSET', 'k', '$.z.y', '7'], null],
    [['JSET', 'k', '$', '7', 'NX'], []],
    [['JSET', 'new', '$', '{}', 'XX'], []],
    [['JSET', 'new', '$', '{}'], [['JSET', 'new', '$', '{}']]],
    [['JSET', 'new', '$.a', '{}'], null],
    [['JSET', 's', '$', '1'], null], // WRONGTYPE
    [['JSET', 'k', '$.a', '{'], null],
    [['JMERGE', 'k', '$.o', '{"x":1}'], [['JMERGE', 'k', '$.o', '{"x":1}']]],
    [['JMERGE', 'k', '$.a[9]', '1'], null],
    [['JMERGE', 'new', '$', 'null'], [['JMERGE', 'new', '$', 'null']]],
    [['JDEL', 'k', '$.a[1]'], [['JDEL', 'k', '$.a[1]']]],
    [['JDEL', 'k', '$.zz'], []],
    [['JDEL', 'k'], [['JDEL', 'k', '$']]],
    [['JDEL', 'new'], []],
    [['JDEL', 'k', '$.n.x'], null],
    [['JNUMINCRBY', 'k', '$.n', '2'], [['JSET', 'k', '$.n', '7']]],
    [['JNUMINCRBY', 'k', '$.n', '9223372036854775803'], null], // overflow
    [['JNUMINCRBY', 'k', '$.f', '1.5'], [['JSET', 'k', '$.f', '3.0']]],
    [['JNUMINCRBY', 'k', '$.f', '1e-7'], [['JSET', 'k', '$.f', '1.5000001']]],
    [['JNUMINCRBY', 'k', '$.a', '1'], null],
    [['JNUMINCRBY', 'k', '$.n', 'x'], null],
    [['JARRAPPEND', 'k', '$.a', '3', ' {"x" : 1}'], [['JSET', 'k', '$.a', '[1,2,3,{"x":1}]']]],
    [['JARRAPPEND', 'k', '$.o', '3'], null],
  ];
  for (const [args, want] of predicted) assert.deepEqual(effectsOf(st, args), want, args.join(' '));
  const derived = [
    [['JSET', 'k', '$.z', '7', 'NX'], '+OK\r\n', [['JSET', 'k', '$.z', '7']]],
    [['JSET', 'k', '$.z', '7', 'NX'], '$-1\r\n', []],
    [['JMERGE', 'k', '$', '{}'], '+OK\r\n', [['JMERGE', 'k', '$', '{}']]],
    [['JDEL', 'k', '$.a'], ':1\r\n', [['JDEL', 'k', '$.a']]],
    [['JDEL', 'k', '$.a'], ':0\r\n', []],
    [['JNUMINCRBY', 'k', '$.n', '1'], '$2\r\n42\r\n', [['JSET', 'k', '$.n', '42']]],
    [['JARRAPPEND', 'k', '$.a', '3'], ':3\r\n', [['JSET', 'k', '$.a', '[1,2,3]']]],
    [['JARRAPPEND', 'k', '$.a', '3'], ':5\r\n', null], // the local array is not the server's
  ];
  for (const [args, reply, want] of derived) assert.deepEqual(effectsOf(st, args, parseFrame(reply)), want, `${args.join(' ')} -> ${JSON.stringify(reply)}`);
});

test('client: qstate strings start without an expiry; PEXPIREAT pushes and keychanges keep theirs', async () => {
  const net = new ScriptedNetwork();
  let now = NOW;
  const client = connect('ws://server.test/', { WebSocket: net.WebSocket, indexedDB: null, locks: null, now: () => now, minBackoff: 1, maxBackoff: 8, random: () => 0 });
  client.query('t:*', () => undefined);
  let s = await net.socket(0);
  assert.deepEqual(await s.next(1), [cmd('QSUB', 't:*')]);
  s.push('*8\r\n$6\r\nqstate\r\n$3\r\nt:*\r\n$3\r\nt:a\r\n$1\r\n1\r\n$3\r\nt:b\r\n$1\r\n2\r\n$3\r\nt:h\r\n+hash\r\n');
  s.push(push('DEL', 't:h'));
  s.push(push('HSET', 't:h', 'f', 'v'));
  s.push(push('PEXPIREAT', 't:h', String(NOW + 7000)));
  s.push(push('PEXPIREAT', 't:a', String(NOW + 5000)));
  await until(() => client.state === 'open');
  assert.equal(client.pttl('t:a'), 5000);
  assert.equal(client.pttl('t:b'), -1);
  assert.equal(client.pttl('t:h'), 7000);
  // A keychange with the same string keeps the known expiry, as does one
  // with a new value (the server sends SET … KEEPTTL's push before it).
  s.push('*3\r\n$9\r\nkeychange\r\n$3\r\nt:a\r\n$1\r\n1\r\n');
  s.push('*3\r\n$9\r\nkeychange\r\n$3\r\nt:a\r\n$1\r\n9\r\n');
  assert.equal(client.get('t:a'), '9');
  assert.equal(client.pttl('t:a'), 5000);
  // While the page is away, t:a is made persistent and t:b gets a TTL. The
  // next qstate drops the expiry it knew; the pushes that follow give
  // t:b its new one, and t:a none.
  client.goOffline();
  client.goOnline();
  s = await net.socket(1);
  assert.deepEqual(await s.next(1), [cmd('QSUB', 't:*')]);
  s.push('*6\r\n$6\r\nqstate\r\n$3\r\nt:*\r\n$3\r\nt:a\r\n$1\r\n9\r\n$3\r\nt:b\r\n$1\r\n2\r\n');
  s.push(push('PEXPIREAT', 't:b', String(NOW + 3000)));
  await until(() => client.pttl('t:b') === 3000);
  assert.equal(client.pttl('t:a'), -1, 'a key persisted while away has no expiry');
  assert.equal(client.get('t:h'), null, 't:h is gone');
  now += 3000;
  assert.equal(client.get('t:b'), null, 'a known expiry that passed hides the key');
  await client.close();
});

test('client: json pushes, hydration, and the page\'s own json writes applied at once', async () => {
  const net = new ScriptedNetwork();
  const client = connect('ws://server.test/', { WebSocket: net.WebSocket, indexedDB: null, locks: null, now: clock, minBackoff: 1, maxBackoff: 8, random: () => 0 });
  const seen = [];
  client.query('d:*', (k, v) => seen.push([k, v]));
  const s = await net.socket(0);
  assert.deepEqual(await s.next(1), [cmd('QSUB', 'd:*')]);
  s.push('*6\r\n$6\r\nqstate\r\n$3\r\nd:*\r\n$3\r\nd:1\r\n+json\r\n$4\r\nd:rl\r\n+ratelimit\r\n');
  s.push(push('DEL', 'd:1'));
  s.push(push('JSET', 'd:1', '$', '{"n":9007199254740993,"tags":["a"],"o":{"x":1}}'));
  s.push(push('DEL', 'd:rl'));
  s.push(push('RLSET', 'd:rl', '1700000001000000000', '1000000000', '0'));
  s.push(push('PEXPIREAT', 'd:rl', String(NOW + 1000)));
  await until(() => client.state === 'open');
  assert.equal(client.type('d:1'), 'json');
  assert.equal(client.jget('d:1', '$.n'), '9007199254740993');
  assert.equal(client.type('d:rl'), 'ratelimit');
  assert.equal(client.pttl('d:rl'), 1000);
  assert.equal(client.stats.unknownEffects, 0);
  // Another client's writes arrive as pushes.
  s.push(push('JMERGE', 'd:1', '$.o', '{"x":null,"y":[1]}'));
  s.push(push('JSET', 'd:1', '$.tags[0]', '"b"'));
  assert.equal(client.jget('d:1'), '{"n":9007199254740993,"tags":["b"],"o":{"y":[1]}}');
  assert.deepEqual(seen.at(-1), ['d:1', { n: 9007199254740992, tags: ['b'], o: { y: [1] } }]);
  // A push that does not fit the document is counted, not guessed.
  s.push(push('JSET', 'd:1', '$.nope.x', '1'));
  assert.equal(client.stats.unknownEffects, 1);
  assert.equal(client.jget('d:1'), '{"n":9007199254740993,"tags":["b"],"o":{"y":[1]}}');
  // The page's own writes show at once and settle with the replies.
  const w1 = client.jset('d:1', '$.o.z', { deep: [true] });
  const w2 = client.jmerge('d:1', '$', '{"n":null,"m":12345678901234567890}');
  const w3 = client.jdel('d:1', '$.tags[-1]');
  const w4 = client.jset('d:1', '$.o', '1', 'NX');
  assert.equal(client.jget('d:1'), '{"tags":[],"o":{"y":[1],"z":{"deep":[true]}},"m":12345678901234567890}');
  assert.equal(client.jtype('d:1', '$.m'), 'number');
  assert.deepEqual(await s.next(4), [
    cmd('DEDUP', client.clientId, wireId(1, 1), 'JSET', 'd:1', '$.o.z', '{"deep":[true]}'),
    cmd('DEDUP', client.clientId, wireId(1, 2), 'JMERGE', 'd:1', '$', '{"n":null,"m":12345678901234567890}'),
    cmd('DEDUP', client.clientId, wireId(1, 3), 'JDEL', 'd:1', '$.tags[-1]'),
    cmd('DEDUP', client.clientId, wireId(1, 4), 'JSET', 'd:1', '$.o', '1', 'NX'),
  ]);
  s.push('+OK\r\n');
  s.push('+OK\r\n');
  s.push(':1\r\n');
  s.push('$-1\r\n');
  assert.deepEqual(await Promise.all([w1, w2, w3, w4]), ['OK', 'OK', 1, null]);
  assert.equal(client.outboxSize, 0);
  assert.equal(client.store.jget('d:1'), '{"tags":[],"o":{"y":[1],"z":{"deep":[true]}},"m":12345678901234567890}');
  // A refused write is withdrawn from the view.
  const bad = client.jset('d:1', '$.tags[0]', '1');
  assert.equal(client.jget('d:1', '$.tags'), '[]', 'the prediction knows the server will refuse it');
  await s.next(1);
  s.push("-ERR index 0 is out of range for '$.tags', an array of length 0\r\n");
  await assert.rejects(bad, (err) => err.code === 'ERR');
  assert.throws(() => client.jget('d:rl'), (err) => err.code === 'WRONGTYPE');
  // JGET and its kin are reads: sent plainly, not through the outbox.
  const r = client.command('JGET', 'd:1', '$.m');
  assert.deepEqual(await s.next(1), [cmd('JGET', 'd:1', '$.m')]);
  s.push(bulk('12345678901234567890'));
  assert.equal(await r, '12345678901234567890');
  await assert.rejects(client.jset('d:1', '$', undefined), TypeError);
  await client.close();
});
