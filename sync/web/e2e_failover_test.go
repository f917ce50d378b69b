package web_test

import (
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/recached/recached/server/servertest"
	"github.com/recached/recached/server/servertest/browsertest"
)

// TestBrowserFollowsThePrimary: recached-edge in Chromium, given the
// bridges of a replica (the page's origin, first) and its primary, with
// replicaOK. It hydrates its live query on the replica and follows the
// primary's writes there through the replicated stream; its first write is
// answered -READONLY and it moves to the primary, which runs the write
// once. The primary is then SIGKILLed and the replica promoted: the next
// write finds the new primary, and the page's store equals the server.
func TestBrowserFollowsThePrimary(t *testing.T) {
	bin := servertest.BuildRecached(t)
	primary := startServer(t, bin, "--appendonly", "no")
	replica := startServer(t, bin, "--appendonly", "no", "--replicaof", "127.0.0.1", strconv.Itoa(primary.port))
	primary.do("SET", "e2e:seed", "from the primary")
	waitUp := func(want string) {
		t.Helper()
		for i := 0; i < 500; i++ {
			v := replica.do("GET", "e2e:seed")
			if v.Text() == want {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("the replica did not get e2e:seed = %q", want)
	}
	waitUp("from the primary")

	p := newPage(t, browsertest.Browser(t), "A", true)
	p.open(replica, `{patterns: ['e2e:*'], name: 'failover', replicaOK: true, minBackoff: 20, maxBackoff: 200,
		urls: ['ws://127.0.0.1:`+strconv.Itoa(primary.wsPort)+`/']}`)
	p.waitOpen()
	p.Eval(`c.query('e2e:*', () => {}).ready`, nil)
	if got := p.Str(`c.url`); got != "ws://127.0.0.1:"+strconv.Itoa(replica.wsPort)+"/" {
		t.Fatalf("session opened on %s, want the replica", got)
	}
	p.Eval(`waitFor(() => c.get('e2e:seed') === 'from the primary')`, nil)
	primary.do("SET", "e2e:live", "pushed")
	p.Eval(`waitFor(() => c.get('e2e:live') === 'pushed')`, nil)

	// incr makes the page INCR e2e:n, which must land once on srv, whose
	// bridge the client must then be connected to.
	incr := func(srv *server, want string) {
		t.Helper()
		if got := p.Str(`c.incr('e2e:n').then(String)`); got != want {
			t.Fatalf("INCR answered %s, want %s", got, want)
		}
		if got := p.Str(`c.url`); got != "ws://127.0.0.1:"+strconv.Itoa(srv.wsPort)+"/" {
			t.Fatalf("the write went through %s, want %d", got, srv.wsPort)
		}
		if v := srv.do("GET", "e2e:n"); v.Text() != want {
			t.Fatalf("e2e:n on the server: %q, want %s", v.Text(), want)
		}
	}
	// The first write: -READONLY from the replica, then the primary.
	incr(primary, "1")
	primary.do("SET", "e2e:seed", "replicated")
	waitUp("replicated")

	// Failover: the primary dies, the replica is promoted.
	_ = primary.cmd.Process.Signal(syscall.SIGKILL)
	<-primary.exited
	primary.cmd = nil
	replica.do("REPLICAOF", "NO", "ONE")
	incr(replica, "2")
	p.Eval(`waitFor(() => c.get('e2e:n') === '2' && c.get('e2e:seed') === 'replicated' && c.outboxSize === 0)`, nil)
}
