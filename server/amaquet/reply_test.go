package amaquet

import "testing"

// TestReplyMapping maps RESP3 replies to JSON as SPEC section 10 lists.
func TestReplyMapping(t *testing.T) {
	cases := []struct{ resp, json string }{
		{"+OK\r\n", `{"ok":true,"result":"OK"}`},
		{"$5\r\nhello\r\n", `{"ok":true,"result":"hello"}`},
		{"$0\r\n\r\n", `{"ok":true,"result":""}`},
		{"$3\r\n\xff\x00a\r\n", `{"ok":true,"result":{"base64":"/wBh"}}`},
		{"$4\r\na\"\\\x01\r\n", `{"ok":true,"result":"a\"\\\u0001"}`},
		{":42\r\n", `{"ok":true,"result":42}`},
		{":-9007199254740992\r\n", `{"ok":true,"result":-9007199254740992}`},
		{":9007199254740993\r\n", `{"ok":true,"result":"9007199254740993"}`},
		{":-9223372036854775808\r\n", `{"ok":true,"result":"-9223372036854775808"}`},
		{",1.5\r\n", `{"ok":true,"result":1.5}`},
		{",-0.25\r\n", `{"ok":true,"result":-0.25}`},
		{",1e300\r\n", `{"ok":true,"result":1e+300}`},
		{",inf\r\n", `{"ok":true,"result":"inf"}`},
		{",-inf\r\n", `{"ok":true,"result":"-inf"}`},
		{",nan\r\n", `{"ok":true,"result":"nan"}`},
		{"(3492890328409238509324850943850943825024385\r\n", `{"ok":true,"result":"3492890328409238509324850943850943825024385"}`},
		{"_\r\n", `{"ok":true,"result":null}`},
		{"$-1\r\n", `{"ok":true,"result":null}`},
		{"*-1\r\n", `{"ok":true,"result":null}`},
		{"#t\r\n", `{"ok":true,"result":true}`},
		{"#f\r\n", `{"ok":true,"result":false}`},
		{"*0\r\n", `{"ok":true,"result":[]}`},
		{"*3\r\n:1\r\n$1\r\na\r\n*1\r\n_\r\n", `{"ok":true,"result":[1,"a",[null]]}`},
		{"~2\r\n+a\r\n+b\r\n", `{"ok":true,"result":["a","b"]}`},
		{"%0\r\n", `{"ok":true,"result":{}}`},
		{"%2\r\n+a\r\n:1\r\n$1\r\nb\r\n*1\r\n:2\r\n", `{"ok":true,"result":{"a":1,"b":[2]}}`},
		{"%2\r\n:1\r\n+a\r\n:2\r\n+b\r\n", `{"ok":true,"result":[[1,"a"],[2,"b"]]}`},
		{"%1\r\n$1\r\n\xff\r\n+v\r\n", `{"ok":true,"result":[[{"base64":"/w=="},"v"]]}`},
		{"%1\r\n*1\r\n+a\r\n+v\r\n", `{"ok":true,"result":[[["a"],"v"]]}`},
		{"=15\r\ntxt:Some string\r\n", `{"ok":true,"result":"Some string"}`},
		{"|1\r\n+key-popularity\r\n%1\r\n$1\r\na\r\n,0.1\r\n:7\r\n", `{"ok":true,"result":7}`},
		{"*2\r\n+OK\r\n-ERR no such key\r\n", `{"ok":true,"result":["OK",{"error":{"code":"NOT_FOUND","message":"key not found"}}]}`},
		{"-ERR no such key\r\n", `{"ok":false,"error":{"code":"NOT_FOUND","message":"key not found"}}`},
		{"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", `{"ok":false,"error":{"code":"WRONGTYPE","message":"WRONGTYPE Operation against a key holding the wrong kind of value"}}`},
		{"-ERR unknown command 'x', with args beginning with: \r\n", `{"ok":false,"error":{"code":"UNKNOWN_COMMAND","message":"ERR unknown command 'x', with args beginning with: "}}`},
		{"-NOPERM no\r\n", `{"ok":false,"error":{"code":"FORBIDDEN","message":"NOPERM no"}}`},
		{"-NOAUTH Authentication required.\r\n", `{"ok":false,"error":{"code":"UNAUTHENTICATED","message":"NOAUTH Authentication required."}}`},
		{"-ERR value is not an integer or out of range\r\n", `{"ok":false,"error":{"code":"COMMAND_ERROR","message":"ERR value is not an integer or out of range"}}`},
		{"!21\r\nSYNTAX invalid syntax\r\n", `{"ok":false,"error":{"code":"COMMAND_ERROR","message":"SYNTAX invalid syntax"}}`},
	}
	for _, tc := range cases {
		got, err := appendReply(nil, []byte(tc.resp))
		if err != nil || string(got) != tc.json {
			t.Errorf("%q: %s %v, want %s", tc.resp, got, err, tc.json)
		}
	}
	for _, bad := range []string{"", "$5\r\nab\r\n", "*2\r\n:1\r\n", ":x\r\n", "?\r\n", "$1\r\nab", "#x\r\n"} {
		if got, err := appendReply(nil, []byte(bad)); err == nil {
			t.Errorf("%q mapped to %s", bad, got)
		}
	}
}
