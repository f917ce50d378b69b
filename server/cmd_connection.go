package server

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/recached/recached/resp"
	"github.com/recached/recached/server/keyspace"
)

// connectionCommands are the commands about the connection itself.
func connectionCommands() []*Command {
	conn := FlagConnection | FlagStateful
	session := conn | FlagClientOwned
	return []*Command{
		{Name: "ping", Arity: -1, Flags: FlagFast | FlagStale | FlagSubContext, Group: "connection", Since: "1.0.0", Syntax: "[message]", Summary: "Returns the server's liveliness response.", Categories: "fast connection", Handler: cmdPing},
		{Name: "echo", Arity: 2, Flags: FlagFast | FlagStale, Group: "connection", Since: "1.0.0", Syntax: "message", Summary: "Returns the given string.", Categories: "fast connection", Handler: cmdEcho},
		{Name: "quit", Arity: -1, Flags: FlagNoAuth | FlagStale | FlagNoMulti | FlagSubContext | FlagFast | session, Group: "connection", Since: "1.0.0", Summary: "Closes the connection.", Categories: "fast connection", Handler: cmdQuit},
		{Name: "reset", Arity: 1, Flags: FlagNoAuth | FlagStale | FlagNoMulti | FlagSubContext | FlagFast | session, Group: "connection", Since: "6.2.0", Summary: "Resets the connection.", Categories: "fast connection", Handler: cmdReset},
		{Name: "hello", Arity: -1, Flags: FlagNoSlowlog | FlagNoAuth | FlagStale | FlagFast | FlagNoScript | session, Group: "connection", Since: "6.0.0", Syntax: "[protover [AUTH username password] [SETNAME clientname]]", Summary: "Handshakes with the server.", Categories: "fast connection", Handler: cmdHello},
		{Name: "auth", Arity: -2, Flags: FlagNoSlowlog | FlagNoAuth | FlagStale | FlagFast | FlagNoScript | session, Group: "connection", Since: "1.0.0", Syntax: "[username] password", Summary: "Authenticates the connection.", Categories: "fast connection", Handler: cmdAuth},
		{Name: "select", Arity: 2, Flags: FlagFast | FlagLoading | FlagStale | FlagNoWS | session, DBArgs: dbsAt(1, 1), Group: "connection", Since: "1.0.0", Syntax: "index", Summary: "Changes the selected database.", Categories: "fast connection", Handler: cmdSelect},
		{Name: "swapdb", Arity: 3, Flags: FlagWrite | FlagFast | FlagAllDBs | FlagDangerous, DBArgs: dbsAt(1, 2), Relocates: RelocSwap, Group: "server", Since: "4.0.0", Syntax: "index1 index2", Summary: "Swaps two Redis databases.", Categories: "keyspace write fast dangerous", Handler: cmdSwapDB},
		{Name: "multi", Arity: 1, Flags: FlagNoScript | FlagLoading | FlagStale | FlagFast | FlagNoMulti | conn, Group: "transactions", Since: "1.2.0", Summary: "Starts a transaction.", Categories: "fast transaction", Handler: cmdMulti},
		{Name: "exec", Arity: 1, Flags: FlagNoSlowlog | FlagNoScript | FlagLoading | FlagStale | FlagNoMulti | conn, Group: "transactions", Since: "1.2.0", Summary: "Executes all commands in a transaction.", Categories: "slow transaction", Handler: cmdExec},
		{Name: "discard", Arity: 1, Flags: FlagNoScript | FlagLoading | FlagStale | FlagFast | FlagNoMulti | conn, Group: "transactions", Since: "2.0.0", Summary: "Discards a transaction.", Categories: "fast transaction", Handler: cmdDiscard},
		{Name: "watch", Arity: -2, Flags: FlagNoScript | FlagLoading | FlagStale | FlagFast | FlagNoMulti | conn, FirstKey: 1, LastKey: -1, Step: 1, Group: "transactions", KeySpecs: "RO", Since: "2.2.0", Syntax: "key [key ...]", Summary: "Monitors changes to keys to determine the execution of a transaction.", Categories: "fast transaction", Handler: cmdWatch},
		{Name: "unwatch", Arity: 1, Flags: FlagNoScript | FlagLoading | FlagStale | FlagFast | conn, Group: "transactions", Since: "2.2.0", Summary: "Forgets about watched keys of a transaction.", Categories: "fast transaction", Handler: cmdUnwatch},
		{Name: "client", Arity: -2, Group: "connection", Since: "2.4.0", Summary: "A container for client connection commands.", Categories: "slow", Subs: []*Command{
			{Name: "id", Arity: 2, Flags: FlagNoScript | FlagLoading | FlagStale, Since: "5.0.0", Summary: "Returns the unique client ID of the connection.", Categories: "slow connection", Handler: cmdClientID},
			{Name: "setname", Arity: 3, Flags: FlagNoScript | FlagLoading | FlagStale, Since: "2.6.9", Syntax: "connection-name", Summary: "Sets the connection name.", Categories: "slow connection", Handler: cmdClientSetName},
			{Name: "getname", Arity: 2, Flags: FlagNoScript | FlagLoading | FlagStale, Since: "2.6.9", Summary: "Returns the name of the connection.", Categories: "slow connection", Handler: cmdClientGetName},
			{Name: "list", Arity: -2, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, Since: "2.4.0", Syntax: "[TYPE NORMAL | MASTER | REPLICA | PUBSUB] [ID client-id ...]", Summary: "Lists open connections.", Categories: "admin slow dangerous connection", Handler: cmdClientList},
			{Name: "info", Arity: 2, Flags: FlagNoScript | FlagLoading | FlagStale, Since: "6.2.0", Summary: "Returns information about the connection.", Categories: "slow connection", Handler: cmdClientInfo},
			{Name: "kill", Arity: -3, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, Since: "2.4.0", Syntax: "ip:port | ([ID client-id] [TYPE NORMAL | MASTER | SLAVE | REPLICA | PUBSUB] [USER username] [ADDR ip:port] [LADDR ip:port] [SKIPME YES | NO])", Summary: "Terminates open connections.", Categories: "admin slow dangerous connection", Handler: cmdClientKill},
			{Name: "setinfo", Arity: 4, Flags: FlagNoScript | FlagLoading | FlagStale, Since: "7.2.0", Syntax: "LIB-NAME libname | LIB-VER libver", Summary: "Sets information specific to the client or connection.", Categories: "slow connection", Handler: cmdClientSetInfo},
			{Name: "no-evict", Arity: 3, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, Since: "7.0.0", Syntax: "ON | OFF", Summary: "Sets the client eviction mode of the connection.", Categories: "admin slow dangerous connection", Handler: cmdClientNoEvict},
			{Name: "reply", Arity: 3, Flags: FlagNoScript | FlagLoading | FlagStale | FlagStateful, Since: "3.2.0", Syntax: "ON | OFF | SKIP", Summary: "Instructs the server whether to reply to commands.", Complexity: "O(1)", Categories: "slow connection", Handler: cmdClientReply},
			{Name: "no-touch", Arity: 3, Flags: FlagNoScript | FlagLoading | FlagStale, Since: "7.2.0", Syntax: "ON | OFF", Summary: "Controls whether commands sent by the client affect the LRU/LFU of accessed keys.", Categories: "slow connection", Handler: cmdClientNoTouch},
			{Name: "help", Arity: 2, Flags: FlagLoading | FlagStale, Since: "5.0.0", Summary: "Returns helpful text about the different subcommands.", Categories: "slow connection", Handler: cmdClientHelp},
			{Name: "tracking", Arity: -3, Flags: FlagNoScript | FlagLoading | FlagStale | FlagStateful, Since: "6.0.0", Syntax: "ON | OFF [REDIRECT client-id] [PREFIX prefix [PREFIX prefix ...]] [BCAST] [OPTIN] [OPTOUT] [NOLOOP]", Summary: "Controls server-assisted client-side caching for the connection.", Complexity: "O(1). Some options may introduce additional complexity.", Categories: "slow connection", Handler: cmdClientTracking},
			{Name: "caching", Arity: 3, Flags: FlagNoScript | FlagLoading | FlagStale | FlagStateful, Since: "6.0.0", Syntax: "YES | NO", Summary: "Instructs the server whether to track the keys in the next request.", Complexity: "O(1)", Categories: "slow connection", Handler: cmdClientCaching},
			{Name: "getredir", Arity: 2, Flags: FlagNoScript | FlagLoading | FlagStale, Since: "6.0.0", Summary: "Returns the client ID to which the connection's tracking notifications are redirected.", Complexity: "O(1)", Categories: "slow connection", Handler: cmdClientGetRedir},
			{Name: "trackinginfo", Arity: 2, Flags: FlagNoScript | FlagLoading | FlagStale, Since: "6.2.0", Summary: "Returns information about server-assisted client-side caching for the connection.", Complexity: "O(1)", Categories: "slow connection", Handler: cmdClientTrackingInfo},
			{Name: "pause", Arity: -3, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, Since: "3.0.0", Syntax: "timeout [WRITE | ALL]", Summary: "Suspends commands processing.", Complexity: "O(1)", Categories: "admin slow dangerous connection", Handler: cmdClientPause},
			{Name: "unpause", Arity: 2, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, Since: "6.2.0", Summary: "Resumes processing commands from paused clients.", Complexity: "O(N) Where N is the number of paused clients", Categories: "admin slow dangerous connection", Handler: cmdClientUnpause},
			{Name: "unblock", Arity: -3, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, Since: "5.0.0", Syntax: "client-id [TIMEOUT | ERROR]", Summary: "Unblocks a client blocked by a blocking command from a different connection.", Complexity: "O(log N) where N is the number of client connections", Categories: "admin slow dangerous connection", Handler: cmdClientUnblock},
		}},
	}
}

func cmdPing(s *Session) {
	if len(s.Args) > 2 {
		s.W.Error("ERR wrong number of arguments for 'ping' command")
		return
	}
	if s.subscribed > 0 && s.W.Proto == 2 && !s.WS {
		s.W.Array(2)
		s.W.BulkString("pong")
		if len(s.Args) == 2 {
			s.W.Bulk(s.Args[1])
		} else {
			s.W.BulkString("")
		}
		return
	}
	if len(s.Args) == 2 {
		if s.replMaster {
			s.applyStreamMark(s.Args[1]) // a DEDUP mark (repl_dedup.go)
		}
		s.W.Bulk(s.Args[1])
		return
	}
	s.W.Simple("PONG")
}

func cmdEcho(s *Session) { s.W.Bulk(s.Args[1]) }

func cmdQuit(s *Session) {
	s.W.OK()
	s.Quit = true
}

func cmdReset(s *Session) {
	s.multi = nil
	s.multiLen.Store(0)
	s.unwatchAll()
	s.selectDB(0)
	s.setProto(2)
	s.name.Store(nil)
	s.noEvict, s.noTouch = false, false
	s.reply = replyOn
	s.srv.resetSession(s)
	s.user.Store(s.srv.acl.def)
	s.authed = s.srv.acl.defaultOpen()
	s.W.Simple("RESET")
}

// resetHooks let other parts of the engine (pub/sub, sync) drop a session's
// state on RESET.
func (srv *Server) resetSession(s *Session) {
	for _, fn := range srv.resetHooks {
		fn(s)
	}
}

// login authenticates the session as user (AUTH, HELLO ... AUTH) when pass
// is one of its passwords and it is on; a failure is logged in ACL LOG
// with the command's name as given.
func (s *Session) login(user, pass []byte) bool {
	u := s.srv.acl.authenticate(user, pass)
	if u == nil {
		s.srv.acl.logDenial(s.client(), aclDeniedAuth, "toplevel", string(s.Args[0]), string(user))
		return false
	}
	s.user.Store(u)
	s.authed = true
	return true
}

func cmdAuth(s *Session) {
	if len(s.Args) > 3 {
		s.W.Error(errSyntax)
		return
	}
	user, pass := []byte("default"), s.Args[1]
	if len(s.Args) == 3 {
		user, pass = s.Args[1], s.Args[2]
	} else if s.srv.acl.def.state().nopass {
		s.W.Error(errNoPassSet)
		return
	}
	if !s.login(user, pass) {
		s.W.Error(errBadPass)
		return
	}
	s.W.OK()
}

func cmdHello(s *Session) {
	proto := s.W.Proto
	i := 1
	if len(s.Args) >= 2 {
		v, ok := resp.ParseInt(s.Args[1])
		if !ok {
			s.W.Error("ERR Protocol version is not an integer or out of range")
			return
		}
		if v < 2 || v > 3 {
			s.W.Error("NOPROTO unsupported protocol version")
			return
		}
		proto = int(v)
		i = 2
	}
	var name, user, pass []byte
	haveName := false
	for ; i < len(s.Args); i++ {
		more := len(s.Args) - i - 1
		switch {
		case resp.EqualFold(s.Args[i], "auth") && more >= 2:
			user, pass = s.Args[i+1], s.Args[i+2]
			i += 2
		case resp.EqualFold(s.Args[i], "setname") && more >= 1:
			name, haveName = s.Args[i+1], true
			i++
		default:
			s.W.Error(fmt.Sprintf("ERR Syntax error in HELLO option '%s'", s.Args[i]))
			return
		}
	}
	if user != nil && !s.login(user, pass) {
		s.W.Error(errBadPass)
		return
	}
	if !s.authed && !s.srv.acl.defaultOpen() {
		s.W.Error("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
		return
	}
	if haveName {
		if !validClientName(name) {
			s.W.Error("ERR Client names cannot contain spaces, newlines or special characters.")
			return
		}
		s.setName(name)
	}
	s.setProto(proto)
	s.W.Map(7)
	s.W.BulkString("server")
	s.W.BulkString("redis")
	s.W.BulkString("version")
	s.W.BulkString(Version)
	s.W.BulkString("proto")
	s.W.Int(int64(proto))
	s.W.BulkString("id")
	s.W.Int(s.ID)
	s.W.BulkString("mode")
	s.W.BulkString("standalone")
	s.W.BulkString("role")
	s.W.BulkString("master")
	s.W.BulkString("modules")
	s.W.Array(0)
}

func cmdSelect(s *Session) {
	n, ok := s.dbArg(1)
	if !ok {
		return
	}
	s.selectDB(n)
	s.W.OK()
}

func cmdSwapDB(s *Session) {
	ndb := len(s.srv.ks.DBs)
	a, e1 := parseDBIndex(s.Args[1], ndb)
	b, e2 := parseDBIndex(s.Args[2], ndb)
	// Redis parses both indexes before it checks either range.
	switch {
	case e1 != "" && e1 != errDBIndex:
		s.W.Error("ERR invalid first DB index")
		return
	case e2 != "" && e2 != errDBIndex:
		s.W.Error("ERR invalid second DB index")
		return
	case e1 != "" || e2 != "":
		s.W.Error(errDBIndex)
		return
	}
	if a != b {
		s.srv.touchDB(a)
		s.srv.touchDB(b)
		keyspace.Swap(s.srv.ks.DBs[a], s.srv.ks.DBs[b])
		s.emitDB(a, "SWAPDB", strconv.Itoa(a), strconv.Itoa(b))
		s.srv.touchDB(a)
		s.srv.touchDB(b)
	}
	s.W.OK()
}

func validClientName(b []byte) bool {
	for _, c := range b {
		if c < '!' || c > '~' {
			return false
		}
	}
	return true
}

func (s *Session) setName(b []byte) {
	if len(b) == 0 {
		s.name.Store(nil)
		return
	}
	n := string(b)
	s.name.Store(&n)
}

func cmdClientID(s *Session) { s.W.Int(s.ID) }

func cmdClientSetName(s *Session) {
	if !validClientName(s.Args[2]) {
		s.W.Error("ERR Client names cannot contain spaces, newlines or special characters.")
		return
	}
	s.setName(s.Args[2])
	s.W.OK()
}

func cmdClientGetName(s *Session) {
	if n := s.name.Load(); n != nil {
		s.W.BulkString(*n)
		return
	}
	s.W.Null()
}

func cmdClientSetInfo(s *Session) {
	v := s.Args[3]
	for _, c := range v {
		if c < '!' || c > '~' {
			s.W.Error(fmt.Sprintf("ERR %s cannot contain spaces, newlines or special characters.", strings.ToUpper(string(s.Args[2]))))
			return
		}
	}
	val := string(v)
	switch {
	case resp.EqualFold(s.Args[2], "lib-name"):
		s.libName.Store(&val)
	case resp.EqualFold(s.Args[2], "lib-ver"):
		s.libVer.Store(&val)
	default:
		s.W.Error(fmt.Sprintf("ERR Unrecognized option '%s'", s.Args[2]))
		return
	}
	s.W.OK()
}

func onOff(s *Session, dst *bool) {
	switch {
	case resp.EqualFold(s.Args[2], "on"):
		*dst = true
	case resp.EqualFold(s.Args[2], "off"):
		*dst = false
	default:
		s.W.Error(errSyntax)
		return
	}
	s.W.OK()
}

func cmdClientNoEvict(s *Session) { onOff(s, &s.noEvict) }

// cmdClientReply is CLIENT REPLY ON | OFF | SKIP: OFF drops the replies
// of the requests that follow until ON, SKIP the reply of the next one
// (unless replies are off); pushes still reach the connection. Only ON
// replies.
func cmdClientReply(s *Session) {
	switch {
	case resp.EqualFold(s.Args[2], "on"):
		s.reply = replyOn
		s.W.OK()
	case resp.EqualFold(s.Args[2], "off"):
		s.reply = replyOff
	case resp.EqualFold(s.Args[2], "skip"):
		if s.reply != replyOff {
			s.reply = replySkipNext
		}
	default:
		s.W.Error(errSyntax)
	}
}
func cmdClientNoTouch(s *Session) { onOff(s, &s.noTouch) }

// clientLine formats one CLIENT LIST / CLIENT INFO line.
func (s *Session) clientLine(now time.Time) string {
	cmd := "NULL"
	if c := s.lastCmd.Load(); c != nil {
		cmd = c.Name
	}
	ch, pat, shard := s.PubSubCounts()
	flags := "N"
	if ch+pat+shard > 0 {
		flags = "P"
	}
	multi := int(s.multiLen.Load()) - 1
	if multi >= 0 {
		flags = "x"
	}
	if s.isBlocked() {
		flags = "b"
	}
	if s.srv.monitoring(s) {
		flags = "O"
	}
	if s.replica.Load() != nil {
		flags = "S"
	}
	tflags, redir := clientListTracking(s)
	if tflags != "" {
		flags = strings.TrimPrefix(flags+tflags, "N")
	}
	if s.noEvict {
		// Redis's CLIENT_NO_EVICT, the last of its flags.
		flags = strings.TrimPrefix(flags, "N") + "e"
	}
	addr, laddr := "", ""
	qbuf, qfree, omem := 0, 0, 0
	if s.conn != nil {
		addr, laddr = s.conn.RemoteAddr(), s.conn.LocalAddr()
		qbuf, omem = s.conn.Buffered()
		if f, ok := s.conn.(queryFreer); ok {
			qfree = f.QueryFree()
		}
	}
	idle := int64(s.srv.ks.Clock()) - s.lastActive.Load()
	return fmt.Sprintf("id=%d addr=%s laddr=%s fd=%d name=%s age=%d idle=%d flags=%s db=%d sub=%d psub=%d ssub=%d multi=%d qbuf=%d qbuf-free=%d argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=%d tot-mem=0 events=r cmd=%s user=%s redir=%d resp=%d lib-name=%s lib-ver=%s\n",
		s.ID, addr, laddr, s.ID+7, str(&s.name), int64(now.Sub(s.created)/time.Second), idle, flags,
		s.dbShown.Load(), ch, pat, shard, multi, qbuf, qfree, omem, cmd, s.user.Load().Name, redir, s.proto.Load(), str(&s.libName), str(&s.libVer))
}

func cmdClientInfo(s *Session) {
	s.W.Verbatim(s.clientLine(time.Now()))
}

func cmdClientList(s *Session) {
	var ids map[int64]bool
	typ := ""
	for i := 2; i < len(s.Args); i++ {
		switch {
		case resp.EqualFold(s.Args[i], "type") && i+1 < len(s.Args):
			typ = strings.ToLower(string(s.Args[i+1]))
			if typ != "normal" && typ != "pubsub" && typ != "master" && typ != "replica" && typ != "slave" {
				s.W.Error(fmt.Sprintf("ERR Unknown client type '%s'", s.Args[i+1]))
				return
			}
			i++
		case resp.EqualFold(s.Args[i], "id") && i+1 < len(s.Args):
			ids = map[int64]bool{}
			for i++; i < len(s.Args); i++ {
				id, ok := resp.ParseInt(s.Args[i])
				if !ok || id <= 0 {
					s.W.Error("ERR Invalid client ID")
					return
				}
				ids[id] = true
			}
		default:
			s.W.Error(errSyntax)
			return
		}
	}
	var b strings.Builder
	now := time.Now()
	for _, c := range s.srv.sessions() {
		if ids != nil && !ids[c.ID] {
			continue
		}
		if !c.ofType(typ) {
			continue
		}
		b.WriteString(c.clientLine(now))
	}
	s.W.Verbatim(b.String())
}

func cmdClientKill(s *Session) {
	if len(s.Args) == 3 {
		addr := string(s.Args[2])
		for _, c := range s.srv.sessions() {
			if c.conn != nil && c.conn.RemoteAddr() == addr {
				c.kill(s)
				s.W.OK()
				return
			}
		}
		s.W.Error("ERR No such client")
		return
	}
	var id int64
	var addr, laddr, typ, user string
	skipMe := true
	if (len(s.Args)-2)%2 != 0 {
		s.W.Error(errSyntax)
		return
	}
	for i := 2; i+1 < len(s.Args); i += 2 {
		v := s.Args[i+1]
		switch {
		case resp.EqualFold(s.Args[i], "id"):
			n, ok := resp.ParseInt(v)
			if !ok || n <= 0 {
				s.W.Error("ERR client-id should be greater than 0")
				return
			}
			id = n
		case resp.EqualFold(s.Args[i], "addr"):
			addr = string(v)
		case resp.EqualFold(s.Args[i], "laddr"):
			laddr = string(v)
		case resp.EqualFold(s.Args[i], "type"):
			typ = strings.ToLower(string(v))
			if typ != "normal" && typ != "pubsub" && typ != "master" && typ != "replica" && typ != "slave" {
				s.W.Error(fmt.Sprintf("ERR Unknown client type '%s'", v))
				return
			}
		case resp.EqualFold(s.Args[i], "user"):
			user = string(v)
		case resp.EqualFold(s.Args[i], "skipme"):
			switch {
			case resp.EqualFold(v, "yes"):
				skipMe = true
			case resp.EqualFold(v, "no"):
				skipMe = false
			default:
				s.W.Error(errSyntax)
				return
			}
		default:
			s.W.Error(errSyntax)
			return
		}
	}
	var u *User
	if user != "" {
		if u = s.srv.acl.user(user); u == nil {
			s.W.Error(fmt.Sprintf("ERR No such user '%s'", user))
			return
		}
	}
	killed := 0
	for _, c := range s.srv.sessions() {
		if id != 0 && c.ID != id || skipMe && c == s {
			continue
		}
		if c.conn == nil || addr != "" && c.conn.RemoteAddr() != addr || laddr != "" && c.conn.LocalAddr() != laddr {
			continue
		}
		if !c.ofType(typ) || u != nil && c.user.Load() != u {
			continue
		}
		c.kill(s)
		killed++
	}
	if id == 0 && u == nil && (typ == "master" || typ == "" && addr != "") && s.srv.killMasterLink(addr, laddr) {
		killed++ // the replica's link to its master (repl_replica.go)
	}
	s.W.Int(int64(killed))
}

// ofType reports whether a session is of a CLIENT LIST/KILL TYPE ("" is
// any); it reads only fields that are safe from other goroutines.
func (c *Session) ofType(typ string) bool {
	ch, pat, shard := c.PubSubCounts()
	sub := ch+pat+shard > 0
	switch typ {
	case "":
		return true
	case "pubsub":
		return sub
	case "normal":
		return !sub && c.replica.Load() == nil
	case "replica", "slave":
		return c.replica.Load() != nil
	}
	return false // master: the replica side's client (repl_replica*.go)
}

// kill closes c's connection; when c is the caller it closes after the reply.
func (c *Session) kill(by *Session) {
	if c == by {
		by.Quit = true
		return
	}
	c.conn.Close()
}

// cmdClientHelp answers CLIENT HELP with Redis 7.0's text, line for line.
func cmdClientHelp(s *Session) {
	help(s, "CLIENT",
		"CACHING (YES|NO)", "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
		"GETREDIR", "    Return the client ID we are redirecting to when tracking is enabled.",
		"GETNAME", "    Return the name of the current connection.",
		"ID", "    Return the ID of the current connection.",
		"INFO", "    Return information about the current client connection.",
		"KILL <ip:port>", "    Kill connection made from <ip:port>.",
		"KILL <option> <value> [<option> <value> [...]]", "    Kill connections. Options are:",
		"    * ADDR (<ip:port>|<unixsocket>:0)", "      Kill connections made from the specified address",
		"    * LADDR (<ip:port>|<unixsocket>:0)", "      Kill connections made to specified local address",
		"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)", "      Kill connections by type.",
		"    * USER <username>", "      Kill connections authenticated by <username>.",
		"    * SKIPME (YES|NO)", "      Skip killing current connection (default: yes).",
		"LIST [options ...]", "    Return information about client connections. Options:",
		"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)", "      Return clients of specified type.",
		"UNPAUSE", "    Stop the current client pause, resuming traffic.",
		"PAUSE <timeout> [WRITE|ALL]", "    Suspend all, or just write, clients for <timeout> milliseconds.",
		"REPLY (ON|OFF|SKIP)", "    Control the replies sent to the current connection.",
		"SETNAME <name>", "    Assign the name <name> to the current connection.",
		"UNBLOCK <clientid> [TIMEOUT|ERROR]", "    Unblock the specified blocked client.",
		"TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]", "         [OPTIN] [OPTOUT] [NOLOOP]",
		"    Control server assisted client side caching.",
		"TRACKINGINFO", "    Report tracking status for the current connection.",
		"NO-EVICT (ON|OFF)", "    Protect current client connection from eviction.")
}
