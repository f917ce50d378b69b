package server

import (
	"github.com/recached/recached/resp"
)

// scriptCommands is Lua scripting: EVAL, EVALSHA, their read-only forms and
// SCRIPT (script.go runs the scripts).
//
// EVAL and its kin lock every shard of the session's database
// (FlagAllKeys): a script may touch keys it did not declare, and it runs
// atomically with respect to every other client. A script whose code
// mentions SELECT locks every database before it starts (LOCKS.md).
func scriptCommands() []*Command {
	const eval = FlagNoScript | FlagStale | FlagMovableKeys | FlagAllKeys | FlagRunsScript
	const syntax = "script numkeys [key [key ...]] [arg [arg ...]]"
	const shaSyntax = "sha1 numkeys [key [key ...]] [arg [arg ...]]"
	sub := FlagNoScript
	return []*Command{
		{Name: "eval", Arity: -3, Flags: eval, Keys: evalKeys, Group: "scripting", KeySpecs: "RW access update", Since: "2.6.0", Syntax: syntax,
			Summary: "Executes a server-side Lua script.", Complexity: "Depends on the script that is executed.", Categories: "slow scripting",
			Handler: func(s *Session) { cmdEval(s, false, false) }},
		{Name: "evalsha", Arity: -3, Flags: eval, Keys: evalKeys, Group: "scripting", KeySpecs: "RW access update", Since: "2.6.0", Syntax: shaSyntax,
			Summary: "Executes a server-side Lua script by SHA1 digest.", Complexity: "Depends on the script that is executed.", Categories: "slow scripting",
			Handler: func(s *Session) { cmdEval(s, true, false) }},
		{Name: "eval_ro", Arity: -3, Flags: eval | FlagReadonly, Keys: evalKeys, Group: "scripting", Since: "7.0.0", Syntax: syntax,
			Summary: "Executes a read-only server-side Lua script.", Complexity: "Depends on the script that is executed.", Categories: "slow scripting",
			Handler: func(s *Session) { cmdEval(s, false, true) }},
		{Name: "evalsha_ro", Arity: -3, Flags: eval | FlagReadonly, Keys: evalKeys, Group: "scripting", Since: "7.0.0", Syntax: shaSyntax,
			Summary: "Executes a read-only server-side Lua script by SHA1 digest.", Complexity: "Depends on the script that is executed.", Categories: "slow scripting",
			Handler: func(s *Session) { cmdEval(s, true, true) }},
		{Name: "script", Arity: -2, Group: "scripting", Since: "2.6.0", Summary: "A container for Lua scripts management commands.", Categories: "slow", Subs: []*Command{
			{Name: "load", Arity: 3, Flags: sub | FlagStale, Since: "2.6.0", Syntax: "script", Summary: "Loads a server-side Lua script to the script cache.", Categories: "slow scripting", Handler: cmdScriptLoad},
			{Name: "exists", Arity: -3, Flags: sub, Since: "2.6.0", Syntax: "sha1 [sha1 ...]", Summary: "Determines whether server-side Lua scripts exist in the script cache.", Categories: "slow scripting", Handler: cmdScriptExists},
			{Name: "flush", Arity: -2, Flags: sub, Since: "2.6.0", Syntax: "[ASYNC | SYNC]", Summary: "Removes all server-side Lua scripts from the script cache.", Categories: "slow scripting", Handler: cmdScriptFlush},
			{Name: "kill", Arity: 2, Flags: sub, Since: "2.6.0", Summary: "Terminates a server-side Lua script during execution.", Categories: "slow scripting", Handler: cmdScriptKill},
			{Name: "help", Arity: 2, Flags: FlagLoading | FlagStale, Since: "5.0.0", Summary: "Returns helpful text about the different subcommands.", Categories: "slow scripting", Handler: cmdScriptHelp},
		}},
	}
}

// evalKeys is the key spec of EVAL and its kin: numkeys keys after the
// script, none when numkeys is not a valid count.
func evalKeys(args [][]byte) [][]byte {
	if len(args) < 3 {
		return nil
	}
	n, ok := resp.ParseInt(args[2])
	if !ok || n <= 0 || n > int64(len(args)-3) {
		return nil
	}
	return args[3 : 3+n]
}

// cmdEval runs EVAL, EVALSHA, EVAL_RO and EVALSHA_RO.
func cmdEval(s *Session, bySHA, readonly bool) {
	n, ok := resp.ParseInt(s.Args[2])
	switch {
	case !ok:
		s.W.Error(errNotInt)
		return
	case n < 0:
		s.W.Error("ERR Number of keys can't be negative")
		return
	case n > int64(len(s.Args)-3):
		s.W.Error("ERR Number of keys can't be greater than number of args")
		return
	}
	e := &s.srv.scripts
	var sc *luaScript
	if s.job != nil && s.job.sc != nil {
		sc = s.job.sc // looked up before locking (callScript)
	} else if bySHA {
		if sc = e.lookup(s.Args[1]); sc == nil {
			s.W.Error(errNoScript)
			return
		}
	} else {
		var msg string
		if sc, msg = e.load(s.Args[1], s.srv.table); sc == nil {
			s.W.Error(msg)
			return
		}
	}
	if sc.flags&scriptShebang != 0 {
		if readonly && sc.flags&scriptNoWrites == 0 {
			s.W.Error("ERR Can not execute a script with write flag using *_ro command.")
			return
		}
		if sc.flags&scriptNoWrites == 0 && s.scriptLacksReplicas() {
			s.W.Error(errNoReplicas)
			return
		}
		readonly = readonly || sc.flags&scriptNoWrites != 0
		if s.scriptOOM(sc.flags) {
			s.W.Error(errOOM)
			return
		}
		if sc.flags&scriptAllowOOM != 0 {
			s.oom = false
		}
	}
	if sc.selects && !s.lockAllDBs() {
		s.W.Error(errScriptSelect)
		return
	}
	keys := s.Args[3 : 3+n]
	argv := s.Args[3+n:]
	s.srv.runScript(s, sc, keys, argv, readonly)
}

func cmdScriptLoad(s *Session) {
	sc, msg := s.srv.scripts.load(s.Args[2], s.srv.table)
	if sc == nil {
		s.W.Error(msg)
		return
	}
	s.W.BulkString(sc.sha)
}

func cmdScriptExists(s *Session) {
	s.W.Array(len(s.Args) - 2)
	for _, a := range s.Args[2:] {
		if s.srv.scripts.lookup(a) != nil {
			s.W.Int(1)
		} else {
			s.W.Int(0)
		}
	}
}

func cmdScriptFlush(s *Session) {
	if len(s.Args) > 3 || len(s.Args) == 3 && !resp.EqualFold(s.Args[2], "sync") && !resp.EqualFold(s.Args[2], "async") {
		s.W.Error("ERR SCRIPT FLUSH only support SYNC|ASYNC option")
		return
	}
	s.srv.scripts.flush()
	s.W.OK()
}

// cmdScriptKill (SCRIPT KILL and FUNCTION KILL) stops the running script
// or function if it has not written; it runs without shard locks while the
// script holds them all.
func cmdScriptKill(s *Session) {
	run := s.srv.scripts.running.Load()
	switch {
	case run == nil || run.s == s:
		s.W.Error(errNotBusy)
	case run.named().function && s.Args[0][0]|0x20 != 'f':
		s.W.Error(errFunctionBusy)
	case !run.named().function && s.Args[0][0]|0x20 == 'f':
		s.W.Error(errScriptBusy)
	case !run.kill():
		s.W.Error(errUnkillable)
	default:
		s.W.OK()
	}
}

// kill stops the run at its next instruction, its reply the error
// errScriptKilled, unless it has already written (Redis's -UNKILLABLE);
// it reports whether it stopped it.
func (run *scriptRun) kill() bool {
	if run.wrote.Load() {
		return false
	}
	run.killed.Store(true)
	run.cancel()
	return true
}

func cmdScriptHelp(s *Session) {
	help(s, "SCRIPT",
		"DEBUG (YES|SYNC|NO)", "    Set the debug mode for subsequent scripts executed.",
		"EXISTS <sha1> [<sha1> ...]", "    Return information about the existence of the scripts in the script cache.",
		"FLUSH [ASYNC|SYNC]", "    Flush the Lua scripts cache. Very dangerous on replicas.",
		"    When called without the optional mode argument, the behavior is determined by the",
		"    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
		"    * ASYNC: Asynchronously flush the scripts cache.",
		"    * SYNC: Synchronously flush the scripts cache.",
		"KILL", "    Kill the currently executing Lua script.",
		"LOAD <script>", "    Load a script into the scripts cache without executing it.")
}
