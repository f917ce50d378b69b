package server

import (
	"log"

	"github.com/recached/recached/resp"
)

// errNotInMulti is Redis's reply to a no-multi command inside MULTI.
const errNotInMulti = "ERR Command not allowed inside a transaction"

// persistCommands are the persistence commands: SAVE, BGSAVE,
// BGREWRITEAOF, LASTSAVE and SHUTDOWN.
func persistCommands() []*Command {
	return []*Command{
		{Name: "save", Arity: 1, Flags: FlagAdmin | FlagNoScript | FlagNoMulti, Group: "server", Since: "1.0.0", Summary: "Synchronously saves the database(s) to disk.", Categories: "admin slow dangerous", Handler: cmdSave},
		{Name: "bgsave", Arity: -1, Flags: FlagAdmin | FlagNoScript, Group: "server", Since: "1.0.0", Syntax: "[SCHEDULE]", Summary: "Asynchronously saves the database(s) to disk.", Categories: "admin slow dangerous", Handler: cmdBgSave},
		{Name: "bgrewriteaof", Arity: 1, Flags: FlagAdmin | FlagNoScript, Group: "server", Since: "1.0.0", Summary: "Asynchronously rewrites the append-only file to disk.", Categories: "admin slow dangerous", Handler: cmdBgRewriteAOF},
		{Name: "lastsave", Arity: 1, Flags: FlagLoading | FlagStale | FlagFast, Group: "server", Since: "1.0.0", Summary: "Returns the Unix timestamp of the last successful save to disk.", Categories: "fast admin dangerous", Handler: cmdLastSave},
		{Name: "shutdown", Arity: -1, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale | FlagNoMulti, Group: "server", Since: "1.0.0", Syntax: "[NOSAVE | SAVE] [NOW] [FORCE] [ABORT]", Summary: "Synchronously saves the database(s) to disk and shuts down the Redis server.", Categories: "admin slow dangerous", Handler: cmdShutdown},
	}
}

// refuseInMulti answers a no-multi command sent inside MULTI as Redis does:
// an error that also makes EXEC fail.
func refuseInMulti(s *Session) bool {
	if s.multi == nil {
		return false
	}
	s.multi.failed = true
	s.W.Error(errNotInMulti)
	return true
}

func cmdSave(s *Session) {
	if refuseInMulti(s) {
		return
	}
	p := s.srv.persist
	if p.kind.Load() == saveRDB {
		s.W.Error("ERR Background save already in progress")
		return
	}
	if err := p.save(saveRDB); err != nil {
		log.Printf("recached: SAVE failed: %v", err)
		s.W.Error("ERR")
		return
	}
	s.W.OK()
}

func cmdBgSave(s *Session) {
	schedule := false
	if len(s.Args) > 1 {
		if len(s.Args) != 2 || !resp.EqualFold(s.Args[1], "schedule") {
			s.W.Error(errSyntax)
			return
		}
		schedule = true
	}
	p := s.srv.persist
	switch p.kind.Load() {
	case saveRDB:
		s.W.Error("ERR Background save already in progress")
		return
	case saveRewrite:
		if schedule {
			p.bgsaveScheduled.Store(true)
			s.W.Simple("Background saving scheduled")
			return
		}
		s.W.Error("ERR Another child process is active (AOF?): can't BGSAVE right now. Use BGSAVE SCHEDULE in order to schedule a BGSAVE whenever possible.")
		return
	}
	if !p.startBackground(saveRDB) {
		s.W.Error("ERR Background save already in progress")
		return
	}
	s.W.Simple("Background saving started")
}

func cmdBgRewriteAOF(s *Session) {
	p := s.srv.persist
	switch p.kind.Load() {
	case saveRewrite:
		s.W.Error("ERR Background append only file rewriting already in progress")
		return
	case saveRDB:
		p.rewriteScheduled.Store(true)
		s.W.Simple("Background append only file rewriting scheduled")
		return
	}
	if !p.startBackground(saveRewrite) {
		p.rewriteScheduled.Store(true)
		s.W.Simple("Background append only file rewriting scheduled")
		return
	}
	s.W.Simple("Background append only file rewriting started")
}

func cmdLastSave(s *Session) { s.W.Int(s.srv.lastSave.Load()) }

// cmdShutdown asks the process to stop; the final snapshot is written by
// ClosePersistence once the transports have stopped, as NOSAVE and SAVE
// say.
func cmdShutdown(s *Session) {
	if refuseInMulti(s) {
		return
	}
	var nosave, save, abort bool
	for _, a := range s.Args[1:] {
		switch {
		case resp.EqualFold(a, "nosave"):
			nosave = true
		case resp.EqualFold(a, "save"):
			save = true
		case resp.EqualFold(a, "now"), resp.EqualFold(a, "force"):
		case resp.EqualFold(a, "abort"):
			abort = true
		default:
			s.W.Error(errSyntax)
			return
		}
	}
	if nosave && save || abort && len(s.Args) > 2 {
		s.W.Error(errSyntax)
		return
	}
	if abort {
		s.W.Error("ERR No shutdown in progress.")
		return
	}
	switch {
	case nosave:
		s.srv.persist.shutdown.Store(shutdownNoSave)
	case save:
		s.srv.persist.shutdown.Store(shutdownSave)
	}
	s.srv.RequestShutdown()
	s.Quit = true
}
