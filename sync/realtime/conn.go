package realtime

import (
	"encoding/json"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/recached/recached/sync/realtime/wire"
)

// conn is one WebSocket connection: frames are queued by send, which never
// blocks, and written in order by one writer goroutine, which also sends the
// heartbeats.
type conn struct {
	ws   *websocket.Conn
	nack *Error // a 401 or 4000 Nack that ended the connection

	mu     sync.Mutex
	queue  [][]byte
	closed bool
	wake   chan struct{} // one token: the queue has frames
	done   chan struct{} // closed by close
	exited chan struct{} // closed when the writer returns
	once   sync.Once
}

func newConn(ws *websocket.Conn, heartbeat time.Duration) *conn {
	cn := &conn{ws: ws, wake: make(chan struct{}, 1), done: make(chan struct{}), exited: make(chan struct{})}
	go cn.writer(heartbeat)
	return cn
}

// send queues f. Frames sent after close are dropped: their requests learn
// of the end from the reader.
func (cn *conn) send(f frame) {
	b, err := json.Marshal(f)
	if err != nil {
		// Every field is a plain type or validated json.RawMessage.
		panic("realtime: marshal frame: " + err.Error())
	}
	cn.mu.Lock()
	if !cn.closed {
		cn.queue = append(cn.queue, b)
	}
	cn.mu.Unlock()
	select {
	case cn.wake <- struct{}{}:
	default:
	}
}

// writer writes queued frames, and a heartbeat every interval, until close
// or a write error (which closes the socket, so the reader ends too).
func (cn *conn) writer(interval time.Duration) {
	defer close(cn.exited)
	hb := time.NewTicker(interval)
	defer hb.Stop()
	heartbeat, _ := json.Marshal(frame{Op: wire.Heartbeat})
	for {
		var batch [][]byte
		select {
		case <-cn.done:
			return
		case <-hb.C:
			batch = [][]byte{heartbeat}
		case <-cn.wake:
			cn.mu.Lock()
			batch, cn.queue = cn.queue, nil
			cn.mu.Unlock()
		}
		for _, b := range batch {
			_ = cn.ws.SetWriteDeadline(time.Now().Add(10 * time.Second))
			if err := cn.ws.WriteMessage(websocket.TextMessage, b); err != nil {
				cn.close()
				return
			}
		}
	}
}

// close closes the socket once; the reader's ReadMessage then fails.
func (cn *conn) close() {
	cn.once.Do(func() {
		cn.mu.Lock()
		cn.closed = true
		cn.mu.Unlock()
		close(cn.done)
		_ = cn.ws.Close()
	})
}

// wait waits for the writer to return.
func (cn *conn) wait() { <-cn.exited }
