package server_test

import (
	"bytes"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/recached/recached/server"
	"github.com/recached/recached/server/servertest"
)

// Redis has no json or ratelimit type, so these commands are checked
// against golden replies instead of the differential harness: exact bytes
// over a real TCP connection, in RESP2 and in RESP3.

// golden is one command and its exact RESP2 reply; in RESP3 a nil bulk
// string becomes the null type and nothing else changes for these
// commands.
type golden struct {
	args  []string
	reply string
}

func gbulk(s string) string { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }

var jsonGolden = []golden{
	{[]string{"JSET", "doc", "$", `{"user":{"name":"Ada","langs":["en","fr"]},"visits":41,"ratio":0.5}`}, "+OK\r\n"},
	{[]string{"JGET", "doc"}, gbulk(`{"user":{"name":"Ada","langs":["en","fr"]},"visits":41,"ratio":0.5}`)},
	{[]string{"JGET", "doc", "$.user.langs[-1]"}, gbulk(`"fr"`)},
	{[]string{"JGET", "doc", "$.user.name", "$.visits", "$.nothing"}, gbulk(`{"$.user.name":"Ada","$.visits":41}`)},
	{[]string{"JGET", "doc", "$.nothing"}, "$-1\r\n"},
	{[]string{"JGET", "nodoc"}, "$-1\r\n"},
	{[]string{"JTYPE", "doc", "$.visits"}, "+integer\r\n"},
	{[]string{"JTYPE", "doc", "$.ratio"}, "+number\r\n"},
	{[]string{"JTYPE", "doc", "$.user"}, "+object\r\n"},
	{[]string{"JTYPE", "doc", "$.nothing"}, "$-1\r\n"},
	{[]string{"JNUMINCRBY", "doc", "$.visits", "1"}, gbulk("42")},
	{[]string{"JNUMINCRBY", "doc", "$.ratio", "0.25"}, gbulk("0.75")},
	{[]string{"JARRAPPEND", "doc", "$.user.langs", `"de"`, `"it"`}, ":4\r\n"},
	{[]string{"JARRLEN", "doc", "$.user.langs"}, ":4\r\n"},
	{[]string{"JSTRLEN", "doc", "$.user.name"}, ":3\r\n"},
	{[]string{"JOBJKEYS", "doc", "$.user"}, "*2\r\n$4\r\nname\r\n$5\r\nlangs\r\n"},
	{[]string{"JOBJKEYS", "doc", "$.nothing"}, "$-1\r\n"},
	{[]string{"JMERGE", "doc", "$", `{"user":{"name":null,"email":"ada@example.com"},"ratio":null}`}, "+OK\r\n"},
	{[]string{"JGET", "doc"}, gbulk(`{"user":{"langs":["en","fr","de","it"],"email":"ada@example.com"},"visits":42}`)},
	{[]string{"JSET", "doc", `$["odd key"]`, `{"a b":[true,false,null]}`, "NX"}, "+OK\r\n"},
	{[]string{"JSET", "doc", `$["odd key"]`, `1`, "NX"}, "$-1\r\n"},
	{[]string{"JGET", "doc", `$["odd key"]["a b"][0]`}, gbulk(`true`)},
	{[]string{"JDEL", "doc", "$.user.langs[0]"}, ":1\r\n"},
	{[]string{"JDEL", "doc", "$.user.langs[9]"}, ":0\r\n"},
	{[]string{"JGET", "doc", ".user.langs"}, gbulk(`["fr","de","it"]`)},
	{[]string{"TYPE", "doc"}, "+json\r\n"},
	{[]string{"OBJECT", "ENCODING", "doc"}, gbulk("raw")},
	// Errors name the problem.
	{[]string{"JSET", "doc", "$.visits.x", "1"}, "-ERR '$.visits' is a number, not an object\r\n"},
	{[]string{"JSET", "doc", "$.user.langs.x", "1"}, "-ERR '$.user.langs' is an array, not an object\r\n"},
	{[]string{"JSET", "doc", "$.a.b", "1"}, "-ERR '$.a' does not exist\r\n"},
	{[]string{"JSET", "doc", "$.user", `{"x":}`}, "-ERR invalid JSON: unexpected '}' at offset 5\r\n"},
	{[]string{"JSET", "doc", "$..x", "1"}, "-ERR invalid JSON path '$..x': wildcards and recursive descent are not supported\r\n"},
	{[]string{"JSET", "nodoc", "$.x", "1"}, "-ERR new documents must be created at the root path '$'\r\n"},
	{[]string{"JNUMINCRBY", "doc", "$.user", "1"}, "-ERR '$.user' is an object, not a number\r\n"},
	{[]string{"JNUMINCRBY", "doc", "$.visits", "one"}, "-ERR increment is not a JSON number\r\n"},
	{[]string{"JNUMINCRBY", "nodoc", "$.visits", "1"}, "-ERR no such key\r\n"},
	{[]string{"JARRAPPEND", "doc", "$.visits", "1"}, "-ERR '$.visits' is a number, not an array\r\n"},
	{[]string{"JSTRLEN", "doc", "$.visits"}, "-ERR '$.visits' is a number, not a string\r\n"},
	{[]string{"JGET"}, "-ERR wrong number of arguments for 'jget' command\r\n"},
	{[]string{"JMERGE", "doc", "$"}, "-ERR wrong number of arguments for 'jmerge' command\r\n"},
	{[]string{"SET", "str", "v"}, "+OK\r\n"},
	{[]string{"JGET", "str"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
	{[]string{"GET", "doc"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
	// Rate limiting: replies that do not depend on the clock.
	{[]string{"THROTTLE", "rl", "5", "10", "60", "0"}, "*5\r\n:0\r\n:6\r\n:6\r\n:-1\r\n:0\r\n"},
	{[]string{"THROTTLE", "rl", "5", "10", "60", "7"}, "*5\r\n:1\r\n:6\r\n:6\r\n:-1\r\n:0\r\n"},
	{[]string{"EXISTS", "rl"}, ":0\r\n"},
	{[]string{"CL.THROTTLE", "rl", "5", "10", "60"}, "*5\r\n:0\r\n:6\r\n:5\r\n:-1\r\n:6\r\n"},
	{[]string{"TYPE", "rl"}, "+ratelimit\r\n"},
	{[]string{"THROTTLE", "rl", "-5", "10", "60"}, "-ERR max_burst must not be negative\r\n"},
	{[]string{"THROTTLE", "doc", "5", "10", "60"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
	{[]string{"DEL", "doc", "rl", "str"}, ":3\r\n"},
}

func TestJSONGolden(t *testing.T) {
	addr, _ := servertest.StartRecached(t, server.Config{})
	for _, proto := range []string{"2", "3"} {
		c := servertest.Dial(t, addr)
		if proto == "3" {
			if _, err := c.Do("HELLO", "3"); err != nil {
				t.Fatal(err)
			}
		}
		for _, g := range jsonGolden {
			want := g.reply
			if proto == "3" && want == "$-1\r\n" {
				want = "_\r\n"
			}
			got, err := c.Do(g.args...)
			if err != nil {
				t.Fatalf("RESP%s %q: %v", proto, g.args, err)
			}
			if string(got) != want {
				t.Errorf("RESP%s %q:\n got %q\nwant %q", proto, g.args, got, want)
			}
		}
	}
}

// TestJSONConcurrentIncr: 10 clients each add 1 a thousand times to one
// number over TCP, pipelined; the sum is exact and every intermediate value
// was handed out exactly once.
func TestJSONConcurrentIncr(t *testing.T) {
	const clients, per, batch = 10, 1000, 100
	addr, _ := servertest.StartRecached(t, server.Config{})
	setup := servertest.Dial(t, addr)
	if rep, err := setup.Do("JSET", "counter", "$", `{"hits":{"n":0}}`); err != nil || string(rep) != "+OK\r\n" {
		t.Fatalf("JSET: %q %v", rep, err)
	}
	conns := make([]*servertest.Client, clients)
	for i := range conns {
		conns[i] = servertest.Dial(t, addr)
	}
	seen := make([][]int, clients)
	errs := make(chan error, clients)
	var wg sync.WaitGroup
	for i := range conns {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c := conns[i]
			req := bytes.Repeat(servertest.Encode("JNUMINCRBY", "counter", "$.hits.n", "1"), batch)
			for sent := 0; sent < per; sent += batch {
				if err := c.Send(req); err != nil {
					errs <- err
					return
				}
				for j := 0; j < batch; j++ {
					rep, err := c.Read()
					if err != nil {
						errs <- err
						return
					}
					el := strings.Split(string(rep), "\r\n")
					n, err := strconv.Atoi(el[1])
					if len(el) != 3 || err != nil {
						errs <- &replyError{rep}
						return
					}
					seen[i] = append(seen[i], n)
				}
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if rep, _ := setup.Do("JGET", "counter", "$.hits.n"); string(rep) != gbulk("10000") {
		t.Fatalf("after %d increments: %q", clients*per, rep)
	}
	got := make([]bool, clients*per+1)
	for _, s := range seen {
		for _, n := range s {
			if n < 1 || n > clients*per || got[n] {
				t.Fatalf("value %d handed out twice or out of range", n)
			}
			got[n] = true
		}
	}
}

type replyError struct{ rep []byte }

func (e *replyError) Error() string { return "unexpected reply " + strconv.Quote(string(e.rep)) }

const golden1K = `{"id":"user:42","name":"Ada Lovelace","email":"ada@example.com","age":36,"score":98.5,"active":true,"tags":["math","poetry","engines","notes"],"address":{"street":"12 St James's Square","city":"London","zip":"SW1Y 4JH","geo":{"lat":51.5074,"lon":-0.1339}},"prefs":{"theme":"dark","lang":"en-GB","notify":{"email":true,"push":false,"sms":null}},"history":[{"at":17000000000,"event":"login","ip":"192.0.2.1"},{"at":17000000001,"event":"login","ip":"192.0.2.2"},{"at":17000000002,"event":"login","ip":"192.0.2.3"},{"at":17000000003,"event":"logout","ip":"192.0.2.4"},{"at":17000000004,"event":"login","ip":"192.0.2.5"},{"at":17000000005,"event":"login","ip":"192.0.2.6"},{"at":17000000006,"event":"logout","ip":"192.0.2.7"},{"at":17000000007,"event":"login","ip":"192.0.2.8"}],"counters":{"visits":1024,"posts":17,"likes":349},"bio":"First programmer; wrote the notes on the Analytical Engine and saw that it could do more than arithmetic."}`

// BenchmarkTCPPipeline16 sends 16 commands per write over one TCP
// connection and reads the 16 replies; ns/op is per command.
func BenchmarkTCPPipeline16(b *testing.B) {
	addr, _ := servertest.StartRecached(b, server.Config{})
	cases := []struct {
		name string
		args []string
	}{
		{"JSET1K", []string{"JSET", "doc", "$", golden1K}},
		{"JGET1K", []string{"JGET", "doc"}},
		{"JMERGE50", []string{"JMERGE", "doc", "$", `{"prefs":{"theme":"light"},"counters":{"posts":18}}`}},
		{"JNUMINCRBY", []string{"JNUMINCRBY", "doc", "$.counters.visits", "1"}},
		{"THROTTLE", []string{"THROTTLE", "rl", "1000000", "1000000000", "1"}},
	}
	for _, bc := range cases {
		b.Run(bc.name, func(b *testing.B) {
			c := servertest.Dial(b, addr)
			if rep, err := c.Do("JSET", "doc", "$", golden1K); err != nil || string(rep) != "+OK\r\n" {
				b.Fatalf("setup: %q %v", rep, err)
			}
			req := bytes.Repeat(servertest.Encode(bc.args...), 16)
			b.SetBytes(int64(len(req) / 16))
			b.ResetTimer()
			for i := 0; i < b.N; i += 16 {
				if err := c.Send(req); err != nil {
					b.Fatal(err)
				}
				for j := 0; j < 16; j++ {
					rep, err := c.Read()
					if err != nil || rep[0] == '-' {
						b.Fatalf("reply %q: %v", rep, err)
					}
				}
			}
		})
	}
}
