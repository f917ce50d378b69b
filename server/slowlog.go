package server

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/recached/recached/resp"
)

// SLOWLOG keeps the last slowlog-max-len commands that ran for at least
// slowlog-log-slower-than microseconds, as Redis does. Only timed calls
// can be logged (stats.go): every call of a command that is not O(1), and
// every call of every command while the threshold is 0; an O(1) command
// is timed one call in timeSample otherwise, which is where a slow one
// could go unlogged.

// Redis trims what an entry keeps of a command.
const (
	slowlogMaxArgs  = 32
	slowlogMaxBytes = 128
)

// slowEntry is one logged command.
type slowEntry struct {
	id, at, usec int64
	args         [][]byte
	addr, name   string
}

// slowLog is the server's SLOWLOG.
type slowLog struct {
	threshold atomic.Int64 // microseconds; negative disables
	maxLen    atomic.Int64
	mu        sync.Mutex
	entries   []slowEntry // oldest first
	nextID    int64
}

// logsAll reports whether every command is logged (threshold 0), so
// every call must be timed.
func (l *slowLog) logsAll() bool { return l.threshold.Load() == 0 }

// note logs the command s ran in d when it is slow enough.
func (l *slowLog) note(s *Session, cmd *Command, d time.Duration) {
	l.noteArgs(s, cmd, s.Args, d)
}

// noteWait logs a blocked command once a serve has answered it, as Redis
// 7.0 logs it then and not when it blocks (nor when it times out or is
// unblocked); d is the time the serve took.
func (l *slowLog) noteWait(w *waiter, d time.Duration) {
	if w.cmd != nil {
		l.noteArgs(w.s, w.cmd, w.args, d)
	}
}

// noteArgs logs cmd, run by s with args in d, when it is slow enough.
func (l *slowLog) noteArgs(s *Session, cmd *Command, args [][]byte, d time.Duration) {
	th := l.threshold.Load()
	if th < 0 || int64(d/time.Microsecond) < th || cmd.Flags&FlagNoSlowlog != 0 {
		return
	}
	e := slowEntry{at: time.Now().Unix(), usec: int64(d / time.Microsecond), args: slowlogArgs(s.srv, args)}
	switch {
	case s.inScript:
		e.addr = "?:0" // Redis's Lua client
	case s.scriptOf != nil:
		// A script run away from its connection's goroutine, in a copy
		// of its session (script.go).
		e.name = str(&s.scriptOf.name)
		if s.scriptOf.conn != nil {
			e.addr = s.scriptOf.conn.RemoteAddr()
		}
	case s.conn != nil:
		e.addr, e.name = s.conn.RemoteAddr(), str(&s.name)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	e.id = l.nextID
	l.nextID++
	l.entries = append(l.entries, e)
	l.trim()
}

// trim drops the oldest entries past slowlog-max-len. The caller holds mu.
func (l *slowLog) trim() {
	if n := len(l.entries) - int(l.maxLen.Load()); n > 0 {
		l.entries = append(l.entries[:0], l.entries[n:]...)
	}
}

// slowlogArgs copies what an entry keeps of args: at most 32 of them, each
// at most 128 bytes, secrets redacted, as Redis keeps them.
func slowlogArgs(srv *Server, args [][]byte) [][]byte {
	n := min(len(args), slowlogMaxArgs)
	out := make([][]byte, 0, n)
	redact := redactedArgs(srv, args)
	for i := 0; i < n; i++ {
		a := args[i]
		switch {
		case i == slowlogMaxArgs-1 && len(args) > slowlogMaxArgs:
			a = []byte("... (" + strconv.Itoa(len(args)-slowlogMaxArgs+1) + " more arguments)")
		case redact[i]:
			a = []byte("(redacted)")
		case len(a) > slowlogMaxBytes:
			a = append(append([]byte(nil), a[:slowlogMaxBytes]...), "... ("+strconv.Itoa(len(a)-slowlogMaxBytes)+" more bytes)"...)
		default:
			a = append([]byte(nil), a...)
		}
		out = append(out, a)
	}
	return out
}

// redactedArgs marks the arguments Redis replaces with "(redacted)" in the
// slow log: ACL SETUSER's, the values of sensitive CONFIG SET parameters
// and MIGRATE's AUTH and AUTH2 credentials.
func redactedArgs(srv *Server, args [][]byte) []bool {
	red := make([]bool, len(args))
	name := strings.ToLower(string(args[0]))
	sub := ""
	if len(args) > 1 {
		sub = strings.ToLower(string(args[1]))
	}
	switch {
	case name == "acl" && sub == "setuser":
		for i := 2; i < len(args); i++ {
			red[i] = true
		}
	case name == "config" && sub == "set":
		for i := 2; i+1 < len(args); i += 2 {
			if p := paramTable.lookup(string(args[i])); p != nil && p.flags&paramSensitive != 0 {
				red[i+1] = true
			}
		}
	case name == "migrate":
		for i := 6; i < len(args); i++ {
			switch strings.ToLower(string(args[i])) {
			case "auth":
				if i+1 < len(args) {
					red[i+1] = true
				}
			case "auth2":
				if i+2 < len(args) {
					red[i+1], red[i+2] = true, true
				}
			}
		}
	}
	return red
}

func slowlogCommands() []*Command {
	return []*Command{
		{Name: "slowlog", Arity: -2, Group: "server", Since: "2.2.12", Summary: "A container for slow log commands.", Categories: "slow", Subs: []*Command{
			{Name: "get", Arity: -2, Flags: FlagAdmin | FlagLoading | FlagStale, Since: "2.2.12", Syntax: "[count]", Summary: "Returns the slow log's entries.", Complexity: "O(N) where N is the number of entries returned", Categories: "admin slow dangerous", Handler: cmdSlowlogGet},
			{Name: "len", Arity: 2, Flags: FlagAdmin | FlagLoading | FlagStale, Since: "2.2.12", Summary: "Returns the number of entries in the slow log.", Complexity: "O(1)", Categories: "admin slow dangerous", Handler: cmdSlowlogLen},
			{Name: "reset", Arity: 2, Flags: FlagAdmin | FlagLoading | FlagStale, Since: "2.2.12", Summary: "Clears all entries from the slow log.", Complexity: "O(N) where N is the number of entries in the slowlog", Categories: "admin slow dangerous", Handler: cmdSlowlogReset},
			{Name: "help", Arity: 2, Flags: FlagLoading | FlagStale, Since: "6.2.0", Summary: "Show helpful text about the different subcommands", Complexity: "O(1)", Categories: "slow", Handler: cmdSlowlogHelp},
		}},
	}
}

// cmdSlowlogGet is SLOWLOG GET [count]: the newest count entries (10 by
// default, -1 for all), newest first.
func cmdSlowlogGet(s *Session) {
	count := int64(10)
	if len(s.Args) > 3 {
		s.W.Error(errSyntax)
		return
	}
	if len(s.Args) == 3 {
		n, ok := resp.ParseInt(s.Args[2])
		if !ok || n < -1 {
			s.W.Error("ERR count should be greater than or equal to -1")
			return
		}
		count = n
	}
	l := &s.srv.slowlog
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(l.entries)
	if count >= 0 && int(count) < n {
		n = int(count)
	}
	s.W.Array(n)
	for i := 0; i < n; i++ {
		e := &l.entries[len(l.entries)-1-i]
		s.W.Array(6)
		s.W.Int(e.id)
		s.W.Int(e.at)
		s.W.Int(e.usec)
		s.W.Array(len(e.args))
		for _, a := range e.args {
			s.W.Bulk(a)
		}
		s.W.BulkString(e.addr)
		s.W.BulkString(e.name)
	}
}

func cmdSlowlogLen(s *Session) {
	l := &s.srv.slowlog
	l.mu.Lock()
	n := len(l.entries)
	l.mu.Unlock()
	s.W.Int(int64(n))
}

func cmdSlowlogReset(s *Session) {
	l := &s.srv.slowlog
	l.mu.Lock()
	l.entries = nil
	l.mu.Unlock()
	s.W.OK()
}

func cmdSlowlogHelp(s *Session) {
	help(s, "SLOWLOG",
		"GET [<count>]", "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
		"    Entries are made of:",
		"    id, timestamp, time in microseconds, arguments array, client IP and port,",
		"    client name",
		"LEN", "    Return the length of the slowlog.",
		"RESET", "    Reset the slowlog.")
}
