package server

import (
	"reflect"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// Lua 5.1's runtime error texts.
//
// gopher-lua words its runtime errors its own way ("attempt to call a
// non-function object", "cannot perform add operation between number and
// nil"); scripts written for Redis print, match and log Lua 5.1's ("attempt
// to call field 'foo' (a nil value)"). luaFaultText rewrites a message
// gopher-lua's VM raised into Lua 5.1's while the failing frame is still on
// the stack (in a message handler): it reads the faulting instruction and
// its operands, and names the value the way Lua 5.1's debug library does,
// by finding the instruction that last loaded its register. When anything
// does not line up (the message was not raised by the instruction at the
// frame's current position, a metamethod was involved, a register cannot be
// read) the message is left as it was.

// Instruction fields of gopher-lua's bytecode (the layout of Lua 5.1's,
// with a 6-bit opcode on top).
func opOf(i uint32) int  { return int(i >> 26) }
func opA(i uint32) int   { return int(i>>18) & 0xff }
func opB(i uint32) int   { return int(i & 0x1ff) }
func opC(i uint32) int   { return int(i>>9) & 0x1ff }
func opBx(i uint32) int  { return int(i & 0x3ffff) }
func opSbx(i uint32) int { return opBx(i) - 0x3ffff>>1 }

// rkConstant is the bit that marks an RK operand as a constant index.
const rkConstant = 1 << 8

// setsA reports whether the opcode writes register A (gopher-lua's opProps,
// which are Lua 5.1's opmodes).
func setsA(op int) bool {
	switch op {
	case lua.OP_SETGLOBAL, lua.OP_SETUPVAL, lua.OP_SETTABLE, lua.OP_SETTABLEKS,
		lua.OP_JMP, lua.OP_EQ, lua.OP_LT, lua.OP_LE, lua.OP_RETURN, lua.OP_TFORLOOP,
		lua.OP_SETLIST, lua.OP_CLOSE, lua.OP_NOP:
		return false
	}
	return true
}

// framePC is the program counter of the frame dbg describes: the index of
// the instruction after the one running. gopher-lua keeps it in the
// frame, which its Debug does not export; the field is read (never
// written) by reflection, and a gopher-lua without it makes the answer
// false, so errors keep gopher-lua's words instead of getting wrong ones.
func framePC(dbg *lua.Debug) (int, bool) {
	f := reflect.ValueOf(dbg).Elem().FieldByName("frame")
	if !f.IsValid() || f.Kind() != reflect.Pointer || f.IsNil() {
		return 0, false
	}
	pc := f.Elem().FieldByName("Pc")
	if !pc.IsValid() || pc.Kind() != reflect.Int {
		return 0, false
	}
	return int(pc.Int()), true
}

// luaFault is the failing Lua frame a message handler looks at.
type luaFault struct {
	L   *lua.LState
	dbg *lua.Debug
	fn  *lua.LFunction
	pc  int // the faulting instruction
}

// reg is register r of the frame, false when it cannot be read.
func (f *luaFault) reg(r int) (lua.LValue, bool) {
	name, v := f.L.GetLocal(f.dbg, r+1)
	return v, name != ""
}

// rk is an RK operand: a constant or a register, and whether it is a
// register.
func (f *luaFault) rk(x int) (v lua.LValue, inReg, ok bool) {
	if x&rkConstant != 0 {
		k := x &^ rkConstant
		if k >= len(f.fn.Proto.Constants) {
			return lua.LNil, false, false
		}
		return f.fn.Proto.Constants[k], false, true
	}
	v, ok = f.reg(x)
	return v, true, ok
}

// luaFaultText returns Lua 5.1's text for msg, an error raised while the
// function at stack level `level` of L ran, or msg unchanged.
func luaFaultText(L *lua.LState, level int, msg string) string {
	dbg, ok := L.GetStack(level)
	if !ok {
		return msg
	}
	fv, err := L.GetInfo("Slf", dbg, lua.LNil)
	if err != nil {
		return msg
	}
	L.Pop(1) // GetInfo's "f" pushed the function
	fn, ok := fv.(*lua.LFunction)
	if !ok || fn.IsG || fn.Proto == nil {
		return msg
	}
	// gopher-lua prefixes the position of the running instruction.
	prefix := dbg.Source + ":" + strconv.Itoa(dbg.CurrentLine) + ": "
	if !strings.HasPrefix(msg, prefix) {
		return msg
	}
	pc, ok := framePC(dbg)
	if !ok || pc < 1 || pc > len(fn.Proto.Code) {
		return msg
	}
	f := &luaFault{L: L, dbg: dbg, fn: fn, pc: pc - 1}
	if text, ok := f.text(msg[len(prefix):]); ok {
		return prefix + text
	}
	return msg
}

// text is Lua 5.1's text for gopher-lua's text, raised by the instruction
// at f.pc.
func (f *luaFault) text(text string) (string, bool) {
	inst := f.fn.Proto.Code[f.pc]
	op := opOf(inst)
	switch {
	case text == "attempt to call a non-function object":
		if op != lua.OP_CALL && op != lua.OP_TAILCALL {
			return "", false
		}
		return f.typeError(opA(inst), "call")
	case strings.HasPrefix(text, "attempt to index a non-table object("):
		r := opB(inst)
		switch op {
		case lua.OP_GETTABLE, lua.OP_GETTABLEKS, lua.OP_SELF:
		case lua.OP_SETTABLE, lua.OP_SETTABLEKS:
			r = opA(inst)
		default:
			return "", false
		}
		// gopher-lua follows __index chains: the failing object must be
		// the register itself, which a value without a metatable is.
		v, ok := f.reg(r)
		if !ok || !strings.HasPrefix(text, "attempt to index a non-table object("+v.Type().String()+")") || f.L.GetMetatable(v) != lua.LNil {
			return "", false
		}
		return f.typeError(r, "index")
	case strings.HasPrefix(text, "cannot perform concat operation"):
		if op != lua.OP_CONCAT {
			return "", false
		}
		return f.concatError(opB(inst), opC(inst))
	case strings.HasPrefix(text, "cannot perform "):
		if op < lua.OP_ADD || op > lua.OP_POW {
			return "", false
		}
		return f.arithError(opB(inst), opC(inst))
	case text == "__unm undefined":
		if op != lua.OP_UNM {
			return "", false
		}
		return f.typeError(opB(inst), "perform arithmetic on")
	case text == "__len undefined":
		if op != lua.OP_LEN {
			return "", false
		}
		return f.typeError(opB(inst), "get length of")
	case strings.HasPrefix(text, "attempt to compare "):
		if op != lua.OP_LT && op != lua.OP_LE {
			return "", false
		}
		return compareText(text)
	case strings.HasPrefix(text, "for statement "):
		if op != lua.OP_FORPREP && op != lua.OP_FORLOOP {
			return "", false
		}
		return f.forError(opA(inst))
	}
	return "", false
}

// forError is Lua 5.1's numeric for loop error: it checks the initial
// value, the limit and the step in that order, and takes strings that
// read as numbers (gopher-lua checks in another order and takes only
// numbers: a loop Lua 5.1 runs gets no Lua 5.1 text).
func (f *luaFault) forError(a int) (string, bool) {
	for i, what := range []string{"initial value", "limit", "step"} {
		v, ok := f.reg(a + i)
		if !ok {
			return "", false
		}
		if !numeric(v) {
			return "'for' " + what + " must be a number", true
		}
	}
	return "", false
}

// typeError is Lua 5.1's "attempt to <what> <kind> '<name>' (a <type>
// value)", or "attempt to <what> a <type> value" for a value with no name.
func (f *luaFault) typeError(r int, what string) (string, bool) {
	v, ok := f.reg(r)
	if !ok {
		return "", false
	}
	return f.typeErrorOf(v, r, true, what)
}

func (f *luaFault) typeErrorOf(v lua.LValue, r int, inReg bool, what string) (string, bool) {
	t := v.Type().String()
	if inReg {
		kind, name, known := f.varInfo(r, 0)
		if !known {
			return "", false
		}
		if kind != "" {
			return "attempt to " + what + " " + kind + " '" + name + "' (a " + t + " value)", true
		}
	}
	return "attempt to " + what + " a " + t + " value", true
}

// arithError names the operand Lua 5.1 blames: the first one that is not a
// number nor a string that reads as one.
func (f *luaFault) arithError(b, c int) (string, bool) {
	lhs, lreg, ok1 := f.rk(b)
	rhs, rreg, ok2 := f.rk(c)
	if !ok1 || !ok2 {
		return "", false
	}
	if hasMeta(f.L, lhs) || hasMeta(f.L, rhs) {
		return "", false
	}
	if !numeric(lhs) {
		return f.typeErrorOf(lhs, b, lreg, "perform arithmetic on")
	}
	if numeric(rhs) {
		return "", false // gopher-lua failed for a reason Lua 5.1 would not
	}
	return f.typeErrorOf(rhs, c, rreg, "perform arithmetic on")
}

// concatError replays Lua 5.1's concatenation of registers b..c, right to
// left, to find the value it blames.
func (f *luaFault) concatError(b, c int) (string, bool) {
	vals := make([]lua.LValue, 0, c-b+1)
	for r := b; r <= c; r++ {
		v, ok := f.reg(r)
		if !ok || hasMeta(f.L, v) {
			return "", false
		}
		vals = append(vals, v)
	}
	isText := func(v lua.LValue) bool {
		t := v.Type()
		return t == lua.LTString || t == lua.LTNumber
	}
	// Each step joins the run of strings ending at the top into one
	// string, so only the rightmost non-string and its left neighbour
	// are ever compared.
	top := len(vals)
	for top > 1 {
		p1, p2 := vals[top-2], vals[top-1]
		if !isText(p1) || !isText(p2) {
			r := top - 2
			if isText(p1) {
				r = top - 1
			}
			return f.typeErrorOf(vals[r], b+r, true, "concatenate")
		}
		n := 2
		for n < top && isText(vals[top-n-1]) {
			n++
		}
		top -= n - 1
		vals[top-1] = lua.LString("")
	}
	return "", false
}

// compareText is Lua 5.1's ordering error: "attempt to compare two table
// values", or "attempt to compare number with nil".
func compareText(text string) (string, bool) {
	t1, t2, ok := strings.Cut(strings.TrimPrefix(text, "attempt to compare "), " with ")
	if !ok || len(t1) < 3 || len(t2) < 3 {
		return "", false
	}
	// Lua 5.1 compares the third letters of the type names.
	if t1[2] == t2[2] {
		return "attempt to compare two " + t1 + " values", true
	}
	return "attempt to compare " + t1 + " with " + t2, true
}

// numeric reports whether Lua 5.1's arithmetic takes v: a number, or a
// string that reads as one.
func numeric(v lua.LValue) bool {
	switch x := v.(type) {
	case lua.LNumber:
		return true
	case lua.LString:
		s := strings.TrimSpace(string(x))
		if h := strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X"); h != s {
			_, err := strconv.ParseUint(h, 16, 64)
			return err == nil
		}
		_, err := strconv.ParseFloat(s, 64)
		return err == nil || strings.Contains(err.Error(), "range")
	}
	return false
}

// hasMeta reports whether v has a metatable that may have changed what
// gopher-lua did (strings' is the string library's and changes nothing
// here).
func hasMeta(L *lua.LState, v lua.LValue) bool {
	if v.Type() == lua.LTString {
		return false
	}
	return L.GetMetatable(v) != lua.LNil
}

// varInfo is Lua 5.1's getobjname: what register r holds at the faulting
// instruction, as "local", "global", "field", "upvalue" or "method" and a
// name, or "" when it has none.
func (f *luaFault) varInfo(r, depth int) (kind, name string, known bool) {
	name, isLocal, known := localName(f.fn.Proto, r, f.pc)
	switch {
	case !known || depth > 8:
		return "", "", false
	case isLocal:
		return "local", name, true
	}
	p := f.fn.Proto
	inst, ok := lastWrite(p, f.pc, r)
	if !ok {
		return "", "", true
	}
	if orig, ok := foldedInst(p, inst); ok {
		inst = orig // a global or library field read as a constant (script_fold.go)
	}
	switch opOf(inst) {
	case lua.OP_GETGLOBAL:
		if k := opBx(inst); k < len(p.Constants) {
			if s, ok := p.Constants[k].(lua.LString); ok {
				return "global", string(s), true
			}
		}
	case lua.OP_MOVE, lua.OP_MOVEN:
		if b := opB(inst); b < opA(inst) {
			return f.varInfo(b, depth+1)
		}
	case lua.OP_GETTABLE, lua.OP_GETTABLEKS:
		return "field", constantName(p, opC(inst)), true
	case lua.OP_GETUPVAL:
		if b := opB(inst); b < len(p.DbgUpvalues) {
			return "upvalue", p.DbgUpvalues[b], true
		}
		return "upvalue", "?", true
	case lua.OP_SELF:
		return "method", constantName(p, opC(inst)), true
	}
	return "", "", true
}

// localName is the name of the local variable in register r at pc.
// known is false when gopher-lua's debug information cannot tell: it
// records where a local's scope starts correctly, but writes the end of a
// block's scopes into the entries numbered like the block's registers, not
// into the block's own entries. So the entries are trusted only when they
// all end at the function's last instruction, which only the function's
// own block end writes, and only into the entries of its outermost block's
// locals: then every local is in that block and local i is register i.
// Otherwise a register no declared local can be in is still known to be a
// temporary.
func localName(p *lua.FunctionProto, r, pc int) (name string, isLocal, known bool) {
	declared := 0
	uniform := true
	for _, l := range p.DbgLocals {
		if l.StartPc <= pc {
			declared++
		}
		if l.EndPc != len(p.Code)-1 {
			uniform = false
		}
	}
	if r >= declared {
		return "", false, true
	}
	if !uniform {
		return "", false, false
	}
	return p.DbgLocals[r].Name, true, true
}

// constantName is the name an RK operand gives a field: its string
// constant, or "?".
func constantName(p *lua.FunctionProto, x int) string {
	if x&rkConstant != 0 {
		if k := x &^ rkConstant; k < len(p.Constants) {
			if s, ok := p.Constants[k].(lua.LString); ok {
				return string(s)
			}
		}
	}
	return "?"
}

// lastWrite is Lua 5.1's symbolic execution: the last instruction before
// lastpc that wrote register r, following forward jumps that land at or
// before lastpc.
func lastWrite(p *lua.FunctionProto, lastpc, r int) (uint32, bool) {
	last := -1
	for pc := 0; pc < lastpc && pc < len(p.Code); pc++ {
		inst := p.Code[pc]
		op, a := opOf(inst), opA(inst)
		if setsA(op) && a == r {
			last = pc
		}
		switch op {
		case lua.OP_LOADNIL:
			if a <= r && r <= opB(inst) {
				last = pc
			}
		case lua.OP_CALL, lua.OP_TAILCALL:
			if r >= a {
				last = pc
			}
		case lua.OP_TFORLOOP:
			if r >= a+2 {
				last = pc
			}
		case lua.OP_JMP, lua.OP_FORLOOP, lua.OP_FORPREP:
			if dest := pc + 1 + opSbx(inst); pc < dest && dest <= lastpc {
				pc = dest - 1
			}
		case lua.OP_CLOSURE:
			if bx := opBx(inst); bx < len(p.FunctionPrototypes) {
				pc += int(p.FunctionPrototypes[bx].NumUpvalues)
			}
		}
	}
	if last < 0 {
		return 0, false
	}
	return p.Code[last], true
}

// openProtectedCalls replaces the globals' pcall and xpcall by ones whose
// caught messages are in Lua 5.1's words, as the scripts' own errors are.
func openProtectedCalls(L *lua.LState, globals *lua.LTable) {
	translate := L.NewFunction(faultHandler)
	globals.RawSetString("pcall", L.NewFunction(func(L *lua.LState) int {
		L.CheckAny(1)
		if v := L.Get(1); !callable(L, v) {
			L.Push(lua.LFalse)
			L.Push(lua.LString("attempt to call a " + v.Type().String() + " value"))
			return 2
		}
		return protectedCall(L, L.GetTop()-1, translate)
	}))
	globals.RawSetString("xpcall", L.NewFunction(func(L *lua.LState) int {
		fn, handler := L.CheckAny(1), L.CheckAny(2)
		L.SetTop(0)
		L.Push(fn)
		// The caller's handler sees the message in Lua 5.1's words.
		return protectedCall(L, 0, L.NewFunction(func(L *lua.LState) int {
			obj := L.Get(1)
			if s, ok := obj.(lua.LString); ok {
				obj = lua.LString(luaFaultText(L, 1, string(s)))
			}
			L.SetTop(0)
			L.Push(handler)
			L.Push(obj)
			L.Call(1, 1)
			return 1
		}))
	}))
}

// faultHandler is a message handler that rewrites a gopher-lua runtime
// error into Lua 5.1's words (luaFaultText) and leaves other values alone.
func faultHandler(L *lua.LState) int {
	obj := L.Get(1)
	if s, ok := obj.(lua.LString); ok {
		obj = lua.LString(luaFaultText(L, 1, string(s)))
	}
	L.Push(obj)
	return 1
}

// callable reports whether v can be called: a function, or a value with a
// __call metamethod.
func callable(L *lua.LState, v lua.LValue) bool {
	return v.Type() == lua.LTFunction || L.GetMetaField(v, "__call").Type() == lua.LTFunction
}

// protectedCall calls the function below the top nargs values with
// handler as its message handler, and returns pcall's results: true and
// the function's results, or false and the error.
func protectedCall(L *lua.LState, nargs int, handler *lua.LFunction) int {
	if err := L.PCall(nargs, lua.MultRet, handler); err != nil {
		L.Push(lua.LFalse)
		if ae, ok := err.(*lua.ApiError); ok {
			L.Push(ae.Object)
		} else {
			L.Push(lua.LString(err.Error()))
		}
		return 2
	}
	L.Insert(lua.LTrue, 1)
	return L.GetTop()
}
