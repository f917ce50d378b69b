package server

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"

	"github.com/recached/recached/resp"
	"github.com/recached/recached/server/keyspace"
	"github.com/recached/recached/server/lualib"
)

// scriptEngine is the server's Lua scripting state: the script cache (by
// SHA1), a pool of interpreter states, and the script running now.
//
// A script runs with every shard of every database locked (EVAL's
// FlagAllDBs), so at most one runs at a time; running is how the other
// sessions learn of it and answer -BUSY past busy-reply-threshold.
type scriptEngine struct {
	mu    sync.Mutex
	cache map[[20]byte]*luaScript // by SHA1
	// gen counts the flushes of the cache: a script a session remembers
	// (scriptJob.last) from an older generation is gone.
	gen  atomic.Uint64
	pool []*luaState
	// running is the script executing now, nil when none.
	running atomic.Pointer[scriptRun]
	// jobs hands a connection's script (its script session) to an idle
	// script worker (runScripts).
	jobs chan *Session
	rng  luaRand // math.random of every state
	// libs and funcs are the function libraries and their functions (under
	// mu); fst is the state they live in, used with every shard locked
	// (script_function.go).
	libs  map[string]*luaLibrary
	funcs map[string]*luaFunction
	fst   *luaState
	fmu   sync.Mutex // held by an FCALL while it runs in fst
}

// luaScript is one cached script: its body, its compiled function and its
// shebang flags. The compiled proto is shared by every interpreter state.
type luaScript struct {
	sha   string
	name  scriptName // what other sessions read of its runs
	body  string
	proto *lua.FunctionProto
	flags scriptFlags
	// selects: the code mentions SELECT, so the script locks every
	// database, not only the session's.
	selects bool
	// narrow: the code provably touches no key but its declared ones
	// (script_keys.go), so a run locks only their shards.
	narrow bool
}

// scriptFlags are the flags of a script's shebang line.
type scriptFlags uint8

const (
	scriptShebang scriptFlags = 1 << iota // the script has a #!lua line
	scriptNoWrites
	scriptAllowOOM
	scriptAllowStale
	scriptNoCluster
	scriptAllowCrossSlot
)

var scriptFlagNames = map[string]scriptFlags{
	"no-writes": scriptNoWrites, "allow-oom": scriptAllowOOM, "allow-stale": scriptAllowStale,
	"no-cluster": scriptNoCluster, "allow-cross-slot-keys": scriptAllowCrossSlot,
}

// scriptRun is one running script.
type scriptRun struct {
	s *Session
	// name is what other sessions read of the run (SCRIPT KILL, FUNCTION
	// STATS, -BUSY): published once runLua knows it, after the run itself
	// is registered. Use named.
	name     atomic.Pointer[scriptName]
	readonly bool // EVAL_RO, EVALSHA_RO or a no-writes script (the run's own goroutine only)
	// narrow: only the declared keys' shards are locked (callScript).
	narrow bool
	start  time.Duration // srv.clock() when the run started
	resp   int           // the protocol of redis.call replies (redis.setresp)
	// wrote is set once the script ran a write command: SCRIPT KILL then
	// answers -UNKILLABLE. Read by SCRIPT KILL from another session.
	wrote atomic.Bool
	// killed is set by SCRIPT KILL; fatal is an error that aborts the
	// script whatever pcall it runs under (an out-of-scope key). Both
	// cancel the run, which closes stop: the interpreter, whose context
	// the run is, stops at its next instruction.
	killed atomic.Bool
	fatal  string
	// mu guards the two channels, neither made per run: stop is the
	// interpreter state's (attach), closed by cancel while the run is
	// attached; done is made only when another session waits for the
	// end (ended), closed by finish.
	mu       sync.Mutex
	stop     chan struct{}
	stopped  bool // cancel was called
	attached bool
	finished bool
	done     chan struct{}
	// conn is the connection's session of a run startScript started (its
	// script session is s), nil for a run inline; detached is set, on the
	// run's goroutine, once the connection stopped waiting for it. ticks
	// counts the interpreter's instructions.
	conn     *Session
	detached bool
	ticks    uint32
}

// errRunStopped is the run's context error once it was cancelled.
var errRunStopped = errors.New("script stopped")

// The run is the interpreter's context (gopher-lua checks Done at every
// instruction): one allocation less per script than a context.WithCancel,
// and the count of instructions by which a run started by startScript
// notices it passed busy-reply-threshold and detaches.

// Deadline reports no deadline.
func (run *scriptRun) Deadline() (time.Time, bool) { return time.Time{}, false }

// Done is closed when the run is cancelled. Every 4096 instructions it
// also checks the time, and detaches the run past busy-reply-threshold.
func (run *scriptRun) Done() <-chan struct{} {
	run.ticks++
	if run.ticks&4095 == 0 && run.conn != nil && !run.detached && run.s.srv.clock()-run.start >= run.s.srv.busyThreshold() {
		run.detach()
	}
	return run.stop
}

// Err is non-nil once the run is cancelled.
func (run *scriptRun) Err() error {
	select {
	case <-run.stop:
		return errRunStopped
	default:
		return nil
	}
}

// Value holds nothing.
func (run *scriptRun) Value(any) any { return nil }

// cancel stops the interpreter at its next instruction; it may be called
// more than once and from any goroutine, also before the run starts.
func (run *scriptRun) cancel() {
	run.mu.Lock()
	if !run.stopped && run.attached {
		close(run.stop)
	}
	run.stopped = true
	run.mu.Unlock()
}

// attach gives the run st's stop channel, closed at once when the run was
// cancelled before it started.
func (run *scriptRun) attach(st *luaState) {
	run.mu.Lock()
	run.stop, run.attached = st.stop, true
	if run.stopped {
		close(run.stop)
	}
	run.mu.Unlock()
}

// release takes st's stop channel back from the run, and gives st a new
// one if this run closed it.
func (run *scriptRun) release(st *luaState) {
	run.mu.Lock()
	run.attached = false
	closed := run.stopped
	run.mu.Unlock()
	if closed {
		st.stop = make(chan struct{})
	}
}

// ended returns a channel closed when the run is over.
func (run *scriptRun) ended() <-chan struct{} {
	run.mu.Lock()
	defer run.mu.Unlock()
	if run.done == nil {
		run.done = make(chan struct{})
		if run.finished {
			close(run.done)
		}
	}
	return run.done
}

// end marks the run over for the sessions waiting for it.
func (run *scriptRun) end() {
	run.mu.Lock()
	run.finished = true
	if run.done != nil {
		close(run.done)
	}
	run.mu.Unlock()
}

// scriptName names a running script for other sessions.
type scriptName struct {
	sha      string   // the script's SHA1, or the function's name
	function bool     // FCALL: FUNCTION KILL stops it, not SCRIPT KILL
	args     [][]byte // a function's FCALL command, copied (FUNCTION STATS)
}

// named returns the run's name, empty until runLua has published it.
func (run *scriptRun) named() *scriptName {
	if n := run.name.Load(); n != nil {
		return n
	}
	return &scriptName{}
}

// luaState is one interpreter: a sandboxed gopher-lua state whose globals
// are read-only, and the run it serves now.
type luaState struct {
	L       *lua.LState
	globals *lua.LTable // the libraries, read through env
	env     *lua.LTable // the scripts' environment: KEYS, ARGV, then globals
	handler *lua.LFunction
	run     *scriptRun
	args    [][]byte
	argBuf  []byte // the bytes of args
	argEnds []int
	lastCmd *Command // the command redis.call found last
	w       resp.Writer
	// loading is the library FUNCTION LOAD is running, nil otherwise;
	// while it runs, the globals are loadGlobals (script_function.go).
	loading     *luaLibrary
	loadGlobals *lua.LTable
	envMeta     *lua.LTable // env's metatable
	// protected are the read-only tables: the environment and the
	// library proxies.
	protected map[*lua.LTable]bool
	// keys and argv are KEYS and ARGV; fns are the scripts' functions
	// made in this state, their fixed globals folded in (script_fold.go),
	// kept for their next runs.
	keys, argv luaArray
	fns        map[*luaScript]*lua.LFunction
	stop       chan struct{} // the runs' stop channel (scriptRun.attach)
}

const (
	errNoScript       = "NOSCRIPT No matching script. Please use EVAL."
	errScriptBusy     = "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
	errFunctionBusy   = "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
	errScriptKilled   = "ERR Script killed by user with SCRIPT KILL..."
	errNotBusy        = "NOTBUSY No scripts in execution right now."
	errUnkillable     = "UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command."
	errScriptReadonly = "Write commands are not allowed from read-only scripts."
	errScriptSelect   = "ERR a script that selects another database cannot run inside MULTI/EXEC or DEDUP here"
	// luaMaxDepth bounds the nesting of a converted reply (a table that
	// contains itself).
	luaMaxDepth = 200
)

// sha1hex returns the lower-case hex SHA1 of b.
func sha1hex(b string) string {
	sum := sha1.Sum([]byte(b))
	return hex.EncodeToString(sum[:])
}

// shaKey decodes a hex SHA1 (any case) into the cache's key.
func shaKey(sha []byte) ([20]byte, bool) {
	var k [20]byte
	if len(sha) != 40 {
		return k, false
	}
	_, err := hex.Decode(k[:], sha)
	return k, err == nil
}

// lookup returns the cached script of sha (any case), nil when none.
func (e *scriptEngine) lookup(sha []byte) *luaScript {
	key, ok := shaKey(sha)
	if !ok {
		return nil
	}
	e.mu.Lock()
	sc := e.cache[key]
	e.mu.Unlock()
	return sc
}

// load compiles body, caches it and returns it; a compile or shebang error
// is the error reply. A cached body (EVAL's usual case) is found by its
// SHA1, as Redis does, with no allocation.
func (e *scriptEngine) load(body []byte, tbl *Table) (*luaScript, string) {
	key := sha1.Sum(body)
	e.mu.Lock()
	sc := e.cache[key]
	e.mu.Unlock()
	if sc != nil {
		return sc, ""
	}
	text := string(body)
	flags, code, msg := parseShebang(text)
	if msg != "" {
		return nil, msg
	}
	chunk, err := parse.Parse(strings.NewReader(code), "user_script")
	if err != nil {
		return nil, "ERR Error compiling script (new function): " + compileError(err, "user_script")
	}
	proto, err := lua.Compile(chunk, "user_script")
	if err != nil {
		return nil, "ERR Error compiling script (new function): " + compileError(err, "user_script")
	}
	// A script is a main chunk, vararg without Lua 5.1's implicit arg
	// table (which gopher-lua would build at every call).
	proto.IsVarArg &^= lua.VarArgNeedsArg
	sha := hex.EncodeToString(key[:])
	sc = &luaScript{sha: sha, name: scriptName{sha: sha}, body: text, proto: proto, flags: flags, selects: mentionsSelect(text)}
	sc.narrow = !sc.selects && declaredKeysOnly(chunk, tbl)
	e.mu.Lock()
	if e.cache == nil {
		e.cache = make(map[[20]byte]*luaScript)
	}
	if old := e.cache[key]; old != nil {
		sc = old
	} else {
		e.cache[key] = sc
	}
	e.mu.Unlock()
	return sc, ""
}

// compileError formats a gopher-lua parse error as Lua's "user_script:<line>:
// <message>".
func compileError(err error, chunk string) string {
	var pe *parse.Error
	if errors.As(err, &pe) {
		return chunk + ":" + strconv.Itoa(pe.Pos.Line) + ": " + strings.TrimSpace(pe.Message) + " near '" + pe.Token + "'"
	}
	return strings.ReplaceAll(err.Error(), "\n", " ")
}

// parseShebang reads a script's "#!lua flags=…" first line. It returns the
// flags and the code to compile (the shebang line blanked, so that line
// numbers stay), or Redis's error.
func parseShebang(body string) (scriptFlags, string, string) {
	if !strings.HasPrefix(body, "#!") {
		return 0, body, ""
	}
	line, rest, _ := strings.Cut(body, "\n")
	parts, ok := resp.SplitArgs(nil, []byte(line))
	if !ok || len(parts) == 0 {
		return 0, "", "ERR Invalid script shebang"
	}
	if string(parts[0]) != "#!lua" {
		return 0, "", "ERR Unexpected engine in script shebang: " + string(parts[0])
	}
	flags := scriptShebang
	for _, p := range parts[1:] {
		v, ok := strings.CutPrefix(string(p), "flags=")
		if !ok {
			return 0, "", "ERR Unknown lua shebang option: " + string(p)
		}
		for _, f := range strings.Split(v, ",") {
			if f == "" {
				continue
			}
			bit, ok := scriptFlagNames[f]
			if !ok {
				return 0, "", "ERR Unexpected flag in script shebang: " + f
			}
			flags |= bit
		}
	}
	if len(rest) < len(body)-len(line) {
		return flags, "\n" + rest, ""
	}
	return flags, rest, ""
}

// cached returns the number of scripts in the cache.
func (e *scriptEngine) cached() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.cache)
}

// flush empties the cache and drops the interpreter states, as SCRIPT FLUSH
// resets Redis's Lua state.
func (e *scriptEngine) flush() {
	e.mu.Lock()
	e.gen.Add(1)
	e.cache = nil
	for _, st := range e.pool {
		st.L.Close()
	}
	e.pool = nil
	e.mu.Unlock()
}

// get returns an interpreter state from the pool or a new one.
func (e *scriptEngine) get() *luaState {
	e.mu.Lock()
	if n := len(e.pool); n > 0 {
		st := e.pool[n-1]
		e.pool = e.pool[:n-1]
		e.mu.Unlock()
		return st
	}
	e.mu.Unlock()
	return newLuaState(&e.rng)
}

// put returns st to the pool.
func (e *scriptEngine) put(st *luaState) {
	st.run = nil
	e.mu.Lock()
	if len(e.pool) < 4 {
		e.pool = append(e.pool, st)
		st = nil
	}
	e.mu.Unlock()
	if st != nil {
		st.L.Close()
	}
}

// newLuaState builds a sandboxed interpreter: the base library without its
// file and module functions, string, math (its random numbers from rng),
// table and coroutine, the redis table, and the libraries of server/lualib.
func newLuaState(rng *luaRand) *luaState {
	// The registry (Lua's data stack) grows as far as Redis's Lua stack
	// does for unpack() of a large table, and no further.
	L := lua.NewState(lua.Options{SkipOpenLibs: true, RegistrySize: 1024, RegistryMaxSize: 1 << 18, RegistryGrowStep: 1 << 12})
	for _, lib := range []struct {
		name string
		fn   lua.LGFunction
	}{
		{lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable},
		{lua.StringLibName, lua.OpenString}, {lua.MathLibName, lua.OpenMath},
		{lua.CoroutineLibName, lua.OpenCoroutine},
	} {
		L.Push(L.NewFunction(lib.fn))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	st := &luaState{L: L, globals: L.G.Global, fns: make(map[*luaScript]*lua.LFunction), stop: make(chan struct{})}
	for _, name := range []string{"dofile", "loadfile", "print", "getfenv", "setfenv", "newproxy", "module", "require", "_printregs", "_GOPHER_LUA_VERSION"} {
		st.globals.RawSetString(name, lua.LNil)
	}
	st.globals.RawSetString("redis", st.redisTable())
	openProtectedCalls(L, st.globals)
	openDump(L, st.globals)
	lualib.OpenAll(L) // cjson, cmsgpack, bit and struct

	rng.open(L, st.globals.RawGetString("math").(*lua.LTable))
	// tostring of a number is Lua 5.1's "%.14g", not gopher-lua's
	// shortest form.
	tostring := st.globals.RawGetString("tostring")
	st.globals.RawSetString("tostring", L.NewFunction(func(L *lua.LState) int {
		if n, ok := L.Get(1).(lua.LNumber); ok && L.GetTop() >= 1 {
			L.Push(lua.LString(luaNumberText(float64(n))))
			return 1
		}
		L.Insert(tostring, 1)
		L.Call(L.GetTop()-1, 1)
		return 1
	}))
	// Redis's globals and library tables are read-only: each library
	// table becomes an empty proxy reading through to it, and setmetatable
	// and rawset refuse protected tables.
	st.protected = make(map[*lua.LTable]bool)
	var libs []lua.LValue
	st.globals.ForEach(func(k, v lua.LValue) {
		if _, ok := v.(*lua.LTable); ok && k.String() != "_G" {
			libs = append(libs, k)
		}
	})
	for _, k := range libs {
		st.globals.RawSet(k, st.readonly(st.globals.RawGet(k).(*lua.LTable)))
	}
	// Strings' metatable is read-only too, or a script could change
	// string methods for every later script: getmetatable('') is a
	// read-only view whose __index is the read-only string library, and
	// strings look their methods up through that library.
	strlib := st.globals.RawGetString(lua.StringLibName)
	view := L.NewTable()
	view.RawSetString("__index", strlib)
	smt := L.NewTable()
	smt.RawSetString("__index", strlib)
	smt.RawSetString("__metatable", st.readonly(view))
	L.SetMetatable(lua.LString(""), smt)
	setmt, rawset := st.globals.RawGetString("setmetatable"), st.globals.RawGetString("rawset")
	st.globals.RawSetString("setmetatable", L.NewFunction(func(L *lua.LState) int { return st.guard(L, setmt) }))
	st.globals.RawSetString("rawset", L.NewFunction(func(L *lua.LState) int { return st.guard(L, rawset) }))

	st.env = L.NewTable()
	st.globals.RawSetString("_G", st.env)
	// A global is read through tables (the environment's __index is the
	// globals, FUNCTION LOAD's library API while it runs), so that reading
	// one calls no Go function; only a missing one reaches the globals'
	// own __index, the error.
	st.envMeta = L.NewTable()
	st.envMeta.RawSetString("__index", st.globals)
	st.envMeta.RawSetString("__newindex", L.NewFunction(readonlyTable))
	st.envMeta.RawSetString("__metatable", st.readonly(L.NewTable()))
	L.SetMetatable(st.env, st.envMeta)
	st.protected[st.env] = true
	L.Env = st.env
	missing := L.NewTable()
	missing.RawSetString("__index", L.NewFunction(missingGlobal))
	L.SetMetatable(st.globals, missing)
	st.handler = L.NewFunction(st.errorHandler)
	st.loadGlobals = st.libraryAPI()
	L.SetMetatable(st.loadGlobals, missing)
	return st
}

// missingGlobal is the __index of the globals: reading a name that is not
// there is an error.
func missingGlobal(L *lua.LState) int {
	L.RaiseError("Script attempted to access nonexistent global variable '%s'", L.Get(2).String())
	return 0
}

// setLoading makes lib the library FUNCTION LOAD runs (nil: none), and the
// globals its code sees the library API.
func (st *luaState) setLoading(lib *luaLibrary) {
	st.loading = lib
	if lib != nil {
		st.envMeta.RawSetString("__index", st.loadGlobals)
	} else {
		st.envMeta.RawSetString("__index", st.globals)
	}
}

// readonly returns a read-only proxy of t.
func (st *luaState) readonly(t *lua.LTable) *lua.LTable {
	L := st.L
	p := L.NewTable()
	mt := L.NewTable()
	mt.RawSetString("__index", t)
	mt.RawSetString("__newindex", L.NewFunction(readonlyTable))
	mt.RawSetString("__metatable", lua.LFalse)
	L.SetMetatable(p, mt)
	st.protected[p] = true
	return p
}

// guard calls fn (setmetatable, rawset) unless its first argument is a
// protected table.
func (st *luaState) guard(L *lua.LState, fn lua.LValue) int {
	if t, ok := L.Get(1).(*lua.LTable); ok && st.protected[t] {
		L.Error(lua.LString("Attempt to modify a readonly table"), 0)
	}
	top := L.GetTop()
	L.Insert(fn, 1)
	L.Call(top, lua.MultRet)
	return L.GetTop()
}

// readonlyTable is the __newindex of the read-only tables.
func readonlyTable(L *lua.LState) int {
	L.RaiseError("Attempt to modify a readonly table")
	return 0
}

// redisTable builds the redis library.
func (st *luaState) redisTable() *lua.LTable {
	L := st.L
	t := L.NewTable()
	fns := map[string]lua.LGFunction{
		"call":               func(L *lua.LState) int { return st.call(L, true) },
		"pcall":              func(L *lua.LState) int { return st.call(L, false) },
		"error_reply":        luaErrorReply,
		"status_reply":       luaStatusReply,
		"sha1hex":            luaSHA1Hex,
		"log":                luaLog,
		"setresp":            st.setResp,
		"acl_check_cmd":      st.luaACLCheck,
		"set_repl":           luaSetRepl,
		"replicate_commands": func(L *lua.LState) int { L.Push(lua.LTrue); return 1 },
		"breakpoint":         func(L *lua.LState) int { L.Push(lua.LFalse); return 1 },
		"debug":              func(L *lua.LState) int { return 0 },
	}
	for name, fn := range fns {
		t.RawSetString(name, L.NewFunction(fn))
	}
	for name, v := range map[string]int{
		"LOG_DEBUG": 0, "LOG_VERBOSE": 1, "LOG_NOTICE": 2, "LOG_WARNING": 3,
		"REPL_NONE": 0, "REPL_AOF": 1, "REPL_SLAVE": 2, "REPL_REPLICA": 2, "REPL_ALL": 3,
	} {
		t.RawSetString(name, lua.LNumber(v))
	}
	t.RawSetString("REDIS_VERSION", lua.LString(Version))
	t.RawSetString("REDIS_VERSION_NUM", lua.LNumber(versionNum(Version)))
	return t
}

// versionNum is a "major.minor.patch" version as Redis's 0x00MMmmpp.
func versionNum(v string) int {
	n := 0
	for _, p := range strings.SplitN(v, ".", 3) {
		x, _ := strconv.Atoi(p)
		n = n<<8 | x
	}
	return n
}

func luaErrorReply(L *lua.LState) int {
	if L.GetTop() != 1 || L.Get(1).Type() != lua.LTString {
		luaError(L, "ERR "+"wrong number or type of arguments")
	}
	t := L.NewTable()
	t.RawSetString("err", lua.LString(errorText(L.ToString(1))))
	L.Push(t)
	return 1
}

// errorText gives an error message an error code as Redis's
// luaPushErrorBuff does: a leading '-' is dropped, and a message of one
// word gets ERR.
func errorText(msg string) string {
	msg = strings.TrimRight(msg, "\r\n")
	if m, ok := strings.CutPrefix(msg, "-"); ok {
		if !strings.Contains(m, " ") {
			return "ERR " + m
		}
		return m
	}
	if msg == "" || !strings.Contains(msg, " ") {
		return "ERR " + msg
	}
	return msg
}

func luaStatusReply(L *lua.LState) int {
	if L.GetTop() != 1 || L.Get(1).Type() != lua.LTString {
		luaError(L, "ERR "+"wrong number or type of arguments")
	}
	t := L.NewTable()
	t.RawSetString("ok", L.Get(1))
	L.Push(t)
	return 1
}

func luaSHA1Hex(L *lua.LState) int {
	if L.GetTop() != 1 {
		luaError(L, "ERR "+"wrong number of arguments")
	}
	L.Push(lua.LString(sha1hex(L.ToString(1))))
	return 1
}

func luaLog(L *lua.LState) int {
	if L.GetTop() < 2 {
		luaError(L, "ERR "+"redis.log() requires two arguments or more.")
	}
	if L.Get(1).Type() != lua.LTNumber {
		luaError(L, "ERR "+"First argument must be a number (log level).")
	}
	if lvl := int(L.ToNumber(1)); lvl < 0 || lvl > 3 {
		luaError(L, "ERR "+"Invalid debug level.")
	}
	return 0
}

func luaSetRepl(L *lua.LState) int {
	if L.GetTop() != 1 {
		luaError(L, "ERR "+"redis.set_repl() requires one argument.")
	}
	if f := int(L.ToNumber(1)); f < 0 || f > 3 {
		luaError(L, "ERR "+"Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.")
	}
	return 0
}

func (st *luaState) setResp(L *lua.LState) int {
	if L.GetTop() != 1 {
		luaError(L, "ERR "+"redis.setresp() requires one argument.")
	}
	v := int(L.ToNumber(1))
	if v != 2 && v != 3 {
		luaError(L, "ERR "+"RESP version must be 2 or 3.")
	}
	st.run.resp = v
	return 0
}

// luaError raises the error table {err=msg}, as Redis does for a failed
// redis.call.
// errStatsCounted is the field Redis adds to the error table of a command's
// error reply inside a script, read when the script answers with it.
const errStatsCounted = "ignore_error_stats_update"

// errorCounted reports whether v is an error table of a command's reply,
// already counted in INFO errorstats.
func errorCounted(v lua.LValue) bool {
	t, ok := v.(*lua.LTable)
	return ok && t.RawGetString(errStatsCounted) == lua.LTrue
}

func luaError(L *lua.LState, msg string) {
	t := L.NewTable()
	t.RawSetString("err", lua.LString(msg))
	L.Error(t, 0)
}

// call is redis.call (raise) and redis.pcall: it checks the command as
// Redis's scriptCall does, runs it through the dispatcher under the
// script's locks and converts its reply.
func (st *luaState) call(L *lua.LState, raise bool) int {
	fail := func(msg string) int {
		if raise {
			luaError(L, msg)
		}
		t := L.NewTable()
		t.RawSetString("err", lua.LString(msg))
		L.Push(t)
		return 1
	}
	n := L.GetTop()
	if n == 0 {
		return fail("ERR Please specify at least one argument for this redis lib call")
	}
	// The arguments are copied into one buffer the state reuses: the
	// command may not keep them, and they cost no allocation.
	buf := st.argBuf[:0]
	ends := st.argEnds[:0]
	for i := 1; i <= n; i++ {
		switch v := L.Get(i).(type) {
		case lua.LString:
			buf = append(buf, v...)
		case lua.LNumber:
			buf = appendLuaNumber(buf, float64(v))
		default:
			return fail("ERR Lua redis lib command arguments must be strings or integers")
		}
		ends = append(ends, len(buf))
	}
	st.argBuf, st.argEnds = buf, ends
	args := st.args[:0]
	start := 0
	for _, end := range ends {
		args = append(args, buf[start:end:end])
		start = end
	}
	st.args = args
	run := st.run
	s := run.s
	cmd := st.lastCmd
	if cmd == nil || !resp.EqualFold(args[0], cmd.Name) {
		cmd = s.srv.table.Lookup(args[0])
		st.lastCmd = cmd
	}
	if cmd != nil && cmd.subs != nil && len(args) >= 2 {
		cmd = cmd.Sub(args[1])
	}
	if msg := st.refusal(cmd, args); msg != "" {
		return st.reject(L, cmd, msg, raise)
	}
	if s.oom && cmd.Flags&FlagDenyOOM != 0 && !run.wrote.Load() && s.srv.mem.limit.Load() != 0 {
		// Out of memory when the script started: its first write may not
		// grow memory (Redis's scriptVerifyOOM).
		return st.oomError(L, cmd, raise)
	}
	if cmd.Name == "select" && !s.lockSelected(args[1]) {
		return st.reject(L, cmd, "ERR SELECT from a script to a database it has not locked: name SELECT in the script's code", raise)
	}
	savedW, savedArgs := s.W, s.Args
	st.w.B, st.w.Proto = st.w.B[:0], run.resp
	s.W, s.Args = st.w, args
	if s.scoped() && !scopeCheck(s, cmd) {
		// An out-of-scope key or command aborts the whole script, before
		// the command runs: no pcall catches it.
		v, _, _ := resp.ParseValue(s.W.B)
		s.W, s.Args = savedW, savedArgs
		run.fatal = string(v.Str)
		run.cancel()
		luaError(L, run.fatal)
	}
	if cmd.Flags&FlagWrite != 0 {
		if s.scriptHold != nil && !s.scriptHold.save(s, cmd) {
			s.W, s.Args = savedW, savedArgs
			return fail("ERR a key of this type cannot be written by a scoped script")
		}
		run.wrote.Store(true)
	}
	s.lastCmd.Store(cmd)
	s.inScript = true
	s.callLocked(cmd)
	s.inScript = false
	st.w = s.W
	s.W, s.Args = savedW, savedArgs
	if lv := quickLua(st.w.B); lv != nil {
		L.Push(lv)
		return 1
	}
	v, _, err := resp.ParseValue(st.w.B)
	if err != nil {
		return fail("ERR " + err.Error())
	}
	if v.IsError() && raise {
		L.Error(st.toLua(v), 0)
	}
	L.Push(st.toLua(v))
	return 1
}

// refusal is the error of a redis.call that may not run cmd with args
// (nil cmd: an unknown command), "" when it may, in Redis's order of
// checks (scriptCall).
func (st *luaState) refusal(cmd *Command, args [][]byte) string {
	run := st.run
	s := run.s
	switch {
	case cmd == nil:
		return "ERR Unknown Redis command called from script"
	case !cmd.checkArity(len(args)):
		return "ERR Wrong number of args calling Redis command from script"
	case cmd.Flags&FlagNoScript != 0:
		return "ERR This Redis command is not allowed from script"
	}
	if msg := s.aclScriptDenial(cmd, args); msg != "" {
		return msg
	}
	switch {
	case s.WS && cmd.Flags&(FlagNoWS|FlagAdmin|FlagDangerous) != 0:
		return errNoPermWS
	case cmd.Flags&(FlagWrite|FlagMayReplicate) != 0 && run.readonly:
		return "ERR " + errScriptReadonly
	case cmd.Flags&FlagWrite != 0 && s.srv.replica.gate.Load()&gateReadOnly != 0 && !s.srv.isReplicaMaster(s):
		return errReadOnlyReplica
	case cmd.Flags&FlagWrite != 0 && !run.wrote.Load() && s.scriptLacksReplicas():
		// A script without flags is refused at its first write; once it
		// wrote, it runs to its end (repl_good.go).
		return errNoReplicas
	case run.narrow && !s.holdKeys(cmd, args):
		return "ERR a script touched a key it did not declare while another client held it"
	case (cmd.Name == "xread" || cmd.Name == "xreadgroup") && blockOption(args):
		return "ERR " + cmd.Name + " command is not allowed with BLOCK option from scripts"
	}
	return ""
}

// reject answers a redis.call refused before it ran, as Redis's scriptCall
// does: the error is counted in INFO errorstats now, and cmd's
// rejected_calls, and the error table is marked counted so that the
// script's reply of it does not count it again. It raises the error for
// redis.call and returns it for redis.pcall.
func (st *luaState) reject(L *lua.LState, cmd *Command, msg string, raise bool) int {
	if cmd != nil {
		cmd.stats.rejected.Add(1)
	}
	st.run.s.srv.countError([]byte("-" + msg + "\r\n"))
	t := L.CreateTable(0, 2)
	t.RawSetString("err", lua.LString(msg))
	t.RawSetString(errStatsCounted, lua.LTrue)
	if raise {
		L.Error(t, 0)
	}
	L.Push(t)
	return 1
}

// luaACLCheck is redis.acl_check_cmd(command, args…): whether the user
// running the script may run the command with those arguments, keys
// included.
func (st *luaState) luaACLCheck(L *lua.LState) int {
	n := L.GetTop()
	if n == 0 {
		luaError(L, "ERR Please specify at least one argument for this redis lib call")
	}
	args := make([][]byte, 0, n)
	for i := 1; i <= n; i++ {
		switch v := L.Get(i).(type) {
		case lua.LString:
			args = append(args, []byte(v))
		case lua.LNumber:
			args = append(args, appendLuaNumber(nil, float64(v)))
		default:
			luaError(L, "ERR Lua redis lib command arguments must be strings or integers")
		}
	}
	s := st.run.s
	cmd := s.srv.table.Lookup(args[0])
	if cmd != nil && cmd.subs != nil && len(args) >= 2 {
		cmd = cmd.Sub(args[1])
	}
	if cmd == nil || !cmd.checkArity(len(args)) {
		luaError(L, "ERR Invalid command passed to redis.acl_check_cmd()")
	}
	// The check alone: unlike a refused call, it logs nothing to ACL LOG.
	ok := true
	if lim := s.user.Load().limits.Load(); lim != nil {
		reason, _ := s.srv.acl.check(lim, cmd, args)
		ok = reason == aclOK
	}
	L.Push(lua.LBool(ok))
	return 1
}

// quickLua converts the most common replies, an integer or a bulk string
// that is the whole of b, without parsing b into a resp.Value; nil when b
// is anything else.
func quickLua(b []byte) lua.LValue {
	if len(b) < 4 || b[len(b)-2] != '\r' || b[len(b)-1] != '\n' {
		return nil
	}
	switch b[0] {
	case ':':
		line := b[1 : len(b)-2]
		if bytes.IndexByte(line, '\r') >= 0 {
			return nil
		}
		n, ok := resp.ParseInt(line)
		if !ok {
			return nil
		}
		return luaInteger(n)
	case '$':
		i := bytes.IndexByte(b, '\r')
		n, ok := resp.ParseInt(b[1:i])
		if !ok || n < 0 || i+2+int(n)+2 != len(b) {
			return nil
		}
		return lua.LString(b[i+2 : i+2+int(n)])
	}
	return nil
}

// luaInteger returns the Lua number n. The integers most replies are
// (0, 1, small counts and lengths) come boxed already: an LNumber made
// into an LValue is otherwise an allocation, on every redis.call that
// answers one.
func luaInteger(n int64) lua.LValue {
	if n >= -1 && n < int64(len(smallLuaInts))-1 {
		return smallLuaInts[n+1]
	}
	return lua.LNumber(n)
}

// smallLuaInts holds the boxed numbers -1 to 1022, made once and only
// read after.
var smallLuaInts = func() (t [1024]lua.LValue) {
	for i := range t {
		t[i] = lua.LNumber(i - 1)
	}
	return t
}()

// mentionsSelect reports whether a script's code names SELECT, in any
// case: such a script locks every database (LOCKS.md).
func mentionsSelect(code string) bool {
	return strings.Contains(strings.ToLower(code), "select")
}

// lockAllDBs widens the running script's lock set, the session's database,
// to every database before the script starts. Outside EXEC and DEDUP the
// locks are dropped and retaken in order (nothing has run yet); inside,
// only databases above the locked ones can be added, and it reports false
// when a lower one is missing.
func (s *Session) lockAllDBs() bool {
	all := uint64(1)<<len(s.masks) - 1
	if s.lockDB == all {
		return true
	}
	if !s.inExec && !s.inDedup {
		s.unlock()
		for i := range s.masks {
			s.masks[i] = ^uint64(0)
		}
		s.lockDB = all
		s.lock()
		return true
	}
	top := bits.Len64(s.lockDB) - 1
	for i := 0; i <= top; i++ {
		if s.masks[i] != ^uint64(0) {
			return false
		}
	}
	for i := top + 1; i < len(s.masks); i++ {
		s.lockWholeDB(i)
	}
	return true
}

// lockWholeDB adds every shard of database i to the lock set and locks
// them. The caller holds only shards of lower databases.
func (s *Session) lockWholeDB(i int) {
	db := s.srv.ks.DBs[i]
	for sh := 0; sh < keyspace.NumShards; sh++ {
		if s.masks[i]&(1<<sh) == 0 {
			db.Shard(sh).Lock()
		}
	}
	s.masks[i] = ^uint64(0)
	s.lockDB |= 1 << i
}

// lockSelected makes sure a SELECT run by a script names a database whose
// shards the script holds: one above every database it holds is locked now
// (lock order allows it); one below, or one partly held, is refused.
func (s *Session) lockSelected(arg []byte) bool {
	n, msg := parseDBIndex(arg, len(s.srv.ks.DBs))
	if msg != "" || s.lockDB&(1<<n) != 0 && s.masks[n] == ^uint64(0) {
		return true // SELECT replies its own error
	}
	if s.lockDB != 0 && n <= bits.Len64(s.lockDB)-1 {
		return false
	}
	s.lockWholeDB(n)
	return true
}

// blockOption reports whether XREAD or XREADGROUP arguments have BLOCK
// before STREAMS.
func blockOption(args [][]byte) bool {
	for _, a := range args[1:] {
		switch {
		case resp.EqualFold(a, "streams"):
			return false
		case resp.EqualFold(a, "block"):
			return true
		}
	}
	return false
}

// appendLuaNumber formats a number argument of redis.call as Redis's
// fpconv_dtoa does: the shortest text that reads back as the same double,
// integers without an exponent.
func appendLuaNumber(b []byte, f float64) []byte {
	if f == math.Trunc(f) && math.Abs(f) < 1e21 {
		return strconv.AppendFloat(b, f, 'f', -1, 64)
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}

// toLua converts a command's reply to Lua as Redis documents: integers to
// numbers, bulk strings to strings, a nil bulk or array to false, arrays to
// tables, status replies to {ok=…}, errors to {err=…}; the RESP3 types (after
// redis.setresp(3)) to {map=…}, {set=…}, {double=…}, {big_number=…},
// booleans and nil.
func (st *luaState) toLua(v resp.Value) lua.LValue {
	L := st.L
	switch v.Kind {
	case ':':
		return luaInteger(v.Int)
	case '$':
		if v.Null {
			return lua.LFalse
		}
		return lua.LString(v.Str)
	case '+':
		t := L.CreateTable(0, 1)
		t.RawSetString("ok", lua.LString(v.Str))
		return t
	case '-', '!':
		t := L.CreateTable(0, 2)
		t.RawSetString("err", lua.LString(v.Str))
		// The command's error reply was counted in INFO errorstats when
		// it was written; the mark, as Redis sets it, keeps the script's
		// reply of this error from counting it again.
		t.RawSetString(errStatsCounted, lua.LTrue)
		return t
	case '*', '>':
		if v.Null {
			return lua.LFalse
		}
		t := L.CreateTable(len(v.Elems), 0)
		for i, e := range v.Elems {
			t.RawSetInt(i+1, st.toLua(e))
		}
		return t
	case '%':
		m := L.CreateTable(0, len(v.Elems)/2)
		for i := 0; i+1 < len(v.Elems); i += 2 {
			m.RawSet(st.toLua(v.Elems[i]), st.toLua(v.Elems[i+1]))
		}
		t := L.CreateTable(0, 1)
		t.RawSetString("map", m)
		return t
	case '~':
		m := L.CreateTable(0, len(v.Elems))
		for _, e := range v.Elems {
			m.RawSet(st.toLua(e), lua.LTrue)
		}
		t := L.CreateTable(0, 1)
		t.RawSetString("set", m)
		return t
	case '_':
		return lua.LNil
	case '#':
		return lua.LBool(v.Int != 0)
	case ',':
		f, _ := v.Float()
		t := L.CreateTable(0, 1)
		t.RawSetString("double", lua.LNumber(f))
		return t
	case '(':
		t := L.CreateTable(0, 1)
		t.RawSetString("big_number", lua.LString(v.Str))
		return t
	case '=':
		format, text := "txt", string(v.Str)
		if len(text) >= 4 && text[3] == ':' {
			format, text = text[:3], text[4:]
		}
		vs := L.CreateTable(0, 2)
		vs.RawSetString("format", lua.LString(format))
		vs.RawSetString("string", lua.LString(text))
		t := L.CreateTable(0, 1)
		t.RawSetString("verbatim_string", vs)
		return t
	}
	return lua.LNil
}

// writeReply converts a script's return value to a reply in w's protocol:
// numbers to integers (truncated), strings to bulk strings, true to 1 and
// false to null (booleans after redis.setresp(3)), nil to null, tables to arrays up to their
// first nil, {ok=…} to a status, {err=…} to an error, and {double=…},
// {map=…}, {set=…}, {big_number=…}.
func writeReply(w *resp.Writer, v lua.LValue, luaResp, depth int) {
	if depth > luaMaxDepth {
		w.Error("ERR reached lua stack limit")
		return
	}
	switch v := v.(type) {
	case lua.LNumber:
		w.Int(luaInt(float64(v)))
	case lua.LString:
		w.BulkString(string(v))
	case lua.LBool:
		switch {
		case luaResp == 3:
			w.Bool(bool(v))
		case bool(v):
			w.Int(1)
		default:
			w.Null()
		}
	case *lua.LTable:
		if e, ok := v.RawGetString("err").(lua.LString); ok {
			w.Error(string(e))
			return
		}
		if s, ok := v.RawGetString("ok").(lua.LString); ok {
			w.Simple(string(s))
			return
		}
		if d, ok := v.RawGetString("double").(lua.LNumber); ok {
			w.Double(float64(d))
			return
		}
		if b, ok := v.RawGetString("big_number").(lua.LString); ok {
			if w.Proto == 3 {
				w.B = append(w.B, '(')
				w.B = append(w.B, b...)
				w.B = append(w.B, '\r', '\n')
			} else {
				w.BulkString(string(b))
			}
			return
		}
		if m, ok := v.RawGetString("map").(*lua.LTable); ok {
			var kv []lua.LValue
			m.ForEach(func(k, val lua.LValue) { kv = append(kv, k, val) })
			w.Map(len(kv) / 2)
			for _, x := range kv {
				writeReply(w, x, luaResp, depth+1)
			}
			return
		}
		if set, ok := v.RawGetString("set").(*lua.LTable); ok {
			var ks []lua.LValue
			set.ForEach(func(k, _ lua.LValue) { ks = append(ks, k) })
			w.Set(len(ks))
			for _, x := range ks {
				writeReply(w, x, luaResp, depth+1)
			}
			return
		}
		n := 0
		for v.RawGetInt(n+1) != lua.LNil {
			n++
		}
		w.Array(n)
		for i := 1; i <= n; i++ {
			writeReply(w, v.RawGetInt(i), luaResp, depth+1)
		}
	default:
		w.Null()
	}
}

// luaInt truncates a Lua number to an integer as C's (long long) cast does.
func luaInt(f float64) int64 {
	switch {
	case math.IsNaN(f):
		return math.MinInt64
	case f >= math.MaxInt64:
		return math.MinInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

// errorHandler is the message handler of a script's pcall: it turns what
// was raised into {err=…, line=…}, the line being the script's current line
// where the error happened.
func (st *luaState) errorHandler(L *lua.LState) int {
	obj := L.Get(1)
	msg := ""
	if t, ok := obj.(*lua.LTable); ok {
		if e, ok := t.RawGetString("err").(lua.LString); ok {
			msg = string(e)
		}
	}
	if msg == "" {
		text := obj.String()
		if s, ok := obj.(lua.LString); ok {
			text = luaFaultText(L, 1, string(s))
		}
		msg = "ERR " + text
	}
	if run := st.run; run != nil {
		switch {
		case run.fatal != "":
			msg = run.fatal
		case run.killed.Load():
			msg = errScriptKilled
		}
	}
	out := L.NewTable()
	out.RawSetString("err", lua.LString(msg))
	if t, ok := obj.(*lua.LTable); ok && t.RawGetString(errStatsCounted) == lua.LTrue {
		out.RawSetString(errStatsCounted, lua.LTrue)
	}
	for level := 0; level < 100; level++ {
		dbg, ok := L.GetStack(level)
		if !ok {
			break
		}
		if _, err := L.GetInfo("Sl", dbg, lua.LNil); err == nil && dbg.CurrentLine > 0 {
			out.RawSetString("source", lua.LString(dbg.Source))
			out.RawSetString("line", lua.LNumber(dbg.CurrentLine))
			break
		}
	}
	L.Push(out)
	return 1
}

// newScriptRun returns the state of a script about to run for s.
func newScriptRun(s *Session) *scriptRun {
	return &scriptRun{s: s, start: s.srv.clock(), resp: 2}
}

// commandStart is the start of the timed command cmd, by srv.clock(): for
// a script command whose run startScript registered, the run's start, read
// as the run was registered just before (the wait for the shards
// included), which saves a clock read per script.
func (s *Session) commandStart(cmd *Command) time.Duration {
	if run := s.script; run != nil && cmd.Flags&FlagRunsScript != 0 {
		return run.start
	}
	return s.srv.clock()
}

// clock is the time since the server started, from the monotonic clock
// alone: one clock read where time.Now takes two (the wall clock too),
// for durations measured on every script and timed command.
func (srv *Server) clock() time.Duration { return time.Since(srv.start) }

// finish marks the run over: the other sessions stop waiting for it.
func (e *scriptEngine) finish(run *scriptRun) {
	e.running.CompareAndSwap(run, nil)
	run.end()
}

// runScript runs a cached script for s with keys and argv (the globals
// KEYS and ARGV), and writes its reply to s.W. The caller holds every shard
// lock.
func (srv *Server) runScript(s *Session, sc *luaScript, keys, argv [][]byte, readonly bool) {
	e := &srv.scripts
	st := e.get()
	st.keys.fill(st, "KEYS", keys)
	st.argv.fill(st, "ARGV", argv)
	fn := st.fns[sc]
	if fn == nil {
		fn = st.L.NewFunctionFromProto(st.folded(sc.proto))
		fn.Env = st.env
		st.fns[sc] = fn
	}
	defer func() {
		if r := recover(); r != nil {
			// A panic out of the interpreter may leave st inconsistent:
			// it is dropped, not pooled.
			st.L.Close()
			panic(r)
		}
	}()
	srv.runLua(s, st, fn, &sc.name, readonly)
	e.put(st)
}

// luaArray is a Lua array of byte strings that an interpreter state keeps
// from one script to the next (KEYS, ARGV): Redis makes new tables for
// every call, but a script cannot tell the difference as long as the
// table it gets holds exactly the call's strings, so the table and the
// Lua strings of repeated arguments are reused.
type luaArray struct {
	t    *lua.LTable
	vals []lua.LValue // t's elements as set last, to reuse equal strings
	last lua.LValue   // LNumber(len(vals)), boxed once
}

// fill makes a the global name holding strs. A table the last script
// changed beyond its elements (new keys, a metatable, a longer array) is
// not reused; the state's code, which reads the global as a constant
// (script_fold.go), is then folded again. The global itself is read-only,
// as the others.
func (a *luaArray) fill(st *luaState, name string, strs [][]byte) {
	n := len(a.vals)
	if a.t == nil || a.t.Metatable != lua.LNil || a.changed(n) {
		a.t = st.L.CreateTable(len(strs), 0)
		a.vals = a.vals[:0]
		n = 0
		st.globals.RawSetString(name, a.t)
		clear(st.fns)
	}
	for i, b := range strs {
		if i < n {
			if old, ok := a.vals[i].(lua.LString); ok && string(old) == string(b) {
				a.t.RawSetInt(i+1, a.vals[i]) // the boxed value: no allocation
				continue
			}
		}
		v := lua.LValue(lua.LString(b))
		if i < n {
			a.vals[i] = v
		} else {
			a.vals = append(a.vals, v)
		}
		a.t.RawSetInt(i+1, v)
	}
	for i := len(strs); i < n; i++ {
		a.t.RawSetInt(i+1, lua.LNil)
	}
	clear(a.vals[len(strs):])
	a.vals = a.vals[:len(strs)]
	if len(strs) != n || a.last == nil {
		a.last = lua.LNumber(len(strs))
	}
}

// changed reports whether the table holds anything after its first n
// elements.
func (a *luaArray) changed(n int) bool {
	var k lua.LValue = lua.LNil
	if n > 0 {
		k = a.last
	}
	k, _ = a.t.Next(k)
	return k != lua.LNil
}

// runLua calls fn in st with the given arguments already pushed (nargs of
// them) and writes its reply to s.W. A script started by startScript has
// its run registered already; one run inline (inside EXEC, or by a session
// without a transport) registers itself here.
func (srv *Server) runLua(s *Session, st *luaState, fn *lua.LFunction, name *scriptName, readonly bool, args ...lua.LValue) {
	e := &srv.scripts
	run := s.script
	if run == nil {
		run = newScriptRun(s)
		prev := e.running.Swap(run)
		defer func() {
			e.running.CompareAndSwap(run, prev)
			run.end()
		}()
	}
	s.script = nil
	run.readonly = readonly
	run.name.Store(name)
	st.run = run
	L := st.L
	run.attach(st)
	L.SetContext(run)
	db, inExec := s.DBIndex, s.inExec
	s.inExec = true
	// The replicas get the script's effects as one MULTI … EXEC
	// (repl_dedup.go), closed before the script's shards are unlocked.
	// Registered before the hold below, so that a held script's effects
	// are released inside the unit.
	o := s
	if s.scriptOf != nil {
		o = s.scriptOf
	}
	o.replWrap.Add(1)
	defer func() {
		if o.replWrap.Add(-1) == 0 {
			srv.endUnit(o)
		}
	}()
	if s.scope != nil && s.scriptHold == nil {
		// A scoped session's script shows nothing until it ends: an
		// out-of-scope key must find nothing written (script_hold.go).
		hold := &scriptHold{emitted: s.emitted}
		s.scriptHold = hold
		defer func() {
			s.scriptHold = nil
			if run.fatal != "" {
				hold.undo(s)
			} else {
				hold.release(s)
			}
		}()
	}
	defer func() {
		// Also after a panic: the session must not stay in the script's
		// lock mode or database.
		s.inExec = inExec
		if s.DBIndex != db {
			s.selectDB(db)
		}
		st.run = nil
		run.release(st)
	}()
	L.Push(fn)
	for _, a := range args {
		L.Push(a)
	}
	err := L.PCall(len(args), 1, st.handler)
	L.RemoveContext()
	if err != nil {
		var ae *lua.ApiError
		if errors.As(err, &ae) && run.fatal == "" && !run.killed.Load() {
			s.errCounted = errorCounted(ae.Object)
		}
		s.W.Error(scriptError(err, run))
		L.SetTop(0)
	} else {
		ret := L.Get(-1)
		s.errCounted = errorCounted(ret)
		writeReply(&s.W, ret, run.resp, 0)
		L.Pop(1)
	}
}

// isScriptCall reports whether cmd, run with the session's arguments, runs
// a script: EVAL and its kin, DEDUP-wrapped or not. The wrapped command is
// found through the session's lookup cache, which DEDUP then hits.
func (s *Session) isScriptCall(cmd *Command) bool {
	if cmd.Wraps > 0 && len(s.Args) > cmd.Wraps {
		if cmd = s.lookup(s.Args[cmd.Wraps], true); cmd == nil {
			return false
		}
	}
	return cmd.Flags&FlagRunsScript != 0
}

// startScript runs a script command on the script worker goroutine
// (runScripts), not the transport's, and waits for it there: a script that
// ends within busy-reply-threshold (nearly all of them) is answered inline,
// as any other command, and the transport goes on with the connection's
// pipeline. One still running at the threshold detaches: the transport's
// goroutine goes back to serving its other connections, which then get
// -BUSY and can SCRIPT KILL it, and the session waits as in a blocking pop
// and gets its reply the same way (blocking.go). Until then the transport
// waits as the other sessions of its event loop would (waitScript).
//
// The run is registered before the shard locks are taken, so that no
// session checks for a running script, finds none and then waits on a
// shard lock behind it.
func (s *Session) startScript(cmd *Command) {
	e := &s.srv.scripts
	w := s.scriptSession()
	run := newScriptRun(w)
	for !e.running.CompareAndSwap(nil, run) {
		if other := e.running.Load(); other != nil && !s.waitScript(other, cmd) {
			run.cancel()
			return
		}
		run.start = s.srv.clock() // the wait is not the run's
	}
	// The arguments are copied into the script session's buffer: a run
	// that detaches outlives the transport's read buffer.
	job := w.job
	job.args = job.args[:0]
	for _, a := range s.Args {
		job.args = append(job.args, a...)
	}
	w.Args = w.Args[:0]
	off := 0
	for _, a := range s.Args {
		w.Args = append(w.Args, job.args[off:off+len(a):off+len(a)])
		off += len(a)
	}
	w.DBIndex, w.db = s.DBIndex, s.db
	w.authed, w.scope, w.W.Proto = s.authed, s.scope, s.W.Proto
	// The user and the tracking state (the script's reads and writes are
	// the connection's, tracking.go) are stored only when they changed:
	// an atomic store costs more than the load.
	if u := s.user.Load(); w.user.Load() != u {
		w.user.Store(u)
	}
	if t := s.trk.Load(); w.trk.Load() != t {
		w.trk.Store(t)
	}
	w.chanScope = s.chanScope
	w.script, w.oom = run, s.oom
	job.cmd, run.conn = cmd, s
	if job.following {
		// A script after one the worker ran, in the same input: it runs
		// here, in order (runFollowing).
		w.callScript(cmd)
		e.finish(run)
		if run.detached {
			job.detached = true // answered by runFollowing
			return
		}
		s.W.Raw(w.W.B)
		w.W.B = w.W.B[:0]
		return
	}
	select {
	case e.jobs <- w:
	default:
		go e.runScripts(w)
	}
	if !<-job.settle {
		return // detached: the session is blocked (detach)
	}
	s.W.Raw(w.W.B)
	w.W.B = w.W.B[:0]
}

// Pipeline is a transport's read-ahead of a connection's input. After a
// script it ran, the script worker runs the scripts that follow it in the
// input itself, while the transport still waits for the first: a pipeline
// of scripts costs one hand-over between goroutines, not one per script.
type Pipeline interface {
	// Peek returns the next complete request after the one running, nil
	// when there is none.
	Peek() [][]byte
	// Advance consumes the request Peek returned.
	Advance()
}

// SetPipeline gives the session its transport's read-ahead; a transport
// without one never calls it.
func (s *Session) SetPipeline(p Pipeline) { s.pipe = p }

// runFollowing runs, on the script worker, the script requests that follow
// the one just run in the connection's input s, until one is not a script,
// the input runs out or a script detaches. Replies go to the session's
// writer in order; the transport, still waiting, sends them. It reports
// whether a script detached: the connection was then handed back (detach)
// and its reply given as a blocked session's, the last thing done with s.
func (e *scriptEngine) runFollowing(s *Session) bool {
	if s.pipe == nil {
		return false
	}
	w := s.scriptSess
	job := w.job
	s.W.Raw(w.W.B)
	w.W.B = w.W.B[:0]
	job.following = true
	for len(s.W.B) < maxFollowingOutput && !s.Dropped() && s.multi == nil && s.reply == replyOn && s.srv.pause.mode.Load() == pauseNone {
		args := s.pipe.Peek()
		if args == nil {
			break
		}
		cmd := s.lookup(args[0], false)
		if cmd == nil || cmd.Flags&FlagRunsScript == 0 || cmd.Wraps > 0 {
			break
		}
		s.pipe.Advance()
		// exec, not Exec: with replies on, Exec adds nothing a script
		// can change (CLIENT REPLY is not allowed in one).
		s.exec(args)
		if job.detached {
			break
		}
	}
	job.following = false
	if !job.detached {
		return false
	}
	job.detached = false
	e.answer(w, s)
	return true
}

// maxFollowingOutput bounds the replies runFollowing gathers before the
// transport writes them.
const maxFollowingOutput = 64 << 10

// scriptJob is what a script session holds for startScript: the script
// command to run, the bytes of its arguments (a run that detaches outlives
// the transport's read buffer) and the channel the connection waits on.
type scriptJob struct {
	cmd *Command
	// sc is the script of an EVAL or EVALSHA, found by callScript before
	// it locked, for cmdEval; nil when not looked up.
	sc     *luaScript
	args   []byte
	settle chan bool
	// following is set while runFollowing runs the connection's next
	// scripts on the worker; detached, when one of them detached.
	following, detached bool
	// last is the script the session ran last, of cache generation
	// lastGen: a connection repeating a script finds it without hashing
	// its body or decoding its SHA1 (evalScript).
	last    *luaScript
	lastGen uint64
}

// runScripts is the script worker: it runs the script of w, then the
// scripts startScript hands it, and ends once idle for a while.
func (e *scriptEngine) runScripts(w *Session) {
	idle := time.NewTimer(time.Hour)
	for {
		e.runJob(w)
		idle.Reset(scriptWorkerIdle)
		select {
		case w = <-e.jobs:
			idle.Stop()
		case <-idle.C:
			return
		}
	}
}

// scriptWorkerIdle is how long the script worker waits for the next script
// before it ends.
const scriptWorkerIdle = 10 * time.Second

// runJob runs the script command of the script session w and answers the
// connection: through its job's settle while it waits, as a blocked session's
// reply once the run detached.
func (e *scriptEngine) runJob(w *Session) {
	run := w.script
	w.callScript(w.job.cmd)
	w.script, w.job.cmd = nil, nil
	e.finish(run)
	if !run.detached {
		if !e.runFollowing(run.conn) {
			w.job.settle <- true
		}
		return
	}
	e.answer(w, run.conn)
}

// answer gives the connection s the reply of its script that detached, as
// a blocked session's, from its script session w.
func (e *scriptEngine) answer(w, s *Session) {
	s.blockReply = append(s.blockReply[:0], w.W.B...)
	w.W.B = w.W.B[:0]
	s.blocked.Store(blockServed)
	s.conn.Wake()
}

// callScript runs the script command cmd of the script session w, as
// call does. The script of an EVAL or EVALSHA is looked up first: one
// whose code touches only its declared keys (script_keys.go) locks only
// their shards, any other the whole database as the command table says.
func (w *Session) callScript(cmd *Command) {
	sc := w.evalScript(cmd)
	w.job.sc = sc
	if sc == nil || !sc.narrow {
		w.call(cmd)
		w.job.sc = nil
		return
	}
	db := w.DBIndex
	for _, k := range evalKeys(w.Args) {
		w.masks[db] |= 1 << w.srv.ks.ShardOf(k)
		w.lockDB |= 1 << db
	}
	w.script.narrow = true
	w.lock()
	w.callLocked(cmd)
	w.unlock()
	w.job.sc = nil
	w.srv.serveReady()
}

// evalScript returns the script an EVAL, EVALSHA or their _RO forms runs
// with the session's arguments, nil for any other command or when there is
// none (cmdEval then answers the error).
func (s *Session) evalScript(cmd *Command) *luaScript {
	e := &s.srv.scripts
	job := s.job
	gen := e.gen.Load() // before the lookup: a flush after it shows
	var sc *luaScript
	switch cmd.Name {
	case "evalsha", "evalsha_ro":
		// Clients send the SHA1 as SCRIPT LOAD answered it, in lower
		// case: the plain comparison is tried first.
		if l := job.last; l != nil && job.lastGen == gen && (string(s.Args[1]) == l.sha || resp.EqualFold(s.Args[1], l.sha)) {
			return l
		}
		sc = e.lookup(s.Args[1])
	case "eval", "eval_ro":
		if l := job.last; l != nil && job.lastGen == gen && string(s.Args[1]) == l.body {
			return l
		}
		sc, _ = e.load(s.Args[1], s.srv.table)
	default:
		return nil
	}
	if sc != nil {
		job.last, job.lastGen = sc, gen
	}
	return sc
}

// holdKeys reports whether a narrow run holds the shards of the keys cmd
// touches with args. The proof of script_keys.go says it always does; were
// it wrong, the command is refused rather than run on a shard another
// client may hold.
func (s *Session) holdKeys(cmd *Command, args [][]byte) bool {
	if cmd.Flags&(FlagAllKeys|FlagAllDBs) != 0 || cmd.PatternKeys != nil && cmd.PatternKeys(args) {
		return false
	}
	s.keys = cmd.KeyArgs(s.keys[:0], args)
	for _, k := range s.keys {
		if s.masks[s.DBIndex]&(1<<s.srv.ks.ShardOf(k)) == 0 {
			return false
		}
	}
	return true
}

// detach, called by the script's own goroutine once it has run past
// busy-reply-threshold, hands the connection back to its transport: the
// session waits as blocked, and the reply comes as a blocked command's.
// A run not started by startScript, or already detached, is left alone.
func (run *scriptRun) detach() {
	if run.conn == nil || run.detached {
		return
	}
	run.detached = true
	run.conn.blocked.Store(blockWaiting)
	run.s.job.settle <- false
}

// scriptSession returns the session a script of s runs in: a copy of the
// connection's identity and rights with a writer of its own, made once per
// connection. The script's effects name it as their origin, so that the
// connection's sync subscription hears of the script's writes as of
// anybody's.
func (s *Session) scriptSession() *Session {
	if s.scriptSess == nil {
		s.scriptSess = &Session{srv: s.srv, ID: s.ID, WS: s.WS, created: s.created, masks: make([]uint64, len(s.masks)), scriptOf: s,
			job: &scriptJob{settle: make(chan bool, 1)}}
	}
	return s.scriptSess
}

// scriptError is the reply to a script that raised an error: the message,
// then " script: <sha>, on @user_script:<line>." as Redis 7.0 prints it.
func scriptError(err error, run *scriptRun) string {
	if run.fatal != "" {
		return run.fatal
	}
	var ae *lua.ApiError
	if !errors.As(err, &ae) {
		return "ERR " + err.Error()
	}
	t, ok := ae.Object.(*lua.LTable)
	if !ok {
		return "ERR " + ae.Object.String()
	}
	msg := t.RawGetString("err").String()
	if run.killed.Load() {
		msg = errScriptKilled
	}
	var b strings.Builder
	b.WriteString(msg)
	b.WriteString(" script: ")
	b.WriteString(run.named().sha)
	if src, ok := t.RawGetString("source").(lua.LString); ok {
		b.WriteString(", on @")
		b.WriteString(string(src))
		b.WriteString(":")
		b.WriteString(t.RawGetString("line").String())
	}
	b.WriteString(".")
	return b.String()
}

// luaStrings returns a Lua array of the byte strings.
func luaStrings(L *lua.LState, a [][]byte) *lua.LTable {
	t := L.CreateTable(len(a), 0)
	for i, x := range a {
		t.RawSetInt(i+1, lua.LString(x))
	}
	return t
}

// busyThreshold is busy-reply-threshold (lua-time-limit).
func (srv *Server) busyThreshold() time.Duration {
	srv.cfgMu.RLock()
	v, ok := srv.params["busy-reply-threshold"]
	srv.cfgMu.RUnlock()
	ms := int64(5000)
	if ok {
		ms, _ = strconv.ParseInt(v, 10, 64)
	}
	return time.Duration(ms) * time.Millisecond
}

// waitScript is called by a session about to run cmd while another
// session's script runs. It waits for the script to end, at most until
// busy-reply-threshold has passed since the script started; past it only
// the commands Redis allows (SCRIPT KILL, SHUTDOWN …) run, and the others
// are answered -BUSY. It reports whether cmd may go on.
func (s *Session) waitScript(run *scriptRun, cmd *Command) bool {
	if wait := run.start + s.srv.busyThreshold() - s.srv.clock(); wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-run.ended():
			t.Stop()
			return true
		case <-t.C:
		}
	}
	if s.srv.scripts.running.Load() != run {
		return true
	}
	if cmd.Name == "shutdown" {
		// SHUTDOWN stops the script even if it wrote (its writes stay,
		// as Redis keeps what an unkillable script did before SHUTDOWN
		// NOSAVE), so that closing the server finds the shards free.
		run.killed.Store(true)
		run.cancel()
		<-run.ended()
		return true
	}
	if allowedBusy(cmd) {
		return true
	}
	msg := errScriptBusy
	if run.named().function {
		msg = errFunctionBusy
	}
	if cmd.Name == "exec" && s.multi != nil {
		// An EXEC refused ends its transaction, as Redis's
		// execCommandAbort does.
		s.multi = nil
		s.multiLen.Store(0)
		s.unwatchAll()
		s.reject(cmd, "EXECABORT Transaction discarded because of: "+msg)
		return false
	}
	s.reject(cmd, msg)
	return false
}

// allowedBusy reports whether cmd runs while a script is busy, as Redis's
// CMD_ALLOW_BUSY commands do. None of them takes a shard lock.
func allowedBusy(cmd *Command) bool {
	switch cmd.Name {
	case "script|kill", "function|kill", "function|stats", "shutdown", "auth", "hello", "quit", "multi", "discard":
		return true
	}
	return false
}
