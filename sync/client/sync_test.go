package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/recached/recached/resp"
	"github.com/recached/recached/server"
)

// serverValue reads key's value and expiry time from the server through
// backend, a TCP client, in the local store's shape.
func serverValue(ctx context.Context, backend *Client, key string) (Value, error) {
	t, err := backend.Do(ctx, "TYPE", key)
	if err != nil {
		return Value{}, err
	}
	v := Value{Marker: t.Text()}
	var r resp.Value
	switch t.Text() {
	case "none":
		return Value{}, nil
	case "string":
		v.Type = TypeString
		r, err = backend.Do(ctx, "GET", key)
		v.Str = r.Str
	case "hash":
		v.Type, v.Hash = TypeHash, map[string][]byte{}
		r, err = backend.Do(ctx, "HGETALL", key)
		for i := 0; i+1 < len(r.Elems); i += 2 {
			v.Hash[r.Elems[i].Text()] = r.Elems[i+1].Str
		}
	case "list":
		v.Type, v.List = TypeList, [][]byte{}
		r, err = backend.Do(ctx, "LRANGE", key, "0", "-1")
		for _, e := range r.Elems {
			v.List = append(v.List, e.Str)
		}
	case "set":
		v.Type, v.Set = TypeSet, map[string]struct{}{}
		r, err = backend.Do(ctx, "SMEMBERS", key)
		for _, e := range r.Elems {
			v.Set[e.Text()] = struct{}{}
		}
	case "zset":
		v.Type, v.ZSet = TypeZSet, map[string]float64{}
		r, err = backend.Do(ctx, "ZRANGE", key, "0", "-1", "WITHSCORES")
		for _, pair := range r.Elems { // RESP3: [member, score] pairs
			f, _ := pair.Elems[1].Float()
			v.ZSet[pair.Elems[0].Text()] = f
		}
	case "json":
		v.Type = TypeJSON
		r, err = backend.Do(ctx, "JGET", key)
		v.JSON = r.Str
	case "ratelimit":
		v.Type = TypeOther // the store keeps its marker and expiry only
	default:
		return Value{}, fmt.Errorf("unexpected type %q", t.Text())
	}
	if err != nil {
		return Value{}, err
	}
	at, err := backend.Do(ctx, "PEXPIRETIME", key)
	if err != nil {
		return Value{}, err
	}
	if at.Int > 0 {
		v.ExpireAt = at.Int
	}
	return v, nil
}

// equalValue compares two values by content.
func equalValue(a, b Value) bool {
	if a.Type != b.Type || a.Marker != b.Marker || a.ExpireAt != b.ExpireAt || !bytes.Equal(a.Str, b.Str) ||
		!bytes.Equal(a.JSON, b.JSON) || len(a.List) != len(b.List) ||
		!maps.EqualFunc(a.Hash, b.Hash, bytes.Equal) || !maps.Equal(a.Set, b.Set) || !maps.Equal(a.ZSet, b.ZSet) {
		return false
	}
	for i := range a.List {
		if !bytes.Equal(a.List[i], b.List[i]) {
			return false
		}
	}
	return true
}

func describe(v Value) string {
	switch v.Type {
	case TypeString:
		return fmt.Sprintf("string %q exp %d", v.Str, v.ExpireAt)
	case TypeHash:
		var parts []string
		for f, x := range v.Hash {
			parts = append(parts, f+"="+string(x))
		}
		slices.Sort(parts)
		return fmt.Sprintf("hash %v exp %d", parts, v.ExpireAt)
	case TypeList:
		return fmt.Sprintf("list %q exp %d", v.List, v.ExpireAt)
	case TypeSet:
		return fmt.Sprintf("set %v exp %d", slices.Sorted(maps.Keys(v.Set)), v.ExpireAt)
	case TypeZSet:
		return fmt.Sprintf("zset %v exp %d", v.ZSet, v.ExpireAt)
	case TypeJSON:
		return fmt.Sprintf("json %s exp %d", v.JSON, v.ExpireAt)
	case TypeOther:
		return fmt.Sprintf("%s exp %d", v.Marker, v.ExpireAt)
	}
	return v.Type.String()
}

// diffStore compares the observer's local keys matching pattern with the
// server's, returning a description of the first difference.
func diffStore(ctx context.Context, obs, backend *Client, pattern string) (string, error) {
	keysV, err := backend.Do(ctx, "KEYS", pattern)
	if err != nil {
		return "", err
	}
	var keys []string
	for _, e := range keysV.Elems {
		keys = append(keys, e.Text())
	}
	slices.Sort(keys)
	local := obs.Store().Keys(pattern)
	if !slices.Equal(keys, local) {
		return fmt.Sprintf("keys: server %q, local %q", keys, local), nil
	}
	for _, k := range keys {
		want, err := serverValue(ctx, backend, k)
		if err != nil {
			return "", err
		}
		got, _ := obs.Get(k)
		if !equalValue(got, want) {
			return fmt.Sprintf("%s: server %s, local %s", k, describe(want), describe(got)), nil
		}
	}
	return "", nil
}

// TestSyncConverges has a backend run writes of every type, json and
// ratelimit included, each producing the effect forms the server emits,
// while an observer with a live query keeps a local replica; after each
// step the replica must equal the server's state, expiry times included.
func TestSyncConverges(t *testing.T) {
	s := startServer(t, server.Config{})
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			ctx := ctx10(t)
			p := "cv" + tr + ":"
			backend := newClient(t, Options{URL: s.url("tcp")})
			// State that exists before the query: hydrated by qstate and
			// the pushes that follow it, PEXPIREAT for the keys with a time
			// to live.
			for _, w := range [][]string{
				{"SET", p + "pre:s", "v", "PX", "600000"}, {"SET", p + "pre:s2", "w"},
				{"HSET", p + "pre:h", "a", "1", "b", "2"}, {"PEXPIRE", p + "pre:h", "700000"},
				{"SADD", p + "pre:set", "x", "y"}, {"EXPIRE", p + "pre:set", "800"},
				{"ZADD", p + "pre:z", "1.5", "m", "-inf", "n"},
				{"RPUSH", p + "pre:l", "a", "b", "c"}, {"PEXPIREAT", p + "pre:l", "99999999999999"},
				{"JSET", p + "pre:j", "$", `{"b": [1, 2.50], "a": {"c": "\u00e9"}}`}, {"PEXPIRE", p + "pre:j", "900000"},
				{"JSET", p + "pre:j2", "$", `"plain"`},
				{"THROTTLE", p + "pre:rl", "5", "1", "600"},
			} {
				if _, err := backend.Write(w...).Wait(ctx); err != nil {
					t.Fatalf("%v: %v", w, err)
				}
			}
			var mu sync.Mutex
			seen := map[string]int{}
			obs := newClient(t, Options{URL: s.url(tr)})
			q := obs.Query(p+"*", func(key string, v Value) {
				mu.Lock()
				seen[key]++
				mu.Unlock()
			})
			defer q.Close()
			converge := func(step string) {
				t.Helper()
				awaitConverged(t, step, func() (string, error) { return diffStore(ctx, obs, backend, p+"*") })
			}
			converge("hydration")
			steps := [][][]string{
				{{"SET", p + "s", "hello"}, {"APPEND", p + "s", " world"}, {"SETRANGE", p + "s", "0", "J"}},
				{{"INCR", p + "n"}, {"INCRBY", p + "n", "41"}, {"DECR", p + "n"}, {"INCRBYFLOAT", p + "f", "1.5"}},
				{{"SET", p + "t", "v", "PX", "500000"}, {"EXPIRE", p + "s", "1000"}, {"PERSIST", p + "t"}, {"SET", p + "k", "v", "KEEPTTL"}},
				{{"GETEX", p + "s", "PX", "700000"}, {"SET", p + "s", "again", "KEEPTTL"}, {"GETDEL", p + "k"}},
				{{"HSET", p + "h", "a", "1", "b", "2", "c", "3"}, {"HDEL", p + "h", "a"}, {"HINCRBY", p + "h", "n", "5"}, {"HSETNX", p + "h", "b", "x"}},
				{{"SADD", p + "set", "a", "b", "c", "d"}, {"SREM", p + "set", "b"}, {"SPOP", p + "set"}, {"SMOVE", p + "set", p + "set2", "d"}},
				{{"SADD", p + "o1", "a", "b"}, {"SADD", p + "o2", "b", "c"}, {"SINTERSTORE", p + "o3", p + "o1", p + "o2"}, {"SUNIONSTORE", p + "o1", p + "o1", p + "o2"}},
				{{"ZADD", p + "z", "1", "a", "2", "b", "3", "c"}, {"ZINCRBY", p + "z", "5", "a"}, {"ZREM", p + "z", "b"}, {"ZPOPMIN", p + "z"}, {"ZADD", p + "z", "+inf", "x"}},
				{{"ZUNIONSTORE", p + "z2", "2", p + "z", p + "pre:z"}},
				{{"SETBIT", p + "bits", "7", "1"}, {"SETBIT", p + "bits", "20", "1"}, {"SETBIT", p + "bits", "7", "0"}},
				{{"RPUSH", p + "l", "a", "b", "c", "d", "e"}, {"LPUSH", p + "l", "z", "y"}, {"LPOP", p + "l"}, {"RPOP", p + "l", "2"}},
				{{"LSET", p + "l", "-1", "C"}, {"LINSERT", p + "l", "BEFORE", "a", "q"}, {"LREM", p + "l", "1", "q"}, {"LTRIM", p + "l", "1", "-1"}, {"RPUSHX", p + "l", "x"}, {"LPUSHX", p + "nolist", "x"}},
				{{"LMOVE", p + "l", p + "l2", "LEFT", "RIGHT"}, {"LMOVE", p + "l2", p + "l2", "RIGHT", "LEFT"}, {"RPOPLPUSH", p + "l", p + "l2"}},
				{{"RENAME", p + "s", p + "s2"}, {"COPY", p + "h", p + "h2"}, {"DEL", p + "n", p + "f"}, {"UNLINK", p + "bits"}},
				{{"COPY", p + "h", p + "h2", "REPLACE"}, {"RENAME", p + "pre:l", p + "moved"}, {"MOVE", p + "h2", "3"}},
				{{"JSET", p + "j", "$", `{"a":1,"b":[1,2],"c":{"d":"x"}}`}, {"JSET", p + "j", "$.e", "1.50"},
					{"JMERGE", p + "j", "$", `{"a":null,"c":{"f":true}}`}, {"JDEL", p + "j", "$.b[0]"}},
				{{"JNUMINCRBY", p + "j", "$.e", "2"}, {"JARRAPPEND", p + "j", "$.b", "3", `"four"`},
					{"PEXPIRE", p + "j", "900000"}, {"JSET", p + "j", "$.c.d", `"y"`, "XX"}, {"JSET", p + "j", "$.c.z", "0", "NX"}},
				{{"JMERGE", p + "pre:j", "$.a", `{"c":null,"d":[]}`}, {"JSET", p + "pre:j", "$.b[-1]", "9007199254740993"}},
				{{"COPY", p + "j", p + "j2"}, {"RENAME", p + "j2", p + "j3"}, {"JSET", p + "j4", "$", "[]"}, {"JDEL", p + "j4"}},
				{{"JMERGE", p + "j3", "$", "null"}, {"JMERGE", p + "j5", "$", `{"n":null,"m":1}`}, {"PERSIST", p + "pre:j"}},
				{{"THROTTLE", p + "rl", "5", "1", "600"}, {"THROTTLE", p + "rl", "5", "1", "600", "2"}, {"THROTTLE", p + "pre:rl", "5", "1", "600"}},
			}
			for i, step := range steps {
				for _, w := range step {
					if _, err := backend.Write(w...).Wait(ctx); err != nil {
						t.Fatalf("step %d %v: %v", i, w, err)
					}
				}
				converge(fmt.Sprintf("step %d %v", i, step[0]))
			}
			if st := obs.Stats(); st.UnknownEffects != 0 {
				t.Errorf("%d unknown effects", st.UnknownEffects)
			}
			// Writes of the observer itself are applied locally on their
			// acknowledgment, since it gets no pushes of its own.
			for _, w := range [][]string{
				{"SET", p + "own", "1"}, {"INCR", p + "own"}, {"HSET", p + "ownh", "f", "v"},
				{"JSET", p + "ownj", "$", `{"a":[1]}`, "NX"}, {"JMERGE", p + "ownj", "$", `{"b":2}`},
				{"JDEL", p + "ownj", "$.a[0]"}, {"JSET", p + "ownj", "$.c", "3", "XX"},
			} {
				if _, err := obs.Write(w...).Wait(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if v, _ := obs.Get(p + "own"); string(v.Str) != "2" {
				t.Errorf("own INCR: local %v", v)
			}
			if text, ok, err := obs.JGet(p+"ownj", "$"); string(text) != `{"a":[],"b":2}` || !ok || err != nil {
				t.Errorf("own json writes: local %q %v %v", text, ok, err)
			}
			converge("own writes")
			// FLUSHDB from a backend empties the replica.
			if _, err := backend.Do(ctx, "FLUSHDB"); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "flush", func() bool { return obs.Store().Len() == 0 })
			mu.Lock()
			if seen[p+"s"] == 0 || seen[p+"pre:h"] == 0 {
				t.Errorf("query callbacks missed keys: %v", seen)
			}
			mu.Unlock()
		})
	}
}

// gatedDialer is a NetDial that refuses to connect while closed, so that a
// test can keep a client offline while the server's state changes.
type gatedDialer struct {
	connTracker
	closed atomic.Bool
}

func (g *gatedDialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if g.closed.Load() {
		return nil, errors.New("dialing refused by the test")
	}
	return g.connTracker.dial(ctx, network, addr)
}

// TestRehydrationExpiry checks that after a reconnect the replica has the
// server's times to live for keys whose expiry changed while the client
// was offline: the qstate reply carries none, the PEXPIREAT pushes that
// follow it do.
func TestRehydrationExpiry(t *testing.T) {
	s := startServer(t, server.Config{})
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			ctx := ctx10(t)
			p := "rx" + tr + ":"
			backend := newClient(t, Options{URL: s.url("tcp")})
			write := func(ws ...[]string) {
				t.Helper()
				for _, w := range ws {
					if _, err := backend.Write(w...).Wait(ctx); err != nil {
						t.Fatalf("%v: %v", w, err)
					}
				}
			}
			write([]string{"SET", p + "persisted", "v", "PX", "600000"}, []string{"SET", p + "expiring", "v"},
				[]string{"SET", p + "changed", "v", "PX", "600000"}, []string{"HSET", p + "h", "f", "v"},
				[]string{"JSET", p + "j", "$", "[1]", "NX"}, []string{"PEXPIRE", p + "j", "600000"})
			gate := &gatedDialer{}
			states := newStateLog()
			obs := newClient(t, Options{URL: s.url(tr), NetDial: gate.dial, OnState: states.on})
			q := obs.Query(p+"*", func(string, Value) {})
			defer q.Close()
			converge := func(step string) {
				t.Helper()
				awaitConverged(t, step, func() (string, error) { return diffStore(ctx, obs, backend, p+"*") })
			}
			converge("hydration")
			if v, _ := obs.Get(p + "persisted"); v.ExpireAt == 0 {
				t.Fatalf("hydrated key without its time to live: %+v", v)
			}
			gate.closed.Store(true)
			if !gate.killLast() {
				t.Fatal("no connection to break")
			}
			states.waitCount(t, StateOffline, 1)
			write([]string{"PERSIST", p + "persisted"}, []string{"PEXPIRE", p + "expiring", "500000"},
				[]string{"SET", p + "changed", "w", "PX", "400000"}, []string{"PEXPIRE", p + "h", "300000"},
				[]string{"PERSIST", p + "j"})
			gate.closed.Store(false)
			states.waitCount(t, StateOpen, 2)
			converge("re-hydration")
		})
	}
}

// TestWatchAndPubSub checks keychange delivery to watchers, which carry
// values only, and pub/sub deliveries, over both transports.
func TestWatchAndPubSub(t *testing.T) {
	s := startServer(t, server.Config{})
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			ctx := ctx10(t)
			k := "wp" + tr
			backend := newClient(t, Options{URL: s.url("tcp")})
			obs := newClient(t, Options{URL: s.url(tr)})
			type change struct {
				key string
				v   Value
			}
			changes := make(chan change, 16)
			w := obs.Watch(k, func(key string, v Value) { changes <- change{key, v} })
			msgs := make(chan Message, 16)
			sub := obs.Subscribe("ch"+tr, func(m Message) { msgs <- m })
			psub := obs.PSubscribe("pch"+tr+":*", func(m Message) { msgs <- m })
			waitFor(t, "open", func() bool { return obs.State() == StateOpen })
			// The subscriptions are in place once a later command is
			// answered (one reply per command, in order).
			if _, err := obs.Do(ctx, "PING"); err != nil {
				t.Fatal(err)
			}
			next := func() change {
				select {
				case c := <-changes:
					return c
				case <-ctx.Done():
					t.Fatal("no keychange")
				}
				return change{}
			}
			backend.Write("SET", k, "v1")
			if c := next(); c.key != k || string(c.v.Str) != "v1" {
				t.Errorf("keychange after SET: %+v", c)
			}
			backend.Write("HSET", k+"x", "f", "v") // not watched
			backend.Write("DEL", k)
			if c := next(); c.v.Type != TypeNone {
				t.Errorf("keychange after DEL: %+v", c)
			}
			backend.Write("HSET", k, "f", "v")
			if c := next(); c.v.Type != TypeHash || c.v.Marker != "hash" {
				t.Errorf("keychange after HSET: %+v", c)
			}
			for _, m := range []struct{ ch, pat string }{{"ch" + tr, ""}, {"pch" + tr + ":1", "pch" + tr + ":*"}} {
				if n, err := backend.Publish(ctx, m.ch, []byte("hi")); err != nil || n != 1 {
					t.Fatalf("PUBLISH %s: %d %v", m.ch, n, err)
				}
				select {
				case got := <-msgs:
					if got.Channel != m.ch || got.Pattern != m.pat || string(got.Payload) != "hi" {
						t.Errorf("message %+v, want channel %s pattern %q", got, m.ch, m.pat)
					}
				case <-ctx.Done():
					t.Fatalf("no message on %s", m.ch)
				}
			}
			w.Close()
			sub.Close()
			psub.Close()
			if _, err := obs.Do(ctx, "PING"); err != nil {
				t.Fatal(err)
			}
			if n, err := backend.Publish(ctx, "ch"+tr, []byte("x")); err != nil || n != 0 {
				t.Errorf("PUBLISH after unsubscribing: %d receivers, %v", n, err)
			}
			backend.Write("SET", k, "v2")
			if _, err := backend.Do(ctx, "PING"); err != nil {
				t.Fatal(err)
			}
			if _, err := obs.Do(ctx, "PING"); err != nil {
				t.Fatal(err)
			}
			select {
			case c := <-changes:
				t.Errorf("keychange after KUNWATCH: %+v", c)
			default:
			}
			if st := obs.Stats(); st.Ignored != 0 {
				t.Errorf("%d frames ignored", st.Ignored)
			}
		})
	}
}
