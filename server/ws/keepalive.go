package ws

import (
	"net"

	"github.com/recached/recached/server"
)

// keepAliveListener sets tcp-keepalive on every connection it accepts,
// as the RESP transport and Redis do; the value is read at each accept, so
// CONFIG SET tcp-keepalive applies to the connections that follow.
type keepAliveListener struct {
	net.Listener
	srv *server.Server
}

// Accept accepts a connection and sets its keep-alive period (0: off).
func (l keepAliveListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok && err == nil {
		d := l.srv.KeepAlive()
		_ = tc.SetKeepAlive(d > 0)
		if d > 0 {
			_ = tc.SetKeepAlivePeriod(d)
		}
	}
	return c, err
}
