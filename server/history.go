package server

import (
	"encoding/json"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/recached/recached/snapshot"
)

// Channel history (SPEC section 9 "History"): the last HistoryLimit
// messages of every plain channel published to within the history TTL
// (Config.RealtimeHistoryTTL, 24 h by default), for Blackevin rewind.
//
// What is recorded: every publication on a plain channel made by RESP
// PUBLISH (TCP, the bridge, Amaquet COMMAND, scripts) or BusPublish, as the
// one bus says "every channel published to", up to HistoryMaxPayload bytes
// of payload. Not recorded: keyspace
// notifications, which would cost a copy and a log record on every write
// (a client that wants the state reads the keys), and shard channels
// (SPUBLISH), which stay RESP-only.
//
// The history lives in stripes chosen by a hash of the channel name. A
// stripe's lock is also the channel's order lock: a publication holds it
// while it records and delivers, so concurrent publishers on one channel
// are serialized and every subscriber sees one order. Within a stripe the
// channels form a list by last publication, oldest first, which the
// periodic prune walks from the front, dropping channels whose last
// publication is older than the TTL, with bounded work per tick.
//
// Each recorded message also goes to the append-only log (snapshot log
// record kind 3) under the stripe lock, so the log's order per channel is
// the history's; a save copies the history with every stripe locked at the
// snapshot's instant (snapshot record kind 4).

// HistoryLimit is how many messages of each channel the history keeps, the
// most a rewind returns.
const HistoryLimit = 100

// HistoryMaxPayload is the largest payload the history records (a
// Blackevin frame's limit, 64 KiB): a bigger RESP PUBLISH is delivered but
// not recorded, so that a hundred huge messages cannot pin gigabytes.
const HistoryMaxPayload = 64 << 10

// DefaultHistoryTTL is how long a channel's history is kept after its last
// publication unless the configuration says otherwise.
const DefaultHistoryTTL = 24 * time.Hour

const (
	historyStripes = 256
	// historyPruneBudget bounds the channels one prune call drops.
	historyPruneBudget = 1024
)

// history is the channel history of one server.
type history struct {
	// ttl is how long a channel is kept after its last publication, in
	// ns; zero or less turns recording off.
	ttl     atomic.Int64
	stripes [historyStripes]historyStripe
	// logf, when set (the append-only log is on), records one message in
	// the log. It is called under the message's stripe lock.
	logf func(*BusMessage)
	// The publication clock: the wall clock read through the monotonic
	// one, which costs a fraction of time.Now. offset (unix ns minus the
	// monotonic ns since base) is refreshed at every prune, so the clock
	// follows wall clock steps within a tick.
	base   time.Time
	offset atomic.Int64
}

// historyStripe holds the histories of the channels hashing to it.
type historyStripe struct {
	mu    sync.Mutex
	chans map[string]*chanHistory
	// last is the latest time stamped on a publication of the stripe.
	last time.Time
	// oldest and newest end the list of chans by last publication.
	oldest, newest *chanHistory
}

// chanHistory is one channel's ring of messages.
type chanHistory struct {
	name string
	msgs []*BusMessage // a ring once full: head is the oldest
	head int
	last int64 // unix ns of the newest message
	prev *chanHistory
	next *chanHistory
}

func (h *history) init(ttl time.Duration) {
	h.ttl.Store(int64(ttl))
	h.base = time.Now()
	h.syncClock()
	for i := range h.stripes {
		h.stripes[i].chans = make(map[string]*chanHistory)
	}
}

// syncClock realigns now with the wall clock.
func (h *history) syncClock() {
	h.offset.Store(time.Now().UnixNano() - int64(time.Since(h.base)))
}

// now returns the time a publication is accepted at.
func (h *history) now() time.Time {
	return time.Unix(0, h.offset.Load()+int64(time.Since(h.base)))
}

// stripe returns the stripe of channel ch.
func (h *history) stripe(ch []byte) *historyStripe { return &h.stripes[stripeIndex(ch)] }

// stripeOf is stripe for a channel name held as a string.
func (h *history) stripeOf(ch string) *historyStripe { return &h.stripes[stripeIndex(ch)] }

// stripeIndex hashes a channel name (FNV-1a) to its stripe.
func stripeIndex[T string | []byte](ch T) uint32 {
	x := uint32(2166136261)
	for i := 0; i < len(ch); i++ {
		x = (x ^ uint32(ch[i])) * 16777619
	}
	return x % historyStripes
}

// enabled reports whether publications are recorded.
func (h *history) enabled() bool { return h.ttl.Load() > 0 }

// records reports whether a publication of payload is recorded.
func (h *history) records(payload []byte) bool {
	return len(payload) <= HistoryMaxPayload && h.enabled()
}

// recordLocked appends bm to its channel's history and to the log. The
// caller holds st's lock, st being bm's stripe.
func (h *history) recordLocked(st *historyStripe, bm *BusMessage) {
	st.add(bm)
	if h.logf != nil {
		h.logf(bm)
	}
}

// add appends bm to its channel's ring, making the channel the newest.
// The caller holds st.mu.
func (st *historyStripe) add(bm *BusMessage) {
	c := st.chans[string(bm.Channel)]
	switch {
	case c == nil:
		c = &chanHistory{name: string(bm.Channel)}
		st.chans[c.name] = c
		st.pushNewest(c)
	case c != st.newest:
		st.unlink(c)
		st.pushNewest(c)
	}
	if len(c.msgs) < HistoryLimit {
		c.msgs = append(c.msgs, bm)
	} else {
		c.msgs[c.head] = bm
		c.head = (c.head + 1) % HistoryLimit
	}
	c.last = bm.Time.UnixNano()
}

// stamp returns the time of a publication accepted at now: now, or the
// stripe's last time if the clock went back, so that times follow each
// channel's publish order. The caller holds st.mu.
func (st *historyStripe) stamp(now time.Time) time.Time {
	if now.Before(st.last) {
		return st.last
	}
	st.last = now
	return now
}

func (st *historyStripe) unlink(c *chanHistory) {
	if c.prev != nil {
		c.prev.next = c.next
	} else {
		st.oldest = c.next
	}
	if c.next != nil {
		c.next.prev = c.prev
	} else {
		st.newest = c.prev
	}
	c.prev, c.next = nil, nil
}

func (st *historyStripe) pushNewest(c *chanHistory) {
	c.prev = st.newest
	if st.newest != nil {
		st.newest.next = c
	} else {
		st.oldest = c
	}
	st.newest = c
}

// ordered returns the channel's messages oldest first.
func (c *chanHistory) ordered(dst []*BusMessage) []*BusMessage {
	dst = append(dst, c.msgs[c.head:]...)
	return append(dst, c.msgs[:c.head]...)
}

// last returns a copy of the last min(n, HistoryLimit) messages of
// channel, oldest first, or nil.
func (h *history) last(channel string, n int) []*BusMessage {
	st := h.stripeOf(channel)
	st.mu.Lock()
	defer st.mu.Unlock()
	c := st.chans[channel]
	if c == nil || n <= 0 {
		return nil
	}
	all := c.ordered(make([]*BusMessage, 0, len(c.msgs)))
	if n < len(all) {
		all = all[len(all)-n:]
	}
	return all
}

// prune drops the channels whose last publication is older than the TTL
// as of now, at most historyPruneBudget of them, and returns how many it
// dropped. The server's periodic task calls it.
func (h *history) prune(now time.Time) int {
	h.syncClock()
	ttl := h.ttl.Load()
	if ttl <= 0 {
		ttl = 0
	}
	cut := now.UnixNano() - ttl
	dropped := 0
	for i := range h.stripes {
		st := &h.stripes[i]
		st.mu.Lock()
		for c := st.oldest; c != nil && c.last <= cut && dropped < historyPruneBudget; c = st.oldest {
			st.unlink(c)
			delete(st.chans, c.name)
			dropped++
		}
		st.mu.Unlock()
		if dropped >= historyPruneBudget {
			break
		}
	}
	return dropped
}

// restore appends a message read back from the snapshot or the log,
// without logging it again. Loading calls it before serving.
func (h *history) restore(bm *BusMessage) {
	st := h.stripe(bm.Channel)
	st.mu.Lock()
	st.add(bm)
	// New publications are stamped no earlier than what was restored.
	st.stamp(bm.Time)
	st.mu.Unlock()
}

// sortRestored puts every stripe's list back in order of last publication
// once loading is done: the snapshot lists channels in no such order.
func (h *history) sortRestored() {
	for i := range h.stripes {
		st := &h.stripes[i]
		st.mu.Lock()
		list := make([]*chanHistory, 0, len(st.chans))
		for _, c := range st.chans {
			list = append(list, c)
		}
		sort.Slice(list, func(a, b int) bool { return list[a].last < list[b].last })
		st.oldest, st.newest = nil, nil
		for _, c := range list {
			c.prev, c.next = nil, nil
			st.pushNewest(c)
		}
		st.mu.Unlock()
	}
}

// lockAll locks every stripe, in index order (a save's instant).
func (h *history) lockAll() {
	for i := range h.stripes {
		h.stripes[i].mu.Lock()
	}
}

// unlockAll undoes lockAll.
func (h *history) unlockAll() {
	for i := range h.stripes {
		h.stripes[i].mu.Unlock()
	}
}

// copyLocked returns every channel's messages, each channel's oldest
// first. The caller holds every stripe (lockAll).
func (h *history) copyLocked() [][]*BusMessage {
	var out [][]*BusMessage
	for i := range h.stripes {
		for _, c := range h.stripes[i].chans {
			out = append(out, c.ordered(make([]*BusMessage, 0, len(c.msgs))))
		}
	}
	return out
}

// channels returns the number of channels with a history.
func (h *history) channels() int {
	n := 0
	for i := range h.stripes {
		st := &h.stripes[i]
		st.mu.Lock()
		n += len(st.chans)
		st.mu.Unlock()
	}
	return n
}

// loaded finishes loading: the lists in order of last publication, and the
// channels past the TTL dropped at once.
func (h *history) loaded(now time.Time) {
	h.sortRestored()
	for h.prune(now) == historyPruneBudget {
	}
}

// historyRecord is bm as the snapshot and the log keep it.
func historyRecord(bm *BusMessage) snapshot.History {
	r := snapshot.History{Channel: bm.Channel, Time: bm.Time.UnixNano(), Payload: bm.Payload}
	if m := bm.Realtime; m != nil {
		r.Realtime = true
		r.ConnectionID, r.Name, r.HasName, r.Data = m.ConnectionID, m.Name, m.HasName, m.Data
	}
	return r
}

// busMessageOf rebuilds a recorded message, copying what r's reader may
// reuse.
func busMessageOf(r snapshot.History) *BusMessage {
	bm := newBusMessage(r.Channel, r.Payload)
	bm.Time = time.Unix(0, r.Time)
	if r.Realtime {
		m := &RealtimeMeta{Name: r.Name, HasName: r.HasName, ConnectionID: r.ConnectionID}
		if r.Data != nil {
			m.Data = append(json.RawMessage{}, r.Data...)
		}
		bm.Realtime = m
	}
	return bm
}

// logHistory appends one recorded message to the append-only log; it is
// the history's logf while the log is on.
func (p *persister) logHistory(bm *BusMessage) {
	l := p.log.Load()
	if l == nil {
		return
	}
	r := historyRecord(bm)
	l.AppendHistory(&r)
}

// restoreHistory puts a message read back from the snapshot or the log in
// its channel's history.
func (p *persister) restoreHistory(r snapshot.History) {
	p.srv.pubsub.hist.restore(busMessageOf(r))
}
