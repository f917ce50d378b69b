package server

import (
	"strings"
	"testing"
)

// TestScopeMetadata checks the table entries the scope checks and the
// syncer read, so that a command that loses its metadata is noticed.
func TestScopeMetadata(t *testing.T) {
	table := newTable()
	get := func(name string) *Command {
		parent, sub, isSub := strings.Cut(name, "|")
		c := table.Lookup([]byte(parent))
		if c != nil && isSub {
			c = c.Sub([]byte(sub))
		}
		if c == nil {
			t.Fatalf("no command %q", name)
		}
		return c
	}
	args := func(s string) [][]byte {
		var out [][]byte
		for _, f := range strings.Fields(s) {
			out = append(out, []byte(f))
		}
		return out
	}
	join := func(bs [][]byte) string {
		var parts []string
		for _, b := range bs {
			parts = append(parts, string(b))
		}
		return strings.Join(parts, " ")
	}
	tests := []struct {
		name, args       string
		chans, dbs       string
		reloc            Relocation
		restricted, filt bool
	}{
		{name: "subscribe", args: "SUBSCRIBE a b", chans: "a b"},
		{name: "ssubscribe", args: "SSUBSCRIBE a b", chans: "a b"},
		{name: "publish", args: "PUBLISH c m", chans: "c"},
		{name: "spublish", args: "SPUBLISH c m", chans: "c"},
		{name: "pubsub|numsub", args: "PUBSUB NUMSUB x y", chans: "x y"},
		{name: "pubsub|shardnumsub", args: "PUBSUB SHARDNUMSUB x", chans: "x"},
		{name: "select", args: "SELECT 3", dbs: "3"},
		{name: "move", args: "MOVE k 3", dbs: "3", reloc: RelocMove},
		{name: "copy", args: "COPY a b DB 3 REPLACE", dbs: "3", reloc: RelocCopy},
		{name: "copy", args: "COPY a b REPLACE", reloc: RelocCopy},
		{name: "swapdb", args: "SWAPDB 0 1", dbs: "0 1", reloc: RelocSwap, restricted: true},
		{name: "rename", args: "RENAME a b", reloc: RelocRename},
		{name: "flushdb", args: "FLUSHDB", reloc: RelocFlush, restricted: true},
		{name: "flushall", args: "FLUSHALL", reloc: RelocFlushAll, restricted: true},
		{name: "info", args: "INFO", restricted: true},
		{name: "lastsave", args: "LASTSAVE", restricted: true},
		{name: "client|list", args: "CLIENT LIST", restricted: true},
		{name: "qsub", args: "QSUB *", filt: true},
		{name: "ping", args: "PING"},
		{name: "command|count", args: "COMMAND COUNT"},
		{name: "client|id", args: "CLIENT ID"},
	}
	for _, tc := range tests {
		c := get(tc.name)
		a := args(tc.args)
		if got := join(c.ChannelArgs(a)); got != tc.chans {
			t.Errorf("%s: channels %q, want %q", tc.args, got, tc.chans)
		}
		var dbs [][]byte
		if c.DBArgs != nil {
			dbs = c.DBArgs(a)
		}
		if got := join(dbs); got != tc.dbs {
			t.Errorf("%s: databases %q, want %q", tc.args, got, tc.dbs)
		}
		if c.Relocates != tc.reloc {
			t.Errorf("%s: relocation %d, want %d", tc.name, c.Relocates, tc.reloc)
		}
		if c.restricted != tc.restricted {
			t.Errorf("%s: restricted %v, want %v", tc.name, c.restricted, tc.restricted)
		}
		if got := c.Flags&FlagFiltered != 0; got != tc.filt {
			t.Errorf("%s: filtered %v, want %v", tc.name, got, tc.filt)
		}
	}
	if kw := get("kwatch"); len(kw.KeyArgs(nil, args("KWATCH a b"))) != 2 {
		t.Error("KWATCH's arguments are not keys")
	}
	for _, name := range []string{"pubsub|channels", "pubsub|shardchannels"} {
		if get(name).Flags&FlagAllChans == 0 {
			t.Errorf("%s does not read every channel", name)
		}
	}
}
