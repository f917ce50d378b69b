// Package server is recached's engine: the command table, sessions, dispatch
// and the commands themselves, over the sharded keyspace. Transports (the
// gnet RESP listener, the WebSocket bridge) drive Sessions and depend on this
// package; it never depends on them.
package server

import (
	"context"
	"log"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/recached/recached/dedup"
	"github.com/recached/recached/server/keyspace"
	"github.com/recached/recached/sync/apikey"
)

// Version is the Redis version recached reports, the one whose replies it
// reproduces.
const Version = "7.0.15"

// Config is the server's configuration, from flags and the environment.
type Config struct {
	Bind        string
	Port        int
	WSPort      int
	Dir         string
	RequirePass string
	// Users are the configuration file's "user" directives, each its
	// arguments after "user" (a name and ACL rules).
	Users       [][]string
	TokenSecret string
	MaxClients  int
	Databases   int
	Save        string
	AppendOnly  bool
	AppendFsync string
	Loops       int
	Procs       int
	// MaxMemory is maxmemory in bytes (0: no limit) and MaxMemoryPolicy
	// maxmemory-policy (evict.go).
	MaxMemory       uint64
	MaxMemoryPolicy string
	// DBFilename names a Redis RDB file (relative to Dir unless absolute)
	// loaded at a start that finds no recached snapshot or log in Dir;
	// "" loads Dir/dump.rdb when it exists.
	DBFilename string
	// SnapshotFormat is "rdb" for saves (SAVE, BGSAVE, save rules,
	// shutdown) that also write DBFilename as a Redis RDB file; "" or
	// "rcd" for recached's snapshot alone.
	SnapshotFormat string
	// Amaquet (SPEC section 10, server/amaquet): the port (0 disables),
	// the largest payload a request may declare, the active commands per
	// connection, the declared-payload budget of the whole server, the
	// time a started frame may take and the idle time between frames (0:
	// forever).
	AmaquetPort          int
	AmaquetMaxPayload    int
	AmaquetMaxInflight   int
	AmaquetPayloadBudget int64
	AmaquetReadTimeout   time.Duration
	AmaquetIdleTimeout   time.Duration
	// APIKeysFile is the --api-keys file of Blackevin and Amaquet API keys
	// (SPEC section 9; sync/apikey); "" for none.
	APIKeysFile string
	// RealtimeHistoryTTL is how long a channel's history (the last
	// HistoryLimit messages, for rewind) is kept after its last
	// publication; zero or less records no history.
	RealtimeHistoryTTL time.Duration
	// RealtimeHistoryMaxMemory bounds the memory of the channel history
	// (DefaultHistoryMaxMemory by default; 0: no bound). Past it, the
	// channels published to least recently lose their history first.
	RealtimeHistoryMaxMemory int64
	// RealtimePort is the Blackevin realtime port (SPEC section 9,
	// server/realtime; 0 disables it) and RealtimeMaxConnsPerKey the
	// connections one API key may hold there.
	RealtimePort           int
	RealtimeMaxConnsPerKey int
	// ConfigFile is the absolute path of the redis.conf the server was
	// started with, "" for none: CONFIG REWRITE writes it (conffile.go).
	ConfigFile string
	// Params are the values, as CONFIG GET shows them, that the
	// configuration file gave the parameters without a field above.
	Params map[string]string
}

// DefaultConfig returns the defaults SPEC section 1 lists.
func DefaultConfig() Config {
	return Config{
		Bind:        "127.0.0.1",
		Port:        6379,
		WSPort:      6380,
		Dir:         ".",
		MaxClients:  10000,
		Databases:   16,
		Save:        "3600 1 300 100 60 10000",
		AppendOnly:  true,
		AppendFsync: "everysec",
		Loops:       1,
		Procs:       1,

		MaxMemoryPolicy: "noeviction",

		AmaquetPort:          6382,
		AmaquetMaxPayload:    1 << 20,
		AmaquetMaxInflight:   64,
		AmaquetPayloadBudget: 256 << 20,
		AmaquetReadTimeout:   10 * time.Second,
		AmaquetIdleTimeout:   300 * time.Second,

		RealtimeHistoryTTL:       DefaultHistoryTTL,
		RealtimeHistoryMaxMemory: DefaultHistoryMaxMemory,
		RealtimePort:             6381,
		RealtimeMaxConnsPerKey:   10000,
	}
}

// Conn is what a transport offers a session: a way to deliver bytes outside
// the request/reply cycle and to close the connection, from any goroutine.
type Conn interface {
	// Push queues bytes for delivery after any reply already sent.
	Push(b []byte)
	// Close closes the connection after what is queued has been sent.
	Close()
	// Wake asks the transport to go on processing requests it holds back
	// while the session is blocked (a blocking pop that was served).
	Wake()
	// RemoteAddr and LocalAddr are "ip:port" strings for CLIENT LIST.
	RemoteAddr() string
	LocalAddr() string
	// Buffered reports, for CLIENT LIST, the bytes received and not yet
	// run (qbuf) and the bytes of output queued and not yet written to the
	// socket (omem). Any goroutine may call it.
	Buffered() (query, output int)
}

// Server is one recached instance: its keyspace, command table, sessions and
// statistics. It is safe for use by many transports at once.
type Server struct {
	cfg   Config
	cfgMu sync.RWMutex
	// params holds, by name, the CONFIG SET values of the parameters kept
	// outside cfg (config_params.go); under cfgMu.
	params map[string]string
	ks     *keyspace.Keyspace
	table  *Table
	// firstHooks and hooks are the effect hooks added by AddHookFirst
	// and AddHook; the engine's own are called by name (publish).
	firstHooks []EffectHook
	hooks      []EffectHook
	commit     func()
	// resetHooks drop a session's state kept elsewhere (RESET, close).
	resetHooks []func(*Session)
	// extraInfo are INFO sections added by other parts of the server.
	extraInfo []infoSection
	// persist is the snapshot and append-only log state (persist.go).
	persist *persister
	// blocking is the clients blocked in BLPOP and its kin (blocking.go).
	blocking blockRegistry
	// scripts is the Lua script cache and running script (script.go).
	scripts scriptEngine
	// mem is maxmemory and the eviction state (evict.go).
	mem memoryState
	// migrate caches MIGRATE's connections to target servers (cmd_dump.go).
	migrate migrateCache
	// acl is the ACL users and log (acl.go).
	acl *aclState
	// repl is the replication state of both roles (repl.go).
	repl replState
	// replica is the replica role's link and checks (repl_replica.go).
	replica replicaSide

	start time.Time
	// runID is INFO's run_id: 40 random hex characters drawn at start,
	// which Sentinel and replicas use to tell a restarted server.
	runID   string
	nextID  atomic.Int64
	dirty   atomic.Int64
	stopped chan struct{}
	stop    sync.Once
	// Shutdown is closed when a client asks the server to shut down.
	Shutdown chan struct{}

	watches watchRegistry
	dedup   *dedup.Table
	// coarseNow is the unix time in ms as of the last tick (100 ms), for
	// bookkeeping that does not need a precise clock.
	coarseNow atomic.Int64
	pubsub    pubsubRegistry
	// notifyFlags is notify-keyspace-events as class bits (effects.go);
	// zero, the default, turns keyspace notifications off.
	notifyFlags atomic.Uint32
	// syncer routes writes to sync clients (syncer.go).
	syncer *syncer
	// live is the acting CONFIG parameters' values (config_act.go).
	live liveConfig
	// apiKeys is the --api-keys store, nil without one.
	apiKeys atomic.Pointer[apikey.Store]

	clientsMu sync.Mutex
	clients   map[int64]*Session

	totalConns   atomic.Int64
	rejected     atomic.Int64
	expiredKeys  atomic.Int64
	keyHits      atomic.Int64
	keyMisses    atomic.Int64
	lastSave     atomic.Int64
	netIn        atomic.Int64
	netOut       atomic.Int64
	errorReplies atomic.Int64
	errStats     errorStats
	tracking     trackingTable
	slowlog      slowLog
	monitors     monitorSet
	diag         diagState
	pause        pauseState
	instMu       sync.Mutex
	inst         instStats
	// latencyTracking is latency-tracking: timed calls feed INFO
	// latencystats.
	latencyTracking atomic.Bool
	// securityLogged is when (unix seconds) the cross-protocol scripting
	// warning was last logged (dispatch.go).
	securityLogged atomic.Int64
}

// New returns a server for cfg with an empty keyspace.
func New(cfg Config) *Server {
	if cfg.Databases <= 0 {
		cfg.Databases = 16
	}
	srv := &Server{
		cfg:      cfg,
		table:    newTable(),
		start:    time.Now(),
		runID:    newReplID(),
		stopped:  make(chan struct{}),
		Shutdown: make(chan struct{}),
		clients:  make(map[int64]*Session),
	}
	srv.scripts.jobs = make(chan *Session)
	srv.watches.keys = make(map[watchedKey]map[*Session]struct{})
	srv.resetHooks = append(srv.resetHooks, srv.disableTracking)
	srv.tracking.maxKeys.Store(1000000) // tracking-table-max-keys's default
	srv.slowlog.threshold.Store(10000)  // slowlog-log-slower-than's
	srv.slowlog.maxLen.Store(128)       // slowlog-max-len's
	srv.initPubSub()
	srv.initDiag()
	srv.ks = keyspace.New(cfg.Databases, srv.onExpire)
	srv.initMemory()
	srv.dedup = dedup.New(nil)
	srv.coarseNow.Store(time.Now().UnixMilli())
	srv.syncer = newSyncer(srv, cfg.Databases)
	srv.lastSave.Store(time.Now().Unix())
	srv.persist = newPersister(srv)
	srv.latencyTracking.Store(true) // latency-tracking's default
	srv.acl = newACL(srv.table)
	srv.repl.init()
	srv.applyStartParams()
	srv.applyConfigUsers()
	return srv
}

func (srv *Server) watchReg() *watchRegistry { return &srv.watches }

// SetCommit installs the function Commit runs (the append-only log's group
// commit). Call it before serving.
func (srv *Server) SetCommit(fn func()) { srv.commit = fn }

// Commit makes every effect emitted so far durable as the fsync policy asks.
// Transports call it after running a batch of requests and before sending
// their replies, so that an acknowledged write is never lost.
func (srv *Server) Commit() {
	if srv.commit != nil {
		srv.commit()
	}
}

// AddHook registers an effect hook, run after the hooks registered before
// it. Call it before serving.
func (srv *Server) AddHook(h EffectHook) { srv.hooks = append(srv.hooks, h) }

// AddHookFirst registers an effect hook that runs before every other hook
// (the append-only log still comes first): one that stands in for a log of
// its own, which must hear of a change before any push for it is queued.
// Call it before serving.
func (srv *Server) AddHookFirst(h EffectHook) {
	srv.firstHooks = append([]EffectHook{h}, srv.firstHooks...)
}

// Keyspace returns the server's data.
func (srv *Server) Keyspace() *keyspace.Keyspace { return srv.ks }

// LoadAPIKeys loads Config.APIKeysFile, when set, as the store APIKeys
// returns; an error names the file and what is wrong, and the caller
// refuses to start. cmd/recached calls it once after New.
func (srv *Server) LoadAPIKeys() error {
	path := srv.Config().APIKeysFile
	if path == "" {
		return nil
	}
	st, err := apikey.Load(path)
	if err != nil {
		return err
	}
	srv.apiKeys.Store(st)
	return nil
}

// SetAPIKeys installs a key store (tests, embedders); nil removes it.
func (srv *Server) SetAPIKeys(st *apikey.Store) { srv.apiKeys.Store(st) }

// APIKeys returns the API keys the realtime and Amaquet transports
// authenticate with, nil when none are configured. The store reloads
// itself in place (SIGHUP: APIKeys().Reload()).
func (srv *Server) APIKeys() *apikey.Store { return srv.apiKeys.Load() }

// Table returns the command table.
func (srv *Server) Table() *Table { return srv.table }

// Config returns a copy of the current configuration.
func (srv *Server) Config() Config {
	srv.cfgMu.RLock()
	defer srv.cfgMu.RUnlock()
	return srv.cfg
}

// Run does the server's background work, active expiry, the dropping of
// channel histories past their TTL and the sweeping of idle DEDUP marks,
// until ctx ends.
func (srv *Server) Run(ctx context.Context) {
	period := srv.tickPeriod()
	t := time.NewTicker(period)
	defer t.Stop()
	srv.startReplication()
	defer srv.stopReplication()
	sweep := time.NewTicker(time.Minute)
	defer sweep.Stop()
	// The keyspace's access clock, which LRU eviction compares.
	clock := time.NewTicker(10 * time.Millisecond)
	defer clock.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if srv.diag.cronPaused.Load() {
				continue // DEBUG PAUSE-CRON 1
			}
			srv.coarseNow.Store(now.UnixMilli())
			srv.serverCron(now, t, &period)
			srv.sampleStats(now)
			srv.trimTracking()
			srv.broadcastTracking()
			srv.activeExpire()
			srv.memoryTick()
			srv.pubsub.hist.prune(now)
			srv.replCron(now)
		case <-clock.C:
			srv.ks.Tick()
		case <-sweep.C:
			srv.dedup.Sweep()
		}
	}
}

// activeExpire samples keys with a time to live in every shard and deletes
// the expired ones, repeating on a shard while more than a quarter of its
// sample had expired, as Redis's active expiry cycle does.
func (srv *Server) activeExpire() {
	if srv.Paused() || srv.diag.noActiveExpire.Load() || srv.isReplica() {
		return // CLIENT PAUSE and DEBUG SET-ACTIVE-EXPIRE 0 hold it; a replica's master expires keys
	}
	start := time.Now()
	defer func() { srv.noteLatency("expire-cycle", time.Since(start)) }()
	for _, db := range srv.ks.DBs {
		for i := 0; i < keyspace.NumShards; i++ {
			for round := 0; round < 16; round++ {
				sh := db.Shard(i)
				sh.Lock()
				seen, deleted := db.ExpireSample(i, 20)
				sh.Unlock()
				if seen == 0 || deleted*4 <= seen {
					break
				}
			}
		}
	}
	// The DELs of the keys that expired reach the log now, not at the
	// next command's Commit.
	srv.Commit()
}

// NewSession registers a session for a new connection. It returns an error
// when maxclients is reached.
func (srv *Server) NewSession(c Conn, ws bool) (*Session, error) {
	srv.clientsMu.Lock()
	defer srv.clientsMu.Unlock()
	if srv.fullLocked() {
		srv.rejected.Add(1)
		return nil, ErrMaxClients
	}
	s := newSession(srv, c, ws)
	srv.clients[s.ID] = s
	srv.totalConns.Add(1)
	return s, nil
}

// CloseSession unregisters a session whose connection has closed.
func (srv *Server) CloseSession(s *Session) {
	s.release()
	srv.dropReplica(s)
	srv.clientsMu.Lock()
	delete(srv.clients, s.ID)
	srv.clientsMu.Unlock()
}

// sessions returns the connected sessions ordered by id.
func (srv *Server) sessions() []*Session {
	srv.clientsMu.Lock()
	out := make([]*Session, 0, len(srv.clients))
	for _, s := range srv.clients {
		out = append(out, s)
	}
	srv.clientsMu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// RequestShutdown asks the process to shut down (SHUTDOWN).
func (srv *Server) RequestShutdown() {
	srv.stop.Do(func() {
		log.Printf("shutdown requested by a client")
		close(srv.Shutdown)
	})
}

// lockAll locks every shard of the given databases in lock order.
func (srv *Server) lockAll(dbs ...*keyspace.DB) {
	for _, db := range dbs {
		for i := 0; i < keyspace.NumShards; i++ {
			db.Shard(i).Lock()
		}
	}
}

// unlockAll undoes lockAll.
func (srv *Server) unlockAll(dbs ...*keyspace.DB) {
	for _, db := range dbs {
		for i := 0; i < keyspace.NumShards; i++ {
			db.Shard(i).Unlock()
		}
	}
}
