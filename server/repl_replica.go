package server

import (
	"log"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/recached/recached/resp"
)

// The replica side of Redis's replication protocol: REPLICAOF (and its
// old name SLAVEOF) makes the server a replica of a master, which it
// follows over a link (repl_replica_link.go) until REPLICAOF NO ONE. While
// it is a replica:
//
//   - the master's stream runs in a session of its own, the master
//     session, through the normal dispatch: its writes are effects like
//     any other, so the replica's own log, sync pushes, keyspace
//     notifications and WATCH see them;
//   - with replica-read-only (the default), writes from clients are
//     refused with -READONLY, DEDUP-wrapped ones before their mark moves;
//   - with replica-serve-stale-data no, commands without the stale flag
//     are refused with -MASTERDOWN while the link is not up;
//   - keys are not expired by the replica: a lookup reports a key past
//     its time to live as absent without deleting it, and the master's
//     DEL removes it, as Redis's replicas do.
//
// REPLICAOF NO ONE promotes the server: the master's replication id
// becomes replid2, valid up to the offset reached + 1, and a new id is
// drawn, so that replicas of the old master continue from the promoted one
// with PSYNC.

// replicaSide is the replica role's state.
type replicaSide struct {
	// mu serialises the changes of role (REPLICAOF).
	mu sync.Mutex
	// link is the running link to the master, nil while the server is a
	// primary.
	link atomic.Pointer[masterLink]
	// gate is what prepare checks for every command: 0 while the server
	// is a primary (one atomic load), else the gate bits.
	gate atomic.Uint32
	// readOnly and serveStale are replica-read-only and
	// replica-serve-stale-data, set by their CONFIG parameters.
	readOnly, serveStale atomic.Bool
}

// The gate bits.
const (
	gateReadOnly uint32 = 1 << iota // refuse writes of clients
	gateStale                       // refuse non-stale commands: the link is down
)

const (
	errReadOnlyReplica = "READONLY You can't write against a read only replica."
	errMasterDown      = "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."
)

// replicationCommands is REPLICAOF and SLAVEOF.
func replicationCommands() []*Command {
	flags := FlagAdmin | FlagNoScript | FlagStale
	return []*Command{
		{Name: "replicaof", Arity: 3, Flags: flags, Group: "server", Since: "5.0.0", Syntax: "host port", Summary: "Configures a server as replica of another, or promotes it to a master.", Complexity: "O(1)", Categories: "admin slow dangerous", Handler: cmdReplicaOf},
		{Name: "slaveof", Arity: 3, Flags: flags, Group: "server", Since: "1.0.0", Syntax: "host port", Summary: "Sets a Redis server as a replica of another, or promotes it to being a master.", Complexity: "O(1)", Categories: "admin slow dangerous", Handler: cmdReplicaOf},
	}
}

// cmdReplicaOf is REPLICAOF host port and REPLICAOF NO ONE, with Redis's
// replies.
func cmdReplicaOf(s *Session) {
	if s.srv.isReplicaMaster(s) {
		s.W.Error("ERR Command is not valid when client is a replica.")
		return
	}
	host, port := string(s.Args[1]), s.Args[2]
	if strings.EqualFold(host, "no") && resp.EqualFold(port, "one") {
		if s.srv.unsetMaster() {
			log.Printf("MASTER MODE enabled (user request from 'id=%d addr=%s')", s.ID, s.remoteAddr())
		}
		s.W.OK()
		return
	}
	p, ok := resp.ParseInt(port)
	if !ok || p < 0 || p > 65535 {
		s.W.Error("ERR Invalid master port")
		return
	}
	if !s.srv.setMaster(host, int(p), false) {
		log.Printf("REPLICAOF would result into synchronization with the master we are already connected with. No operation performed.")
		s.W.Simple("OK Already connected to specified master")
		return
	}
	log.Printf("REPLICAOF %s:%d enabled (user request from 'id=%d addr=%s')", host, p, s.ID, s.remoteAddr())
	s.W.OK()
}

// remoteAddr is the session's peer address, "" without a connection.
func (s *Session) remoteAddr() string {
	if s.conn == nil {
		return ""
	}
	return s.conn.RemoteAddr()
}

// isReplicaMaster reports whether s is the session the master's stream
// runs in (or a script session of it).
func (srv *Server) isReplicaMaster(s *Session) bool {
	return s.replMaster || s.scriptOf != nil && s.scriptOf.replMaster
}

// setMaster makes the server a replica of host:port, replacing the link
// to another master; it reports false when that is the master already
// followed. The server keeps its replication id and offset, which the
// link offers the master with PSYNC, as Redis's cached master.
//
// atStart is set for the master the configuration names: as a Redis
// started with replicaof and no replication state to resume, the link
// shows offset 1 (slave_repl_offset, slave_read_repl_offset) until its
// first sync, where REPLICAOF at run time shows the server's own offset
// (Redis's replicationCacheMasterUsingMyself).
func (srv *Server) setMaster(host string, port int, atStart bool) bool {
	rs := &srv.replica
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if l := rs.link.Load(); l != nil {
		if strings.EqualFold(l.host, host) && l.port == port {
			return false
		}
		l.close()
	}
	srv.unblockAll()
	l := newMasterLink(srv, host, port, atStart)
	rs.link.Store(l)
	srv.setReplicaofParam(host + " " + strconv.Itoa(port))
	srv.SetMasterLink(l)
	srv.ks.ReplicaExpiry(true)
	srv.updateGate()
	log.Printf("Connecting to MASTER %s:%d", host, port)
	go l.run()
	return true
}

// unsetMaster promotes a replica to a primary, as Redis's
// replicationUnsetMaster: the link stops, the master's replication id
// becomes replid2, valid up to the offset reached + 1, and a new id is
// drawn. It reports false when the server was a primary already.
func (srv *Server) unsetMaster() bool {
	rs := &srv.replica
	rs.mu.Lock()
	defer rs.mu.Unlock()
	l := rs.link.Load()
	if l == nil {
		return false
	}
	l.close()
	rs.link.Store(nil)
	srv.SetMasterLink(nil)
	srv.setReplicaofParam("")
	r := &srv.repl
	r.mu.Lock()
	r.replid2 = r.replid
	r.secondOffset = r.offset + 1
	r.replid = newReplID()
	// repl-backlog-ttl counts from the promotion, as Redis's
	// repl_no_slaves_since: the backlog stays for the old master's
	// replicas to continue from it.
	r.lonelySince = time.Now().Unix()
	log.Printf("Setting secondary replication ID to %s, valid up to offset: %d. New replication ID is %s", r.replid2, r.secondOffset, r.replid)
	r.mu.Unlock()
	srv.updateGate()
	srv.ks.ReplicaExpiry(false)
	return true
}

// setReplicaofParam records the master followed as the replicaof
// parameter shows it (CONFIG GET, CONFIG REWRITE): "host port", "" for
// none.
func (srv *Server) setReplicaofParam(v string) {
	srv.cfgMu.Lock()
	defer srv.cfgMu.Unlock()
	if v == "" {
		delete(srv.params, "replicaof")
		return
	}
	if srv.params == nil {
		srv.params = make(map[string]string)
	}
	srv.params["replicaof"] = v
}

// startReplication starts following the master the configuration names
// (replicaof in redis.conf, --replicaof). Run calls it.
func (srv *Server) startReplication() {
	srv.cfgMu.RLock()
	v := srv.params["replicaof"]
	srv.cfgMu.RUnlock()
	f := strings.Fields(v)
	if len(f) != 2 {
		if v != "" {
			log.Printf("recached: replicaof %q: expected \"host port\"", v)
		}
		return
	}
	p, err := strconv.Atoi(f[1])
	if err != nil || p < 0 || p > 65535 {
		log.Printf("recached: replicaof %q: bad port", v)
		return
	}
	srv.setMaster(f[0], p, true)
}

// stopReplication stops the link to the master, if any, and waits for its
// goroutine: the server is closing.
func (srv *Server) stopReplication() {
	if l := srv.replica.link.Load(); l != nil {
		l.close()
	}
}

// updateGate recomputes the bits prepare checks from the role, the link's
// state and the two parameters.
func (srv *Server) updateGate() {
	rs := &srv.replica
	var g uint32
	if l := rs.link.Load(); l != nil {
		if rs.readOnly.Load() {
			g |= gateReadOnly
		}
		if !rs.serveStale.Load() && l.state.Load() != linkConnected {
			g |= gateStale
		}
	}
	rs.gate.Store(g)
}

// isReplica reports whether the server follows a master.
func (srv *Server) isReplica() bool { return srv.replica.link.Load() != nil }

// replicaRefuses is prepare's replica check for a command of a client
// (gate is not 0): it replies with Redis's error and returns true when
// the command may not run. A DEDUP-wrapped write is judged by the command
// it wraps, so that its mark does not move.
func (s *Session) replicaRefuses(cmd *Command, g uint32) bool {
	if s.srv.isReplicaMaster(s) || s.conn == nil && s.scriptOf == nil {
		return false // the master's stream, the log's replay
	}
	if g&gateStale != 0 && cmd.Flags&FlagStale == 0 {
		s.reject(cmd, errMasterDown)
		return true
	}
	if g&gateReadOnly == 0 {
		return false
	}
	if c, _ := s.wrapped(cmd, s.Args); c.Flags&FlagWrite != 0 {
		s.reject(cmd, errReadOnlyReplica)
		return true
	}
	return false
}

// applyReplicaReadOnly and applyServeStale are the apply functions of
// replica-read-only and replica-serve-stale-data.
func applyReplicaReadOnly(srv *Server, v string) {
	srv.replica.readOnly.Store(v == "yes")
	srv.updateGate()
}

func applyServeStale(srv *Server, v string) {
	srv.replica.serveStale.Store(v == "yes")
	srv.updateGate()
}

// param returns a CONFIG parameter's current value.
func (srv *Server) param(name string) string {
	srv.cfgMu.RLock()
	defer srv.cfgMu.RUnlock()
	return srv.paramValue(paramTable.lookup(name))
}

// paramInt returns an integer CONFIG parameter's current value.
func (srv *Server) paramInt(name string) int64 {
	n, _ := strconv.ParseInt(srv.param(name), 10, 64)
	return n
}

// The link states, as ROLE names them (REPL_STATE_*).
const (
	linkConnect    int32 = iota // waiting to connect
	linkConnecting              // dialling
	linkHandshake               // PING, AUTH, REPLCONF, PSYNC
	linkSync                    // receiving the RDB payload
	linkConnected               // applying the stream
)

var linkStateNames = [...]string{"connect", "connecting", "handshake", "sync", "connected"}

// InfoLines is INFO replication's slave fields, as Redis 7.0 prints them.
func (l *masterLink) InfoLines() [][2]string {
	now := time.Now().Unix()
	st := l.state.Load()
	itoa := func(n int64) string { return strconv.FormatInt(n, 10) }
	up, lastIO := "down", int64(-1)
	if st == linkConnected {
		up, lastIO = "up", now-l.lastIO.Load()
	}
	sync := "0"
	if st == linkSync {
		sync = "1"
	}
	out := [][2]string{
		{"master_host", l.host},
		{"master_port", strconv.Itoa(l.port)},
		{"master_link_status", up},
		{"master_last_io_seconds_ago", itoa(lastIO)},
		{"master_sync_in_progress", sync},
		{"slave_read_repl_offset", itoa(l.readOff.Load())},
		{"slave_repl_offset", itoa(l.procOff.Load())},
	}
	if st == linkSync {
		size, read := l.syncSize.Load(), l.syncRead.Load()
		perc := 0.0
		if size != 0 {
			perc = float64(read) / float64(size) * 100
		}
		out = append(out,
			[2]string{"master_sync_total_bytes", itoa(size)},
			[2]string{"master_sync_read_bytes", itoa(read)},
			[2]string{"master_sync_left_bytes", itoa(size - read)},
			[2]string{"master_sync_perc", strconv.FormatFloat(perc, 'f', 2, 64)},
			[2]string{"master_sync_last_io_seconds_ago", itoa(now - l.lastIO.Load())},
		)
	}
	if st != linkConnected {
		down := int64(-1)
		if d := l.downSince.Load(); d != 0 {
			down = now - d
		}
		out = append(out, [2]string{"master_link_down_since_seconds", itoa(down)})
	}
	ro := "0"
	if l.srv.replica.readOnly.Load() {
		ro = "1"
	}
	ann := "0"
	if l.srv.param("replica-announced") == "yes" {
		ann = "1"
	}
	return append(out,
		[2]string{"slave_priority", l.srv.param("replica-priority")},
		[2]string{"slave_read_only", ro},
		[2]string{"replica_announced", ann},
	)
}

// Role is ROLE's slave fields: the offset is -1 until the link is up.
func (l *masterLink) Role() (string, int, string, int64) {
	st := l.state.Load()
	off := int64(-1)
	if st == linkConnected {
		off = l.procOff.Load()
	}
	return l.host, l.port, linkStateNames[st], off
}

// killMasterLink is CLIENT KILL of the master client: it closes the link's
// connection when its addresses match (empty matches any), and the link
// reconnects and continues with PSYNC, as after a Redis replica's CLIENT
// KILL TYPE master. It reports whether it closed one.
func (srv *Server) killMasterLink(addr, laddr string) bool {
	l := srv.replica.link.Load()
	if l == nil {
		return false
	}
	l.connMu.Lock()
	defer l.connMu.Unlock()
	c := l.conn
	if c == nil || addr != "" && c.RemoteAddr().String() != addr || laddr != "" && c.LocalAddr().String() != laddr {
		return false
	}
	c.Close()
	return true
}

// errForceUnblocked is the reply of the clients a server turning replica
// unblocks, in Redis's words.
const errForceUnblocked = "UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)"

// unblockAll answers every blocked client (BLPOP, WAIT...) with
// -UNBLOCKED, as Redis's disconnectAllBlockedClients when it becomes a
// replica: what they wait for would now come from the master. As there,
// the connection closes after that reply (CLIENT_CLOSE_AFTER_REPLY).
// Clients held by CLIENT PAUSE are not blocked this way and stay held.
func (srv *Server) unblockAll() {
	reg := &srv.blocking
	reg.mu.Lock()
	ws := make([]*waiter, 0, len(reg.sessions))
	for _, w := range reg.sessions {
		ws = append(ws, w)
	}
	reg.mu.Unlock()
	for _, w := range ws {
		var wr resp.Writer
		wr.Proto = w.proto
		wr.Error(errForceUnblocked)
		srv.finishWait(w, wr.B, true)
	}
}
