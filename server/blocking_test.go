package server

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/recached/recached/server/keyspace"
)

// wakeConn is a connection that records its wake-ups; replies reach the
// session's W through Blocked, as a transport would send them.
type wakeConn struct {
	wakes chan struct{}
}

func newWakeConn() *wakeConn { return &wakeConn{wakes: make(chan struct{}, 64)} }

func (c *wakeConn) Push([]byte)        {}
func (c *wakeConn) Close()             {}
func (c *wakeConn) RemoteAddr() string { return "127.0.0.1:1" }
func (c *wakeConn) LocalAddr() string  { return "127.0.0.1:2" }

func (c *wakeConn) Buffered() (int, int) { return 0, 0 }

func (c *wakeConn) Wake() {
	select {
	case c.wakes <- struct{}{}:
	default:
	}
}

// blockSession returns a session of srv on a wakeConn.
func blockSession(t testing.TB, srv *Server) (*Session, *wakeConn) {
	t.Helper()
	c := newWakeConn()
	s, err := srv.NewSession(c, false)
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

// awaitAnswer waits until the blocked session s has been answered and
// returns the answer as its transport would get it: Blocked appends it to W.
func awaitAnswer(s *Session, c *wakeConn) (string, error) {
	deadline := time.After(10 * time.Second)
	for {
		s.W.B = s.W.B[:0]
		if !s.Blocked() {
			return "", fmt.Errorf("session not blocked")
		}
		if len(s.W.B) > 0 {
			if s.Blocked() {
				return "", fmt.Errorf("still blocked after the answer")
			}
			return string(s.W.B), nil
		}
		select {
		case <-c.wakes:
		case <-deadline:
			return "", fmt.Errorf("no answer within 10s")
		}
	}
}

// answer is awaitAnswer for the test's goroutine.
func answer(t *testing.T, s *Session, c *wakeConn) string {
	t.Helper()
	got, err := awaitAnswer(s, c)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestTimeoutArg(t *testing.T) {
	srv := New(DefaultConfig())
	s, _ := blockSession(t, srv)
	tests := []struct {
		arg  string
		ms   int64
		fail string
	}{
		{"0", 0, ""},
		{"1", 1000, ""},
		{"0.5", 500, ""},
		{"0.0001", 1, ""}, // rounded up
		{"-0.0001", 0, ""},
		{"1.5e-400", 1, ""},
		{"+2", 2000, ""},
		{".25", 250, ""},
		{"3.", 3000, ""},
		{"0x10", 16000, ""},
		{"abc", 0, errTimeout},
		{"", 0, errTimeout},
		{" 1", 0, errTimeout},
		{"1 ", 0, errTimeout},
		{"nan", 0, errTimeout},
		{"1_0", 0, errTimeout},
		{"-1", 0, errNegTimeout},
		{"-0.5", 0, errNegTimeout},
		{"inf", 0, errNegTimeout},
		{"-inf", 0, errNegTimeout},
		{"1e18", 0, errNegTimeout},
		{"1e308", 0, errNegTimeout},
	}
	for _, tc := range tests {
		s.W.B = s.W.B[:0]
		s.Args = [][]byte{[]byte(tc.arg)}
		ms, ok := s.timeoutArg(0)
		if tc.fail != "" {
			if ok || string(s.W.B) != "-"+tc.fail+"\r\n" {
				t.Errorf("%q: got %d %v %q, want error %q", tc.arg, ms, ok, s.W.B, tc.fail)
			}
			continue
		}
		if !ok || ms != tc.ms {
			t.Errorf("%q: got %d %v %q, want %d", tc.arg, ms, ok, s.W.B, tc.ms)
		}
	}
}

// TestBlockingServe checks each blocking command's answer once another
// session fills its key, in both protocols, and the effects of the serve.
func TestBlockingServe(t *testing.T) {
	tests := []struct {
		name  string
		proto string
		block []string
		push  [][]string
		want  string
		after [][2]string // command, reply after the serve
	}{
		{"blpop", "2", []string{"BLPOP", "a", "k", "0"}, [][]string{{"RPUSH", "k", "x", "y"}}, "*2\r\n$1\r\nk\r\n$1\r\nx\r\n", [][2]string{{"LRANGE k 0 -1", "*1\r\n$1\r\ny\r\n"}}},
		{"brpop resp3", "3", []string{"BRPOP", "k", "10"}, [][]string{{"RPUSH", "k", "x", "y"}}, "*2\r\n$1\r\nk\r\n$1\r\ny\r\n", nil},
		{"blpop sees last pushed head", "2", []string{"BLPOP", "k", "0"}, [][]string{{"LPUSH", "k", "a", "b", "c"}}, "*2\r\n$1\r\nk\r\n$1\r\nc\r\n", nil},
		{"blmpop", "2", []string{"BLMPOP", "0", "2", "a", "k", "RIGHT", "COUNT", "2"}, [][]string{{"RPUSH", "k", "1", "2", "3"}}, "*2\r\n$1\r\nk\r\n*2\r\n$1\r\n3\r\n$1\r\n2\r\n", [][2]string{{"LLEN k", ":1\r\n"}}},
		{"blmove", "2", []string{"BLMOVE", "k", "d", "LEFT", "LEFT", "0"}, [][]string{{"RPUSH", "k", "1", "2"}}, "$1\r\n1\r\n", [][2]string{{"LRANGE d 0 -1", "*1\r\n$1\r\n1\r\n"}, {"LRANGE k 0 -1", "*1\r\n$1\r\n2\r\n"}}},
		{"brpoplpush same key", "2", []string{"BRPOPLPUSH", "k", "k", "0"}, [][]string{{"RPUSH", "k", "1", "2"}}, "$1\r\n2\r\n", [][2]string{{"LRANGE k 0 -1", "*2\r\n$1\r\n2\r\n$1\r\n1\r\n"}}},
		{"blmove wrong destination", "2", []string{"BLMOVE", "k", "d", "LEFT", "LEFT", "0"}, [][]string{{"SET", "d", "s"}, {"RPUSH", "k", "1"}}, "-" + errWrongType + "\r\n", [][2]string{{"LLEN k", ":1\r\n"}}},
		{"rename fills", "2", []string{"BLPOP", "k", "0"}, [][]string{{"RPUSH", "src", "v"}, {"RENAME", "src", "k"}}, "*2\r\n$1\r\nk\r\n$1\r\nv\r\n", nil},
		{"copy fills", "2", []string{"BLPOP", "k", "0"}, [][]string{{"RPUSH", "src", "v"}, {"COPY", "src", "k"}}, "*2\r\n$1\r\nk\r\n$1\r\nv\r\n", [][2]string{{"LLEN src", ":1\r\n"}}},
		{"move fills", "2", []string{"BLPOP", "k", "0"}, [][]string{{"SELECT", "1"}, {"RPUSH", "k", "v"}, {"MOVE", "k", "0"}}, "*2\r\n$1\r\nk\r\n$1\r\nv\r\n", nil},
		{"swapdb fills", "2", []string{"BLPOP", "k", "0"}, [][]string{{"SELECT", "2"}, {"RPUSH", "k", "v"}, {"SWAPDB", "0", "2"}}, "*2\r\n$1\r\nk\r\n$1\r\nv\r\n", nil},
		{"copy to another db fills", "2", []string{"BLPOP", "k", "0"}, [][]string{{"SELECT", "3"}, {"RPUSH", "k", "v"}, {"COPY", "k", "k", "DB", "0"}}, "*2\r\n$1\r\nk\r\n$1\r\nv\r\n", nil},
		{"bzpopmin", "2", []string{"BZPOPMIN", "a", "z", "0"}, [][]string{{"ZADD", "z", "2", "b", "1", "a"}}, "*3\r\n$1\r\nz\r\n$1\r\na\r\n$1\r\n1\r\n", [][2]string{{"ZRANGE z 0 -1", "*1\r\n$1\r\nb\r\n"}}},
		{"bzpopmax resp3", "3", []string{"BZPOPMAX", "z", "0"}, [][]string{{"ZADD", "z", "2", "b", "1", "a"}}, "*3\r\n$1\r\nz\r\n$1\r\nb\r\n,2\r\n", nil},
		{"bzpopmin not served by a list", "2", []string{"BZPOPMIN", "z", "0"}, [][]string{{"RPUSH", "z", "x"}, {"DEL", "z"}, {"ZADD", "z", "1", "m"}}, "*3\r\n$1\r\nz\r\n$1\r\nm\r\n$1\r\n1\r\n", [][2]string{{"EXISTS z", ":0\r\n"}}},
		{"bzmpop", "2", []string{"BZMPOP", "0", "2", "a", "z", "MAX", "COUNT", "2"}, [][]string{{"ZADD", "z", "1", "a", "2", "b", "3", "c"}}, "*2\r\n$1\r\nz\r\n*2\r\n*2\r\n$1\r\nc\r\n$1\r\n3\r\n*2\r\n$1\r\nb\r\n$1\r\n2\r\n", [][2]string{{"ZCARD z", ":1\r\n"}}},
		{"exec fills", "2", []string{"BLPOP", "k", "0"}, [][]string{{"MULTI"}, {"RPUSH", "k", "v"}, {"EXEC"}}, "*2\r\n$1\r\nk\r\n$1\r\nv\r\n", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := New(DefaultConfig())
			b, bc := blockSession(t, srv)
			w, _ := blockSession(t, srv)
			run(b, "HELLO", tc.proto)
			if got := run(b, tc.block...); got != "" || !b.Blocked() {
				t.Fatalf("%q replied %q instead of blocking", tc.block, got)
			}
			if n := srv.BlockedClients(); n != 1 {
				t.Fatalf("blocked_clients = %d", n)
			}
			for _, p := range tc.push {
				run(w, p...)
			}
			if got := answer(t, b, bc); got != tc.want {
				t.Fatalf("answer %q, want %q", got, tc.want)
			}
			if n := srv.BlockedClients(); n != 0 {
				t.Fatalf("blocked_clients = %d after the serve", n)
			}
			for _, a := range tc.after {
				if got := run(w, strings.Fields(a[0])...); got != a[1] {
					t.Fatalf("%s: %q, want %q", a[0], got, a[1])
				}
			}
		})
	}
}

// TestBlockingChain checks that a BLMOVE's push serves the
// clients blocked on its destination.
func TestBlockingChain(t *testing.T) {
	srv := New(DefaultConfig())
	m, mc := blockSession(t, srv)
	p, pc := blockSession(t, srv)
	w, _ := blockSession(t, srv)
	run(m, "BLMOVE", "a", "b", "LEFT", "RIGHT", "0")
	run(p, "BLPOP", "b", "0")
	run(w, "RPUSH", "a", "v")
	if got := answer(t, m, mc); got != "$1\r\nv\r\n" {
		t.Fatalf("BLMOVE answer %q", got)
	}
	if got := answer(t, p, pc); got != "*2\r\n$1\r\nb\r\n$1\r\nv\r\n" {
		t.Fatalf("BLPOP answer %q", got)
	}
	if got := run(w, "EXISTS", "a", "b"); got != ":0\r\n" {
		t.Fatalf("EXISTS %q", got)
	}
}

// TestBlockingFIFO checks that waiters on a key are served in the order
// they blocked, and that a client blocked on several keys is served once.
func TestBlockingFIFO(t *testing.T) {
	srv := New(DefaultConfig())
	const n = 8
	ss := make([]*Session, n)
	cs := make([]*wakeConn, n)
	for i := range ss {
		ss[i], cs[i] = blockSession(t, srv)
		run(ss[i], "BLPOP", "other", "k", "k", "0")
	}
	w, _ := blockSession(t, srv)
	for i := 0; i < n; i++ {
		run(w, "RPUSH", "k", fmt.Sprint(i))
		want := fmt.Sprintf("*2\r\n$1\r\nk\r\n$1\r\n%d\r\n", i)
		if got := answer(t, ss[i], cs[i]); got != want {
			t.Fatalf("waiter %d: %q, want %q", i, got, want)
		}
		for j := i + 1; j < n; j++ {
			if !ss[j].isBlocked() {
				t.Fatalf("waiter %d served out of turn", j)
			}
		}
	}
	run(w, "RPUSH", "other", "x")
	if got := run(w, "LLEN", "other"); got != ":1\r\n" {
		t.Fatalf("a served waiter was served again: LLEN other %q", got)
	}
	checkNoWaiters(t, srv)
}

// checkNoWaiters checks that the registry holds nothing.
func checkNoWaiters(t *testing.T, srv *Server) {
	t.Helper()
	reg := &srv.blocking
	reg.mu.Lock()
	defer reg.mu.Unlock()
	if len(reg.queues) != 0 || len(reg.sessions) != 0 || reg.waiting.Load() != 0 {
		t.Fatalf("registry not empty: %d queues, %d sessions, %d waiting", len(reg.queues), len(reg.sessions), reg.waiting.Load())
	}
}

func TestBlockingEnds(t *testing.T) {
	srv := New(DefaultConfig())
	w, _ := blockSession(t, srv)

	t.Run("timeout", func(t *testing.T) {
		for _, proto := range []string{"2", "3"} {
			b, bc := blockSession(t, srv)
			run(b, "HELLO", proto)
			run(b, "BLMOVE", "k", "d", "LEFT", "LEFT", "0.01")
			want := "*-1\r\n"
			if proto == "3" {
				want = "_\r\n"
			}
			if got := answer(t, b, bc); got != want {
				t.Fatalf("resp%s: %q, want %q", proto, got, want)
			}
		}
		checkNoWaiters(t, srv)
	})

	t.Run("client unblock", func(t *testing.T) {
		b, bc := blockSession(t, srv)
		id := fmt.Sprint(b.ID)
		if got := run(w, "CLIENT", "UNBLOCK", id); got != ":0\r\n" {
			t.Fatalf("unblock of a client not blocked: %q", got)
		}
		run(b, "BLPOP", "k", "0")
		if got := run(w, "CLIENT", "UNBLOCK", id); got != ":1\r\n" {
			t.Fatalf("unblock: %q", got)
		}
		if got := answer(t, b, bc); got != "*-1\r\n" {
			t.Fatalf("answer %q", got)
		}
		run(b, "BLPOP", "k", "0")
		if got := run(w, "CLIENT", "UNBLOCK", id, "ERROR"); got != ":1\r\n" {
			t.Fatalf("unblock error: %q", got)
		}
		if got := answer(t, b, bc); got != "-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n" {
			t.Fatalf("answer %q", got)
		}
		if got := run(w, "CLIENT", "UNBLOCK", id); got != ":0\r\n" {
			t.Fatalf("second unblock: %q", got)
		}
		checkNoWaiters(t, srv)
	})

	t.Run("close", func(t *testing.T) {
		b, _ := blockSession(t, srv)
		run(b, "BLPOP", "k", "gone", "0")
		srv.CloseSession(b)
		checkNoWaiters(t, srv)
		run(w, "RPUSH", "k", "v")
		if got := run(w, "LLEN", "k"); got != ":1\r\n" {
			t.Fatalf("a closed client popped: LLEN %q", got)
		}
		run(w, "DEL", "k")
	})

	t.Run("multi does not block", func(t *testing.T) {
		b, _ := blockSession(t, srv)
		run(b, "MULTI")
		run(b, "BLPOP", "k", "0")
		run(b, "BLMOVE", "k", "d", "LEFT", "LEFT", "0")
		if got := run(b, "EXEC"); got != "*2\r\n*-1\r\n$-1\r\n" || b.Blocked() {
			t.Fatalf("EXEC %q", got)
		}
	})

	t.Run("internal session does not block", func(t *testing.T) {
		s := newSession(srv, nil, false)
		if got := run(s, "BRPOP", "k", "0"); got != "*-1\r\n" || s.Blocked() {
			t.Fatalf("BRPOP %q", got)
		}
	})
}

// TestBlockingRace races serves, timeouts, CLIENT UNBLOCK and closes: every
// wait must get exactly one answer and every pushed element must be popped
// once or still be in the list.
func TestBlockingRace(t *testing.T) {
	srv := New(DefaultConfig())
	const clients, rounds = 6, 60
	var wg sync.WaitGroup
	var mu sync.Mutex
	popped := map[string]int{}
	for c := 0; c < clients; c++ {
		b, bc := blockSession(t, srv)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				if got := run(b, "BLPOP", "k1", "k2", "0.002"); got != "" {
					mu.Lock()
					popped[got]++
					mu.Unlock()
					continue
				}
				got, err := awaitAnswer(b, bc)
				if err != nil {
					t.Error(err)
					return
				}
				if strings.HasPrefix(got, "*2") {
					mu.Lock()
					popped[got]++
					mu.Unlock()
				} else if got != "*-1\r\n" && !strings.HasPrefix(got, "-UNBLOCKED") {
					t.Errorf("unexpected answer %q", got)
					return
				}
			}
		}()
	}
	pusher, _ := blockSession(t, srv)
	unblocker, _ := blockSession(t, srv)
	pushed := 0
	rng := rand.New(rand.NewPCG(3, 4))
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
loop:
	for i := 0; ; i++ {
		select {
		case <-done:
			break loop
		default:
		}
		key := fmt.Sprint("k", 1+rng.IntN(2))
		run(pusher, "RPUSH", key, fmt.Sprint(i))
		pushed++
		run(unblocker, "CLIENT", "UNBLOCK", fmt.Sprint(1+rng.IntN(clients)), "ERROR")
		time.Sleep(time.Duration(rng.IntN(500)) * time.Microsecond)
	}
	left := 0
	for _, k := range []string{"k1", "k2"} {
		var n int
		fmt.Sscanf(run(pusher, "LLEN", k), ":%d", &n)
		left += n
	}
	total := 0
	for reply, n := range popped {
		if n != 1 {
			t.Errorf("%q popped %d times", reply, n)
		}
		total += n
	}
	if total+left != pushed {
		t.Fatalf("pushed %d, popped %d, left %d", pushed, total, left)
	}
	checkNoWaiters(t, srv)
}

// TestListEffectsReplay runs random list commands, blocking ones served by
// pushes included, and replays their effects on a second server: both must
// end with the same lists.
func TestListEffectsReplay(t *testing.T) {
	srv := New(DefaultConfig())
	var mu sync.Mutex
	var effects [][]string
	srv.AddHook(func(e *Effect) {
		if e.Key == nil {
			return
		}
		mu.Lock()
		effects = append(effects, effectStrings(e))
		mu.Unlock()
	})
	s, _ := blockSession(t, srv)
	b, bc := blockSession(t, srv)
	rng := rand.New(rand.NewPCG(5, 6))
	keys := []string{"a", "b", "c"}
	key := func() string { return keys[rng.IntN(len(keys))] }
	val := func() string { return fmt.Sprint(rng.IntN(6)) }
	for i := 0; i < 3000; i++ {
		var args []string
		switch rng.IntN(14) {
		case 0:
			args = []string{"LPUSH", key(), val(), val()}
		case 1:
			args = []string{"RPUSH", key(), val()}
		case 2:
			args = []string{"LPUSHX", key(), val()}
		case 3:
			args = []string{"LPOP", key()}
		case 4:
			args = []string{"RPOP", key(), fmt.Sprint(rng.IntN(3))}
		case 5:
			args = []string{"LSET", key(), fmt.Sprint(rng.IntN(5) - 2), val()}
		case 6:
			args = []string{"LREM", key(), fmt.Sprint(rng.IntN(5) - 2), val()}
		case 7:
			args = []string{"LTRIM", key(), fmt.Sprint(rng.IntN(4) - 1), fmt.Sprint(rng.IntN(6) - 2)}
		case 8:
			args = []string{"LINSERT", key(), []string{"BEFORE", "AFTER"}[rng.IntN(2)], val(), val()}
		case 9:
			args = []string{"LMOVE", key(), key(), []string{"LEFT", "RIGHT"}[rng.IntN(2)], []string{"LEFT", "RIGHT"}[rng.IntN(2)]}
		case 10:
			args = []string{"RPOPLPUSH", key(), key()}
		case 11:
			args = []string{"LMPOP", "2", key(), key(), "RIGHT", "COUNT", fmt.Sprint(1 + rng.IntN(3))}
		case 12:
			if b.isBlocked() {
				continue
			}
			if got := run(b, "BLMOVE", key(), key(), "RIGHT", "LEFT", "0"); got == "" {
				run(s, "RPUSH", key(), val())
				run(s, "RPUSH", keys[0], val(), val())
				run(s, "RPUSH", keys[1], val())
				run(s, "RPUSH", keys[2], val())
				answer(t, b, bc)
			}
			continue
		case 13:
			if got := run(b, "BLMPOP", "0.001", "2", key(), key(), "LEFT", "COUNT", "2"); got == "" {
				answer(t, b, bc)
			}
			continue
		}
		run(s, args...)
	}
	replica := New(DefaultConfig())
	r := newSession(replica, nil, false)
	mu.Lock()
	for _, e := range effects {
		if got := run(r, e...); strings.HasPrefix(got, "-") {
			t.Fatalf("replaying %q: %q", e, got)
		}
	}
	mu.Unlock()
	for _, k := range keys {
		want := run(s, "LRANGE", k, "0", "-1")
		if got := run(r, "LRANGE", k, "0", "-1"); got != want {
			t.Fatalf("%s: replica %q, server %q", k, got, want)
		}
	}
	if got := run(r, "DBSIZE"); got != run(s, "DBSIZE") {
		t.Fatalf("DBSIZE replica %q", got)
	}
}

// TestListEffectForms checks the effect each list write reports.
func TestListEffectForms(t *testing.T) {
	tests := []struct {
		setup []string
		cmd   []string
		want  []string
	}{
		{nil, []string{"lpush", "k", "a", "b"}, []string{"LPUSH k a b"}},
		{[]string{"RPUSH k a"}, []string{"rpushx", "k", "b"}, []string{"RPUSHX k b"}},
		{nil, []string{"lpushx", "k", "b"}, nil},
		{[]string{"RPUSH k a b c"}, []string{"lpop", "k"}, []string{"LPOP k 1"}},
		{[]string{"RPUSH k a b c"}, []string{"rpop", "k", "5"}, []string{"RPOP k 3"}},
		{[]string{"RPUSH k a b c"}, []string{"lpop", "k", "0"}, nil},
		{[]string{"RPUSH k a b c"}, []string{"lset", "k", "-1", "z"}, []string{"LSET k -1 z"}},
		{[]string{"RPUSH k a b c"}, []string{"lrem", "k", "0", "z"}, nil},
		{[]string{"RPUSH k a b a"}, []string{"lrem", "k", "0", "a"}, []string{"LREM k 0 a"}},
		{[]string{"RPUSH k a b c"}, []string{"ltrim", "k", "0", "-1"}, nil},
		{[]string{"RPUSH k a b c"}, []string{"ltrim", "k", "1", "-1"}, []string{"LTRIM k 1 -1"}},
		{[]string{"RPUSH k a b c"}, []string{"linsert", "k", "before", "z", "y"}, nil},
		{[]string{"RPUSH k a b c"}, []string{"linsert", "k", "after", "a", "y"}, []string{"LINSERT k after a y"}},
		{[]string{"RPUSH k a b c"}, []string{"lmove", "k", "d", "right", "left"}, []string{"RPOP k 1", "LPUSH d c"}},
		{[]string{"RPUSH k a b c"}, []string{"rpoplpush", "k", "k"}, []string{"LMOVE k k RIGHT LEFT"}},
		{[]string{"RPUSH k a b c"}, []string{"lmpop", "2", "x", "k", "left", "count", "2"}, []string{"LPOP k 2"}},
		{[]string{"RPUSH k a b c"}, []string{"blpop", "x", "k", "0"}, []string{"LPOP k 1"}},
		{[]string{"RPUSH k a"}, []string{"blmove", "k", "d", "left", "right", "0"}, []string{"LPOP k 1", "RPUSH d a"}},
	}
	for _, tc := range tests {
		srv := New(DefaultConfig())
		var got []string
		s, _ := blockSession(t, srv)
		for _, c := range tc.setup {
			run(s, strings.Fields(c)...)
		}
		srv.AddHook(func(e *Effect) {
			parts := make([]string, len(e.Args))
			for i, a := range e.Args {
				parts[i] = string(a)
			}
			got = append(got, strings.Join(parts, " "))
		})
		run(s, tc.cmd...)
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%q: effects %q, want %q", tc.cmd, got, tc.want)
		}
	}
}

func TestListObject(t *testing.T) {
	srv := New(DefaultConfig())
	s, _ := blockSession(t, srv)
	run(s, "RPUSH", "k", "a", "b")
	e := s.db.Lookup([]byte("k"))
	if encodingOf(e) != "quicklist" {
		t.Fatalf("encoding %q", encodingOf(e))
	}
	if _, ok := e.Obj.(copier); !ok {
		t.Fatal("lists cannot be copied")
	}
	if e.Obj.(*keyspace.List).Len() != 2 {
		t.Fatal("wrong length")
	}
}

// TestListHotPathAllocs checks that reading and popping do not allocate
// and that a push allocates only the element's copy.
func TestListHotPathAllocs(t *testing.T) {
	srv := New(DefaultConfig())
	s := newSession(srv, nil, false)
	args := toArgs
	for i := 0; i < 200; i++ {
		s.Exec(args("RPUSH", "k", "element"))
	}
	tests := []struct {
		cmds [][][]byte
		max  float64
	}{
		{[][][]byte{args("LRANGE", "k", "0", "99")}, 0},
		{[][][]byte{args("LINDEX", "k", "50")}, 0},
		{[][][]byte{args("LLEN", "k")}, 0},
		{[][][]byte{args("RPUSH", "k", "element"), args("LPOP", "k")}, 1},
		{[][][]byte{args("LPUSH", "k", "element"), args("RPOP", "k", "1")}, 1},
		{[][][]byte{args("LMOVE", "k", "k", "LEFT", "RIGHT")}, 0},
	}
	for _, tc := range tests {
		n := testing.AllocsPerRun(500, func() {
			for _, c := range tc.cmds {
				s.W.B = s.W.B[:0]
				s.Exec(c)
			}
		})
		if n > tc.max {
			t.Errorf("%s: %.1f allocations, want at most %.0f", tc.cmds[0][0], n, tc.max)
		}
	}
}

func BenchmarkExecLRange100(b *testing.B) {
	srv := New(DefaultConfig())
	s := newSession(srv, nil, false)
	for i := 0; i < 600; i++ {
		s.Exec([][]byte{[]byte("LPUSH"), []byte("mylist"), []byte("xxx")})
	}
	in := [][]byte{[]byte("LRANGE"), []byte("mylist"), []byte("0"), []byte("99")}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.W.B = s.W.B[:0]
		s.Exec(in)
	}
}
