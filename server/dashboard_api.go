package server

import "time"

// SyncConn is one sync connection as the dashboard lists it: a WebSocket
// bridge session, or any session a scope restricts.
type SyncConn struct {
	ID        int64  `json:"id"`
	Addr      string `json:"addr"`
	Transport string `json:"transport"`
	AgeSec    int64  `json:"ageSec"`
	// Patterns are the key and channel patterns of the connection's scope
	// (its sync token's); nil for an unscoped connection, which may use
	// every key.
	Patterns []string `json:"patterns"`
}

// SyncConns lists the sync connections by id. It is safe from any
// goroutine: it reads what CLIENT LIST reads, and each session's scope
// patterns as its goroutine last published them.
func (srv *Server) SyncConns() []SyncConn {
	out := []SyncConn{}
	now := time.Now()
	for _, s := range srv.sessions() {
		pats := s.scopeView.Load()
		if !s.WS && pats == nil || s.conn == nil {
			continue
		}
		c := SyncConn{ID: s.ID, Addr: s.conn.RemoteAddr(), Transport: "websocket", AgeSec: int64(now.Sub(s.created) / time.Second)}
		if !s.WS {
			c.Transport = "resp"
			if tn, ok := s.conn.(TransportNamer); ok {
				c.Transport = tn.TransportName()
			}
		}
		if pats != nil {
			c.Patterns = *pats
		}
		out = append(out, c)
	}
	return out
}
