package server

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/recached/recached/resp"
)

// Replication state shared by both roles, as Redis keeps it (PSYNC2): the
// replication id and offset of the stream this server holds, the previous
// id (replid2) valid up to second_repl_offset after a promotion or an id
// change, the backlog of the last repl-backlog-size bytes of the stream,
// and the replicas attached to it. The primary side (repl_primary*.go)
// feeds the stream; the replica side (repl_replica*.go) installs a
// MasterLink while the server replicates from a master, which turns the
// role to slave in ROLE and INFO replication.

// noReplID is the id Redis shows as master_replid2 when there is none.
const noReplID = "0000000000000000000000000000000000000000"

// replState is the replication state. Its fields are under mu; the
// counters are atomic so INFO stats reads them without it.
type replState struct {
	mu sync.Mutex
	// replid is this server's replication id (40 hex chars) and replid2
	// the previous one, valid for PSYNC up to secondOffset (-1: none).
	replid, replid2 string
	secondOffset    int64
	// offset is master_repl_offset: the bytes of stream produced (a
	// primary) or received from the master (a replica) so far.
	offset int64
	// backlog holds the end of the stream; nil until the first replica
	// attaches, as in Redis.
	backlog *backlog
	// replicas are the attached replica links, in attach order.
	replicas []*replicaLink
	// master is the replica side's link, nil while the server is a
	// primary.
	master MasterLink
	// on is set while the backlog exists: publish then feeds every
	// effect to the stream (feedEffect); read without mu.
	on atomic.Bool
	// seldb is the database the stream's last command ran in, -1 when
	// the next one must name it.
	seldb   int
	scratch []byte
	// unit counts the DEDUP commands inside the stream's open
	// transaction (repl_dedup.go).
	unit int
	// waits are the clients blocked in WAIT.
	waits []replWait
	// cronSec is the second replCron last ran, cronLoops how many times
	// it ran, lonelySince when (unix seconds) the last replica left.
	cronSec     atomic.Int64
	cronLoops   int64
	lonelySince int64

	// minWrite and minLag are min-replicas-to-write and
	// min-replicas-max-lag; good is how many replicas were good when last
	// counted (repl_good.go).
	minWrite, minLag, good atomic.Int64

	// syncFull, syncPartialOK and syncPartialErr count full
	// resynchronisations and accepted and refused partial ones (INFO
	// stats sync_full, sync_partial_ok, sync_partial_err).
	syncFull, syncPartialOK, syncPartialErr atomic.Int64
}

// MasterLink is what the replica side shows of its link to the master:
// INFO replication's slave fields and ROLE's slave reply. The replica
// side installs it with SetMasterLink and removes it with nil.
type MasterLink interface {
	// InfoLines returns INFO replication's lines from master_host to
	// replica_announced, in Redis's order.
	InfoLines() [][2]string
	// Role returns ROLE's slave fields: the master's host and port, the
	// link state (connect, connecting, sync, connected, handshake) and the
	// replication offset processed (-1 before the first sync).
	Role() (host string, port int, state string, offset int64)
}

// replicaLink is one attached replica as the primary side sees it
// (repl_primary.go). Its fields are under replState.mu.
type replicaLink struct {
	s     *Session
	conn  Conn
	hello replHello
	// stream says whether the stream is collected in pending (during and
	// after the image) or pushed as produced.
	stream  streamState
	pending []byte
	// eofMode: the image went as $EOF:<mark>, so the stream waits for the
	// first ACK; presync: waiting for a disk image, newlines are sent.
	eofMode, presync bool
	// dropped is set when the link is gone.
	dropped bool
	// ip and port are the replica's address as INFO and ROLE show it
	// (REPLCONF ip-address or the peer's address, REPLCONF
	// listening-port).
	ip   string
	port int
	// state is wait_bgsave, send_bulk or online.
	state string
	// ackOffset is the offset the replica last acknowledged and ackTime
	// when (unix seconds).
	ackOffset int64
	ackTime   int64
}

// backlog is a ring of the stream's last bytes: the byte at stream offset
// o (1-based, as Redis counts) is buf[(o-1) % len(buf)] while o is within
// the last histlen bytes.
type backlog struct {
	buf []byte
	// first is the stream offset of the oldest byte held, histlen how
	// many are held.
	first, histlen int64
}

// newReplID returns a random replication id: 40 hex characters.
func newReplID() string {
	var b [20]byte
	if _, err := rand.Read(b[:]); err != nil {
		// crypto/rand does not fail on the systems Go supports; a time
		// based id still differs from every other server's.
		return fmt.Sprintf("%040x", time.Now().UnixNano())
	}
	return hex.EncodeToString(b[:])
}

// init sets a fresh replication id, as a starting Redis does.
func (r *replState) init() {
	r.replid = newReplID()
	r.replid2 = noReplID
	r.secondOffset = -1
	r.seldb = -1
}

// SetMasterLink installs the replica side's link (nil: the server is a
// primary again). It does not touch the ids or the offset: the replica
// side changes them as the handshake and a promotion require.
func (srv *Server) SetMasterLink(l MasterLink) {
	srv.repl.mu.Lock()
	srv.repl.master = l
	srv.repl.mu.Unlock()
}

// replicationInfo is INFO's replication section, field for field as Redis
// 7.0 prints it.
func (srv *Server) replicationInfo() [][2]string {
	r := &srv.repl
	backlogSize := srv.backlogSize()
	r.mu.Lock()
	defer r.mu.Unlock()
	var out [][2]string
	if r.master != nil {
		out = append(out, [2]string{"role", "slave"})
		out = append(out, r.master.InfoLines()...)
	} else {
		out = append(out, [2]string{"role", "master"})
	}
	out = append(out, [2]string{"connected_slaves", strconv.Itoa(len(r.replicas))})
	if r.minReplicasOn() {
		out = append(out, [2]string{"min_slaves_good_slaves", strconv.FormatInt(r.good.Load(), 10)})
	}
	now := time.Now().Unix()
	for i, l := range r.replicas {
		v := "ip=" + l.ip + ",port=" + strconv.Itoa(l.port) + ",state=" + l.state +
			",offset=" + strconv.FormatInt(l.ackOffset, 10) + ",lag=" + strconv.FormatInt(now-l.ackTime, 10)
		out = append(out, [2]string{"slave" + strconv.Itoa(i), v})
	}
	active, first, hist := "0", int64(0), int64(0)
	if r.backlog != nil {
		active, first, hist = "1", r.backlog.first, r.backlog.histlen
	}
	return append(out,
		[2]string{"master_failover_state", "no-failover"},
		[2]string{"master_replid", r.replid},
		[2]string{"master_replid2", r.replid2},
		[2]string{"master_repl_offset", strconv.FormatInt(r.offset, 10)},
		[2]string{"second_repl_offset", strconv.FormatInt(r.secondOffset, 10)},
		[2]string{"repl_backlog_active", active},
		[2]string{"repl_backlog_size", strconv.FormatInt(backlogSize, 10)},
		[2]string{"repl_backlog_first_byte_offset", strconv.FormatInt(first, 10)},
		[2]string{"repl_backlog_histlen", strconv.FormatInt(hist, 10)},
	)
}

// backlogSize is repl-backlog-size in bytes.
func (srv *Server) backlogSize() int64 {
	srv.cfgMu.RLock()
	v := srv.paramValue(paramTable.lookup("repl-backlog-size"))
	srv.cfgMu.RUnlock()
	n, _ := parseMemory(v)
	return int64(n)
}

// writeRole writes ROLE's reply: for a primary its offset and the online
// replicas (ip, port and acknowledged offset as bulk strings), for a
// replica its master and link state.
func (srv *Server) writeRole(w *resp.Writer) {
	r := &srv.repl
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.master != nil {
		host, port, state, off := r.master.Role()
		w.Array(5)
		w.BulkString("slave")
		w.BulkString(host)
		w.Int(int64(port))
		w.BulkString(state)
		w.Int(off)
		return
	}
	w.Array(3)
	w.BulkString("master")
	w.Int(r.offset)
	n := 0
	for _, l := range r.replicas {
		if l.state == "online" {
			n++
		}
	}
	w.Array(n)
	for _, l := range r.replicas {
		if l.state != "online" {
			continue
		}
		w.Array(3)
		w.BulkString(l.ip)
		w.BulkString(strconv.Itoa(l.port))
		w.BulkString(strconv.FormatInt(l.ackOffset, 10))
	}
}
