package server

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/recached/recached/resp"
)

// CLIENT PAUSE holds commands, as Redis does: with WRITE, those that may
// change the data or reach other clients (writes, PUBLISH, PFCOUNT,
// scripts that may write, an EXEC holding any of them); with ALL,
// every command. A held command is not run: the session waits as in a
// blocking command (it counts in blocked_clients) and the command runs
// when the pause ends, in order, before the requests after it. Expiry of
// keys waits too: the server's cron expires none, and a read of a key
// whose time to live has passed finds it absent but leaves it in place
// (keyspace.HoldExpiry), as Redis keeps the dataset constant.

// The pause modes, least restrictive first.
const (
	pauseNone int32 = iota
	pauseWrite
	pauseAll
)

// pauseState is the server's CLIENT PAUSE.
type pauseState struct {
	mode    atomic.Int32
	mu      sync.Mutex
	until   time.Time
	timer   *time.Timer
	waiters []*Session
}

// pauseClients starts or extends a pause: the more restrictive mode and the later
// end of the running pause and the new one win, as in Redis.
func (srv *Server) pauseClients(mode int32, d time.Duration) {
	p := &srv.pause
	p.mu.Lock()
	defer p.mu.Unlock()
	end := time.Now().Add(d)
	if mode > p.mode.Load() {
		p.mode.Store(mode)
	}
	srv.ks.HoldExpiry(true)
	if end.After(p.until) {
		p.until = end
		if p.timer != nil {
			p.timer.Stop()
		}
		p.timer = time.AfterFunc(d, func() { srv.unpauseAt(end) })
	}
}

// unpauseAt ends the pause that was to end at end, unless a later one
// replaced it.
func (srv *Server) unpauseAt(end time.Time) {
	p := &srv.pause
	p.mu.Lock()
	if !p.until.Equal(end) {
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	srv.unpauseClients()
}

// unpauseClients ends the pause and runs the held commands (CLIENT UNPAUSE).
func (srv *Server) unpauseClients() {
	p := &srv.pause
	p.mu.Lock()
	p.mode.Store(pauseNone)
	srv.ks.HoldExpiry(false)
	p.until = time.Time{}
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
	waiters := p.waiters
	p.waiters = nil
	p.mu.Unlock()
	for _, s := range waiters {
		if s.blocked.CompareAndSwap(blockWaiting, blockServed) {
			srv.blocking.waiting.Add(-1)
			if s.conn != nil {
				s.conn.Wake()
			}
		}
	}
}

// Paused reports whether active expiry (and eviction) must wait: any
// CLIENT PAUSE holds them.
func (srv *Server) Paused() bool { return srv.pause.mode.Load() != pauseNone }

// held reports whether the pause holds cmd, about to run on s.
func (s *Session) held(cmd *Command, mode int32) bool {
	if mode == pauseAll {
		// The operator can end what it started.
		return cmd.Name != "client|unpause" && cmd.Name != "client|pause"
	}
	if cmd.Name == "exec" && s.multi != nil {
		for _, q := range s.multi.cmds {
			if s.srv.mayReplicate(q.cmd, q.args) {
				return true
			}
		}
		return false
	}
	return s.srv.mayReplicate(cmd, s.Args)
}

// mayReplicate reports whether cmd with args may change data or reach
// other clients: what CLIENT PAUSE WRITE holds.
func (srv *Server) mayReplicate(cmd *Command, args [][]byte) bool {
	switch {
	case cmd.Flags&(FlagWrite|FlagMayReplicate) != 0:
		return true
	case cmd.Flags&FlagRunsScript != 0:
		return srv.scriptMayWrite(cmd, args)
	}
	return false
}

// scriptMayWrite reports whether a script command may write: not an _RO
// form, nor a script or function flagged no-writes.
func (srv *Server) scriptMayWrite(cmd *Command, args [][]byte) bool {
	if strings.HasSuffix(cmd.Name, "_ro") || len(args) < 2 {
		return false
	}
	flags, ok := srv.declaredScriptFlags(cmd, args)
	return !ok || flags&scriptShebang == 0 || flags&scriptNoWrites == 0
}

// hold makes s wait for the end of the pause with args, its request; the
// transport's next Blocked runs it then (blocking.go).
func (s *Session) hold(args [][]byte) {
	held := make([][]byte, len(args))
	for i, a := range args {
		held[i] = append([]byte(nil), a...)
	}
	p := &s.srv.pause
	p.mu.Lock()
	defer p.mu.Unlock()
	s.postponed = held
	s.blocked.Store(blockWaiting)
	s.srv.blocking.waiting.Add(1)
	if p.mode.Load() == pauseNone {
		// The pause ended while the request was being checked.
		s.blocked.Store(blockServed)
		s.srv.blocking.waiting.Add(-1)
		s.conn.Wake()
		return
	}
	p.waiters = append(p.waiters, s)
}

// dropHeld forgets a closing session's held request.
func (srv *Server) dropHeld(s *Session) {
	p := &srv.pause
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, w := range p.waiters {
		if w == s {
			p.waiters = append(p.waiters[:i], p.waiters[i+1:]...)
			if s.blocked.CompareAndSwap(blockWaiting, blockNone) {
				srv.blocking.waiting.Add(-1)
			}
			break
		}
	}
	s.postponed = nil
}

// cmdClientPause is CLIENT PAUSE timeout [WRITE|ALL].
func cmdClientPause(s *Session) {
	ms, ok := resp.ParseInt(s.Args[2])
	if !ok || ms < 0 {
		s.W.Error("ERR timeout is not an integer or out of range")
		return
	}
	mode := pauseAll
	if len(s.Args) == 4 {
		switch strings.ToLower(string(s.Args[3])) {
		case "write":
			mode = pauseWrite
		case "all":
		default:
			s.W.Error("ERR CLIENT PAUSE mode must be WRITE or ALL")
			return
		}
	} else if len(s.Args) > 4 {
		s.W.Error(errSyntax)
		return
	}
	s.srv.pauseClients(mode, time.Duration(ms)*time.Millisecond)
	s.W.OK()
}

func cmdClientUnpause(s *Session) {
	s.srv.unpauseClients()
	s.W.OK()
}
