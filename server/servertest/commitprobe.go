package servertest

import (
	"sync"
	"testing"
	"time"

	"github.com/recached/recached/server"
)

// CommitProbe stands in for the append-only log in tests of the order of
// pushes and commits: it numbers each effect as the log appends it (a
// first hook, which runs before any push is queued) and, as the server's
// commit function, records how far each Commit reached. A transport keeps
// the log's promise when every push it sends is for an effect a Commit
// reached before the push left.
type CommitProbe struct {
	mu        sync.Mutex
	appended  int
	committed int
	seq       map[string]int // a key's last effect
	// write runs inside the next Commit (WriteDuringCommit); once it
	// has, held is set and the later Commits wait until gate is closed.
	write   func()
	held    bool
	gate    chan struct{}
	release sync.Once
}

// StartWithCommitProbe runs recached in-process (StartServers) with a
// CommitProbe in place of its log's commit.
func StartWithCommitProbe(tb testing.TB) (Servers, *CommitProbe) {
	tb.Helper()
	p := &CommitProbe{seq: make(map[string]int), gate: make(chan struct{})}
	env := StartServers(tb, server.Config{}, func(srv *server.Server) {
		srv.AddHookFirst(func(e *server.Effect) {
			p.mu.Lock()
			p.appended++
			p.seq[string(e.Key)] = p.appended
			p.mu.Unlock()
		})
		srv.SetCommit(p.commit)
	})
	return env, p
}

// commit reaches every effect numbered when it starts, as the log's group
// commit does; the write of WriteDuringCommit runs in between, as a write
// on another goroutine may while the log writes and fsyncs.
func (p *CommitProbe) commit() {
	p.mu.Lock()
	target, write, held := p.appended, p.write, p.held
	p.write = nil
	p.held = held || write != nil
	p.mu.Unlock()
	if write != nil {
		write()
	} else if held {
		<-p.gate
	}
	p.mu.Lock()
	p.committed = max(p.committed, target)
	p.mu.Unlock()
}

// open lets the held Commits go on; calling it again does nothing.
func (p *CommitProbe) open() { p.release.Do(func() { close(p.gate) }) }

// Committed reports whether a Commit has reached key's last effect.
func (p *CommitProbe) Committed(key string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	n, ok := p.seq[key]
	return ok && n <= p.committed
}

// WriteDuringCommit sets k1 from one session of srv, so that a push for it
// is queued to the subscribers of k*, and has the next Commit (the one
// before that push's round) set k2 from another, as the expiry cron may
// while the log fsyncs. The Commits after that one are held for 300 ms:
// the push for k2 must wait for one of them, and arrives after k1's.
func (p *CommitProbe) WriteDuringCommit(tb testing.TB, srv *server.Server) {
	tb.Helper()
	var ws [2]*server.Session
	for i := range ws {
		s, err := srv.NewSession(nil, false)
		if err != nil {
			tb.Fatal(err)
		}
		ws[i] = s
	}
	p.mu.Lock()
	p.write = func() { ws[1].Exec([][]byte{[]byte("SET"), []byte("k2"), []byte("v")}) }
	p.mu.Unlock()
	ws[0].Exec([][]byte{[]byte("SET"), []byte("k1"), []byte("v")})
	time.AfterFunc(300*time.Millisecond, p.open)
	tb.Cleanup(p.open) // before the server stops
}
