package server

import (
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"
)

// compileTest compiles a script's code as load does.
func compileTest(t *testing.T, code string) *lua.FunctionProto {
	t.Helper()
	chunk, err := parse.Parse(strings.NewReader(code), "user_script")
	if err != nil {
		t.Fatal(err)
	}
	p, err := lua.Compile(chunk, "user_script")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// opsOf returns the opcodes of p's code.
func opsOf(p *lua.FunctionProto) []int {
	ops := make([]int, len(p.Code))
	for i, inst := range p.Code {
		ops[i] = opOf(inst)
	}
	return ops
}

// TestFolded checks which reads folded turns into constants: globals and
// the fields of a library read right after it, not a missing global, not
// the string library's fields, not a field a jump lands on; and that the
// replaced instruction is kept for the error texts.
func TestFolded(t *testing.T) {
	st := newLuaState(&luaRand{})
	defer st.L.Close()
	st.keys.fill(st, "KEYS", [][]byte{[]byte("k")})
	tests := []struct {
		code string
		pc   int // an instruction of the main function
		op   int // its opcode once folded
	}{
		{"return redis.call('incr', KEYS[1])", 0, lua.OP_LOADK},                     // redis
		{"return redis.call('incr', KEYS[1])", 1, lua.OP_LOADK},                     // .call
		{"return redis.call('incr', KEYS[1])", 3, lua.OP_LOADK},                     // KEYS
		{"return nope.call()", 0, lua.OP_GETGLOBAL},                                 // missing: raises when run
		{"return string.len('x')", 1, lua.OP_GETTABLEKS},                            // string's table is reachable
		{"return math.pi", 1, lua.OP_GETTABLEKS},                                    // a number stays a read
		{"local r = redis local x = 1 return r.call('ping')", 2, lua.OP_GETTABLEKS}, // not right after
	}
	for _, tc := range tests {
		p := st.folded(compileTest(t, tc.code))
		if got := opOf(p.Code[tc.pc]); got != tc.op {
			t.Errorf("%s: instruction %d is %d, want %d (code %v)", tc.code, tc.pc, got, tc.op, opsOf(p))
		}
	}

	// Nested functions are folded; the original prototype is unchanged.
	orig := compileTest(t, "local function f() return cjson.encode({}) end return f()")
	p := st.folded(orig)
	if p == orig || p.FunctionPrototypes[0] == orig.FunctionPrototypes[0] {
		t.Fatal("nested function not folded")
	}
	inner := p.FunctionPrototypes[0]
	if opOf(inner.Code[0]) != lua.OP_LOADK || opOf(orig.FunctionPrototypes[0].Code[0]) != lua.OP_GETGLOBAL {
		t.Fatalf("nested code %v, original %v", opsOf(inner), opsOf(orig.FunctionPrototypes[0]))
	}
	if was, ok := foldedInst(inner, inner.Code[0]); !ok || was != orig.FunctionPrototypes[0].Code[0] {
		t.Fatalf("foldedInst = %x, %v", was, ok)
	}

	// A field read that a jump lands on keeps its read: the register may
	// hold another value there. gopher-lua's compiler puts a MOVE there;
	// the code is changed to jump straight to the read.
	q := compileTest(t, "local a = true return (a or redis).call('ping')")
	ops := opsOf(q)
	if len(ops) < 6 || ops[2] != lua.OP_JMP || ops[3] != lua.OP_GETGLOBAL || ops[4] != lua.OP_MOVE || ops[5] != lua.OP_GETTABLEKS {
		t.Fatalf("unexpected code %v", ops)
	}
	q.Code[4] = q.Code[3] // GETGLOBAL redis again, so that the read follows it
	if got := opOf(st.folded(q).Code[5]); got != lua.OP_GETTABLEKS {
		t.Errorf("field read a jump lands on folded: %d", got)
	}
}
