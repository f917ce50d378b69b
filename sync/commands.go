package sync

import (
	_ "embed"
	"encoding/json"
	"fmt"

	"github.com/recached/recached/resp"
)

//go:generate go test -run TestCommandsFileIsCurrent -update .

// commandsJSON is commands.json: what the sync clients need to know of the
// server's commands, generated from its command table by the test
// TestCommandsFileIsCurrent (go generate ./sync), which fails when the file
// is stale. The browser client carries the same list, generated into
// web/recached-edge.js by the same test.
//
//go:embed commands.json
var commandsJSON []byte

// CommandsJSON returns the bytes of commands.json.
func CommandsJSON() []byte { return commandsJSON }

// Command is one entry of commands.json: a server command as a sync client
// routes it.
type Command struct {
	Name  string `json:"name"` // lower case; a subcommand is "parent|sub"
	Arity int    `json:"arity"`
	// Write: the command may modify the keyspace, so a client sends it
	// through its outbox, wrapped in DEDUP (unless Connection is set).
	Write bool `json:"write,omitempty"`
	// Readonly: the command only reads.
	Readonly bool `json:"readonly,omitempty"`
	// Connection: the command is connection-scoped, and DEDUP refuses to
	// wrap it (SPEC section 4): it must run on every replay.
	Connection bool `json:"connection,omitempty"`
	// ClientOwned: a sync client sends the command itself (AUTH, HELLO,
	// SYNC, QSUB, KWATCH, the subscriptions, DEDUP) or it would break the
	// client's one-reply-per-command correlation (QUIT, RESET, SELECT):
	// clients refuse it from applications.
	ClientOwned bool `json:"clientOwned,omitempty"`
	// Keys is [first, last, step], the positions of the key arguments
	// (last negative counts from the end); absent for a command without
	// keys or whose keys move (MovableKeys).
	Keys        []int `json:"keys,omitempty"`
	MovableKeys bool  `json:"movableKeys,omitempty"`
	// Subcommands: the command is a container ("object", "client"); its
	// subcommands have entries of their own.
	Subcommands bool `json:"subcommands,omitempty"`
}

// CommandsFile is the content of commands.json.
type CommandsFile struct {
	Comment  string    `json:"comment"`
	Commands []Command `json:"commands"`
}

// Commands is the server's command list, by lower-case name.
type Commands struct {
	byName map[string]*Command
}

// LoadCommands parses commands.json.
func LoadCommands() (*Commands, error) {
	var f CommandsFile
	if err := json.Unmarshal(commandsJSON, &f); err != nil {
		return nil, fmt.Errorf("sync: commands.json: %w", err)
	}
	cs := &Commands{byName: make(map[string]*Command, len(f.Commands))}
	for i := range f.Commands {
		cs.byName[f.Commands[i].Name] = &f.Commands[i]
	}
	return cs, nil
}

// Lookup returns the entry of the command args run, any case: the
// subcommand's for a container with a known subcommand, else the
// command's; nil for a command the server does not have.
func (cs *Commands) Lookup(args [][]byte) *Command {
	if len(args) == 0 {
		return nil
	}
	var buf [64]byte
	name := resp.AppendLower(buf[:0], args[0])
	c := cs.byName[string(name)]
	if c == nil || !c.Subcommands || len(args) < 2 {
		return c
	}
	name = resp.AppendLower(append(name, '|'), args[1])
	if sub := cs.byName[string(name)]; sub != nil {
		return sub
	}
	return c
}
