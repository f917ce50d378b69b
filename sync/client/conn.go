package client

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"

	"github.com/recached/recached/resp"
)

// transport carries RESP values to and from the server: one value per
// frame on a WebSocket, a byte stream on TCP.
type transport interface {
	// writeCommands sends the commands encoded back to back in b; ends[i]
	// is the offset where command i ends.
	writeCommands(b []byte, ends []int) error
	// read returns the next value the server sent.
	read() (resp.Value, error)
	// close closes the connection; a blocked read returns an error.
	close()
}

// tcpTransport is RESP over TCP.
type tcpTransport struct {
	nc           net.Conn
	r            *bufio.Reader
	writeTimeout time.Duration
}

func newTCPTransport(nc net.Conn, writeTimeout time.Duration) *tcpTransport {
	return &tcpTransport{nc: nc, r: bufio.NewReaderSize(nc, 64<<10), writeTimeout: writeTimeout}
}

func (t *tcpTransport) writeCommands(b []byte, _ []int) error {
	_ = t.nc.SetWriteDeadline(time.Now().Add(t.writeTimeout))
	_, err := t.nc.Write(b)
	return err
}

func (t *tcpTransport) read() (resp.Value, error) { return resp.ReadValue(t.r) }

func (t *tcpTransport) close() { _ = t.nc.Close() }

// wsTransport is one RESP value per WebSocket frame: a text frame, or a
// binary one when the bytes are not UTF-8. Frames written in one
// writeCommands call leave in one socket write: the connection under the
// WebSocket buffers them until the batch is complete.
type wsTransport struct {
	ws           *websocket.Conn
	bc           *batchConn
	readTimeout  time.Duration
	writeTimeout time.Duration
}

func (t *wsTransport) writeCommands(b []byte, ends []int) error {
	deadline := time.Now().Add(t.writeTimeout)
	_ = t.ws.SetWriteDeadline(deadline)
	t.bc.begin()
	start := 0
	for _, end := range ends {
		if err := t.ws.WriteMessage(frameType(b[start:end]), b[start:end]); err != nil {
			t.bc.end(deadline)
			return err
		}
		start = end
	}
	return t.bc.end(deadline)
}

// frameType returns the WebSocket message type of a frame holding b: text,
// unless b is not valid UTF-8 (a text frame must be UTF-8, and the server
// fails the connection on one that is not).
func frameType(b []byte) int {
	if utf8.Valid(b) {
		return websocket.TextMessage
	}
	return websocket.BinaryMessage
}

func (t *wsTransport) read() (resp.Value, error) {
	for {
		_ = t.ws.SetReadDeadline(time.Now().Add(t.readTimeout))
		typ, msg, err := t.ws.ReadMessage()
		if err != nil {
			return resp.Value{}, err
		}
		if typ != websocket.TextMessage && typ != websocket.BinaryMessage {
			continue
		}
		v, n, err := resp.ParseValue(msg)
		switch {
		case err != nil:
			return resp.Value{}, err
		case n == 0:
			return resp.Value{}, &resp.ProtocolError{Msg: "incomplete value in a frame"}
		case n != len(msg):
			return resp.Value{}, &resp.ProtocolError{Msg: "more than one value in a frame"}
		}
		return v, nil
	}
}

func (t *wsTransport) close() {
	_ = t.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	_ = t.ws.Close()
}

// batchConn is the net.Conn under a WebSocket. Between begin and end it
// collects what the WebSocket writes and end sends it in one write;
// otherwise (the handshake, control frames) it writes through.
type batchConn struct {
	net.Conn
	mu       sync.Mutex
	batching bool
	buf      []byte
}

func (c *batchConn) begin() {
	c.mu.Lock()
	c.batching = true
	c.mu.Unlock()
}

func (c *batchConn) end(deadline time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.batching = false
	if len(c.buf) == 0 {
		return nil
	}
	_ = c.Conn.SetWriteDeadline(deadline)
	_, err := c.Conn.Write(c.buf)
	if cap(c.buf) > 1<<20 {
		c.buf = nil
	} else {
		c.buf = c.buf[:0]
	}
	return err
}

func (c *batchConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.batching {
		c.buf = append(c.buf, p...)
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// dial connects to target: host:port for tcp, the URL for ws.
func (c *Client) dial(target string) (transport, error) {
	ctx, cancel := context.WithTimeout(c.ctx, c.opts.DialTimeout)
	defer cancel()
	netDial := c.opts.NetDial
	if netDial == nil {
		d := &net.Dialer{KeepAlive: 15 * time.Second}
		netDial = d.DialContext
	}
	switch c.scheme {
	case "tcp":
		nc, err := netDial(ctx, "tcp", target)
		if err != nil {
			return nil, err
		}
		return newTCPTransport(nc, c.opts.WriteTimeout), nil
	case "ws", "wss":
		var bc *batchConn
		d := websocket.Dialer{
			NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				nc, err := netDial(ctx, network, addr)
				if err != nil {
					return nil, err
				}
				bc = &batchConn{Conn: nc}
				return bc, nil
			},
			HandshakeTimeout: c.opts.DialTimeout,
			ReadBufferSize:   64 << 10,
			WriteBufferSize:  64 << 10,
		}
		ws, res, err := d.DialContext(ctx, target, nil)
		var body []byte
		if res != nil && res.Body != nil {
			if err != nil {
				// A server that refuses the upgrade (protected mode,
				// maxclients) says why in the body, in Redis's words.
				body, _ = io.ReadAll(io.LimitReader(res.Body, 1024))
			}
			_ = res.Body.Close()
		}
		if err != nil {
			if res != nil {
				return nil, fmt.Errorf("websocket handshake: %s: %s: %w", res.Status, bytes.TrimSpace(body), err)
			}
			return nil, err
		}
		if bc == nil {
			_ = ws.Close()
			return nil, errors.New("websocket dialer bypassed the connection wrapper")
		}
		ws.SetReadLimit(resp.MaxMessage)
		t := &wsTransport{ws: ws, bc: bc, readTimeout: c.opts.ReadTimeout, writeTimeout: c.opts.WriteTimeout}
		ws.SetPingHandler(func(data string) error {
			_ = ws.SetReadDeadline(time.Now().Add(t.readTimeout))
			err := ws.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(t.writeTimeout))
			if errors.Is(err, websocket.ErrCloseSent) {
				return nil
			}
			return err
		})
		return t, nil
	}
	return nil, fmt.Errorf("unsupported scheme %q", c.scheme)
}
