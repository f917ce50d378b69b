// Package dashboard serves the live operations dashboard at /dashboard/: a
// static page, embedded in the binary with no build step, and the
// WebSocket at /dashboard/live that sends it the engine's figures once a
// second (clients by transport, commands, latency percentiles, memory,
// keyspace, the sync connections with the patterns of their scopes). The figures are read as /metrics reads them
// (server.Metrics, server.CommandMetrics): a dashboard connection costs
// one read a second and nothing on the command path.
//
// The page does not poll INFO over the RESP bridge because the bridge
// refuses admin and dangerous commands (INFO, CLIENT LIST) to WebSocket
// connections by design.
package dashboard

import (
	"embed"
	"io/fs"
	"net/http"
	"time"

	"github.com/gorilla/websocket"

	"github.com/recached/recached/server"
)

//go:embed static
var files embed.FS

// Interval is how often the live socket sends a snapshot.
const Interval = time.Second

// Register mounts the page at /dashboard/ and its live socket at
// /dashboard/live on mux.
func Register(mux *http.ServeMux, srv *server.Server) {
	sub, err := fs.Sub(files, "static")
	if err != nil {
		panic("dashboard: embedded files: " + err.Error()) // the embed directive names static
	}
	mux.Handle("GET /dashboard/", http.StripPrefix("/dashboard/", http.FileServerFS(sub)))
	up := websocket.Upgrader{ReadBufferSize: 1 << 10, WriteBufferSize: 16 << 10} // same-origin only, gorilla's default
	mux.HandleFunc("GET /dashboard/live", func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return // the upgrader answered the error
		}
		live(c, srv)
	})
}

// live sends a snapshot now and every Interval until the page goes away.
func live(c *websocket.Conn, srv *server.Server) {
	defer c.Close()
	gone := make(chan struct{})
	go func() { // reads nothing but the close
		defer close(gone)
		for {
			if _, _, err := c.NextReader(); err != nil {
				return
			}
		}
	}()
	t := time.NewTicker(Interval)
	defer t.Stop()
	for {
		_ = c.SetWriteDeadline(time.Now().Add(10 * time.Second))
		if err := c.WriteJSON(read(srv)); err != nil {
			return
		}
		select {
		case <-gone:
			return
		case <-t.C:
		}
	}
}

// Snapshot is one message of the live socket.
type Snapshot struct {
	TimeMs         int64          `json:"timeMs"`
	Version        string         `json:"version"`
	Clients        map[string]int `json:"clients"`
	TotalCommands  int64          `json:"totalCommands"`
	UsedMemory     uint64         `json:"usedMemory"`
	RSS            uint64         `json:"rss"`
	EvictedKeys    int64          `json:"evictedKeys"`
	ExpiredKeys    int64          `json:"expiredKeys"`
	PubsubChannels int            `json:"pubsubChannels"`
	SyncPushes     int64          `json:"syncPushes"`
	DBs            []DB           `json:"dbs"`
	Commands       []Command      `json:"commands"`
	// Sync is every sync connection with its scope's patterns.
	Sync []server.SyncConn `json:"sync"`
}

// DB is one database's keys.
type DB struct {
	Index   int `json:"index"`
	Keys    int `json:"keys"`
	Expires int `json:"expires"`
}

// Command is one command's calls and latency percentiles in microseconds.
type Command struct {
	Name   string  `json:"name"`
	Calls  int64   `json:"calls"`
	Failed int64   `json:"failed"`
	P50    float64 `json:"p50"`
	P99    float64 `json:"p99"`
	P999   float64 `json:"p999"`
}

func read(srv *server.Server) Snapshot {
	m := srv.Metrics()
	s := Snapshot{
		TimeMs: time.Now().UnixMilli(), Version: server.Version, Clients: m.Clients,
		TotalCommands: m.TotalCommands, UsedMemory: m.UsedMemory, RSS: m.RSS,
		EvictedKeys: m.EvictedKeys, ExpiredKeys: m.ExpiredKeys,
		PubsubChannels: m.PubsubChannels, SyncPushes: m.SyncPushes,
		DBs: []DB{}, Commands: []Command{}, Sync: srv.SyncConns(),
	}
	for _, d := range m.DBs {
		s.DBs = append(s.DBs, DB{d.Index, d.Keys, d.Expire})
	}
	srv.CommandMetrics(nil, func(c server.CommandMetric) {
		s.Commands = append(s.Commands, Command{Name: c.Name, Calls: c.Calls, Failed: c.Failed,
			P50: c.P50 * 1e6, P99: c.P99 * 1e6, P999: c.P999 * 1e6})
	})
	return s
}
