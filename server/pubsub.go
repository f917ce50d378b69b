package server

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/recached/recached/resp"
	"github.com/recached/recached/server/keyspace"
)

// Subscription kinds: channels and patterns share one count, as Redis
// counts them; shard channels (SSUBSCRIBE) have their own.
const (
	kindChannel = iota
	kindPattern
	kindShard
	numKinds
)

// Redis's default client-output-buffer-limit for pub/sub clients (32mb 8mb
// 60): a subscriber holding more than pubsubHardLimit bytes of unsent
// output, or more than pubsubSoftLimit for pubsubSoftFor, is disconnected.
// The limits in force are the configured ones (config_act.go).
const (
	pubsubHardLimit = 32 << 20
	pubsubSoftLimit = 8 << 20
	pubsubSoftFor   = 60 * time.Second
)

// pendingConn is implemented by transports that queue pushes: Pending
// reports the bytes accepted by Push and not yet handed to the socket. The
// engine checks it against the hard limit as it delivers, so that a
// subscriber that has stopped reading cannot pile up memory between two
// passes of its transport's writer.
type pendingConn interface {
	Pending() int
}

// pubsubRegistry maps channels, shard channels and patterns to their
// subscribers, each list in subscription order. PUBLISH delivers under the
// read lock, so that once UNSUBSCRIBE has returned no message for the
// channel can reach the session any more; delivery only appends to the
// subscribers' queues and never waits on a network.
type pubsubRegistry struct {
	mu       sync.RWMutex
	channels map[string][]*Session
	shards   map[string][]*Session
	patterns map[string]*patternSubs
	// patList holds the patterns in order of first subscription, the order
	// PUBLISH tries them in.
	patList []*patternSubs

	// Bus subscriptions (bus.go), by channel and by glob, the globs in
	// order of first subscription.
	busChannels map[string][]*BusSub
	busPatterns map[string]*busPattern
	busPatList  []*busPattern
	// hist is the channel history; its stripe locks are also the
	// per-channel order locks every publication takes (history.go).
	hist history
}

// patternSubs is one pattern and its subscribers.
type patternSubs struct {
	pat  string
	subs []*Session
}

// pubsubState is a session's side of its subscriptions. The name sets are
// used by the session's own goroutine under the registry's lock; the
// atomics are read by publishers and transports.
type pubsubState struct {
	channels map[string]struct{}
	shards   map[string]struct{}
	patterns []string // in subscription order, as Redis lists them

	counts    [numKinds]atomic.Int32
	closing   atomic.Bool
	softSince atomic.Int64 // unix nanoseconds the soft limit was first passed, 0 if not
	filter    atomic.Pointer[func(channel []byte) bool]
}

// initPubSub prepares the registry and drops a session's subscriptions on
// RESET. New calls it.
func (srv *Server) initPubSub() {
	srv.pubsub.channels = make(map[string][]*Session)
	srv.pubsub.shards = make(map[string][]*Session)
	srv.pubsub.patterns = make(map[string]*patternSubs)
	srv.pubsub.busChannels = make(map[string][]*BusSub)
	srv.pubsub.busPatterns = make(map[string]*busPattern)
	srv.pubsub.hist.init(srv.cfg.RealtimeHistoryTTL, srv.cfg.RealtimeHistoryMaxMemory)
	srv.resetHooks = append(srv.resetHooks, func(s *Session) { srv.pubsub.dropSession(s) })
}

// pubsubRelease drops the session's subscriptions when its connection
// closes.
func (s *Session) pubsubRelease() { s.srv.pubsub.dropSession(s) }

// PubSubCounts returns the session's numbers of subscribed channels,
// patterns and shard channels. It is safe from any goroutine (CLIENT LIST).
func (s *Session) PubSubCounts() (channels, patterns, shards int) {
	return int(s.ps.counts[kindChannel].Load()), int(s.ps.counts[kindPattern].Load()), int(s.ps.counts[kindShard].Load())
}

// setChannelFilter makes deliveries to s skip channels fn rejects (strict
// scope: pattern deliveries are filtered to channels in the token's scope);
// nil removes the filter. Skipped deliveries are not counted by PUBLISH.
func (s *Session) setChannelFilter(fn func(channel []byte) bool) {
	if fn == nil {
		s.ps.filter.Store(nil)
		return
	}
	s.ps.filter.Store(&fn)
}

// kindCount is the count a (un)subscribe confirmation of kind reports:
// channels plus patterns, or shard channels.
func (st *pubsubState) kindCount(kind int) int {
	if kind == kindShard {
		return len(st.shards)
	}
	return len(st.channels) + len(st.patterns)
}

// updatePubSubCounts publishes the session's counts after a change and
// keeps s.subscribed, which dispatch reads, equal to their sum.
func (s *Session) updatePubSubCounts() {
	st := &s.ps
	st.counts[kindChannel].Store(int32(len(st.channels)))
	st.counts[kindPattern].Store(int32(len(st.patterns)))
	st.counts[kindShard].Store(int32(len(st.shards)))
	s.subscribed = len(st.channels) + len(st.patterns) + len(st.shards)
	if s.subscribed == 0 {
		st.softSince.Store(0)
	}
}

// add subscribes s to name; it reports false when s already was. The
// caller holds r.mu.
func (r *pubsubRegistry) add(s *Session, kind int, name []byte) bool {
	st := &s.ps
	switch kind {
	case kindPattern:
		for _, p := range st.patterns {
			if p == string(name) {
				return false
			}
		}
		pat := string(name)
		st.patterns = append(st.patterns, pat)
		ps := r.patterns[pat]
		if ps == nil {
			ps = &patternSubs{pat: pat}
			r.patterns[pat] = ps
			r.patList = append(r.patList, ps)
		}
		ps.subs = append(ps.subs, s)
		return true
	default:
		set, m := &st.channels, r.channels
		if kind == kindShard {
			set, m = &st.shards, r.shards
		}
		if _, ok := (*set)[string(name)]; ok {
			return false
		}
		if *set == nil {
			*set = make(map[string]struct{})
		}
		ch := string(name)
		(*set)[ch] = struct{}{}
		m[ch] = append(m[ch], s)
		return true
	}
}

// remove unsubscribes s from name; it reports false when s was not
// subscribed. The caller holds r.mu.
func (r *pubsubRegistry) remove(s *Session, kind int, name string) bool {
	st := &s.ps
	switch kind {
	case kindPattern:
		i := indexOf(st.patterns, name)
		if i < 0 {
			return false
		}
		st.patterns = append(st.patterns[:i], st.patterns[i+1:]...)
		ps := r.patterns[name]
		ps.subs = removeSession(ps.subs, s)
		if len(ps.subs) == 0 {
			delete(r.patterns, name)
			for j, p := range r.patList {
				if p == ps {
					r.patList = append(r.patList[:j], r.patList[j+1:]...)
					break
				}
			}
		}
		return true
	default:
		set, m := st.channels, r.channels
		if kind == kindShard {
			set, m = st.shards, r.shards
		}
		if _, ok := set[name]; !ok {
			return false
		}
		delete(set, name)
		if subs := removeSession(m[name], s); len(subs) == 0 {
			delete(m, name)
		} else {
			m[name] = subs
		}
		return true
	}
}

// names returns what s is subscribed to of kind, in the order UNSUBSCRIBE
// with no arguments reports them: patterns in subscription order, channels
// sorted.
func (st *pubsubState) names(kind int) []string {
	if kind == kindPattern {
		return append([]string(nil), st.patterns...)
	}
	set := st.channels
	if kind == kindShard {
		set = st.shards
	}
	out := make([]string, 0, len(set))
	for ch := range set {
		out = append(out, ch)
	}
	sort.Strings(out)
	return out
}

// dropSession removes every subscription of s, without replies (RESET,
// disconnect).
func (r *pubsubRegistry) dropSession(s *Session) {
	st := &s.ps
	if len(st.channels)+len(st.patterns)+len(st.shards) == 0 {
		return
	}
	r.mu.Lock()
	for kind := 0; kind < numKinds; kind++ {
		for _, name := range st.names(kind) {
			r.remove(s, kind, name)
		}
	}
	r.mu.Unlock()
	s.updatePubSubCounts()
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

// removeSession removes s from subs keeping the order. The slice's tail is
// cleared so that the backing array does not keep a closed session alive.
func removeSession(subs []*Session, s *Session) []*Session {
	for i, v := range subs {
		if v == s {
			copy(subs[i:], subs[i+1:])
			subs[len(subs)-1] = nil
			return subs[:len(subs)-1]
		}
	}
	return subs
}

// message is one publication, encoded lazily and at most once per shape
// (a RESP2 array, a RESP3 push) for all its subscribers. The encoded bytes
// are fresh for each publication and never modified once built, so a
// transport may keep them.
type message struct {
	tag     string // "message", "pmessage" or "smessage"
	pat     string // the matching pattern, for pmessage
	ch      []byte
	payload []byte
	arr     []byte
	push    []byte
}

func (m *message) bytes(push bool) []byte {
	dst := &m.arr
	if push {
		dst = &m.push
	}
	if *dst != nil {
		return *dst
	}
	w := resp.Writer{B: make([]byte, 0, len(m.tag)+len(m.pat)+len(m.ch)+len(m.payload)+56), Proto: 2}
	if push {
		w.Proto = 3
	}
	n := 3
	if m.tag == "pmessage" {
		n = 4
	}
	w.Push(n)
	w.BulkString(m.tag)
	if n == 4 {
		w.BulkString(m.pat)
	}
	w.Bulk(m.ch)
	w.Bulk(m.payload)
	*dst = w.B
	return w.B
}

// publish delivers payload to the subscribers of ch (the shard channel ch
// when shard is set) and, for a plain channel, to every pattern that
// matches it and to the bus subscriptions (bus.go), recording it in the
// channel's history. It returns the number of receptions as Redis counts
// them: a session subscribed to the channel and to two matching patterns
// counts three times, and each bus subscription once. pub is the
// publishing session, whose own deliveries go into its reply buffer in
// order, as Redis writes them; it may be nil.
func (r *pubsubRegistry) publish(pub *Session, shard bool, ch, payload []byte) int {
	if shard {
		return r.publishShard(pub, ch, payload)
	}
	return r.send(pub, nil, ch, payload, r.hist.records(ch, len(payload)), false)
}

// notify publishes a keyspace notification: like publish on a plain
// channel, but never recorded in the history, and its bus message (marked
// Notification) is made only when a bus subscription matches.
func (r *pubsubRegistry) notify(pub *Session, ch, payload []byte) int {
	return r.send(pub, nil, ch, payload, false, true)
}

// send is the one delivery pass of a plain channel: under the registry's
// read lock and the channel's order lock it stamps the time (and renders
// a realtime message's payload, then delivered instead of payload),
// records the publication when record is set, then delivers to the
// channel's sessions, the matching patterns' sessions and the bus
// subscriptions. bm is BusPublish's message, nil for a RESP publication or
// a notification (which notification tells apart), whose bus message is
// made only when a bus subscription matches.
func (r *pubsubRegistry) send(pub *Session, bm *BusMessage, ch, payload []byte, record, notification bool) int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	hc := r.hist.hash(ch)
	st := r.hist.stripe(hc)
	st.mu.Lock()
	defer st.mu.Unlock()
	var t time.Time
	if bm != nil || record {
		t = st.stamp(r.hist.now())
	}
	if bm != nil {
		bm.Time = t
		if bm.Realtime != nil {
			bm.Payload = appendRealtimeJSON(nil, bm.Realtime, t.UnixMilli())
		}
		payload = bm.Payload
	}
	if record {
		rec := historyRecord(ch, payload, t, bm)
		r.hist.recordLocked(st, hc, &rec)
	}
	n := 0
	if subs := r.channels[string(ch)]; len(subs) > 0 {
		msg := message{tag: "message", ch: ch, payload: payload}
		for _, sub := range subs {
			if pub.deliver(sub, &msg) {
				n++
			}
		}
	}
	if len(r.patList) > 0 {
		chs := string(ch)
		for _, ps := range r.patList {
			if !keyspace.Match(ps.pat, chs) {
				continue
			}
			msg := message{tag: "pmessage", pat: ps.pat, ch: ch, payload: payload}
			for _, sub := range ps.subs {
				if pub.deliver(sub, &msg) {
					n++
				}
			}
		}
	}
	if r.hasBus() {
		n += r.deliverBus(st, bm, ch, payload, t, notification)
	}
	return n
}

// publishShard is SPUBLISH: the shard channel's sessions only.
func (r *pubsubRegistry) publishShard(pub *Session, ch, payload []byte) int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	n := 0
	if subs := r.shards[string(ch)]; len(subs) > 0 {
		msg := message{tag: "smessage", ch: ch, payload: payload}
		for _, sub := range subs {
			if pub.deliver(sub, &msg) {
				n++
			}
		}
	}
	return n
}

// deliver sends msg to sub in the shape sub expects and reports whether it
// counts as a reception. pub, the publisher, may be nil.
func (pub *Session) deliver(sub *Session, msg *message) bool {
	if f := sub.ps.filter.Load(); f != nil && !(*f)(msg.ch) {
		return false
	}
	push := sub.WS || sub.proto.Load() == 3
	if sub == pub && !pub.WS {
		n := len(pub.W.B)
		pub.W.Raw(msg.bytes(push))
		pub.markPush(n)
		return true
	}
	if sub.conn == nil || sub.ps.closing.Load() {
		return true
	}
	sub.conn.Push(msg.bytes(push))
	if pc, ok := sub.conn.(pendingConn); ok && sub.pastHardLimit(pc.Pending()) {
		sub.dropSlowSubscriber(pc.Pending())
	}
	return true
}

// CheckOutput tells the engine how many bytes of output a transport still
// holds for the session's connection (queued plus buffered by the socket
// layer), measured right after writing pushes. A subscriber past Redis's
// pub/sub output limits, 32 MB at once or 8 MB for 60 seconds, is
// disconnected; CheckOutput then returns true. Transports call it from the
// connection's writer.
func (s *Session) CheckOutput(pending int) bool {
	if s.ps.closing.Load() {
		return true
	}
	return s.checkOutputLimit(pending)
}

// outputOverLimit applies the pub/sub client output buffer limits to a
// connection holding pending bytes at time now (unix nanoseconds), given
// since, when the soft limit was first seen passed (0: not passed). It
// returns whether the connection must be dropped and the new since.
func outputOverLimit(pending int, now, since int64) (bool, int64) {
	return outputOverLimitOf(outputLimit{hard: pubsubHardLimit, soft: pubsubSoftLimit, softFor: pubsubSoftFor}, pending, now, since)
}

// dropSlowSubscriber closes the connection of a subscriber that does not
// keep up, once; other clients are not slowed by it.
func (s *Session) dropSlowSubscriber(pending int) {
	s.dropSlowClient(classPubSub, pending)
}

// activeChannels returns the channels (shard channels) that have
// subscribers and, when match is set, match pattern.
func (r *pubsubRegistry) activeChannels(shard bool, pattern string, match bool) []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	m := r.channels
	if shard {
		m = r.shards
	}
	out := make([]string, 0, len(m))
	for ch := range m {
		if !match || keyspace.Match(pattern, ch) {
			out = append(out, ch)
		}
	}
	if shard {
		return out
	}
	// A channel with only bus subscribers is active too: it has receivers.
	for ch := range r.busChannels {
		if _, ok := m[ch]; !ok && (!match || keyspace.Match(pattern, ch)) {
			out = append(out, ch)
		}
	}
	return out
}

// numSub returns the number of subscribers of each channel (shard channel).
func (r *pubsubRegistry) numSub(shard bool, chans [][]byte) []int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	m := r.channels
	if shard {
		m = r.shards
	}
	out := make([]int, len(chans))
	for i, ch := range chans {
		out[i] = len(m[string(ch)])
		if !shard {
			out[i] += len(r.busChannels[string(ch)])
		}
	}
	return out
}

// stats returns the numbers of active channels, distinct patterns and
// active shard channels (INFO stats).
func (r *pubsubRegistry) stats() (channels, patterns, shards int) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	channels = len(r.channels)
	for ch := range r.busChannels {
		if _, ok := r.channels[ch]; !ok {
			channels++
		}
	}
	patterns = len(r.patterns)
	for pat := range r.busPatterns {
		if _, ok := r.patterns[pat]; !ok {
			patterns++
		}
	}
	return channels, patterns, len(r.shards)
}
