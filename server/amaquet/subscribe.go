package amaquet

import (
	"encoding/base64"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/recached/recached/server"
	"github.com/recached/recached/sync/apikey"
)

// Subscription bounds.
const (
	DefaultBuffer = 16
	MaxBuffer     = 1024
	// maxSubs is the most subscriptions one connection may hold.
	maxSubs = 1000
)

// publishedAt is the layout of an event's published_at: RFC 3339 with
// nanoseconds, always nine digits.
const publishedAt = "2006-01-02T15:04:05.000000000Z07:00"

// subscription is one SUBSCRIBE of a connection: the bus subscription of
// channel key:channel and a bounded queue of events the writer has not
// taken yet. Deliver never blocks: when the queue is full the message is
// dropped and counted, and the next event queued reports the count.
type subscription struct {
	c       *conn
	key     string
	channel string
	id      uint64 // the SUBSCRIBE request's id, every event's
	bus     *server.BusSub

	mu      sync.Mutex
	q       []queuedEvent
	max     int
	dropped int64
	removed bool
}

// queuedEvent is a message and how many were dropped before it.
type queuedEvent struct {
	m       *server.BusMessage
	dropped int64
}

// deliver queues m; it runs on the publisher's goroutine.
func (sub *subscription) deliver(m *server.BusMessage) {
	sub.mu.Lock()
	if sub.removed {
		sub.mu.Unlock()
		return
	}
	if len(sub.q) >= sub.max {
		sub.dropped++
		sub.mu.Unlock()
		return
	}
	sub.q = append(sub.q, queuedEvent{m, sub.dropped})
	sub.dropped = 0
	sub.mu.Unlock()
	sub.c.kick()
}

// remove ends the bus subscription and drops what is queued.
func (sub *subscription) remove() bool {
	sub.mu.Lock()
	sub.removed = true
	sub.q = nil
	sub.mu.Unlock()
	return sub.c.srv.BusUnsubscribe(sub.bus)
}

// subscribeRequest is SUBSCRIBE's payload (UNSUBSCRIBE's without buffer).
type subscribeRequest struct {
	Key     *string `json:"key"`
	Channel *string `json:"channel"`
	Buffer  *int    `json:"buffer"`
}

// check validates the key and channel and returns the bus channel.
func (r *subscribeRequest) check() (string, string) {
	switch {
	case r.Key == nil || *r.Key == "":
		return "", `"key" must be a non-empty string`
	case r.Channel == nil || *r.Channel == "":
		return "", `"channel" must be a non-empty string`
	}
	return *r.Key + ":" + *r.Channel, ""
}

// subscribe answers SUBSCRIBE {"key","channel","buffer"}: the connection
// subscribes to the bus channel key:channel, replacing its subscription of
// the same key and channel.
func (c *conn) subscribe(h Header, p []byte, reserved int64) {
	var req subscribeRequest
	if err := decodeStrict(p, &req); err != nil {
		c.respondError(h.ID, h.Opcode, CodeBadRequest, err.Error(), reserved)
		return
	}
	name, bad := req.check()
	if bad == "" && req.Buffer != nil && (*req.Buffer < 1 || *req.Buffer > MaxBuffer) {
		bad = `"buffer" must be within 1 and ` + strconv.Itoa(MaxBuffer)
	}
	if bad != "" {
		c.respondError(h.ID, h.Opcode, CodeBadRequest, bad, reserved)
		return
	}
	if c.key != nil && !c.key.Capability.Allows(name, apikey.OpSubscribe) {
		c.respondError(h.ID, h.Opcode, CodeForbidden, "the API key may not subscribe to "+strconv.Quote(name), reserved)
		return
	}
	size := DefaultBuffer
	if req.Buffer != nil {
		size = *req.Buffer
	}
	c.mu.Lock()
	old := c.subs[name]
	n := len(c.subs)
	c.mu.Unlock()
	if old == nil && n >= maxSubs {
		c.respondError(h.ID, h.Opcode, CodeOverloaded, "a connection holds at most "+strconv.Itoa(maxSubs)+" subscriptions", reserved)
		return
	}
	if old != nil {
		old.remove()
	}
	sub := &subscription{c: c, key: *req.Key, channel: *req.Channel, id: h.ID, max: size}
	c.mu.Lock()
	if c.subs == nil {
		c.subs = make(map[string]*subscription)
	}
	c.subs[name] = sub
	c.mu.Unlock()
	res := AppendHeader(nil, KindResponse, OpSubscribe, h.ID, 0)
	res = append(res, `{"ok":true,"result":{"key":`...)
	res = appendString(res, []byte(sub.key))
	res = append(res, `,"channel":`...)
	res = appendString(res, []byte(sub.channel))
	res = append(res, "}}"...)
	setLength(res)
	sub.bus = c.srv.BusSubscribe(server.BusSubOptions{
		Channel: name,
		// The confirmation is queued before any event can be.
		Start:   func([]*server.BusMessage) { c.queue(res, reserved) },
		Deliver: sub.deliver,
	})
}

// unsubscribe answers UNSUBSCRIBE {"key","channel"}.
func (c *conn) unsubscribe(h Header, p []byte, reserved int64) {
	var req subscribeRequest
	if err := decodeStrict(p, &req); err != nil {
		c.respondError(h.ID, h.Opcode, CodeBadRequest, err.Error(), reserved)
		return
	}
	name, bad := req.check()
	if bad == "" && req.Buffer != nil {
		bad = `UNSUBSCRIBE takes no "buffer"`
	}
	if bad != "" {
		c.respondError(h.ID, h.Opcode, CodeBadRequest, bad, reserved)
		return
	}
	c.mu.Lock()
	sub := c.subs[name]
	delete(c.subs, name)
	c.mu.Unlock()
	found := sub != nil && sub.remove()
	c.respondJSON(h.ID, h.Opcode, struct {
		Unsubscribed bool `json:"unsubscribed"`
	}{found}, reserved)
}

// drainEvents moves the subscriptions' queued events to the output, as
// long as the output is not backed up (then they stay, and further
// messages are dropped by their bounded queues). It runs on the writer.
func (c *conn) drainEvents() {
	c.mu.Lock()
	if len(c.subs) == 0 {
		c.mu.Unlock()
		return
	}
	subs := make([]*subscription, 0, len(c.subs))
	for _, sub := range c.subs {
		subs = append(subs, sub)
	}
	c.mu.Unlock()
	var b []byte
	for _, sub := range subs {
		if c.queued.Load()+int64(len(b)) > outLimit {
			break
		}
		sub.mu.Lock()
		q := sub.q
		sub.q = nil
		sub.mu.Unlock()
		for _, e := range q {
			b = appendEvent(b, sub, e)
		}
	}
	if len(b) > 0 {
		c.queue(b, 0)
	}
}

// appendEvent appends the event frame of e.
func appendEvent(b []byte, sub *subscription, e queuedEvent) []byte {
	start := len(b)
	b = AppendHeader(b, KindEvent, OpSubscribe, sub.id, 0)
	b = append(b, `{"channel":`...)
	b = appendString(b, []byte(sub.channel))
	m := e.m
	switch {
	case m.Realtime != nil && m.Realtime.Data != nil:
		b = append(b, `,"payload":{"type":"json","value":`...)
		b = append(b, m.Realtime.Data...)
	case utf8.Valid(m.Payload):
		b = append(b, `,"payload":{"type":"text","value":`...)
		b = appendString(b, m.Payload)
	default:
		b = append(b, `,"payload":{"type":"bytes","value":"`...)
		b = base64.StdEncoding.AppendEncode(b, m.Payload)
		b = append(b, '"')
	}
	b = append(b, `},"published_at":"`...)
	b = m.Time.UTC().AppendFormat(b, publishedAt)
	b = append(b, '"')
	if e.dropped > 0 {
		b = append(b, `,"dropped":`...)
		b = strconv.AppendInt(b, e.dropped, 10)
	}
	b = append(b, '}')
	setLength(b[start:])
	return b
}
