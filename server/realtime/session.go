package realtime

import (
	"strings"

	"github.com/gorilla/websocket"

	"github.com/recached/recached/server"
)

// Each realtime connection is registered with the engine as a session
// (server.NewSession) for as long as it is open, as the other transports'
// connections are: it counts toward maxclients, appears in INFO's
// connected_clients, CLIENT LIST (CLIENT KILL closes it) and the metrics'
// clients by transport ("realtime"). The session runs no command: the
// connection's requests are the protocol's own. The methods below are the
// connection's side of server.Conn.

// register registers c's session; past maxclients it reports false after
// queueing the refusal: a 429 Nack (the seed's code for a connection
// ceiling, which a client retries) and close code 1013, try again later.
func (c *conn) register() bool {
	s, err := c.l.srv.NewSession(c, false)
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), "ERR ")
		c.finish(appendNack(nil, nil, codeTooMany, "", msg), websocket.CloseTryAgainLater, msg, false)
		return false
	}
	c.sess = s
	return true
}

// unregister ends c's session, if it has one.
func (c *conn) unregister() {
	if c.sess != nil {
		c.l.srv.CloseSession(c.sess)
	}
}

// Push drops b: the session runs no command, so the engine has nothing
// in RESP to send this connection.
func (c *conn) Push([]byte) {}

// Close closes the connection for the engine (CLIENT KILL): a 4000 Nack
// after what is queued, then the close frame.
func (c *conn) Close() {
	const msg = "connection closed by the server"
	c.finish(appendNack(nil, nil, codeDisconnected, "", msg), codeDisconnected, msg, true)
}

// Wake does nothing: the session never blocks.
func (c *conn) Wake() {}

// RemoteAddr returns the peer's "ip:port" for CLIENT LIST.
func (c *conn) RemoteAddr() string { return server.AddrString(c.nc.RemoteAddr()) }

// LocalAddr returns the local "ip:port" for CLIENT LIST.
func (c *conn) LocalAddr() string { return server.AddrString(c.nc.LocalAddr()) }

// Buffered reports the bytes queued and not yet written (CLIENT LIST's
// omem); frames are handled as they are read, so none wait unread.
func (c *conn) Buffered() (query, output int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return 0, c.qbytes
}

// TransportName names the transport in the metrics' clients by transport
// (server.TransportNamer).
func (c *conn) TransportName() string { return "realtime" }

// KeepsAlive marks the connection as one whose peer's liveness the
// transport checks itself (heartbeats, dead-peer detection): the engine's
// timeout does not close it (server.KeepAliver).
func (c *conn) KeepsAlive() {}
