package server

import (
	"sort"
	"strings"

	"github.com/recached/recached/resp"
)

// Flag is a command property, as in Redis's command table.
type Flag uint32

// Command flags. Dispatch, COMMAND INFO, the WebSocket port's restrictions,
// scope checks and persistence all read them.
const (
	FlagWrite       Flag = 1 << iota // may modify the keyspace
	FlagReadonly                     // reads only
	FlagAdmin                        // administrative
	FlagDangerous                    // may disrupt the server or read everything
	FlagPubSub                       // pub/sub related
	FlagNoScript                     // not allowed in scripts
	FlagFast                         // O(1) or O(log n)
	FlagNoAuth                       // allowed before AUTH
	FlagLoading                      // allowed while loading
	FlagStale                        // allowed on a stale replica
	FlagNoMulti                      // not queued by MULTI (MULTI, EXEC, DISCARD, WATCH, QUIT, RESET)
	FlagDenyOOM                      // may grow memory
	FlagBlocking                     // may block the client
	FlagMovableKeys                  // key positions come from Keys, not the spec
	FlagAllKeys                      // reads or writes the whole current database
	FlagAllDBs                       // touches every database
	FlagConnection                   // connection-scoped: never wrapped by DEDUP
	FlagNoWS                         // refused on the WebSocket port
	FlagSubContext                   // allowed in RESP2 subscribed mode
	FlagFiltered                     // results filtered to a scoped connection's scope (QSUB), which may run it
	FlagAllChans                     // reads every pub/sub channel name (PUBSUB CHANNELS)
	FlagClientOwned                  // a sync client sends it itself: clients refuse it from applications
	FlagRunsScript                   // runs Lua code (EVAL, EVALSHA, FCALL and their _RO forms)
	// FlagStateful marks a command whose meaning depends on state the
	// connection keeps between requests (transactions, subscriptions,
	// the selected database, authentication, sync registrations, reply
	// modes): a request/response transport with no such state (Amaquet
	// COMMAND) refuses it.
	FlagStateful
	// FlagNoSlowlog: SLOWLOG never logs it (EXEC, whose commands are
	// logged instead; AUTH and HELLO, which carry passwords).
	FlagNoSlowlog
	// FlagMayReplicate: not a write, yet it reaches other clients or may
	// change data (PUBLISH, PFCOUNT): CLIENT PAUSE WRITE holds it.
	FlagMayReplicate
	// FlagSized: the command counts the size of every key it writes
	// itself: it writes whole string values through the keyspace, which
	// counts their size as it stores them (SET, INCR), or it accounts the
	// entry it changed in place from its own lookup (LPUSH, HSET, SADD,
	// ZADD: Session.accountWrite). Dispatch skips the pass that looks the
	// keys of a write up again to recount their sizes (accountKeys).
	FlagSized
)

var flagNames = []struct {
	f    Flag
	name string
}{
	{FlagWrite, "write"}, {FlagReadonly, "readonly"}, {FlagDenyOOM, "denyoom"},
	{FlagAdmin, "admin"}, {FlagPubSub, "pubsub"}, {FlagNoScript, "noscript"},
	{FlagBlocking, "blocking"}, {FlagLoading, "loading"}, {FlagStale, "stale"},
	{FlagNoAuth, "no_auth"}, {FlagFast, "fast"}, {FlagMovableKeys, "movablekeys"},
}

// Handler runs a command whose arity and permissions dispatch has checked.
// It reads s.Args and writes its reply through s.W.
type Handler func(s *Session)

// Command is one entry of the declarative command table.
type Command struct {
	Name     string // lower case; subcommands are "parent|sub"
	Arity    int    // Redis convention: n exact, -n at least n
	Flags    Flag
	FirstKey int // position of the first key argument, 0 for none
	LastKey  int // position of the last key, negative counts from the end
	Step     int
	// Keys returns the key arguments when they cannot be described by
	// FirstKey/LastKey/Step (FlagMovableKeys).
	Keys func(args [][]byte) [][]byte
	// KeySpecs are the flags of the command's key specs as Redis's COMMAND
	// INFO prints them, specs separated by ";" ("RW access delete; RW
	// insert"): the i-th key KeyArgs returns has the i-th spec's flags,
	// every key past the last spec the last one's. Empty: "RW access
	// update" for a write, "RO access" otherwise. ACL key permissions
	// (%R~, %W~), ACL DRYRUN, COMMAND GETKEYSANDFLAGS and COMMAND INFO
	// read them.
	KeySpecs string
	// VarKeyFlags gives the key flags of a command whose spec has
	// variable_flags for the arguments it runs with (SET with or without
	// GET, BITFIELD with or without SET or INCRBY).
	VarKeyFlags func(args [][]byte) KeyFlag
	Categories  string // ACL categories, space separated, without '@'
	Group       string // documentation group: string, keyspace, server, …
	Since       string // Redis version that introduced it
	Summary     string
	Complexity  string
	Syntax      string // argument syntax, parsed for COMMAND DOCS
	Handler     Handler
	Subs        []*Command
	// Wraps is the position of a wrapped command in the arguments of a
	// command that runs another (DEDUP): its locks and scope are the
	// wrapped command's.
	Wraps int
	// FirstChan and LastChan are the positions of the pub/sub channel
	// arguments (LastChan negative counts from the end), FirstChan 0 for a
	// command that names no channel. Scope checks match channels as they
	// match keys.
	FirstChan, LastChan int
	// DBArgs returns the database index arguments of a command that names
	// databases (SELECT, MOVE, COPY … DB, SWAPDB); nil for the others. A
	// scoped connection stays in its database and may name none.
	DBArgs func(args [][]byte) [][]byte
	// Relocates says how the command, run as an effect, moves keys between
	// names or databases; the sync router reads it to tell each connection
	// what it now sees.
	Relocates Relocation
	// PatternKeys reports whether the command, run with args, reads keys
	// that patterns in its arguments name (SORT's BY and GET): it then
	// locks its whole database, and a scoped connection may not run it.
	// Such a command's ACL category dangerous is for those reads alone:
	// without them a scoped connection may run it.
	PatternKeys func(args [][]byte) bool

	subs     map[string]*Command
	keyFlags []KeyFlag // KeySpecs, parsed
	stats    cmdStats
	args     []docArg
	// restricted: the command reveals or changes server state (ACL
	// category admin or dangerous, or the flags); a scoped connection may
	// not run it.
	restricted bool
	// timeAll: every call is timed (stats.go), for SLOWLOG: the command
	// is not O(1).
	timeAll bool
}

// Relocation is how an effect moves keys between names or databases. The
// effect has its command's shape: RENAME src dst, COPY src dst DB n …,
// MOVE key db, SWAPDB a b.
type Relocation uint8

// The relocations.
const (
	RelocNone     Relocation = iota // the effect changes its key in place
	RelocRename                     // key argument 1 becomes key argument 2, in the effect's database
	RelocCopy                       // key argument 2, in the database DBArgs names (else the effect's), becomes a copy of key argument 1
	RelocMove                       // key argument 1 moves to the database DBArgs names
	RelocFlush                      // the effect's database is emptied
	RelocFlushAll                   // every database is emptied
	RelocSwap                       // the two databases DBArgs names exchange their contents
)

// Table is the command table: lookup by lower-case name.
type Table struct {
	cmds map[string]*Command
}

// families lists every command family's table entries.
func families() [][]*Command {
	return [][]*Command{
		connectionCommands(), serverCommands(), keyCommands(),
		stringCommands(), bitCommands(), hashCommands(), listCommands(),
		setCommands(), zsetCommands(), pubsubCommands(), syncCommands(),
		persistCommands(), dedupCommands(), lcsCommands(), jsonCommands(), ratelimitCommands(),
		streamCommands(),
		geoCommands(), sortCommands(),
		hllCommands(),
		scriptCommands(), functionCommands(),
		dumpCommands(), slowlogCommands(), aclCommands(), diagCommands(), clusterCommands(), replicationCommands(),
	}
}

// newTable builds the table from every family.
func newTable() *Table {
	t := &Table{cmds: make(map[string]*Command)}
	for _, fam := range families() {
		for _, c := range fam {
			t.add(c, nil)
		}
	}
	return t
}

func (t *Table) add(c *Command, parent *Command) {
	if parent == nil {
		if _, dup := t.cmds[c.Name]; dup {
			panic("duplicate command " + c.Name)
		}
		t.cmds[c.Name] = c
	}
	c.args = parseSyntax(c.Syntax)
	c.keyFlags = parseKeySpecs(c)
	c.timeAll = c.Flags&FlagFast == 0 && !strings.HasPrefix(c.Complexity, "O(1)")
	c.restricted = c.Flags&(FlagAdmin|FlagDangerous) != 0 || hasWord(c.Categories, "admin") ||
		(hasWord(c.Categories, "dangerous") && c.PatternKeys == nil)
	if len(c.Subs) > 0 {
		c.subs = make(map[string]*Command)
		for _, sc := range c.Subs {
			sub := strings.TrimPrefix(sc.Name, c.Name+"|")
			sc.Name = c.Name + "|" + sub
			c.subs[sub] = sc
			t.add(sc, c)
		}
	}
}

// Lookup finds a command by name, any case, without allocating.
func (t *Table) Lookup(name []byte) *Command {
	var buf [32]byte
	return t.cmds[string(resp.AppendLower(buf[:0], name))]
}

// Sub finds a subcommand of c by name, any case, without allocating.
func (c *Command) Sub(name []byte) *Command {
	var buf [32]byte
	return c.subs[string(resp.AppendLower(buf[:0], name))]
}

// Len returns the number of top-level commands.
func (t *Table) Len() int { return len(t.cmds) }

// Sorted returns the top-level commands sorted by name.
func (t *Table) Sorted() []*Command {
	out := make([]*Command, 0, len(t.cmds))
	for _, c := range t.cmds {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// KeyArgs appends the key arguments of args, per c's key spec, to dst.
func (c *Command) KeyArgs(dst [][]byte, args [][]byte) [][]byte {
	if c.Keys != nil {
		return append(dst, c.Keys(args)...)
	}
	if c.FirstKey == 0 || c.FirstKey >= len(args) {
		return dst
	}
	last := c.LastKey
	if last < 0 {
		last = len(args) + last
	}
	if last >= len(args) {
		last = len(args) - 1
	}
	step := c.Step
	if step <= 0 {
		step = 1
	}
	for i := c.FirstKey; i <= last; i += step {
		dst = append(dst, args[i])
	}
	return dst
}

// KeyFlag is a key spec flag, as in Redis's command table: how a command
// uses a key (RO, RW, OW, RM) and what it does with its data (access,
// update, insert, delete).
type KeyFlag uint16

// The key spec flags, in the order Redis prints them.
const (
	KeyRO            KeyFlag = 1 << iota // reads the key's value only
	KeyRW                                // reads and modifies it
	KeyOW                                // overwrites it without reading
	KeyRM                                // removes it
	KeyAccess                            // returns, copies or uses the user data
	KeyUpdate                            // updates the data in place
	KeyInsert                            // adds data, changes nothing there
	KeyDelete                            // removes data
	KeyNotKey                            // a shard channel in a key position, not a key
	KeyIncomplete                        // the spec may not find every key
	KeyVariableFlags                     // the flags depend on the arguments (VarKeyFlags)
)

var keyFlagNames = []string{"RO", "RW", "OW", "RM", "access", "update", "insert", "delete", "not_key", "incomplete", "variable_flags"}

// Names returns f's flags as COMMAND INFO prints them.
func (f KeyFlag) Names() []string {
	var out []string
	for i, n := range keyFlagNames {
		if f&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return out
}

// parseKeySpecs parses c's KeySpecs (or its default) into one KeyFlag per
// spec; a command without keys has none. A bad flag name is a bug in the
// table: it panics at start-up.
func parseKeySpecs(c *Command) []KeyFlag {
	if !c.HasKeys() {
		return nil
	}
	text := c.KeySpecs
	if text == "" {
		text = "RO access"
		if c.Flags&FlagWrite != 0 {
			text = "RW access update"
		}
	}
	var out []KeyFlag
	for _, spec := range strings.Split(text, ";") {
		var f KeyFlag
		for _, w := range strings.Fields(spec) {
			i := 0
			for i < len(keyFlagNames) && keyFlagNames[i] != w {
				i++
			}
			if i == len(keyFlagNames) {
				panic("command " + c.Name + ": unknown key spec flag " + w)
			}
			f |= 1 << i
		}
		out = append(out, f)
	}
	return out
}

// KeyFlagsAt returns the flags of key i (counted from 0 among those
// KeyArgs returns) of c run with args.
func (c *Command) KeyFlagsAt(args [][]byte, i int) KeyFlag {
	if len(c.keyFlags) == 0 {
		return 0
	}
	f := c.keyFlags[min(i, len(c.keyFlags)-1)]
	if f&KeyVariableFlags != 0 && c.VarKeyFlags != nil {
		return c.VarKeyFlags(args)
	}
	if c.Keys != nil {
		// Keys finds every key, as Redis's getkeys procedures do for a
		// spec marked incomplete.
		f &^= KeyIncomplete
	}
	return f
}

// HasKeys reports whether the command takes key arguments.
func (c *Command) HasKeys() bool { return c.FirstKey > 0 || c.Keys != nil }

// HasChannels reports whether the command takes pub/sub channel arguments.
func (c *Command) HasChannels() bool { return c.FirstChan > 0 }

// ChannelArgs returns the channel arguments of args, per c's channel spec.
func (c *Command) ChannelArgs(args [][]byte) [][]byte {
	if c.FirstChan == 0 || c.FirstChan >= len(args) {
		return nil
	}
	last := c.LastChan
	if last < 0 {
		last += len(args)
	}
	last = min(last, len(args)-1)
	if last < c.FirstChan {
		return nil
	}
	return args[c.FirstChan : last+1]
}

// hasWord reports whether the space-separated list has word.
func hasWord(list, word string) bool {
	for _, w := range strings.Fields(list) {
		if w == word {
			return true
		}
	}
	return false
}

// dbsAt returns a DBArgs that gives the arguments first to last.
func dbsAt(first, last int) func(args [][]byte) [][]byte {
	return func(args [][]byte) [][]byte {
		if first >= len(args) {
			return nil
		}
		return args[first:min(last+1, len(args))]
	}
}

// dbOption returns a DBArgs that gives the value of every option keyword
// (any case) from position from on: COPY's DB n.
func dbOption(keyword string, from int) func(args [][]byte) [][]byte {
	return func(args [][]byte) [][]byte {
		var dbs [][]byte
		for i := from; i+1 < len(args); i++ {
			if resp.EqualFold(args[i], keyword) {
				dbs = append(dbs, args[i+1])
				i++
			}
		}
		return dbs
	}
}

// checkArity reports whether n arguments (the name included) fit c's arity.
func (c *Command) checkArity(n int) bool {
	if c.Arity >= 0 {
		return n == c.Arity
	}
	return n >= -c.Arity
}

// keysIn returns a family table's helper that gives a command the keys
// first to last (step 1; last -1 for all the rest) and, unless group is
// empty, its group.
func keysIn(group string, first, last int) func(*Command) *Command {
	return func(c *Command) *Command {
		c.FirstKey, c.LastKey, c.Step = first, last, 1
		if group != "" {
			c.Group = group
		}
		return c
	}
}
