package server

import (
	"strings"

	"github.com/recached/recached/resp"
)

// ROLE and LOLWUT, and the table rows of the diagnostic and replication
// commands (MONITOR, LATENCY, DEBUG, ROLE, WAIT, PSYNC, REPLCONF, LOLWUT;
// WAIT, PSYNC and REPLCONF are in repl_primary.go). ROLE reads the
// replication state (repl.go).

// diagCommands is the command table's diagnostic family.
func diagCommands() []*Command {
	return []*Command{
		{Name: "monitor", Arity: 1, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale | FlagStateful | FlagNoWS, Group: "server", Since: "1.0.0", Summary: "Listens for all requests received by the server in real-time.", Categories: "admin slow dangerous", Handler: cmdMonitor},
		{Name: "role", Arity: 1, Flags: FlagNoScript | FlagLoading | FlagStale | FlagFast, Group: "server", Since: "2.8.12", Summary: "Returns the replication role.", Complexity: "O(1)", Categories: "admin fast dangerous", Handler: cmdRole},
		{Name: "wait", Arity: 3, Flags: FlagNoScript, Group: "generic", Since: "3.0.0", Syntax: "numreplicas timeout", Summary: "Blocks until the asynchronous replication of all preceding write commands sent by the connection is completed.", Complexity: "O(1)", Categories: "slow connection", Handler: cmdWait},
		{Name: "lolwut", Arity: -1, Flags: FlagReadonly | FlagFast, Group: "server", Since: "5.0.0", Syntax: "[VERSION version]", Summary: "Displays computer art and the Redis version", Categories: "read fast", Handler: cmdLolwut},
		{Name: "psync", Arity: -3, Flags: FlagAdmin | FlagNoScript | FlagNoMulti | FlagDangerous, Group: "server", Since: "2.8.0", Syntax: "replicationid offset", Summary: "An internal command used in replication.", Categories: "admin slow dangerous", Handler: cmdPSync},
		{Name: "replconf", Arity: -1, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale | FlagDangerous, Group: "server", Since: "3.0.0", Summary: "An internal command for configuring the replication stream.", Complexity: "O(1)", Categories: "admin slow dangerous", Handler: cmdReplconf},
		latencyCommand(),
		debugCommand(),
	}
}

// cmdRole is ROLE, as the replication state shows it (repl.go).
func cmdRole(s *Session) { s.srv.writeRole(&s.W) }

// cmdLolwut is LOLWUT [VERSION v]: as Redis 7.0, the version line alone,
// after a small drawing for VERSION 5 and 6.
func cmdLolwut(s *Session) {
	v := int64(7)
	switch {
	case len(s.Args) == 3 && resp.EqualFold(s.Args[1], "version"):
		n, ok := resp.ParseInt(s.Args[2])
		if !ok {
			s.W.Error(errNotInt)
			return
		}
		v = n
	case len(s.Args) != 1:
		s.W.Error(errSyntax)
		return
	}
	var b strings.Builder
	if v == 5 || v == 6 {
		// A staircase of squares, each a little more tilted, in
		// Braille-free ASCII.
		for row := 0; row < 6; row++ {
			for col := 0; col < 12; col++ {
				if (row+col)%(row+2) == 0 {
					b.WriteString("\\/")
				} else {
					b.WriteString("[]")
				}
			}
			b.WriteByte('\n')
		}
		b.WriteString("\nGeorg Nees - schotter, plotter on paper, 1968. ")
	}
	b.WriteString("Redis ver. " + Version + "\n")
	s.W.Verbatim(b.String())
}
