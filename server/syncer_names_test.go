package server

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"
)

// TestSyncerNamesNoCommand checks that the syncer decides from the command
// table and the effect alone: no string in syncer.go is the name of a
// command or subcommand, so that a command's rights and the way its
// effects move keys are written down once, in its table entry.
func TestSyncerNamesNoCommand(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "syncer.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	table := newTable()
	ast.Inspect(f, func(n ast.Node) bool {
		if _, ok := n.(*ast.ImportSpec); ok {
			return false
		}
		lit, ok := n.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return true
		}
		v, err := strconv.Unquote(lit.Value)
		if err != nil {
			t.Fatalf("%s: %v", fset.Position(lit.Pos()), err)
		}
		parent, sub, isSub := strings.Cut(v, "|")
		cmd := table.Lookup([]byte(parent))
		if cmd != nil && isSub {
			cmd = cmd.Sub([]byte(sub))
		}
		if cmd != nil {
			t.Errorf("%s: syncer.go names the command %q; describe what it needs in the command table", fset.Position(lit.Pos()), v)
		}
		return true
	})
}
