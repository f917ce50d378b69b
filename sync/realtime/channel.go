package realtime

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	recsync "github.com/recached/recached/sync"
	"github.com/recached/recached/sync/realtime/wire"
)

// maxRewind is the most history the server replays (SPEC section 9).
const maxRewind = 100

// Message is one delivered publish.
type Message struct {
	Channel      string          // the channel it was published to
	Name         string          // "" when the publish had none
	Data         json.RawMessage // nil when the publish had none
	ConnectionID string          // the publisher's connection ("resp" for a RESP PUBLISH)
	Timestamp    time.Time       // when the server accepted it (ms precision)
}

// ChannelOptions configure a channel the first time Client.Channel names it.
type ChannelOptions struct {
	// Filter is an RE2 regular expression the server applies to the
	// published channel's name after the channel glob matched.
	Filter string
}

// SubscribeOptions configure one subscription.
type SubscribeOptions struct {
	// Rewind asks for up to this many messages of history (at most 100) before
	// the live stream, on a plain channel name, when the channel is first
	// subscribed.
	Rewind int
	// Buffer is the capacity of the subscription's channel (default 256).
	// The client never blocks on it: a message that finds it full is dropped
	// and counted.
	Buffer int
}

// Channel is one channel name or glob of a client, got with Client.Channel.
// Its server-side state (attached, subscribed, the presence members this
// client entered) is restored after every reconnect.
type Channel struct {
	c      *Client
	name   string
	glob   bool
	filter string
	re     *regexp.Regexp

	// Guarded by c.mu.
	attach     bool  // attached, or to attach on the next connection
	attachedOn *conn // the connection an Attach was sent on
	subs       []*Subscription
	subWanted  bool  // a server subscription is wanted
	subOn      *conn // the connection the Subscribe was sent on
	subAcked   bool  // some Subscribe was acknowledged (later ones rewind)
	firstRew   int   // the rewind of the first Subscribe
	ready      chan struct{}
	readyErr   error
	// The last message delivered: its timestamp and how many delivered
	// messages had it; after a resubscribe, rewound messages up to it are
	// skipped (replaying, skip).
	lastTS    int64
	atLast    int
	baseMS    int64 // local time of the first Subscribe's Ack, when nothing was delivered yet
	replaying bool
	skip      int
	presence  *Presence
}

// Channel returns the client's channel of that name (a channel name or a
// Redis-style glob), creating it with opts on first use.
func (c *Client) Channel(name string, opts ...ChannelOptions) *Channel {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ch := c.channels[name]; ch != nil {
		return ch
	}
	ch := &Channel{c: c, name: name, glob: strings.ContainsAny(name, `*?[\`)}
	for _, o := range opts {
		ch.filter = o.Filter
	}
	if ch.filter != "" {
		ch.re, _ = regexp.Compile(ch.filter) // a bad filter is refused by the server with 400
	}
	ch.presence = &Presence{ch: ch, members: make(map[memberKey]PresenceMessage), own: make(map[string]json.RawMessage)}
	c.channels[name] = ch
	return ch
}

// Name returns the channel's name.
func (ch *Channel) Name() string { return ch.name }

// Subscription is one subscriber of a channel: its messages arrive on C,
// which is closed when the subscription ends (Close, Client.Close, or the
// server removing it; Err says which).
type Subscription struct {
	C <-chan Message

	ch      *Channel
	out     chan Message
	ended   bool
	err     error
	dropped int64
}

// Subscribe subscribes to the channel (attaching it first) and returns once
// the server acknowledged: a 403 or 400 is returned as an *Error and leaves
// the client's other channels as they were. Several subscriptions of one
// channel share one server subscription.
func (ch *Channel) Subscribe(ctx context.Context, opts SubscribeOptions) (*Subscription, error) {
	if ch.filter != "" && ch.re == nil {
		_, err := regexp.Compile(ch.filter)
		return nil, &Error{Code: 400, Message: "bad filter: " + err.Error(), Channel: ch.name}
	}
	buf := opts.Buffer
	if buf <= 0 {
		buf = 256
	}
	s := &Subscription{ch: ch, out: make(chan Message, buf)}
	s.C = s.out
	c := ch.c
	c.mu.Lock()
	if _, err := c.connLocked(); err != nil {
		c.mu.Unlock()
		return nil, err
	}
	ch.subs = append(ch.subs, s)
	ch.attach = true
	if !ch.subWanted {
		ch.subWanted = true
		ch.firstRew = min(opts.Rewind, maxRewind)
		ch.ready, ch.readyErr = make(chan struct{}), nil
	}
	if c.state == Connected && c.cn != nil {
		ch.resumeLocked(c.cn)
	}
	ready := ch.ready
	c.mu.Unlock()
	select {
	case <-ready:
	case <-ctx.Done():
		s.Close(context.Background())
		return nil, ctx.Err()
	}
	c.mu.Lock()
	err := ch.readyErr
	c.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Close ends the subscription; the server subscription ends with the
// channel's last one.
func (s *Subscription) Close(ctx context.Context) error {
	ch := s.ch
	c := ch.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.ended {
		return nil
	}
	s.endLocked(nil)
	for i, o := range ch.subs {
		if o == s {
			ch.subs = append(ch.subs[:i], ch.subs[i+1:]...)
			break
		}
	}
	if len(ch.subs) == 0 && ch.subWanted {
		ch.subWanted, ch.subOn, ch.subAcked, ch.replaying = false, nil, false, false
		ch.lastTS, ch.atLast = 0, 0
		if c.cn != nil {
			c.sendLocked(c.cn, frame{Op: wire.Unsubscribe, Channel: ch.name}, func(error) {})
		}
	}
	return nil
}

// Err returns why C was closed: nil after Close, ErrClosed after the
// client's Close, the server's *Error when it removed the subscription.
func (s *Subscription) Err() error {
	s.ch.c.mu.Lock()
	defer s.ch.c.mu.Unlock()
	return s.err
}

// Dropped returns how many messages found C full and were lost.
func (s *Subscription) Dropped() int64 {
	s.ch.c.mu.Lock()
	defer s.ch.c.mu.Unlock()
	return s.dropped
}

func (s *Subscription) endLocked(err error) {
	if !s.ended {
		s.ended, s.err = true, err
		close(s.out)
	}
}

// Publish publishes a message on the channel (attaching it implicitly) and
// waits for the server's Ack: a refusal is an *Error (403 keeps the
// connection), a connection lost first is ErrConnectionLost. Requests made
// while reconnecting wait for the connection. data is marshalled to JSON
// (json.RawMessage as is; nil for none).
func (ch *Channel) Publish(ctx context.Context, name string, data any) error {
	raw, err := marshalData(data)
	if err != nil {
		return err
	}
	f := frame{Op: wire.Publish, Channel: ch.name, Data: raw}
	if name != "" {
		f.Name = &name
	}
	return ch.c.call(ctx, f, false, func(cn *conn) {
		ch.attach = true
		ch.resumeLocked(cn)
	})
}

// Attach attaches the channel (the gate of presence frames) and waits until
// its member set is known.
func (ch *Channel) Attach(ctx context.Context) error {
	_, err := ch.presence.Get(ctx)
	return err
}

// Detach detaches the channel: no presence frames, an empty member set.
func (ch *Channel) Detach(ctx context.Context) error {
	c := ch.c
	c.mu.Lock()
	ch.attach, ch.attachedOn = false, nil
	ch.presence.resetLocked()
	c.mu.Unlock()
	return c.call(ctx, frame{Op: wire.Detach, Channel: ch.name}, true, nil)
}

func marshalData(data any) (json.RawMessage, error) {
	switch d := data.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		if !json.Valid(d) {
			return nil, fmt.Errorf("realtime: data is not valid JSON")
		}
		return d, nil
	}
	b, err := json.Marshal(data)
	if err != nil {
		return nil, fmt.Errorf("realtime: marshal data: %w", err)
	}
	return b, nil
}

// resumeLocked sends on cn what the channel's state needs and cn has not
// had yet: Attach (with a barrier that ends the presence sync, and the
// members this client entered), then Subscribe, with a rewind of history
// after the first time. c.mu is held.
func (ch *Channel) resumeLocked(cn *conn) {
	c := ch.c
	if ch.attach && ch.attachedOn != cn {
		ch.attachedOn = cn
		ch.presence.attachLocked(cn)
	}
	if !ch.subWanted || ch.subOn == cn {
		return
	}
	ch.subOn = cn
	f := frame{Op: wire.Subscribe, Channel: ch.name, Filter: ch.filter}
	if !ch.subAcked {
		f.Rewind = ch.firstRew
	} else if !ch.glob {
		f.Rewind = maxRewind
		ch.replaying, ch.skip = true, ch.atLast
	}
	c.sendLocked(cn, f, func(err error) {
		if err == errConnGone {
			return // sent again on the next connection
		}
		e, refused := err.(*Error)
		switch {
		case err == nil:
			if !ch.subAcked {
				ch.subAcked = true
				if ch.lastTS == 0 {
					ch.baseMS = time.Now().UnixMilli()
				}
			}
			ch.readyLocked(nil)
		case refused:
			ch.removedLocked(e)
		default:
			ch.readyLocked(err)
		}
	})
}

// readyLocked ends a Subscribe's wait with err.
func (ch *Channel) readyLocked(err error) {
	select {
	case <-ch.ready:
	default:
		if ch.ready != nil {
			ch.readyErr = err
			close(ch.ready)
		}
	}
}

// removedLocked ends the channel's subscription because the server refused
// or removed it (a 403 after an Auth swap narrowed the capability).
func (ch *Channel) removedLocked(e *Error) {
	e.Channel = ch.name
	ch.readyLocked(e)
	for _, s := range ch.subs {
		s.endLocked(e)
	}
	ch.subs, ch.subWanted, ch.subOn = nil, false, nil
	ch.subAcked, ch.replaying = false, false
	if e.Code == 403 {
		// The capability no longer covers the channel: presence goes too.
		ch.attach, ch.attachedOn = false, nil
		ch.presence.endLocked(e)
	}
}

// lostLocked notes that cn ended.
func (ch *Channel) lostLocked(cn *conn) {
	if ch.attachedOn == cn {
		ch.attachedOn = nil
	}
	if ch.subOn == cn {
		ch.subOn = nil
	}
}

// failWaitersLocked ends a Subscribe or presence wait with err (suspended,
// failed).
func (ch *Channel) failWaitersLocked(err error) {
	ch.readyLocked(err)
	ch.presence.syncDoneLocked(err)
}

// endLocked ends every subscription (the client closed).
func (ch *Channel) endLocked(err error) {
	ch.readyLocked(err)
	for _, s := range ch.subs {
		s.endLocked(err)
	}
	ch.subs = nil
	ch.presence.endLocked(err)
}

// matches reports whether a message published to name is for this channel.
func (ch *Channel) matches(name string) bool {
	if !ch.subWanted || len(ch.subs) == 0 {
		return false
	}
	if ch.name != name && !(ch.glob && recsync.Match(ch.name, name)) {
		return false
	}
	return ch.re == nil || ch.re.MatchString(name)
}

// deliverLocked hands m to the channel's subscriptions, unless it is a
// rewound message this client already delivered.
func (ch *Channel) deliverLocked(m Message, ts int64) {
	if ch.replaying {
		since := ch.lastTS
		if since == 0 {
			since = ch.baseMS
		}
		switch {
		case ts < since:
			return
		case ts == since && ch.skip > 0:
			ch.skip--
			return
		}
		ch.replaying = false
	}
	if ts > ch.lastTS {
		ch.lastTS, ch.atLast = ts, 1
	} else if ts == ch.lastTS {
		ch.atLast++
	}
	for _, s := range ch.subs {
		select {
		case s.out <- m:
		default:
			s.dropped++
			ch.c.later = append(ch.c.later, func() {
				ch.c.report(fmt.Errorf("realtime: channel %q: subscriber buffer full, message dropped", ch.name))
			})
		}
	}
}
