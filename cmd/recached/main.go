// Command recached is a Redis-compatible sync server: RESP on TCP for
// backends, a WebSocket bridge for browsers, one sharded keyspace behind both.
//
// Usage:
//
//	recached [flags]
//
// Run "recached --help" for the flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/amaquet"
	"github.com/recached/recached/server/realtime"
	"github.com/recached/recached/server/tcp"
	"github.com/recached/recached/server/ws"
)

func main() {
	log.SetFlags(log.LstdFlags)
	os.Exit(run(os.Args[1:], os.Stderr))
}

// run parses args and serves; it returns the process exit code.
func run(args []string, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "check" {
		return runCheck(args[1:], os.Stdout, stderr)
	}
	if len(args) > 0 && args[0] == "realtime-token" {
		return runRealtimeToken(args[1:], time.Now(), os.Stdout, stderr)
	}
	if len(args) > 0 && args[0] == "import" {
		return runImport(args[1:], os.Stdout, stderr)
	}
	if len(args) > 0 && args[0] == "export" {
		return runExport(args[1:], os.Stdout, stderr)
	}
	if len(args) > 0 && args[0] == "token" {
		return runToken(args[1:], os.Getenv, os.Stdout, stderr)
	}
	if len(args) > 0 && args[0] == "amaquet-identity" {
		return runAmaquetIdentity(args[1:], os.Stdout, stderr)
	}
	cfg, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return 2
	}
	if err := serve(cfg); err != nil {
		log.Printf("recached: %v", err)
		return 1
	}
	return 0
}

// parseFlags reads the flags, with environment variables overriding the
// built-in defaults of the password and token secret.
func parseFlags(args []string, stderr io.Writer) (server.Config, error) {
	cfg := server.DefaultConfig()
	fs := flag.NewFlagSet("recached", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.Bind, "bind", cfg.Bind, "address to listen on")
	fs.IntVar(&cfg.Port, "port", cfg.Port, "RESP (TCP) port")
	fs.IntVar(&cfg.WSPort, "ws-port", cfg.WSPort, "WebSocket bridge port (0 disables)")
	fs.IntVar(&cfg.AmaquetPort, "amaquet-port", cfg.AmaquetPort, "Amaquet binary protocol port (0 disables)")
	fs.IntVar(&cfg.AmaquetMaxPayload, "amaquet-max-payload", cfg.AmaquetMaxPayload, "largest Amaquet request payload in bytes (at most 64 MiB)")
	fs.IntVar(&cfg.AmaquetMaxInflight, "amaquet-max-inflight", cfg.AmaquetMaxInflight, "active Amaquet commands per connection")
	fs.Int64Var(&cfg.AmaquetPayloadBudget, "amaquet-payload-budget", cfg.AmaquetPayloadBudget, "bytes of Amaquet payloads read and not yet answered, server-wide")
	fs.DurationVar(&cfg.AmaquetReadTimeout, "amaquet-read-timeout", cfg.AmaquetReadTimeout, "time a started Amaquet frame may take to arrive")
	fs.DurationVar(&cfg.AmaquetIdleTimeout, "amaquet-idle-timeout", cfg.AmaquetIdleTimeout, "idle time after which an Amaquet connection is closed (0: never)")
	fs.StringVar(&cfg.Dir, "dir", cfg.Dir, "directory for the snapshot and the append-only log")
	fs.StringVar(&cfg.DBFilename, "dbfilename", "", "Redis RDB file loaded when --dir holds no recached snapshot or log (default dump.rdb when present)")
	fs.Func("snapshot-format", "rcd (recached's snapshot) or rdb (saves also write --dbfilename as a Redis RDB file)", func(v string) error {
		if v != "rcd" && v != "rdb" {
			return fmt.Errorf("must be rcd or rdb")
		}
		cfg.SnapshotFormat = v
		return nil
	})
	fs.StringVar(&cfg.APIKeysFile, "api-keys", cfg.APIKeysFile, "JSON file of API keys for the realtime and Amaquet protocols (SIGHUP reloads it)")
	fs.IntVar(&cfg.RealtimePort, "realtime-port", cfg.RealtimePort, "Blackevin realtime protocol port (0 disables)")
	fs.IntVar(&cfg.RealtimeMaxConnsPerKey, "realtime-max-conns-per-key", cfg.RealtimeMaxConnsPerKey, "realtime connections one API key may hold")
	fs.DurationVar(&cfg.RealtimeHistoryTTL, "realtime-history-ttl", cfg.RealtimeHistoryTTL, "how long a channel's last 100 messages are kept for rewind after its last publish (0: no history)")
	fs.Func("realtime-history-max-memory", "memory the channel history may hold, as redis.conf writes it (default 256mb; 0: no bound); past it the channels published to least recently lose their history first", func(v string) error {
		n, err := server.ParseMemory(v)
		if err != nil {
			return err
		}
		cfg.RealtimeHistoryMaxMemory = int64(min(n, 1<<62))
		return nil
	})
	fs.StringVar(&cfg.RequirePass, "requirepass", os.Getenv("RECACHED_PASSWORD"), "password clients must AUTH with (env RECACHED_PASSWORD)")
	fs.StringVar(&cfg.TokenSecret, "token-secret", os.Getenv("RECACHED_TOKEN_SECRET"), "HMAC secret for scope tokens (env RECACHED_TOKEN_SECRET)")
	fs.IntVar(&cfg.MaxClients, "maxclients", cfg.MaxClients, "maximum number of connected clients")
	fs.IntVar(&cfg.Databases, "databases", cfg.Databases, "number of databases (1 to 64)")
	fs.StringVar(&cfg.Save, "save", cfg.Save, `snapshot rules "seconds changes ..." as Redis's save ("" disables)`)
	appendOnly := fs.String("appendonly", "yes", "append-only log: yes or no")
	fs.StringVar(&cfg.AppendFsync, "appendfsync", cfg.AppendFsync, "log fsync policy: always, everysec or no")
	fs.IntVar(&cfg.Loops, "loops", cfg.Loops, "event loops serving RESP, as io-threads (1 costs the least CPU per request; 2 serve multi-threaded client loads faster)")
	fs.IntVar(&cfg.Procs, "procs", cfg.Procs, "GOMAXPROCS: cores the server may use at once (0: all; when not given, one per event loop up to the cores)")
	fs.Func("maxmemory", "most memory the dataset may use, in Redis's units (100mb, 2gb; 0: no limit)", func(v string) error {
		n, err := server.CheckParam("maxmemory", v)
		cfg.MaxMemory, _ = strconv.ParseUint(n, 10, 64)
		return err
	})
	fs.Func("maxmemory-policy", "what to evict past maxmemory: noeviction, allkeys-lru, allkeys-lfu, allkeys-random, volatile-lru, volatile-lfu, volatile-random or volatile-ttl", func(v string) error {
		var err error
		cfg.MaxMemoryPolicy, err = server.CheckParam("maxmemory-policy", v)
		return err
	})
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: recached [/path/to/redis.conf] [--config FILE] [flags] [--directive value ...]\n       recached token --secret S --patterns 'p1,p2' [--ttl 1h]\n       recached realtime-token --api-keys FILE --key k1 --ttl 1h [--capability JSON] [--client-id ID]\n       recached check FILE [--fix]\n\nFlags:\n")
		fs.PrintDefaults()
	}
	args, err := loadConfigArgs(fs, &cfg, args, stderr)
	if err != nil {
		return cfg, err
	}
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	// Each event loop needs a processor of its own: with fewer, a loop
	// whose epoll_wait returns waits until the runtime takes a processor
	// back from another loop still waiting in its own (20 µs to 10 ms). So
	// io-threads, or --loops, above one raises GOMAXPROCS to match, up to
	// the cores, unless --procs is given; serve starts no more loops than
	// there are processors.
	if !flagGiven(fs, "procs") && cfg.Procs > 0 && cfg.Loops > cfg.Procs {
		cfg.Procs = min(cfg.Loops, runtime.NumCPU())
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "recached: unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return cfg, fmt.Errorf("unexpected argument")
	}
	switch *appendOnly {
	case "yes":
		cfg.AppendOnly = true
	case "no":
		cfg.AppendOnly = false
	default:
		fmt.Fprintf(stderr, "recached: --appendonly must be yes or no\n")
		return cfg, fmt.Errorf("bad appendonly")
	}
	switch cfg.AppendFsync {
	case "always", "everysec", "no":
	default:
		fmt.Fprintf(stderr, "recached: --appendfsync must be always, everysec or no\n")
		return cfg, fmt.Errorf("bad appendfsync")
	}
	if cfg.Databases < 1 || cfg.Databases > 64 {
		fmt.Fprintf(stderr, "recached: --databases must be between 1 and 64\n")
		return cfg, fmt.Errorf("bad databases")
	}
	if _, err := server.ParseSaveRules(cfg.Save); err != nil {
		fmt.Fprintf(stderr, "recached: --save: %v\n", err)
		return cfg, err
	}
	return cfg, nil
}

// loopsFor returns the event loops to serve RESP with when loops are
// configured (io-threads): no more than the processors, as each loop needs
// one (parseFlags). The configured value stays what CONFIG GET and CONFIG
// REWRITE show.
func loopsFor(loops int) int {
	if n := runtime.GOMAXPROCS(0); loops > n {
		log.Printf("recached: io-threads %d with %d processors: serving with %d event loops, one per processor", loops, n, n)
		return n
	}
	return max(loops, 1)
}

// flagGiven reports whether the flag name was set on the command line.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// reloadOnHangup reloads the API keys file at every SIGHUP until ctx ends;
// a file that fails to load leaves the keys as they were.
func reloadOnHangup(ctx context.Context, srv *server.Server) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			st := srv.APIKeys()
			if err := st.Reload(); err != nil {
				log.Printf("recached: SIGHUP: %v (the keys stay as they were)", err)
				continue
			}
			log.Printf("recached: SIGHUP: reloaded %d API keys from %s", len(st.Keys()), st.Path())
		}
	}
}

// serve runs the server until SIGINT, SIGTERM or SHUTDOWN.
func serve(cfg server.Config) error {
	if os.Getenv("GOGC") == "" {
		// The keyspace is long-lived; a lower target keeps the heap close
		// to the data.
		debugSetGC()
	}
	if path := os.Getenv("RECACHED_CPUPROFILE"); path != "" {
		stop, err := startProfile(path)
		if err != nil {
			return err
		}
		defer stop()
	}
	// With one processor the event loop holds it while it waits in
	// epoll_wait, a system call: Go's sysmon takes it back after 20 µs to
	// 10 ms (no other processor is idle) and starts a thread that finds
	// nothing to do, and while such retakes keep coming sysmon polls
	// every 20 µs. Two processors stop the retakes but not the cost: gnet
	// yields (runtime.Gosched) before each blocking wait, and with an idle
	// processor every yield wakes a thread. One costs less on 2 cores.
	if cfg.Procs > 0 && os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(cfg.Procs)
	}
	srv := server.New(cfg)
	srv.SetMemoryLimitHook(goMemoryLimit(srv.HistoryMemory))
	if err := srv.LoadAPIKeys(); err != nil {
		return err
	}
	if err := srv.OpenPersistence(); err != nil {
		return err
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	go reclaimWhenIdle(ctx)
	go func() {
		select {
		case <-srv.Shutdown:
			cancel()
		case <-ctx.Done():
		}
	}()
	if srv.APIKeys() != nil {
		go reloadOnHangup(ctx, srv)
	}
	go srv.Run(ctx)
	addr := net.JoinHostPort(cfg.Bind, strconv.Itoa(cfg.Port))
	log.Printf("recached %s starting (go %s, GOMAXPROCS %d)", server.Version, runtime.Version(), runtime.GOMAXPROCS(0))
	amqDone := make(chan error, 1)
	if cfg.AmaquetPort != 0 {
		opt, err := amaquetOptions(cfg)
		if err != nil {
			return err
		}
		go func() {
			err := amaquet.ListenAndServe(ctx, srv, opt)
			if optional("Amaquet", cfg.AmaquetPort, server.DefaultConfig().AmaquetPort, err) {
				amqDone <- err
				cancel() // an Amaquet listener that fails stops the server
				return
			}
			amqDone <- nil
		}()
	} else {
		amqDone <- nil
	}
	rtDone := make(chan error, 1)
	if cfg.RealtimePort != 0 {
		opts := realtime.DefaultOptions()
		opts.MaxConnsPerKey = cfg.RealtimeMaxConnsPerKey
		rtAddr := net.JoinHostPort(cfg.Bind, strconv.Itoa(cfg.RealtimePort))
		go func() {
			err := realtime.ListenAndServe(ctx, srv, rtAddr, opts)
			if optional("realtime", cfg.RealtimePort, server.DefaultConfig().RealtimePort, err) {
				rtDone <- err
				cancel() // a realtime listener that fails stops the server
				return
			}
			rtDone <- nil
		}()
	} else {
		rtDone <- nil
	}
	wsDone := make(chan error, 1)
	if cfg.WSPort != 0 {
		wsAddr := net.JoinHostPort(cfg.Bind, strconv.Itoa(cfg.WSPort))
		go func() {
			err := ws.ListenAndServe(ctx, srv, wsAddr)
			if optional("WebSocket", cfg.WSPort, server.DefaultConfig().WSPort, err) {
				wsDone <- err
				cancel() // a WebSocket listener that fails stops the server
				return
			}
			wsDone <- nil
		}()
	} else {
		wsDone <- nil
	}
	err := tcp.ListenAndServe(ctx, srv, addr, loopsFor(cfg.Loops))
	cancel()
	if werr := <-wsDone; werr != nil && err == nil {
		err = werr
	}
	if aerr := <-amqDone; aerr != nil && err == nil {
		err = aerr
	}
	if rerr := <-rtDone; rerr != nil && err == nil {
		err = rerr
	}
	perr := srv.ClosePersistence()
	if err != nil && !strings.Contains(err.Error(), "closed") {
		return err
	}
	if perr != nil {
		return perr
	}
	log.Printf("recached: stopped")
	return nil
}
