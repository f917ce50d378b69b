package amaquet

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Event is one pub/sub message delivered to a Subscription.
type Event struct {
	// Channel is the subscription's channel (without the key).
	Channel string
	// Type is "text", "bytes" or "json" (a Blackevin publish with data).
	Type string
	// Data is the payload: the text's bytes, the decoded bytes, or the
	// JSON text of the value.
	Data []byte
	// PublishedAt is when the server published it.
	PublishedAt time.Time
	// Dropped is how many events the server dropped for this subscription
	// since the previous one, its buffer being full.
	Dropped uint64
}

// Subscription is a subscription to the bus channel key:channel. Its
// events arrive on C, a bounded channel the client never blocks on: when
// C is full the event is dropped and counted (Dropped). C is closed by
// Unsubscribe, by a subscription to the same key and channel that
// replaces it, by Conn.Close, or when a reconnection could not restore it
// (Err says why).
type Subscription struct {
	Key, Channel string
	// C carries the events.
	C <-chan Event

	c             chan Event
	dropped       atomic.Uint64
	serverDropped atomic.Uint64
	buffer        int

	mu     sync.Mutex
	closed bool
	err    error
}

// Dropped returns how many events the client dropped because C was full.
func (s *Subscription) Dropped() uint64 { return s.dropped.Load() }

// ServerDropped returns the sum of the server's dropped counts: events
// lost in the server's buffer for this subscription.
func (s *Subscription) ServerDropped() uint64 { return s.serverDropped.Load() }

// Err returns why C was closed: nil after Unsubscribe or a replacement,
// ErrClosed after Conn.Close, or the error of a failed re-subscription.
func (s *Subscription) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (s *Subscription) close(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed, s.err = true, err
		close(s.c)
	}
}

// deliver decodes an event payload and queues it without blocking.
func (s *Subscription) deliver(p []byte) {
	ev, err := parseEvent(p)
	if err != nil {
		s.dropped.Add(1)
		return
	}
	s.serverDropped.Add(ev.Dropped)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	select {
	case s.c <- ev:
	default:
		s.dropped.Add(1)
	}
}

// parseEvent decodes {"channel","payload":{"type","value"},"published_at","dropped"}.
func parseEvent(p []byte) (Event, error) {
	var v struct {
		Channel string `json:"channel"`
		Payload struct {
			Type  string          `json:"type"`
			Value json.RawMessage `json:"value"`
		} `json:"payload"`
		PublishedAt string `json:"published_at"`
		Dropped     uint64 `json:"dropped"`
	}
	if err := json.Unmarshal(p, &v); err != nil {
		return Event{}, fmt.Errorf("amaquet: event: %w", err)
	}
	ev := Event{Channel: v.Channel, Type: v.Payload.Type, Dropped: v.Dropped}
	if v.PublishedAt != "" {
		t, err := time.Parse(time.RFC3339Nano, v.PublishedAt)
		if err != nil {
			return Event{}, fmt.Errorf("amaquet: event published_at: %w", err)
		}
		ev.PublishedAt = t
	}
	switch v.Payload.Type {
	case "text", "bytes":
		var s string
		if err := json.Unmarshal(v.Payload.Value, &s); err != nil {
			return Event{}, fmt.Errorf("amaquet: event %s value: %w", v.Payload.Type, err)
		}
		if v.Payload.Type == "text" {
			ev.Data = []byte(s)
			break
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return Event{}, fmt.Errorf("amaquet: event bytes value: %w", err)
		}
		ev.Data = b
	case "json":
		ev.Data = append([]byte(nil), v.Payload.Value...)
	default:
		return Event{}, fmt.Errorf("amaquet: event payload type %q", v.Payload.Type)
	}
	return ev, nil
}

func subscribePayload(key, channel string, buffer int) []byte {
	b := appendString([]byte(`{"key":`), key)
	b = appendString(append(b, `,"channel":`...), channel)
	b = strconv.AppendInt(append(b, `,"buffer":`...), int64(buffer), 10)
	return append(b, '}')
}

func unsubscribePayload(key, channel string) []byte {
	b := appendString([]byte(`{"key":`), key)
	b = appendString(append(b, `,"channel":`...), channel)
	return append(b, '}')
}

// Subscribe subscribes to the bus channel key:channel with a server
// buffer of buffer events (1–1024; the client's channel C has the same
// capacity). A subscription to the same key and channel replaces the
// previous one, whose C is closed. Subscriptions are restored after a
// reconnection; events published while disconnected are lost.
func (c *Conn) Subscribe(ctx context.Context, key, channel string, buffer int) (*Subscription, error) {
	if buffer < 1 || buffer > 1024 {
		return nil, fmt.Errorf("amaquet: SUBSCRIBE %s:%s: buffer %d, want 1–1024", key, channel, buffer)
	}
	l, err := c.getLink(ctx)
	if err != nil {
		return nil, fmt.Errorf("amaquet: SUBSCRIBE: %w", err)
	}
	c.subMu.Lock()
	defer c.subMu.Unlock()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("amaquet: SUBSCRIBE: %w", err)
	}
	s := &Subscription{Key: key, Channel: channel, c: make(chan Event, buffer), buffer: buffer}
	s.C = s.c
	id := c.nextID.Add(1)
	l.mu.Lock()
	l.subs[id] = s
	l.mu.Unlock()
	if err := c.subscribeOn(ctx, l, id, s); err != nil {
		l.mu.Lock()
		delete(l.subs, id)
		l.mu.Unlock()
		if ctx.Err() != nil && !l.dead() {
			// The SUBSCRIBE may have been sent and may still be applied:
			// undo it (in read order, after it), and with it the
			// subscription it would have replaced.
			c.mu.Lock()
			old := c.subs[subKey{key, channel}]
			delete(c.subs, subKey{key, channel})
			c.mu.Unlock()
			if old != nil {
				l.dropSub(old)
				old.close(fmt.Errorf("amaquet: replaced by a cancelled SUBSCRIBE: %w", ctx.Err()))
			}
			f := l.frame(OpUnsubscribe, c.nextID.Add(1), unsubscribePayload(key, channel))
			select {
			case l.out <- f:
			case <-l.done:
			}
		}
		return nil, err
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		s.close(ErrClosed)
		return nil, ErrClosed
	}
	k := subKey{key, channel}
	old := c.subs[k]
	c.subs[k] = s
	if old == nil && l.dead() && !c.redialing {
		// The link died after the answer: restore it in the background.
		c.redialing = true
		c.wg.Add(1)
		go c.redial()
	}
	c.mu.Unlock()
	if old != nil {
		l.dropSub(old)
		old.close(nil)
	}
	return s, nil
}

// subscribeOn sends SUBSCRIBE with request ID id on l and checks the
// confirmation.
func (c *Conn) subscribeOn(ctx context.Context, l *link, id uint64, s *Subscription) error {
	_, err := c.roundTripOn(ctx, l, id, OpSubscribe, subscribePayload(s.Key, s.Channel, s.buffer), "SUBSCRIBE")
	return err
}

// dropSub stops routing events to s on l.
func (l *link) dropSub(s *Subscription) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for id, t := range l.subs {
		if t == s {
			delete(l.subs, id)
		}
	}
}

// Unsubscribe ends the subscription to key:channel and closes its C. It
// reports whether the server had it.
func (c *Conn) Unsubscribe(ctx context.Context, key, channel string) (bool, error) {
	l, err := c.getLink(ctx)
	if err != nil {
		return false, fmt.Errorf("amaquet: UNSUBSCRIBE: %w", err)
	}
	c.subMu.Lock()
	defer c.subMu.Unlock()
	c.mu.Lock()
	k := subKey{key, channel}
	s := c.subs[k]
	delete(c.subs, k)
	c.mu.Unlock()
	if s != nil {
		l.dropSub(s)
		s.close(nil)
	}
	res, err := c.roundTripOn(ctx, l, 0, OpUnsubscribe, unsubscribePayload(key, channel), "UNSUBSCRIBE")
	if err != nil {
		return false, err
	}
	var v struct {
		Unsubscribed bool `json:"unsubscribed"`
	}
	if err := json.Unmarshal(res, &v); err != nil {
		return false, fmt.Errorf("amaquet: UNSUBSCRIBE: unexpected result %.200s", res)
	}
	return v.Unsubscribed, nil
}

// resubscribe restores every subscription on a new link, synchronously,
// before its goroutines start. A subscription the server refuses is
// closed with the error.
func (c *Conn) resubscribe(l *link) error {
	c.subMu.Lock()
	defer c.subMu.Unlock()
	c.mu.Lock()
	subs := make([]*Subscription, 0, len(c.subs))
	for _, s := range c.subs {
		subs = append(subs, s)
	}
	c.mu.Unlock()
	for _, s := range subs {
		id := c.nextID.Add(1)
		l.mu.Lock()
		l.subs[id] = s
		l.mu.Unlock()
		_, err := l.syncCall(id, OpSubscribe, subscribePayload(s.Key, s.Channel, s.buffer))
		if _, lost := err.(*ConnError); lost {
			return err
		}
		if err != nil {
			l.dropSub(s)
			c.mu.Lock()
			if c.subs[subKey{s.Key, s.Channel}] == s {
				delete(c.subs, subKey{s.Key, s.Channel})
			}
			c.mu.Unlock()
			s.close(fmt.Errorf("amaquet: re-subscribing %s:%s: %w", s.Key, s.Channel, err))
		}
	}
	return nil
}
