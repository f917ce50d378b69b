// realtime-client: the browser (and Node ≥ 22) client of recached's Blackevin
// realtime protocol (SPEC section 9; PROTOCOL-REALTIME.md beside the server).
// One ES module, no dependencies, no build step; the server serves it at
// GET /realtime-client.js on its realtime port.
//
//   import { Realtime } from 'http://127.0.0.1:6381/realtime-client.js';
//   const rt = new Realtime('ws://127.0.0.1:6381/', { authCallback: fetchToken });
//   const chat = rt.channels.get('chat:lobby');
//   await chat.subscribe((m) => show(m.name, m.data));
//   await chat.publish('text', { body: 'hi' });
//   await chat.presence.enter({ name: 'Ada' });
//
// The connection follows Ably's state machine (initialized, connecting,
// connected, disconnected, suspended, closed, failed) with exponential
// backoff and jitter; after a reconnect it attaches and subscribes again
// with a rewind of history, skipping what it already delivered, so that a
// short outage loses no message, enters its presence members again and
// brings each member set up to date. Tokens from authCallback are renewed
// through Auth before they expire. 401 and 403 on connect are terminal
// (failed); 429 is retried.

const OP = Object.freeze({
  attach: 1, detach: 2, publish: 3, message: 4, presenceEnter: 5, presenceLeave: 6, presenceUpdate: 7,
  presence: 8, ack: 9, nack: 10, heartbeat: 11, connected: 12, subscribe: 13, unsubscribe: 14, auth: 15,
});
export { OP as opcodes };

/** The connection states. */
export const STATES = Object.freeze(['initialized', 'connecting', 'connected', 'disconnected', 'suspended', 'closed', 'failed']);

const MAX_REWIND = 100;

/** A failure the server reported in a Nack (or the client's own, with code 0). */
export class RealtimeError extends Error {
  constructor(code, message, channel) {
    super(code ? `${code} ${message}` : message);
    this.name = 'RealtimeError';
    this.code = code;
    this.channel = channel;
  }
  /** 401 and 403: the credential will not start working. */
  get terminal() { return this.code === 401 || this.code === 403; }
}

/** A publish whose connection dropped before its Ack: it may or may not have been accepted. */
export class ConnectionLostError extends RealtimeError {
  constructor() { super(0, 'connection lost before the acknowledgment; the publish may or may not have been accepted'); this.name = 'ConnectionLostError'; }
}

const CONN_GONE = Symbol('connection gone');

/** A minimal event emitter: on(name, fn), off(name, fn), once(name) → Promise. */
class Emitter {
  #listeners = new Map();
  on(name, fn) {
    if (!this.#listeners.has(name)) this.#listeners.set(name, new Set());
    this.#listeners.get(name).add(fn);
    return () => this.off(name, fn);
  }
  off(name, fn) { this.#listeners.get(name)?.delete(fn); }
  once(name) { return new Promise((resolve) => { const off = this.on(name, (e) => { off(); resolve(e); }); }); }
  emit(name, event) {
    for (const fn of [...(this.#listeners.get(name) || [])]) {
      try { fn(event); } catch (e) { queueMicrotask(() => { throw e; }); }
    }
  }
}

/** The exp claim of a JWT in ms, without verifying it (only the server can), or 0. */
export function tokenExpiry(token) {
  const parts = String(token || '').split('.');
  if (parts.length !== 3) return 0;
  try {
    const b64 = parts[1].replace(/-/g, '+').replace(/_/g, '/');
    const claims = JSON.parse(atob(b64 + '='.repeat((4 - (b64.length % 4)) % 4)));
    return typeof claims.exp === 'number' ? claims.exp * 1000 : 0;
  } catch {
    return 0;
  }
}

/** The wait before reconnect attempt n (1, 2, …): min doubled up to max, shortened by a random 0-30 %. */
export function backoff(min, max, n, random = Math.random) {
  let d = min;
  for (let i = 1; i < n && d < max; i++) d *= 2;
  return jitter(Math.min(d, max), random);
}
const jitter = (d, random = Math.random) => d - random() * 0.3 * d;

const isGlob = (name) => /[*?[\\]/.test(name);

/** Redis KEYS-style glob match: * ? [abc] [^a] [a-z] and \ escapes. */
export function globMatch(p, s) {
  const m = (pi, si) => {
    while (pi < p.length) {
      const c = p[pi];
      if (c === '*') {
        while (p[pi] === '*') pi++;
        if (pi === p.length) return true;
        for (let k = si; k <= s.length; k++) if (m(pi, k)) return true;
        return false;
      }
      if (si >= s.length) return false;
      if (c === '?') { pi++; si++; continue; }
      if (c === '[') {
        let j = pi + 1;
        const not = p[j] === '^';
        if (not) j++;
        let hit = false;
        while (j < p.length && p[j] !== ']') {
          if (p[j] === '\\' && j + 1 < p.length) { j++; if (p[j] === s[si]) hit = true; j++; continue; }
          if (p[j + 1] === '-' && j + 2 < p.length) {
            let lo = p[j], hi = p[j + 2];
            if (lo > hi) [lo, hi] = [hi, lo];
            if (s[si] >= lo && s[si] <= hi) hit = true;
            j += 3;
            continue;
          }
          if (p[j] === s[si]) hit = true;
          j++;
        }
        if (hit === not) return false;
        pi = j < p.length ? j + 1 : j;
        si++;
        continue;
      }
      if (c === '\\' && pi + 1 < p.length) pi++;
      if (p[pi] !== s[si]) return false;
      pi++; si++;
    }
    return si === s.length;
  };
  return m(0, 0);
}

/**
 * The client. new Realtime(url, options): url is ws://host:port/; options
 * take one credential (key, token or authCallback) and the tuning below.
 */
export class Realtime extends Emitter {
  #opts;
  #ws = null;         // the live socket (connected), or the one connecting
  #sock = 0;          // a number per socket, so stale events are ignored
  #nextId = 0;
  #pending = new Map(); // id → {sock, resolve, reject, internal}
  #token;
  #tokenAt = 0;
  #fresh = false;
  #ttl = 120000;
  #attempt = 0;
  #lostAt = Date.now();
  #timers = new Set();
  #renewTimer = null;
  #hbTimer = null;
  #idleTimer = null;
  #reason = null;

  /** @param {string} url  @param {object} options */
  constructor(url, options = {}) {
    super();
    if (!options.key && !options.token && !options.authCallback) throw new RealtimeError(0, 'a key, token or authCallback is required');
    this.url = url;
    this.#opts = {
      minRetry: 250, maxRetry: 15000, suspendedRetry: 30000, heartbeatInterval: 15000, idleTimeout: 45000, renewBefore: 30000,
      echo: true, random: Math.random, WebSocket: globalThis.WebSocket, ...options,
    };
    this.#token = options.token || '';
    if (options.connectionStateTtl) this.#ttl = options.connectionStateTtl;
    this.state = 'initialized';
    this.connectionId = '';
    this.clientId = options.clientId || '';
    this.channels = new Channels(this);
    // Connect on the next microtask, so that listeners added right after
    // construction see 'connecting'.
    if (options.autoConnect !== false) queueMicrotask(() => this.connect());
  }

  /** The last failure (why failed, suspended or disconnected). */
  get errorReason() { return this.#reason; }

  /** Starts connecting (automatic unless autoConnect is false). */
  connect() {
    if (this.state !== 'initialized' && this.state !== 'failed') return; // otherwise already connecting or retrying
    this.#attempt = 0;
    this.#lostAt = Date.now();
    this.#dial();
  }

  /** Resolves when the state is one of states; rejects on failed/closed when not wanted. */
  whenState(...states) {
    return new Promise((resolve, reject) => {
      const check = () => {
        if (states.includes(this.state)) { off(); resolve(this.state); return true; }
        if (this.state === 'failed' || this.state === 'closed') { off(); reject(this.#reason || new RealtimeError(0, 'client ' + this.state)); return true; }
        return false;
      };
      const off = this.on('state', check);
      check();
    });
  }

  /** Closes the connection and ends every subscription. */
  close() {
    if (this.state === 'closed') return;
    this.#clearTimers();
    const ws = this.#ws;
    this.#ws = null;
    this.#sock++;
    if (ws) { try { ws.close(1000); } catch { /* already closed */ } }
    this.#failPending(new RealtimeError(0, 'client closed'));
    this.#setState('closed', null);
  }

  /** Fetches a token from authCallback now and swaps it in with Auth. */
  async authorize() {
    const tok = await this.#fetchToken();
    await this._call({ op: OP.auth, accessToken: tok }, true);
  }

  #setState(state, reason, retryIn) {
    if (reason) this.#reason = reason;
    const previous = this.state;
    if (previous === state || previous === 'closed') return;
    this.state = state;
    const e = { previous, current: state, reason: reason || null, retryIn: retryIn ?? null };
    this.emit('state', e);
    this.emit(state, e);
  }

  #timer(fn, ms) {
    const t = setTimeout(() => { this.#timers.delete(t); fn(); }, ms);
    this.#timers.add(t);
    return t;
  }

  #clearTimers() {
    for (const t of this.#timers) clearTimeout(t);
    this.#timers.clear();
    clearInterval(this.#hbTimer);
    clearTimeout(this.#idleTimer);
    clearTimeout(this.#renewTimer);
  }

  async #fetchToken() {
    if (!this.#opts.authCallback) throw new RealtimeError(0, 'no token and no authCallback');
    const tok = await this.#opts.authCallback();
    this.#token = String(tok);
    this.#tokenAt = Date.now();
    return this.#token;
  }

  async #credential() {
    const q = new URLSearchParams();
    if (!this.#opts.echo) q.set('echo', 'false');
    if (this.#opts.key) { q.set('key', this.#opts.key); return q; }
    this.#fresh = false;
    const exp = tokenExpiry(this.#token);
    if (!this.#token || (exp && exp - Date.now() < 1000 && this.#opts.authCallback)) {
      await this.#fetchToken();
      this.#fresh = true;
    }
    q.set('accessToken', this.#token);
    return q;
  }

  async #dial() {
    this.#setState('connecting', null);
    const sock = ++this.#sock;
    let q;
    try {
      q = await this.#credential();
    } catch (e) {
      if (sock === this.#sock) this.#lost(sock, e instanceof RealtimeError ? e : new RealtimeError(0, 'authCallback: ' + (e && e.message || e)));
      return;
    }
    if (sock !== this.#sock) return;
    const u = new URL(this.url);
    for (const [k, v] of q) u.searchParams.set(k, v);
    let ws;
    try {
      ws = new this.#opts.WebSocket(u.toString());
    } catch (e) {
      this.#lost(sock, new RealtimeError(0, 'connect: ' + e.message));
      return;
    }
    this.#ws = ws;
    let nack = null;
    let connected = false;
    this.#armIdle(sock);
    ws.onmessage = (ev) => {
      if (sock !== this.#sock) return;
      this.#armIdle(sock);
      let f;
      try { f = JSON.parse(ev.data); } catch { return; }
      if (!connected) {
        if (f.op === OP.connected) { connected = true; this.#onConnected(sock, f); return; }
        if (f.op === OP.nack) nack = new RealtimeError(f.code, f.message || '');
        return;
      }
      const end = this.#handle(sock, f);
      if (end) nack = end;
    };
    ws.onclose = (ev) => {
      if (sock !== this.#sock) return;
      this.#lost(sock, nack || new RealtimeError(0, `connection closed (${ev.code}${ev.reason ? ' ' + ev.reason : ''})`), connected);
    };
    // Browsers follow an error with close; some runtimes (Node's undici on a
    // refused connection) do not, so an error ends the socket too.
    ws.onerror = () => {
      if (sock !== this.#sock) return;
      this.#lost(sock, nack || new RealtimeError(0, 'connection error'), connected);
    };
  }

  #armIdle(sock) {
    clearTimeout(this.#idleTimer);
    this.#idleTimer = setTimeout(() => {
      if (sock !== this.#sock || !this.#ws) return;
      try { this.#ws.close(4000, 'idle'); } catch { /* closed */ }
      this.#lost(sock, new RealtimeError(0, 'no frame from the server for ' + this.#opts.idleTimeout + ' ms'), this.state === 'connected');
    }, this.#opts.idleTimeout);
  }

  #onConnected(sock, f) {
    this.connectionId = f.connectionId || '';
    if (f.connectionStateTtl && !this.#opts.connectionStateTtl) this.#ttl = f.connectionStateTtl;
    this.#attempt = 0;
    this.#reason = null;
    clearInterval(this.#hbTimer);
    this.#hbTimer = setInterval(() => this._send({ op: OP.heartbeat }), this.#opts.heartbeatInterval);
    this.#scheduleRenewal(sock);
    this.#setState('connected', null);
    for (const ch of this.channels.all()) ch._resume(sock);
  }

  #scheduleRenewal(sock) {
    clearTimeout(this.#renewTimer);
    if (!this.#opts.authCallback || this.#opts.key) return;
    const exp = tokenExpiry(this.#token);
    if (!exp) return;
    const life = exp - (this.#tokenAt || Date.now());
    const lead = Math.min(this.#opts.renewBefore, life / 2);
    this.#renewTimer = setTimeout(async () => {
      if (sock !== this.#sock) return;
      try {
        await this.authorize();
      } catch (e) {
        this.emit('error', new RealtimeError(e.code || 0, 'token renewal: ' + e.message));
      }
      if (sock === this.#sock) this.#scheduleRenewal(sock);
    }, Math.max(0, exp - lead - Date.now()));
  }

  /** The socket ended (or never opened): decide between retry, suspended and failed. */
  #lost(sock, err, wasConnected) {
    if (sock !== this.#sock || this.state === 'closed') return;
    this.#sock++;
    const ws = this.#ws;
    this.#ws = null;
    if (ws) { try { ws.close(); } catch { /* closed */ } }
    clearInterval(this.#hbTimer);
    clearTimeout(this.#idleTimer);
    clearTimeout(this.#renewTimer);
    if (wasConnected) this.#lostAt = Date.now();
    for (const [id, p] of this.#pending) {
      if (p.sock === sock) { this.#pending.delete(id); p.reject(CONN_GONE); }
    }
    for (const ch of this.channels.all()) ch._lost(sock);
    if (err.terminal) {
      if (err.code === 401 && this.#opts.authCallback && !this.#fresh) {
        this.#token = ''; // maybe expired while away: one more try with a fresh token
        this.#timer(() => this.#dial(), 0);
        return;
      }
      this.#failPending(err);
      this.#setState('failed', err);
      return;
    }
    this.#attempt++;
    if (Date.now() - this.#lostAt >= this.#ttl) {
      const wait = jitter(this.#opts.suspendedRetry, this.#opts.random);
      this.#failPending(new RealtimeError(err.code || 0, 'suspended: ' + err.message));
      this.#setState('suspended', err, wait);
      this.#timer(() => this.#dial(), wait);
      return;
    }
    const wait = backoff(this.#opts.minRetry, this.#opts.maxRetry, this.#attempt, this.#opts.random);
    this.#setState('disconnected', err, wait);
    this.#timer(() => this.#dial(), wait);
  }

  #failPending(err) {
    for (const [id, p] of this.#pending) { this.#pending.delete(id); p.reject(err); }
    for (const ch of this.channels.all()) ch._failWaiters(err);
  }

  /** Handles one frame; returns an error when it ends the connection. */
  #handle(sock, f) {
    switch (f.op) {
      case OP.ack: case OP.nack: case OP.heartbeat: {
        const err = f.op === OP.nack ? new RealtimeError(f.code, f.message || '', f.channel) : null;
        const p = f.id !== undefined && this.#pending.get(f.id);
        if (p) {
          this.#pending.delete(f.id);
          if (err) p.reject(err); else p.resolve();
          return null;
        }
        if (!err) return null;
        if (err.code === 401 || err.code === 4000) return err; // the server closes after these
        if (err.channel) this.channels.peek(err.channel)?._removed(err);
        this.emit('error', err);
        return null;
      }
      case OP.connected:
        if (f.connectionId) this.connectionId = f.connectionId;
        if (f.connectionStateTtl && !this.#opts.connectionStateTtl) this.#ttl = f.connectionStateTtl;
        return null;
      case OP.message: {
        const m = { channel: f.channel, name: f.name, data: f.data, connectionId: f.connectionId, timestamp: f.timestamp };
        for (const ch of this.channels.all()) if (ch._matches(f.channel)) ch._deliver(m);
        return null;
      }
      case OP.presence:
        this.channels.peek(f.channel)?.presence._apply(f);
        return null;
      default:
        return null;
    }
  }

  /** @internal The live socket's number, or 0. */
  get _sock() { return this.state === 'connected' && this.#ws ? this.#sock : 0; }

  /** @internal Sends a frame on the live socket (dropped when none). */
  _send(f) {
    if (this.#ws && this.state === 'connected') this.#ws.send(JSON.stringify(f));
  }

  /** @internal Sends f with an id; fn(err|null) gets the outcome (CONN_GONE when the socket ended first). */
  _request(f, fn) {
    const id = 'i' + ++this.#nextId;
    this.#pending.set(id, { sock: this.#sock, resolve: () => fn(null), reject: (e) => fn(e) });
    this._send({ ...f, id });
  }

  /**
   * @internal Sends f when connected and resolves on its Ack. before() runs
   * just before on the socket f goes on. A request whose socket ends first
   * is sent again when retry is set, else rejects with ConnectionLostError.
   */
  async _call(f, retry, before) {
    for (;;) {
      await this.#connected();
      if (before) before(this.#sock);
      try {
        await new Promise((resolve, reject) => this._request(f, (e) => (e ? reject(e) : resolve())));
        return;
      } catch (e) {
        if (e !== CONN_GONE) throw e;
        if (!retry) throw new ConnectionLostError();
      }
    }
  }

  #connected() {
    if (this.state === 'connected' && this.#ws) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const check = () => {
        if (this.state === 'connected' && this.#ws) { off(); resolve(); return; }
        if (this.state === 'suspended' || this.state === 'failed' || this.state === 'closed') {
          off();
          reject(this.#stateError());
        }
      };
      const off = this.on('state', check);
      check();
    });
  }

  /** @internal Rejects unless requests can wait for a connection. */
  _usable() {
    if (this.state === 'failed' || this.state === 'closed' || this.state === 'suspended') throw this.#stateError();
  }

  /** Why requests cannot wait for a connection now. */
  #stateError() {
    const r = this.#reason;
    if (this.state === 'suspended') return new RealtimeError(r ? r.code : 0, 'suspended: ' + (r ? r.message : 'no connection'));
    if (this.state === 'closed') return new RealtimeError(0, 'client closed');
    return r || new RealtimeError(0, 'client ' + this.state);
  }
}

/** The client's channels by name: get(name, {filter}) creates on first use. */
class Channels {
  #rt;
  #map = new Map();
  constructor(rt) { this.#rt = rt; }
  get(name, options = {}) {
    let ch = this.#map.get(name);
    if (!ch) { ch = new Channel(this.#rt, name, options); this.#map.set(name, ch); }
    return ch;
  }
  peek(name) { return this.#map.get(name); }
  all() { return [...this.#map.values()]; }
}

/**
 * One channel name or glob. Its server-side state (attached, subscribed,
 * the members this client entered) is restored after every reconnect.
 */
export class Channel extends Emitter {
  #rt;
  #listeners = new Set();
  #subWanted = false;
  #subOn = 0;      // the socket the Subscribe went on
  #subAcked = false;
  #firstRewind = 0;
  #ready = null;   // {promise, resolve, reject, done}
  #attachedOn = 0;
  // The last delivered message's timestamp and how many delivered had it;
  // after a resubscribe, rewound messages up to it are skipped.
  #lastTs = 0;
  #atLast = 0;
  #baseMs = 0;
  #replaying = false;
  #skip = 0;

  constructor(rt, name, options) {
    super();
    this.#rt = rt;
    this.name = name;
    this.filter = options.filter || '';
    this.glob = isGlob(name);
    this.attach_ = false;
    this.presence = new Presence(rt, this);
  }

  /**
   * Subscribes listener(message) (attaching the channel) and resolves once
   * the server acknowledged; a 403 rejects with a RealtimeError and leaves
   * other channels as they were. options.rewind (first subscribe of a plain
   * channel): up to 100 messages of history first.
   */
  async subscribe(listener, options = {}) {
    this.#rt._usable();
    this.#listeners.add(listener);
    this.attach_ = true;
    if (!this.#subWanted) {
      this.#subWanted = true;
      this.#firstRewind = Math.min(options.rewind || 0, MAX_REWIND);
      let resolve, reject;
      const promise = new Promise((res, rej) => { resolve = res; reject = rej; });
      promise.catch(() => {});
      this.#ready = { promise, resolve, reject, done: false };
    }
    const ready = this.#ready;
    if (this.#rt._sock) this._resume(this.#rt._sock);
    try {
      await ready.promise;
    } catch (e) {
      this.#listeners.delete(listener);
      throw e;
    }
  }

  /** Removes listener (all when omitted); the server subscription ends with the last one. */
  unsubscribe(listener) {
    if (listener) this.#listeners.delete(listener); else this.#listeners.clear();
    if (this.#listeners.size || !this.#subWanted) return;
    this.#subWanted = false;
    this.#subOn = 0;
    this.#subAcked = false;
    this.#replaying = false;
    this.#lastTs = this.#atLast = 0;
    if (this.#rt._sock) this.#rt._request({ op: OP.unsubscribe, channel: this.name }, () => {});
  }

  /** Publishes (attaching implicitly) and resolves on the server's Ack. */
  publish(name, data) {
    const f = { op: OP.publish, channel: this.name };
    if (name !== undefined && name !== null && name !== '') f.name = name;
    if (data !== undefined) f.data = data;
    return this.#rt._call(f, false, (sock) => { this.attach_ = true; this._resume(sock); });
  }

  /** Attaches (the gate of presence frames) and resolves once the member set is known. */
  async attach() { await this.presence.get(); }

  /** Detaches: no presence frames, an empty member set. */
  detach() {
    this.attach_ = false;
    this.#attachedOn = 0;
    this.presence._reset();
    return this.#rt._call({ op: OP.detach, channel: this.name }, true);
  }

  /** @internal Sends on sock what the channel needs and sock has not had. */
  _resume(sock) {
    if (this.attach_ && this.#attachedOn !== sock) {
      this.#attachedOn = sock;
      this.presence._attach(sock);
    }
    if (!this.#subWanted || this.#subOn === sock) return;
    this.#subOn = sock;
    const f = { op: OP.subscribe, channel: this.name };
    if (this.filter) f.filter = this.filter;
    if (!this.#subAcked) {
      if (this.#firstRewind) f.rewind = this.#firstRewind;
    } else if (!this.glob) {
      f.rewind = MAX_REWIND;
      this.#replaying = true;
      this.#skip = this.#atLast;
    }
    this.#rt._request(f, (err) => {
      if (err === CONN_GONE) return; // sent again on the next socket
      if (!err) {
        if (!this.#subAcked) {
          this.#subAcked = true;
          if (!this.#lastTs) this.#baseMs = Date.now();
        }
        this.#settle(null);
      } else if (err instanceof RealtimeError && err.code) {
        this._removed(err);
      } else {
        this.#settle(err);
      }
    });
  }

  #settle(err) {
    const r = this.#ready;
    if (!r || r.done) return;
    r.done = true;
    if (err) r.reject(err); else r.resolve();
  }

  /** @internal The server refused or removed the subscription. */
  _removed(err) {
    err.channel = this.name;
    this.#settle(err);
    const had = this.#subWanted;
    this.#listeners.clear();
    this.#subWanted = false;
    this.#subOn = 0;
    this.#subAcked = false;
    this.#replaying = false;
    if (err.code === 403) {
      this.attach_ = false;
      this.#attachedOn = 0;
      this.presence._end(err);
    }
    if (had) this.emit('failed', err);
  }

  /** @internal */
  _lost(sock) {
    if (this.#attachedOn === sock) this.#attachedOn = 0;
    if (this.#subOn === sock) this.#subOn = 0;
  }

  /** @internal */
  _failWaiters(err) {
    this.#settle(err);
    this.presence._syncDone(err);
  }

  /** @internal Whether a message published to name is for this channel. */
  _matches(name) {
    if (!this.#subWanted || !this.#listeners.size) return false;
    if (this.name !== name && !(this.glob && globMatch(this.name, name))) return false;
    if (!this.filter) return true;
    try { return new RegExp(this.filter).test(name); } catch { return false; }
  }

  /** @internal Hands m to the listeners unless it is a rewound message already delivered. */
  _deliver(m) {
    const ts = m.timestamp || 0;
    if (this.#replaying) {
      const since = this.#lastTs || this.#baseMs;
      if (ts < since) return;
      if (ts === since && this.#skip > 0) { this.#skip--; return; }
      this.#replaying = false;
    }
    if (ts > this.#lastTs) { this.#lastTs = ts; this.#atLast = 1; } else if (ts === this.#lastTs) this.#atLast++;
    for (const fn of [...this.#listeners]) {
      try { fn(m); } catch (e) { queueMicrotask(() => { throw e; }); }
    }
  }
}

/**
 * A channel's member set, kept in sync while the channel is attached, and
 * this client's own members, entered again after a reconnect. Events:
 * subscribe(fn) gets {action, clientId, connectionId, data, timestamp}.
 */
export class Presence extends Emitter {
  #rt;
  #ch;
  #members = new Map(); // clientId \0 connectionId → member
  #prev = null;         // during a sync: members not yet listed again
  #syncing = false;
  #synced = null;       // {promise, resolve, reject, done}
  #syncErr = null;
  #own = new Map();     // clientId → data this client entered

  constructor(rt, ch) { super(); this.#rt = rt; this.#ch = ch; }

  /** The members as last known, by clientId then connectionId. */
  get members() {
    return [...this.#members.values()].sort((a, b) => (a.clientId < b.clientId ? -1 : a.clientId > b.clientId ? 1
      : a.connectionId < b.connectionId ? -1 : a.connectionId > b.connectionId ? 1 : 0));
  }

  /** Attaches when needed, waits for the member set, and resolves to it. */
  async get() {
    this.#rt._usable();
    if (!this.#ch.attach_) { this.#ch.attach_ = true; this.#synced = null; }
    if (!this.#synced) this.#newSync();
    const s = this.#synced;
    if (this.#rt._sock) this.#ch._resume(this.#rt._sock);
    await s.promise;
    if (this.#syncErr) throw this.#syncErr;
    return this.members;
  }

  subscribe(fn) { return this.on('presence', fn); }
  unsubscribe(fn) { this.off('presence', fn); }

  enter(data) { return this.#send(OP.presenceEnter, undefined, data); }
  update(data) { return this.#send(OP.presenceUpdate, undefined, data); }
  leave() { return this.#send(OP.presenceLeave, undefined, undefined); }
  enterClient(clientId, data) { return this.#send(OP.presenceEnter, clientId, data); }
  updateClient(clientId, data) { return this.#send(OP.presenceUpdate, clientId, data); }
  leaveClient(clientId) { return this.#send(OP.presenceLeave, clientId, undefined); }

  async #send(op, clientId, data) {
    const id = clientId ?? this.#rt.clientId;
    const f = { op, channel: this.#ch.name };
    if (id) f.clientId = id;
    if (data !== undefined) f.data = data;
    await this.#rt._call(f, true, (sock) => { this.#ch.attach_ = true; this.#ch._resume(sock); });
    if (op === OP.presenceLeave) this.#own.delete(id || ''); else this.#own.set(id || '', data);
  }

  #newSync() {
    let resolve, reject;
    const promise = new Promise((res, rej) => { resolve = res; reject = rej; });
    promise.catch(() => {});
    this.#synced = { promise, resolve, reject, done: false };
  }

  /** @internal Attach on sock, a heartbeat behind it as the end of the member list, own members again. */
  _attach() {
    if (!this.#synced || this.#synced.done) this.#newSync();
    this.#syncErr = null;
    this.#rt._request({ op: OP.attach, channel: this.#ch.name }, (err) => {
      if (err === CONN_GONE) return;
      if (err) { this.#syncErr = err; return; }
      this.#prev = this.#members;
      this.#members = new Map();
      this.#syncing = true;
    });
    this.#rt._request({ op: OP.heartbeat }, (err) => {
      if (err === CONN_GONE) return;
      if (this.#syncing) {
        for (const m of this.#prev.values()) this.emit('presence', { ...m, action: 'leave', timestamp: Date.now() });
        this.#prev = null;
        this.#syncing = false;
      }
      this._syncDone(err);
    });
    for (const [clientId, data] of this.#own) {
      const f = { op: OP.presenceEnter, channel: this.#ch.name };
      if (clientId) f.clientId = clientId;
      if (data !== undefined) f.data = data;
      this.#rt._request(f, (err) => {
        if (err && err !== CONN_GONE) this.#rt.emit('error', new RealtimeError(err.code || 0, `entering ${clientId} again on ${this.#ch.name}: ${err.message}`));
      });
    }
  }

  /** @internal */
  _syncDone(err) {
    const s = this.#synced;
    if (!s || s.done) return;
    if (err && !this.#syncErr) this.#syncErr = err;
    s.done = true;
    s.resolve();
  }

  /** @internal Applies one Presence frame. */
  _apply(f) {
    const k = f.clientId + '\0' + f.connectionId;
    const m = { action: f.action, channel: f.channel, clientId: f.clientId, connectionId: f.connectionId, data: f.data, timestamp: f.timestamp };
    const old = this.#prev?.get(k);
    this.#prev?.delete(k);
    if (f.action === 'leave') {
      this.#members.delete(k);
    } else if (f.action === 'enter' || f.action === 'update') {
      this.#members.set(k, m);
      if (this.#syncing && old && JSON.stringify(old.data) === JSON.stringify(m.data)) return;
    } else {
      return;
    }
    this.emit('presence', m);
  }

  /** @internal Forgets the member set (detached). */
  _reset() {
    for (const m of this.#members.values()) this.emit('presence', { ...m, action: 'leave', timestamp: Date.now() });
    this.#members.clear();
    this.#prev = null;
    this.#syncing = false;
    this._syncDone(new RealtimeError(0, 'detached'));
    this.#synced = null;
  }

  /** @internal The capability no longer covers the channel. */
  _end(err) {
    this._reset();
    this.#syncErr = err;
    this.#own.clear();
  }
}
