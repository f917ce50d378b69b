package server

import (
	"testing"
)

// TestConfigTableWiring checks the table's own consistency: a parameter
// read from Config is either written to it or refused by CONFIG SET, and
// every default is a value the parameter accepts.
func TestConfigTableWiring(t *testing.T) {
	for _, p := range paramTable.params {
		if p.get != nil && p.set == nil && p.flags&(paramImmutable|paramProtected|paramFixed) == 0 {
			t.Errorf("%s: read from Config but CONFIG SET would store it elsewhere", p.name)
		}
		if p.get != nil || p.kind == kindSpecial {
			continue
		}
		if got, err := p.parseValue(p.def, p.def); err != nil || got != p.def {
			t.Errorf("%s: default %q reads back as %q, %v", p.name, p.def, got, err)
		}
	}
}

// TestConfigParseValue covers the value readers against what redis-server
// 7.0.15 answers (checked by hand and by TestConfigAgainstRedis).
func TestConfigParseValue(t *testing.T) {
	cases := []struct {
		name, value, want, err string
	}{
		{"hash-max-ziplist-entries", "16", "16", ""},
		{"hash-max-listpack-entries", "-1", "", "argument must be between 0 and 9223372036854775807 inclusive"},
		{"set-max-intset-entries", "01", "", "argument couldn't be parsed into an integer"},
		{"list-max-ziplist-size", "-2147483649", "", "argument must be between -2147483648 and 2147483647 inclusive"},
		{"maxmemory", "1kb", "1024", ""},
		{"maxmemory", "2M", "2000000", ""},
		{"maxmemory", "", "0", ""},
		{"maxmemory", "99999999999999999999999", "18446744073709551615", ""},
		{"maxmemory", "-1", "", "argument must be a memory value"},
		{"maxmemory", "1.5mb", "", "argument must be a memory value"},
		{"maxmemory-clients", "50%", "50%", ""},
		{"maxmemory-clients", "200%", "", "percentage argument must be less or equal to 100"},
		{"maxmemory-clients", "-5", "", "argument must be a memory or percent value"},
		{"maxclients", "0", "", "argument must be between 1 and 4294967295 inclusive"},
		{"proto-max-bulk-len", "1", "", "argument must be between 1048576 and 9223372036854775807 inclusive"},
		{"activerehashing", "YES", "yes", ""},
		{"activerehashing", "1", "", "argument must be 'yes' or 'no'"},
		{"loglevel", "VERBOSE", "verbose", ""},
		{"maxmemory-policy", "lru", "", "argument(s) must be one of the following: volatile-lru, volatile-lfu, volatile-random, volatile-ttl, allkeys-lru, allkeys-lfu, allkeys-random, noeviction"},
		{"shutdown-on-sigint", "now save", "save now", ""},
		{"shutdown-on-sigint", "save nosave", "", "shutdown options SAVE and NOSAVE can't be used simultaneously"},
		{"notify-keyspace-events", "KEA", "AKE", ""},
		{"notify-keyspace-events", "Elg", "glE", ""},
		{"notify-keyspace-events", "Q", "", "Invalid event class character. Use 'Ag$lshzxeKEtmdn'."},
		{"save", "1 2 3", "", "Invalid save parameters"},
		{"client-output-buffer-limit", "pubsub 1mb 2 3", "normal 0 0 0 slave 268435456 67108864 60 pubsub 1048576 2 3", ""},
		{"client-output-buffer-limit", "foo 1 2 3", "", "Invalid client class specified in buffer limit configuration."},
		{"oom-score-adj-values", "0 200", "", "wrong number of arguments"},
		{"latency-tracking-info-percentiles", "50 99.90", "50 99.9", ""},
		{"latency-tracking-info-percentiles", "101", "", "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]"},
	}
	for _, c := range cases {
		p := paramTable.lookup(c.name)
		if p == nil {
			t.Fatalf("%s: not in the table", c.name)
		}
		got, err := p.parseValue(c.value, p.def)
		errText := ""
		if err != nil {
			errText = err.Error()
		}
		if got != c.want || errText != c.err {
			t.Errorf("%s %q = %q, %q; want %q, %q", c.name, c.value, got, errText, c.want, c.err)
		}
	}
}
