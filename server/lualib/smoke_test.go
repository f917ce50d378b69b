package lualib

import "testing"

func TestSmoke(t *testing.T) {
	runCases(t, []luaCase{
		{"enc", `return cjson.encode({0.1, 1e20, 1e-5, 123456789012345678, 3.14159265358979, -0.0, 100, 2^53})`, `[0.1,1e+20,1e-05,1.2345678901235e+17,3.1415926535898,-0,100,9.007199254741e+15]`},
		{"dec", `return table.concat(cjson.decode("[0.0, -5e3, -1, 0.3e-3, 1023.2, 0e10]"), " ")`, "0 -5000 -1 0.0003 1023.2 0"},
		{"err", `return select(2, pcall(cjson.decode, 'x'))`, "Expected value but found invalid token at character 1"},
		{"packd", hexOf(`cmsgpack.pack(0.1)`), "cb3fb999999999999a"},
		{"packi", hexOf(`cmsgpack.pack(-1099511627776)`), "d3ffffff0000000000"},
		{"argerr", `return select(2, pcall(cjson.encode))`, "bad argument #1 to '?' (expected 1 argument)"},
		{"argerr2", `local ok, e = pcall(function() return cjson.encode() end) return e`, "bad argument #1 to 'encode' (expected 1 argument)"},
	})
}
