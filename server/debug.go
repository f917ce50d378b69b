package server

import (
	"fmt"
	"log"
	"net"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/recached/recached/resp"
	"github.com/recached/recached/snapshot/rdb"
)

// DEBUG, behind enable-debug-command as in Redis 7: "no" refuses it,
// "local" allows it from loopback connections only, "yes" from any.

const errDebugDisabled = "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server."

// debugCommand is DEBUG's table row.
func debugCommand() *Command {
	return &Command{Name: "debug", Arity: -2, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, Group: "server", Since: "1.0.0", Syntax: "subcommand [argument [argument ...]]", Summary: "A container for debugging commands.", Complexity: "Depends on subcommand.", Categories: "admin slow dangerous", Handler: cmdDebug}
}

// debugAllowed reports whether s may run DEBUG.
func (s *Session) debugAllowed() bool { return s.enabledBy("enable-debug-command") }

// enabledBy reports whether one of Redis's enable-* parameters (no, yes
// or local) lets s do what it guards: DEBUG, setting protected configs.
func (s *Session) enabledBy(param string) bool {
	switch s.srv.paramValue(paramTable.lookup(param)) {
	case "yes":
		return true
	case "local":
		if s.conn == nil {
			return true
		}
		host, _, err := net.SplitHostPort(s.conn.RemoteAddr())
		ip := net.ParseIP(host)
		return err == nil && ip != nil && ip.IsLoopback()
	}
	return false
}

// cmdDebug is DEBUG subcommand [args].
func cmdDebug(s *Session) {
	if !s.debugAllowed() {
		s.W.Error(errDebugDisabled)
		return
	}
	sub := strings.ToLower(string(s.Args[1]))
	n := len(s.Args)
	switch {
	case sub == "help" && n == 2:
		debugHelp(s)
	case sub == "sleep" && n == 3:
		f, err := strconv.ParseFloat(string(s.Args[2]), 64)
		if err != nil || f < 0 {
			s.W.Error("ERR value is not a valid float")
			return
		}
		time.Sleep(time.Duration(f * float64(time.Second)))
		s.W.OK()
	case sub == "object" && n == 3:
		debugObject(s)
	case sub == "set-active-expire" && n == 3:
		v, ok := resp.ParseInt(s.Args[2])
		if !ok {
			s.W.Error(errNotInt)
			return
		}
		s.srv.diag.noActiveExpire.Store(v == 0)
		s.W.OK()
	case sub == "pause-cron" && n == 3:
		v, ok := resp.ParseInt(s.Args[2])
		if !ok {
			s.W.Error(errNotInt)
			return
		}
		s.srv.diag.cronPaused.Store(v != 0)
		s.W.OK()
	case sub == "quicklist-packed-threshold" && n == 3:
		// recached's lists have no packed nodes: the size is checked
		// and accepted, as Redis accepts it.
		if _, ok := parseMemory(string(s.Args[2])); !ok {
			s.W.Error("ERR argument must be a memory value bigger than 1 and smaller than 4gb")
			return
		}
		s.W.OK()
	case sub == "change-repl-id" && n == 2:
		log.Printf("Changing replication IDs after receiving DEBUG change-repl-id")
		s.W.OK()
	case sub == "jmap" && n == 2:
		debugJmap(s)
	case sub == "reload":
		debugReload(s)
	default:
		s.W.Error("ERR unknown subcommand or wrong number of arguments for '" + string(trunc(s.Args[1], 128)) + "'. Try DEBUG HELP.")
	}
}

// debugObject is DEBUG OBJECT key, in Redis's shape.
func debugObject(s *Session) {
	key := s.Args[2]
	sh := s.db.Shard(s.srv.ks.ShardOf(key))
	sh.Lock()
	e := s.db.Peek(key)
	var line string
	if e != nil {
		size := 0
		if p, err := rdb.Dump(e); err == nil && len(p) >= 11 {
			size = len(p) - 11 // less the type byte, version and checksum
		}
		idle := s.srv.ks.Idle(e) / 100
		line = fmt.Sprintf("Value at:%p refcount:1 encoding:%s serializedlength:%d lru:%d lru_seconds_idle:%d",
			e, encodingOf(e), size, (time.Now().Unix()-int64(idle))&(1<<24-1), idle)
	}
	sh.Unlock()
	if e == nil {
		s.W.Error("ERR no such key")
		return
	}
	s.W.Simple(line)
}

// debugJmap writes the heap profile and every goroutine's stack to the
// log, the Go counterpart of a JVM's jmap.
func debugJmap(s *Session) {
	var b strings.Builder
	if err := pprof.Lookup("heap").WriteTo(&b, 1); err != nil {
		s.W.Error("ERR heap profile: " + err.Error())
		return
	}
	if err := pprof.Lookup("goroutine").WriteTo(&b, 1); err != nil {
		s.W.Error("ERR goroutine dump: " + err.Error())
		return
	}
	log.Printf("DEBUG JMAP:\n%s", b.String())
	s.W.OK()
}

// debugHelp is DEBUG HELP.
func debugHelp(s *Session) {
	help(s, "DEBUG",
		"CHANGE-REPL-ID", "    Change the replication IDs of the instance.",
		"    Dangerous: should be used only for testing the replication subsystem.",
		"JMAP", "    Write a heap profile and a dump of every goroutine to the log.",
		"OBJECT <key>", "    Show low level info about the <key> and associated value.",
		"PAUSE-CRON <0|1>", "    Stop periodic cron job processing.",
		"QUICKLIST-PACKED-THRESHOLD <size>", "    Sets the threshold for elements to be inserted as plain vs packed nodes",
		"    Default value is 1GB, allows values up to 4GB. Setting to 0 restores to default.",
		"RELOAD [option ...]", "    Save the RDB on disk and reload it back to memory. Valid <option> values:",
		"    * MERGE: conflicting keys will be loaded from RDB.",
		"    * NOFLUSH: the existing database will not be removed before load, but",
		"      conflicting keys will generate an exception and kill the server.",
		"    * NOSAVE: the database will be loaded from an existing RDB file.",
		"    Examples:",
		"    * DEBUG RELOAD: verify that the server is able to persist, flush and reload",
		"      the database.",
		"    * DEBUG RELOAD NOSAVE: replace the current database with the contents of an",
		"      existing RDB file.",
		"    * DEBUG RELOAD NOSAVE NOFLUSH MERGE: add the contents of an existing RDB",
		"      file to the database.",
		"SET-ACTIVE-EXPIRE <0|1>", "    Setting it to 0 disables expiring keys in background when they are not",
		"    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the",
		"    default.",
		"SLEEP <seconds>", "    Stop the server for <seconds>. Decimals allowed.")
}
