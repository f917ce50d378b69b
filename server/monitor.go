package server

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/recached/recached/resp"
)

// MONITOR, as Redis 7.0 has it: after +OK the client receives one simple
// string for every command any session runs, on any transport:
//
//	+1700000000.123456 [0 127.0.0.1:50000] "set" "k" "v"
//
// A command called by a script shows "lua" for the address. Admin
// commands are not shown; AUTH's, HELLO AUTH's and MIGRATE AUTH's
// passwords show as "(redacted)". A command is shown after it ran (EXEC
// after the commands it ran), except a script's EVAL or FCALL, shown
// before the commands the script calls. When no client monitors, the feed
// costs callLocked one atomic load (diagState.hooks, with the latency
// monitor's bit).

// monitorSet is the server's monitoring sessions.
type monitorSet struct {
	// n counts the sessions in set, read without the lock by every
	// command.
	n   atomic.Int32
	mu  sync.Mutex
	set map[*Session]struct{}
}

// cmdMonitor is MONITOR: the session receives every command from now on.
func cmdMonitor(s *Session) {
	if s.inScript || s.multi != nil || s.conn == nil {
		s.W.Error("ERR MONITOR isn't allowed for DENY BLOCKING client")
		return
	}
	m := &s.srv.monitors
	m.mu.Lock()
	if m.set == nil {
		m.set = make(map[*Session]struct{})
	}
	if _, ok := m.set[s]; !ok {
		m.set[s] = struct{}{}
		m.n.Add(1)
		s.srv.diag.setHook(hookMonitor, true)
	}
	m.mu.Unlock()
	s.W.OK()
}

// unmonitor takes s out of monitor mode (RESET, close).
func (srv *Server) unmonitor(s *Session) {
	m := &srv.monitors
	if m.n.Load() == 0 {
		return
	}
	m.mu.Lock()
	if _, ok := m.set[s]; ok {
		delete(m.set, s)
		if m.n.Add(-1) == 0 {
			srv.diag.setHook(hookMonitor, false)
		}
	}
	m.mu.Unlock()
}

// monitoring reports whether s is in monitor mode (CLIENT LIST's O flag).
func (srv *Server) monitoring(s *Session) bool {
	m := &srv.monitors
	if m.n.Load() == 0 {
		return false
	}
	m.mu.Lock()
	_, ok := m.set[s]
	m.mu.Unlock()
	return ok
}

// feedMonitors sends the command cmd that ran with args to every monitor.
func (s *Session) feedMonitors(cmd *Command, args [][]byte) {
	if cmd.Flags&FlagAdmin != 0 {
		return
	}
	addr := "lua"
	if !s.inScript {
		addr = s.monitorAddr()
	}
	line := monitorLine(nil, time.Now(), s.DBIndex, addr, args, monitorRedacted(cmd, args))
	m := &s.srv.monitors
	m.mu.Lock()
	defer m.mu.Unlock()
	for dst := range m.set {
		if dst == s {
			s.W.Raw(line) // after its own reply, as it would arrive
			s.markPush(len(s.W.B) - len(line))
			continue
		}
		dst.conn.Push(line)
		if pc, ok := dst.conn.(pendingConn); ok && dst.pastHardLimit(pc.Pending()) {
			dst.dropSlowClient(classPubSub, pc.Pending())
		}
	}
}

// monitorAddr is the client address a monitor line shows.
func (s *Session) monitorAddr() string {
	if s.scriptOf != nil {
		s = s.scriptOf // the connection a script runs for
	}
	if s.conn == nil {
		return "unknown"
	}
	a := s.conn.RemoteAddr()
	if a == "" {
		return "unknown"
	}
	return a
}

// monitorLine appends to b the simple-string line MONITOR sends for args
// run at t in database db by the client at addr; redact, when not nil,
// marks the arguments shown as "(redacted)".
func monitorLine(b []byte, t time.Time, db int, addr string, args [][]byte, redact []bool) []byte {
	b = append(b, '+')
	b = strconv.AppendInt(b, t.Unix(), 10)
	b = append(b, '.')
	us := t.Nanosecond() / 1000
	for d := 100000; d > 1 && us < d; d /= 10 {
		b = append(b, '0')
	}
	b = strconv.AppendInt(b, int64(us), 10)
	b = append(b, " ["...)
	b = strconv.AppendInt(b, int64(db), 10)
	b = append(b, ' ')
	b = append(b, addr...)
	b = append(b, ']')
	for i, a := range args {
		b = append(b, ' ')
		if redact != nil && redact[i] {
			b = append(b, `"(redacted)"`...)
			continue
		}
		b = appendRepr(b, a)
	}
	return append(b, '\r', '\n')
}

// appendRepr appends a quoted, escaped a as Redis's sdscatrepr writes it.
func appendRepr(b, a []byte) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for _, c := range a {
		switch c {
		case '\\', '"':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		case '\a':
			b = append(b, '\\', 'a')
		case '\b':
			b = append(b, '\\', 'b')
		default:
			if c >= 0x20 && c < 0x7f {
				b = append(b, c)
			} else {
				b = append(b, '\\', 'x', hex[c>>4], hex[c&15])
			}
		}
	}
	return append(b, '"')
}

// monitorRedacted marks the arguments of args that carry passwords, as
// Redis's AUTH, HELLO and MIGRATE redact them; nil when none does.
func monitorRedacted(cmd *Command, args [][]byte) []bool {
	var r []bool
	mark := func(i int) {
		if i < len(args) {
			if r == nil {
				r = make([]bool, len(args))
			}
			r[i] = true
		}
	}
	switch cmd.Name {
	case "auth":
		for i := 1; i < len(args); i++ {
			mark(i)
		}
	case "hello":
		for i := 2; i < len(args); i++ {
			more := len(args) - i - 1
			switch {
			case resp.EqualFold(args[i], "auth") && more >= 2:
				mark(i + 1)
				mark(i + 2)
				i += 2
			case resp.EqualFold(args[i], "setname") && more >= 1:
				i++
			}
		}
	case "migrate":
		for i := 6; i < len(args); i++ {
			more := len(args) - i - 1
			switch {
			case resp.EqualFold(args[i], "auth") && more >= 1:
				mark(i + 1)
				i++
			case resp.EqualFold(args[i], "auth2") && more >= 2:
				mark(i + 1)
				mark(i + 2)
				i += 2
			case resp.EqualFold(args[i], "keys"):
				i = len(args)
			}
		}
	}
	return r
}
