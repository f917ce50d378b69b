package server

import (
	"hash/maphash"
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
// of payload. Not recorded: keyspace notifications, which would cost a
// copy and a log record on every write (a client that wants the state
// reads the keys), and shard channels (SPUBLISH), which stay RESP-only.
//
// The history lives in stripes chosen by a hash of the channel name. A
// stripe's lock is also the channel's order lock: a publication holds it
// while it records and delivers, so concurrent publishers on one channel
// are serialized and every subscriber sees one order. Within a stripe the
// channels form a list by last publication, oldest first, which the
// periodic prune walks from the front, dropping channels whose last
// publication is older than the TTL, with bounded work per tick. A
// channel's messages are encoded in one byte slice (history_ring.go), and
// the stripe's tables hold no other pointer, so that a million channels
// publish without a message object each and cost the collector little.
//
// Each recorded message also goes to the append-only log (snapshot log
// record kind 3) under the stripe lock, so the log's order per channel is
// the history's; a save takes views of every ring with every stripe locked
// at the snapshot's instant (snapshot record kind 4).

// HistoryLimit is how many messages of each channel the history keeps, the
// most a rewind returns.
const HistoryLimit = 100

// HistoryMaxPayload is the largest payload the history records (a
// Blackevin frame's limit, 64 KiB): a bigger RESP PUBLISH is delivered but
// not recorded, so that a hundred huge messages cannot pin gigabytes. A
// channel name over it is not recorded either.
const HistoryMaxPayload = 64 << 10

// DefaultHistoryTTL is how long a channel's history is kept after its last
// publication unless the configuration says otherwise.
const DefaultHistoryTTL = 24 * time.Hour

// DefaultHistoryMaxMemory is the memory the history may hold unless the
// configuration says otherwise. A Redis user publishing to ever new
// channels, whose publications redis-server forgets at once, must not see
// the process grow without end: past it, the channels published to least
// recently lose their history first.
const DefaultHistoryMaxMemory = 256 << 20

// ringOverhead is what the history counts for a channel besides its ring:
// its entry and its share of the index.
const ringOverhead = 72

const (
	historyStripes = 256
	// historyPruneBudget bounds the channels one prune call drops.
	historyPruneBudget = 1024
	// noChan ends a list of a stripe's channels.
	noChan = -1
)

// history is the channel history of one server.
type history struct {
	// ttl is how long a channel is kept after its last publication, in
	// ns; zero or less turns recording off.
	ttl atomic.Int64
	// maxBytes is the memory the history may hold (0: no bound), and
	// bytes what it holds: the rings' capacity and ringOverhead per
	// channel, summed over the stripes.
	maxBytes int64
	bytes    atomic.Int64
	// seed hashes channel names to stripes and index entries.
	seed    maphash.Seed
	stripes [historyStripes]historyStripe
	// logf, when set (the append-only log is on), records one message in
	// the log. It is called under the message's stripe lock.
	logf func(snapshot.History)
	// The publication clock: the wall clock read through the monotonic
	// one, which costs a fraction of time.Now. offset (unix ns minus the
	// monotonic ns since base) is refreshed at every prune, so the clock
	// follows wall clock steps within a tick.
	base   time.Time
	offset atomic.Int64
}

// historyStripe holds the histories of the channels hashing to it, with
// no pointer but each channel's ring for the garbage collector to follow.
type historyStripe struct {
	mu    sync.Mutex
	index ringIndex
	// pages hold the channels' entries, numbered across them in order;
	// pages of fixed size grow the stripe without copying it.
	pages [][]chanRing
	// free is the first unused entry, chained by next.
	free int32
	// bytes is what the stripe's channels hold, as history.bytes counts.
	bytes int64
	// viewed is set while a save holds views of the rings (copyLocked):
	// they may then not be compacted in place.
	viewed bool
	// last is the latest time stamped on a publication of the stripe.
	last time.Time
	// oldest and newest end the list of channels by last publication.
	oldest, newest int32
}

// ringPageBits sets the entries per page of a stripe (256, 14 KiB).
const ringPageBits = 8

// at returns entry i.
func (st *historyStripe) at(i int32) *chanRing {
	return &st.pages[i>>ringPageBits][i&(1<<ringPageBits-1)]
}

func (h *history) init(ttl time.Duration, maxBytes int64) {
	h.ttl.Store(int64(ttl))
	h.maxBytes = maxBytes
	h.seed = maphash.MakeSeed()
	h.base = time.Now()
	h.syncClock()
	for i := range h.stripes {
		st := &h.stripes[i]
		st.free, st.oldest, st.newest = noChan, noChan, noChan
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

// hash returns the hash of channel ch, which picks its stripe and its
// index entry.
func (h *history) hash(ch []byte) uint64 { return maphash.Bytes(h.seed, ch) }

// stripe returns the stripe of the channel whose name hashes to hc.
func (h *history) stripe(hc uint64) *historyStripe { return &h.stripes[hc%historyStripes] }

// enabled reports whether publications are recorded.
func (h *history) enabled() bool { return h.ttl.Load() > 0 }

// records reports whether a publication on ch of n bytes (a RESP payload,
// or a realtime message's name and data) is recorded.
func (h *history) records(ch []byte, n int) bool {
	return n <= HistoryMaxPayload && len(ch) <= HistoryMaxPayload && h.enabled()
}

// recordLocked appends r to its channel's history and to the log. The
// caller holds st's lock, st being the stripe of r.Channel, whose hash is
// hc.
func (h *history) recordLocked(st *historyStripe, hc uint64, r *snapshot.History) {
	h.addLocked(st, hc, r)
	if h.logf != nil {
		h.logf(*r)
	}
}

// addLocked appends r to its channel's history and, when that grew the
// history past its memory, trims st. The caller holds st.mu.
func (h *history) addLocked(st *historyStripe, hc uint64, r *snapshot.History) {
	i, grew := st.add(hc, r)
	if grew != 0 && h.bytes.Add(grew) > h.maxBytes && h.maxBytes > 0 {
		h.trimLocked(st, i)
	}
}

// trimLocked drops st's channels published to least recently, but keep,
// while the history holds more than its memory and st more than its
// share of it. The caller holds st.mu.
func (h *history) trimLocked(st *historyStripe, keep int32) {
	share := h.maxBytes / historyStripes
	for h.maxBytes > 0 && h.bytes.Load() > h.maxBytes && st.bytes > share && st.oldest != noChan && st.oldest != keep {
		h.dropLocked(st, st.oldest)
	}
}

// dropLocked forgets channel i of st. The caller holds st.mu.
func (h *history) dropLocked(st *historyStripe, i int32) {
	h.bytes.Add(-st.drop(i, h.hash(st.at(i).name())))
}

// find returns the entry of channel ch, whose hash is hc, or noChan. The
// caller holds st.mu.
func (st *historyStripe) find(hc uint64, ch []byte) int32 {
	return st.index.find(tagOf(hc), func(i int32) bool { return string(st.at(i).name()) == string(ch) })
}

// add appends r to its channel's ring, making the channel the newest, and
// returns the channel's entry and by how many bytes the stripe grew. The
// caller holds st.mu.
func (st *historyStripe) add(hc uint64, r *snapshot.History) (int32, int64) {
	i := st.find(hc, r.Channel)
	var grew int64
	switch {
	case i == noChan:
		i = st.alloc()
		n := int32(len(r.Channel))
		*st.at(i) = chanRing{nameLen: n, start: n}
		st.index.insert(tagOf(hc), i)
		st.pushNewest(i)
		grew = ringOverhead
	case i != st.newest:
		st.unlink(i)
		st.pushNewest(i)
	}
	c := st.at(i)
	before := cap(c.ring)
	c.add(r, !st.viewed)
	grew += int64(cap(c.ring) - before)
	st.bytes += grew
	return i, grew
}

// alloc returns an unused entry.
func (st *historyStripe) alloc() int32 {
	if i := st.free; i != noChan {
		st.free = st.at(i).next
		return i
	}
	n := len(st.pages)
	if n == 0 || len(st.pages[n-1]) == cap(st.pages[n-1]) {
		st.pages = append(st.pages, make([]chanRing, 0, 1<<ringPageBits))
		n++
	}
	st.pages[n-1] = append(st.pages[n-1], chanRing{})
	return int32((n-1)<<ringPageBits + len(st.pages[n-1]) - 1)
}

// drop forgets channel i, whose name hashes to hc, and returns the bytes
// the stripe gave back. The caller holds st.mu.
func (st *historyStripe) drop(i int32, hc uint64) int64 {
	cost := int64(cap(st.at(i).ring)) + ringOverhead
	st.unlink(i)
	st.index.remove(tagOf(hc), i)
	*st.at(i) = chanRing{next: st.free}
	st.free = i
	st.bytes -= cost
	return cost
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

func (st *historyStripe) unlink(i int32) {
	c := st.at(i)
	if c.prev != noChan {
		st.at(c.prev).next = c.next
	} else {
		st.oldest = c.next
	}
	if c.next != noChan {
		st.at(c.next).prev = c.prev
	} else {
		st.newest = c.prev
	}
	c.prev, c.next = noChan, noChan
}

func (st *historyStripe) pushNewest(i int32) {
	c := st.at(i)
	c.prev, c.next = st.newest, noChan
	if st.newest != noChan {
		st.at(st.newest).next = i
	} else {
		st.oldest = i
	}
	st.newest = i
}

// last returns the last min(n, HistoryLimit) messages of channel, oldest
// first, each the caller's to keep, or nil.
func (h *history) last(channel string, n int) []*BusMessage {
	ch := []byte(channel)
	hc := h.hash(ch)
	st := h.stripe(hc)
	st.mu.Lock()
	defer st.mu.Unlock()
	i := st.find(hc, ch)
	if i == noChan || n <= 0 {
		return nil
	}
	c := st.at(i)
	skip := int(c.n) - n
	out := make([]*BusMessage, 0, min(n, int(c.n)))
	eachRecord(c.name(), c.records(), func(r *snapshot.History) {
		if skip--; skip < 0 {
			out = append(out, busMessageOf(r))
		}
	})
	return out
}

// prune drops the channels whose last publication is older than the TTL
// as of now, at most historyPruneBudget of them, and returns how many it
// dropped; it also trims every stripe it visits while the history holds
// more than its memory. The server's periodic task calls it.
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
		for c := st.oldest; c != noChan && st.at(c).last <= cut && dropped < historyPruneBudget; c = st.oldest {
			h.dropLocked(st, c)
			dropped++
		}
		h.trimLocked(st, noChan)
		st.mu.Unlock()
		if dropped >= historyPruneBudget {
			break
		}
	}
	return dropped
}

// restore appends a message read back from the snapshot or the log,
// without logging it again. Loading calls it before serving.
func (h *history) restore(r *snapshot.History) {
	if !h.records(r.Channel, 0) {
		return
	}
	hc := h.hash(r.Channel)
	st := h.stripe(hc)
	st.mu.Lock()
	h.addLocked(st, hc, r)
	// New publications are stamped no earlier than what was restored.
	st.stamp(time.Unix(0, r.Time))
	st.mu.Unlock()
}

// sortRestored puts every stripe's list back in order of last publication
// once loading is done: the snapshot lists channels in no such order.
func (h *history) sortRestored() {
	for i := range h.stripes {
		st := &h.stripes[i]
		st.mu.Lock()
		list := make([]int32, 0, st.index.used)
		for c := st.oldest; c != noChan; c = st.at(c).next {
			list = append(list, c)
		}
		sort.SliceStable(list, func(a, b int) bool { return st.at(list[a]).last < st.at(list[b]).last })
		st.oldest, st.newest = noChan, noChan
		for _, c := range list {
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

// ringView is one channel's history as a save sees it: views of its ring,
// which stay valid after the lock is released (history_ring.go).
type ringView struct {
	name, records []byte
}

// copyLocked returns every channel's history. The caller holds every
// stripe (lockAll), and calls releaseViews once done with the views.
func (h *history) copyLocked() []ringView {
	var out []ringView
	for i := range h.stripes {
		st := &h.stripes[i]
		st.viewed = true
		for c := st.oldest; c != noChan; c = st.at(c).next {
			out = append(out, ringView{st.at(c).name(), st.at(c).records()})
		}
	}
	return out
}

// releaseViews lets the rings be compacted in place again once the views
// copyLocked returned are no longer read.
func (h *history) releaseViews() {
	for i := range h.stripes {
		st := &h.stripes[i]
		st.mu.Lock()
		st.viewed = false
		st.mu.Unlock()
	}
}

// HistoryMemory returns the memory the channel history holds, which
// maxmemory does not count (it is no key): the Go memory limit that
// follows maxmemory leaves room for it.
func (srv *Server) HistoryMemory() uint64 { return uint64(max(srv.pubsub.hist.bytes.Load(), 0)) }

// channels returns the number of channels with a history.
func (h *history) channels() int {
	n := 0
	for i := range h.stripes {
		st := &h.stripes[i]
		st.mu.Lock()
		n += st.index.used
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

// logHistory appends one recorded message to the append-only log; it is
// the history's logf while the log is on.
func (p *persister) logHistory(r snapshot.History) {
	l := p.log.Load()
	if l == nil {
		return
	}
	l.AppendHistory(&r)
}

// restoreHistory puts a message read back from the snapshot or the log in
// its channel's history.
func (p *persister) restoreHistory(r snapshot.History) {
	p.srv.pubsub.hist.restore(&r)
}
