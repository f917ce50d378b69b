package server

import (
	"github.com/recached/recached/server/keyspace"
)

// This file is the engine's read side for a metrics exporter
// (server/metrics): every figure is read from the counters INFO already
// keeps, at the time of the scrape, so the command path pays nothing for
// it.

// Histogram is a latency histogram in Prometheus's form: Count durations
// totalling Sum seconds, Buckets[i] of them at or below Bounds[i] seconds
// (cumulative).
type Histogram struct {
	Count   uint64
	Sum     float64
	Buckets map[float64]uint64
}

// histogram folds h into the given upper bounds, in seconds, ascending.
func (h *latencyHist) histogram(bounds []float64) Histogram {
	out := Histogram{Buckets: make(map[float64]uint64, len(bounds))}
	per := make([]uint64, len(bounds))
	var n uint64
	for i := range h.counts {
		c := h.counts[i].Load()
		if c == 0 {
			continue
		}
		n += uint64(c)
		up := float64(histUpper(i)) / 1e9
		for j, b := range bounds {
			if up <= b {
				per[j] += uint64(c)
				break
			}
		}
	}
	var cum uint64
	for j, b := range bounds {
		cum += per[j]
		out.Buckets[b] = cum
	}
	out.Count = n
	out.Sum = float64(h.sumNs.Load()) / 1e9
	return out
}

// CommandMetric is one command's (or subcommand's) INFO commandstats
// figures. Latency is the histogram of the timed calls (one in
// timeSample, see stats.go), nil while none was timed with
// latency-tracking on.
type CommandMetric struct {
	Name                    string
	Calls, Rejected, Failed int64
	Usec                    int64
	Latency                 *Histogram
	// P50, P99 and P999 are latency percentiles of the timed calls, in
	// seconds, as INFO latencystats computes them; 0 without Latency.
	P50, P99, P999 float64
}

// CommandMetrics calls fn for every command and subcommand that has run or
// been refused since start or CONFIG RESETSTAT, its latency folded into
// bounds (seconds, ascending).
func (srv *Server) CommandMetrics(bounds []float64, fn func(CommandMetric)) {
	for _, c := range srv.table.Sorted() {
		for _, x := range append([]*Command{c}, c.Subs...) {
			st := &x.stats
			m := CommandMetric{Name: x.Name, Calls: st.calls.Load(), Rejected: st.rejected.Load(), Failed: st.failed.Load()}
			if m.Calls == 0 && m.Rejected == 0 && m.Failed == 0 {
				continue
			}
			m.Usec = st.usec()
			if h := st.lat.Load(); h != nil && h.total.Load() > 0 {
				hg := h.histogram(bounds)
				m.Latency = &hg
				m.P50, m.P99, m.P999 = float64(h.percentile(50))/1e9, float64(h.percentile(99))/1e9, float64(h.percentile(99.9))/1e9
			}
			fn(m)
		}
	}
}

// FsyncMetrics is the latency histogram of the append-only log's fsyncs
// since start, folded into bounds (seconds, ascending).
func (srv *Server) FsyncMetrics(bounds []float64) Histogram {
	return srv.persist.fsyncs.histogram(bounds)
}

// CountDroppedPushes accounts for n frames a transport discarded
// unsent: queued for a connection it closed as a slow consumer, or pushed
// to one already closed.
func (srv *Server) CountDroppedPushes(n int) { srv.syncer.dropped.Add(int64(n)) }

// TransportNamer is implemented by a transport's Conn that is neither RESP
// over TCP nor the WebSocket bridge, to be counted under its own name in
// the connection metrics.
type TransportNamer interface {
	TransportName() string
}

// DBMetric is one database's key count and keys with a time to live.
type DBMetric struct {
	Index        int
	Keys, Expire int
}

// Metrics are the engine-wide figures of INFO's clients, memory, stats and
// keyspace sections, read in one call.
type Metrics struct {
	// Clients counts connected clients by transport: "resp",
	// "websocket", or a TransportNamer's name.
	Clients          map[string]int
	TotalConnections int64
	RejectedConns    int64
	BlockedClients   int64
	TotalCommands    int64
	ErrorReplies     int64
	// Errors counts error replies by code, as INFO errorstats.
	Errors map[string]int64

	UsedMemory, RSS, PeakMemory, MaxMemory uint64

	ExpiredKeys, EvictedKeys   int64
	KeyspaceHits, KeyspaceMiss int64
	NetInput, NetOutput        int64

	PubsubChannels, PubsubPatterns int

	// SyncPushes counts the frames the sync router handed to connections.
	SyncPushes int64
	// SyncDropped counts the frames transports discarded unsent
	// (CountDroppedPushes).
	SyncDropped int64
	// DedupReplays counts DEDUP-wrapped writes refused as replays.
	DedupReplays int64

	// DBs lists the databases holding keys.
	DBs []DBMetric
}

// Metrics reads the engine's figures.
func (srv *Server) Metrics() Metrics {
	m := Metrics{Clients: map[string]int{"resp": 0, "websocket": 0}}
	srv.clientsMu.Lock()
	for _, s := range srv.clients {
		name := "resp"
		if s.WS {
			name = "websocket"
		} else if tn, ok := s.conn.(TransportNamer); ok {
			name = tn.TransportName()
		}
		m.Clients[name]++
	}
	srv.clientsMu.Unlock()
	m.TotalConnections = srv.totalConns.Load()
	m.RejectedConns = srv.rejected.Load()
	m.BlockedClients = srv.BlockedClients()
	m.TotalCommands = srv.commandsProcessed()
	m.ErrorReplies = srv.errorReplies.Load()
	st := &srv.errStats
	st.mu.Lock()
	m.Errors = make(map[string]int64, len(st.counts))
	for code, n := range st.counts {
		m.Errors[code] = n
	}
	st.mu.Unlock()

	m.UsedMemory = srv.UsedMemory()
	m.RSS = residentBytes()
	m.PeakMemory = max(uint64(srv.mem.peak.Load()), m.UsedMemory)
	m.MaxMemory = srv.mem.limit.Load()

	m.ExpiredKeys = srv.expiredKeys.Load()
	m.EvictedKeys = srv.mem.evicted.Load()
	m.KeyspaceHits, m.KeyspaceMiss = srv.keyHits.Load(), srv.keyMisses.Load()
	m.NetInput, m.NetOutput = srv.netIn.Load(), srv.netOut.Load()
	m.PubsubChannels, m.PubsubPatterns, _ = srv.pubsub.stats()
	m.SyncPushes = srv.syncer.pushes.Load()
	m.SyncDropped = srv.syncer.dropped.Load()
	m.DedupReplays = srv.dedup.Replays()

	for _, db := range srv.ks.DBs {
		d := DBMetric{Index: db.Index}
		for i := 0; i < keyspace.NumShards; i++ {
			sh := db.Shard(i)
			sh.Lock()
			d.Keys += db.Len(i)
			d.Expire += db.Expires(i)
			sh.Unlock()
		}
		if d.Keys > 0 {
			m.DBs = append(m.DBs, d)
		}
	}
	return m
}
