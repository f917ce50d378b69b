package server

import (
	"slices"

	lua "github.com/yuin/gopher-lua"
)

// Globals folded into a state's code.
//
// A script reads a global through its environment: the environment table
// is empty (so that assigning any global reaches its __newindex, the
// error), and its __index is the globals table; a library is a read-only
// proxy whose __index is the library's table. So `redis.call` costs four
// table lookups and two metatable lookups before the function is called.
// But a state's globals never change while it lives: the environment and
// the library tables are read-only, rawset and setmetatable refuse them,
// and the scripts cannot reach the globals table or a library's own table
// (except the string library's, through the strings' metatable). Only KEYS
// and ARGV are set by runScript, and they keep their tables from run to
// run unless a script changed them (luaArray.fill), which drops the
// state's folded code. So each state runs the scripts' code with the
// globals it holds, and the fields read from a library right after its
// global, read as constants when they are tables or functions: the instruction GETGLOBAL, or GETTABLEKS, is
// replaced by LOADK of the value, in a copy of the script's prototypes
// kept by the state (luaState.fns). A name that is not a global stays
// GETGLOBAL, which raises the missing-global error when it runs.
//
// The value of a folded instruction is at constant k of the copy and the
// instruction it replaced at k+1 (foldedInst), for the names in runtime
// errors (script_errors.go).

// maxConstant is the largest constant index an instruction's Bx operand
// holds.
const maxConstant = 1<<18 - 1

// folded returns p with the reads of the state's globals and library
// fields turned into constants, nested functions included; p itself when
// it reads none.
func (st *luaState) folded(p *lua.FunctionProto) *lua.FunctionProto {
	var cp *lua.FunctionProto // the copy, made at the first change
	clone := func() {
		if cp == nil {
			c := *p
			c.Code = slices.Clone(p.Code)
			c.Constants = slices.Clone(p.Constants)
			c.FunctionPrototypes = slices.Clone(p.FunctionPrototypes)
			cp = &c
		}
	}
	fold := func(pc int, v lua.LValue) bool {
		if plainConstant(v) {
			return false // foldedInst could not tell it from the code's constants
		}
		clone()
		k := len(cp.Constants)
		if k+1 > maxConstant {
			return false
		}
		inst := p.Code[pc]
		cp.Constants = append(cp.Constants, v, lua.LNumber(inst))
		cp.Code[pc] = uint32(lua.OP_LOADK)<<26 | uint32(opA(inst))<<18 | uint32(k)
		return true
	}
	targets := jumpTargets(p.Code)
	var lib *lua.LTable // the library the previous instruction loaded
	for pc := 0; pc < len(p.Code); pc++ {
		inst := p.Code[pc]
		prev := lib
		lib = nil
		switch opOf(inst) {
		case lua.OP_SETLIST:
			if opC(inst) == 0 {
				pc++ // the next word is the count, not an instruction
			}
		case lua.OP_GETGLOBAL:
			name, ok := p.Constants[opBx(inst)].(lua.LString)
			if !ok {
				continue
			}
			v := st.globals.RawGetString(string(name))
			if v != lua.LNil && fold(pc, v) {
				lib = st.library(string(name), v)
			}
		case lua.OP_GETTABLEKS:
			// A field of the library loaded into register B just
			// before, unless a jump lands here with B holding
			// something else.
			if prev == nil || targets[pc] || opB(inst) != opA(p.Code[pc-1]) || opC(inst)&rkConstant == 0 {
				continue
			}
			name, ok := p.Constants[opC(inst)&^rkConstant].(lua.LString)
			if !ok {
				continue
			}
			if v := prev.RawGetString(string(name)); v != lua.LNil {
				fold(pc, v)
			}
		}
	}
	for i, sub := range p.FunctionPrototypes {
		if f := st.folded(sub); f != sub {
			clone()
			cp.FunctionPrototypes[i] = f
		}
	}
	if cp == nil {
		return p
	}
	return cp
}

// library returns the table behind the library proxy v, the global name,
// whose fields may be folded: nil for any other global, and for the string
// library, whose table scripts can reach (and change) through the strings'
// metatable.
func (st *luaState) library(name string, v lua.LValue) *lua.LTable {
	t, ok := v.(*lua.LTable)
	if !ok || name == lua.StringLibName || t == st.env || !st.protected[t] {
		return nil
	}
	mt, ok := t.Metatable.(*lua.LTable)
	if !ok {
		return nil
	}
	lib, _ := mt.RawGetString("__index").(*lua.LTable)
	return lib
}

// jumpTargets marks the instructions of code that a jump, or a skip of
// the next instruction, lands on.
func jumpTargets(code []uint32) []bool {
	t := make([]bool, len(code)+2)
	for pc := 0; pc < len(code); pc++ {
		inst := code[pc]
		switch opOf(inst) {
		case lua.OP_JMP, lua.OP_FORLOOP, lua.OP_FORPREP:
			if to := pc + 1 + opSbx(inst); to >= 0 && to < len(t) {
				t[to] = true
			}
		case lua.OP_EQ, lua.OP_LT, lua.OP_LE, lua.OP_TEST, lua.OP_TESTSET, lua.OP_TFORLOOP:
			t[pc+2] = true
		case lua.OP_LOADBOOL:
			if opC(inst) != 0 {
				t[pc+2] = true
			}
		case lua.OP_SETLIST:
			if opC(inst) == 0 {
				pc++
			}
		}
	}
	return t
}

// foldedInst returns the instruction the LOADK inst of p replaced, false
// when inst loads a constant of the script's code.
func foldedInst(p *lua.FunctionProto, inst uint32) (uint32, bool) {
	k := opBx(inst)
	if opOf(inst) != lua.OP_LOADK || k+1 >= len(p.Constants) {
		return 0, false
	}
	if plainConstant(p.Constants[k]) {
		return 0, false
	}
	orig, ok := p.Constants[k+1].(lua.LNumber)
	return uint32(orig), ok
}

// plainConstant reports whether v is of a type the compiler makes
// constants of: only tables and functions are folded.
func plainConstant(v lua.LValue) bool {
	switch v.(type) {
	case lua.LString, lua.LNumber, lua.LBool, *lua.LNilType:
		return true
	}
	return false
}
