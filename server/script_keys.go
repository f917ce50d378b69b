package server

import (
	"github.com/yuin/gopher-lua/ast"
)

// A script whose code provably reaches no key but those it declares runs
// with only its declared keys' shards locked, not the whole database
// (LOCKS.md): the proof is on the code, made once when the script is
// compiled, so that a run never finds out half-way that it needs a shard
// it does not hold. Any script the proof cannot cover locks the whole
// database, as Redis lets a script outside cluster mode touch any key.
//
// The proof is conservative. Every redis.call and redis.pcall must name a
// command as a string literal, one whose keys are at fixed positions (no
// movable keys, no pattern keys, nothing touching the whole database or
// another database), with every key argument written KEYS[…]; the
// identifiers redis and KEYS appear in no other way (KEYS may be counted,
// #KEYS, but not changed, aliased or passed), are never declared anew,
// and nothing that reaches globals by name or runs code made at run time
// (_G, loadstring, getfenv, …) appears at all.

// opaqueNames are the identifiers through which code could reach redis or
// KEYS without naming them, or run code the proof has not seen.
var opaqueNames = map[string]bool{
	"_G": true, "loadstring": true, "load": true, "getfenv": true, "setfenv": true,
	"dofile": true, "loadfile": true, "require": true, "module": true, "debug": true,
	"rawget": true, "rawset": true, "rawequal": true,
}

// keyProof walks a script's code for declaredKeysOnly; ok turns false at
// the first construct it cannot prove harmless.
type keyProof struct {
	tbl *Table
	ok  bool
}

// declaredKeysOnly reports whether the compiled chunk can touch no key but
// the ones in KEYS.
func declaredKeysOnly(chunk []ast.Stmt, tbl *Table) bool {
	p := &keyProof{tbl: tbl, ok: true}
	p.stmts(chunk)
	return p.ok
}

// names fails the proof when a new variable shadows a name it relies on.
func (p *keyProof) names(ns []string) {
	for _, n := range ns {
		if n == "redis" || n == "KEYS" || opaqueNames[n] {
			p.ok = false
		}
	}
}

func (p *keyProof) stmts(list []ast.Stmt) {
	for _, st := range list {
		if !p.ok {
			return
		}
		p.stmt(st)
	}
}

func (p *keyProof) stmt(st ast.Stmt) {
	switch st := st.(type) {
	case *ast.AssignStmt:
		for _, e := range st.Lhs {
			p.target(e)
		}
		p.exprs(st.Rhs)
	case *ast.LocalAssignStmt:
		p.names(st.Names)
		p.exprs(st.Exprs)
	case *ast.FuncCallStmt:
		p.expr(st.Expr)
	case *ast.DoBlockStmt:
		p.stmts(st.Stmts)
	case *ast.WhileStmt:
		p.expr(st.Condition)
		p.stmts(st.Stmts)
	case *ast.RepeatStmt:
		p.stmts(st.Stmts)
		p.expr(st.Condition)
	case *ast.IfStmt:
		p.expr(st.Condition)
		p.stmts(st.Then)
		p.stmts(st.Else)
	case *ast.NumberForStmt:
		p.names([]string{st.Name})
		p.expr(st.Init)
		p.expr(st.Limit)
		if st.Step != nil {
			p.expr(st.Step)
		}
		p.stmts(st.Stmts)
	case *ast.GenericForStmt:
		p.names(st.Names)
		p.exprs(st.Exprs)
		p.stmts(st.Stmts)
	case *ast.FuncDefStmt:
		if st.Name.Func != nil {
			p.target(st.Name.Func)
		} else {
			p.target(st.Name.Receiver) // function obj:method(): sets obj.method
		}
		p.expr(st.Func)
	case *ast.ReturnStmt:
		p.exprs(st.Exprs)
	case *ast.BreakStmt, *ast.LabelStmt, *ast.GotoStmt:
	default:
		p.ok = false
	}
}

// target checks an assignment's target: KEYS's elements may not change.
func (p *keyProof) target(e ast.Expr) {
	switch e := e.(type) {
	case *ast.IdentExpr:
		if e.Value == "redis" || e.Value == "KEYS" || opaqueNames[e.Value] {
			p.ok = false
		}
	case *ast.AttrGetExpr:
		if id, ok := e.Object.(*ast.IdentExpr); ok && id.Value == "KEYS" {
			p.ok = false
			return
		}
		p.expr(e)
	default:
		p.expr(e)
	}
}

func (p *keyProof) exprs(list []ast.Expr) {
	for _, e := range list {
		p.expr(e)
	}
}

func (p *keyProof) expr(e ast.Expr) {
	if !p.ok {
		return
	}
	switch e := e.(type) {
	case *ast.TrueExpr, *ast.FalseExpr, *ast.NilExpr, *ast.NumberExpr, *ast.StringExpr, *ast.Comma3Expr:
	case *ast.IdentExpr:
		// A bare redis or KEYS is the value itself, passed or aliased.
		if e.Value == "redis" || e.Value == "KEYS" || opaqueNames[e.Value] {
			p.ok = false
		}
	case *ast.AttrGetExpr:
		if id, ok := e.Object.(*ast.IdentExpr); ok {
			switch id.Value {
			case "KEYS":
				p.expr(e.Key)
				return
			case "redis":
				// redis.log, redis.sha1hex …: anything but the two
				// functions that run commands, unless called (call).
				k, ok := e.Key.(*ast.StringExpr)
				if !ok || k.Value == "call" || k.Value == "pcall" {
					p.ok = false
				}
				return
			}
		}
		p.expr(e.Object)
		p.expr(e.Key)
	case *ast.TableExpr:
		for _, f := range e.Fields {
			if f.Key != nil {
				p.expr(f.Key)
			}
			p.expr(f.Value)
		}
	case *ast.FuncCallExpr:
		p.call(e)
	case *ast.LogicalOpExpr:
		p.expr(e.Lhs)
		p.expr(e.Rhs)
	case *ast.RelationalOpExpr:
		p.expr(e.Lhs)
		p.expr(e.Rhs)
	case *ast.StringConcatOpExpr:
		p.expr(e.Lhs)
		p.expr(e.Rhs)
	case *ast.ArithmeticOpExpr:
		p.expr(e.Lhs)
		p.expr(e.Rhs)
	case *ast.UnaryMinusOpExpr:
		p.expr(e.Expr)
	case *ast.UnaryNotOpExpr:
		p.expr(e.Expr)
	case *ast.UnaryLenOpExpr:
		if id, ok := e.Expr.(*ast.IdentExpr); ok && id.Value == "KEYS" {
			return // #KEYS
		}
		p.expr(e.Expr)
	case *ast.FunctionExpr:
		p.names(e.ParList.Names)
		p.stmts(e.Stmts)
	default:
		p.ok = false
	}
}

// call checks a function call; redis.call and redis.pcall must run a
// command whose key arguments are all KEYS[…].
func (p *keyProof) call(e *ast.FuncCallExpr) {
	if e.Receiver != nil {
		p.expr(e.Receiver) // obj:method(…)
		p.exprs(e.Args)
		return
	}
	if !isRedisCall(e.Func) {
		p.expr(e.Func)
		p.exprs(e.Args)
		return
	}
	p.exprs(e.Args)
	if p.ok && !p.keyArgsDeclared(e.Args) {
		p.ok = false
	}
}

// keyArgsDeclared reports whether the arguments of a redis.call name a
// command with fixed key positions, each holding a KEYS[…].
func (p *keyProof) keyArgsDeclared(args []ast.Expr) bool {
	if len(args) == 0 {
		return true // an error at run time, touching nothing
	}
	name, ok := args[0].(*ast.StringExpr)
	if !ok {
		return false
	}
	cmd := p.tbl.Lookup([]byte(name.Value))
	if cmd == nil {
		return true // unknown command: an error at run time
	}
	if cmd.subs != nil {
		if len(args) < 2 {
			return true // a container alone: an arity error
		}
		sub, ok := args[1].(*ast.StringExpr)
		if !ok {
			return false
		}
		if cmd = cmd.Sub([]byte(sub.Value)); cmd == nil {
			return true
		}
	}
	if cmd.Flags&(FlagAllKeys|FlagAllDBs|FlagMovableKeys) != 0 || cmd.Keys != nil || cmd.PatternKeys != nil || cmd.Wraps > 0 || cmd.DBArgs != nil {
		return false
	}
	if cmd.FirstKey == 0 {
		return true
	}
	// The number of arguments must be known: a call or ... last expands
	// to any number of values.
	switch args[len(args)-1].(type) {
	case *ast.FuncCallExpr, *ast.Comma3Expr:
		return false
	}
	if len(args) > 255 {
		return false // positions are counted in a byte below
	}
	pos := make([][]byte, len(args))
	for i := range pos {
		pos[i] = []byte{byte(i)}
	}
	for _, k := range cmd.KeyArgs(nil, pos) {
		if !isKeysIndex(args[k[0]]) {
			return false
		}
	}
	return true
}

// isRedisCall reports whether f is redis.call or redis.pcall.
func isRedisCall(f ast.Expr) bool {
	a, ok := f.(*ast.AttrGetExpr)
	if !ok {
		return false
	}
	id, ok := a.Object.(*ast.IdentExpr)
	k, isStr := a.Key.(*ast.StringExpr)
	return ok && id.Value == "redis" && isStr && (k.Value == "call" || k.Value == "pcall")
}

// isKeysIndex reports whether e is KEYS[…].
func isKeysIndex(e ast.Expr) bool {
	a, ok := e.(*ast.AttrGetExpr)
	if !ok {
		return false
	}
	id, ok := a.Object.(*ast.IdentExpr)
	return ok && id.Value == "KEYS"
}
