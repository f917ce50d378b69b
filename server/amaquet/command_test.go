package amaquet_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/recached/recached/server/amaquet"
)

// TestCommandResults runs commands and checks the JSON of their RESP3
// replies, and the error codes of their errors.
func TestCommandResults(t *testing.T) {
	e := start(t, amaquet.Options{}, "")
	c := dial(t, e.amq)
	cases := []struct {
		payload string
		result  string // the result's JSON, when code is ""
		code    string
		message string // the error message, when set
	}{
		{cmd("SET", "s", "hello"), `"OK"`, "", ""},
		{cmd("GET", "s"), `"hello"`, "", ""},
		{cmd("GET", "missing"), `null`, "", ""},
		{`{"command":"SET","args":["bin",{"base64":"/wABAg=="}]}`, `"OK"`, "", ""},
		{cmd("GET", "bin"), `{"base64":"/wABAg=="}`, "", ""},
		{cmd("SET", "quote", "a\"b\\c\n\u00e9\u2028"), `"OK"`, "", ""},
		{cmd("GET", "quote"), `"a\"b\\c\n` + "\u00e9\u2028" + `"`, "", ""},
		{`{"command":"SET","args":["esc","\u00e9\ud83d\ude00\/"]}`, `"OK"`, "", ""},
		{cmd("GET", "esc"), `"` + "\u00e9\U0001F600/" + `"`, "", ""},
		{cmd("SET", "n", "9007199254740992"), `"OK"`, "", ""},
		{cmd("INCR", "n"), `"9007199254740993"`, "", ""},
		{cmd("SET", "m", "9007199254740991"), `"OK"`, "", ""},
		{cmd("INCRBY", "m", "1"), `9007199254740992`, "", ""},
		{cmd("DECRBY", "m", "18014398509481985"), `"-9007199254740993"`, "", ""},
		{cmd("INCRBYFLOAT", "f", "1.5"), `"1.5"`, "", ""},
		{cmd("ZADD", "z", "1.5", "a", "2", "b"), `2`, "", ""},
		{cmd("ZSCORE", "z", "a"), `1.5`, "", ""},
		{cmd("ZADD", "zi", "inf", "x"), `1`, "", ""},
		{cmd("ZSCORE", "zi", "x"), `"inf"`, "", ""},
		{cmd("ZRANGE", "z", "0", "-1", "WITHSCORES"), `[["a",1.5],["b",2]]`, "", ""},
		{cmd("HSET", "h", "f1", "v1"), `1`, "", ""},
		{cmd("HGETALL", "h"), `{"f1":"v1"}`, "", ""},
		{cmd("HGETALL", "nohash"), `{}`, "", ""},
		{cmd("SADD", "set", "x"), `1`, "", ""},
		{cmd("SMEMBERS", "set"), `["x"]`, "", ""},
		{cmd("SISMEMBER", "set", "x"), `1`, "", ""},
		{cmd("RPUSH", "l", "a", "b"), `2`, "", ""},
		{cmd("LRANGE", "l", "0", "-1"), `["a","b"]`, "", ""},
		{cmd("LPOS", "l", "zz"), `null`, "", ""},
		{cmd("EXISTS", "s", "l", "nothing"), `2`, "", ""},
		{cmd("PING"), `"PONG"`, "", ""},
		{`{"command":"ping"}`, `"PONG"`, "", ""},
		{`{"command":"ECHO","args":[{"base64":"gA=="}]}`, `{"base64":"gA=="}`, "", ""},
		{cmd("LPUSH", "s", "x"), "", amaquet.CodeWrongType, "WRONGTYPE Operation against a key holding the wrong kind of value"},
		{cmd("RENAME", "missing", "x"), "", amaquet.CodeNotFound, "key not found"},
		{cmd("INCR", "s"), "", amaquet.CodeCommandError, "ERR value is not an integer or out of range"},
		{cmd("GET"), "", amaquet.CodeCommandError, "ERR wrong number of arguments for 'get' command"},
		{cmd("NOSUCH", "a"), "", amaquet.CodeUnknownCommand, "ERR unknown command 'NOSUCH', with args beginning with: 'a' "},
		{cmd("OBJECT", "nosuch"), "", amaquet.CodeUnknownCommand, ""},
		// Connection-scoped commands.
		{cmd("MULTI"), "", amaquet.CodeBadRequest, ""},
		{cmd("EXEC"), "", amaquet.CodeBadRequest, ""},
		{cmd("WATCH", "s"), "", amaquet.CodeBadRequest, ""},
		{cmd("SELECT", "1"), "", amaquet.CodeBadRequest, ""},
		{cmd("SUBSCRIBE", "c"), "", amaquet.CodeBadRequest, ""},
		{cmd("PSUBSCRIBE", "c*"), "", amaquet.CodeBadRequest, ""},
		{cmd("HELLO", "3"), "", amaquet.CodeBadRequest, ""},
		{cmd("AUTH", "x"), "", amaquet.CodeBadRequest, ""},
		{cmd("RESET"), "", amaquet.CodeBadRequest, ""},
		{cmd("QUIT"), "", amaquet.CodeBadRequest, ""},
		{cmd("SYNC", "a*"), "", amaquet.CodeBadRequest, ""},
		{cmd("QSUB", "a*"), "", amaquet.CodeBadRequest, ""},
		{cmd("KWATCH", "a"), "", amaquet.CodeBadRequest, ""},
		{cmd("CLIENT", "REPLY", "OFF"), "", amaquet.CodeBadRequest, ""},
		{`{"transaction":[["SET","t","1"],["MULTI"]]}`, "", amaquet.CodeBadRequest, ""},
		// Transactions.
		{`{"transaction":[["SET","a","1"],["INCR","a"],["LPUSH","a","x"],["GET","a"]]}`, `["OK",2,{"error":{"code":"WRONGTYPE","message":"WRONGTYPE Operation against a key holding the wrong kind of value"}},"2"]`, "", ""},
		{`{"transaction":[["SET","t2","1"],["NOSUCH"]]}`, "", amaquet.CodeUnknownCommand, ""},
		{cmd("EXISTS", "t2"), `0`, "", ""},
		{`{"transaction":[["SET","t3","1"],["GET"]]}`, "", amaquet.CodeCommandError, "ERR wrong number of arguments for 'get' command"},
		{cmd("EXISTS", "t3"), `0`, "", ""},
		// Databases.
		{`{"command":"SET","args":["d","one"],"db":1}`, `"OK"`, "", ""},
		{`{"command":"GET","args":["d"],"db":1}`, `"one"`, "", ""},
		{cmd("GET", "d"), `null`, "", ""},
		{`{"db":2,"transaction":[["SET","d","two"],["GET","d"]]}`, `["OK","two"]`, "", ""},
	}
	for i, tc := range cases {
		f := c.do(amaquet.OpCommand, uint64(i+1), tc.payload)
		en := f.env(t)
		if tc.code == "" {
			if !en.OK || string(en.Result) != tc.result {
				t.Errorf("%s: %s, want result %s", tc.payload, f.payload, tc.result)
			}
			continue
		}
		if en.OK || en.Error.Code != tc.code || tc.message != "" && en.Error.Message != tc.message {
			t.Errorf("%s: %s, want %s %q", tc.payload, f.payload, tc.code, tc.message)
		}
	}
	// The same keyspace as RESP.
	if got := e.respDo(t, "GET", "s"); got != "$5\r\nhello\r\n" {
		t.Errorf("RESP GET s: %q", got)
	}
	if got := e.respDo(t, "EXISTS", "a"); got != ":1\r\n" {
		t.Errorf("RESP EXISTS a: %q", got)
	}
}

// TestResultsAreJSON: every response of a mix of commands is valid JSON
// (RESP3 maps with non-string keys, nested aggregates).
func TestResultsAreJSON(t *testing.T) {
	e := start(t, amaquet.Options{}, "")
	c := dial(t, e.amq)
	for i, p := range []string{
		cmd("XADD", "st", "1-1", "f", "v"),
		cmd("XRANGE", "st", "-", "+"),
		cmd("XINFO", "STREAM", "st"),
		cmd("CONFIG", "GET", "maxclients"),
		cmd("COMMAND", "INFO", "get"),
		cmd("CLIENT", "INFO"),
		cmd("MEMORY", "USAGE", "st"),
		cmd("INFO", "server"),
	} {
		f := c.do(amaquet.OpCommand, uint64(i+1), p)
		if !json.Valid(f.payload) {
			t.Errorf("%s: invalid JSON %q", p, f.payload)
		}
		if !f.env(t).OK {
			t.Errorf("%s: %s", p, f.payload)
		}
	}
	if got := c.result(99, cmd("XRANGE", "st", "-", "+")); got != `[["1-1",["f","v"]]]` {
		t.Errorf("XRANGE %s", got)
	}
	if got := c.result(100, cmd("CONFIG", "GET", "maxclients")); !strings.HasPrefix(got, `{"maxclients":"`) {
		t.Errorf("CONFIG GET %s", got)
	}
}
