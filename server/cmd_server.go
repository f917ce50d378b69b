package server

import (
	"fmt"
	"log"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/recached/recached/resp"
	"github.com/recached/recached/server/keyspace"
)

// serverCommands are the administrative and introspection commands.
func serverCommands() []*Command {
	return []*Command{
		{Name: "command", Arity: -1, Flags: FlagLoading | FlagStale, Group: "server", Since: "2.8.13", Summary: "Returns detailed information about all commands.", Categories: "slow connection", Handler: cmdCommand, Subs: []*Command{
			{Name: "count", Arity: 2, Flags: FlagLoading | FlagStale, Since: "2.8.13", Summary: "Returns a count of commands.", Categories: "slow connection", Handler: cmdCommandCount},
			{Name: "info", Arity: -2, Flags: FlagLoading | FlagStale, Since: "2.8.13", Syntax: "[command-name ...]", Summary: "Returns information about one, multiple or all commands.", Categories: "slow connection", Handler: cmdCommandInfo},
			{Name: "docs", Arity: -2, Flags: FlagLoading | FlagStale, Since: "7.0.0", Syntax: "[command-name ...]", Summary: "Returns documentary information about one, multiple or all commands.", Categories: "slow connection", Handler: cmdCommandDocs},
			{Name: "list", Arity: -2, Flags: FlagLoading | FlagStale, Since: "7.0.0", Syntax: "[FILTERBY MODULE module-name | ACLCAT category | PATTERN pattern]", Summary: "Returns a list of command names.", Categories: "slow connection", Handler: cmdCommandList},
			{Name: "getkeys", Arity: -4, Flags: FlagLoading | FlagStale, Since: "2.8.13", Syntax: "command [arg ...]", Summary: "Extracts the key names from an arbitrary command.", Categories: "slow connection", Handler: cmdCommandGetKeys},
			{Name: "getkeysandflags", Arity: -4, Flags: FlagLoading | FlagStale, Since: "7.0.0", Syntax: "command [arg ...]", Summary: "Extract keys and access flags given a full Redis command", Complexity: "O(N) where N is the number of arguments to the command", Categories: "slow connection", Handler: cmdCommandGetKeysAndFlags},
			{Name: "help", Arity: 2, Flags: FlagLoading | FlagStale, Since: "5.0.0", Summary: "Returns helpful text about the different subcommands.", Categories: "slow connection", Handler: cmdCommandHelp},
		}},
		{Name: "info", Arity: -1, Flags: FlagLoading | FlagStale, Group: "server", Since: "1.0.0", Syntax: "[section ...]", Summary: "Returns information and statistics about the server.", Categories: "slow dangerous", Handler: cmdInfo},
		{Name: "config", Arity: -2, Group: "server", Since: "2.0.0", Summary: "A container for server configuration commands.", Categories: "slow", Subs: []*Command{
			{Name: "get", Arity: -3, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, Since: "2.0.0", Syntax: "parameter [parameter ...]", Summary: "Returns the effective values of configuration parameters.", Categories: "admin slow dangerous", Handler: cmdConfigGet},
			{Name: "set", Arity: -4, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, Since: "2.0.0", Syntax: "parameter value [parameter value ...]", Summary: "Sets configuration parameters in-flight.", Categories: "admin slow dangerous", Handler: cmdConfigSet},
			{Name: "rewrite", Arity: 2, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, Since: "2.8.0", Summary: "Persists the effective configuration to file.", Categories: "admin slow dangerous", Handler: cmdConfigRewrite},
			{Name: "resetstat", Arity: 2, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, Since: "2.0.0", Summary: "Resets the server's statistics.", Categories: "admin slow dangerous", Handler: cmdConfigResetStat},
			{Name: "help", Arity: 2, Flags: FlagLoading | FlagStale, Since: "5.0.0", Summary: "Returns helpful text about the different subcommands.", Categories: "slow", Handler: cmdConfigHelp},
		}},
		{Name: "dbsize", Arity: 1, Flags: FlagReadonly | FlagFast | FlagAllKeys, Group: "server", Since: "1.0.0", Summary: "Returns the number of keys in the database.", Categories: "keyspace read fast", Handler: cmdDBSize},
		{Name: "flushdb", Arity: -1, Flags: FlagWrite | FlagAllKeys | FlagDangerous, Relocates: RelocFlush, Group: "server", Since: "1.0.0", Syntax: "[ASYNC | SYNC]", Summary: "Removes all keys from the current database.", Categories: "keyspace write slow dangerous", Handler: cmdFlushDB},
		{Name: "flushall", Arity: -1, Flags: FlagWrite | FlagAllDBs | FlagDangerous, Relocates: RelocFlushAll, Group: "server", Since: "1.0.0", Syntax: "[ASYNC | SYNC]", Summary: "Removes all keys from all databases.", Categories: "keyspace write slow dangerous", Handler: cmdFlushAll},
		{Name: "time", Arity: 1, Flags: FlagLoading | FlagStale | FlagFast, Group: "server", Since: "2.6.0", Summary: "Returns the server time.", Categories: "fast", Handler: cmdTime},
		{Name: "object", Arity: -2, Group: "generic", Since: "2.2.3", Summary: "A container for object introspection commands.", Categories: "slow", Subs: []*Command{
			{Name: "encoding", Arity: 3, Flags: FlagReadonly, FirstKey: 2, LastKey: 2, Step: 1, KeySpecs: "RO", Since: "2.2.3", Syntax: "key", Summary: "Returns the internal encoding of a Redis object.", Categories: "keyspace read slow", Handler: cmdObjectEncoding},
			{Name: "refcount", Arity: 3, Flags: FlagReadonly, FirstKey: 2, LastKey: 2, Step: 1, KeySpecs: "RO", Since: "2.2.3", Syntax: "key", Summary: "Returns the reference count of a value of a key.", Categories: "keyspace read slow", Handler: cmdObjectRefcount},
			{Name: "idletime", Arity: 3, Flags: FlagReadonly, FirstKey: 2, LastKey: 2, Step: 1, KeySpecs: "RO", Since: "2.2.3", Syntax: "key", Summary: "Returns the time since the last access to a Redis object.", Categories: "keyspace read slow", Handler: cmdObjectIdletime},
			{Name: "freq", Arity: 3, Flags: FlagReadonly, FirstKey: 2, LastKey: 2, Step: 1, KeySpecs: "RO", Since: "4.0.0", Syntax: "key", Summary: "Returns the logarithmic access frequency counter of a Redis object.", Categories: "keyspace read slow", Handler: cmdObjectFreq},
			{Name: "help", Arity: 2, Flags: FlagLoading | FlagStale, Since: "6.2.0", Summary: "Returns helpful text about the different subcommands.", Categories: "keyspace slow", Handler: cmdObjectHelp},
		}},
		{Name: "memory", Arity: -2, Group: "server", Since: "4.0.0", Summary: "A container for memory diagnostics commands.", Categories: "slow", Subs: []*Command{
			{Name: "purge", Arity: 2, Since: "4.0.0", Summary: "Asks the allocator to release memory.", Categories: "slow", Handler: cmdMemoryPurge},
			{Name: "usage", Arity: -3, Flags: FlagReadonly, FirstKey: 2, LastKey: 2, Step: 1, KeySpecs: "RO", Since: "4.0.0", Syntax: "key [SAMPLES count]", Summary: "Estimates the memory usage of a key.", Categories: "read slow", Handler: cmdMemoryUsage},
		}},
	}
}

func cmdCommand(s *Session) {
	cmds := s.srv.table.Sorted()
	s.W.Array(len(cmds))
	for _, c := range cmds {
		writeCommandInfo(s, c)
	}
}

func cmdCommandCount(s *Session) { s.W.Int(int64(s.srv.table.Len())) }

func cmdCommandInfo(s *Session) {
	if len(s.Args) == 2 {
		cmdCommand(s)
		return
	}
	s.W.Array(len(s.Args) - 2)
	for _, a := range s.Args[2:] {
		if c := s.srv.lookupFull(a); c != nil {
			writeCommandInfo(s, c)
		} else {
			s.W.Null()
		}
	}
}

// lookupFull finds a command by "name" or "parent|sub".
func (srv *Server) lookupFull(name []byte) *Command {
	n := strings.ToLower(string(name))
	if i := strings.IndexByte(n, '|'); i >= 0 {
		c := srv.table.cmds[n[:i]]
		if c == nil {
			return nil
		}
		return c.subs[n[i+1:]]
	}
	return srv.table.cmds[n]
}

func writeCommandInfo(s *Session, c *Command) {
	s.W.Array(10)
	s.W.BulkString(c.Name)
	s.W.Int(int64(c.Arity))
	var flags []string
	for _, f := range flagNames {
		if c.Flags&f.f != 0 {
			flags = append(flags, f.name)
		}
	}
	s.W.Set(len(flags))
	for _, f := range flags {
		s.W.Simple(f)
	}
	s.W.Int(int64(c.FirstKey))
	s.W.Int(int64(c.LastKey))
	s.W.Int(int64(c.Step))
	cats := strings.Fields(c.Categories)
	s.W.Set(len(cats))
	for _, cat := range cats {
		s.W.Simple("@" + cat)
	}
	s.W.Set(0) // tips
	if c.FirstKey > 0 {
		s.W.Array(1)
		s.W.Map(3)
		s.W.BulkString("flags")
		names := c.keyFlags[0].Names()
		s.W.Set(len(names))
		for _, n := range names {
			s.W.Simple(n)
		}
		s.W.BulkString("begin_search")
		s.W.Map(2)
		s.W.BulkString("type")
		s.W.BulkString("index")
		s.W.BulkString("spec")
		s.W.Map(1)
		s.W.BulkString("index")
		s.W.Int(int64(c.FirstKey))
		s.W.BulkString("find_keys")
		s.W.Map(2)
		s.W.BulkString("type")
		s.W.BulkString("range")
		s.W.BulkString("spec")
		s.W.Map(3)
		s.W.BulkString("lastkey")
		last := c.LastKey
		if last > 0 {
			last -= c.FirstKey
		}
		s.W.Int(int64(last))
		s.W.BulkString("keystep")
		s.W.Int(int64(c.Step))
		s.W.BulkString("limit")
		s.W.Int(0)
	} else {
		s.W.Array(0)
	}
	s.W.Array(len(c.Subs))
	for _, sc := range c.Subs {
		writeCommandInfo(s, sc)
	}
}

func cmdCommandDocs(s *Session) {
	var cmds []*Command
	if len(s.Args) == 2 {
		cmds = s.srv.table.Sorted()
	} else {
		for _, a := range s.Args[2:] {
			if c := s.srv.lookupFull(a); c != nil {
				cmds = append(cmds, c)
			}
		}
	}
	s.W.Map(len(cmds))
	for _, c := range cmds {
		s.W.BulkString(c.Name)
		writeCommandDoc(s, c)
	}
}

func writeCommandDoc(s *Session, c *Command) {
	n := 4
	if c.Complexity != "" {
		n++
	}
	if len(c.args) > 0 {
		n++
	}
	if len(c.Subs) > 0 {
		n++
	}
	s.W.Map(n)
	s.W.BulkString("summary")
	s.W.BulkString(c.Summary)
	s.W.BulkString("since")
	s.W.BulkString(c.Since)
	s.W.BulkString("group")
	g := c.Group
	if g == "" {
		g = "server"
	}
	s.W.BulkString(g)
	if c.Complexity != "" {
		s.W.BulkString("complexity")
		s.W.BulkString(c.Complexity)
	}
	s.W.BulkString("doc_flags")
	s.W.Set(0)
	if len(c.args) > 0 {
		s.W.BulkString("arguments")
		writeDocArgs(s, c.args)
	}
	if len(c.Subs) > 0 {
		s.W.BulkString("subcommands")
		s.W.Map(len(c.Subs))
		for _, sc := range c.Subs {
			s.W.BulkString(sc.Name)
			writeCommandDoc(s, sc)
		}
	}
}

func cmdCommandList(s *Session) {
	var pattern, cat string
	if len(s.Args) > 2 {
		if len(s.Args) != 5 || !resp.EqualFold(s.Args[2], "filterby") {
			s.W.Error(errSyntax)
			return
		}
		switch {
		case resp.EqualFold(s.Args[3], "pattern"):
			pattern = string(s.Args[4])
		case resp.EqualFold(s.Args[3], "aclcat"):
			cat = strings.ToLower(string(s.Args[4]))
		case resp.EqualFold(s.Args[3], "module"):
			s.W.Array(0)
			return
		default:
			s.W.Error(errSyntax)
			return
		}
	}
	var names []string
	for _, c := range s.srv.table.Sorted() {
		for _, x := range append([]*Command{c}, c.Subs...) {
			if pattern != "" && !keyspace.Match(pattern, x.Name) {
				continue
			}
			if cat != "" && !strings.Contains(" "+x.Categories+" ", " "+cat+" ") {
				continue
			}
			names = append(names, x.Name)
		}
	}
	s.W.Array(len(names))
	for _, n := range names {
		s.W.BulkString(n)
	}
}

func cmdCommandGetKeys(s *Session) { commandGetKeys(s, false) }

func cmdCommandGetKeysAndFlags(s *Session) { commandGetKeys(s, true) }

// commandGetKeys is COMMAND GETKEYS and GETKEYSANDFLAGS: the keys of a
// full command, per its key specs, with their flags when asked, and
// Redis's errors in Redis's order.
func commandGetKeys(s *Session, flags bool) {
	args := s.Args[2:]
	c := s.srv.table.Lookup(args[0])
	if c != nil && c.subs != nil && len(args) > 1 {
		c = c.Sub(args[1])
	}
	switch {
	case c == nil:
		s.W.Error("ERR Invalid command specified")
		return
	case !c.hasRealKeys():
		s.W.Error("ERR The command has no key arguments")
		return
	case !c.checkArity(len(args)):
		s.W.Error("ERR Invalid number of arguments specified for command")
		return
	}
	keys := c.KeyArgs(nil, args)
	if len(keys) == 0 && !c.noMandatoryKeys() {
		s.W.Error("ERR Invalid arguments specified for command")
		return
	}
	s.W.Array(len(keys))
	for i, k := range keys {
		if !flags {
			s.W.Bulk(k)
			continue
		}
		names := c.KeyFlagsAt(args, i).Names()
		s.W.Array(2)
		s.W.Bulk(k)
		s.W.Set(len(names))
		for _, n := range names {
			s.W.Simple(n)
		}
	}
}

// hasRealKeys reports whether c has a key spec that names keys, not shard
// channels (Redis's doesCommandHaveKeys).
func (c *Command) hasRealKeys() bool {
	for _, f := range c.keyFlags {
		if f&KeyNotKey == 0 {
			return true
		}
	}
	return false
}

// noMandatoryKeys reports whether c may run without keys though it takes
// them (Redis's no_mandatory_keys: scripts and functions).
func (c *Command) noMandatoryKeys() bool {
	return c.Flags&FlagRunsScript != 0
}

func cmdCommandHelp(s *Session) {
	help(s, "COMMAND",
		"(no subcommand)", "    Return details about all Redis commands.",
		"COUNT", "    Return the total number of commands in this Redis server.",
		"LIST", "    Return a list of all commands in this Redis server.",
		"INFO [<command-name> ...]", "    Return details about multiple Redis commands.",
		"    If no command names are given, documentation details for all",
		"    commands are returned.",
		"DOCS [<command-name> ...]", "    Return documentation details about multiple Redis commands.",
		"    If no command names are given, documentation details for all",
		"    commands are returned.",
		"GETKEYS <full-command>", "    Return the keys from a full Redis command.",
		"GETKEYSANDFLAGS <full-command>", "    Return the keys and the access flags from a full Redis command.")
}

func help(s *Session, name string, lines ...string) {
	s.W.Array(len(lines) + 3)
	s.W.Simple(name + " <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")
	for _, l := range lines {
		s.W.Simple(l)
	}
	s.W.Simple("HELP")
	s.W.Simple("    Prints this help.")
}

// cmdDBSize counts the keys held, as Redis does: in constant time, keys
// whose time ran out but that expiry has not removed yet included.
func cmdDBSize(s *Session) {
	n := 0
	for i := 0; i < keyspace.NumShards; i++ {
		n += s.db.Len(i)
	}
	s.W.Int(int64(n))
}

func flushArg(s *Session) bool {
	if len(s.Args) > 2 || len(s.Args) == 2 && !resp.EqualFold(s.Args[1], "async") && !resp.EqualFold(s.Args[1], "sync") {
		s.W.Error(errSyntax)
		return false
	}
	return true
}

func cmdFlushDB(s *Session) {
	if !flushArg(s) {
		return
	}
	s.srv.touchDB(s.DBIndex)
	if s.flushLazily() {
		s.noteLazyFlush(s.db)
	}
	for i := 0; i < keyspace.NumShards; i++ {
		s.db.Clear(i)
	}
	s.emitDB(s.DBIndex, "FLUSHDB")
	s.W.OK()
}

func cmdFlushAll(s *Session) {
	if !flushArg(s) {
		return
	}
	lazy := s.flushLazily()
	for _, db := range s.srv.ks.DBs {
		s.srv.touchDB(db.Index)
		if lazy {
			s.noteLazyFlush(db)
		}
		for i := 0; i < keyspace.NumShards; i++ {
			db.Clear(i)
		}
	}
	s.emitDB(0, "FLUSHALL")
	s.W.OK()
}

func cmdTime(s *Session) {
	now := time.Now()
	s.W.Array(2)
	s.W.BulkInt(now.Unix())
	s.W.BulkInt(int64(now.Nanosecond() / 1000))
}

func cmdObjectEncoding(s *Session) {
	e := s.db.Lookup(s.Args[2])
	if e == nil {
		s.W.Null()
		return
	}
	s.W.BulkString(encodingOf(e))
}

// encodingOf names an entry's encoding as Redis would for the same value.
func encodingOf(e *keyspace.Entry) string {
	if e.Obj == nil {
		return e.StrEncoding(func(b []byte) bool { _, ok := resp.ParseInt(b); return ok })
	}
	if enc, ok := e.Obj.(interface{ Encoding() string }); ok {
		return enc.Encoding()
	}
	return e.Type().String()
}

func cmdObjectRefcount(s *Session) {
	if s.db.Lookup(s.Args[2]) == nil {
		s.W.Null()
		return
	}
	s.W.Int(1)
}

func cmdObjectHelp(s *Session) {
	help(s, "OBJECT",
		"ENCODING <key>", "    Return the kind of internal representation used in order to store the value",
		"    associated with a <key>.",
		"FREQ <key>", "    Return the access frequency index of the <key>. The returned integer is",
		"    proportional to the logarithm of the recent access frequency of the key.",
		"IDLETIME <key>", "    Return the idle time of the <key>, that is the approximated number of",
		"    seconds elapsed since the last access to the key.",
		"REFCOUNT <key>", "    Return the number of references of the value associated with the specified",
		"    <key>.")
}

// cmdMemoryPurge returns freed heap memory to the operating system, as
// Redis's MEMORY PURGE does for jemalloc.
func cmdMemoryPurge(s *Session) {
	debug.FreeOSMemory()
	s.W.OK()
}

func cmdMemoryUsage(s *Session) {
	if len(s.Args) != 3 {
		if len(s.Args) != 5 || !resp.EqualFold(s.Args[3], "samples") {
			s.W.Error(errSyntax)
			return
		}
		if _, ok := s.intArg(4); !ok {
			return
		}
	}
	if s.db.Peek(s.Args[2]) == nil {
		s.W.Null()
		return
	}
	s.W.Int(s.db.Account(s.Args[2]))
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// ParseSaveRules parses Redis's save setting: pairs of seconds and changes,
// or "" for none.
func ParseSaveRules(v string) ([][2]int64, error) {
	f := strings.Fields(v)
	if len(f)%2 != 0 {
		return nil, configError("Invalid save parameters")
	}
	var rules [][2]int64
	for i := 0; i < len(f); i += 2 {
		sec, err1 := strconv.ParseInt(f[i], 10, 64)
		ch, err2 := strconv.ParseInt(f[i+1], 10, 64)
		if err1 != nil || err2 != nil || sec < 1 || ch < 0 {
			return nil, configError("Invalid save parameters")
		}
		rules = append(rules, [2]int64{sec, ch})
	}
	return rules, nil
}

func cmdConfigGet(s *Session) {
	s.srv.cfgMu.RLock()
	defer s.srv.cfgMu.RUnlock()
	var pairs []string
	seen := map[string]bool{}
	add := func(name string, p *configParam) {
		if low := strings.ToLower(name); !seen[low] {
			seen[low] = true
			pairs = append(pairs, name, s.srv.paramValue(p))
		}
	}
	for _, a := range s.Args[2:] {
		pat := string(a)
		if !strings.ContainsAny(pat, "[*?") {
			// An exact name, alias or hidden parameter, shown as asked.
			if p := paramTable.lookup(pat); p != nil {
				add(pat, p)
			}
			continue
		}
		pat = strings.ToLower(pat)
		for _, p := range paramTable.params {
			if p.flags&paramHidden != 0 {
				continue
			}
			for _, name := range []string{p.name, p.alias} {
				if name != "" && keyspace.Match(pat, name) {
					add(name, p)
				}
			}
		}
	}
	s.W.Map(len(pairs) / 2)
	for _, p := range pairs {
		s.W.BulkString(p)
	}
}

// paramValue is p's current value as CONFIG GET shows it. The caller holds
// cfgMu.
func (srv *Server) paramValue(p *configParam) string {
	if p.get != nil {
		return p.get(&srv.cfg)
	}
	if v, ok := srv.params[p.name]; ok {
		return v
	}
	return p.def
}

// cmdConfigSet sets every name/value pair or, when one fails, none: the
// names are checked first (unknown, immutable, protected, given twice),
// then the values, and the first failure in argument order is the reply.
func cmdConfigSet(s *Session) {
	if len(s.Args)%2 != 0 {
		s.W.Error(errSyntax)
		return
	}
	n := (len(s.Args) - 2) / 2
	params := make([]*configParam, n)
	for i := range params {
		name := string(s.Args[2+2*i])
		p := paramTable.lookup(name)
		var why string
		switch {
		case p == nil:
			s.W.Error(fmt.Sprintf("ERR Unknown option or number of arguments for CONFIG SET - '%s'", name))
			return
		case p.flags&paramImmutable != 0:
			why = "can't set immutable config"
		case p.flags&paramProtected != 0 && !s.enabledBy("enable-protected-configs"):
			why = "can't set protected config"
		}
		for j := 0; j < i && why == ""; j++ {
			if strings.EqualFold(string(s.Args[2+2*j]), name) {
				why = "duplicate parameter"
			}
		}
		if why != "" {
			s.W.Error(fmt.Sprintf("ERR CONFIG SET failed (possibly related to argument '%s') - %s", name, why))
			return
		}
		params[i] = p
	}
	s.srv.cfgMu.Lock()
	locked := true
	defer func() {
		if locked {
			s.srv.cfgMu.Unlock()
		}
	}()
	values, curs := make([]string, n), make([]string, n)
	for i, p := range params {
		cur := s.srv.paramValue(p)
		curs[i] = cur
		v, err := p.parseValue(string(s.Args[3+2*i]), cur)
		if err == nil && p.flags&paramFixed != 0 && v != cur {
			err = configError("can't set immutable config")
		}
		if err != nil {
			s.W.Error(fmt.Sprintf("ERR CONFIG SET failed (possibly related to argument '%s') - %v", strings.ToLower(string(s.Args[2+2*i])), err))
			return
		}
		values[i] = v
	}
	next := s.srv.cfg
	for i, p := range params {
		switch {
		case p.flags&paramFixed != 0:
			// Its current value: nothing changes.
		case p.set != nil:
			p.set(&next, values[i])
		default:
			if s.srv.params == nil {
				s.srv.params = make(map[string]string)
			}
			s.srv.params[p.name] = values[i]
		}
	}
	prev := s.srv.cfg
	s.srv.cfg = next
	for i, p := range params {
		if p.apply != nil {
			p.apply(s.srv, string(s.Args[3+2*i]))
		}
	}
	if name, why := s.srv.relisten(prev); why != "" {
		// As Redis: every parameter of the command gets its value back.
		s.srv.cfg = prev
		for i, p := range params {
			if p.set == nil && p.flags&paramFixed == 0 {
				s.srv.params[p.name] = curs[i]
			}
			if p.apply != nil {
				p.apply(s.srv, curs[i])
			}
		}
		s.W.Error(fmt.Sprintf("ERR CONFIG SET failed (possibly related to argument '%s') - %s", name, why))
		return
	}
	s.srv.cfgMu.Unlock()
	locked = false
	for i, p := range params {
		if p.act == nil {
			continue
		}
		p, v := p, values[i]
		act := func() error {
			err := p.act(s.srv, v)
			if err != nil {
				log.Printf("recached: CONFIG SET %s %s: %v", p.name, v, err)
				s.srv.cfgMu.Lock()
				p.set(&s.srv.cfg, p.get(&prev))
				s.srv.cfgMu.Unlock()
			}
			return err
		}
		if s.inExec {
			// The transaction's shards are locked: after EXEC.
			s.afterExec = append(s.afterExec, func() { _ = act() })
			continue
		}
		if err := act(); err != nil {
			s.W.Error(fmt.Sprintf("ERR CONFIG SET failed (possibly related to argument '%s') - %v", p.name, err))
			return
		}
	}
	s.W.OK()
}

// cmdConfigRewrite writes the running configuration into the file the
// server started with (conffile_rewrite.go).
func cmdConfigRewrite(s *Session) {
	switch err := s.srv.RewriteConfig(); {
	case err == errNoConfigFile:
		s.W.Error("ERR " + err.Error())
	case err != nil:
		s.W.Error("ERR Rewriting config file: " + errnoText(err))
	default:
		s.W.OK()
	}
}

func cmdConfigResetStat(s *Session) {
	for _, c := range s.srv.table.cmds {
		for _, x := range append([]*Command{c}, c.Subs...) {
			x.stats.reset()
		}
	}
	for _, v := range []interface{ Store(int64) }{&s.srv.totalConns, &s.srv.rejected, &s.srv.expiredKeys, &s.srv.keyHits, &s.srv.keyMisses, &s.srv.errorReplies, &s.srv.netIn, &s.srv.netOut} {
		v.Store(0)
	}
	s.srv.errStats.reset()
	s.srv.mem.lazyFreed.Store(0)
	s.W.OK()
}

func cmdConfigHelp(s *Session) {
	help(s, "CONFIG",
		"GET <pattern>", "    Return parameters matching the glob-like <pattern> and their values.",
		"SET <directive> <value>", "    Set the configuration <directive> to <value>.",
		"RESETSTAT", "    Reset statistics reported by the INFO command.",
		"REWRITE", "    Rewrite the configuration file.")
}

// infoSection appends one INFO section.
type infoSection struct {
	name  string
	lines func(srv *Server) [][2]string
}

// InfoSections lets other parts (persistence, sync) add INFO fields; the
// engine's own sections come first.
func (srv *Server) infoSections() []infoSection {
	secs := []infoSection{
		{"server", func(srv *Server) [][2]string {
			cfg := srv.Config()
			loops := cfg.Loops
			if n := srv.servedLoops(); n > 0 {
				loops = n
			}
			up := int64(time.Since(srv.start) / time.Second)
			exe, _ := os.Executable()
			return [][2]string{
				{"redis_version", Version}, {"redis_git_sha1", "00000000"}, {"redis_git_dirty", "0"},
				{"redis_build_id", "recached"}, {"redis_mode", "standalone"}, {"os", runtime.GOOS + " " + runtime.GOARCH},
				{"arch_bits", "64"}, {"multiplexing_api", "epoll"}, {"gcc_version", "0.0.0"},
				{"process_id", strconv.Itoa(os.Getpid())}, {"run_id", srv.runID},
				{"tcp_port", strconv.Itoa(cfg.Port)}, {"server_time_usec", strconv.FormatInt(time.Now().UnixMicro(), 10)},
				{"uptime_in_seconds", strconv.FormatInt(up, 10)}, {"uptime_in_days", strconv.FormatInt(up/86400, 10)},
				{"hz", strconv.FormatInt(srv.live.hz.Load(), 10)}, {"configured_hz", strconv.FormatInt(srv.live.hz.Load(), 10)}, {"lru_clock", strconv.FormatUint(uint64(srv.ks.Clock()), 10)},
				{"executable", exe}, {"config_file", cfg.ConfigFile}, {"io_threads_active", "0"},
				{"recached_go_version", runtime.Version()}, {"recached_event_loops", strconv.Itoa(loops)},
			}
		}},
		{"clients", func(srv *Server) [][2]string {
			srv.clientsMu.Lock()
			n := len(srv.clients)
			srv.clientsMu.Unlock()
			return [][2]string{
				{"connected_clients", strconv.Itoa(n)}, {"cluster_connections", "0"},
				{"maxclients", strconv.Itoa(srv.Config().MaxClients)}, {"client_recent_max_input_buffer", "0"},
				{"client_recent_max_output_buffer", "0"}, {"blocked_clients", strconv.FormatInt(srv.BlockedClients(), 10)}, {"tracking_clients", strconv.FormatInt(srv.tracking.clients.Load(), 10)},
				{"clients_in_timeout_table", "0"},
			}
		}},
		{"memory", func(srv *Server) [][2]string { return srv.memoryInfo() }},
		{"persistence", func(srv *Server) [][2]string { return srv.persist.info() }},
		{"stats", func(srv *Server) [][2]string {
			pubsubChannels, pubsubPatterns, _ := srv.pubsub.stats()
			inst := srv.instantaneousInfo()
			_, trackKeys, trackItems, trackPrefixes := srv.trackingInfo()
			return [][2]string{
				{"total_connections_received", strconv.FormatInt(srv.totalConns.Load(), 10)},
				{"total_commands_processed", strconv.FormatInt(srv.commandsProcessed(), 10)},
				inst[0],
				{"total_net_input_bytes", strconv.FormatInt(srv.netIn.Load(), 10)},
				{"total_net_output_bytes", strconv.FormatInt(srv.netOut.Load(), 10)},
				{"total_net_repl_input_bytes", "0"}, {"total_net_repl_output_bytes", "0"},
				inst[1], inst[2],
				{"rejected_connections", strconv.FormatInt(srv.rejected.Load(), 10)},
				{"sync_full", strconv.FormatInt(srv.repl.syncFull.Load(), 10)},
				{"sync_partial_ok", strconv.FormatInt(srv.repl.syncPartialOK.Load(), 10)},
				{"sync_partial_err", strconv.FormatInt(srv.repl.syncPartialErr.Load(), 10)},
				{"expired_keys", strconv.FormatInt(srv.expiredKeys.Load(), 10)},
				{"evicted_keys", strconv.FormatInt(srv.mem.evicted.Load(), 10)},
				{"keyspace_hits", strconv.FormatInt(srv.keyHits.Load(), 10)},
				{"keyspace_misses", strconv.FormatInt(srv.keyMisses.Load(), 10)},
				{"pubsub_channels", strconv.Itoa(pubsubChannels)}, {"pubsub_patterns", strconv.Itoa(pubsubPatterns)},
				{"recached_history_channels", strconv.Itoa(srv.pubsub.hist.channels())},
				{"recached_history_bytes", strconv.FormatUint(srv.HistoryMemory(), 10)},
				{"migrate_cached_sockets", strconv.Itoa(srv.migrate.Len())},
				{"tracking_total_keys", strconv.Itoa(trackKeys)}, {"tracking_total_items", strconv.Itoa(trackItems)},
				{"tracking_total_prefixes", strconv.Itoa(trackPrefixes)},
				{"total_error_replies", strconv.FormatInt(srv.errorReplies.Load(), 10)},
			}
		}},
		{"replication", func(srv *Server) [][2]string { return srv.replicationInfo() }},
		{"cpu", func(srv *Server) [][2]string {
			u, sy := cpuTimes()
			return [][2]string{{"used_cpu_sys", fmt.Sprintf("%.6f", sy)}, {"used_cpu_user", fmt.Sprintf("%.6f", u)}}
		}},
		{"modules", func(srv *Server) [][2]string { return nil }},
		{"commandstats", func(srv *Server) [][2]string {
			var out [][2]string
			for _, c := range srv.table.Sorted() {
				for _, x := range append([]*Command{c}, c.Subs...) {
					calls := x.stats.calls.Load()
					rej, fail := x.stats.rejected.Load(), x.stats.failed.Load()
					if calls == 0 && rej == 0 && fail == 0 {
						continue
					}
					usec := x.stats.usec()
					per := 0.0
					if calls > 0 {
						per = float64(usec) / float64(calls)
					}
					out = append(out, [2]string{"cmdstat_" + x.Name, fmt.Sprintf("calls=%d,usec=%d,usec_per_call=%.2f,rejected_calls=%d,failed_calls=%d", calls, usec, per, rej, fail)})
				}
			}
			return out
		}},
		{"errorstats", func(srv *Server) [][2]string { return srv.errStats.info() }},
		{"latencystats", func(srv *Server) [][2]string {
			if !srv.latencyTracking.Load() {
				return nil // as Redis, nothing while latency-tracking is off
			}
			srv.cfgMu.RLock()
			ps := latencyPercentiles(srv.paramValue(paramTable.lookup("latency-tracking-info-percentiles")))
			srv.cfgMu.RUnlock()
			var out [][2]string
			for _, c := range srv.table.Sorted() {
				for _, x := range append([]*Command{c}, c.Subs...) {
					if h := x.stats.lat.Load(); h != nil && h.total.Load() > 0 {
						out = append(out, [2]string{"latency_percentiles_usec_" + x.Name, h.latencyLine(ps)})
					}
				}
			}
			return out
		}},
		{"cluster", func(srv *Server) [][2]string { return [][2]string{{"cluster_enabled", "0"}} }},
		{"keyspace", func(srv *Server) [][2]string {
			var out [][2]string
			for _, db := range srv.ks.DBs {
				keys, exp := 0, 0
				var ttlSum int64
				ttlN := 0
				for i := 0; i < keyspace.NumShards; i++ {
					sh := db.Shard(i)
					sh.Lock()
					keys += db.Len(i)
					exp += db.Expires(i)
					// avg_ttl is estimated from a sample of each shard's
					// keys with a time to live.
					sum, n := db.SampleTTL(i, 16)
					sh.Unlock()
					ttlSum += sum
					ttlN += n
				}
				if keys > 0 {
					avg := int64(0)
					if ttlN > 0 {
						avg = ttlSum / int64(ttlN)
					}
					out = append(out, [2]string{fmt.Sprintf("db%d", db.Index), fmt.Sprintf("keys=%d,expires=%d,avg_ttl=%d", keys, exp, avg)})
				}
			}
			return out
		}},
	}
	return append(secs, srv.extraInfo...)
}

func yesNoBit(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

func human(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2fG", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2fM", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.2fK", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%dB", n)
}

// defaultInfo are the sections INFO with no argument prints.
var defaultInfo = map[string]bool{"server": true, "clients": true, "memory": true, "persistence": true, "stats": true, "replication": true, "cpu": true, "modules": true, "errorstats": true, "cluster": true, "keyspace": true}

func cmdInfo(s *Session) {
	want := map[string]bool{}
	all := false
	if len(s.Args) == 1 {
		want = defaultInfo
	}
	for _, a := range s.Args[1:] {
		n := strings.ToLower(string(a))
		switch n {
		case "all", "everything":
			all = true
		case "default":
			for k := range defaultInfo {
				want[k] = true
			}
		default:
			want[n] = true
		}
	}
	var b strings.Builder
	for _, sec := range s.srv.infoSections() {
		if !all && !want[sec.name] {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString("# " + sectionTitle(sec.name) + "\r\n")
		for _, kv := range sec.lines(s.srv) {
			b.WriteString(kv[0] + ":" + kv[1] + "\r\n")
		}
	}
	s.W.Verbatim(b.String())
}
