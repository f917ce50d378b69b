package server_test

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/servertest"
)

// infoField returns field of INFO section, "" when absent.
func infoField(t *testing.T, c *servertest.Client, section, field string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(field) + `:([^\r]*)`).FindStringSubmatch(servertest.MustDo(t, c, "info", section))
	if m == nil {
		return ""
	}
	return m[1]
}

// TestLatencyStatsMatchRedis follows latencystats through latency-tracking
// and latency-tracking-info-percentiles on both servers: which commands
// have a line and which percentiles it lists.
func TestLatencyStatsMatchRedis(t *testing.T) {
	if !servertest.HaveRedis() {
		t.Skip("redis-server not installed")
	}
	shape := regexp.MustCompile(`=[0-9.]+|^\$\d+`)
	steps := [][]string{
		{"config", "resetstat"}, {"config", "set", "latency-tracking", "no"}, {"set", "a", "b"}, {"info", "latencystats"},
		{"config", "set", "latency-tracking", "yes"}, {"set", "a", "b"}, {"get", "a"}, {"info", "latencystats"},
		{"config", "set", "latency-tracking-info-percentiles", "0.0 50.0 100.0"}, {"info", "latencystats"},
		{"config", "set", "latency-tracking-info-percentiles", "10.0 50.0 a"}, {"config", "get", "latency-tracking-info-percentiles"},
		{"config", "resetstat"}, {"info", "latencystats"},
	}
	var got [2][]string
	for i, addr := range []string{servertest.StartRedis(t), func() string { a, _ := servertest.StartRecached(t, server.DefaultConfig()); return a }()} {
		c := servertest.Dial(t, addr)
		for _, args := range steps {
			rep, err := c.Do(args...)
			if err != nil {
				t.Fatal(err)
			}
			// The lines come in the order of each server's command table.
			lines := strings.Split(shape.ReplaceAllString(string(rep), "=N"), "\r\n")
			sort.Strings(lines)
			got[i] = append(got[i], strings.Join(lines, "\n"))
		}
	}
	for i := range steps {
		if got[0][i] != got[1][i] {
			t.Errorf("%q:\nredis-server %q\nrecached     %q", steps[i], got[0][i], got[1][i])
		}
	}
}

// TestInfoStatsFields checks the INFO fields monitoring tools read: the
// network byte counts against redis-server's for the same requests, the
// CPU heading, instantaneous_ops_per_sec, avg_ttl and commandstats usec.
func TestInfoStatsFields(t *testing.T) {
	if !servertest.HaveRedis() {
		t.Skip("redis-server not installed")
	}
	recAddr, _ := servertest.StartRecached(t, server.DefaultConfig())
	var deltas [2]int
	for i, addr := range []string{servertest.StartRedis(t), recAddr} {
		c := servertest.Dial(t, addr)
		before, _ := strconv.Atoi(infoField(t, c, "stats", "total_net_input_bytes"))
		servertest.MustDo(t, c, "set", "key", "value")
		servertest.MustDo(t, c, "ping")
		after, _ := strconv.Atoi(infoField(t, c, "stats", "total_net_input_bytes"))
		deltas[i] = after - before
	}
	if deltas[0] != deltas[1] || deltas[1] == 0 {
		t.Errorf("total_net_input_bytes grew by %d on redis-server, %d on recached", deltas[0], deltas[1])
	}

	c := servertest.Dial(t, recAddr)
	if info := servertest.MustDo(t, c, "info", "cpu"); !strings.Contains(info, "# CPU\r\n") {
		t.Errorf("INFO cpu heading: %q", info)
	}
	servertest.MustDo(t, c, "setex", "k", "100", "v")
	if ttl := infoField(t, c, "keyspace", "db0"); !regexp.MustCompile(`avg_ttl=(9\d{4}|100000)$`).MatchString(ttl) {
		t.Errorf("db0 %q: want avg_ttl near 100000", ttl)
	}
	servertest.MustDo(t, c, "config", "resetstat")
	// One SET can take less than a microsecond (usec=0 then, on either
	// server): a hundred cannot.
	for i := 0; i < 100; i++ {
		servertest.MustDo(t, c, "set", "a", "b")
	}
	if st := infoField(t, c, "commandstats", "cmdstat_set"); !regexp.MustCompile(`^calls=100,usec=[1-9]`).MatchString(st) {
		t.Errorf("cmdstat_set %q: want 100 calls with their microseconds", st)
	}
	ops := ""
	for i := 0; i < 100 && (ops == "" || ops == "0"); i++ {
		for j := 0; j < 200; j++ {
			servertest.MustDo(t, c, "ping")
		}
		ops = infoField(t, c, "stats", "instantaneous_ops_per_sec")
		time.Sleep(20 * time.Millisecond)
	}
	if ops == "" || ops == "0" {
		t.Errorf("instantaneous_ops_per_sec %q under load", ops)
	}
}
