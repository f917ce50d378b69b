// recached-edge: the browser client of recached's sync protocol.
//
// A page connects to the WebSocket bridge (one RESP value per frame), keeps a
// live local copy of the keys it syncs, and writes through an outbox that
// survives reloads and reconnects: every write is wrapped as
// DEDUP <client-id> <wire-id> <command> <args…> and replayed, oldest first,
// until the server's reply retires it, so it applies exactly once. Given
// the bridges of a primary and its replicas (options.urls), it follows the
// primary: ROLE on every connection, and a write answered -READONLY is
// replayed to the next address (sync/CLIENTS.md section 8).
//
// The normative contract is the "Wire Protocol" page (seed 004) and SPEC
// sections 3 to 5 and 8; sync/PROTOCOL.md shows the bytes. This module has no
// dependencies and no build step: it runs as is in browsers and in Node 20+.
//
// Layout of this file:
//   1. errors and constants
//   2. RESP: the command encoder and a bounded parser of one value per frame
//   3. the seed's frame taxonomy
//   4. Redis glob matching
//   5. the local store: JSON documents (5a), the store (5b), effects of
//      requests
//   6. persistence: IndexedDB (or memory) storage and Web Locks slots
//   7. the client: session, outbox, replies, pushes, live queries
//   8. connect()

// ---------------------------------------------------------------------------
// 1. Errors and constants

/** The seed's client outbox limit: beyond it the oldest write is dropped. */
export const MAX_OUTBOX = 10000;
/** Live queries per connection (seed limit). */
export const MAX_QUERIES = 64;
/** Watched keys per connection (seed limit); KWATCH is sent in chunks of it. */
export const MAX_WATCHED = 1024;
/** Bulk string and whole message limit (seed limit), in bytes. */
export const MAX_MESSAGE = 64 * 1024 * 1024;
/** The version of this module (and of its npm package). */
export const VERSION = '0.1.0';

/** The IndexedDB schema version this module writes. */
export const SCHEMA_VERSION = 1;
/**
 * The object stores of the client's IndexedDB database. An upgrade creates
 * the missing ones and never drops a store (the seed's compatibility rule).
 */
export const STORES = Object.freeze([
  Object.freeze({ name: 'identity', keyPath: 'slot' }),
  Object.freeze({ name: 'outbox', keyPath: 'key' }),
]);

/** An error reply from the server (-ERR …, -NOPERM …, -WRONGTYPE …). */
export class ReplyError extends Error {
  /** @param {string} message the reply's text, prefix included */
  constructor(message) {
    super(message);
    this.name = 'ReplyError';
    /** The error's prefix: "ERR", "NOPERM", "WRONGTYPE", … */
    this.code = message.split(' ', 1)[0];
  }
}

/** A malformed frame from the server. */
export class ProtocolError extends Error {
  /** @param {string} message */
  constructor(message) {
    super(message);
    this.name = 'ProtocolError';
  }
}

/** A write dropped, unacknowledged, from a full outbox (it may or may not have applied). */
export class DroppedError extends Error {
  constructor() {
    super('recached-edge: write dropped from a full outbox');
    this.name = 'DroppedError';
  }
}

/** A plain command whose connection dropped before its reply (it may or may not have run). */
export class ConnectionLostError extends Error {
  constructor() {
    super('recached-edge: connection lost before the reply');
    this.name = 'ConnectionLostError';
  }
}

/** The client was closed first. */
export class ClosedError extends Error {
  constructor() {
    super('recached-edge: client closed');
    this.name = 'ClosedError';
  }
}

// ---------------------------------------------------------------------------
// 2. RESP

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8');

/**
 * The number of bytes of s in UTF-8 (a lone surrogate counts as U+FFFD, as
 * WebSocket.send and TextEncoder encode it).
 * @param {string} s
 * @returns {number}
 */
export function utf8Length(s) {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n += 4;
        i++;
      } else {
        n += 3;
      }
    } else n += 3;
  }
  return n;
}

/**
 * One command argument as the string sent: strings as they are, numbers,
 * bigints and booleans in decimal ("1"/"0" for booleans).
 * @param {unknown} a
 * @returns {string}
 */
function argString(a) {
  switch (typeof a) {
    case 'string':
      return a;
    case 'number':
      if (!Number.isFinite(a)) {
        if (Number.isNaN(a)) throw new TypeError('recached-edge: NaN is not a valid argument');
        return a > 0 ? 'inf' : '-inf';
      }
      return String(a);
    case 'bigint':
      return a.toString();
    case 'boolean':
      return a ? '1' : '0';
  }
  throw new TypeError(`recached-edge: a command argument must be a string, number, bigint or boolean, not ${a === null ? 'null' : typeof a}`);
}

/**
 * Encodes a command as a RESP array of bulk strings, the text of one
 * WebSocket frame.
 * @param {ReadonlyArray<string|number|bigint|boolean>} args
 * @returns {string}
 */
export function encodeCommand(args) {
  let out = '*' + args.length + '\r\n';
  for (const a of args) {
    const s = argString(a);
    out += '$' + utf8Length(s) + '\r\n' + s + '\r\n';
  }
  return out;
}

/**
 * A RESP value as parsed: type is the RESP prefix character ('+', '-', ':',
 * '$', '*', '_', ',', '#', '(', '!', '=', '%', '~', '>'); value is a string
 * for strings and errors (null for a nil bulk string or array), a number (or
 * a bigint beyond 2^53) for integers, a number for doubles, a boolean, a
 * bigint for big numbers, and an array of values for aggregates (a map's
 * keys and values alternate).
 * @typedef {{type: string, value: any}} RespValue
 */

const MAX_DEPTH = 64;

/** A cursor over the bytes of one frame. */
class Reader {
  /** @param {Uint8Array} buf */
  constructor(buf) {
    this.buf = buf;
    this.pos = 0;
  }

  /** Returns the text up to the next CRLF and moves past it. */
  line() {
    const buf = this.buf;
    const start = this.pos;
    for (let i = start; i + 1 < buf.length; i++) {
      if (buf[i] === 13 && buf[i + 1] === 10) {
        this.pos = i + 2;
        let s = '';
        for (let j = start; j < i; j++) s += String.fromCharCode(buf[j]);
        return s;
      }
    }
    throw new ProtocolError('incomplete value in frame');
  }

  /** Parses a decimal integer line (a length or an integer reply). */
  int() {
    const s = this.line();
    if (!/^-?\d{1,20}$/.test(s)) throw new ProtocolError(`invalid integer ${JSON.stringify(s)}`);
    const n = Number(s);
    if (Number.isSafeInteger(n)) return n;
    return BigInt(s);
  }

  /** Parses a length line: -1 (nil) or a non-negative safe integer. */
  length() {
    const n = this.int();
    if (typeof n !== 'number' || n < -1) throw new ProtocolError(`invalid length ${n}`);
    return n;
  }

  /** Returns n bytes followed by CRLF, as text. */
  bytes(n) {
    if (n > MAX_MESSAGE) throw new ProtocolError('bulk string larger than 64 MB');
    const end = this.pos + n;
    if (end + 2 > this.buf.length) throw new ProtocolError('incomplete value in frame');
    if (this.buf[end] !== 13 || this.buf[end + 1] !== 10) throw new ProtocolError('bulk string not terminated by CRLF');
    const s = decoder.decode(this.buf.subarray(this.pos, end));
    this.pos = end + 2;
    return s;
  }

  /**
   * Parses one value.
   * @param {number} depth
   * @returns {RespValue}
   */
  value(depth) {
    if (depth > MAX_DEPTH) throw new ProtocolError('values nested too deeply');
    if (this.pos >= this.buf.length) throw new ProtocolError('incomplete value in frame');
    const type = String.fromCharCode(this.buf[this.pos++]);
    switch (type) {
      case '+':
      case '-':
        return { type, value: this.line() };
      case ':':
        return { type, value: this.int() };
      case '$':
      case '!':
      case '=': {
        const n = this.length();
        if (n < 0) return { type: type === '$' ? '$' : '_', value: null };
        let s = this.bytes(n);
        if (type === '=') s = s.slice(4); // "txt:" or "mkd:"
        return { type, value: s };
      }
      case '_':
        this.line();
        return { type, value: null };
      case ',': {
        const s = this.line();
        let v;
        if (s === 'inf' || s === '+inf') v = Infinity;
        else if (s === '-inf') v = -Infinity;
        else if (s === 'nan') v = NaN;
        else v = Number(s);
        if (Number.isNaN(v) && s !== 'nan') throw new ProtocolError(`invalid double ${JSON.stringify(s)}`);
        return { type, value: v };
      }
      case '#': {
        const s = this.line();
        if (s !== 't' && s !== 'f') throw new ProtocolError(`invalid boolean ${JSON.stringify(s)}`);
        return { type, value: s === 't' };
      }
      case '(': {
        const s = this.line();
        if (!/^-?\d+$/.test(s)) throw new ProtocolError(`invalid big number ${JSON.stringify(s)}`);
        return { type, value: BigInt(s) };
      }
      case '*':
      case '~':
      case '>':
      case '%':
      case '|': {
        let n = this.length();
        if (n < 0) return { type: type === '*' ? '*' : '_', value: null };
        if (type === '%' || type === '|') n *= 2;
        // Every element takes at least 3 bytes: bound the count before
        // allocating for it.
        if (n * 3 > this.buf.length - this.pos) throw new ProtocolError('incomplete value in frame');
        const elems = new Array(n);
        for (let i = 0; i < n; i++) elems[i] = this.value(depth + 1);
        if (type === '|') return this.value(depth); // an attribute precedes the value it describes
        return { type, value: elems };
      }
    }
    throw new ProtocolError(`unknown RESP type byte ${JSON.stringify(type)}`);
  }
}

/**
 * Parses a frame holding exactly one RESP value (text or binary).
 * @param {string|ArrayBuffer|Uint8Array} data
 * @returns {RespValue}
 */
export function parseFrame(data) {
  let buf;
  if (typeof data === 'string') buf = encoder.encode(data);
  else if (data instanceof Uint8Array) buf = data;
  else buf = new Uint8Array(data);
  if (buf.length === 0) throw new ProtocolError('empty frame');
  const r = new Reader(buf);
  const v = r.value(0);
  if (r.pos !== buf.length) throw new ProtocolError('more than one value in a frame');
  return v;
}

/**
 * Converts a parsed value to plain JavaScript: strings, numbers, bigints,
 * booleans, null, arrays; a RESP3 map becomes a Map; an error becomes a
 * ReplyError (returned, not thrown).
 * @param {RespValue} v
 * @returns {any}
 */
export function toJS(v) {
  switch (v.type) {
    case '-':
    case '!':
      return new ReplyError(v.value);
    case '*':
    case '~':
    case '>':
      return v.value === null ? null : v.value.map(toJS);
    case '%': {
      const m = new Map();
      for (let i = 0; i + 1 < v.value.length; i += 2) m.set(toJS(v.value[i]), toJS(v.value[i + 1]));
      return m;
    }
  }
  return v.value;
}

/** @param {RespValue} v */
function isError(v) {
  return v.type === '-' || v.type === '!';
}

/**
 * Reports whether v is Redis's refusal of a write on a read-only replica.
 * @param {RespValue} v
 */
function isReadOnly(v) {
  return v.type === '-' && v.value.startsWith('READONLY');
}

/** @param {RespValue} v */
function isNil(v) {
  return v.value === null;
}

/**
 * The elements of an aggregate as strings (bulk and simple strings as they
 * are, integers in decimal), or null when an element is anything else.
 * @param {RespValue} v
 * @returns {string[]|null}
 */
function elemStrings(v) {
  if (!Array.isArray(v.value)) return null;
  const out = new Array(v.value.length);
  for (let i = 0; i < v.value.length; i++) {
    const e = v.value[i];
    if ((e.type === '$' || e.type === '+') && e.value !== null) out[i] = e.value;
    else if (e.type === ':') out[i] = String(e.value);
    else return null;
  }
  return out;
}

// ---------------------------------------------------------------------------
// 3. The frame taxonomy

/**
 * The kinds of frames a client receives (the seed's "Frame taxonomy"):
 * "reply" answers the oldest outstanding command (qstate included, the reply
 * to its QSUB); "mutation" is a push holding a replayable effect; "pubsub" a
 * push whose first element is message, pmessage or smessage; "keychange" the
 * array ["keychange", key, value]; "confirm" a RESP3 (un)subscribe
 * confirmation push, which the WebSocket port never sends and the client
 * ignores.
 * @typedef {'reply'|'mutation'|'pubsub'|'keychange'|'confirm'} FrameKind
 */

const CONFIRM_TAGS = new Set(['subscribe', 'psubscribe', 'ssubscribe', 'unsubscribe', 'punsubscribe', 'sunsubscribe']);
const PUBSUB_TAGS = new Set(['message', 'pmessage', 'smessage']);

/**
 * Classifies a frame. interested tells whether a key is watched or matches a
 * live query: an array shaped like a keychange for a key the client has no
 * interest in cannot be one (the server sends none), so it is a reply that
 * happens to start with "keychange". Without interested every key counts.
 * @param {RespValue} v
 * @param {(key: string) => boolean} [interested]
 * @returns {FrameKind}
 */
export function classifyFrame(v, interested) {
  if (v.type === '>' && v.value !== null) {
    const first = v.value[0];
    if (first && (first.type === '$' || first.type === '+') && first.value !== null) {
      const tag = first.value.toLowerCase();
      if (PUBSUB_TAGS.has(tag)) return 'pubsub';
      if (CONFIRM_TAGS.has(tag)) return 'confirm';
    }
    return 'mutation';
  }
  if (v.type === '*' && v.value !== null && v.value.length === 3) {
    const [tag, key, val] = v.value;
    if (tag.type !== '$' || tag.value !== 'keychange') return 'reply';
    if (key.type !== '$' || key.value === null) return 'reply';
    if (val.type !== '$' && val.type !== '_' && val.type !== '+') return 'reply';
    if (interested && !interested(key.value)) return 'reply';
    return 'keychange';
  }
  return 'reply';
}

/**
 * Reports whether v is a qstate array: ["qstate", pattern, k1, v1, …].
 * @param {RespValue} v
 */
export function isQState(v) {
  return v.type === '*' && v.value !== null && v.value.length >= 2 && v.value.length % 2 === 0 &&
    v.value[0].type === '$' && v.value[0].value === 'qstate';
}

// ---------------------------------------------------------------------------
// 4. Glob matching

/** @param {string} s */
function isASCII(s) {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7f) return false;
  return true;
}

/**
 * Reports whether key matches the glob pattern as Redis's KEYS matches it
 * (`*`, `?`, `[a-z]`, `[^a]`, `\x`), byte by byte on the UTF-8 encoding.
 * @param {string} pattern
 * @param {string} key
 * @returns {boolean}
 */
export function globMatch(pattern, key) {
  if (isASCII(pattern) && isASCII(key)) {
    const p = new Array(pattern.length);
    for (let i = 0; i < pattern.length; i++) p[i] = pattern.charCodeAt(i);
    const s = new Array(key.length);
    for (let i = 0; i < key.length; i++) s[i] = key.charCodeAt(i);
    return matchCodes(p, s);
  }
  return matchCodes(encoder.encode(pattern), encoder.encode(key));
}

/**
 * @param {ArrayLike<number>} pat
 * @param {ArrayLike<number>} s
 */
function matchCodes(pat, s) {
  let p = 0;
  let i = 0;
  let starP = -1;
  let starI = 0;
  while (i < s.length) {
    if (p < pat.length) {
      if (pat[p] === 42 /* * */) {
        starP = p;
        starI = i;
        p++;
        continue;
      }
      const [n, ok] = matchOne(pat, p, s[i]);
      if (n > 0 && ok) {
        p += n;
        i++;
        continue;
      }
    }
    if (starP < 0) return false;
    starI++;
    i = starI;
    p = starP + 1;
  }
  while (p < pat.length && pat[p] === 42) p++;
  return p === pat.length;
}

/**
 * Matches one byte c against the pattern element at pat[p]; returns the
 * element's length and whether c matches.
 * @param {ArrayLike<number>} pat
 * @param {number} p
 * @param {number} c
 * @returns {[number, boolean]}
 */
function matchOne(pat, p, c) {
  switch (pat[p]) {
    case 63: // ?
      return [1, true];
    case 92: // backslash
      if (p + 1 < pat.length) return [2, pat[p + 1] === c];
      return [1, c === 92];
    case 91: { // [
      let i = p + 1;
      const not = i < pat.length && pat[i] === 94; // ^
      if (not) i++;
      let matched = false;
      while (i < pat.length && pat[i] !== 93) { // ]
        if (pat[i] === 92 && i + 1 < pat.length) {
          i++;
          if (pat[i] === c) matched = true;
        } else if (i + 2 < pat.length && pat[i + 1] === 45) { // -
          let lo = pat[i];
          let hi = pat[i + 2];
          if (lo > hi) [lo, hi] = [hi, lo];
          if (c >= lo && c <= hi) matched = true;
          i += 2;
        } else if (pat[i] === c) {
          matched = true;
        }
        i++;
      }
      if (i < pat.length) i++; // the closing ]
      return [i - p, matched !== not];
    }
  }
  return [1, pat[p] === c];
}

// ---------------------------------------------------------------------------
// 5. The local store

/**
 * One key's local value. type is "string", "hash", "list", "set", "zset",
 * "json" or "other" (a server type the store keeps only the marker of:
 * marker names it, e.g. "ratelimit"); value is a string, a Map of fields,
 * an array, a Set, a Map of member to score, a JSONDoc (null while only a
 * json key's marker is known), or null; expireAt is the expiry time in
 * Unix milliseconds, 0 for none.
 * @typedef {{type: string, marker: string, value: any, expireAt: number}} Entry
 */

const KNOWN_TYPES = new Set(['string', 'hash', 'list', 'set', 'zset', 'json', 'stream']);

/** @param {string} type */
function newEntry(type) {
  /** @type {Entry} */
  const e = { type: KNOWN_TYPES.has(type) ? type : 'other', marker: type, value: null, expireAt: 0 };
  switch (e.type) {
    case 'string':
      e.value = '';
      break;
    case 'hash':
    case 'zset':
      e.value = new Map();
      break;
    case 'list':
      e.value = [];
      break;
    case 'set':
      e.value = new Set();
      break;
  }
  return e;
}

/**
 * A deep copy of an entry.
 * @param {Entry|undefined} e
 * @returns {Entry|undefined}
 */
export function cloneEntry(e) {
  if (!e) return undefined;
  let value = e.value;
  if (value instanceof Map) value = new Map(value);
  else if (value instanceof JSONDoc) value = value.clone();
  else if (value instanceof StreamValue) value = value.clone();
  else if (value instanceof Set) value = new Set(value);
  else if (Array.isArray(value)) value = value.slice();
  return { type: e.type, marker: e.marker, value, expireAt: e.expireAt };
}

/**
 * Reports whether two entries hold the same value.
 * @param {Entry|undefined} a
 * @param {Entry|undefined} b
 */
export function entriesEqual(a, b) {
  if (!a || !b) return !a && !b;
  if (a.type !== b.type || a.marker !== b.marker || a.expireAt !== b.expireAt) return false;
  const x = a.value;
  const y = b.value;
  if (x instanceof JSONDoc) return y instanceof JSONDoc && x.text() === y.text();
  if (x instanceof StreamValue) return y instanceof StreamValue && JSON.stringify(x.info()) === JSON.stringify(y.info());
  if (x instanceof Map) {
    if (x.size !== y.size) return false;
    for (const [k, v] of x) if (!y.has(k) || y.get(k) !== v) return false;
    return true;
  }
  if (x instanceof Set) {
    if (x.size !== y.size) return false;
    for (const k of x) if (!y.has(k)) return false;
    return true;
  }
  if (Array.isArray(x)) {
    if (x.length !== y.length) return false;
    for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return false;
    return true;
  }
  return x === y;
}

/**
 * An entry as plain JavaScript, the value callbacks receive: a string, an
 * object of fields for a hash, an array for a list, a sorted array of
 * members for a set, an array of [member, score] pairs in rank order for a
 * sorted set, the document as JSON.parse gives it for a json key (exact
 * text: Client.jget), a stream's state as StreamValue.info gives it
 * (entries, counters, groups, consumers, pending entries), {type: marker}
 * for a type the store does not model and for a json or stream key whose
 * content has not arrived yet, or null for a missing key.
 * @param {Entry|undefined} e
 * @returns {any}
 */
export function plainValue(e) {
  if (!e) return null;
  switch (e.type) {
    case 'string':
      return e.value;
    case 'hash':
      return Object.fromEntries(e.value);
    case 'list':
      return e.value.slice();
    case 'set':
      return [...e.value].sort(compareStrings);
    case 'zset':
      return zsetOrder(e.value);
    case 'json':
      if (e.value) return JSON.parse(e.value.text());
      break;
    case 'stream':
      if (e.value) return e.value.info();
  }
  return { type: e.marker };
}

/** @param {string} a @param {string} b */
function compareStrings(a, b) {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * A sorted set's [member, score] pairs in Redis's order: by score, then by
 * member.
 * @param {Map<string, number>} z
 * @returns {Array<[string, number]>}
 */
function zsetOrder(z) {
  return [...z].sort((a, b) => (a[1] - b[1]) || compareStrings(a[0], b[0]));
}

const WRONGTYPE = 'WRONGTYPE Operation against a key holding the wrong kind of value';

/** @param {string} s */
function parseInteger(s) {
  if (!/^-?\d{1,19}$/.test(s)) return null;
  const n = BigInt(s);
  if (n > 9223372036854775807n || n < -9223372036854775808n) return null;
  return n;
}

/** @param {string} s */
function parseScore(s) {
  const l = s.toLowerCase();
  if (l === 'inf' || l === '+inf') return Infinity;
  if (l === '-inf') return -Infinity;
  if (s.trim() === '' || s !== s.trim()) return null;
  const n = Number(s);
  return Number.isNaN(n) ? null : n;
}

/** @param {number} f */
function formatScore(f) {
  if (f === Infinity) return 'inf';
  if (f === -Infinity) return '-inf';
  return String(f);
}

/**
 * Resolves a Redis index (negative counts from the end).
 * @param {string|number} arg
 * @param {number} n
 */
function listIndex(arg, n) {
  const i = typeof arg === 'number' ? arg : Number(arg);
  if (!Number.isInteger(i)) return null;
  return i < 0 ? i + n : i;
}

// ---------------------------------------------------------------------------
// 5a. JSON documents
//
// A json key holds one JSON document. The store keeps it as a tree whose
// numbers keep their literal text, so that nothing goes through a float
// (9007199254740993 stays 9007199254740993, 1.50 stays 1.50) and whose
// objects keep their member order: null, true and false are themselves, a
// number is a JSONNumber, a string a string, an array an Array and an
// object a Map. Parsing, paths and effects follow the server's own rules
// (sync/TYPES.md, server/keyspace/json.go and jsonpath.go) so that a
// document here is byte for byte the server's.

/** JSON nesting limit: containers nest at most this deep (the server's). */
export const MAX_JSON_DEPTH = 128;

/** A JSON number, kept as the literal it was written with. */
export class JSONNumber {
  /** @param {string} text the number's JSON literal */
  constructor(text) {
    /** The literal, e.g. "9007199254740993" or "1.50". */
    this.text = text;
  }
}

/**
 * A JSON value in the store's tree.
 * @typedef {null|boolean|string|JSONNumber|Array<any>|Map<string, any>} JSONTree
 */

/** A JSON document or path that does not parse, or an effect that does not fit the document. */
export class JSONError extends Error {
  /** @param {string} message the server's words, without "ERR " */
  constructor(message) {
    super(message);
    this.name = 'JSONError';
  }
}

const NESTING_ERROR = `JSON nesting exceeds ${MAX_JSON_DEPTH} levels`;
const NUMBER_RE = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

/**
 * Describes the character at s[i] for an error message, as the server
 * describes a byte.
 * @param {string} s @param {number} i
 */
function describeChar(s, i) {
  const c = s.charCodeAt(i);
  if (c > 0x20 && c < 0x7f) return `'${s[i]}'`;
  if (c < 0x80) return 'byte 0x' + c.toString(16).padStart(2, '0');
  return 'byte 0x' + encoder.encode(String.fromCodePoint(/** @type {number} */ (s.codePointAt(i))))[0].toString(16);
}

/** A strict JSON parser (RFC 8259) with the server's limits. */
class JSONParser {
  /** @param {string} s */
  constructor(s) {
    this.s = s;
    this.pos = 0;
  }

  /** @param {string} [where] */
  fail(where) {
    if (this.pos >= this.s.length) return new JSONError('invalid JSON: unexpected end of input');
    return new JSONError(`invalid JSON: unexpected ${describeChar(this.s, this.pos)}${where ? ' ' + where : ''} at offset ${utf8Length(this.s.slice(0, this.pos))}`);
  }

  space() {
    const s = this.s;
    while (this.pos < s.length) {
      const c = s.charCodeAt(this.pos);
      if (c !== 32 && c !== 9 && c !== 10 && c !== 13) return;
      this.pos++;
    }
  }

  /**
   * Parses one value; depth is the number of containers it sits in.
   * @param {number} depth
   * @returns {JSONTree}
   */
  value(depth) {
    this.space();
    if (this.pos >= this.s.length) throw this.fail();
    const c = this.s[this.pos];
    switch (c) {
      case '{':
        if (depth >= MAX_JSON_DEPTH) throw new JSONError(NESTING_ERROR);
        return this.object(depth + 1);
      case '[':
        if (depth >= MAX_JSON_DEPTH) throw new JSONError(NESTING_ERROR);
        return this.array(depth + 1);
      case '"': {
        const [str, n] = decodeQuoted(this.s, this.pos, false);
        this.pos += n;
        return str;
      }
      case 't':
        return this.literal('true', true);
      case 'f':
        return this.literal('false', false);
      case 'n':
        return this.literal('null', null);
    }
    if (c === '-' || (c >= '0' && c <= '9')) {
      NUMBER_RE.lastIndex = this.pos;
      const m = NUMBER_RE.exec(this.s);
      if (!m) {
        this.pos++;
        throw this.fail('in a number');
      }
      this.pos += m[0].length;
      return new JSONNumber(m[0]);
    }
    throw this.fail();
  }

  /** @param {string} word @param {JSONTree} v */
  literal(word, v) {
    for (let i = 0; i < word.length; i++) {
      if (this.s[this.pos] !== word[i]) throw this.fail();
      this.pos++;
    }
    return v;
  }

  /** @param {number} depth */
  array(depth) {
    this.pos++; // [
    /** @type {JSONTree[]} */
    const out = [];
    this.space();
    if (this.s[this.pos] === ']') {
      this.pos++;
      return out;
    }
    for (;;) {
      out.push(this.value(depth));
      this.space();
      if (this.pos >= this.s.length) throw this.fail();
      const c = this.s[this.pos];
      if (c === ',') {
        this.pos++;
        continue;
      }
      if (c !== ']') throw this.fail('in an array');
      this.pos++;
      return out;
    }
  }

  /** @param {number} depth */
  object(depth) {
    this.pos++; // {
    /** @type {Map<string, JSONTree>} */
    const out = new Map();
    this.space();
    if (this.s[this.pos] === '}') {
      this.pos++;
      return out;
    }
    for (;;) {
      this.space();
      if (this.s[this.pos] !== '"') throw this.fail('where a member name should be');
      const [name, n] = decodeQuoted(this.s, this.pos, false);
      this.pos += n;
      this.space();
      if (this.s[this.pos] !== ':') throw this.fail("where ':' should be");
      this.pos++;
      // A name given twice keeps its first position and its last value.
      out.set(name, this.value(depth));
      this.space();
      if (this.pos >= this.s.length) throw this.fail();
      const c = this.s[this.pos];
      if (c === ',') {
        this.pos++;
        continue;
      }
      if (c !== '}') throw this.fail('in an object');
      this.pos++;
      return out;
    }
  }
}

/**
 * Decodes the quoted string at s[at] (opening quote included) with JSON's
 * escapes; returns the text and the number of characters used. With path
 * set, the string may be single-quoted and \' is an escape too, as in
 * JSONPath.
 * @param {string} s @param {number} at @param {boolean} path
 * @returns {[string, number]}
 */
function decodeQuoted(s, at, path) {
  const quote = s[at];
  let out = '';
  let i = at + 1;
  let start = i;
  const offset = (j) => utf8Length(s.slice(at, j));
  while (i < s.length) {
    const c = s.charCodeAt(i);
    if (s[i] === quote) return [out + s.slice(start, i), i + 1 - at];
    if (c < 0x20) throw new JSONError(`invalid JSON: control character ${describeChar(s, i)} in a string at offset ${offset(i)}`);
    if (c !== 92) { // backslash
      i++;
      continue;
    }
    out += s.slice(start, i);
    if (i + 1 >= s.length) break;
    const e = s[i + 1];
    let n = 2;
    switch (e) {
      case '"': case '\\': case '/': out += e; break;
      case "'":
        if (!path) throw new JSONError(`invalid JSON: invalid escape '\\'' at offset ${offset(i)}`);
        out += e;
        break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'u': {
        const hi = hex4(s, i + 2);
        if (hi < 0) throw new JSONError(`invalid JSON: invalid \\u escape at offset ${offset(i)}`);
        n = 6;
        if (hi >= 0xd800 && hi < 0xe000) {
          // A surrogate must be a high one followed by a low one.
          const lo = hi < 0xdc00 && s[i + 6] === '\\' && s[i + 7] === 'u' ? hex4(s, i + 8) : -1;
          if (lo < 0xdc00 || lo >= 0xe000) throw new JSONError(`invalid JSON: lone surrogate in a \\u escape at offset ${offset(i)}`);
          out += String.fromCharCode(hi, lo);
          n = 12;
        } else {
          out += String.fromCharCode(hi);
        }
        break;
      }
      default:
        throw new JSONError(`invalid JSON: invalid escape '\\${e}' at offset ${offset(i)}`);
    }
    i += n;
    start = i;
  }
  throw new JSONError('invalid JSON: unexpected end of input');
}

/**
 * The value of the four hex digits at s[i], or -1.
 * @param {string} s @param {number} i
 */
function hex4(s, i) {
  if (i + 4 > s.length) return -1;
  const h = s.slice(i, i + 4);
  return /^[0-9a-fA-F]{4}$/.test(h) ? parseInt(h, 16) : -1;
}

/**
 * Parses JSON text holding exactly one value, with the server's rules:
 * strict syntax, control characters escaped in strings, no lone surrogate
 * escapes, containers nested at most 128 deep; a member name given twice
 * keeps its first position and its last value. Numbers become JSONNumber
 * values holding their literal. Throws a JSONError.
 * @param {string} text
 * @returns {JSONTree}
 */
export function parseJSON(text) {
  const p = new JSONParser(text);
  const v = p.value(0);
  p.space();
  if (p.pos < text.length) throw p.fail('after the value');
  return v;
}

/**
 * A tree as compact JSON text: no white space, numbers as written, strings
 * escaped only where JSON requires (as the server writes documents).
 * @param {JSONTree} v
 * @returns {string}
 */
export function jsonText(v) {
  if (v === null) return 'null';
  switch (typeof v) {
    case 'boolean':
      return v ? 'true' : 'false';
    case 'string':
      // JSON.stringify escapes exactly what the server escapes: '"', '\',
      // and control characters (\b \f \n \r \t, else \u00xx).
      return JSON.stringify(v);
  }
  if (v instanceof JSONNumber) return v.text;
  if (Array.isArray(v)) {
    let out = '[';
    for (let i = 0; i < v.length; i++) out += (i > 0 ? ',' : '') + jsonText(v[i]);
    return out + ']';
  }
  let out = '{';
  for (const [k, x] of v) out += (out.length > 1 ? ',' : '') + JSON.stringify(k) + ':' + jsonText(x);
  return out + '}';
}

/**
 * A deep copy of a tree (strings and numbers are immutable and shared).
 * @param {JSONTree} v
 * @returns {JSONTree}
 */
function cloneJSON(v) {
  if (Array.isArray(v)) return v.map(cloneJSON);
  if (v instanceof Map) {
    const m = new Map();
    for (const [k, x] of v) m.set(k, cloneJSON(x));
    return m;
  }
  return v;
}

/**
 * How many containers deep a value goes: 0 for a scalar.
 * @param {JSONTree} v
 */
function nesting(v) {
  let d = 0;
  if (Array.isArray(v)) for (const x of v) d = Math.max(d, nesting(x));
  else if (v instanceof Map) for (const x of v.values()) d = Math.max(d, nesting(x));
  else return 0;
  return d + 1;
}

/**
 * The type of a value as JTYPE names it: null, boolean, integer (a number
 * written as an integer that fits 64 bits), number, string, array, object.
 * @param {JSONTree} v
 */
export function jsonTypeName(v) {
  if (v === null) return 'null';
  if (typeof v === 'boolean') return 'boolean';
  if (typeof v === 'string') return 'string';
  if (v instanceof JSONNumber) return jsonInt(v.text) === null ? 'number' : 'integer';
  return Array.isArray(v) ? 'array' : 'object';
}

/**
 * A number literal's value when it is written as an integer that fits 64
 * bits, else null.
 * @param {string} lit
 */
function jsonInt(lit) {
  return /^-?\d+$/.test(lit) ? parseInteger(lit) : null;
}

/** @param {JSONTree} v */
function phrase(v) {
  switch (jsonTypeName(v)) {
    case 'null': return 'null';
    case 'boolean': return 'a boolean';
    case 'integer': case 'number': return 'a number';
    case 'string': return 'a string';
    case 'array': return 'an array';
  }
  return 'an object';
}

/**
 * One segment of a path: a member name (key), or, when key is undefined,
 * an array index (negative from the end).
 * @typedef {{key: string|undefined, index: number}} PathSeg
 */

/**
 * @param {string} s @param {string} why
 */
function pathError(s, why) {
  const shown = encoder.encode(s).length > 128 ? decoder.decode(encoder.encode(s).subarray(0, 128)) : s;
  return new JSONError(`invalid JSON path '${shown}': ${why}`);
}

/** @param {number} c a UTF-16 code unit */
function isPathNameChar(c) {
  if (c >= 0x80) return true;
  return c > 0x20 && c !== 0x7f && c !== 46 && c !== 91 && c !== 93 && c !== 42 && c !== 34 && c !== 39 && c !== 92;
}

/**
 * Parses a path in the server's JSONPath subset: $, $.name, $["any
 * name"], $['any name'], $[3], $[-1] (from the end), chained, and the
 * legacy forms "." and ".a.b". Throws a JSONError in the server's words.
 * @param {string} s
 * @returns {PathSeg[]}
 */
export function parseJSONPath(s) {
  /** @type {PathSeg[]} */
  const segs = [];
  let i = 0;
  if (s[0] === '$') i = 1;
  else if (s === '.') return segs;
  else if (s[0] !== '.') throw pathError(s, "it must start with '$'");
  const at = (j) => utf8Length(s.slice(0, j));
  while (i < s.length) {
    if (segs.length === MAX_JSON_DEPTH) throw pathError(s, `more than ${MAX_JSON_DEPTH} segments`);
    if (s[i] === '.') {
      i++;
      const start = i;
      while (i < s.length && isPathNameChar(s.charCodeAt(i))) i++;
      if (i === start) {
        if (s[i] === '.' || s[i] === '*') throw pathError(s, 'wildcards and recursive descent are not supported');
        throw pathError(s, `expected a member name after '.' at offset ${at(start)}`);
      }
      segs.push({ key: s.slice(start, i), index: 0 });
    } else if (s[i] === '[') {
      i++;
      if (i >= s.length) throw pathError(s, "unterminated '['");
      const c = s[i];
      if (c === '"' || c === "'") {
        let r;
        try {
          r = decodeQuoted(s, i, true);
        } catch {
          throw pathError(s, `invalid quoted name at offset ${at(i)}`);
        }
        segs.push({ key: r[0], index: 0 });
        i += r[1];
      } else if (c === '-' || (c >= '0' && c <= '9')) {
        const start = i;
        if (c === '-') i++;
        while (i < s.length && s[i] >= '0' && s[i] <= '9') i++;
        const digits = s.slice(start, i);
        const ds = c === '-' ? digits.slice(1) : digits;
        const n = ds === '' ? NaN : Number(digits);
        // No sign but '-', no leading zeros, no "-0", 32 bits.
        if (!Number.isInteger(n) || n < -(2 ** 31) || n >= 2 ** 31 || (ds[0] === '0' && (ds.length > 1 || c === '-'))) {
          throw pathError(s, `invalid array index '${digits}'`);
        }
        segs.push({ key: undefined, index: n });
      } else {
        throw pathError(s, "wildcards, filters, slices and unions are not supported; expected an index or a quoted name after '['");
      }
      if (s[i] !== ']') throw pathError(s, `expected ']' at offset ${at(i)}`);
      i++;
    } else {
      throw pathError(s, `unexpected ${describeChar(s, i)} at offset ${at(i)}`);
    }
  }
  return segs;
}

/**
 * The canonical form of the first n segments, as the server writes paths:
 * "$", then .name for names made of letters, digits, '_', '-' and
 * non-ASCII characters, ["name"] for any other name, [i] for indexes.
 * @param {PathSeg[]} segs @param {number} [n]
 */
export function formatJSONPath(segs, n = segs.length) {
  let out = '$';
  for (const seg of segs.slice(0, n)) {
    if (seg.key === undefined) out += `[${seg.index}]`;
    else if (/^[A-Za-z0-9_\-\u0080-\uffff]+$/.test(seg.key)) out += '.' + seg.key;
    else out += '[' + JSON.stringify(seg.key) + ']';
  }
  return out;
}

/**
 * The position seg addresses in an array of length n, or -1.
 * @param {PathSeg} seg @param {number} n
 */
function resolveIndex(seg, n) {
  const i = seg.index < 0 ? seg.index + n : seg.index;
  return i >= 0 && i < n ? i : -1;
}

/**
 * The value at the first n segments (all by default), undefined when a
 * member or element on the way is missing. A segment that meets a value
 * that is not the container it needs throws.
 * @param {JSONTree} root @param {PathSeg[]} segs @param {number} [n]
 * @returns {JSONTree|undefined}
 */
export function jsonLookup(root, segs, n = segs.length) {
  let v = root;
  for (let i = 0; i < n; i++) {
    const seg = segs[i];
    if (seg.key === undefined) {
      if (!Array.isArray(v)) throw new JSONError(`'${formatJSONPath(segs, i)}' is ${phrase(v)}, not an array`);
      const k = resolveIndex(seg, v.length);
      if (k < 0) return undefined;
      v = v[k];
    } else {
      if (!(v instanceof Map)) throw new JSONError(`'${formatJSONPath(segs, i)}' is ${phrase(v)}, not an object`);
      if (!v.has(seg.key)) return undefined;
      v = v.get(seg.key);
    }
  }
  return v;
}

/**
 * Where a set or merge at segs (not the root) writes: the parent container
 * and the position in it (a member name, or an array position, -1 when out
 * of range). The parent must exist and be the container the last segment
 * needs.
 * @param {JSONTree} root @param {PathSeg[]} segs
 * @returns {{c: any, at: string|number}}
 */
function jsonSlot(root, segs) {
  const n = segs.length - 1;
  const c = jsonLookup(root, segs, n);
  if (c === undefined) throw new JSONError(`'${formatJSONPath(segs, n)}' does not exist`);
  const last = segs[n];
  if (last.key === undefined) {
    if (!Array.isArray(c)) throw new JSONError(`'${formatJSONPath(segs, n)}' is ${phrase(c)}, not an array`);
    return { c, at: resolveIndex(last, c.length) };
  }
  if (!(c instanceof Map)) throw new JSONError(`'${formatJSONPath(segs, n)}' is ${phrase(c)}, not an object`);
  return { c, at: last.key };
}

/** @param {PathSeg[]} segs @param {number} n */
function outOfRange(segs, n) {
  return new JSONError(`index ${segs[segs.length - 1].index} is out of range for '${formatJSONPath(segs, segs.length - 1)}', an array of length ${n}`);
}

/**
 * RFC 7386's MergePatch(target, patch); takes over patch's nodes and may
 * change target in place. Returns the result.
 * @param {JSONTree} target @param {JSONTree} patch
 * @returns {JSONTree}
 */
export function mergePatch(target, patch) {
  if (!(patch instanceof Map)) return patch;
  const t = target instanceof Map ? target : new Map();
  for (const [name, pv] of patch) {
    if (pv === null) t.delete(name);
    else t.set(name, mergePatch(t.has(name) ? t.get(name) : null, pv));
  }
  return t;
}

/**
 * A json key's document: its tree, and its compact text once asked for.
 */
export class JSONDoc {
  /** @param {JSONTree} root */
  constructor(root) {
    /** @type {JSONTree} */
    this.root = root;
    /** @type {string|null} */
    this._text = null;
  }

  /** The document as compact JSON text (as the server's JGET key answers). */
  text() {
    if (this._text === null) this._text = jsonText(this.root);
    return this._text;
  }

  /** An independent deep copy. */
  clone() {
    const d = new JSONDoc(cloneJSON(this.root));
    d._text = this._text;
    return d;
  }

  /**
   * Stores v at segs, as JSET does: the root is replaced; a member is set
   * in place or appended; an array element must exist. Throws a JSONError
   * (and changes nothing) when the path does not fit.
   * @param {PathSeg[]} segs @param {JSONTree} v
   */
  set(segs, v) {
    if (segs.length + nesting(v) > MAX_JSON_DEPTH) throw new JSONError(NESTING_ERROR);
    if (segs.length === 0) {
      this.root = v;
    } else {
      const { c, at } = jsonSlot(this.root, segs);
      if (typeof at === 'string') c.set(at, v);
      else if (at < 0) throw outOfRange(segs, c.length);
      else c[at] = v;
    }
    this._text = null;
  }

  /**
   * Applies a merge patch at segs, as JMERGE does; returns true when the
   * patch removes the whole document (null at the root). Throws a
   * JSONError (and changes nothing) when the path does not fit.
   * @param {PathSeg[]} segs @param {JSONTree} patch
   */
  merge(segs, patch) {
    if (segs.length + nesting(patch) > MAX_JSON_DEPTH) throw new JSONError(NESTING_ERROR);
    if (segs.length === 0) {
      if (patch === null) return true;
      this.root = mergePatch(this.root, patch);
    } else {
      const { c, at } = jsonSlot(this.root, segs);
      if (typeof at === 'number') {
        if (at < 0) throw outOfRange(segs, c.length);
        c[at] = mergePatch(c[at], patch);
      } else if (patch === null) {
        c.delete(at);
      } else {
        c.set(at, mergePatch(c.has(at) ? c.get(at) : null, patch));
      }
    }
    this._text = null;
    return false;
  }

  /**
   * Removes the value at segs (not the root); reports whether there was
   * one. Throws a JSONError when the path goes through a value that is not
   * the container it needs.
   * @param {PathSeg[]} segs
   */
  delete(segs) {
    const n = segs.length - 1;
    const c = jsonLookup(this.root, segs, n);
    if (c === undefined) return false;
    const last = segs[n];
    if (last.key === undefined) {
      if (!Array.isArray(c)) throw new JSONError(`'${formatJSONPath(segs, n)}' is ${phrase(c)}, not an array`);
      const k = resolveIndex(last, c.length);
      if (k < 0) return false;
      c.splice(k, 1);
    } else {
      if (!(c instanceof Map)) throw new JSONError(`'${formatJSONPath(segs, n)}' is ${phrase(c)}, not an object`);
      if (!c.delete(last.key)) return false;
    }
    this._text = null;
    return true;
  }
}

/**
 * Applies one json effect as the server pushes it (sync/TYPES.md): cmd is
 * JSET (args: path, value), JMERGE (args: path, patch) or JDEL (args: path,
 * or none for the whole key). doc is the key's document, null when it has
 * none, and is changed in place. Returns the document afterwards, null when
 * the effect deleted the key. An effect that does not fit throws a
 * JSONError and changes nothing.
 * @param {JSONDoc|null} doc @param {string} cmd @param {ReadonlyArray<string>} args
 * @returns {JSONDoc|null}
 */
export function applyJSONEffect(doc, cmd, args) {
  if (cmd === 'JDEL' && args.length === 0) return null;
  if ((cmd === 'JDEL' && args.length !== 1) || (cmd !== 'JDEL' && args.length !== 2)) {
    throw new JSONError(`wrong number of arguments for a ${cmd} effect`);
  }
  const segs = parseJSONPath(args[0]);
  if (cmd === 'JDEL') {
    if (segs.length === 0 || !doc) return null;
    doc.delete(segs);
    return doc;
  }
  if (cmd !== 'JSET' && cmd !== 'JMERGE') throw new JSONError(`unknown json effect ${cmd}`);
  const v = parseJSON(args[1]);
  let d = doc;
  if (!d) {
    if (segs.length > 0) throw new JSONError("new documents must be created at the root path '$'");
    if (cmd === 'JMERGE' && v === null) return null;
    d = new JSONDoc(null);
  }
  if (cmd === 'JSET') {
    d.set(segs, v);
    return d;
  }
  return d.merge(segs, v) ? null : d;
}

/**
 * A finite float as the server writes JNUMINCRBY's float results: the
 * shortest digits that round-trip, exponent form below 1e-6 and from 1e21,
 * ".0" added when it would look like an integer.
 * @param {number} f
 */
function formatJSONFloat(f) {
  const s = Object.is(f, -0) ? '-0' : String(f);
  return /[.e]/.test(s) ? s : s + '.0';
}

// ---------------------------------------------------------------------------
// 5b. The store

/**
 * The local replica of the keys a client syncs: strings, hashes, lists,
 * sets, sorted sets and json documents with their expiry times, and the
 * markers of ratelimit keys. It is updated from qstate
 * and keychange frames and by applying the effects the server pushes (the
 * replayable commands it reports for every write).
 */
const ID_MASK = (1n << 64n) - 1n;
const MAX_ID = (1n << 128n) - 1n;

/**
 * Parses a stream id, "ms-seq" or "ms" (sequence 0), as one BigInt
 * (ms << 64 | seq) that orders as ids do; "-" and "+" are the smallest and
 * largest ids. null when malformed.
 * @param {string} s
 * @returns {bigint|null}
 */
export function parseStreamID(s) {
  if (s === '-') return 0n;
  if (s === '+') return MAX_ID;
  const m = /^(\d+)(?:-(\d+))?$/.exec(s);
  if (!m) return null;
  const ms = BigInt(m[1]);
  const seq = m[2] === undefined ? 0n : BigInt(m[2]);
  if (ms > ID_MASK || seq > ID_MASK) return null;
  return (ms << 64n) | seq;
}

/**
 * The text of a stream id parsed by parseStreamID.
 * @param {bigint} n
 */
export function streamIDText(n) {
  return `${n >> 64n}-${n & ID_MASK}`;
}

/**
 * A consumer group of a stream: the last id delivered and its logical read
 * counter (-1 when unknown), the consumers, and the pending entries by id.
 * @typedef {{id: bigint, consumer: string, deliveryTime: number, deliveryCount: number}} StreamPending
 * @typedef {{name: string, lastId: bigint, entriesRead: number, consumers: Set<string>, pending: Map<bigint, StreamPending>}} StreamGroup
 */

/**
 * A stream key's local value: entries in id order (each its id and its
 * fields and values, alternating), the last id added, the entries ever
 * added, the largest id deleted, and the consumer groups. The consumers'
 * seen and idle times are not replicated.
 */
export class StreamValue {
  constructor() {
    /** @type {{id: bigint, fields: string[]}[]} */
    this.entries = [];
    this.lastId = 0n;
    this.entriesAdded = 0;
    this.maxDeletedId = 0n;
    /** @type {Map<string, StreamGroup>} */
    this.groups = new Map();
  }

  /** A deep copy. */
  clone() {
    const c = new StreamValue();
    c.entries = this.entries.map((e) => ({ id: e.id, fields: e.fields.slice() }));
    c.lastId = this.lastId;
    c.entriesAdded = this.entriesAdded;
    c.maxDeletedId = this.maxDeletedId;
    for (const [name, g] of this.groups) {
      const pending = new Map();
      for (const [id, p] of g.pending) pending.set(id, { ...p });
      c.groups.set(name, { name, lastId: g.lastId, entriesRead: g.entriesRead, consumers: new Set(g.consumers), pending });
    }
    return c;
  }

  /**
   * The position of the first entry at or after id.
   * @param {bigint} id
   */
  #search(id) {
    let lo = 0;
    let hi = this.entries.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.entries[mid].id < id) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** @param {bigint} id */
  has(id) {
    const i = this.#search(id);
    return i < this.entries.length && this.entries[i].id === id;
  }

  /**
   * The entries from start to end inclusive (ids as parseStreamID gives
   * them), at most count (0: all), in id order or reversed, as XRANGE and
   * XREVRANGE reply them: [id, [field, value, …]] pairs.
   * @param {bigint} start @param {bigint} end @param {number} count @param {boolean} rev
   * @returns {[string, string[]][]}
   */
  range(start, end, count, rev) {
    let out = this.entries.slice(this.#search(start), this.#search(end + 1n));
    if (rev) out.reverse();
    if (count > 0) out = out.slice(0, count);
    return out.map((e) => [streamIDText(e.id), e.fields.slice()]);
  }

  /**
   * The whole state as plain JavaScript, shaped as XINFO STREAM FULL
   * reports it (idle times aside): counters, entries, and groups sorted by
   * name with their consumers and pending entries.
   */
  info() {
    const groups = [...this.groups.values()].sort((a, b) => compareStrings(a.name, b.name)).map((g) => ({
      name: g.name,
      lastDeliveredId: streamIDText(g.lastId),
      entriesRead: g.entriesRead,
      consumers: [...g.consumers].sort(compareStrings),
      pending: [...g.pending.values()].sort((a, b) => (a.id < b.id ? -1 : 1))
        .map((p) => [streamIDText(p.id), p.consumer, p.deliveryTime, p.deliveryCount]),
    }));
    return {
      length: this.entries.length,
      lastGeneratedId: streamIDText(this.lastId),
      maxDeletedEntryId: streamIDText(this.maxDeletedId),
      entriesAdded: this.entriesAdded,
      entries: this.range(0n, MAX_ID, 0, false),
      groups,
    };
  }

  /**
   * Removes entries from the head as an exact MAXLEN n or MINID id does.
   * @param {{byId: boolean, n: bigint}} t
   */
  trim(t) {
    let n = 0;
    if (t.byId) n = this.#search(t.n);
    else if (BigInt(this.entries.length) > t.n) n = this.entries.length - Number(t.n);
    if (n > 0) this.entries.splice(0, n);
  }

  /** @param {bigint} id */
  delete(id) {
    const i = this.#search(id);
    if (i >= this.entries.length || this.entries[i].id !== id) return;
    this.entries.splice(i, 1);
    if (id > this.maxDeletedId) this.maxDeletedId = id;
  }
}

/** A stream effect that does not fit the local stream or is malformed. */
class StreamEffectError extends Error {}

/**
 * The stream of an entry; null when absent or not arrived. Throws
 * WRONGTYPE for a key of another type.
 * @param {Entry|undefined} e
 * @returns {StreamValue|null}
 */
function streamOf(e) {
  if (!e) return null;
  if (e.type !== 'stream') throw new ReplyError('WRONGTYPE Operation against a key holding the wrong kind of value');
  return e.value;
}

/**
 * XRANGE/XREVRANGE over an entry with Redis's bounds: ids, "-", "+", and
 * "(id" for an exclusive bound.
 * @param {Entry|undefined} e @param {string} start @param {string} end @param {number} count @param {boolean} rev
 * @returns {[string, string[]][]}
 */
function streamRange(e, start, end, count, rev) {
  const bound = (/** @type {string} */ b, /** @type {boolean} */ isEnd) => {
    const excl = b.startsWith('(');
    const text = excl ? b.slice(1) : b;
    let id = parseStreamID(text);
    if (id !== null && isEnd && !excl && !text.includes('-') && text !== '+') id |= ID_MASK;
    if (id === null || (excl && (text === '-' || text === '+'))) throw new ReplyError('ERR Invalid stream ID specified as stream command argument');
    if (excl) id += isEnd ? -1n : 1n;
    return id;
  };
  const lo = bound(start, false);
  const hi = bound(end, true);
  const s = streamOf(e);
  if (!s || lo > hi || lo < 0n || hi > MAX_ID) return [];
  return s.range(lo, hi, count, rev);
}

/** @param {string} s */
function needID(s) {
  const id = parseStreamID(s);
  if (id === null) throw new StreamEffectError(`invalid stream id ${s}`);
  return id;
}

/** @param {string} s */
function needInt(s) {
  if (!/^-?\d+$/.test(s)) throw new StreamEffectError(`invalid integer ${s}`);
  return Number(s);
}

/**
 * Parses MAXLEN|MINID [=] threshold at args[i]; returns the trim and the
 * position after it.
 * @param {ReadonlyArray<string>} args @param {number} i
 * @returns {[{byId: boolean, n: bigint}, number]}
 */
function parseExactTrim(args, i) {
  const verb = (args[i] || '').toUpperCase();
  if (verb !== 'MAXLEN' && verb !== 'MINID') throw new StreamEffectError('malformed trim');
  i++;
  if (args[i] === '=') i++;
  if (i >= args.length) throw new StreamEffectError('malformed trim');
  if (verb === 'MINID') return [{ byId: true, n: needID(args[i]) }, i + 1];
  if (!/^\d+$/.test(args[i])) throw new StreamEffectError('malformed trim');
  return [{ byId: false, n: BigInt(args[i]) }, i + 1];
}

/**
 * Applies a stream effect (sync/TYPES.md) to s, the key's stream (null when
 * it has none): XADD, XTRIM, XDEL, XSETID, XACK, XCLAIM, XGROUP CREATE |
 * SETID | DESTROY | CREATECONSUMER | DELCONSUMER. s changes in place; the
 * result is the stream afterwards (null when there is still none). now is
 * the time of an XCLAIM without TIME. Throws when the effect does not fit s
 * (an XADD id not after the last one, a missing group) or is malformed.
 * @param {StreamValue|null} s @param {ReadonlyArray<string>} args @param {number} now
 * @returns {StreamValue|null}
 */
export function applyStreamEffect(s, args, now) {
  const name = (args[0] || '').toUpperCase();
  switch (name) {
    case 'XADD': {
      let i = 2;
      let noMk = false;
      let trim = null;
      for (;;) {
        const w = (args[i] || '').toUpperCase();
        if (w === 'NOMKSTREAM') {
          noMk = true;
          i++;
        } else if (w === 'MAXLEN' || w === 'MINID') {
          [trim, i] = parseExactTrim(args, i);
        } else break;
      }
      const fields = args.slice(i + 1);
      if (i >= args.length || fields.length === 0 || fields.length % 2 !== 0) throw new StreamEffectError('malformed XADD');
      const id = needID(args[i]);
      if (!s) {
        if (noMk) return null;
        s = new StreamValue();
      }
      if (id <= s.lastId) throw new StreamEffectError(`XADD id ${args[i]} is not after the last id`);
      s.entries.push({ id, fields: fields.slice() });
      s.lastId = id;
      s.entriesAdded++;
      if (trim) s.trim(trim);
      return s;
    }
    case 'XTRIM': {
      const [trim, i] = parseExactTrim(args, 2);
      if (i !== args.length) throw new StreamEffectError('malformed XTRIM');
      if (s) s.trim(trim);
      return s;
    }
    case 'XDEL': {
      const ids = args.slice(2).map(needID);
      if (s) for (const id of ids) s.delete(id);
      return s;
    }
    case 'XSETID': {
      if (!s || args.length < 3 || args.length % 2 === 0) throw new StreamEffectError('malformed XSETID');
      const id = needID(args[2]);
      let added = -1;
      let maxDel = 0n;
      for (let i = 3; i + 1 < args.length; i += 2) {
        const opt = args[i].toUpperCase();
        if (opt === 'ENTRIESADDED') added = needInt(args[i + 1]);
        else if (opt === 'MAXDELETEDID') maxDel = needID(args[i + 1]);
        else throw new StreamEffectError('malformed XSETID');
      }
      s.lastId = id;
      if (added >= 0) s.entriesAdded = added;
      if (maxDel !== 0n) s.maxDeletedId = maxDel;
      return s;
    }
    case 'XACK': {
      if (args.length < 3) throw new StreamEffectError('malformed XACK');
      const ids = args.slice(3).map(needID);
      const g = s && s.groups.get(args[2]);
      if (g) for (const id of ids) g.pending.delete(id);
      return s;
    }
    case 'XCLAIM':
      xclaim(s, args, now);
      return s;
    case 'XGROUP':
      return xgroup(s, args);
  }
  throw new StreamEffectError(`${args[0]} is not a stream effect`);
}

/**
 * XCLAIM key group consumer min-idle id … [IDLE ms] [TIME ms] [RETRYCOUNT
 * n] [FORCE] [JUSTID] [LASTID id], as the server applies it: an id whose
 * entry is gone leaves the pending entries; the others (pending, or with
 * FORCE) become the consumer's with the delivery time and count given.
 * @param {StreamValue|null} s @param {ReadonlyArray<string>} args @param {number} now
 */
function xclaim(s, args, now) {
  if (!s || args.length < 6) throw new StreamEffectError('malformed XCLAIM');
  const g = s.groups.get(args[2]);
  if (!g) throw new StreamEffectError(`no consumer group ${args[2]}`);
  const consumer = args[3];
  const minIdle = needInt(args[4]);
  const ids = [];
  let j = 5;
  for (; j < args.length; j++) {
    const id = parseStreamID(args[j]);
    if (id === null || args[j] === '-' || args[j] === '+') break;
    ids.push(id);
  }
  let delivery = now;
  let retry = -1;
  let force = false;
  let justId = false;
  let lastId = -1n;
  for (; j < args.length; j++) {
    const opt = args[j].toUpperCase();
    if (opt === 'FORCE') force = true;
    else if (opt === 'JUSTID') justId = true;
    else if (j + 1 >= args.length) throw new StreamEffectError('malformed XCLAIM');
    else if (opt === 'IDLE') delivery = now - needInt(args[++j]);
    else if (opt === 'TIME') delivery = needInt(args[++j]);
    else if (opt === 'RETRYCOUNT') retry = needInt(args[++j]);
    else if (opt === 'LASTID') lastId = needID(args[++j]);
    else throw new StreamEffectError('malformed XCLAIM');
  }
  if (lastId > g.lastId) g.lastId = lastId;
  for (const id of ids) {
    let p = g.pending.get(id);
    if (!s.has(id)) {
      g.pending.delete(id);
      continue;
    }
    if (!p) {
      if (!force) continue;
      p = { id, consumer, deliveryTime: 0, deliveryCount: 0 };
      g.pending.set(id, p);
    } else if (minIdle !== 0 && now - p.deliveryTime < minIdle) continue;
    g.consumers.add(consumer);
    p.consumer = consumer;
    p.deliveryTime = delivery;
    if (retry >= 0) p.deliveryCount = retry;
    else if (!justId) p.deliveryCount++;
  }
}

/**
 * XGROUP CREATE | SETID | DESTROY | CREATECONSUMER | DELCONSUMER key group ….
 * @param {StreamValue|null} s @param {ReadonlyArray<string>} args
 * @returns {StreamValue|null}
 */
function xgroup(s, args) {
  if (args.length < 4) throw new StreamEffectError('malformed XGROUP');
  const sub = args[1].toUpperCase();
  const name = args[3];
  const rest = args.slice(4);
  switch (sub) {
    case 'CREATE':
    case 'SETID': {
      if (rest.length < 1) throw new StreamEffectError('malformed XGROUP');
      let mk = false;
      let read = -1;
      for (let i = 1; i < rest.length; i++) {
        const opt = rest[i].toUpperCase();
        if (opt === 'MKSTREAM' && sub === 'CREATE') mk = true;
        else if (opt === 'ENTRIESREAD' && i + 1 < rest.length) read = needInt(rest[++i]);
        else throw new StreamEffectError('malformed XGROUP');
      }
      if (!s) {
        if (!mk) throw new StreamEffectError('XGROUP on a key that holds no stream');
        s = new StreamValue();
      }
      const id = rest[0] === '$' ? s.lastId : needID(rest[0]);
      const g = s.groups.get(name);
      if (sub === 'CREATE') {
        if (g) throw new StreamEffectError(`consumer group ${name} exists`);
        s.groups.set(name, { name, lastId: id, entriesRead: read, consumers: new Set(), pending: new Map() });
      } else {
        if (!g) throw new StreamEffectError(`no consumer group ${name}`);
        g.lastId = id;
        g.entriesRead = read;
      }
      return s;
    }
    case 'DESTROY':
      if (!s || rest.length !== 0) throw new StreamEffectError('malformed XGROUP');
      s.groups.delete(name);
      return s;
    case 'CREATECONSUMER':
    case 'DELCONSUMER': {
      if (!s || rest.length !== 1) throw new StreamEffectError('malformed XGROUP');
      const g = s.groups.get(name);
      if (!g) throw new StreamEffectError(`no consumer group ${name}`);
      const c = rest[0];
      if (sub === 'CREATECONSUMER') {
        g.consumers.add(c);
      } else if (g.consumers.delete(c)) {
        for (const [id, p] of g.pending) if (p.consumer === c) g.pending.delete(id);
      }
      return s;
    }
  }
  throw new StreamEffectError('malformed XGROUP');
}

export class Store {
  /** @param {() => number} [now] the clock for expiry, in Unix ms */
  constructor(now) {
    /** @type {Map<string, Entry>} */
    this.keys = new Map();
    this.now = now || Date.now;
  }

  /**
   * Returns key's entry, or undefined when absent or expired; an expired
   * entry is removed.
   * @param {string} key
   * @returns {Entry|undefined}
   */
  raw(key) {
    const e = this.keys.get(key);
    if (e && e.expireAt > 0 && e.expireAt <= this.now()) {
      this.keys.delete(key);
      return undefined;
    }
    return e;
  }

  /**
   * The live keys matching pattern, sorted.
   * @param {string} [pattern]
   */
  match(pattern = '*') {
    const out = [];
    for (const k of [...this.keys.keys()]) if (this.raw(k) && globMatch(pattern, k)) out.push(k);
    return out.sort(compareStrings);
  }

  /**
   * Sets key from a qstate or keychange value: a bulk string makes it that
   * string, nil deletes it, and a type marker (a simple string) makes it an
   * empty value of that type unless it already has that type: the content
   * travels in the mutation pushes that follow. A keychange's string keeps
   * the expiry known for the key (keepTTL, the default); a qstate's string
   * (keepTTL false) starts without one, since the server follows the qstate
   * with PEXPIREAT key <ms> for every key with a time to live: a string
   * without it has none (it may have been persisted while the client was
   * away). Returns whether the local value changed.
   * @param {string} key
   * @param {RespValue} v
   * @param {boolean} [keepTTL]
   */
  setState(key, v, keepTTL = true) {
    const e = this.raw(key);
    if (v.value === null) {
      if (!e) return false;
      this.keys.delete(key);
      return true;
    }
    if (v.type === '$') {
      if (e && e.type === 'string' && e.value === v.value) {
        if (keepTTL || e.expireAt === 0) return false;
        e.expireAt = 0;
        return true;
      }
      const ne = newEntry('string');
      ne.value = v.value;
      if (e && keepTTL) ne.expireAt = e.expireAt;
      this.keys.set(key, ne);
      return true;
    }
    if (v.type === '+') {
      const marker = v.value;
      if (marker === 'string') return false; // a string always travels as its value
      if (e && e.marker === marker) return false;
      this.keys.set(key, newEntry(marker));
      return true;
    }
    return false;
  }

  /**
   * Deletes the keys matching pattern that listed does not hold; returns them.
   * @param {string} pattern
   * @param {Set<string>} listed
   */
  removeMatching(pattern, listed) {
    const gone = [];
    for (const k of [...this.keys.keys()]) {
      if (!listed.has(k) && globMatch(pattern, k)) {
        this.keys.delete(k);
        gone.push(k);
      }
    }
    return gone.sort(compareStrings);
  }

  /**
   * Removes, without reporting them, the keys keep rejects.
   * @param {(key: string) => boolean} keep
   */
  retain(keep) {
    for (const k of [...this.keys.keys()]) if (!keep(k)) this.keys.delete(k);
  }

  /**
   * Applies one effect (the elements of a mutation push): the replayable
   * command the server reports for a write. Returns the keys whose value
   * changed, or null when the effect is not understood or malformed (it then
   * changes nothing). Where the local value disagrees with the effect's
   * type, the effect wins.
   * @param {ReadonlyArray<string>} args
   * @returns {string[]|null}
   */
  apply(args) {
    if (args.length === 0) return null;
    const name = args[0].toUpperCase();
    if (name === 'XGROUP') return args.length < 3 ? null : this.#stream(args[2], args);
    if (name === 'FLUSHDB' || name === 'FLUSHALL') {
      if (args.length > 2 || (args.length === 2 && !/^(a?sync)$/i.test(args[1]))) return null;
      const all = [...this.keys.keys()].sort(compareStrings);
      this.keys.clear();
      return all;
    }
    if (args.length < 2) return null;
    const key = args[1];
    const rest = args.slice(2);
    let ok;
    switch (name) {
      case 'SET':
        ok = this.#set(key, rest);
        break;
      case 'DEL':
      case 'UNLINK': {
        const changed = [];
        for (const k of args.slice(1)) {
          if (this.raw(k)) {
            this.keys.delete(k);
            changed.push(k);
          }
        }
        return changed;
      }
      case 'PEXPIREAT':
        ok = this.#pexpireat(key, rest);
        break;
      case 'PERSIST': {
        ok = rest.length === 0;
        const e = this.raw(key);
        if (ok && e) e.expireAt = 0;
        break;
      }
      case 'SETBIT':
        ok = this.#setbit(key, rest);
        break;
      case 'HSET':
      case 'HMSET':
        ok = rest.length > 0 && rest.length % 2 === 0;
        if (ok) {
          const e = this.#typed(key, 'hash');
          for (let i = 0; i < rest.length; i += 2) e.value.set(rest[i], rest[i + 1]);
        }
        break;
      case 'HDEL':
        ok = this.#remove(key, 'hash', rest);
        break;
      case 'LPUSH':
      case 'RPUSH':
        ok = rest.length > 0;
        if (ok) {
          const e = this.#typed(key, 'list');
          if (name === 'LPUSH') for (const v of rest) e.value.unshift(v);
          else e.value.push(...rest);
        }
        break;
      case 'LPOP':
      case 'RPOP':
        ok = this.#pop(key, rest, name === 'LPOP');
        break;
      case 'LSET':
        ok = this.#lset(key, rest);
        break;
      case 'LREM':
        ok = this.#lrem(key, rest);
        break;
      case 'LTRIM':
        ok = this.#ltrim(key, rest);
        break;
      case 'LINSERT':
        ok = this.#linsert(key, rest);
        break;
      case 'LMOVE':
      case 'RPOPLPUSH': {
        const dst = this.#lmove(name, key, rest);
        if (dst === null) return null;
        return dst === key ? [key] : [key, dst];
      }
      case 'SADD':
        ok = rest.length > 0;
        if (ok) {
          const e = this.#typed(key, 'set');
          for (const m of rest) e.value.add(m);
        }
        break;
      case 'SREM':
        ok = this.#remove(key, 'set', rest);
        break;
      case 'ZADD':
        ok = this.#zadd(key, rest);
        break;
      case 'ZREM':
        ok = this.#remove(key, 'zset', rest);
        break;
      case 'RENAME':
        if (rest.length !== 1) return null;
        return this.#rename(key, rest[0]);
      case 'COPY':
        return this.#copy(key, rest);
      case 'MOVE': {
        if (rest.length !== 1 || !/^\d+$/.test(rest[0])) return null;
        if (rest[0] === '0' || !this.raw(key)) return [];
        this.keys.delete(key); // moved to a database this client does not sync
        return [key];
      }
      case 'JSET':
      case 'JMERGE':
      case 'JDEL':
        ok = this.#json(key, name, rest);
        break;
      case 'RLSET':
        ok = this.#rlset(key, rest);
        break;
      case 'XADD':
      case 'XTRIM':
      case 'XDEL':
      case 'XSETID':
      case 'XACK':
      case 'XCLAIM':
        return this.#stream(key, args);
      default:
        return null;
    }
    return ok ? [key] : null;
  }

  /**
   * Applies a json effect (JSET key path value, JMERGE key path patch, JDEL
   * key path) with the server's semantics. A key that was json keeps its
   * expiry time; one of another type is replaced. An effect that does not
   * fit the local document is not understood and changes nothing; so is one
   * whose result depends on a document whose content has not arrived (only
   * its marker is known): below the root, or an object patch at the root.
   * @param {string} key @param {string} name @param {string[]} rest
   */
  #json(key, name, rest) {
    const e = this.raw(key);
    const wasJSON = !!e && e.type === 'json';
    const cur = wasJSON ? /** @type {JSONDoc|null} */ (e.value) : null;
    if (wasJSON && !cur && rest.length > 0) {
      try {
        if (parseJSONPath(rest[0]).length > 0) return false;
        if (name === 'JMERGE' && rest.length === 2 && parseJSON(rest[1]) instanceof Map) return false;
      } catch {
        return false;
      }
    }
    let doc;
    try {
      doc = applyJSONEffect(cur, name, rest);
    } catch (err) {
      if (err instanceof JSONError) return false;
      throw err;
    }
    if (!doc) {
      if (e) this.keys.delete(key);
      return true;
    }
    if (wasJSON) {
      e.value = doc;
    } else {
      const ne = newEntry('json');
      ne.value = doc;
      this.keys.set(key, ne);
    }
    return true;
  }

  /**
   * Applies a stream effect with the server's semantics (applyStreamEffect):
   * a key of another type is replaced by the stream the effect creates; one
   * that creates none (XTRIM of a missing key) changes nothing. An effect
   * that does not fit the local stream is not understood (null).
   * @param {string} key @param {ReadonlyArray<string>} args
   * @returns {string[]|null}
   */
  #stream(key, args) {
    const e = this.raw(key);
    const isStream = !!e && e.type === 'stream';
    const cur = isStream ? /** @type {StreamValue|null} */ (e.value) : null;
    let s;
    try {
      s = applyStreamEffect(cur, args, this.now());
    } catch (err) {
      if (err instanceof StreamEffectError) return null;
      throw err;
    }
    if (!s) return [];
    if (isStream) {
      e.value = s;
    } else {
      const ne = newEntry('stream');
      ne.value = s;
      this.keys.set(key, ne);
    }
    return [key];
  }

  /**
   * Applies RLSET key tat interval max_burst [PXAT ms]: the key becomes a
   * ratelimit key with that expiry time (none without PXAT). The store
   * keeps only its marker: the limiter's state is not modeled.
   * @param {string} key @param {string[]} rest
   */
  #rlset(key, rest) {
    if (rest.length !== 3 && !(rest.length === 5 && rest[3].toUpperCase() === 'PXAT')) return false;
    for (const a of rest.slice(0, 3)) if (parseInteger(a) === null) return false;
    let at = 0;
    if (rest.length === 5) {
      const n = parseInteger(rest[4]);
      if (n === null || n <= 0n) return false;
      if (n <= BigInt(this.now())) {
        this.keys.delete(key);
        return true;
      }
      at = Number(n);
    }
    const e = newEntry('ratelimit');
    e.expireAt = at;
    this.keys.set(key, e);
    return true;
  }

  /**
   * The compact JSON text of the value at path in key's document, as the
   * server's JGET key path replies it; null when the key is absent, holds
   * no value there, or has no content yet (only its marker arrived).
   * Throws a ReplyError for a key of another type (WRONGTYPE), a malformed
   * path, or one that goes through a value that is not the container it
   * needs.
   * @param {string} key @param {string} [path]
   * @returns {string|null}
   */
  jget(key, path = '$') {
    return jsonRead(this.raw(key), path, jsonText);
  }

  /**
   * The type of the value at path in key's document, as JTYPE names it
   * (null, boolean, integer, number, string, array, object); null when
   * there is none. Throws as jget does.
   * @param {string} key @param {string} [path]
   * @returns {string|null}
   */
  jtype(key, path = '$') {
    return jsonRead(this.raw(key), path, jsonTypeName);
  }

  /**
   * XRANGE key start end [COUNT count] on the store: [id, [field, value, …]]
   * pairs; start and end are ids, "-", "+", or "(id" for an exclusive
   * bound. Empty when the key is absent or its content has not arrived.
   * Throws a ReplyError for a key of another type or a malformed id.
   * @param {string} key @param {string} [start] @param {string} [end] @param {number} [count]
   */
  xrange(key, start = '-', end = '+', count = 0) {
    return streamRange(this.raw(key), start, end, count, false);
  }

  /**
   * XREVRANGE key end start [COUNT count] on the store, as xrange.
   * @param {string} key @param {string} [end] @param {string} [start] @param {number} [count]
   */
  xrevrange(key, end = '+', start = '-', count = 0) {
    return streamRange(this.raw(key), start, end, count, true);
  }

  /**
   * XLEN key on the store: 0 when absent. Throws a ReplyError for a key of
   * another type.
   * @param {string} key
   */
  xlen(key) {
    const s = streamOf(this.raw(key));
    return s ? s.entries.length : 0;
  }

  /**
   * The stream's whole state (StreamValue.info: XINFO STREAM FULL's
   * content, idle times aside); null when absent or not arrived yet.
   * Throws a ReplyError for a key of another type.
   * @param {string} key
   */
  xinfo(key) {
    const s = streamOf(this.raw(key));
    return s ? s.info() : null;
  }

  /**
   * Returns key's entry of type t: the live one when it has that type, else
   * a new empty one replacing whatever was there.
   * @param {string} key
   * @param {string} t
   */
  #typed(key, t) {
    let e = this.raw(key);
    if (!e || e.type !== t) {
      e = newEntry(t);
      this.keys.set(key, e);
    }
    return e;
  }

  /** Deletes key when its collection became empty. @param {string} key @param {Entry} e */
  #settle(key, e) {
    const v = e.value;
    if ((v instanceof Map || v instanceof Set) ? v.size === 0 : Array.isArray(v) && v.length === 0) this.keys.delete(key);
  }

  /** @param {string} key @param {string[]} rest */
  #set(key, rest) {
    if (rest.length === 0) return false;
    const old = this.raw(key);
    let at = 0;
    let keep = false;
    const opts = rest.slice(1);
    if (opts.length === 1 && opts[0].toUpperCase() === 'KEEPTTL') {
      keep = true;
    } else if (opts.length === 2) {
      const n = Number(opts[1]);
      if (!Number.isInteger(n)) return false;
      switch (opts[0].toUpperCase()) {
        case 'PXAT': at = n; break;
        case 'EXAT': at = n * 1000; break;
        case 'PX': at = this.now() + n; break;
        case 'EX': at = this.now() + n * 1000; break;
        default: return false;
      }
      if (at <= 0) at = 1; // already expired
    } else if (opts.length !== 0) {
      return false;
    }
    const e = newEntry('string');
    e.value = rest[0];
    e.expireAt = keep && old ? old.expireAt : at;
    this.keys.set(key, e);
    return true;
  }

  /** @param {string} key @param {string[]} rest */
  #pexpireat(key, rest) {
    if (rest.length !== 1) return false;
    const at = Number(rest[0]);
    if (!Number.isInteger(at)) return false;
    const e = this.raw(key);
    if (!e) return true;
    if (at <= this.now()) this.keys.delete(key);
    else e.expireAt = at;
    return true;
  }

  /** @param {string} key @param {string[]} rest */
  #setbit(key, rest) {
    if (rest.length !== 2 || !/^\d+$/.test(rest[0]) || (rest[1] !== '0' && rest[1] !== '1')) return false;
    const off = Number(rest[0]);
    if (off >= 2 ** 32) return false;
    let e = this.raw(key);
    if (!e || e.type !== 'string') {
      e = newEntry('string');
      this.keys.set(key, e);
    }
    // Strings are kept as text; SETBIT works on their UTF-8 bytes.
    let bytes = encoder.encode(e.value);
    const i = Math.floor(off / 8);
    if (i >= bytes.length) {
      const grown = new Uint8Array(i + 1);
      grown.set(bytes);
      bytes = grown;
    }
    const mask = 0x80 >> (off % 8);
    if (rest[1] === '1') bytes[i] |= mask;
    else bytes[i] &= ~mask;
    e.value = decoder.decode(bytes);
    return true;
  }

  /** HDEL, SREM, ZREM. @param {string} key @param {string} t @param {string[]} members */
  #remove(key, t, members) {
    if (members.length === 0) return false;
    const e = this.raw(key);
    if (!e || e.type !== t) return true;
    for (const m of members) e.value.delete(m);
    this.#settle(key, e);
    return true;
  }

  /** @param {string} key @param {string[]} rest @param {boolean} left */
  #pop(key, rest, left) {
    let count = 1;
    if (rest.length === 1) {
      if (!/^\d+$/.test(rest[0])) return false;
      count = Number(rest[0]);
    } else if (rest.length > 1) {
      return false;
    }
    const e = this.raw(key);
    if (!e || e.type !== 'list') return true;
    count = Math.min(count, e.value.length);
    if (left) e.value.splice(0, count);
    else e.value.length -= count;
    this.#settle(key, e);
    return true;
  }

  /** @param {string} key @param {string[]} rest */
  #lset(key, rest) {
    if (rest.length !== 2) return false;
    const e = this.raw(key);
    if (!e || e.type !== 'list') return false;
    const i = listIndex(rest[0], e.value.length);
    if (i === null || i < 0 || i >= e.value.length) return false;
    e.value[i] = rest[1];
    return true;
  }

  /** @param {string} key @param {string[]} rest */
  #lrem(key, rest) {
    if (rest.length !== 2 || !/^-?\d+$/.test(rest[0])) return false;
    const count = Number(rest[0]);
    const e = this.raw(key);
    if (!e || e.type !== 'list') return true;
    const v = rest[1];
    let removed = 0;
    if (count >= 0) {
      e.value = e.value.filter((x) => {
        if (x === v && (count === 0 || removed < count)) {
          removed++;
          return false;
        }
        return true;
      });
    } else {
      for (let i = e.value.length - 1; i >= 0 && removed < -count; i--) {
        if (e.value[i] === v) {
          e.value.splice(i, 1);
          removed++;
        }
      }
    }
    this.#settle(key, e);
    return true;
  }

  /** @param {string} key @param {string[]} rest */
  #ltrim(key, rest) {
    if (rest.length !== 2) return false;
    const e = this.raw(key);
    const n = e && e.type === 'list' ? e.value.length : 0;
    let start = listIndex(rest[0], n);
    let stop = listIndex(rest[1], n);
    if (start === null || stop === null) return false;
    if (!e || e.type !== 'list') return true;
    start = Math.max(start, 0);
    if (start > stop || start >= n) {
      this.keys.delete(key);
      return true;
    }
    stop = Math.min(stop, n - 1);
    e.value = e.value.slice(start, stop + 1);
    return true;
  }

  /** @param {string} key @param {string[]} rest */
  #linsert(key, rest) {
    if (rest.length !== 3) return false;
    const where = rest[0].toUpperCase();
    if (where !== 'BEFORE' && where !== 'AFTER') return false;
    const e = this.raw(key);
    if (!e || e.type !== 'list') return true;
    const i = e.value.indexOf(rest[1]);
    if (i >= 0) e.value.splice(where === 'AFTER' ? i + 1 : i, 0, rest[2]);
    return true;
  }

  /**
   * LMOVE src dst LEFT|RIGHT LEFT|RIGHT and RPOPLPUSH src dst; returns dst.
   * @param {string} name @param {string} src @param {string[]} rest
   */
  #lmove(name, src, rest) {
    let fromLeft = false;
    let toLeft = false;
    if (name === 'RPOPLPUSH' && rest.length === 1) {
      toLeft = true;
    } else if (name === 'LMOVE' && rest.length === 3) {
      const a = rest[1].toUpperCase();
      const b = rest[2].toUpperCase();
      if ((a !== 'LEFT' && a !== 'RIGHT') || (b !== 'LEFT' && b !== 'RIGHT')) return null;
      fromLeft = a === 'LEFT';
      toLeft = b === 'LEFT';
    } else {
      return null;
    }
    const dst = rest[0];
    const e = this.raw(src);
    if (!e || e.type !== 'list' || e.value.length === 0) return dst;
    const v = fromLeft ? e.value.shift() : e.value.pop();
    this.#settle(src, e);
    const d = this.#typed(dst, 'list');
    if (toLeft) d.value.unshift(v);
    else d.value.push(v);
    return dst;
  }

  /** ZADD key score member [score member …] (the effect form). @param {string} key @param {string[]} rest */
  #zadd(key, rest) {
    if (rest.length === 0 || rest.length % 2 !== 0) return false;
    const scores = [];
    for (let i = 0; i < rest.length; i += 2) {
      const f = parseScore(rest[i]);
      if (f === null) return false;
      scores.push(f);
    }
    const e = this.#typed(key, 'zset');
    scores.forEach((f, i) => e.value.set(rest[2 * i + 1], f));
    return true;
  }

  /** @param {string} src @param {string} dst */
  #rename(src, dst) {
    if (src === dst) return [];
    const e = this.raw(src);
    if (!e) {
      // A source this store does not hold leaves dst unknown: drop it
      // rather than keep it stale.
      if (!this.raw(dst)) return [];
      this.keys.delete(dst);
      return [dst];
    }
    this.keys.delete(src);
    this.keys.set(dst, e);
    return [src, dst];
  }

  /** COPY src dst [DB n] [REPLACE]. @param {string} src @param {string[]} rest */
  #copy(src, rest) {
    if (rest.length === 0) return null;
    const dst = rest[0];
    let replace = false;
    let db = 0;
    for (let i = 1; i < rest.length; i++) {
      const o = rest[i].toUpperCase();
      if (o === 'REPLACE') replace = true;
      else if (o === 'DB' && i + 1 < rest.length && /^\d+$/.test(rest[i + 1])) db = Number(rest[++i]);
      else return null;
    }
    if (db !== 0) return [];
    const e = this.raw(src);
    if (!e || (!replace && this.raw(dst))) return [];
    this.keys.set(dst, /** @type {Entry} */ (cloneEntry(e)));
    return [dst];
  }
}

/**
 * Reads the value at path in a json entry: f(value), or null when the
 * entry is absent, has no content yet, or holds no value at path. Throws a
 * ReplyError for an entry of another type or a path that does not fit.
 * @template T
 * @param {Entry|undefined} e @param {string} path @param {(v: JSONTree) => T}
 * f
 * @returns {T|null}
 */
function jsonRead(e, path, f) {
  if (!e) return null;
  if (e.type !== 'json') throw new ReplyError(WRONGTYPE);
  try {
    const segs = parseJSONPath(path);
    if (!e.value) return null;
    if (segs.length === 0) return f === jsonText ? /** @type {any} */ (e.value.text()) : f(e.value.root);
    const v = jsonLookup(e.value.root, segs);
    return v === undefined ? null : f(v);
  } catch (err) {
    if (err instanceof JSONError) throw new ReplyError('ERR ' + err.message);
    throw err;
  }
}

/**
 * The keys a write request touches, by the key positions of the server's
 * command list; for a command whose keys move or that the list does not
 * have, its first argument.
 * @param {ReadonlyArray<string>} args
 * @returns {string[]}
 */
export function keysOf(args) {
  const c = commandInfo(args);
  if (!c || !c.keys) return args.length > 1 ? [args[1]] : [];
  const [first, last, step] = c.keys;
  const end = last < 0 ? args.length + last : Math.min(last, args.length - 1);
  const out = [];
  for (let i = first; i <= end; i += step) out.push(args[i]);
  return out;
}

/**
 * The effects of a write request on st: the effect-form commands (as the
 * server pushes them) that reproduce what the request does. With reply
 * undefined it predicts them from the local state (the optimistic
 * application); with the server's reply it derives them from the reply
 * where the reply tells (INCR's new value, SPOP's members, whether a
 * conditional write happened). Returns null when the request is not one the
 * client models, or would fail.
 * @param {Store} st
 * @param {ReadonlyArray<string>} args
 * @param {RespValue} [reply]
 * @returns {string[][]|null}
 */
export function effectsOf(st, args, reply) {
  if (args.length < 2) return null;
  const name = args[0].toUpperCase();
  const key = args[1];
  const known = reply !== undefined;
  const nil = known && reply.value === null;
  const e = st.raw(key);
  const typeIs = (t) => !e || e.type === t;
  const intReply = known && reply.type === ':' ? String(reply.value) : null;
  switch (name) {
    case 'SET': {
      if (args.length < 3) return null;
      let nx = false;
      let xx = false;
      let get = false;
      let ttl = null;
      for (let i = 3; i < args.length; i++) {
        const o = args[i].toUpperCase();
        if (o === 'NX') nx = true;
        else if (o === 'XX') xx = true;
        else if (o === 'GET') get = true;
        else if (o === 'KEEPTTL') ttl = ['KEEPTTL'];
        else if ((o === 'EX' || o === 'PX' || o === 'EXAT' || o === 'PXAT') && i + 1 < args.length) {
          const n = Number(args[++i]);
          if (!Number.isInteger(n) || n <= 0) return null;
          const at = o === 'EX' ? st.now() + n * 1000 : o === 'PX' ? st.now() + n : o === 'EXAT' ? n * 1000 : n;
          ttl = ['PXAT', String(at)];
        } else return null;
      }
      if (known && !get && nil) return []; // NX or XX said no
      if (nx && st.raw(key)) return [];
      if (xx && !st.raw(key)) return [];
      return [['SET', key, args[2], ...(ttl || [])]];
    }
    case 'SETNX':
      if (args.length !== 3) return null;
      if (known ? intReply !== '1' : !!e) return [];
      return [['SET', key, args[2]]];
    case 'SETEX':
    case 'PSETEX': {
      if (args.length !== 4) return null;
      const n = Number(args[2]);
      if (!Number.isInteger(n) || n <= 0) return null;
      return [['SET', key, args[3], 'PXAT', String(st.now() + (name === 'SETEX' ? n * 1000 : n))]];
    }
    case 'GETSET':
      return args.length === 3 && typeIs('string') ? [['SET', key, args[2]]] : null;
    case 'GETDEL':
      return args.length === 2 && typeIs('string') ? [['DEL', key]] : null;
    case 'MSET':
    case 'MSETNX': {
      if (args.length < 3 || args.length % 2 === 0) return null;
      const out = [];
      for (let i = 1; i < args.length; i += 2) out.push(['SET', args[i], args[i + 1]]);
      if (name === 'MSETNX') {
        if (known ? intReply !== '1' : out.some((x) => st.raw(x[1]))) return [];
      }
      return out;
    }
    case 'INCR':
    case 'DECR':
    case 'INCRBY':
    case 'DECRBY': {
      if (intReply !== null) return [['SET', key, intReply, 'KEEPTTL']];
      if (known) return null;
      if (args.length !== (name === 'INCR' || name === 'DECR' ? 2 : 3)) return null;
      if (!typeIs('string')) return null;
      const cur = e ? parseInteger(e.value) : 0n;
      const by = name === 'INCR' ? 1n : name === 'DECR' ? -1n : parseInteger(args[2]);
      if (cur === null || by === null) return null;
      const n = name === 'DECRBY' ? cur - by : cur + by;
      if (n > 9223372036854775807n || n < -9223372036854775808n) return null;
      return [['SET', key, n.toString(), 'KEEPTTL']];
    }
    case 'INCRBYFLOAT': {
      if (known) return reply.type === '$' && !nil ? [['SET', key, reply.value, 'KEEPTTL']] : null;
      if (args.length !== 3 || !typeIs('string')) return null;
      const cur = e ? Number(e.value) : 0;
      const by = Number(args[2]);
      if (!Number.isFinite(cur) || !Number.isFinite(by)) return null;
      return [['SET', key, String(cur + by), 'KEEPTTL']];
    }
    case 'APPEND':
      if (args.length !== 3 || !typeIs('string')) return null;
      return [['SET', key, (e ? e.value : '') + args[2], 'KEEPTTL']];
    case 'DEL':
    case 'UNLINK':
      return [['DEL', ...args.slice(1)]];
    case 'EXPIRE':
    case 'PEXPIRE':
    case 'EXPIREAT':
    case 'PEXPIREAT': {
      if (args.length < 3) return null;
      const n = Number(args[2]);
      if (!Number.isInteger(n)) return null;
      if (known && intReply !== '1') return [];
      if (!e) return [];
      let at = n;
      if (name === 'EXPIRE') at = st.now() + n * 1000;
      else if (name === 'PEXPIRE') at = st.now() + n;
      else if (name === 'EXPIREAT') at = n * 1000;
      if (!known && args.length > 3) {
        const cur = e.expireAt;
        for (const o of args.slice(3).map((x) => x.toUpperCase())) {
          if ((o === 'NX' && cur) || (o === 'XX' && !cur) || (o === 'GT' && (!cur || at <= cur)) || (o === 'LT' && cur && at >= cur)) return [];
        }
      }
      return at <= st.now() ? [['DEL', key]] : [['PEXPIREAT', key, String(at)]];
    }
    case 'PERSIST':
      return args.length === 2 ? [['PERSIST', key]] : null;
    case 'HSET':
    case 'HMSET':
      if (args.length < 4 || args.length % 2 !== 0 || !typeIs('hash')) return null;
      return [['HSET', ...args.slice(1)]];
    case 'HSETNX':
      if (args.length !== 4 || !typeIs('hash')) return null;
      if (known ? intReply !== '1' : e && e.value.has(args[2])) return [];
      return [['HSET', key, args[2], args[3]]];
    case 'HDEL':
      if (args.length < 3 || !typeIs('hash')) return null;
      return [['HDEL', ...args.slice(1)]];
    case 'HINCRBY':
    case 'HINCRBYFLOAT': {
      if (args.length !== 4) return null;
      if (known) {
        const v = intReply !== null ? intReply : reply.type === '$' && !nil ? reply.value : null;
        return v === null ? null : [['HSET', key, args[2], v]];
      }
      if (!typeIs('hash')) return null;
      const raw = e ? e.value.get(args[2]) : undefined;
      if (name === 'HINCRBY') {
        const cur = raw === undefined ? 0n : parseInteger(raw);
        const by = parseInteger(args[3]);
        if (cur === null || by === null) return null;
        return [['HSET', key, args[2], (cur + by).toString()]];
      }
      const cur = raw === undefined ? 0 : Number(raw);
      const by = Number(args[3]);
      if (!Number.isFinite(cur) || !Number.isFinite(by)) return null;
      return [['HSET', key, args[2], String(cur + by)]];
    }
    case 'LPUSH':
    case 'RPUSH':
      if (args.length < 3 || !typeIs('list')) return null;
      return [[name, ...args.slice(1)]];
    case 'LPUSHX':
    case 'RPUSHX':
      if (args.length < 3 || !typeIs('list')) return null;
      if (known ? intReply === '0' : !e) return [];
      return [[name === 'LPUSHX' ? 'LPUSH' : 'RPUSH', ...args.slice(1)]];
    case 'LPOP':
    case 'RPOP': {
      if (args.length > 3 || !typeIs('list')) return null;
      if (!known) return [[name, ...args.slice(1)]];
      if (nil) return [];
      if (reply.type === '*') return [[name, key, String(reply.value.length)]];
      return [[name, key]];
    }
    case 'LSET':
    case 'LTRIM':
    case 'LREM':
    case 'LINSERT':
      if (!typeIs('list')) return null;
      if (name === 'LSET' && !e) return null;
      return [[name, ...args.slice(1)]];
    case 'LMOVE':
    case 'RPOPLPUSH':
      if (nil) return [];
      return [[name, ...args.slice(1)]];
    case 'SADD':
    case 'SREM':
      if (args.length < 3 || !typeIs('set')) return null;
      return [[name, ...args.slice(1)]];
    case 'SPOP': {
      if (!known) return null; // which members go is the server's choice
      const members = reply.type === '*' || reply.type === '~' ? elemStrings(reply) : reply.type === '$' && !nil ? [reply.value] : [];
      if (members === null) return null;
      return members.length ? [['SREM', key, ...members]] : [];
    }
    case 'SMOVE': {
      if (args.length !== 4) return null;
      if (known ? intReply !== '1' : !(e && e.type === 'set' && e.value.has(args[3]))) return [];
      return [['SREM', key, args[3]], ['SADD', args[2], args[3]]];
    }
    case 'ZADD':
      return zaddEffects(st, args, reply);
    case 'ZINCRBY': {
      if (args.length !== 4) return null;
      if (known) {
        if (reply.type === '$' && !nil) return [['ZADD', key, reply.value, args[3]]];
        if (reply.type === ',') return [['ZADD', key, formatScore(reply.value), args[3]]];
        return null;
      }
      if (!typeIs('zset')) return null;
      const by = parseScore(args[2]);
      if (by === null) return null;
      const cur = e ? e.value.get(args[3]) || 0 : 0;
      return [['ZADD', key, formatScore(cur + by), args[3]]];
    }
    case 'ZREM':
      if (args.length < 3 || !typeIs('zset')) return null;
      return [['ZREM', ...args.slice(1)]];
    case 'RENAME':
      if (args.length !== 3 || (!known && !e)) return null;
      return [['RENAME', key, args[2]]];
    case 'RENAMENX':
      if (args.length !== 3) return null;
      if (known ? intReply !== '1' : !e || st.raw(args[2])) return [];
      return [['RENAME', key, args[2]]];
    case 'COPY':
      if (known && intReply !== '1') return [];
      return [['COPY', ...args.slice(1)]];
    case 'SETBIT':
      return [['SETBIT', ...args.slice(1)]];
    case 'XADD':
      // The id and the trim are the server's: known from the reply only.
      if ((e && e.type !== 'stream') || !known || (reply.type !== '$' && !nil)) return null;
      if (nil) return []; // NOMKSTREAM on a missing key
      return xaddEffect(args, String(reply.value));
    case 'XDEL':
    case 'XACK':
      if ((e && e.type !== 'stream') || intReply === null) return null;
      return intReply === '0' ? [] : [args.slice()];
    case 'JSET':
    case 'JMERGE':
    case 'JDEL':
    case 'JNUMINCRBY':
    case 'JARRAPPEND':
      if (e && e.type !== 'json') return null;
      try {
        return jsonEffects(st, name, args, reply);
      } catch (err) {
        if (err instanceof JSONError) return null; // the server will refuse it
        throw err;
      }
  }
  return null;
}

/**
 * The effect of XADD args that added the entry id: the command with the id
 * the server chose; null when its trim was approximate or limited (what it
 * removed depends on the server's nodes).
 * @param {ReadonlyArray<string>} args @param {string} id
 * @returns {string[][]|null}
 */
function xaddEffect(args, id) {
  for (let i = 2; i < args.length; i++) {
    const w = args[i].toUpperCase();
    if (w === 'NOMKSTREAM') continue;
    if (w === 'MAXLEN' || w === 'MINID') {
      if (i + 2 >= args.length || args[i + 1] === '~') return null;
      if (args[i + 1] === '=') i++;
      i++;
      if (i + 1 < args.length && args[i + 1].toUpperCase() === 'LIMIT') return null;
      continue;
    }
    const out = args.slice();
    out[i] = id;
    return [out];
  }
  return null;
}

/**
 * The effects of a json write (JSET, JMERGE, JDEL, JNUMINCRBY, JARRAPPEND)
 * on a key that is json or absent, as effectsOf returns them: JSET (without
 * its NX/XX), JMERGE and JDEL are their own effect when they did something;
 * JNUMINCRBY and JARRAPPEND become the JSET of the value they produced, as
 * the server pushes them. Throws a JSONError for a write that would fail.
 * @param {Store} st @param {string} name @param {ReadonlyArray<string>} args
 * @param {RespValue} [reply]
 * @returns {string[][]|null}
 */
function jsonEffects(st, name, args, reply) {
  const key = args[1];
  const known = reply !== undefined;
  const e = st.raw(key);
  const doc = e ? /** @type {JSONDoc|null} */ (e.value) : null;
  // The value at segs in the local document: undefined when absent, and
  // a JSONError when there is no document to look in (only the marker is
  // known) or the path does not fit.
  const at = (/** @type {PathSeg[]} */ segs) => {
    if (e && !doc) throw new JSONError('document content not known yet');
    return doc ? jsonLookup(doc.root, segs) : undefined;
  };
  switch (name) {
    case 'JSET': {
      if (args.length !== 4 && args.length !== 5) return null;
      const cond = args.length === 5 ? args[4].toUpperCase() : '';
      if (cond !== '' && cond !== 'NX' && cond !== 'XX') return null;
      const effect = [['JSET', key, args[2], args[3]]];
      if (known) return reply.type === '+' ? effect : reply.value === null ? [] : null;
      const segs = parseJSONPath(args[2]);
      const v = parseJSON(args[3]);
      if (!e) {
        if (segs.length > 0) throw new JSONError("new documents must be created at the root path '$'");
        return cond === 'XX' ? [] : effect;
      }
      if (segs.length + nesting(v) > MAX_JSON_DEPTH) throw new JSONError(NESTING_ERROR);
      if (segs.length === 0) return cond === 'NX' ? [] : effect;
      at([]);
      const { c, at: pos } = jsonSlot(/** @type {JSONDoc} */ (doc).root, segs);
      const exists = typeof pos === 'string' ? c.has(pos) : pos >= 0;
      if ((cond === 'NX' && exists) || (cond === 'XX' && !exists)) return [];
      if (pos === -1) throw outOfRange(segs, c.length);
      return effect;
    }
    case 'JMERGE': {
      if (args.length !== 4) return null;
      const effect = [['JMERGE', key, args[2], args[3]]];
      if (known) return reply.type === '+' ? effect : null;
      const segs = parseJSONPath(args[2]);
      const patch = parseJSON(args[3]);
      if (!e) {
        if (segs.length > 0) throw new JSONError("new documents must be created at the root path '$'");
        return effect;
      }
      if (segs.length + nesting(patch) > MAX_JSON_DEPTH) throw new JSONError(NESTING_ERROR);
      if (patch instanceof Map) at([]);
      if (segs.length > 0) {
        at([]);
        const { c, at: pos } = jsonSlot(/** @type {JSONDoc} */ (doc).root, segs);
        if (pos === -1) throw outOfRange(segs, c.length);
      }
      return effect;
    }
    case 'JDEL': {
      if (args.length > 3) return null;
      const path = args.length === 3 ? args[2] : '$';
      const effect = [['JDEL', key, path]];
      if (known) return reply.type === ':' ? (Number(reply.value) > 0 ? effect : []) : null;
      const segs = parseJSONPath(path);
      if (!e) return [];
      if (segs.length === 0) return effect;
      return at(segs) === undefined ? [] : effect;
    }
    case 'JNUMINCRBY': {
      if (args.length !== 4) return null;
      if (known) return reply.type === '$' && reply.value !== null ? [['JSET', key, args[2], reply.value]] : null;
      const segs = parseJSONPath(args[2]);
      NUMBER_RE.lastIndex = 0;
      const m = NUMBER_RE.exec(args[3]);
      if (!m || m[0] !== args[3] || !e) return null;
      const v = at(segs);
      if (!(v instanceof JSONNumber)) return null;
      const a = jsonInt(v.text);
      const b = jsonInt(args[3]);
      let out;
      if (a !== null && b !== null) {
        const sum = a + b;
        if (sum > 9223372036854775807n || sum < -9223372036854775808n) return null;
        out = sum.toString();
      } else {
        const sum = Number(v.text) + Number(args[3]);
        if (!Number.isFinite(sum)) return null;
        out = formatJSONFloat(sum);
      }
      return [['JSET', key, args[2], out]];
    }
    case 'JARRAPPEND': {
      if (args.length < 4) return null;
      if (known && reply.type !== ':') return null;
      const segs = parseJSONPath(args[2]);
      const vals = args.slice(3).map(parseJSON);
      if (!e) return null;
      const arr = at(segs);
      if (!Array.isArray(arr)) return null;
      // From the reply (the new length), only when the local array is the
      // one the server appended to.
      if (known && Number(reply.value) !== arr.length + vals.length) return null;
      if (vals.some((x) => segs.length + 1 + nesting(x) > MAX_JSON_DEPTH)) return null;
      return [['JSET', key, args[2], jsonText([...arr, ...vals])]];
    }
  }
  return null;
}

/**
 * ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member … as effects.
 * @param {Store} st
 * @param {ReadonlyArray<string>} args
 * @param {RespValue} [reply]
 */
function zaddEffects(st, args, reply) {
  const key = args[1];
  const flags = new Set();
  let i = 2;
  for (; i < args.length; i++) {
    const o = args[i].toUpperCase();
    if (!['NX', 'XX', 'GT', 'LT', 'CH', 'INCR'].includes(o)) break;
    flags.add(o);
  }
  const pairs = args.slice(i);
  if (pairs.length === 0 || pairs.length % 2 !== 0) return null;
  const e = st.raw(key);
  if (e && e.type !== 'zset') return null;
  if (flags.has('INCR')) {
    if (pairs.length !== 2) return null;
    if (reply !== undefined) {
      if (reply.value === null) return [];
      const s = reply.type === ',' ? formatScore(reply.value) : reply.value;
      return [['ZADD', key, s, pairs[1]]];
    }
  } else if (reply !== undefined && !flags.has('NX') && !flags.has('XX') && !flags.has('GT') && !flags.has('LT')) {
    return [['ZADD', key, ...pairs]];
  }
  const out = [];
  for (let j = 0; j < pairs.length; j += 2) {
    const by = parseScore(pairs[j]);
    if (by === null) return null;
    const m = pairs[j + 1];
    const cur = e ? e.value.get(m) : undefined;
    const next = flags.has('INCR') ? (cur || 0) + by : by;
    if (flags.has('NX') && cur !== undefined) continue;
    if (flags.has('XX') && cur === undefined) continue;
    if (cur !== undefined && flags.has('GT') && next <= cur) continue;
    if (cur !== undefined && flags.has('LT') && next >= cur) continue;
    out.push(formatScore(next), m);
  }
  return out.length ? [['ZADD', key, ...out]] : [];
}

// ---------------------------------------------------------------------------
// 6. Persistence

/**
 * A saved outbox write: key is [slot, epoch, counter] (IndexedDB orders it),
 * id the wire id in decimal, args the wrapped command.
 * @typedef {{key: [number, number, number], clientId: string, id: string, args: string[]}} SavedWrite
 */

/**
 * An identity slot: the client id, and the last session epoch used with it.
 * @typedef {{slot: number, clientId: string, epoch: number}} Identity
 */

/** @param {IDBRequest|IDBOpenDBRequest} req */
function request(req) {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

/** @param {IDBTransaction} tx */
function done(tx) {
  return new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve(undefined);
    tx.onerror = () => reject(tx.error);
    tx.onabort = () => reject(tx.error || new Error('recached-edge: IndexedDB transaction aborted'));
  });
}

/**
 * Creates the stores db lacks (in an upgrade transaction); never drops one.
 * @param {IDBDatabase} db
 */
export function upgradeSchema(db) {
  for (const s of STORES) {
    if (!db.objectStoreNames.contains(s.name)) db.createObjectStore(s.name, { keyPath: s.keyPath });
  }
}

/**
 * Opens (or creates) the client's database: at its current version when it
 * already has every store, else one version up with the missing stores
 * created. A database that a newer client upgraded opens as it is.
 * @param {IDBFactory} idb
 * @param {string} name
 * @returns {Promise<IDBDatabase>}
 */
export async function openDatabase(idb, name) {
  const missing = (db) => STORES.some((s) => !db.objectStoreNames.contains(s.name));
  let db = await openAt(idb, name, undefined);
  if (!missing(db) && db.version >= SCHEMA_VERSION) return db;
  const version = Math.max(SCHEMA_VERSION, db.version + (missing(db) ? 1 : 0));
  db.close();
  db = await openAt(idb, name, version);
  return db;
}

/**
 * @param {IDBFactory} idb @param {string} name @param {number|undefined} version
 * @returns {Promise<IDBDatabase>}
 */
function openAt(idb, name, version) {
  return new Promise((resolve, reject) => {
    const req = version === undefined ? idb.open(name) : idb.open(name, version);
    req.onupgradeneeded = () => upgradeSchema(req.result);
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
    req.onblocked = () => reject(new Error(`recached-edge: IndexedDB database ${name} is held open at an older version by another tab`));
  });
}

/**
 * Storage in IndexedDB: identities by slot and the saved outbox writes.
 */
export class IDBStorage {
  /**
   * @param {IDBFactory} idb
   * @param {string} name the database name
   * @param {IDBDatabase} db
   */
  constructor(idb, name, db) {
    this.idb = idb;
    this.name = name;
    /** @type {IDBDatabase|null} */
    this.db = null;
    this._adopt(db);
  }

  /**
   * @param {IDBFactory} idb
   * @param {string} name the database name
   */
  static async open(idb, name) {
    return new IDBStorage(idb, name, await openDatabase(idb, name));
  }

  /** @param {IDBDatabase} db */
  _adopt(db) {
    this.db = db;
    // Another tab wants a newer schema: let it have the database; the next
    // use opens it again.
    db.onversionchange = () => {
      db.close();
      if (this.db === db) this.db = null;
    };
  }

  /**
   * A transaction on the database, opening it again if another tab's
   * upgrade closed it.
   * @param {string[]} stores
   * @param {IDBTransactionMode} mode
   * @returns {Promise<IDBTransaction>}
   */
  async _tx(stores, mode) {
    if (!this.db) this._adopt(await openDatabase(this.idb, this.name));
    return /** @type {IDBDatabase} */ (this.db).transaction(stores, mode, mode === 'readwrite' ? { durability: 'strict' } : undefined);
  }

  /**
   * Loads the slot's identity (creating its client id on first use), bumps
   * its epoch and saves it, in one transaction, before any wire id of the
   * new epoch is used.
   * @param {number} slot
   * @param {() => string} newId
   * @returns {Promise<Identity>}
   */
  async claim(slot, newId) {
    const tx = await this._tx(['identity'], 'readwrite');
    const store = tx.objectStore('identity');
    /** @type {Identity|undefined} */
    let out;
    let failure;
    const req = store.get(slot);
    req.onsuccess = () => {
      const cur = req.result;
      const epoch = cur ? cur.epoch : 0;
      if (epoch >= 2 ** 32 - 1) {
        failure = new Error('recached-edge: session epochs exhausted for this client id');
        tx.abort();
        return;
      }
      out = { slot, clientId: cur ? cur.clientId : newId(), epoch: epoch + 1 };
      store.put(out);
    };
    return done(tx).then(() => /** @type {Identity} */ (out), (err) => Promise.reject(failure || err));
  }

  /**
   * The identity of a slot, or undefined.
   * @param {number} slot
   * @returns {Promise<Identity|undefined>}
   */
  async identity(slot) {
    const tx = await this._tx(['identity'], 'readonly');
    return request(tx.objectStore('identity').get(slot));
  }

  /**
   * Every saved write, in key order.
   * @returns {Promise<SavedWrite[]>}
   */
  async writes() {
    const tx = await this._tx(['outbox'], 'readonly');
    const all = await request(tx.objectStore('outbox').getAll());
    return all.sort(compareSaved);
  }

  /**
   * Saves and deletes writes in one transaction.
   * @param {Array<{key: [number, number, number], write: SavedWrite|null}>} ops
   */
  async save(ops) {
    const tx = await this._tx(['outbox'], 'readwrite');
    const store = tx.objectStore('outbox');
    for (const op of ops) {
      if (op.write) store.put(op.write);
      else store.delete(op.key);
    }
    return done(tx);
  }

  close() {
    if (this.db) this.db.close();
    this.db = null;
  }
}

/**
 * Storage in memory, for environments without IndexedDB: no continuity
 * across page loads.
 */
export class MemoryStorage {
  constructor() {
    /** @type {Map<number, Identity>} */
    this.ids = new Map();
    /** @type {Map<string, SavedWrite>} */
    this.saved = new Map();
  }

  /** @param {number} slot @param {() => string} newId */
  async claim(slot, newId) {
    const cur = this.ids.get(slot);
    const id = { slot, clientId: cur ? cur.clientId : newId(), epoch: (cur ? cur.epoch : 0) + 1 };
    this.ids.set(slot, id);
    return { ...id };
  }

  /** @param {number} slot */
  async identity(slot) {
    const id = this.ids.get(slot);
    return id ? { ...id } : undefined;
  }

  async writes() {
    return [...this.saved.values()].map((w) => ({ ...w, args: w.args.slice() })).sort(compareSaved);
  }

  /** @param {Array<{key: [number, number, number], write: SavedWrite|null}>} ops */
  async save(ops) {
    for (const op of ops) {
      const k = op.key.join(',');
      if (op.write) this.saved.set(k, { ...op.write, args: op.write.args.slice() });
      else this.saved.delete(k);
    }
  }

  close() {}
}

/** @param {SavedWrite} a @param {SavedWrite} b */
function compareSaved(a, b) {
  for (let i = 0; i < 3; i++) if (a.key[i] !== b.key[i]) return a.key[i] - b.key[i];
  return 0;
}

/**
 * Takes the Web Lock name now if it is free, and holds it until the
 * returned release function is called; null when another context holds it.
 * With wait, waits for the lock instead (until signal aborts: null).
 * @param {LockManager} locks
 * @param {string} name
 * @param {{wait?: boolean, signal?: AbortSignal}} [opts]
 * @returns {Promise<(() => void)|null>}
 */
function takeLock(locks, name, opts = {}) {
  return new Promise((resolve) => {
    const options = opts.wait ? { signal: opts.signal } : { ifAvailable: true };
    locks.request(name, options, (lock) => {
      if (!lock) {
        resolve(null);
        return undefined;
      }
      return new Promise((release) => resolve(() => release(undefined)));
    }).catch(() => resolve(null));
  });
}

// ---------------------------------------------------------------------------
// 7. The client

/**
 * Connection states: "connecting" (dialing and establishing the session),
 * "open" (established; writes flow), "offline" (the connection failed or
 * dropped, or the page went offline; the client retries after retryIn ms
 * unless paused), "closed" (close() was called, or the server refused the
 * session's credentials: reason says why, and nothing is retried until
 * setToken, setPassword or reconnect).
 * @typedef {'connecting'|'open'|'offline'|'closed'} State
 */

/**
 * @typedef {object} StateEvent
 * @property {State} state
 * @property {string} [reason] why the client is offline or closed: the
 *   server's refusal ("NOPERM invalid token"), the socket's close code and
 *   reason, or "offline" when the application paused the client
 * @property {number} [retryIn] the delay before the next attempt, in ms
 * @property {number} attempt connection attempts since the last open session
 */

/**
 * @typedef {object} ConnectOptions
 * @property {string} [token] sent as SYNC TOKEN <token> (strict scoping)
 * @property {string[]} [patterns] sent as SYNC <pattern…> (open mode) when no token
 * @property {string} [password] sent with AUTH first on every connection
 * @property {string} [username] AUTH's user name, with password
 * @property {string} [name] the storage namespace (IndexedDB database and
 *   Web Lock names); pages that should not share identities use different
 *   names. Default "default".
 * @property {number} [minBackoff] reconnection delay bounds, in ms: attempt
 *   n waits a uniformly random time in [0, min(maxBackoff, minBackoff·2^n)]
 *   (full jitter). Defaults 100 and 10 000.
 * @property {number} [maxBackoff]
 * @property {number} [outboxLimit] the most unacknowledged writes kept (at
 *   most, and by default, 10 000)
 * @property {IDBFactory|null} [indexedDB] the IndexedDB to use (default
 *   globalThis.indexedDB; null: memory only)
 * @property {LockManager|null} [locks] the Web Locks to use (default
 *   navigator.locks; null: a single slot, one tab at a time)
 * @property {any} [WebSocket] the WebSocket constructor (default globalThis.WebSocket)
 * @property {() => number} [now] the clock, in Unix ms (default Date.now)
 * @property {() => number} [random] a uniform random number in [0, 1) for the backoff jitter
 * @property {string[]} [urls] more bridge URLs of the same deployment (the
 *   primary and its replicas). With more than one address the client asks
 *   ROLE on every connection and establishes its session only on the
 *   primary (unless replicaOK); it moves to the next address in turn when
 *   the server is a replica, when a write is answered -READONLY, or when
 *   the connection fails, and replays its outbox there with the same wire
 *   ids (CLIENTS.md section 8)
 * @property {boolean} [replicaOK] with several addresses, let the session
 *   stay on a replica (it serves SYNC, QSUB, KWATCH and the pushes of the
 *   replicated stream) until a write is answered -READONLY; from then on
 *   the client looks for the primary
 * @property {number} [waitReplicas] when positive, a write is resolved only
 *   once WAIT <waitReplicas> <waitTimeout>, sent after it, answers at least
 *   waitReplicas: until then it stays in the outbox, and a failover replays
 *   it to the new primary (+DUP if it had been replicated, run otherwise)
 * @property {number} [waitTimeout] the WAIT timeout in ms (default 1000)
 */

/** Error codes that refuse a session's credentials. */
const CREDENTIAL_ERRORS = new Set(['NOPERM', 'WRONGPASS', 'NOAUTH']);

/**
 * What the client knows of one server command (see sync/commands.json).
 * @typedef {object} CommandInfo
 * @property {string} name lower case; a subcommand is "parent|sub"
 * @property {number} arity
 * @property {boolean} [write] may modify the keyspace: sent through the outbox
 * @property {boolean} [readonly]
 * @property {boolean} [connection] connection-scoped: DEDUP refuses to wrap it
 * @property {boolean} [clientOwned] the client sends it itself: refused from the page
 * @property {number[]} [keys] [first, last, step] key positions (last negative counts from the end)
 * @property {boolean} [movableKeys]
 * @property {boolean} [subcommands] a container whose subcommands have entries of their own
 */

// BEGIN GENERATED COMMANDS: sync/commands.json, by go generate ./sync; do not edit.
/** @type {ReadonlyArray<CommandInfo>} */
const COMMAND_LIST = [
  {"name":"acl","arity":-2,"subcommands":true},
  {"name":"acl|cat","arity":-2},
  {"name":"acl|deluser","arity":-3},
  {"name":"acl|dryrun","arity":-4},
  {"name":"acl|genpass","arity":-2},
  {"name":"acl|getuser","arity":3},
  {"name":"acl|help","arity":2},
  {"name":"acl|list","arity":2},
  {"name":"acl|load","arity":2},
  {"name":"acl|log","arity":-2},
  {"name":"acl|save","arity":2},
  {"name":"acl|setuser","arity":-3},
  {"name":"acl|users","arity":2},
  {"name":"acl|whoami","arity":2},
  {"name":"append","arity":3,"write":true,"keys":[1,1,1]},
  {"name":"auth","arity":-2,"connection":true,"clientOwned":true},
  {"name":"bgrewriteaof","arity":1},
  {"name":"bgsave","arity":-1},
  {"name":"bitcount","arity":-2,"readonly":true,"keys":[1,1,1]},
  {"name":"bitfield","arity":-2,"write":true,"keys":[1,1,1]},
  {"name":"bitfield_ro","arity":-2,"readonly":true,"keys":[1,1,1]},
  {"name":"bitop","arity":-4,"write":true,"keys":[2,-1,1]},
  {"name":"bitpos","arity":-3,"readonly":true,"keys":[1,1,1]},
  {"name":"blmove","arity":6,"write":true,"keys":[1,2,1]},
  {"name":"blmpop","arity":-5,"write":true,"movableKeys":true},
  {"name":"blpop","arity":-3,"write":true,"keys":[1,-2,1]},
  {"name":"brpop","arity":-3,"write":true,"keys":[1,-2,1]},
  {"name":"brpoplpush","arity":4,"write":true,"keys":[1,2,1]},
  {"name":"bzmpop","arity":-5,"write":true,"movableKeys":true},
  {"name":"bzpopmax","arity":-3,"write":true,"keys":[1,-2,1]},
  {"name":"bzpopmin","arity":-3,"write":true,"keys":[1,-2,1]},
  {"name":"cl.throttle","arity":-5,"write":true,"keys":[1,1,1]},
  {"name":"client","arity":-2,"subcommands":true},
  {"name":"client|id","arity":2},
  {"name":"client|setname","arity":3},
  {"name":"client|getname","arity":2},
  {"name":"client|list","arity":-2},
  {"name":"client|info","arity":2},
  {"name":"client|kill","arity":-3},
  {"name":"client|setinfo","arity":4},
  {"name":"client|no-evict","arity":3},
  {"name":"client|reply","arity":3},
  {"name":"client|no-touch","arity":3},
  {"name":"client|help","arity":2},
  {"name":"client|tracking","arity":-3},
  {"name":"client|caching","arity":3},
  {"name":"client|getredir","arity":2},
  {"name":"client|trackinginfo","arity":2},
  {"name":"client|pause","arity":-3},
  {"name":"client|unpause","arity":2},
  {"name":"client|unblock","arity":-3},
  {"name":"cluster","arity":-2,"subcommands":true},
  {"name":"cluster|addslots","arity":-3},
  {"name":"cluster|addslotsrange","arity":-4},
  {"name":"cluster|bumpepoch","arity":2},
  {"name":"cluster|count-failure-reports","arity":3},
  {"name":"cluster|countkeysinslot","arity":3},
  {"name":"cluster|delslots","arity":-3},
  {"name":"cluster|delslotsrange","arity":-4},
  {"name":"cluster|failover","arity":-2},
  {"name":"cluster|flushslots","arity":2},
  {"name":"cluster|forget","arity":3},
  {"name":"cluster|getkeysinslot","arity":4},
  {"name":"cluster|help","arity":2},
  {"name":"cluster|info","arity":2},
  {"name":"cluster|keyslot","arity":3},
  {"name":"cluster|links","arity":2},
  {"name":"cluster|meet","arity":-4},
  {"name":"cluster|myid","arity":2},
  {"name":"cluster|nodes","arity":2},
  {"name":"cluster|replicas","arity":3},
  {"name":"cluster|replicate","arity":3},
  {"name":"cluster|reset","arity":-2},
  {"name":"cluster|saveconfig","arity":2},
  {"name":"cluster|set-config-epoch","arity":3},
  {"name":"cluster|setslot","arity":-4},
  {"name":"cluster|shards","arity":2},
  {"name":"cluster|slaves","arity":3},
  {"name":"cluster|slots","arity":2},
  {"name":"command","arity":-1,"subcommands":true},
  {"name":"command|count","arity":2},
  {"name":"command|info","arity":-2},
  {"name":"command|docs","arity":-2},
  {"name":"command|list","arity":-2},
  {"name":"command|getkeys","arity":-4},
  {"name":"command|getkeysandflags","arity":-4},
  {"name":"command|help","arity":2},
  {"name":"config","arity":-2,"subcommands":true},
  {"name":"config|get","arity":-3},
  {"name":"config|set","arity":-4},
  {"name":"config|rewrite","arity":2},
  {"name":"config|resetstat","arity":2},
  {"name":"config|help","arity":2},
  {"name":"copy","arity":-3,"write":true,"keys":[1,2,1]},
  {"name":"dbsize","arity":1,"readonly":true},
  {"name":"debug","arity":-2},
  {"name":"decr","arity":2,"write":true,"keys":[1,1,1]},
  {"name":"decrby","arity":3,"write":true,"keys":[1,1,1]},
  {"name":"dedup","arity":-4,"connection":true,"clientOwned":true,"movableKeys":true},
  {"name":"del","arity":-2,"write":true,"keys":[1,-1,1]},
  {"name":"discard","arity":1,"connection":true},
  {"name":"dump","arity":2,"readonly":true,"keys":[1,1,1]},
  {"name":"echo","arity":2},
  {"name":"eval","arity":-3,"movableKeys":true},
  {"name":"eval_ro","arity":-3,"readonly":true,"movableKeys":true},
  {"name":"evalsha","arity":-3,"movableKeys":true},
  {"name":"evalsha_ro","arity":-3,"readonly":true,"movableKeys":true},
  {"name":"exec","arity":1,"connection":true},
  {"name":"exists","arity":-2,"readonly":true,"keys":[1,-1,1]},
  {"name":"expire","arity":-3,"write":true,"keys":[1,1,1]},
  {"name":"expireat","arity":-3,"write":true,"keys":[1,1,1]},
  {"name":"expiretime","arity":2,"readonly":true,"keys":[1,1,1]},
  {"name":"fcall","arity":-3,"movableKeys":true},
  {"name":"fcall_ro","arity":-3,"readonly":true,"movableKeys":true},
  {"name":"flushall","arity":-1,"write":true},
  {"name":"flushdb","arity":-1,"write":true},
  {"name":"function","arity":-2,"subcommands":true},
  {"name":"function|load","arity":-3,"write":true},
  {"name":"function|delete","arity":3,"write":true},
  {"name":"function|flush","arity":-2,"write":true},
  {"name":"function|list","arity":-2},
  {"name":"function|dump","arity":2},
  {"name":"function|restore","arity":-3,"write":true},
  {"name":"function|stats","arity":2},
  {"name":"function|kill","arity":2},
  {"name":"function|help","arity":2},
  {"name":"geoadd","arity":-5,"write":true,"keys":[1,1,1]},
  {"name":"geodist","arity":-4,"readonly":true,"keys":[1,1,1]},
  {"name":"geohash","arity":-2,"readonly":true,"keys":[1,1,1]},
  {"name":"geopos","arity":-2,"readonly":true,"keys":[1,1,1]},
  {"name":"georadius","arity":-6,"write":true,"movableKeys":true},
  {"name":"georadius_ro","arity":-6,"readonly":true,"keys":[1,1,1]},
  {"name":"georadiusbymember","arity":-5,"write":true,"movableKeys":true},
  {"name":"georadiusbymember_ro","arity":-5,"readonly":true,"keys":[1,1,1]},
  {"name":"geosearch","arity":-7,"readonly":true,"keys":[1,1,1]},
  {"name":"geosearchstore","arity":-8,"write":true,"keys":[1,2,1]},
  {"name":"get","arity":2,"readonly":true,"keys":[1,1,1]},
  {"name":"getbit","arity":3,"readonly":true,"keys":[1,1,1]},
  {"name":"getdel","arity":2,"write":true,"keys":[1,1,1]},
  {"name":"getex","arity":-2,"write":true,"keys":[1,1,1]},
  {"name":"getrange","arity":4,"readonly":true,"keys":[1,1,1]},
  {"name":"getset","arity":3,"write":true,"keys":[1,1,1]},
  {"name":"hdel","arity":-3,"write":true,"keys":[1,1,1]},
  {"name":"hello","arity":-1,"connection":true,"clientOwned":true},
  {"name":"hexists","arity":3,"readonly":true,"keys":[1,1,1]},
  {"name":"hget","arity":3,"readonly":true,"keys":[1,1,1]},
  {"name":"hgetall","arity":2,"readonly":true,"keys":[1,1,1]},
  {"name":"hincrby","arity":4,"write":true,"keys":[1,1,1]},
  {"name":"hincrbyfloat","arity":4,"write":true,"keys":[1,1,1]},
  {"name":"hkeys","arity":2,"readonly":true,"keys":[1,1,1]},
  {"name":"hlen","arity":2,"readonly":true,"keys":[1,1,1]},
  {"name":"hmget","arity":-3,"readonly":true,"keys":[1,1,1]},
  {"name":"hmset","arity":-4,"write":true,"keys":[1,1,1]},
  {"name":"hrandfield","arity":-2,"readonly":true,"keys":[1,1,1]},
  {"name":"hscan","arity":-3,"readonly":true,"keys":[1,1,1]},
  {"name":"hset","arity":-4,"write":true,"keys":[1,1,1]},
  {"name":"hsetnx","arity":4,"write":true,"keys":[1,1,1]},
  {"name":"hstrlen","arity":3,"readonly":true,"keys":[1,1,1]},
  {"name":"hvals","arity":2,"readonly":true,"keys":[1,1,1]},
  {"name":"incr","arity":2,"write":true,"keys":[1,1,1]},
  {"name":"incrby","arity":3,"write":true,"keys":[1,1,1]},
  {"name":"incrbyfloat","arity":3,"write":true,"keys":[1,1,1]},
  {"name":"info","arity":-1},
  {"name":"jarrappend","arity":-4,"write":true,"keys":[1,1,1]},
  {"name":"jarrlen","arity":-2,"readonly":true,"keys":[1,1,1]},
  {"name":"jdel","arity":-2,"write":true,"keys":[1,1,1]},
  {"name":"jget","arity":-2,"readonly":true,"keys":[1,1,1]},
  {"name":"jmerge","arity":4,"write":true,"keys":[1,1,1]},
  {"name":"jnumincrby","arity":4,"write":true,"keys":[1,1,1]},
  {"name":"jobjkeys","arity":-2,"readonly":true,"keys":[1,1,1]},
  {"name":"jset","arity":-4,"write":true,"keys":[1,1,1]},
  {"name":"jstrlen","arity":-2,"readonly":true,"keys":[1,1,1]},
  {"name":"jtype","arity":-2,"readonly":true,"keys":[1,1,1]},
  {"name":"keys","arity":2,"readonly":true},
  {"name":"kunwatch","arity":-1,"connection":true,"clientOwned":true},
  {"name":"kwatch","arity":-2,"connection":true,"clientOwned":true,"keys":[1,-1,1]},
  {"name":"lastsave","arity":1},
  {"name":"latency","arity":-2,"subcommands":true},
  {"name":"latency|doctor","arity":2},
  {"name":"latency|graph","arity":3},
  {"name":"latency|help","arity":2},
  {"name":"latency|histogram","arity":-2},
  {"name":"latency|history","arity":3},
  {"name":"latency|latest","arity":2},
  {"name":"latency|reset","arity":-2},
  {"name":"lcs","arity":-3,"readonly":true,"keys":[1,2,1]},
  {"name":"lindex","arity":3,"readonly":true,"keys":[1,1,1]},
  {"name":"linsert","arity":5,"write":true,"keys":[1,1,1]},
  {"name":"llen","arity":2,"readonly":true,"keys":[1,1,1]},
  {"name":"lmove","arity":5,"write":true,"keys":[1,2,1]},
  {"name":"lmpop","arity":-4,"write":true,"movableKeys":true},
  {"name":"lolwut","arity":-1,"readonly":true},
  {"name":"lpop","arity":-2,"write":true,"keys":[1,1,1]},
  {"name":"lpos","arity":-3,"readonly":true,"keys":[1,1,1]},
  {"name":"lpush","arity":-3,"write":true,"keys":[1,1,1]},
  {"name":"lpushx","arity":-3,"write":true,"keys":[1,1,1]},
  {"name":"lrange","arity":4,"readonly":true,"keys":[1,1,1]},
  {"name":"lrem","arity":4,"write":true,"keys":[1,1,1]},
  {"name":"lset","arity":4,"write":true,"keys":[1,1,1]},
  {"name":"ltrim","arity":4,"write":true,"keys":[1,1,1]},
  {"name":"memory","arity":-2,"subcommands":true},
  {"name":"memory|purge","arity":2},
  {"name":"memory|usage","arity":-3,"readonly":true,"keys":[2,2,1]},
  {"name":"mget","arity":-2,"readonly":true,"keys":[1,-1,1]},
  {"name":"migrate","arity":-6,"write":true,"movableKeys":true},
  {"name":"monitor","arity":1},
  {"name":"move","arity":3,"write":true,"keys":[1,1,1]},
  {"name":"mset","arity":-3,"write":true,"keys":[1,-1,2]},
  {"name":"msetnx","arity":-3,"write":true,"keys":[1,-1,2]},
  {"name":"multi","arity":1,"connection":true},
  {"name":"object","arity":-2,"subcommands":true},
  {"name":"object|encoding","arity":3,"readonly":true,"keys":[2,2,1]},
  {"name":"object|refcount","arity":3,"readonly":true,"keys":[2,2,1]},
  {"name":"object|idletime","arity":3,"readonly":true,"keys":[2,2,1]},
  {"name":"object|freq","arity":3,"readonly":true,"keys":[2,2,1]},
  {"name":"object|help","arity":2},
  {"name":"persist","arity":2,"write":true,"keys":[1,1,1]},
  {"name":"pexpire","arity":-3,"write":true,"keys":[1,1,1]},
  {"name":"pexpireat","arity":-3,"write":true,"keys":[1,1,1]},
  {"name":"pexpiretime","arity":2,"readonly":true,"keys":[1,1,1]},
  {"name":"pfadd","arity":-2,"write":true,"keys":[1,1,1]},
  {"name":"pfcount","arity":-2,"readonly":true,"keys":[1,-1,1]},
  {"name":"pfdebug","arity":3,"write":true,"keys":[2,2,1]},
  {"name":"pfmerge","arity":-2,"write":true,"keys":[1,-1,1]},
  {"name":"pfselftest","arity":1},
  {"name":"ping","arity":-1},
  {"name":"psetex","arity":4,"write":true,"keys":[1,1,1]},
  {"name":"psubscribe","arity":-2,"connection":true,"clientOwned":true},
  {"name":"psync","arity":-3},
  {"name":"pttl","arity":2,"readonly":true,"keys":[1,1,1]},
  {"name":"publish","arity":3,"connection":true},
  {"name":"pubsub","arity":-2,"subcommands":true},
  {"name":"pubsub|channels","arity":-2},
  {"name":"pubsub|numpat","arity":2},
  {"name":"pubsub|numsub","arity":-2},
  {"name":"pubsub|shardchannels","arity":-2},
  {"name":"pubsub|shardnumsub","arity":-2},
  {"name":"pubsub|help","arity":2},
  {"name":"punsubscribe","arity":-1,"connection":true,"clientOwned":true},
  {"name":"qsub","arity":2,"readonly":true,"connection":true,"clientOwned":true},
  {"name":"quit","arity":-1,"connection":true,"clientOwned":true},
  {"name":"qunsub","arity":2,"connection":true,"clientOwned":true},
  {"name":"randomkey","arity":1,"readonly":true},
  {"name":"rename","arity":3,"write":true,"keys":[1,2,1]},
  {"name":"renamenx","arity":3,"write":true,"keys":[1,2,1]},
  {"name":"replconf","arity":-1},
  {"name":"replicaof","arity":3},
  {"name":"reset","arity":1,"connection":true,"clientOwned":true},
  {"name":"restore","arity":-4,"write":true,"keys":[1,1,1]},
  {"name":"rlset","arity":-5,"write":true,"keys":[1,1,1]},
  {"name":"role","arity":1},
  {"name":"rpop","arity":-2,"write":true,"keys":[1,1,1]},
  {"name":"rpoplpush","arity":3,"write":true,"keys":[1,2,1]},
  {"name":"rpush","arity":-3,"write":true,"keys":[1,1,1]},
  {"name":"rpushx","arity":-3,"write":true,"keys":[1,1,1]},
  {"name":"sadd","arity":-3,"write":true,"keys":[1,1,1]},
  {"name":"save","arity":1},
  {"name":"scan","arity":-2,"readonly":true},
  {"name":"scard","arity":2,"readonly":true,"keys":[1,1,1]},
  {"name":"script","arity":-2,"subcommands":true},
  {"name":"script|load","arity":3},
  {"name":"script|exists","arity":-3},
  {"name":"script|flush","arity":-2},
  {"name":"script|kill","arity":2},
  {"name":"script|help","arity":2},
  {"name":"sdiff","arity":-2,"readonly":true,"keys":[1,-1,1]},
  {"name":"sdiffstore","arity":-3,"write":true,"keys":[1,-1,1]},
  {"name":"select","arity":2,"connection":true,"clientOwned":true},
  {"name":"set","arity":-3,"write":true,"keys":[1,1,1]},
  {"name":"setbit","arity":4,"write":true,"keys":[1,1,1]},
  {"name":"setex","arity":4,"write":true,"keys":[1,1,1]},
  {"name":"setnx","arity":3,"write":true,"keys":[1,1,1]},
  {"name":"setrange","arity":4,"write":true,"keys":[1,1,1]},
  {"name":"shutdown","arity":-1},
  {"name":"sinter","arity":-2,"readonly":true,"keys":[1,-1,1]},
  {"name":"sintercard","arity":-3,"readonly":true,"movableKeys":true},
  {"name":"sinterstore","arity":-3,"write":true,"keys":[1,-1,1]},
  {"name":"sismember","arity":3,"readonly":true,"keys":[1,1,1]},
  {"name":"slaveof","arity":3},
  {"name":"slowlog","arity":-2,"subcommands":true},
  {"name":"slowlog|get","arity":-2},
  {"name":"slowlog|len","arity":2},
  {"name":"slowlog|reset","arity":2},
  {"name":"slowlog|help","arity":2},
  {"name":"smembers","arity":2,"readonly":true,"keys":[1,1,1]},
  {"name":"smismember","arity":-3,"readonly":true,"keys":[1,1,1]},
  {"name":"smove","arity":4,"write":true,"keys":[1,2,1]},
  {"name":"sort","arity":-2,"write":true,"movableKeys":true},
  {"name":"sort_ro","arity":-2,"readonly":true,"movableKeys":true},
  {"name":"spop","arity":-2,"write":true,"keys":[1,1,1]},
  {"name":"spublish","arity":3,"connection":true,"keys":[1,1,1]},
  {"name":"srandmember","arity":-2,"readonly":true,"keys":[1,1,1]},
  {"name":"srem","arity":-3,"write":true,"keys":[1,1,1]},
  {"name":"sscan","arity":-3,"readonly":true,"keys":[1,1,1]},
  {"name":"ssubscribe","arity":-2,"connection":true,"clientOwned":true,"keys":[1,-1,1]},
  {"name":"strlen","arity":2,"readonly":true,"keys":[1,1,1]},
  {"name":"subscribe","arity":-2,"connection":true,"clientOwned":true},
  {"name":"substr","arity":4,"readonly":true,"keys":[1,1,1]},
  {"name":"sunion","arity":-2,"readonly":true,"keys":[1,-1,1]},
  {"name":"sunionstore","arity":-3,"write":true,"keys":[1,-1,1]},
  {"name":"sunsubscribe","arity":-1,"connection":true,"clientOwned":true,"keys":[1,-1,1]},
  {"name":"swapdb","arity":3,"write":true},
  {"name":"sync","arity":-1,"connection":true,"clientOwned":true},
  {"name":"throttle","arity":-5,"write":true,"keys":[1,1,1]},
  {"name":"time","arity":1},
  {"name":"touch","arity":-2,"readonly":true,"keys":[1,-1,1]},
  {"name":"ttl","arity":2,"readonly":true,"keys":[1,1,1]},
  {"name":"type","arity":2,"readonly":true,"keys":[1,1,1]},
  {"name":"unlink","arity":-2,"write":true,"keys":[1,-1,1]},
  {"name":"unsubscribe","arity":-1,"connection":true,"clientOwned":true},
  {"name":"unwatch","arity":1,"connection":true},
  {"name":"wait","arity":3},
  {"name":"watch","arity":-2,"connection":true,"keys":[1,-1,1]},
  {"name":"xack","arity":-4,"write":true,"keys":[1,1,1]},
  {"name":"xadd","arity":-5,"write":true,"keys":[1,1,1]},
  {"name":"xautoclaim","arity":-6,"write":true,"keys":[1,1,1]},
  {"name":"xclaim","arity":-6,"write":true,"keys":[1,1,1]},
  {"name":"xdel","arity":-3,"write":true,"keys":[1,1,1]},
  {"name":"xgroup","arity":-2,"subcommands":true},
  {"name":"xgroup|create","arity":-5,"write":true,"keys":[2,2,1]},
  {"name":"xgroup|setid","arity":-5,"write":true,"keys":[2,2,1]},
  {"name":"xgroup|destroy","arity":4,"write":true,"keys":[2,2,1]},
  {"name":"xgroup|createconsumer","arity":5,"write":true,"keys":[2,2,1]},
  {"name":"xgroup|delconsumer","arity":5,"write":true,"keys":[2,2,1]},
  {"name":"xgroup|help","arity":2},
  {"name":"xinfo","arity":-2,"subcommands":true},
  {"name":"xinfo|stream","arity":-3,"readonly":true,"keys":[2,2,1]},
  {"name":"xinfo|groups","arity":3,"readonly":true,"keys":[2,2,1]},
  {"name":"xinfo|consumers","arity":4,"readonly":true,"keys":[2,2,1]},
  {"name":"xinfo|help","arity":2},
  {"name":"xlen","arity":2,"readonly":true,"keys":[1,1,1]},
  {"name":"xpending","arity":-3,"readonly":true,"keys":[1,1,1]},
  {"name":"xrange","arity":-4,"readonly":true,"keys":[1,1,1]},
  {"name":"xread","arity":-4,"readonly":true,"movableKeys":true},
  {"name":"xreadgroup","arity":-7,"write":true,"movableKeys":true},
  {"name":"xrevrange","arity":-4,"readonly":true,"keys":[1,1,1]},
  {"name":"xsetid","arity":-3,"write":true,"keys":[1,1,1]},
  {"name":"xtrim","arity":-4,"write":true,"keys":[1,1,1]},
  {"name":"zadd","arity":-4,"write":true,"keys":[1,1,1]},
  {"name":"zcard","arity":2,"readonly":true,"keys":[1,1,1]},
  {"name":"zcount","arity":4,"readonly":true,"keys":[1,1,1]},
  {"name":"zdiff","arity":-3,"readonly":true,"movableKeys":true},
  {"name":"zdiffstore","arity":-4,"write":true,"movableKeys":true},
  {"name":"zincrby","arity":4,"write":true,"keys":[1,1,1]},
  {"name":"zinter","arity":-3,"readonly":true,"movableKeys":true},
  {"name":"zintercard","arity":-3,"readonly":true,"movableKeys":true},
  {"name":"zinterstore","arity":-4,"write":true,"movableKeys":true},
  {"name":"zlexcount","arity":4,"readonly":true,"keys":[1,1,1]},
  {"name":"zmpop","arity":-4,"write":true,"movableKeys":true},
  {"name":"zmscore","arity":-3,"readonly":true,"keys":[1,1,1]},
  {"name":"zpopmax","arity":-2,"write":true,"keys":[1,1,1]},
  {"name":"zpopmin","arity":-2,"write":true,"keys":[1,1,1]},
  {"name":"zrandmember","arity":-2,"readonly":true,"keys":[1,1,1]},
  {"name":"zrange","arity":-4,"readonly":true,"keys":[1,1,1]},
  {"name":"zrangebylex","arity":-4,"readonly":true,"keys":[1,1,1]},
  {"name":"zrangebyscore","arity":-4,"readonly":true,"keys":[1,1,1]},
  {"name":"zrangestore","arity":-5,"write":true,"keys":[1,2,1]},
  {"name":"zrank","arity":-3,"readonly":true,"keys":[1,1,1]},
  {"name":"zrem","arity":-3,"write":true,"keys":[1,1,1]},
  {"name":"zremrangebylex","arity":4,"write":true,"keys":[1,1,1]},
  {"name":"zremrangebyrank","arity":4,"write":true,"keys":[1,1,1]},
  {"name":"zremrangebyscore","arity":4,"write":true,"keys":[1,1,1]},
  {"name":"zrevrange","arity":-4,"readonly":true,"keys":[1,1,1]},
  {"name":"zrevrangebylex","arity":-4,"readonly":true,"keys":[1,1,1]},
  {"name":"zrevrangebyscore","arity":-4,"readonly":true,"keys":[1,1,1]},
  {"name":"zrevrank","arity":-3,"readonly":true,"keys":[1,1,1]},
  {"name":"zscan","arity":-3,"readonly":true,"keys":[1,1,1]},
  {"name":"zscore","arity":3,"readonly":true,"keys":[1,1,1]},
  {"name":"zunion","arity":-3,"readonly":true,"movableKeys":true},
  {"name":"zunionstore","arity":-4,"write":true,"movableKeys":true},
];
// END GENERATED COMMANDS

/** The server's commands by name. */
const COMMANDS = new Map(COMMAND_LIST.map((c) => [c.name, c]));

/**
 * The entry of the command args run: the subcommand's for a container with
 * a known subcommand; undefined for a command the server does not have.
 * @param {ReadonlyArray<string>} args
 * @returns {CommandInfo|undefined}
 */
export function commandInfo(args) {
  const name = args[0].toLowerCase();
  const c = COMMANDS.get(name);
  if (!c || !c.subcommands || args.length < 2) return c;
  return COMMANDS.get(name + '|' + args[1].toLowerCase()) || c;
}

/**
 * How command() sends args: 'owned' (the client sends it itself: refused),
 * 'write' (through the outbox, wrapped in DEDUP) or 'plain'. A command the
 * server's list does not have is taken for a write.
 * @param {ReadonlyArray<string>} args
 * @returns {'owned'|'write'|'plain'}
 */
export function routeOf(args) {
  const c = commandInfo(args);
  if (!c) return 'write';
  if (c.clientOwned) return 'owned';
  return c.write && !c.connection ? 'write' : 'plain';
}

/** @param {string} token */
function tokenPatterns(token) {
  const payload = token.split('.', 1)[0].replace(/=+$/, '').replace(/-/g, '+').replace(/_/g, '/');
  try {
    const bin = atob(payload + '='.repeat((4 - (payload.length % 4)) % 4));
    const bytes = Uint8Array.from(bin, (c) => c.charCodeAt(0));
    const pats = decoder.decode(bytes).split('|', 1)[0];
    return pats ? pats.split(',') : [];
  } catch {
    return [];
  }
}

/**
 * A write in the outbox.
 * @typedef {object} Write
 * @property {'write'} kind
 * @property {string[]} args
 * @property {string[]} keys the keys it touches
 * @property {number} slot
 * @property {string} clientId
 * @property {number} epoch
 * @property {number} counter
 * @property {string} id the wire id in decimal
 * @property {boolean} sent on the current connection
 * @property {boolean} finished
 * @property {((v: any) => void)|null} resolve
 * @property {((e: Error) => void)|null} reject
 */

/**
 * A plain command: sent as is, never replayed.
 * @typedef {object} Call
 * @property {'call'} kind
 * @property {string[]} args
 * @property {boolean} sent
 * @property {boolean} finished
 * @property {(v: any) => void} resolve
 * @property {(e: Error) => void} reject
 */

/**
 * A command sent on the connection and not yet answered.
 * @typedef {object} Pending
 * @property {string} kind write, call, fatal, qsub, qunsub, kwatch, kunwatch, sub, unsub
 * @property {boolean} setup part of the session establishment
 * @property {Write} [write]
 * @property {Call} [call]
 * @property {string} [what]
 * @property {string} [name]
 * @property {string[]} [keys]
 * @property {string[]} [ids] the registrations whose acceptance its reply settles
 */

/**
 * A handle on a live query, watch or subscription.
 * @typedef {object} Handle
 * @property {() => void} close stops it (the server is told when it was the last)
 * @property {Promise<void>} ready resolves once the server accepted it
 *   (rejects with its refusal)
 */

/**
 * The recached-edge client. Create it with connect().
 */
export class Client {
  /**
   * @param {string} url ws:// or wss:// URL of the bridge
   * @param {ConnectOptions} [options]
   */
  constructor(url, options = {}) {
    /** The addresses, tried in turn: url first, then options.urls. */
    this.urls = [url, ...(options.urls || [])];
    /** The address of the current or last connection attempt. */
    this.url = url;
    this._turn = 0;
    /** A write was answered -READONLY: replicaOK no longer applies. */
    this._needPrimary = false;
    /** Writes were sent since the last WAIT (waitReplicas). */
    this._waitNeeded = false;
    this.waitReplicas = options.waitReplicas || 0;
    this.waitTimeout = options.waitTimeout ?? 1000;
    this.options = options;
    this.name = options.name || 'default';
    this.outboxLimit = Math.min(options.outboxLimit || MAX_OUTBOX, MAX_OUTBOX);
    this.minBackoff = options.minBackoff ?? 100;
    this.maxBackoff = Math.max(options.maxBackoff ?? 10000, this.minBackoff);
    this.now = options.now || Date.now;
    this.random = options.random || Math.random;
    this.WS = options.WebSocket || globalThis.WebSocket;
    if (!this.WS) throw new Error('recached-edge: no WebSocket implementation (pass options.WebSocket)');
    this.token = options.token || '';
    this.password = options.password || '';
    this.username = options.username || '';

    /** The confirmed local store: the server's state as far as this client knows. */
    this.store = new Store(this.now);
    /** Keys with pending writes, and how many touch each. @type {Map<string, number>} */
    this._pending = new Map();
    /** The pending keys' values with the pending writes applied. */
    this._overlay = new Store(this.now);

    /** Writes and plain calls, in the order they were made. @type {Array<Write|Call>} */
    this._queue = [];
    this._writes = 0;
    /** @type {State} */
    this.state = 'connecting';
    this._ws = null;
    /**
     * The session establishment was sent on the current connection: live
     * queries, watches and subscriptions made from now on are sent at once
     * (those made before are part of it).
     */
    this._started = false;
    /** @type {Pending[]} */
    this._fifo = [];
    this._setupLeft = 0;
    this._open = false;
    this._attempt = 0;
    this._timer = null;
    this._paused = false;
    this._closed = false;
    this._halted = false;
    this._loaded = false;

    /** @type {Map<string, Set<Function>>} */
    this._queries = new Map();
    /**
     * The acceptance of each live query ("q:<pattern>"), watch ("w:<key>")
     * and subscription ("s:<channel>", "p:<pattern>"), settled by the
     * server's first reply to it.
     * @type {Map<string, {resolve: Function, reject: Function, promise: Promise<void>}>}
     */
    this._ready = new Map();
    /** @type {Map<string, Set<Function>>} */
    this._watches = new Map();
    /** @type {Map<string, Set<Function>>} */
    this._channels = new Map();
    /** @type {Map<string, Set<Function>>} */
    this._pchannels = new Map();
    /** @type {Map<string, number>} */
    this._unquerying = new Map();
    /** @type {Map<string, number>} */
    this._unwatching = new Map();
    /** @type {Map<string, Set<Function>>} */
    this._listeners = new Map();

    this.clientId = '';
    this.epoch = 0;
    this.slot = 0;
    this._counter = 0;
    /** Slots whose locks this client holds, with their release functions. @type {Map<number, (() => void)|null>} */
    this._held = new Map();
    /** Writes per adopted slot. @type {Map<number, number>} */
    this._adopted = new Map();
    this._abort = typeof AbortController === 'function' ? new AbortController() : null;
    /** Outbox changes not yet saved: key string → op. */
    this._ops = new Map();
    this._saveTimer = null;
    this._saving = Promise.resolve();

    this.stats = { connects: 0, replies: 0, dups: 0, dropped: 0, mutations: 0, unknownEffects: 0, keychanges: 0, messages: 0, ignored: 0 };

    this._onlineHandler = () => {
      if (this.state === 'offline' && !this._paused && !this._closed && !this._halted) this._retryNow();
    };
    if (typeof globalThis.addEventListener === 'function') globalThis.addEventListener('online', this._onlineHandler);

    /** Resolves once storage is loaded (identity, epoch and saved outbox). */
    this.ready = this._init();
    this.ready.catch((err) => this._report(err));
  }

  // -- identity, storage and the outbox ------------------------------------

  async _init() {
    const idb = this.options.indexedDB === undefined ? globalThis.indexedDB : this.options.indexedDB;
    this._storage = idb ? await IDBStorage.open(idb, `recached-edge/${this.name}`) : new MemoryStorage();
    const locks = this.options.locks === undefined ? globalThis.navigator?.locks : this.options.locks;
    this._locks = locks || null;
    if (this._locks) {
      for (let s = 0; ; s++) {
        if (s > 4096) throw new Error('recached-edge: no free identity slot');
        const release = await takeLock(this._locks, this._lockName(s));
        if (release) {
          this.slot = s;
          this._held.set(s, release);
          break;
        }
      }
    } else {
      this._held.set(0, null);
    }
    if (this._closed) {
      this._releaseAll();
      return;
    }
    const newId = () => globalThis.crypto.randomUUID();
    const id = await this._storage.claim(this.slot, newId);
    this.clientId = id.clientId;
    this.epoch = id.epoch;
    const saved = await this._storage.writes();
    const mine = saved.filter((w) => w.key[0] === this.slot);
    const others = new Set(saved.filter((w) => w.key[0] !== this.slot).map((w) => w.key[0]));
    // Saved writes go before the writes this page made meanwhile; they keep
    // their wire ids, all of earlier epochs.
    const made = this._queue;
    this._queue = [];
    this._writes = 0;
    for (const w of mine) this._queue.push(this._restore(w));
    this._writes = this._queue.length;
    for (const it of made) {
      this._queue.push(it);
      if (it.kind === 'write') {
        this._writes++;
        this._assign(it);
      }
    }
    this._trim();
    this._rebuild(new Set(this._pending.keys()), true);
    this._emit('outbox', this._writes);
    this._emit('identity', { clientId: this.clientId, epoch: this.epoch, slot: this.slot });
    if (this._locks) for (const s of others) this._adoptWhenFree(s);
    this._loaded = true;
    if (!this._closed) this._connect();
  }

  _lockName(slot) {
    return `recached-edge/${this.name}/slot/${slot}`;
  }

  /**
   * Waits for the lock of another slot that has saved writes (a tab that
   * closed, or the page this one reloaded from), then replays them under
   * that slot's client id.
   * @param {number} slot
   */
  async _adoptWhenFree(slot) {
    const release = await takeLock(this._locks, this._lockName(slot), { wait: true, signal: this._abort?.signal });
    if (!release) return;
    if (this._closed) {
      release();
      return;
    }
    const saved = (await this._storage.writes()).filter((w) => w.key[0] === slot);
    if (saved.length === 0 || this._closed) {
      release();
      return;
    }
    this._held.set(slot, release);
    this._adopted.set(slot, saved.length);
    const writes = saved.map((w) => this._restore(w));
    // Adopted writes are older than anything this page made: they go first,
    // after the commands already in flight.
    let at = this._queue.findIndex((it) => !it.sent);
    if (at < 0) at = this._queue.length;
    this._queue.splice(at, 0, ...writes);
    this._writes += writes.length;
    this._trim();
    this._rebuild(new Set(writes.flatMap((w) => w.keys)), false);
    this._emit('outbox', this._writes);
    if (this._open) {
      // Send them now, in queue order with whatever is unsent.
      for (const it of this._queue) if (!it.sent) this._sendItem(it);
    }
  }

  /**
   * A Write from a saved record.
   * @param {SavedWrite} w
   * @returns {Write}
   */
  _restore(w) {
    const write = {
      kind: /** @type {'write'} */ ('write'), args: w.args, keys: keysOf(w.args), slot: w.key[0], clientId: w.clientId,
      epoch: w.key[1], counter: w.key[2], id: w.id, sent: false, finished: false, resolve: null, reject: null,
    };
    this._addPending(write);
    return write;
  }

  /**
   * Gives a new write its wire id and queues its save.
   * @param {Write} w
   */
  _assign(w) {
    if (this._counter >= 2 ** 32 - 1) {
      throw new Error('recached-edge: wire ids exhausted for this session (2^32 writes): reload the page');
    }
    this._counter++;
    w.slot = this.slot;
    w.clientId = this.clientId;
    w.epoch = this.epoch;
    w.counter = this._counter;
    w.id = wireId(this.epoch, this._counter);
    this._persist(w, true);
  }

  /**
   * Queues the save (or deletion) of a write.
   * @param {Write} w
   * @param {boolean} save
   */
  _persist(w, save) {
    const key = /** @type {[number, number, number]} */ ([w.slot, w.epoch, w.counter]);
    const k = key.join(',');
    if (!save && this._ops.has(k) && this._ops.get(k).write) {
      this._ops.delete(k); // never saved: nothing to delete
    } else {
      this._ops.set(k, { key, write: save ? { key, clientId: w.clientId, id: w.id, args: w.args } : null });
    }
    if (!this._saveTimer && this._ops.size > 0) this._saveTimer = setTimeout(() => this._flush(), 0);
  }

  /** Starts saving the queued outbox changes in one transaction. */
  _flush() {
    if (this._saveTimer) clearTimeout(this._saveTimer);
    this._saveTimer = null;
    if (this._ops.size === 0 || !this._storage) return this._saving;
    const ops = [...this._ops.values()];
    this._ops.clear();
    const p = this._storage.save(ops);
    p.catch((err) => this._report(err));
    // Transactions on the same store complete in the order they were made.
    this._saving = p.catch(() => undefined);
    return this._saving;
  }

  /**
   * Resolves once every outbox change made so far is saved.
   * @returns {Promise<void>}
   */
  async persisted() {
    await this.ready;
    await this._flush();
  }

  /** Drops the oldest writes beyond the outbox limit. */
  _trim() {
    const keys = new Set();
    while (this._writes > this.outboxLimit) {
      const i = this._queue.findIndex((it) => it.kind === 'write');
      const w = /** @type {Write} */ (this._queue[i]);
      this._queue.splice(i, 1);
      this._writes--;
      this.stats.dropped++;
      this._retire(w);
      if (w.reject) w.reject(new DroppedError());
      w.finished = true;
      for (const k of w.keys) keys.add(k);
      this._emit('drop', { id: w.id, clientId: w.clientId, args: w.args.slice() });
    }
    if (keys.size > 0) {
      // The dropped writes no longer show in the view.
      const before = new Map([...keys].map((k) => [k, this._overlay.keys.get(k)]));
      this._rebuild(keys, false);
      this._notify([...keys].filter((k) => !this._pending.has(k) && !entriesEqual(before.get(k), this.store.raw(k))));
    }
  }

  /**
   * Forgets a write that left the outbox: its pending keys, its save, and
   * an adopted slot's lock once that slot has no writes left.
   * @param {Write} w
   */
  _retire(w) {
    if (w.id) this._persist(w, false);
    this._removePending(w);
    if (w.slot !== this.slot && this._adopted.has(w.slot)) {
      const n = this._adopted.get(w.slot) - 1;
      if (n > 0) {
        this._adopted.set(w.slot, n);
      } else {
        this._adopted.delete(w.slot);
        const release = this._held.get(w.slot);
        this._held.delete(w.slot);
        // Release after the deletions are saved.
        this._flush().then(() => release && release());
      }
    }
  }

  /** @param {Write} w */
  _addPending(w) {
    for (const k of w.keys) {
      const n = this._pending.get(k) || 0;
      if (n === 0) {
        const c = this.store.raw(k);
        this._overlay.keys.delete(k);
        if (c) this._overlay.keys.set(k, /** @type {Entry} */ (cloneEntry(c)));
      }
      this._pending.set(k, n + 1);
    }
  }

  /** @param {Write} w */
  _removePending(w) {
    for (const k of w.keys) {
      const n = (this._pending.get(k) || 0) - 1;
      if (n > 0) this._pending.set(k, n);
      else {
        this._pending.delete(k);
        this._overlay.keys.delete(k);
      }
    }
  }

  /**
   * Recomputes the overlay of the given keys (and of every key a pending
   * write links to them): the confirmed value with every pending write
   * touching them applied in order.
   * @param {Set<string>} keys
   * @param {boolean} quiet no callbacks
   */
  _rebuild(keys, quiet) {
    const set = new Set([...keys].filter((k) => this._pending.has(k)));
    if (set.size === 0) return;
    const writes = /** @type {Write[]} */ (this._queue.filter((it) => it.kind === 'write'));
    for (let grew = true; grew;) {
      grew = false;
      for (const w of writes) {
        if (w.keys.some((k) => set.has(k))) {
          for (const k of w.keys) {
            if (!set.has(k)) {
              set.add(k);
              grew = true;
            }
          }
        }
      }
    }
    const before = new Map();
    for (const k of set) {
      before.set(k, this._overlay.keys.get(k));
      this._overlay.keys.delete(k);
      const c = this.store.raw(k);
      if (c) this._overlay.keys.set(k, /** @type {Entry} */ (cloneEntry(c)));
    }
    for (const w of writes) {
      if (!w.keys.some((k) => set.has(k))) continue;
      const effects = effectsOf(this._overlay, w.args);
      if (effects) for (const e of effects) this._overlay.apply(e);
    }
    if (quiet) return;
    const changed = [];
    for (const k of set) if (!entriesEqual(before.get(k), this._overlay.raw(k))) changed.push(k);
    this._notify(changed);
  }

  /**
   * The entry a read sees: the confirmed one with pending writes applied.
   * @param {string} key
   * @returns {Entry|undefined}
   */
  _view(key) {
    return this._viewStore(key).raw(key);
  }

  /**
   * The store a read of key sees: the overlay, which has the pending
   * writes applied, while key has some, else the confirmed store.
   * @param {string} key
   * @returns {Store}
   */
  _viewStore(key) {
    return this._pending.has(key) ? this._overlay : this.store;
  }

  // -- events ----------------------------------------------------------------

  /**
   * Listens to an event: "state" (a StateEvent), "outbox" (the number of
   * writes waiting for their acknowledgment), "drop" (a write dropped from
   * a full outbox: {id, clientId, args}), "error" (an Error that did not
   * close the connection: a refused QSUB, a failed save, a callback that
   * threw), "identity" ({clientId, epoch, slot}, once storage is loaded).
   * Returns a function that stops listening.
   * @param {string} event
   * @param {Function} fn
   * @returns {() => void}
   */
  on(event, fn) {
    let set = this._listeners.get(event);
    if (!set) this._listeners.set(event, (set = new Set()));
    set.add(fn);
    return () => set.delete(fn);
  }

  /** @param {string} event @param {any} arg */
  _emit(event, arg) {
    const set = this._listeners.get(event);
    if (!set) return;
    for (const fn of [...set]) {
      try {
        fn(arg);
      } catch (err) {
        if (event !== 'error') this._report(err);
      }
    }
  }

  /** @param {unknown} err */
  _report(err) {
    this._emit('error', err instanceof Error ? err : new Error(String(err)));
  }

  /** The number of writes waiting for their acknowledgment. */
  get outboxSize() {
    return this._writes;
  }

  /**
   * Whether key has writes waiting for their acknowledgment (the view
   * shows them already).
   * @param {string} key
   */
  pending(key) {
    return this._pending.has(key);
  }

  /**
   * The writes waiting for their acknowledgment, oldest first.
   * @returns {Array<{id: string, clientId: string, args: string[]}>}
   */
  outbox() {
    return this._queue.filter((it) => it.kind === 'write').map((w) => ({ id: w.id, clientId: w.clientId, args: w.args.slice() }));
  }

  // -- the connection ----------------------------------------------------------

  /** @param {StateEvent} e */
  _setState(e) {
    this.state = e.state;
    this._emit('state', e);
  }

  _connect() {
    if (this._closed || this._paused || this._halted || this._ws) return;
    this._timer = null;
    this.url = this.urls[this._turn++ % this.urls.length];
    this._setState({ state: 'connecting', attempt: this._attempt, url: this.url });
    let ws;
    try {
      ws = new this.WS(this.url);
    } catch (err) {
      this._offline(`cannot open ${this.url}: ${err instanceof Error ? err.message : err}`);
      return;
    }
    this._ws = ws;
    ws.binaryType = 'arraybuffer';
    ws.onopen = () => {
      if (this._ws === ws) this._startSession();
    };
    ws.onmessage = (ev) => {
      if (this._ws === ws) this._onFrame(ev.data);
    };
    ws.onclose = (ev) => {
      if (this._ws === ws) this._dropped(`connection closed (code ${ev.code}${ev.reason ? ': ' + ev.reason : ''})`);
    };
    ws.onerror = () => {
      // A close event follows every error event.
    };
  }

  /** Sends the session establishment in the seed's order. */
  _startSession() {
    this._fifo = [];
    this._setupLeft = 0;
    this._open = false;
    this._started = true;
    if (this.password) {
      const args = this.username ? ['AUTH', this.username, this.password] : ['AUTH', this.password];
      this._send(args, { kind: 'fatal', setup: true, what: 'AUTH' });
    }
    if (this.urls.length > 1) this._send(['ROLE'], { kind: 'role', setup: true, what: 'ROLE' });
    if (this.token) {
      this._send(['SYNC', 'TOKEN', this.token], { kind: 'fatal', setup: true, what: 'SYNC TOKEN' });
    } else if (this.options.patterns && this.options.patterns.length > 0) {
      this._send(['SYNC', ...this.options.patterns], { kind: 'fatal', setup: true, what: 'SYNC' });
    }
    for (const p of [...this._queries.keys()].sort()) this._send(['QSUB', p], { kind: 'qsub', setup: true, what: 'QSUB ' + p, name: p, ids: ['q:' + p] });
    const keys = [...this._watches.keys()].sort();
    for (let i = 0; i < keys.length; i += MAX_WATCHED) {
      const chunk = keys.slice(i, i + MAX_WATCHED);
      this._send(['KWATCH', ...chunk], { kind: 'kwatch', setup: true, what: 'KWATCH', keys: chunk, ids: chunk.map((k) => 'w:' + k) });
    }
    for (const ch of [...this._channels.keys()].sort()) this._send(['SUBSCRIBE', ch], { kind: 'sub', setup: true, what: 'SUBSCRIBE ' + ch, ids: ['s:' + ch] });
    for (const p of [...this._pchannels.keys()].sort()) this._send(['PSUBSCRIBE', p], { kind: 'sub', setup: true, what: 'PSUBSCRIBE ' + p, ids: ['p:' + p] });
    // With nothing else to establish, a PING stands in: a server that
    // refuses the connection (maxclients) answers it with its error, which
    // must not be taken for the reply to the first write.
    if (this._setupLeft === 0) this._send(['PING'], { kind: 'fatal', setup: true, what: 'PING' });
  }

  /**
   * Sends a command and records it as outstanding.
   * @param {ReadonlyArray<string|number|bigint|boolean>} args
   * @param {Pending} p
   */
  _send(args, p) {
    this._fifo.push(p);
    if (p.setup) this._setupLeft++;
    this._ws.send(encodeCommand(args));
  }

  /** @param {Write|Call} it */
  _sendItem(it) {
    if (it.kind === 'write') {
      this._send(['DEDUP', it.clientId, it.id, ...it.args], { kind: 'write', setup: false, write: it });
      if (this.waitReplicas > 0 && !this._waitNeeded) {
        // One WAIT after the writes of this turn of the event loop.
        this._waitNeeded = true;
        const ws = this._ws;
        queueMicrotask(() => this._sendWait(ws));
      }
    } else {
      this._send(it.args, { kind: 'call', setup: false, call: it });
    }
    it.sent = true;
  }

  /**
   * Sends WAIT after writes, on the connection ws if it is still the current one.
   * @param {any} ws
   */
  _sendWait(ws) {
    if (!this._waitNeeded || this._ws !== ws || !this._open) return;
    this._waitNeeded = false;
    this._send(['WAIT', this.waitReplicas, this.waitTimeout], { kind: 'wait', setup: false, what: 'WAIT' });
  }

  /** The session is established: replay the outbox and the queued calls, in order. */
  _opened() {
    this._open = true;
    this._attempt = 0;
    this.stats.connects++;
    // Replay before telling anyone: a write made by a state listener must
    // go after the older ones, or its higher wire id would make the server
    // answer them +DUP without running them.
    for (const it of [...this._queue]) if (!it.sent) this._sendItem(it);
    this._setState({ state: 'open', attempt: 0, url: this.url });
  }

  /**
   * The connection dropped (or failed to open).
   * @param {string} reason
   */
  _dropped(reason) {
    const ws = this._ws;
    this._ws = null;
    this._open = false;
    this._started = false;
    if (ws) {
      ws.onopen = ws.onmessage = ws.onclose = ws.onerror = null;
      try {
        ws.close();
      } catch {
        // already closed
      }
    }
    this._fifo = [];
    this._waitNeeded = false;
    this._unquerying.clear();
    this._unwatching.clear();
    // Writes wait for the next connection (answered ones whose WAIT did
    // not come are sent again); plain calls that were sent may or may not
    // have run.
    this._queue = this._queue.filter((it) => {
      if (it.kind === 'write') {
        it.sent = false;
        it.acked = false;
        return true;
      }
      if (it.sent) {
        it.finished = true;
        it.reject(new ConnectionLostError());
        return false;
      }
      return true;
    });
    if (this._closed) return;
    if (this._halted) {
      this._setState({ state: 'closed', reason, attempt: this._attempt });
      return;
    }
    this._offline(reason);
  }

  /** @param {string} reason */
  _offline(reason) {
    if (this._paused) {
      this._setState({ state: 'offline', reason: 'offline', attempt: this._attempt });
      return;
    }
    const ceil = Math.min(this.maxBackoff, this.minBackoff * 2 ** Math.min(this._attempt, 30));
    const delay = Math.floor(this.random() * (ceil + 1));
    this._attempt++;
    this._setState({ state: 'offline', reason, retryIn: delay, attempt: this._attempt, url: this.url });
    this._timer = setTimeout(() => this._connect(), delay);
  }

  _retryNow() {
    if (this._timer) clearTimeout(this._timer);
    this._timer = null;
    this._connect();
  }

  /**
   * Closes the connection and stays offline until goOnline(): writes queue
   * in the outbox meanwhile (the demo's offline toggle; tests use it to
   * drop the connection).
   */
  goOffline() {
    this._paused = true;
    if (this._timer) clearTimeout(this._timer);
    this._timer = null;
    if (this._ws) this._dropped('offline');
    else if (!this._closed && !this._halted && this.state !== 'offline') this._setState({ state: 'offline', reason: 'offline', attempt: this._attempt });
  }

  /** Reconnects after goOffline(). */
  goOnline() {
    if (!this._paused) return;
    this._paused = false;
    this._attempt = 0;
    if (this._loaded) this._retryNow();
  }

  /**
   * Drops the current connection as a network failure would: the client
   * reconnects with backoff. For tests and diagnostics.
   */
  dropConnection() {
    if (this._ws) this._ws.close(4000, 'dropped by the application');
  }

  /** Reconnects now after the server refused the session, or skips the backoff wait. */
  reconnect() {
    this._halted = false;
    this._attempt = 0;
    if (this._ws) this._dropped('reconnecting');
    if (this._loaded && !this._paused) this._retryNow();
  }

  /**
   * Replaces the scope token: sent as SYNC TOKEN now when a session is
   * open, and on every later connection. After a refusal of the session
   * (an expired token), it reconnects.
   * @param {string} token
   */
  setToken(token) {
    this.token = token;
    if (this._halted) this.reconnect();
    else if (this._started) this._send(['SYNC', 'TOKEN', token], { kind: 'other', setup: false, what: 'SYNC TOKEN' });
  }

  /**
   * Replaces the password and, after a refusal of the session, reconnects.
   * @param {string} password
   */
  setPassword(password) {
    this.password = password;
    if (this._halted) this.reconnect();
  }

  /**
   * Closes the client: the connection closes, outbox changes are saved, and
   * every write or call still waiting rejects with ClosedError (the writes
   * stay saved and are replayed by the next client using this name).
   */
  async close() {
    if (this._closed) return;
    this._closed = true;
    if (this._timer) clearTimeout(this._timer);
    if (this._abort) this._abort.abort();
    if (typeof globalThis.removeEventListener === 'function') globalThis.removeEventListener('online', this._onlineHandler);
    if (this._ws) this._dropped('closed');
    for (const it of this._queue) {
      if (!it.finished && it.reject) it.reject(new ClosedError());
      it.finished = true;
    }
    this._setState({ state: 'closed', reason: 'closed by the application', attempt: this._attempt });
    try {
      await this.ready;
    } catch {
      // reported already
    }
    await this._flush();
    this._releaseAll();
    if (this._storage) this._storage.close();
  }

  _releaseAll() {
    for (const release of this._held.values()) if (release) release();
    this._held.clear();
  }

  // -- frames ----------------------------------------------------------------

  /** @param {string|ArrayBuffer} data */
  _onFrame(data) {
    let v;
    try {
      v = parseFrame(data);
    } catch (err) {
      this._report(err);
      this._dropped(`protocol error: ${err instanceof Error ? err.message : err}`);
      return;
    }
    switch (classifyFrame(v, (k) => this._keychangeInterest(k))) {
      case 'pubsub':
        this._deliver(v);
        return;
      case 'mutation':
        this._applyMutation(v);
        return;
      case 'keychange':
        this._applyKeychange(v);
        return;
      case 'confirm':
        this.stats.ignored++;
        return;
    }
    this._reply(v);
  }

  /**
   * Retires the oldest outstanding command with its reply.
   * @param {RespValue} v
   */
  _reply(v) {
    const p = this._fifo.shift();
    if (!p) {
      // No command is outstanding, so this is no reply: a frame of a kind
      // this client does not know (ignore unknown tags).
      this.stats.ignored++;
      return;
    }
    this.stats.replies++;
    const err = isError(v);
    switch (p.kind) {
      case 'write': {
        const w = /** @type {Write} */ (p.write);
        if (isReadOnly(v)) {
          // A replica: the write did not run and waits for the primary.
          this._needPrimary = true;
          this._dropped(`${v.value} (looking for the primary)`);
          return;
        }
        if (this.waitReplicas > 0) {
          // Resolved when a WAIT confirms it. +DUP to a replay keeps the
          // reply of the execution it stands for, when known.
          const dup = v.type === '+' && v.value === 'DUP';
          if (dup && w.answer) this.stats.dups++;
          if (!dup || !w.answer) w.answer = v;
          w.acked = true;
          break;
        }
        this._ackWrite(w, v);
        break;
      }
      case 'call': {
        const call = /** @type {Call} */ (p.call);
        const i = this._queue.indexOf(call);
        if (i >= 0) this._queue.splice(i, 1);
        call.finished = true;
        if (err) call.reject(new ReplyError(v.value));
        else call.resolve(toJS(v));
        if (isReadOnly(v)) {
          this._needPrimary = true;
          this._dropped(`${v.value} (looking for the primary)`);
          return;
        }
        break;
      }
      case 'role': {
        const role = v.type === '*' && v.value && v.value.length > 0 ? String(toJS(v.value[0])) : '';
        // A refusal (a token-scoped connection may not ask) leaves the
        // role unknown: a write's -READONLY will tell.
        if (!err && role !== 'master' && (!this.options.replicaOK || this._needPrimary)) {
          this._dropped(`${this.url} is a ${role}, not the primary`);
          return;
        }
        break;
      }
      case 'wait':
        if (err) {
          // A demoted primary: "WAIT cannot be used with replica instances".
          this._dropped(`WAIT refused: ${v.value}`);
          return;
        }
        if (Number(v.value) >= this.waitReplicas) {
          this._confirmAnswered();
        } else if (this._queue.some((it) => it.kind === 'write' && it.acked)) {
          // Too few replicas acknowledged: ask again.
          this._waitNeeded = true;
          this._sendWait(this._ws);
        }
        break;
      case 'fatal':
        if (err) {
          // A refusal of the session's credentials ends it until they
          // change: retrying the same ones cannot help. Any other refusal
          // (maxclients, loading) is retried with backoff.
          if (CREDENTIAL_ERRORS.has(v.value.split(' ', 1)[0])) this._halted = true;
          this._dropped(v.value);
          return;
        }
        break;
      case 'qsub':
        if (err) this._report(new ReplyError(`${v.value} (${p.what})`));
        else if (isQState(v)) this._applyQState(v);
        break;
      case 'qunsub':
      case 'kunwatch': {
        const m = p.kind === 'qunsub' ? this._unquerying : this._unwatching;
        for (const k of p.keys || [p.name]) {
          const n = (m.get(k) || 0) - 1;
          if (n > 0) m.set(k, n);
          else m.delete(k);
        }
        if (err) this._report(new ReplyError(v.value));
        this._retain();
        break;
      }
      default:
        if (err) this._report(new ReplyError(`${v.value} (${p.what})`));
    }
    if (p.ids) this._settle(p.ids, v);
    if (p.setup && --this._setupLeft === 0 && !this._open && this._ws) this._opened();
  }

  /**
   * Acknowledges a write: it leaves the outbox; its effect, from the reply,
   * joins the confirmed store.
   * @param {Write} w
   * @param {RespValue} v
   */
  _ackWrite(w, v) {
    if (w.finished) return; // dropped from a full outbox while in flight
    const oldest = this._oldestOn(w);
    const i = this._queue.indexOf(w);
    if (i >= 0) this._queue.splice(i, 1);
    this._writes--;
    w.finished = true;
    const dup = v.type === '+' && v.value === 'DUP';
    let effects = null;
    if (dup) {
      // Executed on an earlier connection whose reply was lost: the state
      // the session re-hydrated already holds its effect.
      this.stats.dups++;
    } else if (!isError(v)) {
      effects = effectsOf(this.store, w.args, v);
    }
    // When the write is the oldest pending one on its keys and the server
    // did exactly what the overlay predicted, the overlay (confirmed state
    // plus the remaining pending writes) stays as it is: no rebuild, so a
    // long replay costs linear time.
    let predicted = false;
    if (effects && oldest) predicted = sameEffects(effects, effectsOf(this.store, w.args));
    // What the view showed for the write's keys (pending entries are
    // replaced, never changed in place, once they leave the overlay).
    const before = new Map(w.keys.map((k) => [k, this._view(k)]));
    const touched = new Set(w.keys);
    this._retire(w);
    if (effects) {
      for (const e of effects) {
        const ch = this.store.apply(e);
        if (ch) for (const k of ch) touched.add(k);
      }
    }
    // A key the client does not sync stays in the confirmed store only
    // while writes to it are pending (nothing would keep it current).
    for (const k of touched) if (!this._pending.has(k) && !this._interested(k)) this.store.keys.delete(k);
    // Keys still pending are recomputed; the others now read from the
    // confirmed store.
    if (!predicted) this._rebuild(new Set([...touched].filter((k) => this._pending.has(k))), false);
    this._notify([...touched].filter((k) => !this._pending.has(k) && (!before.has(k) || !entriesEqual(before.get(k), this.store.raw(k)))));
    if (isError(v)) {
      const err = new ReplyError(v.value);
      if (w.reject) w.reject(err);
      else this._report(new ReplyError(`${v.value} (replayed ${w.args[0]} ${w.id})`));
    } else if (w.resolve) {
      w.resolve(toJS(v));
    }
    this._emit('outbox', this._writes);
  }

  /** Retires, oldest first, the writes a WAIT confirmed: those answered before it. */
  _confirmAnswered() {
    for (const it of [...this._queue]) {
      if (it.kind !== 'write') continue;
      if (!it.acked) break;
      it.acked = false;
      this._ackWrite(it, it.answer);
    }
  }

  /**
   * Reports whether no write older than w in the queue touches its keys.
   * @param {Write} w
   */
  _oldestOn(w) {
    for (const it of this._queue) {
      if (it === w) return true;
      if (it.kind === 'write' && it.keys.some((k) => w.keys.includes(k))) return false;
    }
    return true;
  }

  /**
   * Applies a change to the confirmed store and tells the callbacks of the
   * keys whose visible value changed.
   * @param {() => string[]|null} fn applies the change, returns the keys it changed
   */
  _confirm(fn) {
    const changed = fn();
    if (!changed || changed.length === 0) return;
    const pending = new Set(changed.filter((k) => this._pending.has(k)));
    this._rebuild(pending, false);
    this._notify(changed.filter((k) => !pending.has(k)));
  }

  /** @param {RespValue} v */
  _applyMutation(v) {
    this.stats.mutations++;
    const args = elemStrings(v);
    this._confirm(() => {
      const ch = args ? this.store.apply(args) : null;
      if (!ch) this.stats.unknownEffects++;
      return ch;
    });
  }

  /** @param {RespValue} v */
  _applyKeychange(v) {
    this.stats.keychanges++;
    const key = v.value[1].value;
    this._confirm(() => (this.store.setState(key, v.value[2]) ? [key] : []));
  }

  /**
   * Applies ["qstate", pattern, k1, v1, …]: listed keys take their values
   * (strings without an expiry time until a PEXPIREAT push gives one),
   * local keys matching the pattern that are not listed are gone.
   * @param {RespValue} v
   */
  _applyQState(v) {
    const pattern = v.value[1].value;
    const listed = new Set();
    this._confirm(() => {
      const changed = [];
      for (let i = 2; i + 1 < v.value.length; i += 2) {
        const k = v.value[i];
        if ((k.type !== '$' && k.type !== '+') || k.value === null) continue;
        listed.add(k.value);
        // Without the expiry known so far: the PEXPIREAT pushes that follow
        // the qstate give every key with a time to live its own.
        if (this.store.setState(k.value, v.value[i + 1], false)) changed.push(k.value);
      }
      changed.push(...this.store.removeMatching(pattern, listed));
      return changed;
    });
  }

  /** Drops from the confirmed store the keys nothing covers any more. */
  _retain() {
    this.store.retain((k) => this._interested(k));
  }

  /** @param {RespValue} v */
  _deliver(v) {
    this.stats.messages++;
    const args = elemStrings(v);
    if (!args) return;
    const kind = args[0].toLowerCase();
    if (kind === 'pmessage' && args.length === 4) {
      for (const fn of [...(this._pchannels.get(args[1]) || [])]) this._call(fn, args[3], args[2], args[1]);
    } else if (args.length === 3 && kind !== 'pmessage') {
      for (const fn of [...(this._channels.get(args[1]) || [])]) this._call(fn, args[2], args[1]);
    }
  }

  /** @param {Function} fn @param {...any} args */
  _call(fn, ...args) {
    try {
      fn(...args);
    } catch (err) {
      this._report(err);
    }
  }

  /**
   * Whether the client keeps key locally: in its SYNC scope, matching a
   * live query, or watched.
   * @param {string} key
   */
  _interested(key) {
    if (this._watches.has(key)) return true;
    for (const p of this._queries.keys()) if (globMatch(p, key)) return true;
    for (const p of this._scope()) if (globMatch(p, key)) return true;
    return false;
  }

  /** The patterns whose keys the server pushes: the token's, or the SYNC patterns. */
  _scope() {
    if (!this.token) return this.options.patterns || [];
    if (this._scopeOf !== this.token) {
      this._scopeOf = this.token;
      this._scopePatterns = tokenPatterns(this.token);
    }
    return this._scopePatterns;
  }

  /**
   * Whether the server may send a keychange for key: watched or matching a
   * live query, counting those whose removal is not answered yet.
   * @param {string} key
   */
  _keychangeInterest(key) {
    if (this._watches.has(key) || this._unwatching.has(key)) return true;
    for (const p of this._queries.keys()) if (globMatch(p, key)) return true;
    for (const p of this._unquerying.keys()) if (globMatch(p, key)) return true;
    return false;
  }

  /**
   * Runs the callbacks of the live queries matching each key and of its
   * watchers, with the key's visible value.
   * @param {string[]} keys
   */
  _notify(keys) {
    if (keys.length === 0 || (this._queries.size === 0 && this._watches.size === 0)) return;
    for (const k of keys) {
      const fns = [];
      for (const [p, set] of this._queries) if (globMatch(p, k)) fns.push(...set);
      const ws = this._watches.get(k);
      if (ws) fns.push(...ws);
      if (fns.length === 0) continue;
      const value = plainValue(this._view(k));
      for (const fn of fns) this._call(fn, k, value);
    }
  }

  // -- writes and calls --------------------------------------------------------

  /**
   * Sends a command. Writes go through the outbox: wrapped in DEDUP,
   * applied at once to the local view, replayed until acknowledged; the
   * promise resolves with the server's reply ("DUP" when an earlier
   * connection had already executed it) or rejects with a ReplyError.
   * Read-only and connection-scoped commands (GET, PUBLISH, …) are sent
   * plainly: queued while offline, rejected with ConnectionLostError if the
   * connection drops after sending them. Commands the client manages itself
   * (SUBSCRIBE, QSUB, KWATCH, SYNC, AUTH, …) are refused.
   * @param {...(string|number|bigint|boolean)} args
   * @returns {Promise<any>}
   */
  command(...args) {
    if (args.length === 0) return Promise.reject(new TypeError('recached-edge: empty command'));
    let strs;
    try {
      strs = args.map(argString);
    } catch (err) {
      return Promise.reject(err);
    }
    const route = routeOf(strs);
    if (route === 'owned') {
      return Promise.reject(new Error(`recached-edge: ${strs[0].toUpperCase()} is managed by the client; use its methods`));
    }
    if (this._closed) return Promise.reject(new ClosedError());
    return route === 'write' ? this._write(strs) : this._plain(strs);
  }

  /** @param {string[]} args */
  _plain(args) {
    return new Promise((resolve, reject) => {
      /** @type {Call} */
      const call = { kind: 'call', args, sent: false, finished: false, resolve, reject };
      this._queue.push(call);
      if (this._open) this._sendItem(call);
    });
  }

  /** @param {string[]} args */
  _write(args) {
    return new Promise((resolve, reject) => {
      /** @type {Write} */
      const w = {
        kind: 'write', args, keys: keysOf(args), slot: 0, clientId: '', epoch: 0, counter: 0, id: '',
        sent: false, finished: false, resolve, reject,
      };
      if (this.clientId) {
        try {
          this._assign(w);
        } catch (err) {
          reject(err);
          return;
        }
      }
      this._queue.push(w);
      this._writes++;
      // The optimistic application: the view shows the write at once.
      this._addPending(w);
      const effects = effectsOf(this._overlay, args);
      const changed = new Set();
      if (effects) {
        for (const e of effects) {
          const ch = this._overlay.apply(e);
          if (ch) for (const k of ch) changed.add(k);
        }
      }
      this._trim();
      this._notify([...changed]);
      this._emit('outbox', this._writes);
      if (this._open && !w.finished) this._sendItem(w);
    });
  }

  /** SET key value [options]. @param {string} key @param {string|number} value @param {...(string|number)} options */
  set(key, value, ...options) {
    return this.command('SET', key, value, ...options);
  }

  /** @param {...string} keys */
  del(...keys) {
    return this.command('DEL', ...keys);
  }

  /** @param {string} key */
  incr(key) {
    return this.command('INCR', key);
  }

  /** @param {string} key @param {number|bigint} by */
  incrby(key, by) {
    return this.command('INCRBY', key, by);
  }

  /** @param {string} key */
  decr(key) {
    return this.command('DECR', key);
  }

  /** @param {string} key @param {number|bigint} by */
  decrby(key, by) {
    return this.command('DECRBY', key, by);
  }

  /** @param {string} key @param {string} value */
  append(key, value) {
    return this.command('APPEND', key, value);
  }

  /**
   * HSET key field value [field value …], or HSET key {field: value, …}.
   * @param {string} key
   * @param {...any} rest
   */
  hset(key, ...rest) {
    if (rest.length === 1 && rest[0] !== null && typeof rest[0] === 'object') {
      return this.command('HSET', key, ...Object.entries(rest[0]).flat());
    }
    return this.command('HSET', key, ...rest);
  }

  /** @param {string} key @param {...string} fields */
  hdel(key, ...fields) {
    return this.command('HDEL', key, ...fields);
  }

  /** @param {string} key @param {string} field @param {number|bigint} by */
  hincrby(key, field, by) {
    return this.command('HINCRBY', key, field, by);
  }

  /** @param {string} key @param {...(string|number)} values */
  lpush(key, ...values) {
    return this.command('LPUSH', key, ...values);
  }

  /** @param {string} key @param {...(string|number)} values */
  rpush(key, ...values) {
    return this.command('RPUSH', key, ...values);
  }

  /** @param {string} key @param {number} [count] */
  lpop(key, count) {
    return count === undefined ? this.command('LPOP', key) : this.command('LPOP', key, count);
  }

  /** @param {string} key @param {number} [count] */
  rpop(key, count) {
    return count === undefined ? this.command('RPOP', key) : this.command('RPOP', key, count);
  }

  /** @param {string} key @param {...(string|number)} members */
  sadd(key, ...members) {
    return this.command('SADD', key, ...members);
  }

  /** @param {string} key @param {...(string|number)} members */
  srem(key, ...members) {
    return this.command('SREM', key, ...members);
  }

  /**
   * ZADD key score member [score member …], or ZADD key {member: score, …}.
   * @param {string} key
   * @param {...any} rest
   */
  zadd(key, ...rest) {
    if (rest.length === 1 && rest[0] !== null && typeof rest[0] === 'object') {
      return this.command('ZADD', key, ...Object.entries(rest[0]).flatMap(([m, s]) => [s, m]));
    }
    return this.command('ZADD', key, ...rest);
  }

  /** @param {string} key @param {...(string|number)} members */
  zrem(key, ...members) {
    return this.command('ZREM', key, ...members);
  }

  /** @param {string} key @param {number} by @param {string} member */
  zincrby(key, by, member) {
    return this.command('ZINCRBY', key, by, member);
  }

  /** @param {string} key @param {number} seconds */
  expire(key, seconds) {
    return this.command('EXPIRE', key, seconds);
  }

  /** @param {string} key @param {number} ms */
  pexpire(key, ms) {
    return this.command('PEXPIRE', key, ms);
  }

  /** @param {string} key */
  persist(key) {
    return this.command('PERSIST', key);
  }

  /**
   * JSET key path value [NX|XX]: sets the JSON value at path (a new
   * document is created at "$"). value is JSON text when it is a string
   * ('"text"', '{"a":1}', '9007199254740993'); any other value is sent as
   * JSON.stringify gives it. Resolves with "OK", or null when NX or XX
   * stopped it.
   * @param {string} key @param {string} path @param {any} value @param {'NX'|'XX'} [cond]
   * @returns {Promise<string|null>}
   */
  jset(key, path, value, cond) {
    let text;
    try {
      text = jsonArg(value);
    } catch (err) {
      return Promise.reject(err);
    }
    return cond === undefined ? this.command('JSET', key, path, text) : this.command('JSET', key, path, text, cond);
  }

  /**
   * JMERGE key path patch: applies an RFC 7386 merge patch at path (null
   * members remove, objects merge, anything else replaces; null at "$"
   * deletes the key). patch is JSON text or a value, as for jset.
   * @param {string} key @param {string} path @param {any} patch
   * @returns {Promise<string>}
   */
  jmerge(key, path, patch) {
    let text;
    try {
      text = jsonArg(patch);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.command('JMERGE', key, path, text);
  }

  /**
   * JDEL key [path]: removes the value at path, or the whole key ("$",
   * the default). Resolves with 1 when something was removed, else 0.
   * @param {string} key @param {string} [path]
   * @returns {Promise<number>}
   */
  jdel(key, path) {
    return path === undefined ? this.command('JDEL', key) : this.command('JDEL', key, path);
  }

  /**
   * JNUMINCRBY key path increment: adds to the number at path; resolves
   * with the new number's JSON text.
   * @param {string} key @param {string} path @param {number|bigint|string} by
   * @returns {Promise<string>}
   */
  jnumincrby(key, path, by) {
    return this.command('JNUMINCRBY', key, path, by);
  }

  /**
   * JARRAPPEND key path value…: appends values (JSON text or values, as
   * for jset) to the array at path; resolves with its new length.
   * @param {string} key @param {string} path @param {...any} values
   * @returns {Promise<number>}
   */
  jarrappend(key, path, ...values) {
    let texts;
    try {
      texts = values.map(jsonArg);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.command('JARRAPPEND', key, path, ...texts);
  }

  /**
   * Publishes a message (never wrapped: PUBLISH is connection-scoped) and
   * resolves with the number of receivers.
   * @param {string} channel
   * @param {string} message
   * @returns {Promise<number>}
   */
  publish(channel, message) {
    return this.command('PUBLISH', channel, message);
  }

  // -- reads from the local view ---------------------------------------------

  /** @param {string} key @param {string} type */
  _typed(key, type) {
    const e = this._view(key);
    if (e && e.type !== type) throw new ReplyError(WRONGTYPE);
    return e;
  }

  /**
   * The string value of key, or null.
   * @param {string} key
   * @returns {string|null}
   */
  get(key) {
    const e = this._typed(key, 'string');
    return e ? e.value : null;
  }

  /** @param {...string} keys @returns {Array<string|null>} */
  mget(...keys) {
    return keys.map((k) => {
      const e = this._view(k);
      return e && e.type === 'string' ? e.value : null;
    });
  }

  /** The number of the keys that exist. @param {...string} keys */
  exists(...keys) {
    return keys.filter((k) => this._view(k)).length;
  }

  /** The type of key as TYPE names it ("none" when absent). @param {string} key */
  type(key) {
    const e = this._view(key);
    return e ? e.marker : 'none';
  }

  /** Milliseconds to live: -2 absent, -1 no expiry. @param {string} key */
  pttl(key) {
    const e = this._view(key);
    if (!e) return -2;
    if (!e.expireAt) return -1;
    return Math.max(0, e.expireAt - this.now());
  }

  /** Seconds to live: -2 absent, -1 no expiry. @param {string} key */
  ttl(key) {
    const ms = this.pttl(key);
    return ms < 0 ? ms : Math.round(ms / 1000);
  }

  /** @param {string} key @param {string} field @returns {string|null} */
  hget(key, field) {
    const e = this._typed(key, 'hash');
    const v = e ? e.value.get(field) : undefined;
    return v === undefined ? null : v;
  }

  /** The fields of a hash as an object ({} when absent). @param {string} key @returns {Record<string, string>} */
  hgetall(key) {
    const e = this._typed(key, 'hash');
    return e ? Object.fromEntries(e.value) : {};
  }

  /** @param {string} key @returns {string[]} */
  hkeys(key) {
    const e = this._typed(key, 'hash');
    return e ? [...e.value.keys()] : [];
  }

  /** @param {string} key */
  hlen(key) {
    const e = this._typed(key, 'hash');
    return e ? e.value.size : 0;
  }

  /** @param {string} key @param {string} field */
  hexists(key, field) {
    const e = this._typed(key, 'hash');
    return e ? e.value.has(field) : false;
  }

  /**
   * The elements of a list between start and stop, inclusive (negative
   * indexes count from the end), as LRANGE.
   * @param {string} key @param {number} [start] @param {number} [stop]
   * @returns {string[]}
   */
  lrange(key, start = 0, stop = -1) {
    const e = this._typed(key, 'list');
    if (!e) return [];
    return rangeOf(e.value, start, stop);
  }

  /** @param {string} key */
  llen(key) {
    const e = this._typed(key, 'list');
    return e ? e.value.length : 0;
  }

  /** @param {string} key @param {number} index @returns {string|null} */
  lindex(key, index) {
    const e = this._typed(key, 'list');
    if (!e) return null;
    const i = index < 0 ? index + e.value.length : index;
    return i >= 0 && i < e.value.length ? e.value[i] : null;
  }

  /** The members of a set, sorted. @param {string} key @returns {string[]} */
  smembers(key) {
    const e = this._typed(key, 'set');
    return e ? [...e.value].sort(compareStrings) : [];
  }

  /** @param {string} key @param {string} member */
  sismember(key, member) {
    const e = this._typed(key, 'set');
    return e ? e.value.has(member) : false;
  }

  /** @param {string} key */
  scard(key) {
    const e = this._typed(key, 'set');
    return e ? e.value.size : 0;
  }

  /**
   * The members of a sorted set between ranks start and stop, inclusive,
   * lowest score first (rev: highest first), as ZRANGE; withScores gives
   * [member, score] pairs.
   * @param {string} key @param {number} [start] @param {number} [stop]
   * @param {{withScores?: boolean, rev?: boolean}} [opts]
   * @returns {Array<string>|Array<[string, number]>}
   */
  zrange(key, start = 0, stop = -1, opts = {}) {
    const e = this._typed(key, 'zset');
    if (!e) return [];
    const all = zsetOrder(e.value);
    if (opts.rev) all.reverse();
    const r = rangeOf(all, start, stop);
    return opts.withScores ? r : r.map((p) => p[0]);
  }

  /** @param {string} key @param {string} member @returns {number|null} */
  zscore(key, member) {
    const e = this._typed(key, 'zset');
    const s = e ? e.value.get(member) : undefined;
    return s === undefined ? null : s;
  }

  /** @param {string} key */
  zcard(key) {
    const e = this._typed(key, 'zset');
    return e ? e.value.size : 0;
  }

  /**
   * The JSON text of the value at path (default "$", the whole document) in
   * key's document, as the server's JGET key path replies it: compact, in
   * the server's member order, numbers exactly as written (an integer
   * beyond 2^53 keeps every digit; JSON.parse of the text would round it).
   * null when the key or the value does not exist, or while only the key's
   * type is known (its content arrives in the pushes that follow). Throws a
   * ReplyError for a key of another type (WRONGTYPE), a malformed path, or
   * a path through a value that is not the container it needs (ERR …).
   * @param {string} key @param {string} [path]
   * @returns {string|null}
   */
  jget(key, path = '$') {
    return jsonRead(this._view(key), path, jsonText);
  }

  /**
   * The type of the value at path as JTYPE names it: "null", "boolean",
   * "integer" (a number written as an integer that fits 64 bits), "number",
   * "string", "array", "object"; null when there is none. Throws as jget.
   * @param {string} key @param {string} [path]
   * @returns {string|null}
   */
  jtype(key, path = '$') {
    return jsonRead(this._view(key), path, jsonTypeName);
  }

  /**
   * XRANGE key start end [COUNT count] on the local replica (pending writes
   * included): [id, [field, value, …]] pairs; start and end are ids, "-",
   * "+", or "(id" (exclusive). Empty when the key is absent or its content
   * has not arrived. Throws a ReplyError: WRONGTYPE, or ERR for a bad id.
   * @param {string} key @param {string} [start] @param {string} [end] @param {number} [count]
   */
  xrange(key, start = '-', end = '+', count = 0) {
    return this._viewStore(key).xrange(key, start, end, count);
  }

  /**
   * XREVRANGE key end start [COUNT count] on the local replica, as xrange.
   * @param {string} key @param {string} [end] @param {string} [start] @param {number} [count]
   */
  xrevrange(key, end = '+', start = '-', count = 0) {
    return this._viewStore(key).xrevrange(key, end, start, count);
  }

  /**
   * XLEN key on the local replica. Throws WRONGTYPE for another type.
   * @param {string} key
   */
  xlen(key) {
    return this._viewStore(key).xlen(key);
  }

  /**
   * The stream's whole state on the local replica (StreamValue.info:
   * entries, counters, groups, consumers, pending entries with delivery
   * times and counts); null when absent or not arrived yet. Throws
   * WRONGTYPE for another type.
   * @param {string} key
   */
  xinfo(key) {
    return this._viewStore(key).xinfo(key);
  }

  /**
   * The local keys matching pattern (pending writes included), sorted.
   * @param {string} [pattern]
   * @returns {string[]}
   */
  keys(pattern = '*') {
    const all = new Set(this.store.match(pattern).filter((k) => !this._pending.has(k)));
    for (const k of this._pending.keys()) if (this._overlay.raw(k) && globMatch(pattern, k)) all.add(k);
    return [...all].sort(compareStrings);
  }

  /**
   * The value of key as plain JavaScript (see plainValue), whatever its type.
   * @param {string} key
   */
  value(key) {
    return plainValue(this._view(key));
  }

  // -- live queries, watches and subscriptions ---------------------------------

  /**
   * Registers a live query (QSUB): the local store holds every key matching
   * pattern and keeps it current; callback(key, value) runs for each
   * change, remote or local, including the initial state.
   * @param {string} pattern
   * @param {(key: string, value: any) => void} callback
   * @returns {Handle}
   */
  query(pattern, callback) {
    let set = this._queries.get(pattern);
    const first = !set;
    if (first) {
      if (this._queries.size >= MAX_QUERIES) throw new Error(`recached-edge: at most ${MAX_QUERIES} live queries per connection`);
      this._queries.set(pattern, (set = new Set()));
      this._deferred('q:' + pattern);
      if (this._started) this._send(['QSUB', pattern], { kind: 'qsub', setup: false, what: 'QSUB ' + pattern, name: pattern, ids: ['q:' + pattern] });
    }
    set.add(callback);
    if (!first) {
      // A later callback for the same pattern starts from what is known.
      for (const k of this.keys(pattern)) this._call(callback, k, this.value(k));
    }
    const ready = this._deferred('q:' + pattern).promise;
    return {
      ready,
      close: () => {
        if (!set.delete(callback) || set.size > 0 || this._queries.get(pattern) !== set) return;
        this._queries.delete(pattern);
        this._ready.delete('q:' + pattern);
        if (this._started) {
          this._unquerying.set(pattern, (this._unquerying.get(pattern) || 0) + 1);
          this._send(['QUNSUB', pattern], { kind: 'qunsub', setup: false, what: 'QUNSUB', name: pattern });
        } else {
          this._retain();
        }
      },
    };
  }

  /**
   * Watches a key (KWATCH): callback(key, value) runs when another client
   * changes it. A watched key gets keychange frames only: its value is the
   * full string, null when deleted, or {type} for other types (query the
   * key to keep its content).
   * @param {string} key
   * @param {(key: string, value: any) => void} callback
   * @returns {Handle}
   */
  watch(key, callback) {
    let set = this._watches.get(key);
    if (!set) {
      if (this._watches.size >= MAX_WATCHED) throw new Error(`recached-edge: at most ${MAX_WATCHED} watched keys per connection`);
      this._watches.set(key, (set = new Set()));
      this._deferred('w:' + key);
      if (this._started) this._send(['KWATCH', key], { kind: 'kwatch', setup: false, what: 'KWATCH ' + key, keys: [key], ids: ['w:' + key] });
    }
    set.add(callback);
    return {
      ready: this._deferred('w:' + key).promise,
      close: () => {
        if (!set.delete(callback) || set.size > 0 || this._watches.get(key) !== set) return;
        this._watches.delete(key);
        this._ready.delete('w:' + key);
        if (this._started) {
          this._unwatching.set(key, (this._unwatching.get(key) || 0) + 1);
          this._send(['KUNWATCH', key], { kind: 'kunwatch', setup: false, what: 'KUNWATCH', keys: [key] });
        } else {
          this._retain();
        }
      },
    };
  }

  /**
   * Subscribes to a channel: callback(message, channel) runs for each
   * message. Subscriptions are re-established on every reconnect.
   * @param {string} channel
   * @param {(message: string, channel: string) => void} callback
   * @returns {Handle}
   */
  subscribe(channel, callback) {
    return this._subscribe(this._channels, 'SUBSCRIBE', 'UNSUBSCRIBE', 's:', channel, callback);
  }

  /**
   * Subscribes to the channels matching a pattern: callback(message,
   * channel, pattern).
   * @param {string} pattern
   * @param {(message: string, channel: string, pattern: string) => void} callback
   * @returns {Handle}
   */
  psubscribe(pattern, callback) {
    return this._subscribe(this._pchannels, 'PSUBSCRIBE', 'PUNSUBSCRIBE', 'p:', pattern, callback);
  }

  /**
   * @param {Map<string, Set<Function>>} map @param {string} cmd @param {string} uncmd
   * @param {string} prefix @param {string} name @param {Function} callback
   */
  _subscribe(map, cmd, uncmd, prefix, name, callback) {
    let set = map.get(name);
    const id = prefix + name;
    if (!set) {
      map.set(name, (set = new Set()));
      this._deferred(id);
      if (this._started) this._send([cmd, name], { kind: 'sub', setup: false, what: cmd + ' ' + name, ids: [id] });
    }
    set.add(callback);
    return {
      ready: this._deferred(id).promise,
      close: () => {
        if (!set.delete(callback) || set.size > 0 || map.get(name) !== set) return;
        map.delete(name);
        this._ready.delete(id);
        if (this._started) this._send([uncmd, name], { kind: 'unsub', setup: false, what: uncmd + ' ' + name });
      },
    };
  }

  /**
   * The acceptance promise of a registration, created on first use.
   * @param {string} id
   */
  _deferred(id) {
    let d = this._ready.get(id);
    if (!d) {
      /** @type {(v?: any) => void} */
      let resolve = () => undefined;
      /** @type {(err: Error) => void} */
      let reject = () => undefined;
      const promise = new Promise((res, rej) => {
        resolve = res;
        reject = rej;
      });
      promise.catch(() => undefined); // a refusal is also an error event
      d = { resolve, reject, promise };
      this._ready.set(id, d);
    }
    return d;
  }

  /**
   * Settles the acceptance of registrations with the server's reply (the
   * first reply counts; later sessions re-send them silently).
   * @param {string[]} ids
   * @param {RespValue} v
   */
  _settle(ids, v) {
    for (const id of ids) {
      const d = this._ready.get(id);
      if (!d) continue;
      if (isError(v)) d.reject(new ReplyError(v.value));
      else d.resolve();
    }
  }
}

/**
 * A json write's value argument: a string is JSON text already; any other
 * value is written with JSON.stringify.
 * @param {any} v
 * @returns {string}
 */
function jsonArg(v) {
  if (typeof v === 'string') return v;
  const s = JSON.stringify(v);
  if (s === undefined) throw new TypeError(`recached-edge: ${typeof v} is not a JSON value`);
  return s;
}

/**
 * Reports whether two lists of effects are the same.
 * @param {string[][]} a @param {string[][]|null} b
 */
function sameEffects(a, b) {
  if (!b || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    if (a[i].length !== b[i].length) return false;
    for (let j = 0; j < a[i].length; j++) if (a[i][j] !== b[i][j]) return false;
  }
  return true;
}

/**
 * LRANGE-style slice: start and stop inclusive, negative from the end.
 * @template T
 * @param {T[]} a @param {number} start @param {number} stop
 * @returns {T[]}
 */
function rangeOf(a, start, stop) {
  const n = a.length;
  if (start < 0) start += n;
  if (stop < 0) stop += n;
  start = Math.max(start, 0);
  if (start > stop || start >= n) return [];
  return a.slice(start, Math.min(stop, n - 1) + 1);
}

/**
 * The wire id of a write: (epoch << 32) | counter, in decimal (computed
 * with BigInt: it exceeds 2^53).
 * @param {number} epoch
 * @param {number} counter
 * @returns {string}
 */
export function wireId(epoch, counter) {
  return ((BigInt(epoch) << 32n) | BigInt(counter)).toString();
}

/**
 * Splits a wire id into its epoch and counter.
 * @param {string} id
 * @returns {{epoch: number, counter: number}}
 */
export function splitWireId(id) {
  const n = BigInt(id);
  return { epoch: Number(n >> 32n), counter: Number(n & 0xffffffffn) };
}

// ---------------------------------------------------------------------------
// 8. connect()

/**
 * Connects to a recached WebSocket bridge and returns the client at once;
 * it loads its identity and outbox from IndexedDB (client.ready), then
 * connects and reconnects with backoff until close().
 *
 *   const db = connect('ws://127.0.0.1:6380/', { patterns: ['todo:*'] });
 *   db.query('todo:*', (key, value) => render());
 *   await db.hset('todo:1', { text: 'milk', done: '0' });
 *
 * @param {string} url ws:// or wss:// URL of the bridge ("/" path)
 * @param {ConnectOptions} [options]
 * @returns {Client}
 */
export function connect(url, options) {
  return new Client(url, options);
}
