package server

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/recached/recached/resp"
)

// paramKind is how a CONFIG parameter's value is read and shown.
type paramKind uint8

const (
	kindBool    paramKind = iota // yes or no
	kindInt                      // a decimal integer (string2ll)
	kindMemory                   // bytes, with an optional k/kb/m/mb/g/gb unit
	kindPercent                  // a memory value or N%, shown as N%
	kindOctal                    // an octal number
	kindEnum                     // one of a list of names, any case
	kindString                   // any text
	kindSpecial                  // its own parser (save, bind, ...)
)

// paramFlags are a CONFIG parameter's properties, as Redis 7.0 flags them.
type paramFlags uint8

const (
	// paramImmutable: CONFIG SET answers "can't set immutable config", as
	// Redis does.
	paramImmutable paramFlags = 1 << iota
	// paramFixed: Redis changes it at run time, recached fixes it at start
	// (listeners, persistence mode): CONFIG SET accepts the current value
	// only, and answers any other as it answers an immutable parameter.
	paramFixed
	// paramProtected: refused unless enable-protected-configs allows it
	// (yes, or local for a loopback connection).
	paramProtected
	// paramSensitive: a secret (requirepass, masterauth, masteruser) that
	// a command log, when there is one, must not show.
	paramSensitive
	// paramHidden: only an exact name finds it in CONFIG GET, no pattern.
	paramHidden
	// paramMultiArg: the value is a space-separated list of words.
	paramMultiArg
)

// configParam is one parameter of CONFIG GET and CONFIG SET.
type configParam struct {
	name  string
	alias string // the older name Redis still accepts, or ""
	kind  paramKind
	flags paramFlags
	// def is the value CONFIG GET shows before any CONFIG SET, in the form
	// CONFIG GET shows it.
	def string
	// min and max bound an integer parameter. unsigned compares the value
	// as Redis's unsigned types do (maxmemory's max is 2^64-1).
	min      int64
	max      uint64
	unsigned bool
	// enum is the names an enum parameter takes; with paramMultiArg the
	// value is a set of them.
	enum []string
	// check validates a value (of a number: once read) and returns the form
	// CONFIG GET shows.
	check func(v string) (string, error)
	// get and set connect the parameters recached acts on to Config; the
	// others keep their value in the server's parameter map.
	get func(c *Config) string
	set func(c *Config, v string)
	// apply, when set, makes a new value take effect in the running
	// server; CONFIG SET calls it under cfgMu once every value of the
	// command has been accepted, with the value as given (checked), since
	// the form CONFIG GET shows may say less: notify-keyspace-events "KEAn"
	// shows as "AKE" and still turns on the new event, as in Redis.
	apply func(srv *Server, v string)
	// act, when set, makes a new value take effect with work that may not
	// run under cfgMu (appendonly writes a snapshot with every shard
	// locked; min-replicas-max-lag recounts the replicas under
	// replState.mu, which is taken outside cfgMu): CONFIG SET calls
	// it once cfgMu is released and no shard is locked (inside EXEC, once
	// the transaction's locks are released, before its reply leaves). When
	// it fails the parameter gets its previous value back.
	act func(srv *Server, v string) error
}

// configTable is every parameter of Redis 7.0 (src/config.c), plus
// recached's own ws-port, by lower-case name and alias.
type configTable struct {
	params []*configParam
	byName map[string]*configParam
}

// paramTable is built once: it holds no state, only the description.
var paramTable = newConfigTable()

func newConfigTable() *configTable {
	t := &configTable{byName: make(map[string]*configParam)}
	for _, p := range configParamList() {
		t.params = append(t.params, p)
		t.byName[p.name] = p
		if p.alias != "" {
			t.byName[p.alias] = p
		}
	}
	return t
}

// lookup finds a parameter by name or alias, any case.
func (t *configTable) lookup(name string) *configParam {
	return t.byName[strings.ToLower(name)]
}

func boolParam(name, alias string, flags paramFlags, def bool) *configParam {
	return &configParam{name: name, alias: alias, kind: kindBool, flags: flags, def: yesNo(def)}
}

func intParam(name, alias string, flags paramFlags, min int64, max uint64, def int64) *configParam {
	return &configParam{name: name, alias: alias, kind: kindInt, flags: flags, min: min, max: max, def: strconv.FormatInt(def, 10)}
}

// uintParam is an integer Redis keeps in an unsigned type (unsigned int,
// size_t, unsigned long long): negative values fail the bounds as huge ones.
func uintParam(name, alias string, flags paramFlags, min int64, max uint64, def int64) *configParam {
	p := intParam(name, alias, flags, min, max, def)
	p.unsigned = true
	return p
}

func memParam(name, alias string, flags paramFlags, min int64, max uint64, def int64, unsigned bool) *configParam {
	return &configParam{name: name, alias: alias, kind: kindMemory, flags: flags, min: min, max: max, def: strconv.FormatInt(def, 10), unsigned: unsigned}
}

func enumParam(name string, flags paramFlags, def string, names ...string) *configParam {
	return &configParam{name: name, kind: kindEnum, flags: flags, def: def, enum: names}
}

func strParam(name, alias string, flags paramFlags, def string) *configParam {
	return &configParam{name: name, alias: alias, kind: kindString, flags: flags, def: def}
}

func specialParam(name, alias string, flags paramFlags, def string, check func(string) (string, error)) *configParam {
	return &configParam{name: name, alias: alias, kind: kindSpecial, flags: flags | paramMultiArg, def: def, check: check}
}

const (
	maxInt32  = math.MaxInt32
	maxUint32 = math.MaxUint32
	maxInt64  = math.MaxInt64
	maxUint64 = math.MaxUint64
)

// configParamList describes every parameter. Bounds, defaults and flags are
// Redis 7.0.15's; where recached acts on a parameter, get and set reach the
// Config field it acts through.
func configParamList() []*configParam {
	const (
		imm   = paramImmutable
		fixed = paramFixed
		prot  = paramProtected
		sens  = paramSensitive
		hid   = paramHidden
	)
	return []*configParam{
		// Booleans.
		boolParam("rdbchecksum", "", imm, true),
		boolParam("daemonize", "", imm, false),
		boolParam("io-threads-do-reads", "", imm, false),
		boolParam("always-show-logo", "", imm, false),
		boolParam("protected-mode", "", 0, true),
		boolParam("rdbcompression", "", 0, true),
		boolParam("rdb-del-sync-files", "", 0, false),
		boolParam("activerehashing", "", 0, true),
		boolParam("stop-writes-on-bgsave-error", "", 0, true),
		boolParam("set-proc-title", "", imm, true),
		boolParam("dynamic-hz", "", 0, true),
		boolParam("lazyfree-lazy-eviction", "", 0, false),
		boolParam("lazyfree-lazy-expire", "", 0, false),
		boolParam("lazyfree-lazy-server-del", "", 0, false),
		withApply(boolParam("lazyfree-lazy-user-del", "", 0, false),
			func(srv *Server, v string) { srv.mem.lazyUserDel.Store(resp.EqualFold([]byte(v), "yes")) }),
		withApply(boolParam("lazyfree-lazy-user-flush", "", 0, false),
			func(srv *Server, v string) { srv.mem.lazyUserFlush.Store(resp.EqualFold([]byte(v), "yes")) }),
		boolParam("repl-disable-tcp-nodelay", "", 0, false),
		boolParam("repl-diskless-sync", "", 0, true),
		boolParam("aof-rewrite-incremental-fsync", "", 0, true),
		boolParam("no-appendfsync-on-rewrite", "", 0, false),
		boolParam("cluster-require-full-coverage", "", 0, true),
		boolParam("rdb-save-incremental-fsync", "", 0, true),
		boolParam("aof-load-truncated", "", 0, true),
		boolParam("aof-use-rdb-preamble", "", 0, true),
		boolParam("aof-timestamp-enabled", "", 0, false),
		boolParam("cluster-replica-no-failover", "cluster-slave-no-failover", 0, false),
		boolParam("replica-lazy-flush", "slave-lazy-flush", 0, false),
		withApply(boolParam("replica-serve-stale-data", "slave-serve-stale-data", 0, true), applyServeStale),
		withApply(boolParam("replica-read-only", "slave-read-only", 0, true), applyReplicaReadOnly),
		boolParam("replica-ignore-maxmemory", "slave-ignore-maxmemory", 0, true),
		boolParam("jemalloc-bg-thread", "", 0, true),
		withCheck(boolParam("activedefrag", "", 0, false), checkActiveDefrag),
		boolParam("syslog-enabled", "", imm, false),
		boolParam("cluster-enabled", "", imm, false),
		{name: "appendonly", kind: kindBool,
			get: func(c *Config) string { return yesNo(c.AppendOnly) },
			set: func(c *Config, v string) { c.AppendOnly = v == "yes" },
			act: func(srv *Server, _ string) error { return srv.persist.applyAppendOnly() }},
		boolParam("cluster-allow-reads-when-down", "", 0, false),
		boolParam("cluster-allow-pubsubshard-when-down", "", 0, true),
		boolParam("crash-log-enabled", "", 0, true),
		boolParam("crash-memcheck-enabled", "", 0, true),
		boolParam("use-exit-on-panic", "", hid, false),
		boolParam("disable-thp", "", imm, true),
		boolParam("cluster-allow-replica-migration", "", 0, true),
		boolParam("replica-announced", "", 0, true),
		{name: "latency-tracking", kind: kindBool, def: "yes",
			apply: func(srv *Server, v string) { srv.latencyTracking.Store(v == "yes") }},
		boolParam("aof-disable-auto-gc", "", 0, false),
		boolParam("replica-ignore-disk-write-errors", "", 0, false),
		withCheck(boolParam("tls-cluster", "", 0, false), checkNoTLS),
		withCheck(boolParam("tls-replication", "", 0, false), checkNoTLS),
		boolParam("tls-prefer-server-ciphers", "", 0, false),
		boolParam("tls-session-caching", "", 0, true),

		// Strings.
		strParam("aclfile", "", imm, ""),
		strParam("unixsocket", "", imm, ""),
		strParam("pidfile", "", imm, ""),
		strParam("replica-announce-ip", "slave-announce-ip", 0, ""),
		strParam("masteruser", "", sens, ""),
		strParam("cluster-announce-ip", "", 0, ""),
		strParam("cluster-config-file", "", imm, "nodes.conf"),
		{name: "cluster-announce-hostname", kind: kindString, check: checkHostname},
		strParam("syslog-ident", "", imm, "redis"),
		// The Redis RDB file a first start loads and saves in RDB format
		// write (persist_rdb.go); recached's own snapshot keeps its name.
		withCheck(&configParam{name: "dbfilename", kind: kindString, flags: prot, def: "dump.rdb",
			get: func(c *Config) string {
				if c.DBFilename == "" {
					return "dump.rdb"
				}
				return c.DBFilename
			},
			set: func(c *Config, v string) { c.DBFilename = v }}, checkDBFilename),
		strParam("appendfilename", "", imm, "appendonly.aof"),
		strParam("appenddirname", "", imm, "appendonlydir"),
		strParam("server_cpulist", "", imm, ""),
		strParam("bio_cpulist", "", imm, ""),
		strParam("aof_rewrite_cpulist", "", imm, ""),
		strParam("bgsave_cpulist", "", imm, ""),
		strParam("ignore-warnings", "", 0, ""),
		withCheck(strParam("proc-title-template", "", 0, "{title} {listen-addr} {server-mode}"), checkProcTitle),
		strParam("bind-source-addr", "", 0, ""),
		strParam("logfile", "", imm, ""),
		strParam("masterauth", "", sens, ""),
		{name: "requirepass", kind: kindString, flags: sens,
			get:   func(c *Config) string { return c.RequirePass },
			set:   func(c *Config, v string) { c.RequirePass = v },
			apply: func(srv *Server, v string) { srv.acl.setRequirePass(v) }},
		strParam("tls-cert-file", "", 0, ""),
		strParam("tls-key-file", "", 0, ""),
		strParam("tls-key-file-pass", "", 0, ""),
		strParam("tls-client-cert-file", "", 0, ""),
		strParam("tls-client-key-file", "", 0, ""),
		strParam("tls-client-key-file-pass", "", 0, ""),
		strParam("tls-dh-params-file", "", 0, ""),
		strParam("tls-ca-cert-file", "", 0, ""),
		strParam("tls-ca-cert-dir", "", 0, ""),
		strParam("tls-protocols", "", 0, ""),
		strParam("tls-ciphers", "", 0, ""),
		strParam("tls-ciphersuites", "", 0, ""),

		// Enums.
		enumParam("supervised", imm, "no", "upstart", "systemd", "auto", "no"),
		enumParam("syslog-facility", imm, "local0", "user", "local0", "local1", "local2", "local3", "local4", "local5", "local6", "local7"),
		enumParam("repl-diskless-load", 0, "disabled", "disabled", "on-empty-db", "swapdb"),
		enumParam("loglevel", 0, "notice", "debug", "verbose", "notice", "warning"),
		{name: "maxmemory-policy", kind: kindEnum, def: "noeviction", enum: []string{"volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl", "allkeys-lru", "allkeys-lfu", "allkeys-random", "noeviction"},
			get:   func(c *Config) string { return c.MaxMemoryPolicy },
			set:   func(c *Config, v string) { c.MaxMemoryPolicy = v },
			apply: func(srv *Server, _ string) { srv.applyPolicy() }},
		{name: "appendfsync", kind: kindEnum, enum: []string{"everysec", "always", "no"},
			get:   func(c *Config) string { return c.AppendFsync },
			set:   func(c *Config, v string) { c.AppendFsync = v },
			apply: func(srv *Server, _ string) { srv.persist.applyFsync() }},
		enumParam("oom-score-adj", 0, "no", "no", "yes", "relative", "absolute"),
		withApply(enumParam("acl-pubsub-default", 0, "resetchannels", "allchannels", "resetchannels"),
			func(srv *Server, v string) { srv.acl.pubsubAll.Store(v == "allchannels") }),
		enumParam("sanitize-dump-payload", 0, "no", "no", "yes", "clients"),
		enumParam("enable-protected-configs", imm, "no", "no", "yes", "local"),
		enumParam("enable-debug-command", imm, "no", "no", "yes", "local"),
		enumParam("enable-module-command", imm, "no", "no", "yes", "local"),
		enumParam("cluster-preferred-endpoint-type", 0, "ip", "ip", "hostname", "unknown-endpoint"),
		enumParam("propagation-error-behavior", 0, "ignore", "ignore", "panic", "panic-on-replicas"),
		shutdownParam("shutdown-on-sigint"),
		shutdownParam("shutdown-on-sigterm"),
		enumParam("tls-auth-clients", 0, "yes", "no", "yes", "optional"),

		// Integers.
		{name: "databases", kind: kindInt, flags: imm, min: 1, max: maxInt32,
			get: func(c *Config) string { return strconv.Itoa(c.Databases) },
			set: func(c *Config, v string) { c.Databases, _ = strconv.Atoi(v) }},
		// CONFIG SET moves the RESP listener (relisten).
		{name: "port", kind: kindInt, min: 0, max: 65535,
			get: func(c *Config) string { return strconv.Itoa(c.Port) },
			set: func(c *Config, v string) { c.Port, _ = strconv.Atoi(v) }},
		{name: "ws-port", kind: kindInt, flags: fixed, min: 0, max: 65535,
			get: func(c *Config) string { return strconv.Itoa(c.WSPort) },
			set: func(c *Config, v string) { c.WSPort, _ = strconv.Atoi(v) }},
		{name: "io-threads", kind: kindInt, flags: imm, min: 1, max: 128,
			get: func(c *Config) string { return strconv.Itoa(c.Loops) },
			set: func(c *Config, v string) { c.Loops, _ = strconv.Atoi(v) }},
		intParam("auto-aof-rewrite-percentage", "", 0, 0, maxInt32, 100),
		intParam("cluster-replica-validity-factor", "cluster-slave-validity-factor", 0, 0, maxInt32, 10),
		withApply(intParam("list-max-listpack-size", "list-max-ziplist-size", 0, math.MinInt32, maxInt32, -2), applyListMaxListpackSize),
		withApply(intParam("tcp-keepalive", "", 0, 0, maxInt32, 300), applyKeepAlive),
		intParam("cluster-migration-barrier", "", 0, 0, maxInt32, 1),
		intParam("active-defrag-cycle-min", "", 0, 1, 99, 1),
		intParam("active-defrag-cycle-max", "", 0, 1, 99, 25),
		intParam("active-defrag-threshold-lower", "", 0, 0, 1000, 10),
		intParam("active-defrag-threshold-upper", "", 0, 0, 1000, 100),
		{name: "lfu-log-factor", kind: kindInt, min: 0, max: maxInt32, def: "10", apply: func(srv *Server, _ string) { srv.applyLFU() }},
		{name: "lfu-decay-time", kind: kindInt, min: 0, max: maxInt32, def: "1", apply: func(srv *Server, _ string) { srv.applyLFU() }},
		intParam("replica-priority", "slave-priority", 0, 0, maxInt32, 100),
		intParam("repl-diskless-sync-delay", "", 0, 0, maxInt32, 5),
		{name: "maxmemory-samples", kind: kindInt, min: 1, max: maxInt32, def: "5", apply: func(srv *Server, v string) { srv.mem.samples.Store(atoi32(v)) }},
		{name: "maxmemory-eviction-tenacity", kind: kindInt, min: 0, max: 100, def: "10", apply: func(srv *Server, v string) { srv.mem.tenacity.Store(atoi32(v)) }},
		withApply(intParam("timeout", "", 0, 0, maxInt32, 0), applyTimeout),
		intParam("replica-announce-port", "slave-announce-port", 0, 0, 65535, 0),
		intParam("tcp-backlog", "", imm, 0, maxInt32, 511),
		intParam("cluster-port", "", imm, 0, 65535, 0),
		intParam("cluster-announce-bus-port", "", 0, 0, 65535, 0),
		intParam("cluster-announce-port", "", 0, 0, 65535, 0),
		intParam("cluster-announce-tls-port", "", 0, 0, 65535, 0),
		intParam("repl-timeout", "", 0, 1, maxInt32, 60),
		intParam("repl-ping-replica-period", "repl-ping-slave-period", 0, 1, maxInt32, 10),
		intParam("list-compress-depth", "", 0, 0, maxInt32, 0),
		intParam("rdb-key-save-delay", "", hid, math.MinInt32, maxInt32, 0),
		intParam("key-load-delay", "", hid, math.MinInt32, maxInt32, 0),
		intParam("active-expire-effort", "", 0, 1, 10, 1),
		{name: "hz", kind: kindInt, min: 0, max: maxInt32, def: "10", check: clampHz, apply: applyHz},
		withApply(intParam("min-replicas-to-write", "min-slaves-to-write", 0, 0, maxInt32, 0), applyMinReplicas),
		minReplicasLagParam(),
		intParam("watchdog-period", "", hid, 0, maxInt32, 0),
		intParam("shutdown-timeout", "", 0, 0, maxInt32, 10),
		intParam("repl-diskless-sync-max-replicas", "", 0, 0, maxInt32, 0),
		intParam("tls-port", "", 0, 0, 65535, 0),
		intParam("tls-session-cache-size", "", 0, 0, maxInt32, 20*1024),
		intParam("tls-session-cache-timeout", "", 0, 0, maxInt32, 300),
		{name: "maxclients", kind: kindInt, min: 1, max: maxUint32, unsigned: true, check: checkMaxClients,
			get: func(c *Config) string { return strconv.Itoa(c.MaxClients) },
			set: func(c *Config, v string) { c.MaxClients, _ = strconv.Atoi(v) }},
		{name: "unixsocketperm", kind: kindOctal, flags: imm, min: 0, max: 0o777, unsigned: true, def: "0"},
		uintParam("socket-mark-id", "", imm, 0, maxUint32, 0),
		intParam("active-defrag-max-scan-fields", "", 0, 1, maxInt64, 1000),
		withApply(intParam("slowlog-max-len", "", 0, 0, maxInt64, 128), func(srv *Server, v string) {
			n, _ := strconv.ParseInt(v, 10, 64)
			srv.slowlog.maxLen.Store(n)
			srv.slowlog.mu.Lock()
			srv.slowlog.trim()
			srv.slowlog.mu.Unlock()
		}),
		withApply(intParam("acllog-max-len", "", 0, 0, maxInt64, 128),
			func(srv *Server, v string) { srv.acl.setMaxLog(v) }),
		intParam("busy-reply-threshold", "lua-time-limit", 0, 0, maxInt64, 5000),
		intParam("cluster-node-timeout", "", 0, 0, maxInt64, 15000),
		withApply(intParam("slowlog-log-slower-than", "", 0, -1, maxInt64, 10000), func(srv *Server, v string) {
			n, _ := strconv.ParseInt(v, 10, 64)
			srv.slowlog.threshold.Store(n)
		}),
		withApply(intParam("latency-monitor-threshold", "", 0, 0, maxInt64, 0), func(srv *Server, v string) {
			n, _ := strconv.ParseInt(v, 10, 64)
			srv.diag.threshold.Store(n)
			srv.diag.setHook(hookLatency, n > 0)
		}),
		// recached's bulk limit is 64 MB (Redis: 512 MB).
		withApply(memParam("proto-max-bulk-len", "", 0, 1024*1024, maxInt64, 64<<20, false), applyBulkLimit),
		intParam("stream-node-max-entries", "", 0, 0, maxInt64, 100),
		withCheck(memParam("repl-backlog-size", "", 0, 1, maxInt64, 1024*1024, false), clampBacklog),
		{name: "maxmemory", kind: kindMemory, min: 0, max: maxUint64, unsigned: true, def: "0",
			get:   func(c *Config) string { return strconv.FormatUint(c.MaxMemory, 10) },
			set:   func(c *Config, v string) { c.MaxMemory, _ = strconv.ParseUint(v, 10, 64) },
			apply: func(srv *Server, _ string) { srv.applyMaxMemory() }},
		memParam("cluster-link-sendbuf-limit", "", 0, 0, maxUint64, 0, true),
		withApply(uintParam("hash-max-listpack-entries", "hash-max-ziplist-entries", 0, 0, maxInt64, 512), applyHashLimits),
		withApply(uintParam("set-max-intset-entries", "", 0, 0, maxInt64, 512), applySetMaxIntset),
		withApply(uintParam("zset-max-listpack-entries", "zset-max-ziplist-entries", 0, 0, maxInt64, 128), applyZSetLimits),
		memParam("active-defrag-ignore-bytes", "", 0, 1, maxInt64, 100<<20, true),
		withApply(memParam("hash-max-listpack-value", "hash-max-ziplist-value", 0, 0, maxInt64, 64, true), applyHashLimits),
		memParam("stream-node-max-bytes", "", 0, 0, maxInt64, 4096, true),
		withApply(memParam("zset-max-listpack-value", "zset-max-ziplist-value", 0, 0, maxInt64, 64, true), applyZSetLimits),
		withApply(memParam("hll-sparse-max-bytes", "", 0, 0, maxInt64, 3000, true), applyHLLSparseMax),
		withApply(uintParam("tracking-table-max-keys", "", 0, 0, maxInt64, 1000000), func(srv *Server, v string) {
			n, _ := strconv.ParseInt(v, 10, 64)
			srv.tracking.maxKeys.Store(n)
		}),
		withApply(memParam("client-query-buffer-limit", "", 0, 1024*1024, maxInt64, 1<<30, true), applyQueryLimit),
		{name: "maxmemory-clients", kind: kindPercent, min: -100, max: maxInt64, def: "0"},
		intParam("repl-backlog-ttl", "", 0, 0, maxInt64, 3600),
		memParam("auto-aof-rewrite-min-size", "", 0, 0, maxInt64, 64<<20, false),
		intParam("loading-process-events-interval-bytes", "", hid, 1024, maxInt32, 2<<20),

		// Special parameters.
		// The data directory is fixed at start: the snapshot and the log
		// stay where they were opened.
		{name: "dir", kind: kindSpecial, flags: prot | fixed,
			get: func(c *Config) string { d, _ := filepath.Abs(c.Dir); return d },
			set: func(c *Config, v string) { c.Dir = v }},
		{name: "save", kind: kindSpecial, flags: paramMultiArg, check: checkSave,
			get: func(c *Config) string { return c.Save },
			set: func(c *Config, v string) { c.Save = v }},
		withApply(specialParam("client-output-buffer-limit", "", 0, "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60", nil), applyOutputLimits),
		specialParam("oom-score-adj-values", "", 0, "0 200 800", checkOOMScoreValues),
		{name: "notify-keyspace-events", kind: kindSpecial, check: checkKeyspaceEvents,
			apply: func(srv *Server, v string) { srv.notifyFlags.Store(keyspaceEventFlags(v)) }},
		// CONFIG SET moves the RESP listener (relisten).
		{name: "bind", kind: kindSpecial, flags: paramMultiArg,
			get: func(c *Config) string { return c.Bind },
			set: func(c *Config, v string) { c.Bind = v }},
		specialParam("replicaof", "slaveof", imm, "", nil),
		specialParam("latency-tracking-info-percentiles", "", 0, "50 99 99.9", checkPercentiles),
	}
}

func shutdownParam(name string) *configParam {
	return &configParam{name: name, kind: kindEnum, flags: paramMultiArg, def: "default",
		enum: []string{"default", "save", "nosave", "now", "force"}}
}

// configError is a CONFIG SET failure in Redis's words, which start with a
// capital and may end with a period: the reply shows it after the dash.
type configError string

func (e configError) Error() string { return string(e) }

// parseValue checks v for p and returns the form CONFIG GET shows. cur is
// the current value (client-output-buffer-limit changes only the classes
// it names).
func (p *configParam) parseValue(v, cur string) (string, error) {
	switch p.kind {
	case kindBool:
		b := strings.ToLower(v)
		if b != "yes" && b != "no" {
			return "", errors.New("argument must be 'yes' or 'no'")
		}
		if p.check != nil {
			return p.check(b)
		}
		return b, nil
	case kindInt, kindMemory, kindPercent, kindOctal:
		n, err := p.parseNumber(v)
		if err != nil || p.check == nil {
			return n, err
		}
		return p.check(n)
	case kindEnum:
		return p.parseEnum(v)
	}
	if p.name == "client-output-buffer-limit" {
		return mergeOutputLimits(v, cur)
	}
	if p.check != nil {
		return p.check(v)
	}
	return v, nil
}

// parseNumber reads v as Redis reads a numeric parameter: first as a
// memory value, a percentage or an octal number when the parameter takes
// one, else as a plain integer; then checks the bounds.
func (p *configParam) parseNumber(v string) (string, error) {
	var n int64
	ok := false
	if p.kind == kindMemory || p.kind == kindPercent {
		var u uint64
		if u, ok = parseMemory(v); ok {
			n = int64(u)
		}
	}
	if !ok && p.kind == kindPercent && len(v) > 1 && v[len(v)-1] == '%' {
		if m, ok2 := resp.ParseInt(v[:len(v)-1]); ok2 && m >= 0 {
			n, ok = -m, true
		}
	}
	if !ok && p.kind == kindOctal {
		if m, err := strconv.ParseInt(v, 8, 64); err == nil {
			n, ok = m, true
		}
	}
	if !ok && p.kind == kindInt {
		n, ok = resp.ParseInt(v)
	}
	if !ok {
		switch p.kind {
		case kindPercent:
			return "", errors.New("argument must be a memory or percent value")
		case kindMemory:
			return "", errors.New("argument must be a memory value")
		case kindOctal:
			return "", errors.New("argument couldn't be parsed as an octal number")
		}
		return "", errors.New("argument couldn't be parsed into an integer")
	}
	switch {
	case p.unsigned:
		if uint64(n) > p.max || uint64(n) < uint64(p.min) {
			if p.kind == kindOctal {
				return "", fmt.Errorf("argument must be between %o and %o inclusive", p.min, p.max)
			}
			return "", fmt.Errorf("argument must be between %d and %d inclusive", uint64(p.min), p.max)
		}
	case p.kind == kindPercent && n < 0:
		if n < p.min {
			return "", fmt.Errorf("percentage argument must be less or equal to %d", -p.min)
		}
		return strconv.FormatInt(-n, 10) + "%", nil
	case n < p.min || n > int64(p.max):
		return "", fmt.Errorf("argument must be between %d and %d inclusive", p.min, p.max)
	}
	switch {
	case p.kind == kindMemory || p.kind == kindPercent:
		return strconv.FormatUint(uint64(n), 10), nil
	case p.kind == kindOctal:
		return strconv.FormatInt(n, 8), nil
	}
	return strconv.FormatInt(n, 10), nil
}

// ParseMemory reads a byte count as redis.conf writes one ("256mb"), for
// flags that take one.
func ParseMemory(v string) (uint64, error) {
	n, ok := parseMemory(v)
	if !ok {
		return 0, fmt.Errorf("not a byte count: %q", v)
	}
	return n, nil
}

// parseMemory reads a byte count as Redis's memtoull: digits and an
// optional unit (b, k, kb, m, mb, g, gb, any case); no sign.
func parseMemory(v string) (uint64, bool) {
	i := 0
	for i < len(v) && v[i] >= '0' && v[i] <= '9' {
		i++
	}
	var mul uint64
	switch strings.ToLower(v[i:]) {
	case "", "b":
		mul = 1
	case "k":
		mul = 1000
	case "kb":
		mul = 1024
	case "m":
		mul = 1000 * 1000
	case "mb":
		mul = 1024 * 1024
	case "g":
		mul = 1000 * 1000 * 1000
	case "gb":
		mul = 1024 * 1024 * 1024
	default:
		return 0, false
	}
	if i >= 128 {
		return 0, false
	}
	// strtoull: no digits reads as 0, too many saturates.
	n, err := strconv.ParseUint(v[:i], 10, 64)
	if err != nil && i > 0 {
		n = math.MaxUint64
	}
	return n * mul, true
}

// parseEnum reads one name of p.enum, or with paramMultiArg a set of them,
// and returns it the way Redis shows it.
func (p *configParam) parseEnum(v string) (string, error) {
	words := []string{v}
	if p.flags&paramMultiArg != 0 {
		words = strings.Split(v, " ")
	}
	var set []string
	for _, w := range words {
		found := ""
		for _, e := range p.enum {
			if strings.EqualFold(w, e) {
				found = e
			}
		}
		if found == "" {
			return "", errors.New("argument(s) must be one of the following: " + strings.Join(p.enum, ", "))
		}
		set = append(set, found)
	}
	if p.flags&paramMultiArg == 0 {
		return set[0], nil
	}
	// A set of shutdown flags, shown in the table's order; "default" is
	// the empty set.
	has := map[string]bool{}
	for _, w := range set {
		has[w] = true
	}
	if has["save"] && has["nosave"] {
		return "", errors.New("shutdown options SAVE and NOSAVE can't be used simultaneously")
	}
	var out []string
	for _, e := range p.enum[1:] {
		if has[e] {
			out = append(out, e)
		}
	}
	if len(out) == 0 {
		return p.enum[0], nil
	}
	return strings.Join(out, " "), nil
}

// clampHz keeps hz within 1 and 500, as Redis does when it applies it.
func clampHz(v string) (string, error) {
	n, _ := strconv.Atoi(v)
	return strconv.Itoa(min(max(n, 1), 500)), nil
}

func checkSave(v string) (string, error) {
	if _, err := ParseSaveRules(v); err != nil {
		return "", err
	}
	return v, nil
}

// checkDBFilename refuses a dbfilename with a directory in it, as Redis
// does in a configuration file and CONFIG SET (recached's --dbfilename flag
// may name any path).
func checkDBFilename(v string) (string, error) {
	if strings.ContainsAny(v, `/\`) {
		return "", configError("dbfilename can't be a path, just a filename")
	}
	return v, nil
}

func checkHostname(v string) (string, error) {
	if len(v) >= 256 {
		return "", configError("Hostnames must be less than 256 characters")
	}
	for _, c := range []byte(v) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			return "", configError("Hostnames may only contain alphanumeric characters, hyphens or dots")
		}
	}
	return v, nil
}

func checkOOMScoreValues(v string) (string, error) {
	f := strings.Split(v, " ")
	if len(f) != 3 {
		return "", errors.New("wrong number of arguments")
	}
	out := make([]string, 3)
	for i, w := range f {
		n, err := strconv.ParseInt(w, 10, 64)
		if err != nil || n < -2000 || n > 2000 {
			return "", configError("Invalid oom-score-adj-values, elements must be between -2000 and 2000.")
		}
		out[i] = strconv.FormatInt(n, 10)
	}
	return strings.Join(out, " "), nil
}

func checkPercentiles(v string) (string, error) {
	if v == "" {
		return "", nil
	}
	var out []string
	for _, w := range strings.Split(v, " ") {
		if hasHexFloat(w) && !strings.ContainsAny(w, "pP") {
			w += "p0" // strtod reads 0x10 as 16; Go wants the exponent
		}
		f, err := strconv.ParseFloat(w, 64)
		if err != nil || strings.Contains(w, "_") || math.IsNaN(f) {
			return "", configError("Invalid latency-tracking-info-percentiles parameters")
		}
		if f > 100 || f < 0 {
			return "", errors.New("latency-tracking-info-percentiles parameters should sit between [0.0,100.0]")
		}
		out = append(out, strconv.FormatFloat(f, 'f', -1, 64))
	}
	return strings.Join(out, " "), nil
}

// keyspaceEventClasses are notify-keyspace-events' letters in the order
// Redis shows them, 'A' standing for the first ten.
const keyspaceEventClasses = "g$lshzxetd"

func checkKeyspaceEvents(v string) (string, error) {
	has := map[byte]bool{}
	for _, c := range []byte(v) {
		switch {
		case c == 'A':
			for _, a := range []byte(keyspaceEventClasses) {
				has[a] = true
			}
		case strings.IndexByte(keyspaceEventClasses+"nKEm", c) >= 0:
			has[c] = true
		default:
			return "", configError("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")
		}
	}
	var b strings.Builder
	all := true
	for _, a := range []byte(keyspaceEventClasses) {
		all = all && has[a]
	}
	if all {
		b.WriteByte('A')
	} else {
		for _, a := range []byte(keyspaceEventClasses) {
			if has[a] {
				b.WriteByte(a)
			}
		}
	}
	for _, a := range []byte("nKEm") {
		if has[a] && (a != 'n' || !all) {
			b.WriteByte(a)
		}
	}
	return b.String(), nil
}

// mergeOutputLimits checks client-output-buffer-limit's groups of four
// (class, hard, soft, seconds) and returns cur with those classes replaced.
func mergeOutputLimits(v, cur string) (string, error) {
	if v == "" {
		return cur, nil // no class given: nothing changes, as in Redis
	}
	f := strings.Split(v, " ")
	if len(f)%4 != 0 {
		return "", configError("Wrong number of arguments in buffer limit configuration.")
	}
	classes := []string{"normal", "slave", "pubsub"}
	limits := strings.Split(cur, " ")
	for i := 0; i+3 < len(f); i += 4 {
		class := strings.ToLower(f[i])
		if class == "replica" {
			class = "slave"
		}
		at := -1
		for j, c := range classes {
			if c == class {
				at = j
			}
		}
		if at < 0 {
			return "", configError("Invalid client class specified in buffer limit configuration.")
		}
		hard, ok1 := parseMemory(f[i+1])
		soft, ok2 := parseMemory(f[i+2])
		secs, err := strconv.ParseInt(f[i+3], 10, 64)
		if !ok1 || !ok2 || err != nil || secs < 0 || strings.HasPrefix(f[i+1], "-") {
			return "", configError("Error in hard, soft or soft_seconds setting in buffer limit configuration.")
		}
		limits[at*4+1] = strconv.FormatUint(hard, 10)
		limits[at*4+2] = strconv.FormatUint(soft, 10)
		limits[at*4+3] = strconv.FormatInt(secs, 10)
	}
	return strings.Join(limits, " "), nil
}
