// Package dedup keeps the high-water marks that make DEDUP-wrapped writes
// apply exactly once: per client id, the highest wire id admitted so far.
// A write whose id is at or below its client's mark is a replay and must
// not run again.
package dedup

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// MaxClientID is the longest client id accepted, in bytes.
const MaxClientID = 64

// IdleTTL is how long a client's mark is kept without use.
const IdleTTL = 24 * time.Hour

// Mark is one client's high-water mark.
type Mark struct {
	ClientID string
	High     uint64
	LastSeen int64 // unix milliseconds of the last DEDUP with this id
}

type entry struct {
	high     uint64
	lastSeen int64
}

// Table holds every client's mark. It is safe for concurrent use.
type Table struct {
	mu    sync.Mutex
	marks map[string]*entry
	now   func() time.Time
	// replays counts the writes refused as replays, for metrics.
	replays atomic.Int64
}

// Replays reports how many writes were refused as replays since start.
func (t *Table) Replays() int64 { return t.replays.Load() }

// New returns an empty table reading time from now (time.Now when nil), so
// that tests can move the clock.
func New(now func() time.Time) *Table {
	if now == nil {
		now = time.Now
	}
	return &Table{marks: make(map[string]*entry), now: now}
}

// Admit decides whether the write (clientID, wireID) runs. A client with
// no mark yet runs any id, 0 included; otherwise only ids above its mark
// run. An admitted id becomes the new mark before the write runs, so a
// replay arriving meanwhile is refused.
func (t *Table) Admit(clientID []byte, wireID uint64) bool {
	return t.AdmitAt(clientID, wireID, t.now().UnixMilli())
}

// AdmitAt is Admit with the time of use given (unix ms), for callers that
// keep a coarse clock: marks idle for a day are what it is for.
func (t *Table) AdmitAt(clientID []byte, wireID uint64, now int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.marks[string(clientID)]
	if e == nil {
		t.marks[string(clientID)] = &entry{high: wireID, lastSeen: now}
		return true
	}
	e.lastSeen = now
	if wireID <= e.high {
		t.replays.Add(1)
		return false
	}
	e.high = wireID
	return true
}

// Raise sets a client's mark to at least wireID, as replaying the
// append-only log does.
func (t *Table) Raise(clientID string, wireID uint64, lastSeen int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.marks[clientID]
	if e == nil {
		t.marks[clientID] = &entry{high: wireID, lastSeen: lastSeen}
		return
	}
	if wireID > e.high {
		e.high = wireID
	}
	if lastSeen > e.lastSeen {
		e.lastSeen = lastSeen
	}
}

// Sweep removes the marks idle for longer than IdleTTL and returns how many
// it removed.
func (t *Table) Sweep() int {
	cutoff := t.now().Add(-IdleTTL).UnixMilli()
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for id, e := range t.marks {
		if e.lastSeen < cutoff {
			delete(t.marks, id)
			n++
		}
	}
	return n
}

// Marks returns every mark, sorted by client id, for snapshots.
func (t *Table) Marks() []Mark {
	t.mu.Lock()
	out := make([]Mark, 0, len(t.marks))
	for id, e := range t.marks {
		out = append(out, Mark{ClientID: id, High: e.high, LastSeen: e.lastSeen})
	}
	t.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].ClientID < out[j].ClientID })
	return out
}

// Restore replaces the table's marks with ms, as loading a snapshot does.
func (t *Table) Restore(ms []Mark) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.marks = make(map[string]*entry, len(ms))
	for _, m := range ms {
		t.marks[m.ClientID] = &entry{high: m.High, lastSeen: m.LastSeen}
	}
}

// Len returns the number of clients with a mark.
func (t *Table) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.marks)
}
