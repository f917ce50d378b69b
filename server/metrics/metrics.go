// Package metrics exports the engine's statistics in Prometheus's format.
// Its collector reads the counters INFO already keeps (commandstats,
// errorstats, clients, memory, keyspace) when it is scraped, so the
// command path does no work for it; a transport mounts Handler at
// /metrics.
package metrics

import (
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/recached/recached/server"
)

// latencyBounds are the command latency buckets, in seconds: 1µs to about
// 1s, doubling.
var latencyBounds = prometheus.ExponentialBuckets(1e-6, 2, 21)

// fsyncBounds are the fsync latency buckets, in seconds: 10µs to about 10s.
var fsyncBounds = prometheus.ExponentialBuckets(1e-5, 2, 21)

// Collector is a prometheus.Collector over one server's statistics.
type Collector struct {
	srv *server.Server
}

// NewCollector returns a collector reading srv.
func NewCollector(srv *server.Server) *Collector { return &Collector{srv: srv} }

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("recached_"+name, help, labels, nil)
}

var (
	dCommands  = desc("commands_total", "Calls of each command, as INFO commandstats calls.", "cmd")
	dFailed    = desc("commands_failed_total", "Calls of each command that ended in an error, as INFO commandstats failed_calls.", "cmd")
	dRejected  = desc("commands_rejected_total", "Calls of each command refused before running, as INFO commandstats rejected_calls.", "cmd")
	dCmdSecs   = desc("commands_duration_seconds_total", "Time spent in each command, estimated from the timed calls as INFO commandstats usec.", "cmd")
	dCmdLat    = desc("command_duration_seconds", "Latency of each command over its timed calls (one in 32, as INFO latencystats samples them).", "cmd")
	dErrors    = desc("errors_total", "Error replies by error code, as INFO errorstats.", "code")
	dErrTotal  = desc("error_replies_total", "Error replies sent, as INFO total_error_replies.")
	dCmdTotal  = desc("commands_processed_total", "Commands processed, as INFO total_commands_processed.")
	dClients   = desc("connected_clients", "Connected clients by transport.", "transport")
	dConns     = desc("connections_received_total", "Connections accepted, as INFO total_connections_received.")
	dRejConns  = desc("rejected_connections_total", "Connections refused at maxclients, as INFO rejected_connections.")
	dBlocked   = desc("blocked_clients", "Clients blocked in a blocking command.")
	dUsed      = desc("memory_used_bytes", "The engine's estimate of the memory the dataset costs, as INFO used_memory.")
	dRSS       = desc("memory_rss_bytes", "Resident set size of the process, as INFO used_memory_rss.")
	dPeak      = desc("memory_peak_bytes", "Highest used_memory seen, as INFO used_memory_peak.")
	dMax       = desc("memory_max_bytes", "The maxmemory limit, 0 for none.")
	dKeys      = desc("db_keys", "Keys in each database.", "db")
	dExpires   = desc("db_expiring_keys", "Keys with a time to live in each database.", "db")
	dExpired   = desc("expired_keys_total", "Keys deleted on expiry, as INFO expired_keys.")
	dEvicted   = desc("evicted_keys_total", "Keys evicted under maxmemory, as INFO evicted_keys.")
	dHits      = desc("keyspace_hits_total", "Lookups that found their key, as INFO keyspace_hits.")
	dMisses    = desc("keyspace_misses_total", "Lookups that missed, as INFO keyspace_misses.")
	dNetIn     = desc("net_input_bytes_total", "Bytes read from clients, as INFO total_net_input_bytes.")
	dNetOut    = desc("net_output_bytes_total", "Bytes written to clients, as INFO total_net_output_bytes.")
	dChannels  = desc("pubsub_channels", "Channels with at least one subscriber.")
	dPatterns  = desc("pubsub_patterns", "Patterns with at least one subscriber.")
	dPushes    = desc("sync_pushes_total", "Mutation and keychange frames handed to sync connections.")
	dDropped   = desc("sync_pushes_dropped_total", "Frames discarded unsent: queued for a connection closed as a slow consumer, or pushed to one already closed.")
	dReplays   = desc("dedup_replays_total", "DEDUP-wrapped writes refused as replays (DEDUP hits).")
	dFsync     = desc("aof_fsync_duration_seconds", "Latency of the append-only log's fsyncs.")
	allMetrics = []*prometheus.Desc{dCommands, dFailed, dRejected, dCmdSecs, dCmdLat, dErrors, dErrTotal, dCmdTotal,
		dClients, dConns, dRejConns, dBlocked, dUsed, dRSS, dPeak, dMax, dKeys, dExpires, dExpired, dEvicted,
		dHits, dMisses, dNetIn, dNetOut, dChannels, dPatterns, dPushes, dDropped, dReplays, dFsync}
)

// Describe sends every metric's description.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range allMetrics {
		ch <- d
	}
}

// Collect reads the server's figures and sends them.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	c.srv.CommandMetrics(latencyBounds, func(m server.CommandMetric) {
		counter(dCommands, float64(m.Calls), m.Name)
		counter(dFailed, float64(m.Failed), m.Name)
		counter(dRejected, float64(m.Rejected), m.Name)
		counter(dCmdSecs, float64(m.Usec)/1e6, m.Name)
		if h := m.Latency; h != nil {
			ch <- prometheus.MustNewConstHistogram(dCmdLat, h.Count, h.Sum, h.Buckets, m.Name)
		}
	})
	m := c.srv.Metrics()
	for code, n := range m.Errors {
		counter(dErrors, float64(n), code)
	}
	counter(dErrTotal, float64(m.ErrorReplies))
	counter(dCmdTotal, float64(m.TotalCommands))
	for t, n := range m.Clients {
		gauge(dClients, float64(n), t)
	}
	counter(dConns, float64(m.TotalConnections))
	counter(dRejConns, float64(m.RejectedConns))
	gauge(dBlocked, float64(m.BlockedClients))
	gauge(dUsed, float64(m.UsedMemory))
	gauge(dRSS, float64(m.RSS))
	gauge(dPeak, float64(m.PeakMemory))
	gauge(dMax, float64(m.MaxMemory))
	for _, db := range m.DBs {
		i := strconv.Itoa(db.Index)
		gauge(dKeys, float64(db.Keys), i)
		gauge(dExpires, float64(db.Expire), i)
	}
	counter(dExpired, float64(m.ExpiredKeys))
	counter(dEvicted, float64(m.EvictedKeys))
	counter(dHits, float64(m.KeyspaceHits))
	counter(dMisses, float64(m.KeyspaceMiss))
	counter(dNetIn, float64(m.NetInput))
	counter(dNetOut, float64(m.NetOutput))
	gauge(dChannels, float64(m.PubsubChannels))
	gauge(dPatterns, float64(m.PubsubPatterns))
	counter(dPushes, float64(m.SyncPushes))
	counter(dDropped, float64(m.SyncDropped))
	counter(dReplays, float64(m.DedupReplays))
	f := c.srv.FsyncMetrics(fsyncBounds)
	ch <- prometheus.MustNewConstHistogram(dFsync, f.Count, f.Sum, f.Buckets)
}

// Handler serves srv's metrics, with the Go runtime's and the process's
// own, in Prometheus's text format. Each call makes its own registry, so
// that two servers in one process (tests) do not share one.
func Handler(srv *server.Server) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewCollector(srv),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}
