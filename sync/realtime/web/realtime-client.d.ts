// Type declarations of realtime-client.js, the client of recached's realtime
// protocol (SPEC section 9). See README.md.

/** The connection states, as Ably names them. */
export type ConnectionState = 'initialized' | 'connecting' | 'connected' | 'disconnected' | 'suspended' | 'closed' | 'failed';
export const STATES: readonly ConnectionState[];

/** The frozen opcodes of the wire protocol. */
export const opcodes: Readonly<{
  attach: 1; detach: 2; publish: 3; message: 4; presenceEnter: 5; presenceLeave: 6; presenceUpdate: 7;
  presence: 8; ack: 9; nack: 10; heartbeat: 11; connected: 12; subscribe: 13; unsubscribe: 14; auth: 15;
}>;

/** A failure the server reported in a Nack (code 400, 401, 403, 413, 429, 4000), or the client's own (code 0). */
export class RealtimeError extends Error {
  readonly code: number;
  /** The channel, when the failure is about one. */
  channel?: string;
  /** 401 and 403: the credential will not start working. */
  readonly terminal: boolean;
}

/** A publish whose connection dropped before its Ack: it may or may not have been accepted. */
export class ConnectionLostError extends RealtimeError {}

export interface StateChange {
  previous: ConnectionState;
  current: ConnectionState;
  reason: RealtimeError | null;
  /** For disconnected and suspended: ms before the next attempt. */
  retryIn: number | null;
}

export interface RealtimeOptions {
  /** An API key, "<secret>.<keyId>". */
  key?: string;
  /** An access token (a JWT minted with `recached realtime-token`). */
  token?: string;
  /**
   * Returns a fresh access token: called to connect when there is no token,
   * renewBefore ms ahead of its expiry (swapped in with Auth, the connection
   * stays up), and once after a 401 on connect with a token it did not just return.
   */
  authCallback?: () => string | Promise<string>;
  /** ms before expiry to renew a token (default 30000, at most half its lifetime). */
  renewBefore?: number;
  /** The presence client id when the token carries none. */
  clientId?: string;
  /** false: the server does not deliver this connection's own publishes. */
  echo?: boolean;
  /** Backoff bounds in ms between reconnect attempts (defaults 250 and 15000), jittered by up to 30 %. */
  minRetry?: number;
  maxRetry?: number;
  /** ms between attempts once suspended (default 30000). */
  suspendedRetry?: number;
  /** Overrides the server's connectionStateTtl (ms without a connection before suspended). */
  connectionStateTtl?: number;
  /** ms between client heartbeats (default 15000). */
  heartbeatInterval?: number;
  /** ms without a frame from the server before the connection is taken for dead (default 45000). */
  idleTimeout?: number;
  /** false: wait for connect(). */
  autoConnect?: boolean;
  /** The WebSocket constructor (default globalThis.WebSocket). */
  WebSocket?: typeof WebSocket;
  /** The random source of the jitter (default Math.random). */
  random?: () => number;
}

export interface Message {
  channel: string;
  name?: string;
  data?: unknown;
  /** The publisher's connection ("resp" for a RESP PUBLISH). */
  connectionId: string;
  /** ms since the epoch, when the server accepted the publish. */
  timestamp: number;
}

export interface PresenceMessage {
  action: 'enter' | 'update' | 'leave';
  channel: string;
  clientId: string;
  connectionId: string;
  data?: unknown;
  timestamp: number;
}

declare class Emitter<Events> {
  /** Adds a listener; returns a function that removes it. */
  on<K extends keyof Events>(name: K, fn: (event: Events[K]) => void): () => void;
  off<K extends keyof Events>(name: K, fn: (event: Events[K]) => void): void;
  once<K extends keyof Events>(name: K): Promise<Events[K]>;
}

type ClientEvents = { state: StateChange; error: RealtimeError } & { [S in ConnectionState]: StateChange };

export class Realtime extends Emitter<ClientEvents> {
  constructor(url: string, options: RealtimeOptions);
  readonly url: string;
  readonly state: ConnectionState;
  /** The server's id of the current connection ("" before the first); it changes on every reconnect. */
  readonly connectionId: string;
  readonly clientId: string;
  /** Why the client is failed, suspended or disconnected. */
  readonly errorReason: RealtimeError | null;
  readonly channels: { get(name: string, options?: { filter?: string }): Channel };
  /** Starts connecting (automatic unless autoConnect is false), or again after failed. */
  connect(): void;
  /** Resolves when the state is one of states; rejects on failed or closed when not wanted. */
  whenState(...states: ConnectionState[]): Promise<ConnectionState>;
  /** Fetches a token from authCallback now and swaps it in with Auth. */
  authorize(): Promise<void>;
  /** Closes the connection; later requests reject. */
  close(): void;
}

export class Channel extends Emitter<{ failed: RealtimeError }> {
  /** The channel name or glob. */
  readonly name: string;
  /** The RE2 filter the server applies to the published channel's name. */
  readonly filter: string;
  readonly presence: Presence;
  /**
   * Subscribes listener (attaching the channel) and resolves on the server's
   * Ack; a 403 rejects and leaves the other channels working.
   */
  subscribe(listener: (m: Message) => void, options?: { rewind?: number }): Promise<void>;
  /** Removes listener (every listener when omitted); the server subscription ends with the last. */
  unsubscribe(listener?: (m: Message) => void): void;
  /** Publishes (attaching implicitly) and resolves on the server's Ack. */
  publish(name?: string, data?: unknown): Promise<void>;
  /** Attaches and resolves once the member set is known. */
  attach(): Promise<void>;
  detach(): Promise<void>;
}

export class Presence extends Emitter<{ presence: PresenceMessage }> {
  /** The members as last known, by clientId then connectionId. */
  readonly members: PresenceMessage[];
  /** Attaches when needed, waits for the member set and resolves to it. */
  get(): Promise<PresenceMessage[]>;
  subscribe(fn: (m: PresenceMessage) => void): () => void;
  unsubscribe(fn: (m: PresenceMessage) => void): void;
  enter(data?: unknown): Promise<void>;
  update(data?: unknown): Promise<void>;
  leave(): Promise<void>;
  enterClient(clientId: string, data?: unknown): Promise<void>;
  updateClient(clientId: string, data?: unknown): Promise<void>;
  leaveClient(clientId: string): Promise<void>;
}

/** The exp claim of a JWT in ms since the epoch, unverified, or 0. */
export function tokenExpiry(token: string): number;
/** The wait in ms before reconnect attempt n. */
export function backoff(min: number, max: number, n: number, random?: () => number): number;
/** Redis KEYS-style glob match. */
export function globMatch(pattern: string, name: string): boolean;
