package server

import (
	"context"
	"errors"
	"sort"
	"strings"
	"time"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"

	"github.com/recached/recached/resp"
	"github.com/recached/recached/server/keyspace"
	"github.com/recached/recached/snapshot/rdb"
)

// Redis functions: FUNCTION LOAD runs a library's code ("#!lua name=lib")
// in the engine's function state with the library API as its globals
// (redis.register_function, redis.log, the versions); the registered
// callbacks stay in that state and FCALL calls them with the keys and the
// arguments as parameters. Loading, deleting and flushing lock every shard
// (FlagAllDBs), so they never run while a function does.
//
// Every change to the libraries is an effect of kind EffectDB, FUNCTION
// LOAD REPLACE <code>, FUNCTION DELETE <name> or FUNCTION FLUSH, so the
// append-only log records it and replay runs it again. The snapshot does
// not hold libraries yet: a save that starts a new log generation writes
// every library at the head of the new log instead (persister.saveLocked),
// so with the append-only log on they survive every restart; with it off
// they are not persisted.

// luaLibrary is a loaded library. Library names are case-sensitive,
// function names are not (FCALL TEST runs test).
type luaLibrary struct {
	name    string
	code    string
	funcs   map[string]*luaFunction
	selects bool // the code mentions SELECT: FCALL locks every database
}

// luaFunction is a registered function.
type luaFunction struct {
	name     string
	desc     string
	hasDesc  bool
	flags    scriptFlags
	callback *lua.LFunction
	lib      *luaLibrary
}

// loadTimeout bounds a library's loading code, as Redis's 500 ms.
const loadTimeout = 500 * time.Millisecond

// libraryAPI builds the globals a library's loading code sees.
func (st *luaState) libraryAPI() *lua.LTable {
	L := st.L
	g := L.NewTable()
	r := L.NewTable()
	r.RawSetString("register_function", L.NewFunction(st.registerFunction))
	r.RawSetString("log", L.NewFunction(luaLog))
	for name, v := range map[string]int{"LOG_DEBUG": 0, "LOG_VERBOSE": 1, "LOG_NOTICE": 2, "LOG_WARNING": 3} {
		r.RawSetString(name, lua.LNumber(v))
	}
	r.RawSetString("REDIS_VERSION", lua.LString(Version))
	r.RawSetString("REDIS_VERSION_NUM", lua.LNumber(versionNum(Version)))
	// The library API is read-only, and reading a name it lacks is an
	// error.
	p := L.NewTable()
	mt := L.NewTable()
	mt.RawSetString("__index", L.NewFunction(func(L *lua.LState) int {
		v := r.RawGet(L.Get(2))
		if v == lua.LNil {
			L.RaiseError("Script attempted to access nonexistent global variable '%s'", L.Get(2).String())
		}
		L.Push(v)
		return 1
	}))
	mt.RawSetString("__newindex", L.NewFunction(readonlyTable))
	mt.RawSetString("__metatable", lua.LFalse)
	L.SetMetatable(p, mt)
	st.protected[p] = true
	g.RawSetString("redis", p)
	return g
}

// validName reports whether a library or function name has only letters,
// digits and underscores, and at least one.
func validName(n string) bool {
	if n == "" {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// registerFunction is redis.register_function(name, callback) or
// redis.register_function{function_name=…, callback=…, flags=…,
// description=…}.
func (st *luaState) registerFunction(L *lua.LState) int {
	lib := st.loading
	if lib == nil {
		luaError(L, "ERR redis.register_function can only be called on FUNCTION LOAD command")
	}
	f := &luaFunction{lib: lib}
	switch L.GetTop() {
	case 1:
		t, ok := L.Get(1).(*lua.LTable)
		if !ok {
			luaError(L, "ERR calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).")
		}
		var msg string
		t.ForEach(func(k, v lua.LValue) {
			if msg != "" {
				return
			}
			switch k.String() {
			case "function_name":
				s, ok := v.(lua.LString)
				if !ok {
					msg = "ERR function_name argument given to redis.register_function must be a string"
				}
				f.name = string(s)
			case "description":
				s, ok := v.(lua.LString)
				if !ok {
					msg = "ERR description argument given to redis.register_function must be a string"
				}
				f.desc, f.hasDesc = string(s), true
			case "callback":
				fn, ok := v.(*lua.LFunction)
				if !ok {
					msg = "ERR callback argument given to redis.register_function must be a function"
				}
				f.callback = fn
			case "flags":
				ft, ok := v.(*lua.LTable)
				if !ok {
					msg = "ERR flags argument to redis.register_function must be a table representing function flags"
					return
				}
				ft.ForEach(func(_, fv lua.LValue) {
					bit, ok := scriptFlagNames[fv.String()]
					if !ok || fv.Type() != lua.LTString {
						msg = "ERR unknown flag given"
					}
					f.flags |= bit
				})
			default:
				msg = "ERR unknown argument given to redis.register_function"
			}
		})
		if msg != "" {
			luaError(L, msg)
		}
		if f.name == "" {
			luaError(L, "ERR redis.register_function must get a function name argument")
		}
		if f.callback == nil {
			luaError(L, "ERR redis.register_function must get a callback argument")
		}
	case 2:
		name, ok := L.Get(1).(lua.LString)
		if !ok {
			luaError(L, "ERR first argument to redis.register_function must be a string")
		}
		fn, ok := L.Get(2).(*lua.LFunction)
		if !ok {
			luaError(L, "ERR second argument to redis.register_function must be a function")
		}
		f.name, f.callback = string(name), fn
	default:
		luaError(L, "ERR wrong number of arguments to redis.register_function")
	}
	if !validName(f.name) {
		luaError(L, "ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long")
	}
	if lib.funcs[strings.ToLower(f.name)] != nil {
		luaError(L, "ERR Function already exists in the library")
	}
	lib.funcs[strings.ToLower(f.name)] = f
	return 0
}

// parseLibraryShebang reads "#!lua name=<lib>" and returns the library
// name and the code, the shebang line blanked.
func parseLibraryShebang(code string) (string, string, string) {
	if !strings.HasPrefix(code, "#!") {
		return "", "", "ERR Missing library metadata"
	}
	line, rest, _ := strings.Cut(code, "\n")
	engine, _, _ := strings.Cut(line[2:], " ")
	if !strings.EqualFold(engine, "lua") {
		return "", "", "ERR Engine '" + engine + "' not found"
	}
	parts, ok := resp.SplitArgs(nil, []byte(line[2:]))
	if !ok || len(parts) == 0 {
		return "", "", "ERR Invalid library metadata"
	}
	name, named := "", false
	for _, p := range parts[1:] {
		v, ok := strings.CutPrefix(string(p), "name=")
		if !ok {
			return "", "", "ERR Invalid metadata value given: " + string(p)
		}
		if named {
			return "", "", "ERR Invalid metadata value, name argument was given multiple times"
		}
		name, named = v, true
	}
	if name == "" {
		return "", "", "ERR Library name was not given"
	}
	return name, "\n" + rest, ""
}

// functionState returns the state functions live in, made on first use.
// The caller holds every shard lock.
func (e *scriptEngine) functionState() *luaState {
	if e.fst == nil {
		e.fst = newLuaState(&e.rng)
	}
	return e.fst
}

// loadLibrary compiles and runs a library's code and, unless it fails,
// installs its functions (replacing a library of the same name when
// replace is set). It returns the library's name or Redis's error. The
// caller holds every shard lock.
func (e *scriptEngine) loadLibrary(code string, replace bool) (string, string) {
	name, body, msg := parseLibraryShebang(code)
	if msg != "" {
		return "", msg
	}
	if !validName(name) {
		return "", "ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long"
	}
	e.mu.Lock()
	old := e.libs[name]
	e.mu.Unlock()
	if old != nil && !replace {
		return "", "ERR Library '" + name + "' already exists"
	}
	chunk, err := parse.Parse(strings.NewReader(body), "user_function")
	if err != nil {
		return "", "ERR Error compiling function: " + compileError(err, "user_function")
	}
	proto, err := lua.Compile(chunk, "user_function")
	if err != nil {
		return "", "ERR Error compiling function: " + compileError(err, "user_function")
	}
	st := e.functionState()
	lib := &luaLibrary{name: name, code: code, funcs: make(map[string]*luaFunction), selects: mentionsSelect(code)}
	L := st.L
	fn := L.NewFunctionFromProto(proto)
	fn.Env = st.env
	ctx, cancel := context.WithTimeout(context.Background(), loadTimeout)
	L.SetContext(ctx)
	st.setLoading(lib)
	L.Push(fn)
	err = L.PCall(0, 0, nil)
	st.setLoading(nil)
	L.RemoveContext()
	timedOut := ctx.Err() != nil
	cancel()
	if err != nil {
		L.SetTop(0)
		if timedOut {
			return "", "ERR FUNCTION LOAD timeout"
		}
		return "", "ERR Error registering functions: " + loadError(err)
	}
	if len(lib.funcs) == 0 {
		return "", "ERR No functions registered"
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for fname := range lib.funcs {
		if f := e.funcs[fname]; f != nil && f.lib.name != name {
			return "", "ERR Function " + lib.funcs[fname].name + " already exists"
		}
	}
	e.installLocked(lib)
	return name, ""
}

// installLocked puts lib in place of a library of the same name. The
// caller holds e.mu.
func (e *scriptEngine) installLocked(lib *luaLibrary) {
	if e.libs == nil {
		e.libs = make(map[string]*luaLibrary)
		e.funcs = make(map[string]*luaFunction)
	}
	if old := e.libs[lib.name]; old != nil {
		for fname := range old.funcs {
			delete(e.funcs, fname)
		}
	}
	e.libs[lib.name] = lib
	for fname, f := range lib.funcs {
		e.funcs[fname] = f
	}
}

// loadError is the message of an error raised while loading a library.
func loadError(err error) string {
	var ae *lua.ApiError
	if !errors.As(err, &ae) {
		return "ERR " + err.Error()
	}
	if t, ok := ae.Object.(*lua.LTable); ok {
		return t.RawGetString("err").String()
	}
	return "ERR " + ae.Object.String()
}

// functionCommands is FUNCTION and FCALL.
func functionCommands() []*Command {
	const call = FlagNoScript | FlagStale | FlagMovableKeys | FlagAllKeys | FlagRunsScript
	const w = FlagNoScript | FlagWrite | FlagAllDBs
	return []*Command{
		{Name: "fcall", Arity: -3, Flags: call, Keys: evalKeys, Group: "scripting", KeySpecs: "RW access update", Since: "7.0.0", Syntax: "function numkeys [key [key ...]] [arg [arg ...]]",
			Summary: "Invokes a function.", Complexity: "Depends on the function that is executed.", Categories: "slow scripting",
			Handler: func(s *Session) { cmdFcall(s, false) }},
		{Name: "fcall_ro", Arity: -3, Flags: call | FlagReadonly, Keys: evalKeys, Group: "scripting", Since: "7.0.0", Syntax: "function numkeys [key [key ...]] [arg [arg ...]]",
			Summary: "Invokes a read-only function.", Complexity: "Depends on the function that is executed.", Categories: "slow scripting",
			Handler: func(s *Session) { cmdFcall(s, true) }},
		{Name: "function", Arity: -2, Group: "scripting", Since: "7.0.0", Summary: "A container for function commands.", Categories: "slow", Subs: []*Command{
			{Name: "load", Arity: -3, Flags: w | FlagDenyOOM, Since: "7.0.0", Syntax: "[REPLACE] function-code", Summary: "Creates a library.", Categories: "write slow scripting", Handler: cmdFunctionLoad},
			{Name: "delete", Arity: 3, Flags: w, Since: "7.0.0", Syntax: "library-name", Summary: "Deletes a library and its functions.", Categories: "write slow scripting", Handler: cmdFunctionDelete},
			{Name: "flush", Arity: -2, Flags: w, Since: "7.0.0", Syntax: "[ASYNC | SYNC]", Summary: "Deletes all libraries and functions.", Categories: "write slow scripting", Handler: cmdFunctionFlush},
			{Name: "list", Arity: -2, Flags: FlagNoScript, Since: "7.0.0", Syntax: "[LIBRARYNAME library-name-pattern] [WITHCODE]", Summary: "Returns information about all libraries.", Categories: "slow scripting", Handler: cmdFunctionList},
			{Name: "dump", Arity: 2, Flags: FlagNoScript, Since: "7.0.0", Summary: "Dumps all libraries into a serialized binary payload.", Categories: "slow scripting", Handler: cmdFunctionDump},
			{Name: "restore", Arity: -3, Flags: w | FlagDenyOOM, Since: "7.0.0", Syntax: "serialized-value [FLUSH | APPEND | REPLACE]", Summary: "Restores all libraries from a payload.", Categories: "write slow scripting", Handler: cmdFunctionRestore},
			{Name: "stats", Arity: 2, Flags: FlagNoScript, Since: "7.0.0", Summary: "Returns information about a function during execution.", Categories: "slow scripting", Handler: cmdFunctionStats},
			{Name: "kill", Arity: 2, Flags: FlagNoScript, Since: "7.0.0", Summary: "Terminates a function during execution.", Categories: "slow scripting", Handler: cmdScriptKill},
			{Name: "help", Arity: 2, Flags: FlagLoading | FlagStale, Since: "7.0.0", Summary: "Returns helpful text about the different subcommands.", Categories: "slow scripting", Handler: cmdFunctionHelp},
		}},
	}
}

// cmdFcall runs FCALL and FCALL_RO.
func cmdFcall(s *Session, readonly bool) {
	n, ok := resp.ParseInt(s.Args[2])
	switch {
	case !ok:
		s.W.Error("ERR Bad number of keys provided")
		return
	case n < 0:
		s.W.Error("ERR Number of keys can't be negative")
		return
	case n > int64(len(s.Args)-3):
		s.W.Error("ERR Number of keys can't be greater than number of args")
		return
	}
	e := &s.srv.scripts
	e.mu.Lock()
	f := e.funcs[strings.ToLower(string(s.Args[1]))]
	e.mu.Unlock()
	if f == nil {
		s.W.Error("ERR Function not found")
		return
	}
	if readonly && f.flags&scriptNoWrites == 0 {
		s.W.Error("ERR Can not execute a script with write flag using *_ro command.")
		return
	}
	if f.flags&scriptNoWrites == 0 && s.scriptLacksReplicas() {
		s.W.Error(errNoReplicas)
		return
	}
	if s.scriptOOM(f.flags | scriptShebang) {
		s.W.Error(errOOM)
		return
	}
	if f.flags&scriptAllowOOM != 0 {
		s.oom = false
	}
	if f.lib.selects && !s.lockAllDBs() {
		s.W.Error(errScriptSelect)
		return
	}
	// FCALLs in different databases do not exclude each other by their
	// locks; the function state is one.
	e.fmu.Lock()
	defer e.fmu.Unlock()
	defer func() {
		if r := recover(); r != nil {
			e.rebuildFunctions()
			panic(r)
		}
	}()
	st := e.functionState()
	keys := luaStrings(st.L, s.Args[3:3+n])
	argv := luaStrings(st.L, s.Args[3+n:])
	name := &scriptName{sha: f.name, function: true}
	for _, a := range s.Args {
		name.args = append(name.args, append([]byte(nil), a...))
	}
	s.srv.runLua(s, st, f.callback, name, f.flags&scriptNoWrites != 0, keys, argv)
}

func cmdFunctionLoad(s *Session) {
	replace := false
	last := len(s.Args) - 1
	for _, a := range s.Args[2:last] {
		if !resp.EqualFold(a, "replace") {
			s.W.Error("ERR Unknown option given: " + string(a))
			return
		}
		replace = true
	}
	code := string(s.Args[last])
	name, msg := s.srv.scripts.loadLibrary(code, replace)
	if msg != "" {
		s.W.Error(msg)
		return
	}
	s.emitDB(s.DBIndex, "FUNCTION", "LOAD", "REPLACE", code)
	s.W.BulkString(name)
}

func cmdFunctionDelete(s *Session) {
	e := &s.srv.scripts
	e.mu.Lock()
	lib := e.libs[string(s.Args[2])]
	if lib != nil {
		delete(e.libs, lib.name)
		for fname := range lib.funcs {
			delete(e.funcs, fname)
		}
	}
	e.mu.Unlock()
	if lib == nil {
		s.W.Error("ERR Library not found")
		return
	}
	s.emitDB(s.DBIndex, "FUNCTION", "DELETE", lib.name)
	s.W.OK()
}

func cmdFunctionFlush(s *Session) {
	if len(s.Args) > 3 {
		s.W.Error("ERR unknown subcommand or wrong number of arguments for '" + string(s.Args[1]) + "'. Try FUNCTION HELP.")
		return
	}
	if len(s.Args) == 3 && !resp.EqualFold(s.Args[2], "sync") && !resp.EqualFold(s.Args[2], "async") {
		s.W.Error("ERR FUNCTION FLUSH only supports SYNC|ASYNC option")
		return
	}
	s.srv.scripts.flushFunctions()
	s.emitDB(s.DBIndex, "FUNCTION", "FLUSH")
	s.W.OK()
}

// flushFunctions drops every library and the function state. The caller
// holds every shard lock.
func (e *scriptEngine) flushFunctions() {
	e.mu.Lock()
	e.libs, e.funcs = nil, nil
	e.mu.Unlock()
	if e.fst != nil {
		e.fst.L.Close()
		e.fst = nil
	}
}

// rebuildFunctions replaces a function state a panic may have left
// inconsistent: the libraries are loaded again into a new one. The caller
// holds fmu and its shard locks; no FUNCTION command runs meanwhile.
func (e *scriptEngine) rebuildFunctions() {
	libs := e.sortedLibs()
	e.mu.Lock()
	e.libs, e.funcs = nil, nil
	e.mu.Unlock()
	if e.fst != nil {
		e.fst.L.Close()
		e.fst = nil
	}
	for _, l := range libs {
		e.loadLibrary(l.code, true)
	}
}

// sortedLibs returns the libraries sorted by name.
func (e *scriptEngine) sortedLibs() []*luaLibrary {
	e.mu.Lock()
	libs := make([]*luaLibrary, 0, len(e.libs))
	for _, l := range e.libs {
		libs = append(libs, l)
	}
	e.mu.Unlock()
	sort.Slice(libs, func(i, j int) bool { return libs[i].name < libs[j].name })
	return libs
}

func cmdFunctionList(s *Session) {
	pattern, withCode, named := "", false, false
	for i := 2; i < len(s.Args); i++ {
		switch {
		case resp.EqualFold(s.Args[i], "withcode") && !withCode:
			withCode = true
		case resp.EqualFold(s.Args[i], "libraryname") && !named:
			named = true
			if i+1 >= len(s.Args) {
				s.W.Error("ERR library name argument was not given")
				return
			}
			i++
			pattern = string(s.Args[i])
		default:
			s.W.Error("ERR Unknown argument " + string(s.Args[i]))
			return
		}
	}
	var libs []*luaLibrary
	for _, l := range s.srv.scripts.sortedLibs() {
		if pattern == "" || keyspace.Match(strings.ToLower(pattern), strings.ToLower(l.name)) {
			libs = append(libs, l)
		}
	}
	s.W.Array(len(libs))
	for _, l := range libs {
		if withCode {
			s.W.Map(4)
		} else {
			s.W.Map(3)
		}
		s.W.BulkString("library_name")
		s.W.BulkString(l.name)
		s.W.BulkString("engine")
		s.W.BulkString("LUA")
		s.W.BulkString("functions")
		funcs := make([]*luaFunction, 0, len(l.funcs))
		for _, f := range l.funcs {
			funcs = append(funcs, f)
		}
		sort.Slice(funcs, func(i, j int) bool { return funcs[i].name < funcs[j].name })
		s.W.Array(len(funcs))
		for _, f := range funcs {
			s.W.Map(3)
			s.W.BulkString("name")
			s.W.BulkString(f.name)
			s.W.BulkString("description")
			if f.hasDesc {
				s.W.BulkString(f.desc)
			} else {
				s.W.Null()
			}
			s.W.BulkString("flags")
			var flags []string
			for _, fl := range []struct {
				bit  scriptFlags
				name string
			}{{scriptNoWrites, "no-writes"}, {scriptAllowOOM, "allow-oom"}, {scriptAllowStale, "allow-stale"}, {scriptNoCluster, "no-cluster"}, {scriptAllowCrossSlot, "allow-cross-slot-keys"}} {
				if f.flags&fl.bit != 0 {
					flags = append(flags, fl.name)
				}
			}
			s.W.Set(len(flags))
			for _, fl := range flags {
				s.W.Simple(fl)
			}
		}
		if withCode {
			s.W.BulkString("library_code")
			s.W.BulkString(l.code)
		}
	}
}

// cmdFunctionDump answers the libraries in Redis's FUNCTION DUMP payload
// (snapshot/rdb), so that FUNCTION RESTORE takes it on either server.
func cmdFunctionDump(s *Session) {
	var codes []string
	for _, l := range s.srv.scripts.sortedLibs() {
		codes = append(codes, l.code)
	}
	s.W.Bulk(rdb.DumpFunctions(codes))
}

func cmdFunctionRestore(s *Session) {
	policy := "append"
	if len(s.Args) > 4 {
		s.W.Error("ERR unknown subcommand or wrong number of arguments for '" + string(s.Args[1]) + "'. Try FUNCTION HELP.")
		return
	}
	if len(s.Args) == 4 {
		switch p := strings.ToLower(string(s.Args[3])); p {
		case "append", "replace", "flush":
			policy = p
		default:
			s.W.Error("ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.")
			return
		}
	}
	codes, decodeErr := rdb.DecodeFunctions(s.Args[2])
	if errors.Is(decodeErr, rdb.ErrPayload) {
		s.W.Error(decodeErr.Error())
		return
	}
	e := &s.srv.scripts
	// Load into a fresh engine first, so that a failing payload changes
	// nothing.
	var staged scriptEngine
	for _, c := range codes {
		if _, msg := staged.loadLibrary(c, false); msg != "" {
			staged.flushFunctions()
			s.W.Error(msg)
			return
		}
	}
	if decodeErr != nil {
		// The libraries before the bad record loaded; Redis meets the
		// record after them.
		staged.flushFunctions()
		s.W.Error(decodeErr.Error())
		return
	}
	if policy == "flush" {
		e.flushFunctions()
	}
	e.mu.Lock()
	for _, l := range staged.libs {
		if e.libs[l.name] != nil && policy == "append" {
			e.mu.Unlock()
			staged.flushFunctions()
			s.W.Error("ERR Library " + l.name + " already exists")
			return
		}
		for fname := range l.funcs {
			if f := e.funcs[fname]; f != nil && f.lib.name != l.name {
				e.mu.Unlock()
				staged.flushFunctions()
				s.W.Error("ERR Function " + l.funcs[fname].name + " already exists")
				return
			}
		}
	}
	e.mu.Unlock()
	staged.flushFunctions()
	// Load for real into the server's function state.
	if policy == "flush" {
		s.emitDB(s.DBIndex, "FUNCTION", "FLUSH")
	}
	for _, c := range codes {
		if _, msg := e.loadLibrary(c, true); msg != "" {
			s.W.Error(msg)
			return
		}
		s.emitDB(s.DBIndex, "FUNCTION", "LOAD", "REPLACE", c)
	}
	s.W.OK()
}

func cmdFunctionStats(s *Session) {
	e := &s.srv.scripts
	s.W.Map(2)
	s.W.BulkString("running_script")
	n := &scriptName{}
	run := e.running.Load()
	if run != nil {
		n = run.named()
	}
	if n.function && n.sha != "" {
		s.W.Map(3)
		s.W.BulkString("name")
		s.W.BulkString(n.sha)
		s.W.BulkString("command")
		s.W.Array(len(n.args))
		for _, a := range n.args {
			s.W.Bulk(a)
		}
		s.W.BulkString("duration_ms")
		s.W.Int((s.srv.clock() - run.start).Milliseconds())
	} else {
		s.W.Null()
	}
	e.mu.Lock()
	nl, nf := len(e.libs), len(e.funcs)
	e.mu.Unlock()
	s.W.BulkString("engines")
	s.W.Map(1)
	s.W.BulkString("LUA")
	s.W.Map(2)
	s.W.BulkString("libraries_count")
	s.W.Int(int64(nl))
	s.W.BulkString("functions_count")
	s.W.Int(int64(nf))
}

func cmdFunctionHelp(s *Session) {
	help(s, "FUNCTION",
		"LOAD [REPLACE] <FUNCTION CODE>", "    Create a new library with the given library name and code.",
		"DELETE <LIBRARY NAME>", "    Delete the given library.",
		"LIST [LIBRARYNAME PATTERN] [WITHCODE]", "    Return general information on all the libraries:",
		"    * Library name", "    * The engine used to run the Library", "    * Library description",
		"    * Functions list", "    * Library code (if WITHCODE is given)",
		"    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
		"STATS", "    Return information about the current function running:", "    * Function name",
		"    * Command used to run the function", "    * Duration in MS that the function is running",
		"    If no function is running, return nil", "    In addition, returns a list of available engines.",
		"KILL", "    Kill the current running function.",
		"FLUSH [ASYNC|SYNC]", "    Delete all the libraries.",
		"    When called without the optional mode argument, the behavior is determined by the",
		"    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
		"    * ASYNC: Asynchronously flush the libraries.", "    * SYNC: Synchronously flush the libraries.",
		"DUMP", "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
		"RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
		"    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
		"    control how to handle existing libraries (default APPEND):",
		"    * FLUSH: delete all existing libraries.",
		"    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
		"    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
		"      libraries with the new libraries (notice that even on this option there is a chance of failure",
		"      in case of functions name collision with another library).")
}
