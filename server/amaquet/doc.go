// Package amaquet serves the Amaquet binary protocol (seed 000, SPEC
// section 10) on --amaquet-port: 24-byte framed requests carrying JSON,
// many COMMAND requests in flight on one connection answered out of
// order, CANCEL, explicit overload errors, an Ed25519-signed HELLO, API key
// AUTH and bus subscriptions. Commands run on the engine's sessions through
// the one command table, so a write over Amaquet has the same effects,
// scope checks, log records, sync pushes and keyspace notifications as
// over RESP (SPEC section 11). PROTOCOL-AMAQUET.md at the repository's root
// documents the wire for client authors.
//
// # Execution
//
// Each connection has a reader goroutine and a writer goroutine. The
// reader reads a frame, handles it and reads the next: HELLO, AUTH,
// SUBSCRIBE, UNSUBSCRIBE and CANCEL in read order, as the seed says, and a
// COMMAND on the reader's current engine session, inline. A command that
// does not wait (every command but the blocking ones and scripts) is done
// when Exec returns: its response is queued and the reader goes on, with
// no goroutine, channel or lock round trip of its own beyond the output
// queue's mutex. A command that waits (BLPOP and its kin, XREAD BLOCK,
// BZPOP…, EVAL and FCALL, which the engine runs away from the transport)
// keeps its session: the request is parked in the connection's table of
// active requests and the reader continues on another session of the
// connection (made once, then reused). When the engine answers the wait it
// calls that session's Conn.Wake, which starts one goroutine to collect
// and send the reply. So requests complete out of order, a blocked BLPOP
// never delays the GETs after it, and only a request that blocks costs a
// goroutine. BenchmarkGet64 measures it. The usual spelling of a COMMAND
// payload (request.go, parsePlain) and the replies of GET and SET (+OK, one
// bulk string) take fast paths that fall back to the full decoder and
// mapping for anything else; the fuzz targets check that each fast path
// agrees with the full one. The price: a command that runs
// long without waiting (KEYS over a large keyspace, or any command while
// another connection's script holds the keyspace, up to
// busy-reply-threshold) delays the requests read after it, as on a RESP
// pipeline; only waits are taken off the reader.
//
// Responses are queued in one buffer; when the reader is about to wait for
// input it writes that buffer itself if the writer is idle (one write per
// batch of pipelined requests, no goroutine switch), else the writer does.
// The writer also drains the subscriptions' queues and writes whatever the
// parked requests' goroutines queued. A socket lock orders the two, so
// frames never interleave. The log is committed before any write (the
// engine's group commit), so an acknowledged write is durable as the fsync
// policy says.
//
// # What SPEC and the seed leave open, and the choices made
//
//   - Deadlines: the read timeout runs from the moment the reader has to
//     wait for the rest of a started frame (its header, then its
//     payload). Idle timeout expiry closes the connection with no frame.
//     Writes must make progress: each chunk of 256 KiB must be taken
//     within the read timeout, else the connection is closed. A reader
//     whose output queue passes 4 MiB stops reading until it drains.
//   - Unusable headers are checked in the seed's field order (magic,
//     version, kind, flags, reserved, length); the first failure decides
//     the code: PROTOCOL_ERROR, UNSUPPORTED_VERSION or PAYLOAD_TOO_LARGE.
//     A header cut short (deadline or close) is answered PROTOCOL_ERROR
//     with the opcode once 10 bytes arrived and the request ID once 20
//     had, else zero. A refused connection (protected mode, maxclients)
//     gets one error frame with request ID and opcode 0.
//   - An unknown opcode's payload is read (its budget reserved) and the
//     frame answered UNKNOWN_OPCODE. Before AUTH, an opcode other than
//     HELLO and AUTH is UNAUTHENTICATED; UNKNOWN_OPCODE comes first.
//   - COMMAND payloads are decoded strictly: unknown fields, duplicate
//     fields, trailing data, non-UTF-8 strings, a "db" that is not a
//     non-negative integer, or both "command" and "transaction" are
//     BAD_REQUEST. "base64" is standard base64 with padding. A "db" beyond
//     the server's databases is BAD_REQUEST.
//   - Limits are checked in this order: DUPLICATE_REQUEST, the
//     per-connection limit, the global limit, then the payload. The
//     command running inline counts as active, so with N requests parked
//     a connection may run one more if N < --amaquet-max-inflight; the
//     global limit (4096) counts every active command of the listener.
//   - The payload budget is released as the response is handed to the
//     socket; a request refused before running (any error response)
//     releases it the same way.
//   - Connection-scoped commands are those the command table flags
//     FlagStateful (MULTI, EXEC, DISCARD, WATCH, UNWATCH, SELECT, HELLO,
//     AUTH, RESET, QUIT, the subscribe family, SYNC, QSUB, QUNSUB, KWATCH,
//     KUNWATCH, CLIENT REPLY): BAD_REQUEST, also inside a transaction.
//     MONITOR and WAIT are not in the table: UNKNOWN_COMMAND.
//   - Error codes: "ERR no such key" is NOT_FOUND with message "key not
//     found"; WRONGTYPE, NOAUTH (UNAUTHENTICATED), NOPERM (FORBIDDEN, the
//     scope check's refusals) and "ERR unknown command/subcommand"
//     (UNKNOWN_COMMAND) keep Redis's full text as message, as
//     COMMAND_ERROR does. An error inside an array (a transaction's
//     failed command) is {"error":{"code":…,"message":…}} in its place. A
//     transaction refused while queueing (unknown command, arity, scope)
//     answers that first error and runs nothing.
//   - RESP3 mapping details: doubles are JSON numbers in Go's shortest
//     form, inf/-inf/nan as strings; big numbers as strings; verbatim
//     strings without their "txt:" prefix; attributes are dropped; a map
//     is an object only when every key is a UTF-8 string, else an array
//     of [key, value] pairs.
//   - HELLO "version" is the Redis version recached reproduces
//     (server.Version); "auth_required" is true when API keys or a
//     password are configured. With a password and no API keys nothing
//     can authenticate on this port (it never bypasses requirepass).
//   - AUTH: a failed AUTH leaves the connection as it was; a second AUTH
//     replaces the key. A key's "keys" patterns scope COMMAND exactly as a
//     sync token (the engine's one scope check, FORBIDDEN on -NOPERM),
//     which includes database 0 only ("db" ≠ 0 is FORBIDDEN) and no
//     admin, whole-keyspace or server-state commands; a key without
//     "keys" has no key scope. Its capability decides the channels of
//     SUBSCRIBE ("subscribe" on key:channel) and of every channel a
//     COMMAND names, PUBLISH included ("publish"), whatever the key
//     scope. A key a SIGHUP reload revokes or changes closes its
//     connections at their next idle moment (UNAUTHENTICATED, ID 0).
//   - CANCEL finds a request that is active: parked, waiting. A blocking
//     command's wait is ended as CLIENT UNBLOCK does and the request
//     answers CANCELLED. A script (EVAL, FCALL and their kin) is stopped
//     as SCRIPT KILL would stop it (Session.KillScript): one that has
//     not written stops at its next instruction and its request answers
//     CANCELLED; one that has written cannot be stopped (Redis's
//     -UNKILLABLE: its writes cannot be undone), so CANCEL still reports
//     it found, the script runs to its end and its request answers the
//     script's own result. A script inside a "transaction" runs on the
//     reader, so no CANCEL is read before it ends. A write the script
//     starts in the instant CANCEL stops it may land before the stop, as
//     with SCRIPT KILL. A request answered before the CANCEL is read is
//     not found.
//   - Every waiting request is also an engine client (CLIENT LIST shows
//     one per session of the connection; CLIENT UNBLOCK and CLIENT KILL
//     work on them), sessions beyond the first not counted against
//     maxclients.
//   - SUBSCRIBE: key and channel are non-empty strings, the bus channel is
//     key + ":" + channel (a plain channel, no glob); a connection holds
//     at most 1000 subscriptions (OVERLOADED beyond). The confirmation is
//     queued before any event. Each subscription's buffer holds up to
//     "buffer" events the writer has not taken; while the socket is
//     backed up events beyond it are dropped, and the next one queued
//     carries "dropped". A Blackevin Publish with data arrives as type
//     json with the data as value (its name is not carried); otherwise
//     the RESP payload as text, or bytes (base64) when not UTF-8.
//     published_at always has nine fraction digits, in UTC.
//   - The identity key file holds the base64 of the Ed25519 seed and a
//     newline; it is created with mode 0600 by the first start or by
//     `recached amaquet-identity`, and a damaged file stops the start.
package amaquet
