package server

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"

	"github.com/recached/recached/server/keyspace"
)

// The bus (SPEC section 11): subscribers that are not RESP sessions (the
// Blackevin realtime and Amaquet transports) register here, in the same
// registry as RESP subscriptions, and every publication on a plain channel
// (RESP PUBLISH from TCP or the bridge, BusPublish, keyspace notifications)
// reaches both kinds in one pass. The pass holds the registry's read lock
// and the channel's order lock (history.go), so every subscriber, whatever
// its protocol, sees one order per channel, and PUBLISH counts bus
// receivers too.
//
// Shard channels (SPUBLISH, SSUBSCRIBE) stay RESP-only: SPEC section 11
// speaks of channel names, and a shard channel is a cluster routing device
// with no counterpart in the other protocols. They are not recorded in the
// history either.
//
// Introspection counts receivers of every protocol, as a Redis user reading
// PUBSUB expects: NUMSUB counts a channel's bus subscriptions with its RESP
// ones, CHANNELS lists a channel that only bus subscriptions have, NUMPAT
// counts distinct globs of both kinds (INFO's pubsub_channels and
// pubsub_patterns likewise); SHARDNUMSUB and SHARDCHANNELS never see the
// bus.

// BusMessage is one publication as non-RESP subscribers see it. It is never
// modified after the publish; receivers share it and may keep it.
type BusMessage struct {
	// Channel is the channel published to.
	Channel []byte
	// Payload is the message RESP subscribers receive: PUBLISH's argument,
	// a notification's event or key, or for a BusPublish the JSON text
	// {"name":…,"data":…,"connectionId":…,"timestamp":…}.
	Payload []byte
	// Time is when the server accepted the publish. In a channel's publish
	// order times never go backwards.
	Time time.Time
	// Realtime is set only when BusPublish (a Blackevin Publish) made it.
	Realtime *RealtimeMeta
	// Notification is set on a keyspace notification
	// (__keyspace@<db>__:<key>, __keyevent@<db>__:<event>).
	Notification bool
}

// RealtimeMeta is what a Blackevin Publish carries besides its channel.
type RealtimeMeta struct {
	// Name is the message's name; HasName tells an empty name from none.
	Name    string
	HasName bool
	// Data is the message's data as JSON text, nil when it had none.
	Data json.RawMessage
	// ConnectionID is the publishing connection's id.
	ConnectionID string
}

// BusSubOptions describes a bus subscription.
type BusSubOptions struct {
	// Channel is a channel name or, with Glob set, a glob matched as
	// Redis's KEYS and PSUBSCRIBE match (keyspace.Match).
	Channel string
	Glob    bool
	// Rewind, with a plain channel, asks for up to HistoryLimit messages
	// of the channel's history (the last min(Rewind, HistoryLimit), oldest
	// first), handed to Start. It is ignored with Glob.
	Rewind int
	// Start, when set, runs once under the registry's write lock, after
	// the subscription is registered and before any live delivery can
	// reach Deliver, with the history Rewind asked for (nil when none).
	// Queue the Ack and the history there: no message is lost or
	// duplicated at the history/live boundary. It must not block,
	// subscribe, unsubscribe or publish.
	Start func(history []*BusMessage)
	// Filter, when set, is asked about each publication's channel before
	// Deliver (a Blackevin RE2 filter); a publication it refuses is not
	// delivered and not counted by PUBLISH. It runs under the registry's
	// read lock, like Deliver, and must be a pure function of the channel.
	Filter func(channel []byte) bool
	// Deliver is required. It runs on the publisher's goroutine under the
	// registry's read lock and the channel's order lock: it must not block
	// and must not subscribe, unsubscribe or publish. Queue and return.
	Deliver func(*BusMessage)
}

// BusSub is one bus subscription, the handle BusUnsubscribe takes.
type BusSub struct {
	channel string
	glob    bool
	filter  func([]byte) bool
	deliver func(*BusMessage)
	active  bool // under pubsubRegistry.mu
}

// Channel returns the channel name or glob the subscription is for.
func (b *BusSub) Channel() string { return b.channel }

// Glob reports whether Channel is a glob.
func (b *BusSub) Glob() bool { return b.glob }

// busPattern is one glob and its bus subscriptions.
type busPattern struct {
	pat  string
	subs []*BusSub
}

// BusSubscribe registers a bus subscription and returns its handle. From
// the moment Start runs (or BusSubscribe returns, without Start) until
// BusUnsubscribe returns, every publication on a matching channel reaches
// Deliver exactly once, in the channel's publish order.
func (srv *Server) BusSubscribe(o BusSubOptions) *BusSub {
	return srv.BusReplace(nil, o)
}

// BusReplace removes old (when not nil and still registered) and registers
// o in one step under the registry's lock, as BusUnsubscribe then
// BusSubscribe would but with no publication between them: one that old
// would have received and o matches reaches either old or o. A Blackevin
// Subscribe replacing an earlier one on the same channel string uses it.
func (srv *Server) BusReplace(old *BusSub, o BusSubOptions) *BusSub {
	if o.Deliver == nil {
		panic("server: BusSubscribe without a Deliver function")
	}
	sub := &BusSub{channel: o.Channel, glob: o.Glob, filter: o.Filter, deliver: o.Deliver, active: true}
	r := &srv.pubsub
	r.mu.Lock()
	defer r.mu.Unlock()
	r.removeBus(old)
	if o.Glob {
		bp := r.busPatterns[o.Channel]
		if bp == nil {
			bp = &busPattern{pat: o.Channel}
			r.busPatterns[o.Channel] = bp
			r.busPatList = append(r.busPatList, bp)
		}
		bp.subs = append(bp.subs, sub)
	} else {
		r.busChannels[o.Channel] = append(r.busChannels[o.Channel], sub)
	}
	if o.Start != nil {
		var h []*BusMessage
		if !o.Glob && o.Rewind > 0 {
			h = r.hist.last(o.Channel, o.Rewind)
		}
		o.Start(h)
	}
	return sub
}

// BusUnsubscribe removes a subscription BusSubscribe returned and reports
// whether it was registered. Once it returns, Deliver is not called any
// more.
func (srv *Server) BusUnsubscribe(sub *BusSub) bool {
	r := &srv.pubsub
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.removeBus(sub)
}

// removeBus unregisters sub and reports whether it was registered. The
// caller holds r.mu.
func (r *pubsubRegistry) removeBus(sub *BusSub) bool {
	if sub == nil || !sub.active {
		return false
	}
	sub.active = false
	if sub.glob {
		bp := r.busPatterns[sub.channel]
		bp.subs = removeBusSub(bp.subs, sub)
		if len(bp.subs) == 0 {
			delete(r.busPatterns, sub.channel)
			for i, p := range r.busPatList {
				if p == bp {
					r.busPatList = append(r.busPatList[:i], r.busPatList[i+1:]...)
					break
				}
			}
		}
		return true
	}
	if subs := removeBusSub(r.busChannels[sub.channel], sub); len(subs) == 0 {
		delete(r.busChannels, sub.channel)
	} else {
		r.busChannels[sub.channel] = subs
	}
	return true
}

// removeBusSub removes sub from subs keeping the order, clearing the tail.
func removeBusSub(subs []*BusSub, sub *BusSub) []*BusSub {
	for i, v := range subs {
		if v == sub {
			copy(subs[i:], subs[i+1:])
			subs[len(subs)-1] = nil
			return subs[:len(subs)-1]
		}
	}
	return subs
}

// BusPublish publishes on a plain channel as a Blackevin Publish does: RESP
// subscribers receive the JSON text
// {"name":…,"data":…,"connectionId":…,"timestamp":…} (name and data
// omitted when the publish had none, timestamp in ms since the epoch), bus
// subscribers the BusMessage with Realtime set, and the channel's history
// records it (unless the history TTL is zero or the payload is over
// HistoryMaxPayload). It returns the number of receptions, counted as PUBLISH
// counts them, and the message. meta.Data should be JSON text; anything
// else is published as a JSON string of its bytes.
//
// The history record goes to the append-only log with the other effects:
// call srv.Commit() before acknowledging the publish, and under
// appendfsync always it is on disk by then.
func (srv *Server) BusPublish(channel []byte, meta RealtimeMeta) (int, *BusMessage) {
	m := &RealtimeMeta{Name: meta.Name, HasName: meta.HasName, ConnectionID: meta.ConnectionID}
	if meta.Data != nil {
		m.Data = append(json.RawMessage(nil), meta.Data...)
	}
	// send stamps the time and renders the payload in the channel's order.
	bm := &BusMessage{Channel: append([]byte(nil), channel...), Realtime: m}
	record := srv.pubsub.hist.records(bm.Channel, len(m.Name)+len(m.Data))
	return srv.pubsub.send(nil, bm, bm.Channel, nil, record, false), bm
}

// appendRealtimeJSON appends the RESP payload of a Blackevin Publish
// (SPEC section 11).
func appendRealtimeJSON(b []byte, m *RealtimeMeta, ms int64) []byte {
	b = append(b, '{')
	if m.HasName {
		b = append(b, `"name":`...)
		b = appendJSONString(b, m.Name)
		b = append(b, ',')
	}
	if m.Data != nil {
		b = append(b, `"data":`...)
		if json.Valid(m.Data) {
			b = appendCompactJSON(b, m.Data)
		} else {
			b = appendJSONString(b, string(m.Data))
		}
		b = append(b, ',')
	}
	b = append(b, `"connectionId":`...)
	b = appendJSONString(b, m.ConnectionID)
	b = append(b, `,"timestamp":`...)
	b = strconv.AppendInt(b, ms, 10)
	return append(b, '}')
}

// appendJSONString appends s as a JSON string.
func appendJSONString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always marshals
	return append(b, q...)
}

// appendCompactJSON appends valid JSON text without insignificant spaces.
func appendCompactJSON(b []byte, data []byte) []byte {
	buf := bytes.NewBuffer(b)
	if err := json.Compact(buf, data); err != nil {
		return appendJSONString(b, string(data))
	}
	return buf.Bytes()
}

// smallBusMessage is a message and its bytes in one allocation, for the
// common publication whose channel and payload fit in smallBusBytes.
type smallBusMessage struct {
	m   BusMessage
	buf [smallBusBytes]byte
}

const smallBusBytes = 64

// newBusMessage copies a publication's channel and payload into a new
// message, without its time: one allocation when they are small, two
// otherwise.
func newBusMessage(ch, payload []byte) *BusMessage {
	var m *BusMessage
	var buf []byte
	if size := len(ch) + len(payload); size <= smallBusBytes {
		sm := new(smallBusMessage)
		m, buf = &sm.m, sm.buf[:size:size]
	} else {
		m, buf = new(BusMessage), make([]byte, size)
	}
	n := copy(buf, ch)
	copy(buf[n:], payload)
	m.Channel, m.Payload = buf[:n:n], buf[n:]
	return m
}

// hasBus reports whether any bus subscription exists. The caller holds
// r.mu.
func (r *pubsubRegistry) hasBus() bool {
	return len(r.busChannels) > 0 || len(r.busPatList) > 0
}

// deliverBus hands a publication on the plain channel ch to the matching
// bus subscriptions and returns the count. bm is the message, or nil to
// build it from ch and payload at the first matching subscription, with
// time t (stamped then when zero) and marked a notification when
// notification is set. The caller holds r.mu (read) and st's lock, st
// being ch's stripe.
func (r *pubsubRegistry) deliverBus(st *historyStripe, bm *BusMessage, ch, payload []byte, t time.Time, notification bool) int {
	n := 0
	get := func() *BusMessage {
		if bm == nil {
			bm = newBusMessage(ch, payload)
			if t.IsZero() {
				t = st.stamp(r.hist.now())
			}
			bm.Time, bm.Notification = t, notification
		}
		return bm
	}
	for _, sub := range r.busChannels[string(ch)] {
		if sub.filter == nil || sub.filter(ch) {
			sub.deliver(get())
			n++
		}
	}
	if len(r.busPatList) == 0 {
		return n
	}
	chs := string(ch)
	for _, bp := range r.busPatList {
		if !keyspace.Match(bp.pat, chs) {
			continue
		}
		for _, sub := range bp.subs {
			if sub.filter == nil || sub.filter(ch) {
				sub.deliver(get())
				n++
			}
		}
	}
	return n
}
