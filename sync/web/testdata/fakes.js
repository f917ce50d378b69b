// Test doubles of the browser APIs the client uses, for Node's test runner:
// an in-memory IndexedDB (the subset the client calls), Web Locks, and a
// scripted WebSocket whose peer is the test itself (it reads the frames the
// client sent and writes the server's frames byte for byte).

/** Orders IndexedDB keys: numbers, then strings, then arrays (element-wise). */
export function compareKeys(a, b) {
  const rank = (k) => (typeof k === 'number' ? 0 : typeof k === 'string' ? 1 : 2);
  if (rank(a) !== rank(b)) return rank(a) - rank(b);
  if (Array.isArray(a)) {
    for (let i = 0; i < Math.min(a.length, b.length); i++) {
      const c = compareKeys(a[i], b[i]);
      if (c !== 0) return c;
    }
    return a.length - b.length;
  }
  return a < b ? -1 : a > b ? 1 : 0;
}

class FakeRequest {
  constructor() {
    this.result = undefined;
    this.error = null;
    this.onsuccess = null;
    this.onerror = null;
  }
}

class FakeStore {
  constructor(tx, name, data) {
    this.tx = tx;
    this.name = name;
    this.data = data; // {keyPath, rows: Map<string, {key, value}>}
  }

  _op(fn) {
    if (this.tx.finished) {
      const err = new Error('TransactionInactiveError');
      err.name = 'TransactionInactiveError';
      throw err;
    }
    const req = new FakeRequest();
    this.tx.ops.push(() => {
      req.result = fn();
      if (req.onsuccess) req.onsuccess({ target: req });
    });
    this.tx.schedule();
    return req;
  }

  get(key) {
    return this._op(() => {
      const row = this.data.rows.get(JSON.stringify(key));
      return row ? structuredClone(row.value) : undefined;
    });
  }

  getAll() {
    return this._op(() => [...this.data.rows.values()].sort((a, b) => compareKeys(a.key, b.key)).map((r) => structuredClone(r.value)));
  }

  put(value) {
    if (this.tx.mode === 'readonly') throw new Error('ReadOnlyError');
    return this._op(() => {
      const key = value[this.data.keyPath];
      this.data.rows.set(JSON.stringify(key), { key, value: structuredClone(value) });
      return key;
    });
  }

  delete(key) {
    if (this.tx.mode === 'readonly') throw new Error('ReadOnlyError');
    return this._op(() => {
      this.data.rows.delete(JSON.stringify(key));
      return undefined;
    });
  }
}

class FakeTransaction {
  constructor(db, names, mode) {
    this.db = db;
    this.names = names;
    this.mode = mode;
    this.ops = [];
    this.finished = false;
    this.aborted = false;
    this.error = null;
    this.oncomplete = null;
    this.onerror = null;
    this.onabort = null;
    // Writes go to copies of the stores, committed at the end.
    this.copies = new Map();
    for (const n of names) {
      const s = db.server.stores.get(n);
      if (!s) throw new Error(`NotFoundError: no object store ${n}`);
      this.copies.set(n, { keyPath: s.keyPath, rows: new Map(s.rows) });
    }
    this.scheduled = false;
    this.schedule();
  }

  objectStore(name) {
    if (!this.copies.has(name)) throw new Error(`NotFoundError: ${name} is not in this transaction`);
    return new FakeStore(this, name, this.copies.get(name));
  }

  abort() {
    this.aborted = true;
  }

  schedule() {
    if (this.scheduled) return;
    this.scheduled = true;
    setTimeout(() => this._run(), 0);
  }

  _run() {
    while (this.ops.length > 0 && !this.aborted) this.ops.shift()();
    this.finished = true;
    if (this.aborted) {
      if (this.onabort) this.onabort({ target: this });
      return;
    }
    for (const [n, c] of this.copies) this.db.server.stores.get(n).rows = c.rows;
    this.db.server.commits++;
    setTimeout(() => this.oncomplete && this.oncomplete({ target: this }), 0);
  }
}

class FakeDB {
  constructor(server, factory) {
    this.server = server;
    this.factory = factory;
    this.name = server.name;
    this.version = server.version;
    this.closed = false;
    this.onversionchange = null;
    this.upgrading = false;
    const self = this;
    this.objectStoreNames = {
      contains: (n) => self.server.stores.has(n),
      get length() {
        return self.server.stores.size;
      },
    };
  }

  createObjectStore(name, opts) {
    if (!this.upgrading) throw new Error('InvalidStateError: not in an upgrade');
    if (this.server.stores.has(name)) throw new Error(`ConstraintError: ${name} exists`);
    this.server.stores.set(name, { keyPath: opts && opts.keyPath, rows: new Map() });
    this.server.created.push(name);
  }

  deleteObjectStore(name) {
    this.server.deleted.push(name);
    this.server.stores.delete(name);
  }

  transaction(names, mode = 'readonly') {
    if (this.closed) throw new Error('InvalidStateError: database closed');
    return new FakeTransaction(this, Array.isArray(names) ? names : [names], mode);
  }

  close() {
    this.closed = true;
    this.server.connections.delete(this);
  }
}

/** An in-memory IDBFactory: open() with upgrades, and nothing else. */
export class FakeIndexedDB {
  constructor() {
    /** @type {Map<string, any>} */
    this.databases = new Map();
  }

  /** The server-side state of a database, for assertions. */
  state(name) {
    return this.databases.get(name);
  }

  open(name, version) {
    const req = new FakeRequest();
    req.onupgradeneeded = null;
    req.onblocked = null;
    setTimeout(() => {
      let server = this.databases.get(name);
      if (!server) {
        server = { name, version: 0, stores: new Map(), connections: new Set(), created: [], deleted: [], commits: 0 };
        this.databases.set(name, server);
      }
      const target = version === undefined ? Math.max(server.version, 1) : version;
      if (target < server.version) {
        req.error = Object.assign(new Error('VersionError'), { name: 'VersionError' });
        if (req.onerror) req.onerror({ target: req });
        return;
      }
      if (target > server.version) {
        for (const c of [...server.connections]) if (c.onversionchange) c.onversionchange({ oldVersion: server.version, newVersion: target });
        if (server.connections.size > 0) {
          if (req.onblocked) req.onblocked({});
          return;
        }
        const old = server.version;
        server.version = target;
        const db = new FakeDB(server, this);
        db.upgrading = true;
        req.result = db;
        if (req.onupgradeneeded) req.onupgradeneeded({ oldVersion: old, newVersion: target, target: req });
        db.upgrading = false;
        server.connections.add(db);
        if (req.onsuccess) req.onsuccess({ target: req });
        return;
      }
      const db = new FakeDB(server, this);
      server.connections.add(db);
      req.result = db;
      if (req.onsuccess) req.onsuccess({ target: req });
    }, 0);
    return req;
  }
}

/** Web Locks: exclusive locks by name, ifAvailable, waiting with an AbortSignal. */
export class FakeLocks {
  constructor() {
    /** @type {Map<string, Array<() => void>>} */
    this.waiting = new Map();
    /** @type {Set<string>} */
    this.held = new Set();
  }

  request(name, options, callback) {
    return new Promise((resolve, reject) => {
      const grant = () => {
        this.held.add(name);
        let result;
        try {
          result = callback({ name, mode: 'exclusive' });
        } catch (err) {
          this._release(name);
          reject(err);
          return;
        }
        Promise.resolve(result).then(
          (v) => {
            this._release(name);
            resolve(v);
          },
          (err) => {
            this._release(name);
            reject(err);
          },
        );
      };
      if (!this.held.has(name)) {
        grant();
        return;
      }
      if (options.ifAvailable) {
        Promise.resolve(callback(null)).then(resolve, reject);
        return;
      }
      const q = this.waiting.get(name) || [];
      this.waiting.set(name, q);
      q.push(grant);
      if (options.signal) {
        options.signal.addEventListener('abort', () => {
          const i = q.indexOf(grant);
          if (i >= 0) {
            q.splice(i, 1);
            reject(Object.assign(new Error('aborted'), { name: 'AbortError' }));
          }
        });
      }
    });
  }

  _release(name) {
    this.held.delete(name);
    const q = this.waiting.get(name);
    if (q && q.length > 0) setTimeout(q.shift(), 0);
  }
}

/**
 * A network of scripted WebSockets: each new socket connects to the test,
 * which reads what the client sent (RESP text) and replies with raw frames.
 */
export class ScriptedNetwork {
  constructor() {
    /** @type {ScriptedSocket[]} */
    this.sockets = [];
    /** Set to false to make new sockets fail to open. */
    this.up = true;
    const net = this;
    this.WebSocket = class extends ScriptedSocket {
      constructor(url) {
        super(net, url);
      }
    };
    this._waiters = [];
  }

  /** The newest socket. */
  get last() {
    return this.sockets[this.sockets.length - 1];
  }

  /** Resolves with the n-th socket (0-based) once it opened. */
  async socket(n) {
    await until(() => this.sockets.length > n && this.sockets[n].readyState === 1, `socket ${n} to open`);
    return this.sockets[n];
  }
}

class ScriptedSocket {
  constructor(net, url) {
    this.net = net;
    this.url = url;
    this.readyState = 0;
    /** Frames the client sent, as text. */
    this.sent = [];
    this.onopen = null;
    this.onmessage = null;
    this.onclose = null;
    this.onerror = null;
    this.binaryType = 'blob';
    this.read = 0; // frames consumed by next()
    net.sockets.push(this);
    setTimeout(() => {
      if (!net.up) {
        this.readyState = 3;
        if (this.onerror) this.onerror({});
        if (this.onclose) this.onclose({ code: 1006, reason: '' });
        return;
      }
      this.readyState = 1;
      if (this.onopen) this.onopen({});
    }, 0);
  }

  send(data) {
    if (this.readyState !== 1) throw new Error('InvalidStateError: not open');
    this.sent.push(data);
  }

  close(code = 1000, reason = '') {
    if (this.readyState >= 2) return;
    this.readyState = 3;
    setTimeout(() => this.onclose && this.onclose({ code, reason }), 0);
  }

  /** The server side closes the connection. */
  drop(code = 1006, reason = '') {
    this.close(code, reason);
  }

  /** Sends one frame (RESP text) to the client. */
  push(frame) {
    if (this.readyState !== 1) return;
    if (this.onmessage) this.onmessage({ data: frame });
  }

  /** Waits for the next n frames the client sends and returns them. */
  async next(n = 1) {
    await until(() => this.sent.length >= this.read + n, `${n} frame(s) from the client (have ${this.sent.length - this.read})`);
    const out = this.sent.slice(this.read, this.read + n);
    this.read += n;
    return out;
  }
}

/** Polls cond until it is true, for at most 5 seconds. */
export async function until(cond, what = 'condition') {
  const deadline = Date.now() + 5000;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 1));
  }
}

/** Encodes a command as the client does (for expectations). */
export function cmd(...args) {
  let out = `*${args.length}\r\n`;
  for (const a of args) out += `$${Buffer.byteLength(String(a))}\r\n${a}\r\n`;
  return out;
}

/** A bulk string. */
export function bulk(s) {
  return s === null ? '$-1\r\n' : `$${Buffer.byteLength(s)}\r\n${s}\r\n`;
}
