package metrics_test

import (
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/metrics"
	"github.com/recached/recached/server/servertest"
)

// scrape fetches and parses the /metrics page of the WebSocket port.
func scrape(t *testing.T, wsAddr string) map[string]*dto.MetricFamily {
	t.Helper()
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + wsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return fams
}

// find returns the sample of family name whose labels are exactly labels
// ("k=v" pairs), or nil.
func find(fams map[string]*dto.MetricFamily, name string, labels ...string) *dto.Metric {
	f := fams[name]
	if f == nil {
		return nil
	}
	for _, m := range f.Metric {
		if len(m.Label) != len(labels) {
			continue
		}
		ok := true
		for i, l := range m.Label {
			if l.GetName()+"="+l.GetValue() != labels[i] {
				ok = false
			}
		}
		if ok {
			return m
		}
	}
	return nil
}

// value is a counter's or gauge's value, NaN when absent.
func value(fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	m := find(fams, name, labels...)
	switch {
	case m == nil:
		return math.NaN()
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	}
	return math.NaN()
}

func mustDo(t *testing.T, c *servertest.Client, want string, args ...string) {
	t.Helper()
	got, err := c.Do(args...)
	if err != nil || !strings.HasPrefix(string(got), want) {
		t.Fatalf("%v: %q, %v; want %q", args, got, err, want)
	}
}

// TestMetricsAfterWorkload runs a known workload against a real server on
// loopback and checks what /metrics reports for it.
func TestMetricsAfterWorkload(t *testing.T) {
	const sets, expiring, gets = 100, 10, 50
	cfg := server.DefaultConfig()
	cfg.Dir, cfg.AppendOnly, cfg.AppendFsync, cfg.Save = t.TempDir(), true, "always", ""
	s := servertest.StartServers(t, cfg, func(srv *server.Server) {
		if err := srv.OpenPersistence(); err != nil {
			t.Fatal(err)
		}
	})

	// A WebSocket sync connection watching k*: every SET below pushes to it.
	d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
	wc, resp, err := d.Dial("ws://"+s.WS+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	defer wc.Close()
	if err := wc.WriteMessage(websocket.TextMessage, servertest.Encode("SYNC", "k*")); err != nil {
		t.Fatal(err)
	}
	wc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, msg, err := wc.ReadMessage(); err != nil || string(msg) != "+OK\r\n" {
		t.Fatalf("SYNC over WebSocket: %q, %v", msg, err)
	}

	sub := servertest.Dial(t, s.RESP)
	mustDo(t, sub, "*3\r\n", "SUBSCRIBE", "news")
	mustDo(t, sub, "*3\r\n", "PSUBSCRIBE", "alerts.*")

	c := servertest.Dial(t, s.RESP)
	for i := 0; i < sets; i++ {
		args := []string{"SET", fmt.Sprintf("k%d", i), "v"}
		if i < expiring {
			args = append(args, "EX", "1000")
		}
		mustDo(t, c, "+OK", args...)
	}
	for i := 0; i < gets; i++ {
		mustDo(t, c, "$1\r\nv", "GET", fmt.Sprintf("k%d", i))
	}
	mustDo(t, c, "-ERR value is not an integer", "INCR", "k0")
	mustDo(t, c, ":1", "DEDUP", "c1", "7", "HSET", "h", "f", "v")
	mustDo(t, c, "", "DEDUP", "c1", "7", "HSET", "h", "f", "v") // a replay

	// The connection servertest pinged with closes asynchronously: wait,
	// bounded, until the engine counts exactly the three left open.
	var fams map[string]*dto.MetricFamily
	for i := 0; ; i++ {
		fams = scrape(t, s.WS)
		if value(fams, "recached_connected_clients", "transport=resp") == 2 {
			break
		}
		if i == 100 {
			t.Fatalf("connected_clients{resp} = %v, want 2", value(fams, "recached_connected_clients", "transport=resp"))
		}
		time.Sleep(20 * time.Millisecond)
	}

	counts := []struct {
		name   string
		labels []string
		want   float64
	}{
		{"recached_commands_total", []string{"cmd=set"}, sets},
		{"recached_commands_total", []string{"cmd=get"}, gets},
		{"recached_commands_total", []string{"cmd=incr"}, 1},
		{"recached_commands_failed_total", []string{"cmd=incr"}, 1},
		{"recached_commands_failed_total", []string{"cmd=set"}, 0},
		{"recached_commands_total", []string{"cmd=dedup"}, 2},
		{"recached_commands_total", []string{"cmd=sync"}, 1},
		{"recached_commands_total", []string{"cmd=subscribe"}, 1},
		{"recached_errors_total", []string{"code=ERR"}, 1},
		{"recached_error_replies_total", nil, 1},
		{"recached_connected_clients", []string{"transport=websocket"}, 1},
		{"recached_db_keys", []string{"db=0"}, sets + 1},
		{"recached_db_expiring_keys", []string{"db=0"}, expiring},
		{"recached_pubsub_channels", nil, 1},
		{"recached_pubsub_patterns", nil, 1},
		{"recached_sync_pushes_total", nil, sets},
		{"recached_dedup_replays_total", nil, 1},
		{"recached_evicted_keys_total", nil, 0},
	}
	for _, tc := range counts {
		if got := value(fams, tc.name, tc.labels...); got != tc.want {
			t.Errorf("%s%v = %v, want %v", tc.name, tc.labels, got, tc.want)
		}
	}
	for _, name := range []string{"recached_memory_used_bytes", "recached_memory_rss_bytes"} {
		if got := value(fams, name); !(got > 0) {
			t.Errorf("%s = %v, want > 0", name, got)
		}
	}

	// At least one call in 32 is timed (server/stats.go: the first, the
	// 33rd, ...), every call of a command SLOWLOG times in full.
	hists := []struct {
		cmd   string
		calls uint64
	}{{"set", sets}, {"get", gets}}
	for _, tc := range hists {
		m := find(fams, "recached_command_duration_seconds", "cmd="+tc.cmd)
		if m == nil || m.Histogram == nil {
			t.Errorf("no latency histogram for %s", tc.cmd)
			continue
		}
		n := m.Histogram.GetSampleCount()
		if n < (tc.calls+31)/32 || n > tc.calls {
			t.Errorf("%s: %d timed calls of %d", tc.cmd, n, tc.calls)
		}
		checkHistogram(t, tc.cmd, m.Histogram, n)
	}
	// appendfsync always: every write fsyncs the log, DEDUP's HSET too.
	m := find(fams, "recached_aof_fsync_duration_seconds")
	if m == nil || m.Histogram == nil {
		t.Fatal("no fsync histogram")
	}
	if n := m.Histogram.GetSampleCount(); n < sets+1 {
		t.Errorf("fsyncs = %d, want at least %d", n, sets+1)
	}
	checkHistogram(t, "fsync", m.Histogram, m.Histogram.GetSampleCount())
}

// checkHistogram checks a histogram's count, that its buckets are
// cumulative and within the count, and that its sum is positive.
func checkHistogram(t *testing.T, what string, h *dto.Histogram, want uint64) {
	t.Helper()
	if h.GetSampleCount() != want {
		t.Errorf("%s: %d samples, want %d", what, h.GetSampleCount(), want)
	}
	if !(h.GetSampleSum() > 0) {
		t.Errorf("%s: sum %v, want > 0", what, h.GetSampleSum())
	}
	var prev uint64
	for _, b := range h.Bucket {
		if b.GetCumulativeCount() < prev || b.GetCumulativeCount() > want {
			t.Errorf("%s: bucket le=%v holds %d after %d, of %d", what, b.GetUpperBound(), b.GetCumulativeCount(), prev, want)
		}
		prev = b.GetCumulativeCount()
	}
}

// TestMetricsDroppedPushes fills the queue of a WebSocket sync connection
// that never reads until the bridge closes it as a slow consumer, and
// checks that the frames it discarded are counted.
func TestMetricsDroppedPushes(t *testing.T) {
	s := servertest.StartServers(t, server.DefaultConfig(), nil)
	d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
	wc, resp, err := d.Dial("ws://"+s.WS+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	defer wc.Close()
	if err := wc.WriteMessage(websocket.TextMessage, servertest.Encode("SYNC", "big:*")); err != nil {
		t.Fatal(err)
	}
	wc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, msg, err := wc.ReadMessage(); err != nil || string(msg) != "+OK\r\n" {
		t.Fatalf("SYNC over WebSocket: %q, %v", msg, err)
	}
	// From here on the connection reads nothing: 1 MB pushes pile up in
	// the socket buffers and then in its queue, past the 8 MB limit.
	c := servertest.Dial(t, s.RESP)
	val := strings.Repeat("x", 1<<20)
	var fams map[string]*dto.MetricFamily
	sets := 0
	for ; sets < 200; sets++ {
		mustDo(t, c, "+OK", "SET", fmt.Sprintf("big:%d", sets), val)
		fams = scrape(t, s.WS)
		if value(fams, "recached_sync_pushes_dropped_total") > 0 {
			break
		}
	}
	dropped := value(fams, "recached_sync_pushes_dropped_total")
	pushes := value(fams, "recached_sync_pushes_total")
	if !(dropped > 0) || dropped > pushes || pushes != float64(sets+1) {
		t.Fatalf("after %d SETs: %v pushes, %v dropped", sets+1, pushes, dropped)
	}
}

// BenchmarkScrape measures one scrape of /metrics, in process, of a server
// that has run a few commands of several kinds: the CPU a Prometheus
// server scraping every second costs the engine.
func BenchmarkScrape(b *testing.B) {
	s := servertest.StartServers(b, server.DefaultConfig(), nil)
	c := servertest.Dial(b, s.RESP)
	for i := 0; i < 1000; i++ {
		k := fmt.Sprintf("k%d", i)
		for _, args := range [][]string{{"SET", k, "v"}, {"GET", k}, {"HSET", "h" + k, "f", "v"}, {"LPUSH", "l", k}, {"INCR", "n"}} {
			if _, err := c.Do(args...); err != nil {
				b.Fatal(err)
			}
		}
	}
	h := metrics.Handler(s.Srv)
	req := httptest.NewRequest("GET", "/metrics", nil)
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatal(w.Code)
		}
	}
}
