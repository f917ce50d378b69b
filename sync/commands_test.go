package sync_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/recached/recached/server"
	recsync "github.com/recached/recached/sync"
)

var update = flag.Bool("update", false, "rewrite commands.json and the list generated into web/recached-edge.js")

const (
	commandsFile = "commands.json"
	edgeFile     = "web/recached-edge.js"
	beginMarker  = "// BEGIN GENERATED COMMANDS"
	endMarker    = "// END GENERATED COMMANDS"
)

// tableCommands returns the entries of every command and subcommand of the
// server's table, sorted by name.
func tableCommands() []recsync.Command {
	var out []recsync.Command
	var add func(c *server.Command)
	add = func(c *server.Command) {
		e := recsync.Command{
			Name:        c.Name,
			Arity:       c.Arity,
			Write:       c.Flags&server.FlagWrite != 0,
			Readonly:    c.Flags&server.FlagReadonly != 0,
			Connection:  c.Flags&server.FlagConnection != 0 || c.Wraps > 0,
			ClientOwned: c.Flags&server.FlagClientOwned != 0,
			MovableKeys: c.Flags&server.FlagMovableKeys != 0,
			Subcommands: len(c.Subs) > 0,
		}
		if c.FirstKey > 0 && !e.MovableKeys {
			e.Keys = []int{c.FirstKey, c.LastKey, max(c.Step, 1)}
		}
		out = append(out, e)
		for _, s := range c.Subs {
			add(s)
		}
	}
	for _, c := range server.New(server.Config{}).Table().Sorted() {
		add(c)
	}
	return out
}

// entryLines encodes each entry as one line of JSON.
func entryLines(t *testing.T, cmds []recsync.Command) []string {
	t.Helper()
	lines := make([]string, len(cmds))
	for i, c := range cmds {
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		lines[i] = string(b)
	}
	return lines
}

// commandsFileText is commands.json: one command per line.
func commandsFileText(lines []string) []byte {
	var b bytes.Buffer
	b.WriteString("{\n  \"comment\": \"Generated from the server's command table by go generate ./sync (TestCommandsFileIsCurrent in sync/commands_test.go): do not edit.\",\n")
	b.WriteString("  \"commands\": [\n    ")
	b.WriteString(strings.Join(lines, ",\n    "))
	b.WriteString("\n  ]\n}\n")
	return b.Bytes()
}

// edgeBlock is the list generated into recached-edge.js, markers included.
func edgeBlock(lines []string) string {
	var b strings.Builder
	b.WriteString(beginMarker + ": sync/commands.json, by go generate ./sync; do not edit.\n")
	b.WriteString("/** @type {ReadonlyArray<CommandInfo>} */\nconst COMMAND_LIST = [\n  ")
	b.WriteString(strings.Join(lines, ",\n  "))
	b.WriteString(",\n];\n" + endMarker)
	return b.String()
}

// splitEdge returns recached-edge.js around its generated block.
func splitEdge(t *testing.T, js string) (before, block, after string) {
	t.Helper()
	i := strings.Index(js, beginMarker)
	j := strings.Index(js, endMarker)
	if i < 0 || j < i {
		t.Fatalf("%s has no %q … %q block", edgeFile, beginMarker, endMarker)
	}
	return js[:i], js[i : j+len(endMarker)], js[j+len(endMarker):]
}

// TestCommandsFileIsCurrent fails when commands.json, or the copy of its
// list in recached-edge.js, is not what the server's command table gives;
// with -update (go generate ./sync) it rewrites both.
func TestCommandsFileIsCurrent(t *testing.T) {
	lines := entryLines(t, tableCommands())
	want := commandsFileText(lines)
	jsBytes, err := os.ReadFile(edgeFile)
	if err != nil {
		t.Fatal(err)
	}
	before, block, after := splitEdge(t, string(jsBytes))
	wantBlock := edgeBlock(lines)
	if *update {
		if err := os.WriteFile(commandsFile, want, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(edgeFile, []byte(before+wantBlock+after), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if got := recsync.CommandsJSON(); !bytes.Equal(got, want) {
		t.Errorf("%s is stale: run go generate ./sync", commandsFile)
	}
	if block != wantBlock {
		t.Errorf("the command list in %s is stale: run go generate ./sync", edgeFile)
	}
}

// The clients route by the file: writes through the outbox, reads and
// connection-scoped commands plainly, their own commands refused. These
// are the commands whose routing drifted when the clients kept copies.
func TestCommandsRouting(t *testing.T) {
	cs, err := recsync.LoadCommands()
	if err != nil {
		t.Fatal(err)
	}
	outbox := func(c *recsync.Command) bool { return c == nil || c.Write && !c.Connection && !c.ClientOwned }
	for _, tc := range []struct {
		args       []string
		outbox     bool
		owned      bool
		connection bool
	}{
		{[]string{"set", "k", "v"}, true, false, false},
		{[]string{"INCR", "k"}, true, false, false},
		{[]string{"ZUNIONSTORE", "d", "1", "k"}, true, false, false},
		{[]string{"GET", "k"}, false, false, false},
		{[]string{"ZUNION", "2", "a", "b"}, false, false, false},
		{[]string{"ZINTER", "2", "a", "b"}, false, false, false},
		{[]string{"ZDIFF", "2", "a", "b"}, false, false, false},
		{[]string{"ZINTERCARD", "2", "a", "b"}, false, false, false},
		{[]string{"TOUCH", "a"}, false, false, false},
		{[]string{"Object", "Encoding", "k"}, false, false, false},
		{[]string{"PUBLISH", "ch", "m"}, false, false, true},
		{[]string{"MULTI"}, false, false, true},
		{[]string{"PING"}, false, false, false},
		{[]string{"SUBSCRIBE", "ch"}, false, true, true},
		{[]string{"SYNC", "k:*"}, false, true, true},
		{[]string{"DEDUP", "c", "1", "SET", "k", "v"}, false, true, true},
		{[]string{"SELECT", "1"}, false, true, true},
	} {
		args := make([][]byte, len(tc.args))
		for i, a := range tc.args {
			args[i] = []byte(a)
		}
		c := cs.Lookup(args)
		if c == nil {
			t.Errorf("%v: not in %s", tc.args, commandsFile)
			continue
		}
		if outbox(c) != tc.outbox || c.ClientOwned != tc.owned || c.Connection != tc.connection {
			t.Errorf("%v (%s): outbox %v, client-owned %v, connection %v; want %v, %v, %v",
				tc.args, c.Name, outbox(c), c.ClientOwned, c.Connection, tc.outbox, tc.owned, tc.connection)
		}
	}
	if c := cs.Lookup([][]byte{[]byte("NOSUCHCOMMAND")}); c != nil {
		t.Errorf("an unknown command has entry %+v", c)
	}
}
