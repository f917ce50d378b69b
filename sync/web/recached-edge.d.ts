// Type declarations of recached-edge (recached-edge.js), the browser client
// of recached's sync protocol.

/** The seed's client outbox limit: beyond it the oldest write is dropped. */
export const MAX_OUTBOX: 10000;
/** Live queries per connection. */
export const MAX_QUERIES: 64;
/** Watched keys per connection. */
export const MAX_WATCHED: 1024;
/** Bulk string and whole message limit, in bytes. */
export const MAX_MESSAGE: number;
/** The module's version. */
export const VERSION: string;
/** The IndexedDB schema version this module writes. */
export const SCHEMA_VERSION: number;
/** The object stores of the client's database; upgrades only add stores. */
export const STORES: ReadonlyArray<{ readonly name: string; readonly keyPath: string }>;

/** An error reply from the server; code is its prefix ("ERR", "NOPERM", …). */
export class ReplyError extends Error {
  constructor(message: string);
  readonly code: string;
}
/** A malformed frame from the server. */
export class ProtocolError extends Error {}
/** A write dropped, unacknowledged, from a full outbox. */
export class DroppedError extends Error {}
/** A plain command whose connection dropped before its reply. */
export class ConnectionLostError extends Error {}
/** The client was closed first. */
export class ClosedError extends Error {}

/** A command argument: numbers, bigints and booleans are sent in decimal. */
export type Arg = string | number | bigint | boolean;

/** A parsed RESP value: type is its prefix character. */
export interface RespValue {
  type: string;
  value: any;
}

/** The seed's frame taxonomy. */
export type FrameKind = 'reply' | 'mutation' | 'pubsub' | 'keychange' | 'confirm';

export function utf8Length(s: string): number;
/** Encodes a command as a RESP array of bulk strings (one frame's text). */
export function encodeCommand(args: ReadonlyArray<Arg>): string;
/** Parses a frame holding exactly one RESP value. */
export function parseFrame(data: string | ArrayBuffer | Uint8Array): RespValue;
/** A parsed value as plain JavaScript (errors become ReplyError values). */
export function toJS(v: RespValue): any;
/** Classifies a frame; interested tells whether a keychange's key is one the client follows. */
export function classifyFrame(v: RespValue, interested?: (key: string) => boolean): FrameKind;
export function isQState(v: RespValue): boolean;
/** Redis KEYS glob matching. */
export function globMatch(pattern: string, key: string): boolean;
/** (epoch << 32) | counter, in decimal. */
export function wireId(epoch: number, counter: number): string;
export function splitWireId(id: string): { epoch: number; counter: number };

/** A JSON value as JSON.parse gives it. */
export type JSONValue = null | boolean | number | string | JSONValue[] | { [name: string]: JSONValue };

/**
 * A key's value as plain JavaScript: a string; an object of fields (hash);
 * an array (list); a sorted array of members (set); [member, score] pairs
 * in rank order (sorted set); a json key's document as JSON.parse gives it
 * (integers beyond 2^53 rounded: Client.jget has the exact text); {type}
 * for a type the store does not model (ratelimit) and for a json key whose
 * content has not arrived yet; null when the key does not exist.
 */
export type PlainValue =
  | string
  | Record<string, string>
  | string[]
  | Array<[string, number]>
  | JSONValue
  | StreamInfo
  | { type: string }
  | null;

/** A stream entry as XRANGE replies it: its id and its fields and values, alternating. */
export type StreamEntryPair = [id: string, fields: string[]];

/** A stream's whole local state (Store.xinfo, Client.xinfo, plainValue): XINFO STREAM FULL's content, idle times aside. */
export interface StreamInfo {
  length: number;
  lastGeneratedId: string;
  maxDeletedEntryId: string;
  entriesAdded: number;
  entries: StreamEntryPair[];
  groups: Array<{
    name: string;
    lastDeliveredId: string;
    /** -1 when unknown. */
    entriesRead: number;
    consumers: string[];
    /** [id, consumer, delivery time (Unix ms, the server's clock), delivery count], in id order. */
    pending: Array<[id: string, consumer: string, deliveryTime: number, deliveryCount: number]>;
  }>;
}

/** Parses "ms-seq", "ms", "-" or "+" as one BigInt (ms << 64 | seq) ordered as ids are; null when malformed. */
export function parseStreamID(s: string): bigint | null;
/** The "ms-seq" text of an id parseStreamID gave. */
export function streamIDText(n: bigint): string;
export interface StreamPending { id: bigint; consumer: string; deliveryTime: number; deliveryCount: number }
export interface StreamGroup { name: string; lastId: bigint; entriesRead: number; consumers: Set<string>; pending: Map<bigint, StreamPending> }
/** A stream key's local value. */
export class StreamValue {
  entries: Array<{ id: bigint; fields: string[] }>;
  lastId: bigint;
  entriesAdded: number;
  maxDeletedId: bigint;
  groups: Map<string, StreamGroup>;
  clone(): StreamValue;
  has(id: bigint): boolean;
  range(start: bigint, end: bigint, count: number, rev: boolean): StreamEntryPair[];
  info(): StreamInfo;
}
/** Applies a stream effect (XADD, XTRIM, XDEL, XSETID, XACK, XCLAIM, XGROUP …) to s (null: none); returns the stream afterwards. Throws when it does not fit. */
export function applyStreamEffect(s: StreamValue | null, args: ReadonlyArray<string>, now: number): StreamValue | null;

export interface Entry {
  type: 'string' | 'hash' | 'list' | 'set' | 'zset' | 'json' | 'stream' | 'other';
  /** The server's type name: "string", …, "json", "stream", "ratelimit". */
  marker: string;
  /** A string, Map, array, Set, JSONDoc (null while only a json key's marker is known), or null. */
  value: any;
  /** Unix ms; 0 for none. */
  expireAt: number;
}

/** JTYPE's names of JSON types ("integer": written as an integer that fits 64 bits). */
export type JSONType = 'null' | 'boolean' | 'integer' | 'number' | 'string' | 'array' | 'object';

/** Containers nest at most this deep in a document (the server's limit). */
export const MAX_JSON_DEPTH: 128;

/** A JSON number kept as the literal it was written with ("9007199254740993", "1.50"). */
export class JSONNumber {
  constructor(text: string);
  readonly text: string;
}
/**
 * A json document's tree in the store: numbers are JSONNumber, objects are
 * Maps (member order kept), arrays are arrays.
 */
export type JSONTree = null | boolean | string | JSONNumber | JSONTree[] | Map<string, JSONTree>;
/** A JSON text or path that does not parse, or an effect that does not fit; message in the server's words. */
export class JSONError extends Error {}
/** One segment of a JSON path: a member name (key), or when key is undefined an array index (negative from the end). */
export interface PathSeg {
  key: string | undefined;
  index: number;
}

/** A json key's document. */
export class JSONDoc {
  constructor(root: JSONTree);
  root: JSONTree;
  /** Compact JSON text, as the server's JGET key answers. */
  text(): string;
  clone(): JSONDoc;
  /** JSET's rules; throws a JSONError (changing nothing) when the path does not fit. */
  set(segs: PathSeg[], v: JSONTree): void;
  /** JMERGE's rules (RFC 7386); true when the patch removes the document (null at the root). */
  merge(segs: PathSeg[], patch: JSONTree): boolean;
  /** JDEL's rules below the root; whether something was removed. */
  delete(segs: PathSeg[]): boolean;
}
/** Parses JSON text as strictly as the server (nesting at most 128); throws a JSONError. */
export function parseJSON(text: string): JSONTree;
/** A tree as the server's compact JSON text. */
export function jsonText(v: JSONTree): string;
/** JTYPE's name of a value. */
export function jsonTypeName(v: JSONTree): JSONType;
/** Parses a path of the server's JSONPath subset ($, $.a, $["a b"], $['a'], $[0], $[-1], legacy .a); throws a JSONError. */
export function parseJSONPath(path: string): PathSeg[];
/** The canonical form the server writes paths in. */
export function formatJSONPath(segs: PathSeg[], n?: number): string;
/** The value at a path, undefined when absent; throws a JSONError through a value of the wrong kind. */
export function jsonLookup(root: JSONTree, segs: PathSeg[], n?: number): JSONTree | undefined;
/** RFC 7386 MergePatch(target, patch). */
export function mergePatch(target: JSONTree, patch: JSONTree): JSONTree;
/** Applies a JSET/JMERGE/JDEL effect to a document (null: none); null when it deleted the key. Throws a JSONError when it does not fit. */
export function applyJSONEffect(doc: JSONDoc | null, cmd: string, args: ReadonlyArray<string>): JSONDoc | null;

/** The local replica: applies the effects the server pushes. */
export class Store {
  constructor(now?: () => number);
  keys: Map<string, Entry>;
  raw(key: string): Entry | undefined;
  match(pattern?: string): string[];
  /**
   * Applies a qstate or keychange value. keepTTL (default true, for
   * keychanges) keeps a string's known expiry; a qstate's strings start
   * without one (false) until a PEXPIREAT push gives it.
   */
  setState(key: string, v: RespValue, keepTTL?: boolean): boolean;
  removeMatching(pattern: string, listed: Set<string>): string[];
  retain(keep: (key: string) => boolean): void;
  /** Applies one effect; returns the keys changed, or null when not understood. */
  apply(args: ReadonlyArray<string>): string[] | null;
  /** JGET key path on the store (no pending writes); null when absent. Throws a ReplyError. */
  jget(key: string, path?: string): string | null;
  /** JTYPE key path on the store; null when absent. Throws a ReplyError. */
  jtype(key: string, path?: string): JSONType | null;
  /** XRANGE key start end [COUNT] on the store; bounds are ids, "-", "+" or "(id". Throws a ReplyError. */
  xrange(key: string, start?: string, end?: string, count?: number): StreamEntryPair[];
  /** XREVRANGE key end start [COUNT] on the store. */
  xrevrange(key: string, end?: string, start?: string, count?: number): StreamEntryPair[];
  /** XLEN key on the store. */
  xlen(key: string): number;
  /** The stream's whole state; null when absent or not arrived. */
  xinfo(key: string): StreamInfo | null;
}
export function cloneEntry(e: Entry | undefined): Entry | undefined;
export function entriesEqual(a: Entry | undefined, b: Entry | undefined): boolean;
export function plainValue(e: Entry | undefined): PlainValue;
/** The keys a write request touches, by the key positions of the server's command list. */
export function keysOf(args: ReadonlyArray<string>): string[];
/** What the client knows of one server command: an entry of sync/commands.json. */
export interface CommandInfo {
  /** Lower case; a subcommand is "parent|sub". */
  name: string;
  arity: number;
  /** May modify the keyspace: sent through the outbox. */
  write?: boolean;
  readonly?: boolean;
  /** Connection-scoped: DEDUP refuses to wrap it. */
  connection?: boolean;
  /** The client sends it itself: command() refuses it. */
  clientOwned?: boolean;
  /** [first, last, step] key positions; last negative counts from the end. */
  keys?: [number, number, number];
  movableKeys?: boolean;
  /** A container whose subcommands have entries of their own. */
  subcommands?: boolean;
}
/** The entry of the command args run (the subcommand's for a container); undefined when the server has none. */
export function commandInfo(args: ReadonlyArray<string>): CommandInfo | undefined;
/** How command() sends args: refused ('owned'), through the outbox ('write'), or plainly. */
export function routeOf(args: ReadonlyArray<string>): 'owned' | 'write' | 'plain';
/** The effects of a write request: predicted (no reply) or derived from the server's reply. */
export function effectsOf(st: Store, args: ReadonlyArray<string>, reply?: RespValue): string[][] | null;

export interface SavedWrite {
  key: [number, number, number];
  clientId: string;
  id: string;
  args: string[];
}
export interface Identity {
  slot: number;
  clientId: string;
  epoch: number;
}
export interface Storage {
  claim(slot: number, newId: () => string): Promise<Identity>;
  identity(slot: number): Promise<Identity | undefined>;
  writes(): Promise<SavedWrite[]>;
  save(ops: Array<{ key: [number, number, number]; write: SavedWrite | null }>): Promise<void>;
  close(): void;
}
export class IDBStorage implements Storage {
  static open(idb: IDBFactory, name: string): Promise<IDBStorage>;
  claim(slot: number, newId: () => string): Promise<Identity>;
  identity(slot: number): Promise<Identity | undefined>;
  writes(): Promise<SavedWrite[]>;
  save(ops: Array<{ key: [number, number, number]; write: SavedWrite | null }>): Promise<void>;
  close(): void;
}
export class MemoryStorage implements Storage {
  claim(slot: number, newId: () => string): Promise<Identity>;
  identity(slot: number): Promise<Identity | undefined>;
  writes(): Promise<SavedWrite[]>;
  save(ops: Array<{ key: [number, number, number]; write: SavedWrite | null }>): Promise<void>;
  close(): void;
}
/** Creates the missing object stores (in an upgrade); never drops one. */
export function upgradeSchema(db: IDBDatabase): void;
export function openDatabase(idb: IDBFactory, name: string): Promise<IDBDatabase>;

export type State = 'connecting' | 'open' | 'offline' | 'closed';

export interface StateEvent {
  state: State;
  /** Why the client is offline or closed ("NOPERM invalid token", "connection closed (code 1006)", "offline"). */
  reason?: string;
  /** Delay before the next attempt, in ms. */
  retryIn?: number;
  /** Connection attempts since the last open session. */
  attempt: number;
  /** The bridge of the attempt (connecting, open, offline after a failure). */
  url?: string;
}

export interface ConnectOptions {
  /** Sent as SYNC TOKEN <token> (strict scoping). */
  token?: string;
  /** Sent as SYNC <pattern…> (open mode) when there is no token. */
  patterns?: string[];
  password?: string;
  username?: string;
  /** Storage namespace (IndexedDB database and Web Lock names). Default "default". */
  name?: string;
  /** Reconnection backoff bounds in ms (full jitter). Defaults 100 and 10 000. */
  minBackoff?: number;
  maxBackoff?: number;
  /** At most, and by default, 10 000. */
  outboxLimit?: number;
  /** Default globalThis.indexedDB; null keeps everything in memory. */
  indexedDB?: IDBFactory | null;
  /** Default navigator.locks; null uses one identity slot. */
  locks?: LockManager | null;
  WebSocket?: any;
  now?: () => number;
  random?: () => number;
  /**
   * More bridge URLs of the same deployment (its primary and replicas).
   * With several addresses the client asks ROLE on every connection and
   * keeps its session on the primary (unless replicaOK), moving on when a
   * server is a replica or answers a write -READONLY.
   */
  urls?: string[];
  /** Let the session stay on a replica until a write is answered -READONLY. */
  replicaOK?: boolean;
  /** Resolve a write only once WAIT <waitReplicas> confirms it (0: on its reply). */
  waitReplicas?: number;
  /** The WAIT timeout in ms. Default 1000. */
  waitTimeout?: number;
}

export interface Handle {
  /** Stops the query, watch or subscription. */
  close(): void;
  /** Resolves once the server accepted it. */
  ready: Promise<void>;
}

export interface Stats {
  connects: number;
  replies: number;
  dups: number;
  dropped: number;
  mutations: number;
  unknownEffects: number;
  keychanges: number;
  messages: number;
  ignored: number;
}

export interface EventMap {
  state: StateEvent;
  outbox: number;
  drop: { id: string; clientId: string; args: string[] };
  error: Error;
  identity: { clientId: string; epoch: number; slot: number };
}

export class Client {
  constructor(url: string, options?: ConnectOptions);
  /** The bridge of the current or last connection attempt. */
  readonly url: string;
  /** Every address the client tries, in turn. */
  readonly urls: string[];
  readonly state: State;
  readonly outboxSize: number;
  readonly clientId: string;
  readonly epoch: number;
  readonly slot: number;
  readonly stats: Stats;
  /** The confirmed store (server state as known); reads below add pending writes. */
  readonly store: Store;
  /** Resolves once identity, epoch and the saved outbox are loaded. */
  readonly ready: Promise<void>;

  on<K extends keyof EventMap>(event: K, fn: (arg: EventMap[K]) => void): () => void;
  outbox(): Array<{ id: string; clientId: string; args: string[] }>;
  /** Whether key has writes waiting for their acknowledgment. */
  pending(key: string): boolean;
  /** Resolves once every outbox change so far is saved to IndexedDB. */
  persisted(): Promise<void>;

  goOffline(): void;
  goOnline(): void;
  dropConnection(): void;
  reconnect(): void;
  setToken(token: string): void;
  setPassword(password: string): void;
  close(): Promise<void>;

  command(...args: Arg[]): Promise<any>;
  set(key: string, value: Arg, ...options: Arg[]): Promise<string | null>;
  del(...keys: string[]): Promise<number>;
  incr(key: string): Promise<number>;
  incrby(key: string, by: number | bigint): Promise<number>;
  decr(key: string): Promise<number>;
  decrby(key: string, by: number | bigint): Promise<number>;
  append(key: string, value: string): Promise<number>;
  hset(key: string, fields: Record<string, Arg>): Promise<number>;
  hset(key: string, ...fieldValues: Arg[]): Promise<number>;
  hdel(key: string, ...fields: string[]): Promise<number>;
  hincrby(key: string, field: string, by: number | bigint): Promise<number>;
  lpush(key: string, ...values: Arg[]): Promise<number>;
  rpush(key: string, ...values: Arg[]): Promise<number>;
  lpop(key: string, count?: number): Promise<string | string[] | null>;
  rpop(key: string, count?: number): Promise<string | string[] | null>;
  sadd(key: string, ...members: Arg[]): Promise<number>;
  srem(key: string, ...members: Arg[]): Promise<number>;
  zadd(key: string, members: Record<string, number>): Promise<number>;
  zadd(key: string, ...scoreMembers: Arg[]): Promise<number>;
  zrem(key: string, ...members: Arg[]): Promise<number>;
  zincrby(key: string, by: number, member: string): Promise<string>;
  expire(key: string, seconds: number): Promise<number>;
  pexpire(key: string, ms: number): Promise<number>;
  persist(key: string): Promise<number>;
  /**
   * JSET key path value [NX|XX]. A string value is JSON text ('"text"',
   * '9007199254740993'); any other value is sent as JSON.stringify gives it.
   * Resolves with "OK", or null when NX/XX stopped it.
   */
  jset(key: string, path: string, value: unknown, cond?: 'NX' | 'XX'): Promise<'OK' | null>;
  /** JMERGE key path patch (RFC 7386; null at "$" deletes the key); patch as for jset. */
  jmerge(key: string, path: string, patch: unknown): Promise<'OK'>;
  /** JDEL key [path]: 1 when something was removed. No path (or "$"): the whole key. */
  jdel(key: string, path?: string): Promise<number>;
  /** JNUMINCRBY key path by: the new number's JSON text. */
  jnumincrby(key: string, path: string, by: number | bigint | string): Promise<string>;
  /** JARRAPPEND key path value…: the array's new length; values as for jset. */
  jarrappend(key: string, path: string, ...values: unknown[]): Promise<number>;
  publish(channel: string, message: string): Promise<number>;

  get(key: string): string | null;
  mget(...keys: string[]): Array<string | null>;
  exists(...keys: string[]): number;
  type(key: string): string;
  ttl(key: string): number;
  pttl(key: string): number;
  hget(key: string, field: string): string | null;
  hgetall(key: string): Record<string, string>;
  hkeys(key: string): string[];
  hlen(key: string): number;
  hexists(key: string, field: string): boolean;
  lrange(key: string, start?: number, stop?: number): string[];
  llen(key: string): number;
  lindex(key: string, index: number): string | null;
  smembers(key: string): string[];
  sismember(key: string, member: string): boolean;
  scard(key: string): number;
  zrange(key: string, start?: number, stop?: number, opts?: { withScores?: false; rev?: boolean }): string[];
  zrange(key: string, start: number, stop: number, opts: { withScores: true; rev?: boolean }): Array<[string, number]>;
  zscore(key: string, member: string): number | null;
  zcard(key: string): number;
  /**
   * The JSON text at path (default "$") of key's document, exactly as the
   * server's JGET answers: compact, member order kept, numbers as written
   * (integers beyond 2^53 keep every digit). null when the key or value is
   * absent or the document has not arrived yet. Throws a ReplyError:
   * WRONGTYPE, or ERR for a bad path or one through the wrong kind of value.
   */
  jget(key: string, path?: string): string | null;
  /** JTYPE's answer for the value at path; null when absent. Throws as jget. */
  jtype(key: string, path?: string): JSONType | null;
  /** XRANGE on the local replica (pending writes included); bounds are ids, "-", "+" or "(id". Throws a ReplyError (WRONGTYPE, bad id). */
  xrange(key: string, start?: string, end?: string, count?: number): StreamEntryPair[];
  /** XREVRANGE on the local replica. */
  xrevrange(key: string, end?: string, start?: string, count?: number): StreamEntryPair[];
  /** XLEN on the local replica. */
  xlen(key: string): number;
  /** The stream's whole state on the local replica; null when absent or not arrived. */
  xinfo(key: string): StreamInfo | null;
  keys(pattern?: string): string[];
  value(key: string): PlainValue;

  query(pattern: string, callback: (key: string, value: PlainValue) => void): Handle;
  watch(key: string, callback: (key: string, value: PlainValue) => void): Handle;
  subscribe(channel: string, callback: (message: string, channel: string) => void): Handle;
  psubscribe(pattern: string, callback: (message: string, channel: string, pattern: string) => void): Handle;
}

/** Connects to a recached WebSocket bridge; the client loads its storage, then connects and reconnects until close(). */
export function connect(url: string, options?: ConnectOptions): Client;
