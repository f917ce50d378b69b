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
	during    func()
	// hold, made by During, keeps the Commits after that one waiting
	// until Release closes it; gate is hold once that Commit has run.
	hold, gate chan struct{}
}

// NewCommitProbe installs a probe on srv, which must not serve yet.
func NewCommitProbe(srv *server.Server) *CommitProbe {
	p := &CommitProbe{seq: make(map[string]int)}
	srv.AddHookFirst(func(e *server.Effect) {
		p.mu.Lock()
		p.appended++
		p.seq[string(e.Key)] = p.appended
		p.mu.Unlock()
	})
	srv.SetCommit(p.commit)
	return p
}

// StartWithCommitProbe runs recached in-process (StartServers) with a
// CommitProbe in place of its log's commit.
func StartWithCommitProbe(tb testing.TB) (Servers, *CommitProbe) {
	tb.Helper()
	var p *CommitProbe
	env := StartServers(tb, server.Config{}, func(srv *server.Server) { p = NewCommitProbe(srv) })
	return env, p
}

// commit reaches every effect numbered when it starts, as the log's group
// commit does; the function given to During runs in between, as a write on
// another goroutine may while the log writes and fsyncs.
func (p *CommitProbe) commit() {
	p.mu.Lock()
	target, f, gate := p.appended, p.during, p.gate
	p.during = nil
	if f != nil {
		p.gate = p.hold
	}
	p.mu.Unlock()
	if f != nil {
		f()
	} else if gate != nil {
		<-gate
	}
	p.mu.Lock()
	p.committed = max(p.committed, target)
	p.mu.Unlock()
}

// During has the next Commit run f after it read what it commits; the
// Commits after that one wait until Release, so that a push sent without
// one of them is caught with its write not committed.
func (p *CommitProbe) During(f func()) {
	p.mu.Lock()
	p.during = f
	p.hold = make(chan struct{})
	p.mu.Unlock()
}

// Release lets the Commits that During held go on; calling it again does
// nothing.
func (p *CommitProbe) Release() {
	p.mu.Lock()
	h := p.hold
	p.hold = nil
	p.mu.Unlock()
	if h != nil {
		close(h)
	}
}

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
	p.During(func() { ws[1].Exec([][]byte{[]byte("SET"), []byte("k2"), []byte("v")}) })
	ws[0].Exec([][]byte{[]byte("SET"), []byte("k1"), []byte("v")})
	time.AfterFunc(300*time.Millisecond, p.Release)
	tb.Cleanup(p.Release) // before the server stops
}
