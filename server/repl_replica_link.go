package server

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/recached/recached/resp"
	"github.com/recached/recached/server/keyspace"
	"github.com/recached/recached/snapshot/rdb"
)

// masterLink is a replica's link to its master: one goroutine (run)
// connects, performs Redis's handshake (PING, AUTH, REPLCONF
// listening-port, REPLCONF capa eof capa psync2, PSYNC replid offset,
// falling back to SYNC), receives the RDB payload of a full
// resynchronisation (disk-based "$len" or diskless "$EOF:<mark>") and
// loads it, then applies the command stream in the master session. It
// acknowledges the offset processed every second (REPLCONF ACK) and when
// the master asks (REPLCONF GETACK). A broken link is dialled again after
// a pause that doubles from 50 ms up to one second, offering the offset
// reached with PSYNC, so that the master continues it with +CONTINUE.
type masterLink struct {
	srv  *Server
	host string
	port int
	// unit is the stream's bytes of a transaction being received: as a
	// Redis replica does, the offset moves at its EXEC (stream's
	// goroutine only).
	unit []byte

	stop      chan struct{} // closed by close
	done      chan struct{} // closed when run returns
	closeOnce sync.Once

	connMu sync.Mutex
	conn   net.Conn // the connection in use, nil between attempts

	// writeMu serialises writes to conn: the acknowledgements of the
	// ticker and those GETACK asks for.
	writeMu sync.Mutex

	// state is a link state (linkConnect…); lastIO and downSince are
	// unix seconds of the last byte from the master and of the link
	// going down (0: never up).
	state             atomic.Int32
	lastIO, downSince atomic.Int64
	// readOff and procOff are the stream offsets received and applied
	// (slave_read_repl_offset, slave_repl_offset).
	readOff, procOff atomic.Int64
	// syncSize and syncRead are the payload's size (-1 for a diskless
	// one) and the bytes received so far, during linkSync.
	syncSize, syncRead atomic.Int64
}

// linkChunk is the read size of the payload and of the stream.
const linkChunk = 64 << 10

// eofMarkLen is the length of a diskless payload's end mark.
const eofMarkLen = 40

func newMasterLink(srv *Server, host string, port int, atStart bool) *masterLink {
	l := &masterLink{srv: srv, host: host, port: port, stop: make(chan struct{}), done: make(chan struct{})}
	srv.repl.mu.Lock()
	off := srv.repl.offset
	srv.repl.mu.Unlock()
	if atStart && off == 0 {
		off = 1 // no state to resume: Redis's default until the first sync
	}
	l.readOff.Store(off)
	l.procOff.Store(off)
	return l
}

// close stops the link and waits for its goroutine to end.
func (l *masterLink) close() {
	l.closeOnce.Do(func() { close(l.stop) })
	l.connMu.Lock()
	if l.conn != nil {
		l.conn.Close()
	}
	l.connMu.Unlock()
	<-l.done
}

func (l *masterLink) stopped() bool {
	select {
	case <-l.stop:
		return true
	default:
		return false
	}
}

// setState changes the link's state and the gate that depends on it.
func (l *masterLink) setState(st int32) {
	prev := l.state.Swap(st)
	if prev == linkConnected && st != linkConnected {
		l.downSince.Store(time.Now().Unix())
	}
	l.srv.updateGate()
}

// run is the link's goroutine: attempts until close.
func (l *masterLink) run() {
	defer close(l.done)
	s := newSession(l.srv, nil, false)
	s.authed = true
	s.replMaster = true
	defer s.release()
	pause := 50 * time.Millisecond
	for !l.stopped() {
		up, err := l.attempt(s)
		l.setState(linkConnect)
		if l.stopped() {
			return
		}
		log.Printf("recached: replication link with MASTER %s:%d: %v", l.host, l.port, err)
		if up {
			pause = 50 * time.Millisecond
		}
		t := time.NewTimer(pause)
		select {
		case <-l.stop:
			t.Stop()
			return
		case <-t.C:
		}
		pause = min(2*pause, time.Second)
	}
}

// linkConn is one connection to the master with its read deadline.
type linkConn struct {
	net.Conn
	br      *bufio.Reader
	timeout time.Duration
	l       *masterLink
}

// line reads one reply line without its CRLF.
func (c *linkConn) line() (string, error) {
	c.SetReadDeadline(time.Now().Add(c.timeout))
	b, err := c.br.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return "", errors.New("a reply line from the master is longer than 64 KB")
		}
		return "", err
	}
	c.l.lastIO.Store(time.Now().Unix())
	return strings.TrimRight(string(b), "\r\n"), nil
}

// send writes a command.
func (c *linkConn) send(args ...string) error {
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	c.l.writeMu.Lock()
	defer c.l.writeMu.Unlock()
	c.SetWriteDeadline(time.Now().Add(c.timeout))
	_, err := c.Write(resp.AppendCommand(nil, b...))
	return err
}

// call sends a command and reads its one-line reply.
func (c *linkConn) call(args ...string) (string, error) {
	if err := c.send(args...); err != nil {
		return "", err
	}
	return c.line()
}

// attempt makes one connection: handshake, synchronisation, stream. It
// reports whether the link came up, and why it ended.
func (l *masterLink) attempt(s *Session) (bool, error) {
	l.setState(linkConnecting)
	addr := net.JoinHostPort(l.host, strconv.Itoa(l.port))
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return false, err
	}
	l.connMu.Lock()
	if l.stopped() {
		l.connMu.Unlock()
		conn.Close()
		return false, errors.New("stopped")
	}
	l.conn = conn
	l.connMu.Unlock()
	defer func() {
		l.connMu.Lock()
		l.conn = nil
		l.connMu.Unlock()
		conn.Close()
	}()
	timeout := time.Duration(max(l.srv.paramInt("repl-timeout"), 1)) * time.Second
	c := &linkConn{Conn: conn, br: bufio.NewReaderSize(conn, linkChunk), timeout: timeout, l: l}
	l.setState(linkHandshake)
	full, replid, off, err := l.handshake(c)
	if err != nil {
		return false, err
	}
	if full {
		l.setState(linkSync)
		if err := l.fullSync(c, s, replid, off); err != nil {
			return false, err
		}
		log.Printf("MASTER <-> REPLICA sync: Finished with success")
	}
	return true, l.stream(c, s)
}

// handshake runs PING, AUTH, REPLCONF and PSYNC (or SYNC). It reports
// whether a full resynchronisation follows, with the master's
// replication id and offset.
func (l *masterLink) handshake(c *linkConn) (full bool, replid string, off int64, err error) {
	srv := l.srv
	r, err := c.call("PING")
	if err != nil {
		return false, "", 0, err
	}
	// An error about authentication is fine: AUTH follows.
	if strings.HasPrefix(r, "-") && !strings.HasPrefix(r, "-NOAUTH") && !strings.HasPrefix(r, "-NOPERM") && !strings.HasPrefix(r, "-ERR operation not permitted") {
		return false, "", 0, fmt.Errorf("error reply to PING from master: '%s'", r)
	}
	if pass := srv.param("masterauth"); pass != "" {
		args := []string{"AUTH", pass}
		if user := srv.param("masteruser"); user != "" {
			args = []string{"AUTH", user, pass}
		}
		if r, err = c.call(args...); err != nil {
			return false, "", 0, err
		}
		if !strings.HasPrefix(r, "+") {
			return false, "", 0, fmt.Errorf("unable to AUTH to MASTER: %s", r)
		}
	}
	port := srv.paramInt("replica-announce-port")
	if port == 0 {
		port = int64(srv.Config().Port)
	}
	if r, err = c.call("REPLCONF", "listening-port", strconv.FormatInt(port, 10)); err != nil {
		return false, "", 0, err
	} else if strings.HasPrefix(r, "-") {
		log.Printf("(Non critical) Master does not understand REPLCONF listening-port: %s", r)
	}
	if ip := srv.param("replica-announce-ip"); ip != "" {
		if r, err = c.call("REPLCONF", "ip-address", ip); err != nil {
			return false, "", 0, err
		} else if strings.HasPrefix(r, "-") {
			log.Printf("(Non critical) Master does not understand REPLCONF ip-address: %s", r)
		}
	}
	if r, err = c.call("REPLCONF", "capa", "eof", "capa", "psync2"); err != nil {
		return false, "", 0, err
	} else if strings.HasPrefix(r, "-") {
		log.Printf("(Non critical) Master does not understand REPLCONF capa: %s", r)
	}
	srv.repl.mu.Lock()
	myID, myOff := srv.repl.replid, srv.repl.offset
	srv.repl.mu.Unlock()
	log.Printf("Trying a partial resynchronization (request %s:%d).", myID, myOff+1)
	if err = c.send("PSYNC", myID, strconv.FormatInt(myOff+1, 10)); err != nil {
		return false, "", 0, err
	}
	for r = ""; r == ""; { // newlines may come first
		if r, err = c.line(); err != nil {
			return false, "", 0, err
		}
	}
	switch {
	case strings.HasPrefix(r, "+FULLRESYNC"):
		f := strings.Fields(r)
		if len(f) != 3 || len(f[1]) != 40 {
			return false, "", 0, fmt.Errorf("master replied with wrong +FULLRESYNC syntax: %q", r)
		}
		off, perr := strconv.ParseInt(f[2], 10, 64)
		if perr != nil {
			return false, "", 0, fmt.Errorf("master replied with wrong +FULLRESYNC syntax: %q", r)
		}
		log.Printf("Full resync from master: %s:%d", f[1], off)
		return true, f[1], off, nil
	case strings.HasPrefix(r, "+CONTINUE"):
		log.Printf("Successful partial resynchronization with master.")
		f := strings.Fields(r)
		if len(f) == 2 && len(f[1]) == 40 && f[1] != myID {
			// The master's id changed (it was promoted): ours becomes
			// replid2, as Redis's replicas do.
			log.Printf("Master replication ID changed to %s", f[1])
			srv.repl.mu.Lock()
			srv.repl.replid2, srv.repl.replid = srv.repl.replid, f[1]
			srv.repl.secondOffset = srv.repl.offset + 1
			srv.repl.mu.Unlock()
		}
		return false, "", 0, nil
	case strings.HasPrefix(r, "-NOMASTERLINK"), strings.HasPrefix(r, "-LOADING"):
		return false, "", 0, fmt.Errorf("master is currently unable to PSYNC but should be in the future: %s", r)
	case strings.HasPrefix(r, "-"):
		// An old master: SYNC, whose stream has no id or offset.
		log.Printf("Master does not support PSYNC or is in error state (reply: %s)", r)
		if err = c.send("SYNC"); err != nil {
			return false, "", 0, err
		}
		return true, newReplID(), 0, nil
	}
	return false, "", 0, fmt.Errorf("unexpected reply to PSYNC from master: %q", r)
}

// fullSync receives the RDB payload into a temporary file, loads it into
// a keyspace of its own and swaps that in for the whole dataset (the
// databases are emptied first, as Redis does), then takes the master's id
// and offset.
func (l *masterLink) fullSync(c *linkConn, s *Session, replid string, off int64) error {
	var hdr string
	for {
		h, err := c.line()
		if err != nil {
			return fmt.Errorf("reading the bulk payload's header: %w", err)
		}
		if h != "" { // newlines: the master is still preparing the RDB
			hdr = h
			break
		}
	}
	if hdr[0] == '-' {
		return fmt.Errorf("MASTER aborted replication with an error: %s", hdr)
	}
	if hdr[0] != '$' {
		return fmt.Errorf("bad protocol from MASTER, the first byte is not '$' (we received '%s'), are you sure the host and port are right?", hdr)
	}
	var mark []byte
	size := int64(-1)
	if strings.HasPrefix(hdr, "$EOF:") && len(hdr) == 5+eofMarkLen {
		mark = []byte(hdr[5:])
	} else {
		n, err := strconv.ParseInt(hdr[1:], 10, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("bad payload length from MASTER: %q", hdr)
		}
		size = n
	}
	l.syncSize.Store(size)
	l.syncRead.Store(0)
	if size >= 0 {
		log.Printf("MASTER <-> REPLICA sync: receiving %d bytes from master to disk", size)
	} else {
		log.Printf("MASTER <-> REPLICA sync: receiving streamed RDB from master with EOF to disk")
	}
	dir := l.srv.Config().Dir
	if dir == "" {
		dir = os.TempDir()
	}
	path := filepath.Join(dir, fmt.Sprintf("temp-%d.%d.rdb", time.Now().UnixNano(), os.Getpid()))
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("opening the temp file needed for MASTER <-> REPLICA synchronization: %w", err)
	}
	defer os.Remove(path)
	err = l.receive(c, f, size, mark)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	log.Printf("MASTER <-> REPLICA sync: Flushing old data")
	return l.load(s, path, replid, off)
}

// receive copies the payload to f: size bytes, or up to the end mark.
func (l *masterLink) receive(c *linkConn, f *os.File, size int64, mark []byte) error {
	buf := make([]byte, linkChunk+eofMarkLen)
	keep := 0 // bytes at buf's start held back: they may be the mark
	var got int64
	for size < 0 || got < size {
		c.SetReadDeadline(time.Now().Add(c.timeout))
		want := len(buf) - keep
		if size >= 0 {
			want = int(min(int64(want), size-got))
		}
		n, err := c.br.Read(buf[keep : keep+want])
		if n > 0 {
			got += int64(n)
			l.syncRead.Store(got)
			l.lastIO.Store(time.Now().Unix())
		}
		if err != nil && (err != io.EOF || n == 0) {
			return fmt.Errorf("I/O error trying to sync with MASTER: %w", err)
		}
		if size >= 0 {
			if _, err := f.Write(buf[:n]); err != nil {
				return fmt.Errorf("writing the payload: %w", err)
			}
			continue
		}
		end := keep + n
		if end >= eofMarkLen && bytes.Equal(buf[end-eofMarkLen:end], mark) {
			_, err := f.Write(buf[:end-eofMarkLen])
			return err
		}
		flush := max(end-eofMarkLen, 0)
		if _, err := f.Write(buf[:flush]); err != nil {
			return fmt.Errorf("writing the payload: %w", err)
		}
		keep = copy(buf, buf[flush:end])
	}
	return nil
}

// load reads the RDB file into a keyspace of its own (a damaged payload
// leaves the dataset as it was) and swaps it in with every shard locked;
// the function libraries are replaced with the file's. The replication
// state becomes the master's id and offset.
func (l *masterLink) load(s *Session, path, replid string, off int64) error {
	srv := l.srv
	tmp := keyspace.New(len(srv.ks.DBs), nil)
	tmp.EncodeLike(srv.ks)
	// Keys past their time to live are kept: the master's DELs remove
	// them.
	st, err := rdb.Load(path, tmp, time.Now().UnixMilli(), true)
	if err != nil {
		return fmt.Errorf("failed trying to load the MASTER synchronization DB from disk: %w", err)
	}
	streamDB := 0
	for _, a := range st.Aux {
		if a[0] == "repl-stream-db" {
			if n, err := strconv.Atoi(a[1]); err == nil && n >= 0 && n < len(srv.ks.DBs) {
				streamDB = n
			}
		}
	}
	srv.lockAll(srv.ks.DBs...)
	srv.scripts.flushFunctions()
	var bad string
	for _, code := range st.Functions {
		if _, msg := srv.scripts.loadLibrary(code, true); msg != "" {
			bad = msg
		}
	}
	srv.swapIn(tmp, true, true)
	srv.dirty.Add(st.Loaded)
	srv.unlockAll(srv.ks.DBs...)
	if bad != "" {
		log.Printf("recached: MASTER <-> REPLICA sync: a function library does not load: %s", bad)
	}
	log.Printf("MASTER <-> REPLICA sync: Loading DB in memory: %d keys", st.Loaded)
	s.selectDB(streamDB)
	srv.resetStream(replid, off)
	l.readOff.Store(off)
	l.procOff.Store(off)
	if srv.persist.open {
		// The snapshot and log must hold the new dataset before the
		// stream's writes land in the log.
		if err := srv.persist.save(saveRDB); err != nil {
			log.Printf("recached: saving the dataset received from the MASTER: %v", err)
		}
	}
	return nil
}

// stream applies the master's command stream until the link breaks.
func (l *masterLink) stream(c *linkConn, s *Session) error {
	srv := l.srv
	// A transaction the last link broke inside is dropped, as Redis's
	// replicationCacheMaster discards it: the master resends it whole
	// from the offset applied, which its EXEC had not moved.
	l.unit = l.unit[:0]
	if s.multi != nil {
		s.multi = nil
		s.multiLen.Store(0)
	}
	l.setState(linkConnected)
	l.lastIO.Store(time.Now().Unix())
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		l.acks(c, quit)
	}()
	defer func() {
		close(quit)
		wg.Wait()
	}()
	// The first ACK at once: a master that sent a diskless payload waits
	// for it before the stream (repl_primary.go), as Redis's replicas
	// send it after loading.
	if err := l.ack(c); err != nil {
		return err
	}
	var p resp.Parser
	buf := make([]byte, 0, linkChunk)
	for {
		if need := p.Need(); need > cap(buf) {
			nb := make([]byte, len(buf), need)
			copy(nb, buf)
			buf = nb
		} else if len(buf) == cap(buf) {
			nb := make([]byte, len(buf), 2*cap(buf))
			copy(nb, buf)
			buf = nb
		}
		c.SetReadDeadline(time.Now().Add(c.timeout))
		n, err := c.br.Read(buf[len(buf):cap(buf)])
		if n > 0 {
			buf = buf[:len(buf)+n]
			l.readOff.Add(int64(n))
			l.lastIO.Store(time.Now().Unix())
		}
		if err != nil {
			return fmt.Errorf("reading from the MASTER: %w", err)
		}
		start := 0
		for start < len(buf) {
			m, err := p.Parse(buf[start:])
			if err != nil {
				return fmt.Errorf("protocol error from the MASTER: %w", err)
			}
			if m == 0 {
				break
			}
			l.apply(c, s, p.Args, buf[start:start+m])
			start += m
		}
		srv.Commit()
		buf = buf[:copy(buf, buf[start:])]
	}
}

// apply runs one command of the stream in the master session; raw is its
// bytes, which count in the offset. REPLCONF GETACK is answered with the
// offset before it, as Redis does.
func (l *masterLink) apply(c *linkConn, s *Session, args [][]byte, raw []byte) {
	if len(args) > 0 {
		if resp.EqualFold(args[0], "replconf") {
			if len(args) >= 2 && resp.EqualFold(args[1], "getack") {
				l.ack(c)
			}
		} else {
			s.Exec(args)
			if len(s.W.B) > 0 && s.W.B[0] == '-' {
				log.Printf("recached: a command from the MASTER failed: %.64q: %s", args[0], trimCRLF(s.W.B[1:]))
			}
			s.W.B = s.W.B[:0]
		}
	}
	l.unit = append(l.unit, raw...)
	if s.multi != nil {
		return // inside MULTI: the offset moves with its EXEC
	}
	l.procOff.Add(int64(len(l.unit)))
	l.srv.FeedStream(l.unit) // the backlog and sub-replicas (repl_primary.go)
	l.unit = l.unit[:0]
}

// acks sends REPLCONF ACK every second until quit is closed.
func (l *masterLink) acks(c *linkConn, quit chan struct{}) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-quit:
			return
		case <-t.C:
			if l.ack(c) != nil {
				return
			}
		}
	}
}

// ack sends REPLCONF ACK with the offset applied.
func (l *masterLink) ack(c *linkConn) error {
	return c.send("REPLCONF", "ACK", strconv.FormatInt(l.procOff.Load(), 10))
}
